"""``agentgauge review ...``: evaluate generated reviews of PeerRead papers, and the
leave-one-out human baseline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from agentgauge.cli._common import (
    Command,
    DbOption,
    HtmlOption,
    JsonOption,
    JudgeKeyEnvOption,
    JudgeOption,
    JudgeUrlOption,
    NameOption,
    OverwriteOption,
    SuiteOption,
    TagOption,
    console,
    err_console,
    exit_if_gates_failed,
    label_run,
    refuse_clashes,
    usage_error,
    write_outputs,
)

if TYPE_CHECKING:
    from agentgauge.store import Store
    from agentgauge.workflows.review_runs import ReviewRun

review_app = typer.Typer(
    help="Evaluate generated paper reviews (PeerRead).", no_args_is_help=True, rich_markup_mode=None
)

PeerReadOption = Annotated[
    Path,
    typer.Option("--peerread", help="PeerRead checkout or folder in its layout."),
]
TextModelOption = Annotated[
    str | None,
    typer.Option(
        "--text-model",
        help="BERTScore model (default: the suite's, else the packaged all-MiniLM-L6-v2).",
    ),
]
JobsOption = Annotated[
    int | None, typer.Option("--jobs", min=1, help="Worker processes (default: cores).")
]
ProgressOption = Annotated[bool, typer.Option(help="Show a progress bar.")]


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _print_agreement(rows: Sequence[dict[str, Any]]) -> None:
    from agentgauge.report.terminal import compact_table

    table = compact_table(
        "aspect agreement with the human reviewers (human: leave-one-out ceiling)"
    )
    table.add_column("aspect", no_wrap=True)
    for column in ("n", "MAE", "rho", "human n", "human MAE", "human rho"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        ours, ceiling = row["generated"], row["human_ceiling"]
        table.add_row(
            escape(row["aspect"]),
            str(ours["n"]),
            _fmt(ours["mae"]),
            _fmt(ours["spearman"]),
            str(ceiling["n"]),
            _fmt(ceiling["mae"]),
            _fmt(ceiling["spearman"]),
        )
    console.print(table)


def _print_human(run: ReviewRun) -> None:
    from agentgauge.report.terminal import compact_table

    table = compact_table(
        f"beside the human reviewers ({run.human_samples} held-out reviews of these papers)"
    )
    table.add_column("metric", no_wrap=True)
    for column in ("generated", "human reviewers"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in run.human:
        table.add_row(escape(row["metric"]), _fmt(row["generated"]), _fmt(row["human"]))
    console.print(table)
    if run.thresholds.get("rule") == "human":
        cut = run.thresholds["recommendation"]
        console.print(
            "thresholds from the human reviewers: task_success at weighted similarity "
            f"{run.thresholds['confidence_threshold']:.3f} (their median); accept "
            f"{cut['accept']:.3f}, weak_accept {cut['weak_accept']:.3f}, weak_reject "
            f"{cut['weak_reject']:.3f} (quartiles of their composites)",
            highlight=False,
        )


def _score_and_report(
    db: Path,
    score: Callable[[Store], ReviewRun],
    json_out: Path | None,
    html_out: Path | None,
    name: str | None,
    tags: list[str] | None,
    *,
    gates: bool,
) -> ReviewRun:
    """Run ``score`` into the store (with its --name and --tag), then print and write the
    run's report; exit as a failed gate requires when ``gates``."""
    from agentgauge.store import Store
    from agentgauge.workflows.review_report import review_report

    with Store(db) as store:
        run = score(store)
        label_run(store, run.run_id, name, tags)
        report = review_report(store, run)
    write_outputs(
        db,
        run.run_id,
        json_out=json_out,
        csv_out=None,
        html_out=html_out,
        fail_under=None,
        extra=report.document,
        gates=False,  # after the tiers
    )
    for status in report.tiers.values():
        style = "green" if status["present"] else "yellow"
        console.print(f"[{style}]{escape(status['statement'])}[/]", highlight=False)
    for note in report.notes:
        err_console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False)
    if report.mean_coverage is not None and report.mean_coverage < 1.0:
        console.print(
            f"mean coverage {report.mean_coverage:.3f}: the composite is renormalised over the "
            "weighted metrics that were measured.",
            highlight=False,
        )
    if run.human:
        _print_human(run)
    if report.agreement:
        _print_agreement(report.agreement)
    if gates:
        exit_if_gates_failed(db, run.run_id)
    return run


@review_app.command("evaluate", cls=Command)
def evaluate_reviews(
    reviews: Annotated[
        Path, typer.Option("--reviews", help="Generated reviews, one JSON object a line.")
    ],
    peerread: PeerReadOption,
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    judge_api_key_env: JudgeKeyEnvOption = None,
    suite: SuiteOption = "review",
    text_model: TextModelOption = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOption = None,
    progress: ProgressOption = True,
    name: NameOption = None,
    tags: TagOption = None,
    thresholds: Annotated[
        str,
        typer.Option(
            "--thresholds",
            help=(
                "default: the suite's; human: task_success and the recommendation "
                "cut-offs from the human reviewers of the same papers."
            ),
        ),
    ] = "default",
    overwrite: OverwriteOption = False,
) -> None:
    """Score generated reviews against PeerRead's human reviews.

    All three tiers are measured, and the held-out human reviews of the same papers are
    scored the same way and shown beside them. Each line of --reviews is {"paper_id",
    "review", "scores"?, "duration_s"?, "trace"?}; a bad line is reported with its file,
    line and field, and the run goes on.
    """
    from agentgauge.workflows.review_runs import THRESHOLD_RULES, evaluate_reviews, review_suite

    if not reviews.is_file():
        raise usage_error(f"--reviews: no such file: {reviews}")
    if thresholds not in THRESHOLD_RULES:
        raise usage_error(f"--thresholds: expected one of {', '.join(THRESHOLD_RULES)}")
    refuse_clashes(
        {"--json": json_out, "--html": html_out}, inputs=[reviews], store=db, overwrite=overwrite
    )
    chosen = review_suite(
        suite,
        judge=judge,
        judge_url=judge_url,
        judge_api_key_env=judge_api_key_env,
        text_model=text_model,
        cache_path=db,
    )

    def score(store: Store) -> ReviewRun:
        return evaluate_reviews(
            reviews,
            peerread,
            chosen,
            store=store,
            jobs=jobs,
            progress=progress,
            thresholds=thresholds,
        )

    _score_and_report(db, score, json_out, html_out, name, tags, gates=True)


@review_app.command("baseline", cls=Command)
def baseline(
    peerread: PeerReadOption,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="At most this many papers (with 2+ reviews)."),
    ] = None,
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    judge_api_key_env: JudgeKeyEnvOption = None,
    suite: SuiteOption = "review",
    text_model: TextModelOption = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOption = None,
    progress: ProgressOption = True,
    name: NameOption = None,
    tags: TagOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Score the human baseline: each human review against the others.

    Each human review is scored as the generated one against the other reviews of its paper
    (leave-one-out), through the whole pipeline.
    """
    from agentgauge.workflows.review_runs import human_baseline, review_suite

    refuse_clashes({"--json": json_out, "--html": html_out}, store=db, overwrite=overwrite)
    chosen = review_suite(
        suite,
        judge=judge,
        judge_url=judge_url,
        judge_api_key_env=judge_api_key_env,
        text_model=text_model,
        cache_path=db,
    )

    def score(store: Store) -> ReviewRun:
        run = human_baseline(
            peerread, chosen, store=store, limit=limit, jobs=jobs, progress=progress
        )
        kept = "" if limit is None else f"; --limit {limit} keeps the first {len(run.papers)}"
        console.print(
            f"human baseline: {len(run.traces)} held-out reviews of {len(run.papers)} papers "
            f"({run.eligible} of the {run.papers_read} papers read have two reviews or more"
            f"{kept})",
            highlight=False,
        )
        return run

    run = _score_and_report(db, score, json_out, html_out, name, tags, gates=False)
    _say_what_the_verdicts_mean(db, run.run_id)


def _say_what_the_verdicts_mean(db: Path, run_id: str) -> None:
    """The human baseline's verdicts are the suite's thresholds applied to how alike people's
    reviews of one paper are: said, lest "reject · poor" on every human review look broken."""
    from agentgauge.results import summary_stats
    from agentgauge.scoring import band, recommendation
    from agentgauge.store import Store

    with Store(db) as store:
        run = store.get_run(run_id)
        mean = summary_stats(store, run.id).composite.mean
    if mean is None:
        return
    t = run.thresholds
    label, _ = recommendation(mean, t)
    console.print(
        f"what the verdicts mean: the suite's thresholds (accept >= {t.accept:g}, weak_accept "
        f">= {t.weak_accept:g}, weak_reject >= {t.weak_reject:g}; bands excellent >= "
        f"{t.excellent:g}, good >= {t.good:g}, fair >= {t.fair:g}) applied to how close each "
        f"human review comes to the others of its paper. Their mean composite {mean:.3f} reads "
        f"as {label} · {band(mean, t)}: people write different reviews of one paper, and this "
        "is what they reach. To judge generated reviews against it, run review evaluate "
        "--thresholds human (thresholds derived from these human reviews).",
        highlight=False,
        markup=False,
    )
