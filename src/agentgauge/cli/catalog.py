"""What agentgauge knows: ``metrics`` (the registered metrics) and ``schema`` (the trace
format)."""

from __future__ import annotations

import json

import typer

from agentgauge.cli._common import console


def metrics() -> None:
    """List the registered metrics (built-in and plugins)."""
    from rich.table import Table

    from agentgauge.metrics.base import list_metrics

    table = Table("metric", "better", "options", "description")
    for info in list_metrics():
        opts = ", ".join(f"{k}={v!r}" for k, v in info.options.items())
        table.add_row(
            info.name, "higher" if info.higher_is_better else "lower", opts, info.description
        )
    console.print(table)


def schema() -> None:
    """Print the JSON Schema of one line of the native trace format."""
    from agentgauge.model import trace_json_schema

    typer.echo(json.dumps(trace_json_schema(), indent=2))
