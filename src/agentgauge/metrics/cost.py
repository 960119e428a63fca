"""``cost_efficiency``: success discounted by what it cost.

``value = success / (1 + spend / reference)``

- ``success`` is another metric's value on the same trace (``success_metric``, default
  ``accuracy``; its options in ``success_options``);
- ``spend`` is the trace's total tokens (``unit = "tokens"``, the default) or its cost in USD
  (``unit = "usd"``), counted by the rule of :mod:`agentgauge.usage` (the trace's own usage,
  else the sum over its steps; the recorded cost, else genai-prices);
- ``reference`` is ``reference_tokens`` (default 1,000) or ``reference_usd`` (default 0.01).

A free success scores its success; a success that spent the reference scores half of it, so
the value stays in [0, 1] and can be weighted, tuned and compared like any metric. ``details``
also give the unbounded ratio: success per 1,000 tokens (or per dollar). None when the success
metric is None or the trace records no usage (or no cost can be found, with ``usd``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgauge.metrics.base import Metric, MetricResult, create_metric, metric, score_many
from agentgauge.model import Trace
from agentgauge.usage import trace_usage

__all__ = ["CostEfficiency"]

_UNITS = ("tokens", "usd")


@metric(
    "cost_efficiency",
    description="success / (1 + spend / reference): success per 1,000 tokens or per dollar",
)
class CostEfficiency:
    """Another metric's success, discounted by the trace's tokens or cost."""

    name = "cost_efficiency"

    def __init__(
        self,
        *,
        success_metric: str = "accuracy",
        success_options: dict[str, Any] | None = None,
        unit: str = "tokens",
        reference_tokens: float = 1000.0,
        reference_usd: float = 0.01,
    ) -> None:
        if unit not in _UNITS:
            raise ValueError(f"unit must be one of {list(_UNITS)}, got {unit!r}")
        if success_metric == "cost_efficiency":
            raise ValueError("success_metric cannot be cost_efficiency itself")
        if reference_tokens <= 0 or reference_usd <= 0:
            raise ValueError("reference_tokens and reference_usd must be positive")
        self.unit = unit
        self.reference = reference_tokens if unit == "tokens" else reference_usd
        self.success_metric = success_metric
        self._success: Metric = create_metric(success_metric, success_options)

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace.

        Args:
            trace: the trace.
        """
        return self.score_batch([trace])[0]

    def score_batch(self, traces: Sequence[Trace]) -> list[MetricResult]:
        """Score traces (the success metric in one batch).

        Args:
            traces: the traces.
        """
        successes = score_many(self._success, traces)
        return [self._combine(t, s) for t, s in zip(traces, successes, strict=True)]

    def _combine(self, trace: Trace, success: MetricResult) -> MetricResult:
        if success.value is None:
            return MetricResult.missing(
                f"{self.success_metric} is not available: {success.reason}",
                success_metric=self.success_metric,
            )
        usage = trace_usage(trace)
        spend = usage.total_tokens if self.unit == "tokens" else usage.cost_usd
        if spend is None:
            why = (
                "the trace records no token usage"
                if self.unit == "tokens"
                else f"the trace's cost is unknown ({usage.cost_note or 'no usage recorded'})"
            )
            return MetricResult.missing(why, success_metric=self.success_metric)
        per = "success_per_1k_tokens" if self.unit == "tokens" else "success_per_usd"
        scale = 1000.0 if self.unit == "tokens" else 1.0
        return MetricResult(
            value=success.value / (1.0 + spend / self.reference),
            details={
                "success_metric": self.success_metric,
                "success": success.value,
                "unit": self.unit,
                "spend": spend,
                "reference": self.reference,
                per: success.value / (spend / scale) if spend > 0 else None,
            },
        )
