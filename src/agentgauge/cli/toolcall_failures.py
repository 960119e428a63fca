"""``agentgauge toolcall failures``: the failing samples of a tool-calling run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentgauge.cli._common import (
    DbOption,
    OverwriteOption,
    console,
    output_file,
    refuse_clashes,
    require_store,
)

_CELL = 160


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _CELL else text[: _CELL - 1] + "…"


_COLUMNS = ("id", "query", "expected", "predicted", "error")


def failures(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="Run id (or a unique prefix).")],
    db: DbOption = Path("agentgauge.db"),
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many.")] = 20,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json", callback=output_file, help="Write every failing sample (untruncated)."
        ),
    ] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Show the failing samples of a tool-calling run.

    Each with its query, the expected and predicted calls, and what was wrong.
    """
    from rich.table import Table
    from rich.text import Text

    from agentgauge.report.export import write_json
    from agentgauge.store import Store
    from agentgauge.workflows.toolcall_failures import failures_report

    require_store(db)
    refuse_clashes({"--json": json_out}, store=db, overwrite=overwrite)
    with Store(db) as store:
        report = failures_report(store, run_id)
    table = Table(show_lines=True)
    for key in _COLUMNS:
        # ids and errors wrap rather than lose their end to an ellipsis
        table.add_column(key, overflow="fold")
    for failure in report.failures[:limit]:
        # Text, not markup: model output is shown as it is
        cells = [Text(_short(getattr(failure, key))) for key in _COLUMNS]
        if failure.metric:
            cells[-1].append(f"\n(from {failure.metric})", style="dim")
        table.add_row(*cells)
    console.print(
        f"run {report.run_id}: {len(report.failures)} of {report.n_samples} samples failed"
    )
    if report.failures:
        # one error type a line: an entry never breaks between its name and its count
        by_error = Table.grid(padding=(0, 2))
        by_error.add_column(no_wrap=True)
        by_error.add_column(justify="right", no_wrap=True)
        for name, n in report.by_error_type():
            by_error.add_row(Text(name), str(n))
        console.print("by error type:")
        console.print(by_error)
        console.print(table)
    if len(report.failures) > limit:
        console.print(f"… {len(report.failures) - limit} more (use --limit)")
    if json_out is not None:
        write_json(report.as_dict(), json_out)
        console.print(f"wrote {json_out}")
