"""``agentgauge review ...`` commands."""

import typer

review_app = typer.Typer(help="Evaluate generated paper reviews (PeerRead).", no_args_is_help=True)
