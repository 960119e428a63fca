"""The ``agentgauge`` command."""

from __future__ import annotations

import json

import typer

from agentgauge.review.cli import review_app
from agentgauge.toolcall.cli import toolcall_app
from agentgauge.tuning.cli import register_tuning_commands

app = typer.Typer(
    name="agentgauge",
    help="Evaluate LLM agents and tool-calling models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(toolcall_app, name="toolcall")
app.add_typer(review_app, name="review")
register_tuning_commands(app)


@app.command()
def schema() -> None:
    """Print the JSON Schema of one line of the native trace format."""
    from agentgauge.model import trace_json_schema

    typer.echo(json.dumps(trace_json_schema(), indent=2))


def main() -> None:
    app()
