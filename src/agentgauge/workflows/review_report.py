"""The report of a review run: its tiers, per-paper figures, the human reviewers' scores beside the
generated reviews' and aspect agreement with the human reviewers; the last two are also kept in
the store beside the run (record streams ``human_reviewers`` and ``aspect_agreement``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgauge.metrics._catalog import JUDGE_METRICS, TEXT_METRICS
from agentgauge.review.pipeline import per_paper, review_agreement
from agentgauge.store import SampleRow, Store
from agentgauge.workflows.review_runs import ReviewRun

__all__ = ["TIERS", "ReviewReport", "review_report", "tier_status"]

TIERS: dict[str, tuple[str, frozenset[str]]] = {
    "tier1": (
        "text similarity, time and task success",
        frozenset(
            {"time_taken", "task_success", "output_similarity", "cosine", "jaccard", "semantic"}
        ),
    ),
    "tier2": ("LLM judges", JUDGE_METRICS),
    "tier3": (
        "graph metrics over the agent's trace",
        frozenset(
            {
                "coordination_quality",
                "tool_efficiency",
                "path_convergence",
                "tool_selection_accuracy",
                "communication_overhead",
                "coordination_centrality",
                "task_distribution_balance",
            }
        ),
    ),
}
"""The review evaluation's tiers: ``{key: (title, metric names)}``."""


def tier_status(samples: Sequence[SampleRow], metrics: Sequence[str]) -> dict[str, Any]:
    """Which tiers were measured in a run, and why the others were not.

    Args:
        samples: the run's stored samples.
        metrics: the suite's metric names.

    Returns:
        Per tier key: ``title``, the suite's ``metrics`` of that tier, ``measured`` (metric →
        samples with a value), ``present`` (some metric of the tier has a value in some
        sample), ``reasons`` (metric → the most frequent reason of its missing values) and a
        one-line ``statement``.
    """
    values = [s.values for s in samples]
    reasons_of = [s.reasons for s in samples]
    out: dict[str, Any] = {}
    for key, (title, names) in TIERS.items():
        ours = [m for m in metrics if m in names]
        measured = {m: sum(1 for v in values if v.get(m) is not None) for m in ours}
        reasons = {}
        for m in ours:
            found = Counter(
                r.get(m) or "no value"
                for v, r in zip(values, reasons_of, strict=True)
                if v.get(m) is None
            )
            if found:
                reasons[m] = found.most_common(1)[0][0]
        present = any(measured.values())
        label = f"{key.replace('tier', 'Tier ')} ({title})"
        if not ours:
            statement = f"{label}: not in the suite"
        elif present:
            counts = ", ".join(f"{m} {n}/{len(samples)}" for m, n in measured.items())
            statement = f"{label}: measured ({counts})"
        else:
            why = "; ".join(f"{m}: {r}" for m, r in reasons.items())
            statement = f"{label} ABSENT: no sample has a value ({why})"
        out[key] = {
            "title": title,
            "metrics": ours,
            "measured": measured,
            "present": present,
            "reasons": reasons,
            "statement": statement,
        }
    return out


@dataclass(frozen=True)
class ReviewReport:
    """What a review run adds to the common report.

    Args:
        tiers: per tier, what was measured and a one-line ``statement``
            (:func:`tier_status`).
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
