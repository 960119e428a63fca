"""Run-to-run comparison and pass@k over repeated trials.

Samples of two runs are paired by task (the mean over repeats of a task on each side) or by
trace id; each metric and the composite get B − A with a bootstrap CI and a paired permutation
p-value. The agent's cost and total tokens are compared the same way (is B cheaper?). pass@k /
pass^k treat a trial as a success when its composite (or a chosen metric) reaches a threshold.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentgauge.metrics.base import lower_is_better
from agentgauge.results import samples_of
from agentgauge.stats import PairedComparison, paired_comparison, pass_k_over_counts
from agentgauge.store import RunInfo, SampleRow, Store
from agentgauge.workflows.pairwise import stored_pairwise

__all__ = [
    "USAGE_COMPARED",
    "RunSamples",
    "compare_runs",
    "compare_samples",
    "pass_k_table",
    "stored_run",
]

PairBy = Literal["task", "id"]


USAGE_COMPARED = ("cost_usd", "total_tokens")
"""The agent's usage figures a comparison pairs (lower is better)."""


@dataclass(frozen=True)
class RunSamples:
    """One side of a comparison.

    Args:
        run: the run's record (its id, suite name and configuration).
        metric_names: the run's metrics, in the order of its suite.
        samples: the run's samples, as :meth:`Store.iter_samples` gives them.
    """

    run: RunInfo
    metric_names: Sequence[str]
    samples: Iterable[SampleRow]


def stored_run(store: Store, run_id: str) -> RunSamples:
    """A stored run as one side of a comparison.

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
    """
    run = store.get_run(run_id)
    source = samples_of(store, run)
    return RunSamples(run, source.metric_names(run.id), source.iter_samples(run.id))


def _grouped(samples: Iterable[SampleRow], by: PairBy) -> dict[str, dict[str, list[float]]]:
    """key -> metric -> [sum, count] of the values (composite and ``usage.`` figures
    included) of one run: a key's mean is all it needs, whatever its number of samples."""
    out: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for row in samples:
        key = row.task_id if by == "task" else row.trace_id
        usage = row.usage or {}
        values = {
            **row.values,
            "composite": row.composite,
            **{f"usage.{f}": usage.get(f) for f in USAGE_COMPARED},
        }
        sums = out[key]
        for name, value in values.items():
            if value is not None:
                if (kept := sums.get(name)) is None:
                    sums[name] = [value, 1]
                else:
                    kept[0] += value
                    kept[1] += 1
    return out


def _paired(
    ga: dict[str, dict[str, list[float]]], gb: dict[str, dict[str, list[float]]], name: str
) -> PairedComparison | None:
    pairs = [
        (ga[k][name][0] / ga[k][name][1], gb[k][name][0] / gb[k][name][1])
        for k in sorted(set(ga) & set(gb))
        if name in ga[k] and name in gb[k]
    ]
    if not pairs:
        return None
    return paired_comparison([p[0] for p in pairs], [p[1] for p in pairs])


def compare_runs(
    store: Store, run_a: str, run_b: str, *, by: PairBy = "task", alpha: float = 0.05
) -> dict[str, Any]:
    """Paired comparison of two stored runs: :func:`compare_samples` of run B against run A,
    with ``pairwise``: the latest result of ``agentgauge judge pairwise A B`` (None when there
    is none).

    Args:
        store: the store holding both runs.
        run_a: the baseline run.
        run_b: the candidate run.
        by: pair samples by ``task`` id (repeats averaged) or by trace ``id``.
        alpha: significance level of the verdicts.
    """
    a, b = stored_run(store, run_a), stored_run(store, run_b)
    result = compare_samples(a, b, by=by, alpha=alpha)
    # the judge's preference between the runs' answers, when `judge pairwise` recorded one
    result["pairwise"] = stored_pairwise(store, a.run.id, b.run.id)
    return result


def compare_samples(
    a: RunSamples, b: RunSamples, *, by: PairBy = "task", alpha: float = 0.05
) -> dict[str, Any]:
    """Paired comparison of run B against run A, per metric and for the composite.

    Args:
        a: the baseline run.
        b: the candidate run.
        by: pair samples by ``task`` id (repeats averaged) or by trace ``id``.
        alpha: significance level of the verdicts. The composite is the primary test (its
            own p-value); the per-metric verdicts use Benjamini–Hochberg adjusted p-values
            (``q_value``) so that testing many metrics does not manufacture differences. For a
            lower-is-better metric (``communication_overhead``) a significant decrease is
            "B better".

    Returns:
        ``{"run_a", "run_b", "by", "alpha", "metrics": {METRIC: {n, mean_a, mean_b, diff,
        ci_low, ci_high, p_value, q_value, verdict}}, "usage": {"cost_usd" | "total_tokens":
        {n, mean_a, mean_b, diff, ci_low, ci_high, p_value, verdict}}, "only_in_a",
        "only_in_b", "warnings", "pairwise"}`` (``pairwise``: a judge's pairwise preference,
        filled in by :func:`compare_runs` from the store). The usage verdicts ("B cheaper",
        "B dearer") use each figure's own p-value: they are not among the metrics' tests.
    """
    a_run, b_run = a.run, b.run
    a_id, b_id = a_run.id, b_run.id
    warnings = []
    if a_run.suite_config != b_run.suite_config:
        warnings.append(
            f"the runs were scored with different suites or options ({a_run.suite} and "
            f"{b_run.suite}): a difference may come from the scoring, not from the agent"
        )
    ga, gb = _grouped(a.samples, by), _grouped(b.samples, by)
    names = list(dict.fromkeys([*a.metric_names, *b.metric_names]))
    kinds = {**_kinds(a_run.suite_config), **_kinds(b_run.suite_config)}
    flipped_kinds = lower_is_better({kinds.get(n, n) for n in names})
    flipped = {n for n in names if kinds.get(n, n) in flipped_kinds}
    results = {}
    for name in [*names, "composite"]:
        if (paired := _paired(ga, gb, name)) is not None:
            results[name] = paired
    q_values = _benjamini_hochberg({n: r.p_value for n, r in results.items() if n != "composite"})
    metrics: dict[str, Any] = {}
    for name, result in results.items():
        # the composite is the one primary test; the metrics share a false-discovery rate
        q = result.p_value if name == "composite" else q_values.get(name)
        verdict = "no significant difference"
        if q is not None and q < alpha:
            improved = result.diff < 0 if name in flipped else result.diff > 0
            verdict = "B better" if improved else "B worse"
        metrics[name] = {**result.as_dict(), "q_value": q, "verdict": verdict}
    usage: dict[str, Any] = {}
    for field in USAGE_COMPARED:
        if (paired := _paired(ga, gb, f"usage.{field}")) is None:
            continue
        verdict = "no significant difference"
        if paired.p_value is not None and paired.p_value < alpha:
            verdict = "B cheaper" if paired.diff < 0 else "B dearer"
        usage[field] = {**paired.as_dict(), "verdict": verdict}
    return {
        "run_a": a_id,
        "run_b": b_id,
        "by": by,
        "alpha": alpha,
        "metrics": metrics,
        "usage": usage,
        "only_in_a": len(set(ga) - set(gb)),
        "only_in_b": len(set(gb) - set(ga)),
        "warnings": warnings,
        "pairwise": None,
    }


def _kinds(suite_config: dict[str, Any]) -> dict[str, str]:
    """The metric kinds of a run's suite (metrics named otherwise than their kind)."""
    kinds = suite_config.get("kinds", {})
    return dict(kinds) if isinstance(kinds, dict) else {}


def _benjamini_hochberg(p_values: dict[str, float | None]) -> dict[str, float]:
    """Benjamini–Hochberg adjusted p-values (``scipy.stats.false_discovery_control``)."""
    from scipy.stats import false_discovery_control  # on first use: a second of start-up

    tested = {name: p for name, p in p_values.items() if p is not None}
    if not tested:
        return {}
    adjusted = false_discovery_control(list(tested.values()), method="bh")
    return {name: float(q) for name, q in zip(tested, adjusted, strict=True)}


def pass_k_table(
    store: Store, run_id: str, ks: list[int], *, threshold: float, metric: str = "composite"
) -> dict[str, Any]:
    """pass@k and pass^k per run, averaged over tasks with at least k trials.

    Args:
        store: the results store.
        run_id: a run with repeated trials of its tasks.
        ks: the k values.
        threshold: a trial succeeds when its value is at least this.
        metric: ``composite`` or a metric name.

    Raises:
        ValueError: for a k below 1, a threshold outside [0, 1] or a metric the run lacks.
    """
    run = store.get_run(run_id)
    rid, source = run.id, samples_of(store, run)
    if any(k < 1 for k in ks):
        raise ValueError(f"k must be at least 1, got {min(ks)}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"--threshold must be within [0, 1] (scores are), got {threshold}")
    names = source.metric_names(rid)
    if metric != "composite" and metric not in names:
        raise ValueError(
            f"run {rid} has no metric {metric!r}; its metrics: {', '.join(names) or 'none'}"
        )
    # per task: trials and successes (two counts, whatever the number of trials)
    trials: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in source.iter_samples(rid):
        value = row.composite if metric == "composite" else row.values.get(metric)
        counts = trials[row.task_id]
        counts[0] += 1
        counts[1] += value is not None and value >= threshold
    table = {
        str(k): row
        for k, row in pass_k_over_counts({t: (n, c) for t, (n, c) in trials.items()}, ks).items()
    }
    return {
        "run_id": rid,
        "metric": metric,
        "threshold": threshold,
        "max_trials": max((n for n, _ in trials.values()), default=0),
        "k": table,
    }
