"""``agentgauge toolcall ...`` commands."""

import typer

toolcall_app = typer.Typer(help="Evaluate tool-calling models.", no_args_is_help=True)
