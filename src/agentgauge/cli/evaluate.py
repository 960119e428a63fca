"""``agentgauge evaluate``: score trace files with a suite, or continue an interrupted run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentgauge.cli._common import (
    CsvOption,
    DbOption,
    HtmlOption,
    JsonOption,
    JudgeKeyEnvOption,
    JudgeOption,
    JudgeSamplesOption,
    JudgeUrlOption,
    NameOption,
    OverwriteOption,
    TagOption,
    check_choice,
    err_console,
    label_run,
    not_a_file,
    refuse_clashes,
    score_level,
    usage_error,
    write_outputs,
)

if TYPE_CHECKING:
    from agentgauge.engine import FileRun
    from agentgauge.store import Store


def _say_how_to_resume(store: Store, resume: str | None, db: Path) -> None:
    running = [r for r in store.list_runs(5) if r.status == "running"]
    run = store.get_run(resume) if resume else (running[0] if running else None)
    if run is not None:
        err_console.print(
            f"interrupted: run {run.id} keeps its {run.n_samples} scored samples; continue it "
            f"with: agentgauge evaluate --resume {run.id} --db {db}",
            highlight=False,
        )


def _check_options(paths: list[str], resume: str | None, executor: str, trace_format: str) -> None:
    from agentgauge.engine import EXECUTORS
    from agentgauge.io.importers import IMPORTERS

    check_choice("--executor", executor, EXECUTORS)
    check_choice("--format", trace_format, IMPORTERS)
    if not paths and not resume:
        raise usage_error("give at least one trace file (or --resume RUN_ID)")
    if callable(getattr(EXECUTORS.get(executor), "evaluate_files", None)):
        return  # it lists the files itself, where they lie (patterns and URIs included)
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise usage_error(not_a_file(Path(missing[0])))


def _with_judge(
    run: FileRun,
    judge: str | None,
    url: str | None,
    key_env: str | None,
    db: Path,
    samples: int | None = None,
) -> FileRun:
    """The run with the command line's judge in its suite (a warning when no metric uses it)."""
    from dataclasses import replace

    from agentgauge.metrics._catalog import JUDGE_METRICS

    suite = run.suite.with_judge(
        model=judge, base_url=url, api_key_env=key_env, cache_path=str(db), samples=samples
    )
    if judge is not None and not any(suite.kind(n) in JUDGE_METRICS for n in suite.metrics):
        err_console.print(
            f"[yellow]warning:[/] suite {suite.name!r} has no judge metric (rubric, "
            "goal_accuracy, trajectory_judge...): --judge is checked but not used",
            highlight=False,
            soft_wrap=True,
        )
    return replace(run, suite=suite)


def evaluate(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="JSONL trace files (.jsonl or .jsonl.gz); with --resume, the run's own files. "
            "With --executor ray also glob patterns, Parquet files and URIs (s3://...), read by "
            "the cluster's workers.",
            metavar="PATHS",
        ),
    ] = None,
    suite: Annotated[
        str, typer.Option(help="Built-in suite name or suite TOML file.")
    ] = "behavior",
    db: DbOption = Path("agentgauge.db"),
    jobs: Annotated[
        int | None,
        typer.Option(min=1, help="Worker processes (default: cores; with ray: the cluster's)."),
    ] = None,
    json_out: JsonOption = None,
    csv_out: CsvOption = None,
    html_out: HtmlOption = None,
    resume: Annotated[str | None, typer.Option(help="Continue the run with this id.")] = None,
    force: Annotated[
        bool, typer.Option(help="With --resume: continue even if a trace file changed.")
    ] = False,
    fail_under: Annotated[
        float | None,
        typer.Option(callback=score_level, help="Exit 1 if the mean composite is below this."),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Traces per batch.")] = 128,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    executor: Annotated[
        str, typer.Option(help="'local' (processes), 'ray', or a plugin's executor.")
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(help="Ray cluster address (default: RAY_ADDRESS, else a local cluster)."),
    ] = None,
    results: Annotated[
        str | None,
        typer.Option(
            help="With ray: the folder or URI of the Parquet results (default: DB-results "
            "beside the store)."
        ),
    ] = None,
    shard_mb: Annotated[
        float, typer.Option(min=0.001, help="With ray: MB of input a worker reads at a time.")
    ] = 64,
    trace_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="Input format: 'native' JSONL, 'otel' spans, 'openai-chat' chats, or a "
            "plugin's importer.",
        ),
    ] = "native",
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    judge_api_key_env: JudgeKeyEnvOption = None,
    judge_samples: JudgeSamplesOption = None,
    name: NameOption = None,
    tags: TagOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Score trace files with a suite, store the run and report it.

    The suite's judge metrics (rubric, goal_accuracy, trajectory_judge...) use its [judge]
    table, or --judge; a judge that cannot work (no key in the environment, an unknown
    provider, an unreachable URL) stops the command before the run starts. Exits 1 when no
    line of the input was a trace (an empty file, another format).
    """
    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, FileRun, evaluate_files, resume_file_run
    from agentgauge.store import Store

    paths = paths or []
    _check_options(paths, resume, executor, trace_format)
    outputs = {"--json": json_out, "--csv": csv_out, "--html": html_out}
    local_inputs = [Path(p) for p in paths if "://" not in p]
    refuse_clashes(outputs, inputs=local_inputs, store=db, overwrite=overwrite)
    with Store(db) as store:
        if resume:
            run = resume_file_run(store, resume, [Path(p) for p in paths], force=force)
        else:
            run = FileRun(load_suite(suite), paths, trace_format)
        run = _with_judge(run, judge, judge_url, judge_api_key_env, db, judge_samples)
        try:
            options = EvaluateOptions(
                jobs=jobs,
                batch_size=batch_size,
                executor=executor,
                ray_address=ray_address,
                results=results,
                shard_bytes=max(1, int(shard_mb * (1 << 20))),
                progress=progress,
            )
            run_id = evaluate_files(run, store=store, options=options)
        except KeyboardInterrupt:
            _say_how_to_resume(store, resume, db)
            raise typer.Exit(130) from None
        label_run(store, run_id, name, tags)
        stored = store.get_run(run_id)
        write_outputs(
            db,
            run_id,
            json_out=json_out,
            csv_out=csv_out,
            html_out=html_out,
            fail_under=fail_under,
            store=store,
        )
    if stored.n_samples == 0:
        _say_why_nothing_was_scored(run.trace_format, stored.n_errors)
        raise typer.Exit(1)


def _say_why_nothing_was_scored(trace_format: str, n_errors: int) -> None:
    from agentgauge.io.importers import IMPORTERS

    if n_errors == 0:
        why = "the input holds no line: give a file with one trace per line"
    else:
        why = IMPORTERS.get(trace_format).no_trace_hint or (
            f"no trace could be read from the input as --format {trace_format}"
        )
    err_console.print(f"[yellow]hint:[/] {why}", highlight=False)
