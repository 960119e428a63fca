"""``agentgauge toolcall failures``: the failing samples of a tool-calling run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentgauge.cli._common import DbOption, console, output_file, require_store

_CELL = 160


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _CELL else text[: _CELL - 1] + "…"


_COLUMNS = ("id", "query", "expected", "predicted", "error")


def failures(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    db: DbOption = Path("agentgauge.db"),
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many.")] = 20,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json", callback=output_file, help="Write every failing sample (untruncated)."
        ),
    ] = None,
) -> None:
    """Show the failing samples of a tool-calling run.

    Each with its query, the expected and predicted calls, and what was wrong.
    """
    from rich.table import Table
    from rich.text import Text

    from agentgauge.report.export import write_json
    from agentgauge.store import Store
    from agentgauge.toolcall.failures import failures_report

    require_store(db)
    with Store(db) as store:
        report = failures_report(store, run_id)
    table = Table(show_lines=True)
    for key in _COLUMNS:
        # ids and errors wrap rather than lose their end to an ellipsis
        table.add_column(key, overflow="fold")
    for failure in report.failures[:limit]:
        # Text, not markup: model output is shown as it is
        table.add_row(*(Text(_short(getattr(failure, key))) for key in _COLUMNS))
    console.print(
        f"run {report.run_id}: {len(report.failures)} of {report.n_samples} samples failed"
    )
    if report.failures:
        counts = ", ".join(f"{name} {n}" for name, n in report.by_error_type())
        console.print(f"by error: {counts}", highlight=False)
        console.print(table)
    if len(report.failures) > limit:
        console.print(f"… {len(report.failures) - limit} more (use --limit)")
    if json_out is not None:
        write_json(report.as_dict(), json_out)
        console.print(f"wrote {json_out}")
