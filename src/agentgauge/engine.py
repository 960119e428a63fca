"""Scoring traces with a suite: per-sample scoring (pure, in memory) and ``evaluate()``."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgauge.config import Suite
from agentgauge.metrics.base import Metric, MetricResult, score_many
from agentgauge.model import Trace
from agentgauge.scoring import band, composite, recommendation

__all__ = ["SampleScore", "score_traces"]


@dataclass
class SampleScore:
    """Everything computed for one trace.

    Args:
        trace_id: the trace's id.
        task_id: the trace's task id.
        values: metric -> value (None when not applicable, not measured or failed).
        details: metric -> details dict.
        reasons: metric -> reason (for None values and explanations).
        metric_errors: metric -> error message, for metrics that raised.
        composite: renormalised weighted mean, None when no weighted metric was measured.
        coverage: share of the suite's weight that was measured.
        recommendation: accept / weak_accept / weak_reject / reject, None without composite.
        band: excellent / good / fair / poor, None without composite.
    """

    trace_id: str
    task_id: str
    values: dict[str, float | None] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: dict[str, str | None] = field(default_factory=dict)
    metric_errors: dict[str, str] = field(default_factory=dict)
    composite: float | None = None
    coverage: float = 0.0
    recommendation: str | None = None
    band: str | None = None

    @property
    def error(self) -> str | None:
        """All metric errors of the sample in one line, None when there were none."""
        if not self.metric_errors:
            return None
        return "; ".join(f"{m}: {e}" for m, e in self.metric_errors.items())


def _error_text(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _score_one_metric(metric: Metric, traces: Sequence[Trace]) -> list[MetricResult | str]:
    """Results of one metric over a batch; a metric that raises fails only the failing samples."""
    try:
        return list(score_many(metric, traces))
    except Exception:  # noqa: BLE001 - isolate per sample below
        out: list[MetricResult | str] = []
        for trace in traces:
            try:
                out.append(metric.score(trace))
            except Exception as exc:  # noqa: BLE001 - a crashing metric is a per-sample error
                out.append(_error_text(exc))
        return out


def score_traces(
    traces: Sequence[Trace], suite: Suite, metrics: Sequence[Metric] | None = None
) -> list[SampleScore]:
    """Score traces with every metric of ``suite`` and combine them.

    A metric that raises on a trace becomes an error for that sample and metric (its value is
    None) and the other metrics and samples are unaffected.

    Args:
        traces: the traces to score.
        suite: metrics, weights, options and thresholds.
        metrics: the suite's metrics already built (to reuse loaded models); built if None.
    """
    built = list(metrics) if metrics is not None else suite.build_metrics()
    samples = [SampleScore(trace_id=t.id, task_id=t.task.id) for t in traces]
    for m in built:
        for sample, result in zip(samples, _score_one_metric(m, traces), strict=True):
            if isinstance(result, str):
                sample.values[m.name] = None
                sample.metric_errors[m.name] = result
                sample.reasons[m.name] = "metric raised an error"
            else:
                sample.values[m.name] = result.value
                sample.details[m.name] = result.details
                sample.reasons[m.name] = result.reason
    for sample in samples:
        comp = composite(sample.values, suite.weights)
        sample.composite = comp.value
        sample.coverage = comp.coverage
        if comp.value is not None:
            sample.recommendation = recommendation(comp.value, suite.thresholds)[0]
            sample.band = band(comp.value, suite.thresholds)
    return samples
