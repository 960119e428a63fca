"""``agentgauge import``: convert other tools' traces to native JSONL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentgauge.cli._common import (
    KeepSecretsOption,
    OverwriteOption,
    check_choice,
    console,
    err_console,
    not_a_file,
    output_file,
    refuse_clashes,
    usage_error,
)

if TYPE_CHECKING:
    from agentgauge.io.importers import Importer
    from agentgauge.io.jsonl import ReadError
    from agentgauge.io.otel.report import ImportReport


def _importer(
    trace_format: str, group_by: str, task_id_attribute: str, logs: list[Path]
) -> Importer:
    """The reader of ``--format``, given those of the options that it takes."""
    from functools import partial

    from agentgauge.io.importers import IMPORTERS

    importer = IMPORTERS.get(trace_format)
    given = {"group_by": group_by, "task_id_attribute": task_id_attribute, "log_files": logs}
    return partial(importer.read, **{k: v for k, v in given.items() if k in importer.options})


def _print_report(report: ImportReport) -> None:
    """Per source format: files, traces, steps, tool calls, merged and skipped spans."""
    from rich.table import Table

    if not report.formats:
        return
    table = Table("format", "files", "traces", "steps", "tool calls", "merged", "skipped spans")
    for row in report.rows():
        table.add_row(*row)
    console.print(table)
    for line in report.skipped_lines():
        console.print(line, highlight=False)
    for line in report.missing_lines():
        console.print(line, style="yellow", highlight=False, markup=False)


def _print_error(error: ReadError) -> None:
    err_console.print(str(error), style="yellow", highlight=False, markup=False, soft_wrap=True)


def import_traces(
    paths: Annotated[list[Path], typer.Argument(metavar="PATHS", help="Files to import.")],
    out: Annotated[
        Path,
        typer.Option(callback=output_file, help="Native JSONL to write (.jsonl or .jsonl.gz)."),
    ],
    trace_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="Input format ('agentgauge plugins' lists them); 'otel' reads every span "
            "format, telling them apart by their content.",
        ),
    ] = "otel",
    group_by: Annotated[
        str, typer.Option(help="otel: one trace per 'trace' id or per 'conversation'.")
    ] = "trace",
    task_id_attribute: Annotated[
        str, typer.Option(help="otel: the span attribute holding the task id.")
    ] = "gen_ai.conversation.id",
    logs: Annotated[
        list[Path] | None, typer.Option(help="otel: OTLP logs exports in other files.")
    ] = None,
    overwrite: OverwriteOption = False,
    keep_secrets: KeepSecretsOption = False,
    strict: Annotated[
        bool,
        typer.Option(
            help="Exit with status 1 when a record could not be read or a trace lacks "
            "something (tool arguments, output, a model call, spans of an unknown kind)."
        ),
    ] = False,
) -> None:
    """Convert other tools' traces to native JSONL.

    Reads OpenTelemetry GenAI and OpenInference spans (OTLP JSON or protobuf, Jaeger, Tempo),
    the OpenAI Agents SDK's, LangSmith's, Langfuse's and MLflow's exports, and OpenAI-format
    chats; prints what it read per format and what each trace lacks. Credentials in the
    traces are hidden in the file written unless --keep-secrets is given.
    """
    from agentgauge.io.importers import IMPORTERS, convert

    check_choice("--format", trace_format, IMPORTERS)
    check_choice("--group-by", group_by, ("trace", "conversation"))
    missing = [p for p in [*paths, *(logs or [])] if not p.is_file()]
    if missing:
        raise usage_error(not_a_file(missing[0]))
    from agentgauge.io.otel.report import ImportReport

    refuse_clashes({"--out": out}, inputs=[*paths, *(logs or [])], overwrite=overwrite)
    report = ImportReport(trace_format)
    read = report.watch(_importer(trace_format, group_by, task_id_attribute, logs or []))
    with console.status("importing"):
        counts = convert(paths, out, read, on_error=_print_error, keep_secrets=keep_secrets)
    _print_report(report)
    warned = f", {counts.warnings} warnings" if counts.warnings else ""
    console.print(f"wrote {counts.traces} traces to {out}; {counts.errors} errors{warned}")
    if counts.traces == 0:
        err_console.print(f"[yellow]hint:[/] {report.no_trace_hint(list(IMPORTERS))}")
        raise typer.Exit(1)
    if strict and not report.complete:
        err_console.print("--strict: the import is incomplete (see above)", style="red")
        raise typer.Exit(1)
