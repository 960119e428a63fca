"""The commands that read stored runs: ``runs``, ``show``, ``compare`` and ``passk``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from agentgauge.cli._common import (
    CsvOption,
    DbOption,
    HtmlOption,
    JsonOption,
    OverwriteOption,
    VerdictExit,
    console,
    err_console,
    output_file,
    refuse_clashes,
    require_store,
    significance_level,
    usage_error,
    write_outputs,
)

if TYPE_CHECKING:
    from rich.table import Table


def runs(
    db: DbOption = Path("agentgauge.db"),
    limit: Annotated[int, typer.Option(help="At most this many runs.")] = 50,
    tag: Annotated[
        str | None, typer.Option(help="Only the runs with this tag (--tag of the run).")
    ] = None,
    ids: Annotated[
        bool, typer.Option("--ids", help="Print only the run ids, one a line (for scripts).")
    ] = False,
) -> None:
    """List the runs in the store, newest first."""
    from agentgauge.report.terminal import print_runs
    from agentgauge.store import Store

    require_store(db)
    with Store(db) as store:
        if ids:
            chosen = [r for r in store.list_runs() if tag is None or tag in r.tags][:limit]
            for run in chosen:
                typer.echo(run.id)
            return
        print_runs(store, console, limit, tag=tag)


def _print_records(streams: dict[str, int], records: dict[str, list[dict[str, Any]]]) -> None:
    counts = ", ".join(f"{name} ({n})" for name, n in streams.items())
    console.print(f"records kept with this run: {counts} (all of them in --json)")
    for best in records.get("tuning_result", [])[-1:]:
        params = ", ".join(f"{k}={v}" for k, v in best.get("best_params", {}).items())
        level = best.get("best_objective_all_tasks")
        shown = "—" if level is None else f"{level:.4f}"
        console.print(
            f"best by level: {params} (objective {shown} on every task)",
            highlight=False,
            markup=False,
        )
    for claim in records.get("impact_claims", []):
        console.print(
            f"{claim.get('param')} -> {claim.get('metric')}: {claim.get('verdict')}", markup=False
        )


def show(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="Run id (or a unique prefix).")],
    db: DbOption = Path("agentgauge.db"),
    json_out: JsonOption = None,
    csv_out: CsvOption = None,
    html_out: HtmlOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Print a stored run's summary again (and export it).

    A tune, impact or review run also shows the records it keeps beside its samples.
    """
    from agentgauge.store import Store

    require_store(db)
    refuse_clashes(
        {"--json": json_out, "--csv": csv_out, "--html": html_out}, store=db, overwrite=overwrite
    )
    with Store(db) as store:
        rid = store.get_run(run_id).id
        streams = store.streams(rid)
        records = {name: store.records(rid, name) for name in streams}
    extra: dict[str, object] | None = {"records": records} if records else None
    write_outputs(
        db,
        rid,
        json_out=json_out,
        csv_out=csv_out,
        html_out=html_out,
        fail_under=None,
        extra=extra,
        gates=False,
    )
    if records:
        _print_records(streams, records)


def _comparison_table(result: dict[str, Any], by: str) -> Table:
    from agentgauge.report.terminal import compact_table

    table = compact_table(
        f"B={result['run_b']} vs A={result['run_a']} (paired by {by})",
        caption="p: the composite's own; the metrics' adjusted for their number (BH)",
        caption_justify="left",
    )
    table.add_column("metric", no_wrap=True)
    for col in ("n", "A", "B", "B − A [95% CI]", "p"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for name, r in result["metrics"].items():
        ci = "" if r["ci_low"] is None else f" [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        q = r["q_value"]
        p = "—" if q is None else ("<0.001" if q < 0.001 else f"{q:.3f}")
        verdict = {"no significant difference": "n.s."}.get(r["verdict"], r["verdict"])
        table.add_row(
            escape(name),
            str(r["n"]),
            f"{r['mean_a']:.3f}",
            f"{r['mean_b']:.3f}",
            f"{r['diff']:+.3f}{ci}",
            p,
            escape(verdict),
        )
    return table


def _print_usage_comparison(result: dict[str, Any]) -> None:
    for field, r in result["usage"].items():
        ci = "" if r["ci_low"] is None else f" [{r['ci_low']:+.6g}, {r['ci_high']:+.6g}]"
        p = "—" if r["p_value"] is None else f"{r['p_value']:.3f}"
        console.print(
            f"{field} per sample (n={r['n']}): A {r['mean_a']:.6g}, B {r['mean_b']:.6g}, "
            f"B − A {r['diff']:+.6g}{ci}, p {p}: {r['verdict']}",
            highlight=False,
        )


def compare(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="Baseline run id.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="Candidate run id.")],
    db: DbOption = Path("agentgauge.db"),
    by: Annotated[str, typer.Option(help="Pair samples by 'task' or by trace 'id'.")] = "task",
    alpha: Annotated[
        float, typer.Option(callback=significance_level, help="Significance level, in (0, 1).")
    ] = 0.05,
    json_out: Annotated[
        Path | None, typer.Option("--json", callback=output_file, help="Write the comparison.")
    ] = None,
    fail_if_worse: Annotated[
        bool, typer.Option(help="Exit 1 if B's composite is significantly worse.")
    ] = False,
    markdown_out: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            callback=output_file,
            help="Write the comparison as Markdown (a pull request's comment).",
        ),
    ] = None,
    report_url: Annotated[
        str | None, typer.Option(help="Link to run B's HTML report in the Markdown.")
    ] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Compare two runs: is run B really better than run A?

    Paired bootstrap CIs and permutation p-values. The composite is the primary test; the
    per-metric verdicts use Benjamini–Hochberg adjusted p-values (q), so that comparing many
    metrics does not manufacture differences.
    """
    from agentgauge._atomic import atomic_path
    from agentgauge.documents.compare import compare_runs
    from agentgauge.report.export import write_json
    from agentgauge.report.markdown import comparison_markdown
    from agentgauge.store import Store

    if by not in ("task", "id"):
        raise usage_error(f"--by must be 'task' or 'id', not {by!r}")
    require_store(db)
    refuse_clashes({"--json": json_out, "--markdown": markdown_out}, store=db, overwrite=overwrite)
    with Store(db) as store:
        result = compare_runs(store, run_a, run_b, by="task" if by == "task" else "id", alpha=alpha)
        markdown = comparison_markdown(store, result, report_url=report_url)
    if not result["metrics"]:
        raise usage_error(
            f"no sample of run {result['run_a']} pairs with one of run {result['run_b']} "
            f"(by {by}; {result['only_in_a']} only in A, {result['only_in_b']} only in B): "
            "nothing to compare"
        )
    console.print(_comparison_table(result, by))
    _print_usage_comparison(result)
    if result.get("pairwise"):
        from agentgauge.cli.judge import print_pairwise

        pair = result["pairwise"]
        print_pairwise({**pair, "pairs": [pair]})
    if result["only_in_a"] or result["only_in_b"]:
        console.print(f"unpaired: {result['only_in_a']} only in A, {result['only_in_b']} only in B")
    for warning in result["warnings"]:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}")
    if json_out:
        write_json(result, json_out)
    if markdown_out:
        with atomic_path(markdown_out) as temporary:
            temporary.write_text(markdown, encoding="utf-8")
    if fail_if_worse and result["metrics"].get("composite", {}).get("verdict") == "B worse":
        raise VerdictExit(1)


def passk(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN_ID", help="A run with repeated trials per task.")
    ],
    k: Annotated[str, typer.Option(help="Comma-separated k values.")] = "1,3,5",
    threshold: Annotated[float, typer.Option(help="Success when value >= threshold.")] = 0.8,
    metric_name: Annotated[str, typer.Option("--metric", help="composite or a metric.")] = (
        "composite"
    ),
    db: DbOption = Path("agentgauge.db"),
) -> None:
    """pass@k and pass^k of a run with repeated trials per task.

    pass@k: at least one of k trials succeeds; pass^k: all k succeed; both over tasks.
    """
    from agentgauge.documents.compare import pass_k_table
    from agentgauge.store import Store

    try:
        ks = [int(x) for x in k.split(",") if x.strip()]
    except ValueError:
        raise usage_error(f"--k must be comma-separated integers, not {k!r}") from None
    require_store(db)
    try:
        with Store(db) as store:
            table = pass_k_table(store, run_id, ks, threshold=threshold, metric=metric_name)
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    if table["max_trials"] == 0:
        raise usage_error(f"run {table['run_id']} has no scored sample")
    for kk, row in table["k"].items():
        if row["pass_at_k"] is None:
            console.print(
                f"k={kk}: — (no task has {kk} trials; the most is {table['max_trials']}: "
                "run with more --repeats)"
            )
            continue
        at, hat = f"{row['pass_at_k']:.3f}", f"{row['pass_hat_k']:.3f}"
        console.print(f"k={kk}: pass@k {at}  pass^k {hat}  over {row['tasks']} tasks")
