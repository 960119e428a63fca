"""What agentgauge knows: ``metrics`` (the registered metrics), ``plugins`` (every extension
point's names and where each comes from) and ``schema`` (the trace format)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentgauge.cli._common import console

if TYPE_CHECKING:
    from agentgauge.metrics.base import MetricInfo


def _metric_document(info: MetricInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "higher_is_better": info.higher_is_better,
        "description": info.description,
        "options": info.options,
    }


def metrics(
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="One metric: its options, one a line."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the listing as JSON.")] = False,
) -> None:
    """List the registered metrics (built-in and plugins), or show one with its options."""
    from rich.table import Table

    from agentgauge.metrics.base import get_metric_info, list_metrics

    infos = [get_metric_info(name)] if name is not None else list_metrics()
    if as_json:
        documents = [_metric_document(info) for info in infos]
        shown = documents[0] if name is not None else documents
        typer.echo(json.dumps(shown, indent=2, default=repr))
        return
    if name is not None:
        (info,) = infos
        better = "higher" if info.higher_is_better else "lower"
        # plain lines, never wrapped: one option a line, whole, for a reader or a grep
        typer.echo(f"{info.name}: {info.description} ({better} is better)")
        if not info.options:
            typer.echo("no options")
        for key, default in info.options.items():
            typer.echo(f"  {key} = {default!r}")
        return
    # every cell folds onto more lines rather than being cut, in a pipe as in a terminal
    table = Table("metric", "better", "options", "description")
    for column in table.columns:
        column.overflow = "fold"
    for info in infos:
        opts = "\n".join(f"{k}={v!r}" for k, v in info.options.items())
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
