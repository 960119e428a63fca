"""The ``agentgauge`` command."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentgauge._cli import (
    CsvOption,
    DbOption,
    HtmlOption,
    JsonOption,
    console,
    err_console,
    output_file,
    score_level,
    significance_level,
    usage_error,
    write_outputs,
)
from agentgauge.review.cli import review_app
from agentgauge.toolcall.cli import toolcall_app
from agentgauge.tuning.cli import register_tuning_commands

if TYPE_CHECKING:
    from agentgauge.store import Store

app = typer.Typer(
    name="agentgauge",
    help="Evaluate LLM agents and tool-calling models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(toolcall_app, name="toolcall")
app.add_typer(review_app, name="review")
register_tuning_commands(app)


def _say_how_to_resume(store: Store, resume: str | None, db: Path) -> None:
    running = [r for r in store.list_runs(5) if r.status == "running"]
    run = store.get_run(resume) if resume else (running[0] if running else None)
    if run is not None:
        err_console.print(
            f"interrupted: run {run.id} keeps its {run.n_samples} scored samples; continue it "
            f"with: agentgauge evaluate --resume {run.id} --db {db}",
            highlight=False,
        )


def _not_a_file(path: Path) -> str:
    if path.is_dir():
        return f"{path} is a folder: give the trace files in it (e.g. {path}/*.jsonl)"
    return f"no such file: {path}"


@app.command()
def evaluate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="JSONL trace files (.jsonl or .jsonl.gz); with --resume, the run's own files."
        ),
    ] = None,
    suite: Annotated[
        str, typer.Option(help="Built-in suite name or suite TOML file.")
    ] = "behavior",
    db: DbOption = Path("agentgauge.db"),
    jobs: Annotated[
        int | None, typer.Option(min=1, help="Worker processes (default: cores).")
    ] = None,
    json_out: JsonOption = None,
    csv_out: CsvOption = None,
    html_out: HtmlOption = None,
    resume: Annotated[str | None, typer.Option(help="Continue the run with this id.")] = None,
    fail_under: Annotated[
        float | None,
        typer.Option(callback=score_level, help="Exit 1 if the mean composite is below this."),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Traces per batch.")] = 128,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    executor: Annotated[str, typer.Option(help="'local' (processes) or 'ray'.")] = "local",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address (default: start a local one).")
    ] = None,
    trace_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="Input format: 'native' JSONL, 'otel' spans or 'openai-chat' chats.",
        ),
    ] = "native",
) -> None:
    """Score trace files with a suite, store the run and report it."""
    from agentgauge.config import Suite, SuiteError, load_suite
    from agentgauge.engine import evaluate as run_evaluation
    from agentgauge.engine import iter_sources
    from agentgauge.io.importers import IMPORTERS
    from agentgauge.io.jsonl import count_lines
    from agentgauge.store import Store, StoreError

    if executor not in ("local", "ray"):
        raise usage_error(f"--executor must be 'local' or 'ray', not {executor!r}")
    if trace_format not in IMPORTERS:
        raise usage_error(f"--format must be one of {', '.join(IMPORTERS)}, not {trace_format!r}")
    paths = paths or []
    if not paths and not resume:
        raise usage_error("give at least one trace file (or --resume RUN_ID)")
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise usage_error(_not_a_file(missing[0]))
    try:
        with Store(db) as store:
            if resume:
                run = store.get_run(resume)
                if run.kind != "evaluate":
                    raise usage_error(
                        f"run {run.id} is a {run.kind} run: resume it with the command that "
                        "made it (evaluate resumes evaluate runs)"
                    )
                chosen = Suite.model_validate(run.suite_config)
                sources = [Path(s) for s in run.sources] or paths
                trace_format = run.config.get("format", "native")
                gone = [p for p in sources if not p.is_file()]
                if gone:
                    raise usage_error(f"no such file: {gone[0]} (a source of run {run.id})")
            else:
                chosen = load_suite(suite)
                sources = paths
            if trace_format == "native":
                items: Iterable[Any] = iter_sources(sources)
                total = count_lines(sources) if progress else None
            else:
                read = IMPORTERS[trace_format]
                items, total = itertools.chain.from_iterable(read(p) for p in sources), None
            try:
                run_id = run_evaluation(
                    items,
                    chosen,
                    store=store,
                    run_id=resume,
                    resume=resume is not None,
                    jobs=jobs,
                    progress=progress,
                    sources=[str(p) for p in sources],
                    total=total,
                    batch_size=batch_size,
                    executor=executor,
                    ray_address=ray_address,
                    extra_config={"format": trace_format},
                )
            except KeyboardInterrupt:
                _say_how_to_resume(store, resume, db)
                raise typer.Exit(130) from None
            stored = store.get_run(run_id)
            if trace_format == "native" and stored.n_samples == 0 and stored.n_errors > 0:
                err_console.print(
                    "[yellow]hint:[/] no line of the input was a trace. The native format is "
                    "JSONL, one trace per line; an OpenTelemetry export (OTLP/JSON) is read "
                    "with --format otel.",
                    highlight=False,
                )
    except (SuiteError, StoreError) as exc:
        raise usage_error(str(exc)) from None
    write_outputs(
        db, run_id, json_out=json_out, csv_out=csv_out, html_out=html_out, fail_under=fail_under
    )


@app.command("import")
def import_traces(
    paths: Annotated[list[Path], typer.Argument(help="Files to import.")],
    out: Annotated[
        Path,
        typer.Option(callback=output_file, help="Native JSONL to write (.jsonl or .jsonl.gz)."),
    ],
    trace_format: Annotated[str, typer.Option("--format", help="Input format.")] = "otel",
    group_by: Annotated[
        str, typer.Option(help="otel: one trace per 'trace' id or per 'conversation'.")
    ] = "trace",
    task_id_attribute: Annotated[
        str, typer.Option(help="otel: the span attribute holding the task id.")
    ] = "gen_ai.conversation.id",
    logs: Annotated[
        list[Path] | None, typer.Option(help="otel: OTLP logs exports in other files.")
    ] = None,
) -> None:
    """Convert other tools' traces (OpenTelemetry GenAI / OpenInference spans, OpenAI-format
    chats) to native JSONL."""
    from functools import partial

    from agentgauge.io.importers import IMPORTERS, Importer
    from agentgauge.io.jsonl import ReadError, write_traces
    from agentgauge.io.otel import read_otel
    from agentgauge.model import Trace

    if trace_format not in IMPORTERS:
        raise usage_error(f"--format must be one of {', '.join(IMPORTERS)}, not {trace_format!r}")
    if group_by not in ("trace", "conversation"):
        raise usage_error(f"--group-by must be 'trace' or 'conversation', not {group_by!r}")
    missing = [p for p in [*paths, *(logs or [])] if not p.is_file()]
    if missing:
        raise usage_error(_not_a_file(missing[0]))
    read: Importer = IMPORTERS[trace_format]
    if trace_format == "otel":
        read = partial(
            read_otel,
            group_by="trace" if group_by == "trace" else "conversation",
            task_id_attribute=task_id_attribute,
            log_files=logs or [],
        )
    n_errors = 0

    def traces() -> Iterable[Trace]:
        nonlocal n_errors
        for path in paths:
            for item in read(path):
                if isinstance(item, ReadError):
                    n_errors += 1
                    err_console.print(str(item), style="yellow", highlight=False, markup=False)
                else:
                    yield item

    with console.status("importing"):
        n = write_traces(traces(), out)
    console.print(f"wrote {n} traces to {out}; {n_errors} errors")


@app.command()
def runs(
    db: DbOption = Path("agentgauge.db"),
    limit: Annotated[int, typer.Option(help="At most this many runs.")] = 50,
) -> None:
    """List the runs in the store, newest first."""
    from agentgauge.report.terminal import print_runs
    from agentgauge.store import Store

    if not db.exists():
        raise usage_error(f"no store at {db}")
    with Store(db) as store:
        print_runs(store, console, limit)


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    db: DbOption = Path("agentgauge.db"),
    json_out: JsonOption = None,
    csv_out: CsvOption = None,
    html_out: HtmlOption = None,
) -> None:
    """Print a stored run's summary again (and export it), with the records a tune, impact or
    review run keeps beside its samples."""
    from agentgauge.store import Store, StoreError

    if not db.exists():
        raise usage_error(f"no store at {db}")
    try:
        with Store(db) as store:
            rid = store.get_run(run_id).id
            streams = store.streams(rid)
            records = {name: store.records(rid, name) for name in streams}
    except StoreError as exc:
        raise usage_error(str(exc)) from None
    write_outputs(
        db,
        rid,
        json_out=json_out,
        csv_out=csv_out,
        html_out=html_out,
        fail_under=None,
        extra={"records": records} if records else None,
    )
    if records:
        counts = ", ".join(f"{name} ({n})" for name, n in streams.items())
        console.print(f"records kept with this run: {counts} (all of them in --json)")
    for best in records.get("tuning_result", [])[-1:]:
        params = ", ".join(f"{k}={v}" for k, v in best.get("best_params", {}).items())
        level = best.get("best_objective_all_tasks")
        shown = "—" if level is None else f"{level:.4f}"
        console.print(f"best by level: {params} (objective {shown} on every task)", highlight=False)
    for claim in records.get("impact_claims", []):
        console.print(f"{claim.get('param')} -> {claim.get('metric')}: {claim.get('verdict')}")


@app.command()
def compare(
    run_a: Annotated[str, typer.Argument(help="Baseline run id.")],
    run_b: Annotated[str, typer.Argument(help="Candidate run id.")],
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
) -> None:
    """Is run B really better than run A? Paired bootstrap CIs and permutation p-values.

    The composite is the primary test; the per-metric verdicts use Benjamini–Hochberg adjusted
    p-values (q), so that comparing many metrics does not manufacture differences.
    """
    from agentgauge.report.compare import compare_runs
    from agentgauge.report.export import write_json
    from agentgauge.report.terminal import compact_table
    from agentgauge.store import Store, StoreError

    if by not in ("task", "id"):
        raise usage_error(f"--by must be 'task' or 'id', not {by!r}")
    if not db.exists():
        raise usage_error(f"no store at {db}")
    try:
        with Store(db) as store:
            result = compare_runs(
                store, run_a, run_b, by="task" if by == "task" else "id", alpha=alpha
            )
    except StoreError as exc:
        raise usage_error(str(exc)) from None
    if not result["metrics"]:
        raise usage_error(
            f"no sample of run {result['run_a']} pairs with one of run {result['run_b']} "
            f"(by {by}; {result['only_in_a']} only in A, {result['only_in_b']} only in B): "
            "nothing to compare"
        )
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
            name,
            str(r["n"]),
            f"{r['mean_a']:.3f}",
            f"{r['mean_b']:.3f}",
            f"{r['diff']:+.3f}{ci}",
            p,
            verdict,
        )
    console.print(table)
    if result["only_in_a"] or result["only_in_b"]:
        console.print(f"unpaired: {result['only_in_a']} only in A, {result['only_in_b']} only in B")
    for warning in result["warnings"]:
        err_console.print(f"[yellow]warning:[/] {warning}")
    if json_out:
        write_json(result, json_out)
    if fail_if_worse and result["metrics"].get("composite", {}).get("verdict") == "B worse":
        raise typer.Exit(1)


@app.command()
def passk(
    run_id: Annotated[str, typer.Argument(help="A run with repeated trials per task.")],
    k: Annotated[str, typer.Option(help="Comma-separated k values.")] = "1,3,5",
    threshold: Annotated[float, typer.Option(help="Success when value >= threshold.")] = 0.8,
    metric_name: Annotated[str, typer.Option("--metric", help="composite or a metric.")] = (
        "composite"
    ),
    db: DbOption = Path("agentgauge.db"),
) -> None:
    """pass@k (at least one of k trials succeeds) and pass^k (all k succeed), over tasks."""
    from agentgauge.report.compare import pass_k_table
    from agentgauge.store import Store, StoreError

    try:
        ks = [int(x) for x in k.split(",") if x.strip()]
    except ValueError:
        raise usage_error(f"--k must be comma-separated integers, not {k!r}") from None
    if not db.exists():
        raise usage_error(f"no store at {db}")
    try:
        with Store(db) as store:
            table = pass_k_table(store, run_id, ks, threshold=threshold, metric=metric_name)
    except (StoreError, ValueError) as exc:
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


@app.command()
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


@app.command()
def schema() -> None:
    """Print the JSON Schema of one line of the native trace format."""
    from agentgauge.model import trace_json_schema

    typer.echo(json.dumps(trace_json_schema(), indent=2))


def main() -> None:
    """The console script: any command's unusable store is a usage error (exit 2), not a
    traceback."""
    from agentgauge.store import StoreError

    try:
        app()
    except StoreError as exc:
        err_console.print(f"[red]error:[/] {exc}", highlight=False)
        raise SystemExit(2) from None
