"""The report of a review run: its tiers, per-paper figures, the human reviewers' scores beside the
generated reviews' and aspect agreement with the human reviewers; the last two are also kept in
the store beside the run (record streams ``human_reviewers`` and ``aspect_agreement``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgauge.metrics.text import TEXT_METRICS
from agentgauge.review.pipeline import per_paper, review_agreement, tier_status
from agentgauge.review.runs import ReviewRun
from agentgauge.store import SampleRow, Store

__all__ = ["ReviewReport", "review_report"]


@dataclass(frozen=True)
class ReviewReport:
    """What a review run adds to the common report.

    Args:
        tiers: per tier, what was measured and a one-line ``statement``
            (:func:`~agentgauge.review.pipeline.tier_status`).
        mean_coverage: the samples' mean coverage of the suite's weight; None without samples.
        agreement: per aspect, the generated reviews' agreement with the human reviewers
            beside the leave-one-out human ceiling.
        document: the keys the run adds to its JSON document.
        notes: what the terminal must say beside the tiers (BERTScore unavailable, and why).
    """

    tiers: dict[str, Any]
    mean_coverage: float | None
    agreement: list[dict[str, Any]]
    document: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _bertscore_note(samples: Sequence[SampleRow]) -> str | None:
    """Why the reference metrics that need BERTScore have no value, when BERTScore could not
    run (no torch, a model that cannot be loaded): a silent drop would change the score."""
    reasons: Counter[str] = Counter()
    affected: dict[str, None] = {}
    n_samples = 0
    for sample in samples:
        missing = {
            name: reason
            for name, reason in sample.reasons.items()
            if name in TEXT_METRICS and sample.values.get(name) is None and "BERTScore" in reason
        }
        n_samples += bool(missing)
        reasons.update(missing.values())
        affected.update(dict.fromkeys(missing))
    if not reasons:
        return None
    reason, _ = reasons.most_common(1)[0]
    return (
        f"BERTScore is unavailable ({reason}): {', '.join(affected)} have no value on "
        f"{n_samples} samples; the composite is renormalised without them"
    )


def review_report(store: Store, run: ReviewRun) -> ReviewReport:
    """Build a review run's report and keep its aspect agreement and the human reviewers'
    scores with the run.

    Args:
        store: the store holding the run.
        run: the scored run.
    """
    agreement = [row.model_dump() for row in review_agreement(run.traces, run.papers)]
    samples = list(store.iter_samples(run.run_id))
    for row in agreement:
        store.append_record(run.run_id, "aspect_agreement", row)
    for row in run.human:
        store.append_record(run.run_id, "human_reviewers", row)
    suite = run.suite
    tiers = tier_status(samples, suite.metrics)
    judge_configured = suite.judge is not None and suite.judge.model is not None
    tiers["tier2"]["judge_configured"] = judge_configured
    if not judge_configured:
        tiers["tier2"]["statement"] += "; no judge configured (give --judge MODEL)"
    coverages = [s.coverage for s in samples]
    mean_coverage = sum(coverages) / len(coverages) if coverages else None
    note = _bertscore_note(samples)
    document = {
        **run.document_keys(),
        "coverage": mean_coverage,
        "tiers": tiers,
        "papers": per_paper(samples, suite.thresholds),
        "aspect_agreement": agreement,
    }
    return ReviewReport(tiers, mean_coverage, agreement, document, [note] if note else [])
