"""What agentgauge knows: ``metrics`` (the registered metrics), ``plugins`` (every extension
point's names and where each comes from) and ``schema`` (the trace format)."""

from __future__ import annotations

import json
from typing import Annotated

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


def plugins(
    as_json: Annotated[bool, typer.Option("--json", help="Print the listing as JSON.")] = False,
) -> None:
    """List what each extension point knows.

    Metrics, importers, dataset formats, output parsers, tuners and executors: built in, or
    from the installed package that provides them.
    """
    from dataclasses import asdict

    from rich.table import Table

    from agentgauge.plugins import describe_plugins

    points = describe_plugins()
    if as_json:
        typer.echo(json.dumps({p.kind: asdict(p) for p in points}, indent=2))
        return
    for point in points:
        table = Table("name", "from", "description", title=f"{point.kind} ({point.group})")
        for plugin in point.plugins:
            table.add_row(plugin.name, plugin.origin, plugin.description)
        console.print(table)


def schema() -> None:
    """Print the JSON Schema of one line of the native trace format."""
    from agentgauge.model import trace_json_schema

    typer.echo(json.dumps(trace_json_schema(), indent=2))
