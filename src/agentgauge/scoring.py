"""Composite score, recommendation and interpretation band.

``composite = Σ wᵢ·vᵢ / Σ wᵢ`` over the metrics whose value is not None (weights renormalised
over what was measured); ``coverage`` is the share of the total weight that was available. A
lower-is-better metric (``communication_overhead``) enters as ``vᵢ = 1 − value``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "THRESHOLD_DECIMALS",
    "Composite",
    "Thresholds",
    "band",
    "composite",
    "failed_gates",
    "gate_note",
    "reaches",
    "recommendation",
]


class Thresholds(BaseModel):
    """Cut-offs of the recommendation mapping and the interpretation bands."""

    model_config = ConfigDict(extra="forbid")

    accept: float = Field(0.8, ge=0, le=1)
    weak_accept: float = Field(0.6, ge=0, le=1)
    weak_reject: float = Field(0.4, ge=0, le=1)
    excellent: float = Field(0.9, ge=0, le=1)
    good: float = Field(0.75, ge=0, le=1)
    fair: float = Field(0.5, ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if not self.accept >= self.weak_accept >= self.weak_reject:
            raise ValueError("thresholds must satisfy accept >= weak_accept >= weak_reject")
        if not self.excellent >= self.good >= self.fair:
            raise ValueError("thresholds must satisfy excellent >= good >= fair")
        return self


RECOMMENDATION_WEIGHTS: dict[str, float] = {
    "accept": 1.0,
    "weak_accept": 0.7,
    "weak_reject": -0.7,
    "reject": -1.0,
}


@dataclass(frozen=True)
class Composite:
    """A weighted mean over the available metrics and the share of weight it covers."""

    value: float | None
    coverage: float
    missing: tuple[str, ...]


def composite(
    values: Mapping[str, float | None],
    weights: Mapping[str, float],
    *,
    lower_is_better: Collection[str] = (),
) -> Composite:
    """Renormalised weighted mean of ``values``.

    Args:
        values: metric name -> value in [0, 1], or None when not measured.
        weights: metric name -> non-negative weight; metrics without a weight count 0.
        lower_is_better: metrics that enter as ``1 − value``.

    Returns:
        The composite (None when no weighted metric was measured), the coverage
        ``Σ_available wᵢ / Σ wᵢ`` and the names of the weighted metrics that were missing.
    """
    total = sum(w for w in weights.values() if w > 0)
    num = 0.0
    den = 0.0
    missing = []
    for name, w in weights.items():
        if w <= 0:
            continue
        v = values.get(name)
        if v is None:
            missing.append(name)
            continue
        num += w * (1.0 - v if name in lower_is_better else v)
        den += w
    if den == 0.0:
        return Composite(None, 0.0, tuple(missing))
    return Composite(num / den, den / total, tuple(missing))


THRESHOLD_DECIMALS = 9
"""Scores and thresholds compare rounded to this many decimals: a composite printed as 0.800
is not below 0.8 because it was summed as 0.7999999999999998."""


def reaches(score: float, threshold: float) -> bool:
    """Whether a score is at least a threshold, floating-point noise aside
    (:data:`THRESHOLD_DECIMALS`).

    Args:
        score: the score.
        threshold: the cut-off.
    """
    return round(score, THRESHOLD_DECIMALS) >= round(threshold, THRESHOLD_DECIMALS)


def failed_gates(
    values: Mapping[str, float | None], gates: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """The gates a sample or a run fails: each gated metric whose value is below its floor
    (a metric without a value fails no gate).

    Args:
        values: metric -> value (a sample's) or mean (a run's).
        gates: metric -> floor (a suite's ``[gates]``).

    Returns:
        metric -> ``{"value", "floor"}``, in the order of ``gates``.
    """
    failed = {}
    for metric, floor in gates.items():
        value = values.get(metric)
        if value is not None and not reaches(value, floor):
            failed[metric] = {"value": value, "floor": floor}
    return failed


def gate_note(failed: Mapping[str, Mapping[str, float]]) -> str:
    """What failed gates say: ``safety 0.350 < 0.9``, joined by commas.

    Args:
        failed: from :func:`failed_gates`.
    """
    return ", ".join(f"{m} {g['value']:.3f} < {g['floor']:g}" for m, g in failed.items())


def recommendation(score: float, thresholds: Thresholds | None = None) -> tuple[str, float]:
    """Map a composite score to (recommendation, weight).

    Args:
        score: composite in [0, 1].
        thresholds: cut-offs; defaults accept ≥ 0.8, weak_accept ≥ 0.6, weak_reject ≥ 0.4.

    Returns:
        One of accept (1.0), weak_accept (0.7), weak_reject (−0.7), reject (−1.0).
    """
    t = thresholds or Thresholds()
    if reaches(score, t.accept):
        label = "accept"
    elif reaches(score, t.weak_accept):
        label = "weak_accept"
    elif reaches(score, t.weak_reject):
        label = "weak_reject"
    else:
        label = "reject"
    return label, RECOMMENDATION_WEIGHTS[label]


def band(score: float, thresholds: Thresholds | None = None) -> str:
    """Interpretation band of a score: excellent ≥ 0.9, good ≥ 0.75, fair ≥ 0.5, else poor.

    Args:
        score: composite in [0, 1].
        thresholds: cut-offs (see :class:`Thresholds`).
    """
    t = thresholds or Thresholds()
    if reaches(score, t.excellent):
        return "excellent"
    if reaches(score, t.good):
        return "good"
    if reaches(score, t.fair):
        return "fair"
    return "poor"
