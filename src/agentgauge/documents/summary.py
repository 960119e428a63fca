"""A run's figures as every report and the viewer show them: the metrics' means with their
confidence intervals, the tokens and cost of the agent and of its judges, and the suite's
verdict on the run."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agentgauge.judges.cost import judge_spend
from agentgauge.judges.noise import Aggregate, noise_summary
from agentgauge.results import USAGE_FIELDS, RunStats, judge_totals, samples_of, summary_stats
from agentgauge.scoring import UNCERTAIN, band, failed_gates, reaches, recommendation
from agentgauge.stats import Summary
from agentgauge.store import RunInfo, Store

__all__ = [
    "USAGE_FIELDS",
    "fail_under_check",
    "finite",
    "gates_failed",
    "judge_noise",
    "run_aggregate",
    "run_usage",
    "run_verdict",
]


def run_aggregate(store: Store, run_id: str) -> dict[str, Summary]:
    """Per-metric means with 95% bootstrap CIs over a run's samples, plus ``composite``.

    Args:
        store: the results store.
        run_id: the run.
    """
    return summary_stats(store, run_id).aggregate()


def _setup_spend(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The judges' once-per-run calls (a rubric's evaluation steps) in :func:`judge_spend`'s
    shape."""
    out = []
    for record in store.records(run_id, "judge_setup"):
        usage, cached = record.get("usage"), record.get("cached")
        if isinstance(usage, dict) and isinstance(cached, bool):
            out.append(judge_spend([{"usage": usage, "cached": cached}]) or {})
    return out


def run_usage(store: Store, run_id: str, stats: RunStats | None = None) -> dict[str, Any]:
    """A run's tokens and cost: the agent's totals and means with 95% CIs, the judges' totals,
    and the composite per dollar and per 1,000 tokens.

    ``composite_per_usd`` = Σ composite / Σ cost over the samples that have both (None when
    their cost is 0 or unknown); ``composite_per_1k_tokens`` likewise with total tokens / 1000.
    The judges' totals add the calls of every sample and the run's set-up calls (a rubric's
    evaluation steps); their ``cost_usd`` leaves out the ``cost_unknown`` calls.

    Args:
        store: the results store.
        run_id: the run.
        stats: the run's statistics (:func:`~agentgauge.results.summary_stats`), when at hand.
    """
    rid = store.get_run(run_id).id
    stats = stats or summary_stats(store, rid)
    return {
        "agent": stats.agent_usage,
        "judge": judge_totals(stats.judge, _setup_spend(store, rid)),
        "composite_per_usd": stats.composite_per_usd,
        "composite_per_1k_tokens": stats.composite_per_1k_tokens,
    }


def _repeats_judgments(run: RunInfo) -> bool:
    suite = run.suite_config
    tables = [suite.get("judge") or {}, *(suite.get("options") or {}).values()]
    return any(isinstance(t, dict) and (t.get("samples") or 1) > 1 for t in tables)


def judge_noise(store: Store, run_id: str) -> dict[str, Any]:
    """Each repeated judge metric's noise over the run (:func:`agentgauge.judges.noise.
    noise_summary`), with how many samples its noise left ``uncertain`` against the metric's
    own threshold (a rubric's), and the run's count of ``uncertain`` verdicts.

    Args:
        store: the results store.
        run_id: the run.

    Returns:
        ``{"metrics": {METRIC: {...}}, "uncertain": n, "composite_se": se}`` — ``composite_se``
        is the judges' noise in the mean composite, ``sqrt(Σ seᵢ²) / n`` over the samples,
        ``seᵢ`` a sample's composite noise from its judges' standard errors ``s/√k`` with their
        weights in its composite; empty when no judgment of the run was repeated.
    """
    run = store.get_run(run_id)
    if not _repeats_judgments(run):
        return {}
    rows: dict[str, list[list[float]]] = {}
    values: dict[str, list[float]] = {}
    aggregates: dict[str, Aggregate] = {}
    straddled: dict[str, int] = {}
    uncertain = 0
    variances: list[float] = []
    weights = run.weights
    for row in samples_of(store, run).iter_samples(run.id):
        uncertain += row.recommendation == UNCERTAIN
        sample_var = 0.0
        weighed = sum(w for m, w in weights.items() if w > 0 and row.values.get(m) is not None)
        for name, entry in row.details.items():
            repeated = entry.get("judge_samples") if isinstance(entry, dict) else None
            if not isinstance(repeated, dict) or not repeated.get("values"):
                continue
            answers = [float(v) for v in repeated["values"]]
            rows.setdefault(name, []).append(answers)
            if (value := row.values.get(name)) is not None:
                values.setdefault(name, []).append(float(value))
            aggregates[name] = repeated.get("aggregate", "mean")
            straddled[name] = straddled.get(name, 0) + bool(entry.get("uncertain"))
            sd = repeated.get("sd")
            if sd and weighed and weights.get(name, 0) > 0:
                sample_var += (weights[name] / weighed) ** 2 * sd * sd / len(answers)
        if row.composite is not None:
            variances.append(sample_var)
    metrics = {
        name: {
            **noise_summary(rows[name], aggregates[name], values.get(name, [])),
            "uncertain": straddled[name],
        }
        for name in rows
    }
    se = math.sqrt(sum(variances)) / len(variances) if variances else None
    return {"metrics": metrics, "uncertain": uncertain, "composite_se": se}


_Z = 1.959963984540054
"""The normal quantile of a two-sided 95% interval."""


def run_verdict(
    run: RunInfo,
    mean_composite: float | None,
    means: Mapping[str, float | None] | None = None,
    *,
    composite_se: float | None = None,
) -> dict[str, Any]:
    """The suite's recommendation and band applied to the run's mean composite, and its gates
    to the metrics' means: a failed gate makes the run a reject (``gates_failed`` says which;
    the key is there when the suite has gates). When the judges' noise in the mean composite
    (``composite_se``) puts the mean's 95% interval across a recommendation threshold, the
    run's recommendation is ``uncertain`` and ``uncertain`` holds the interval and the two
    recommendations.

    Args:
        run: the run (its suite's thresholds and gates are read from the stored config).
        mean_composite: the mean of the samples' composites; None gives None verdicts.
        means: metric -> mean over the samples, for the gates.
        composite_se: the judges' noise in the mean composite (:func:`judge_noise`).
    """
    gates = run.gates
    failed = failed_gates(means or {}, gates)
    verdict: dict[str, Any] = {"recommendation": None, "recommendation_weight": None, "band": None}
    if mean_composite is not None:
        thresholds = run.thresholds
        label, weight = recommendation(mean_composite, thresholds)
        verdict = {
            "recommendation": label,
            "recommendation_weight": weight,
            "band": band(mean_composite, thresholds),
        }
        if composite_se:
            low = max(0.0, mean_composite - _Z * composite_se)
            high = min(1.0, mean_composite + _Z * composite_se)
            ends = [recommendation(low, thresholds)[0], recommendation(high, thresholds)[0]]
            if ends[0] != ends[1] and not failed:
                verdict.update(recommendation=UNCERTAIN, recommendation_weight=None)
                verdict["uncertain"] = {"interval": [low, high], "recommendations": ends}
    if failed:
        verdict.update(recommendation="reject", recommendation_weight=-1.0)
    if gates:
        verdict["gates_failed"] = failed
    return verdict


def fail_under_check(
    mean: float | None, level: float, composite_se: float | None = None
) -> str | None:
    """Why a run fails ``--fail-under``: its mean composite is below the level, or the
    judges' noise puts the mean's 95% interval across it (``uncertain`` fails too: a gate does
    not pass on noise); None when it passes.

    Args:
        mean: the run's mean composite.
        level: the ``--fail-under`` level.
        composite_se: the judges' noise in the mean composite.
    """
    if mean is None:
        return f"no composite (no sample could be scored): --fail-under {level} cannot pass"
    if not reaches(mean, level):
        return f"composite {mean:.3f} is below --fail-under {level}"
    if composite_se and not reaches(mean - _Z * composite_se, level):
        half = _Z * composite_se
        return (
            f"uncertain: composite {mean:.3f} ± {half:.3f} (the judges' noise, 95%) straddles "
            f"--fail-under {level}"
        )
    return None


def gates_failed(store: Store, run: RunInfo) -> dict[str, dict[str, float]]:
    """The gates of the run's suite that its means fail, as :func:`run_verdict` finds them,
    from the gated metrics alone.

    Args:
        store: the results store.
        run: the run.
    """
    metrics = summary_stats(store, run.id).metrics
    means = {name: metrics[name].mean if name in metrics else None for name in run.gates}
    return failed_gates(means, run.gates)


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, infinity) made None, as JSON has none.

    Args:
        value: JSON-like data.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value
