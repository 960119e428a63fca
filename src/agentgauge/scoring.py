"""Composite score, recommendation and interpretation band.

``composite = Σ wᵢ·vᵢ / Σ wᵢ`` over the metrics whose value is not None (weights renormalised
over what was measured); ``coverage`` is the share of the total weight that was available. A
lower-is-better metric (``communication_overhead``) enters as ``vᵢ = 1 − value``.

**uncertain** is the verdict of a sample whose verdict the judges' own noise could change: a
judge asked several times reports the noise interval of its value (``details[metric]
["judge_samples"]["interval"]``); the composite is computed again with every such metric at
the low end and at the high end of its interval (a lower-is-better one the other way round),
and when the two give different recommendations, or a gated metric's interval straddles its
floor, the sample is ``uncertain`` instead (:func:`uncertainty`). A gate the interval lies
wholly below still rejects the sample.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "THRESHOLD_DECIMALS",
    "UNCERTAIN",
    "Composite",
    "Thresholds",
    "band",
    "composite",
    "failed_gates",
    "gate_note",
    "noise_intervals",
    "reaches",
    "recommendation",
    "uncertainty",
]

UNCERTAIN = "uncertain"
"""The verdict of a sample whose verdict lies within its judges' noise (see the module)."""


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


def noise_intervals(details: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """The noise intervals the metrics of a sample report: metric -> ``(low, high)``, for the
    repeated judgments whose answers did not all agree.

    Args:
        details: the sample's details, by metric.
    """
    out = {}
    for name, entry in details.items():
        # a metric's details are a dict (the ABC's check, for every metric of every sample,
        # would cost more than the rest)
        mapping = type(entry) is dict or isinstance(entry, Mapping)
        repeated = entry.get("judge_samples") if mapping else None
        if repeated is None:  # no repeated judgment: most metrics, every sample
            continue
        interval = repeated.get("interval") if isinstance(repeated, Mapping) else None
        if isinstance(interval, list | tuple) and len(interval) == 2 and interval[0] < interval[1]:
            out[name] = (float(interval[0]), float(interval[1]))
    return out


def _straddles(low: float, high: float, threshold: float) -> bool:
    return not reaches(low, threshold) and reaches(high, threshold)


class _Scored(Protocol):
    weights: dict[str, float]
    thresholds: Thresholds
    gates: dict[str, float]

    @property
    def lower_is_better(self) -> frozenset[str]: ...


def uncertainty(
    values: Mapping[str, float | None],
    intervals: Mapping[str, tuple[float, float]],
    suite: _Scored,
    failed: Mapping[str, Any],
) -> dict[str, Any] | None:
    """Why a sample's verdict is ``uncertain``, or None when its judges' noise cannot change it
    (or a gate fails outright).

        Args:
            values: the sample's metric values.
            intervals: the noise intervals of its repeated judgments (:func:`noise_intervals`).
            suite: the weights, thresholds, gates and lower-is-better metrics.
            failed: the gates the sample's values fail (:func:`failed_gates`); one whose noise
                interval lies wholly below its floor rejects the sample whatever the noise.

        Returns:
            ``{"composite_interval": [low, high], "recommendations": [at low, at high],
            "gates": {metric: {"interval", "floor"}}, "note"}`` or None.
    """
    outright = [
        name
        for name, gate in failed.items()
        if name not in intervals or not reaches(intervals[name][1], gate["floor"])
    ]
    if outright:
        return None
    flipped = suite.lower_is_better
    low = dict(values)
    high = dict(values)
    for name, (lo, hi) in intervals.items():
        low[name], high[name] = (hi, lo) if name in flipped else (lo, hi)
    notes = []
    out: dict[str, Any] = {}
    c_low = composite(low, suite.weights, lower_is_better=flipped).value
    c_high = composite(high, suite.weights, lower_is_better=flipped).value
    if c_low is not None and c_high is not None:
        at = [
            recommendation(c_low, suite.thresholds)[0],
            recommendation(c_high, suite.thresholds)[0],
        ]
        out["composite_interval"] = [c_low, c_high]
        if at[0] != at[1]:
            out["recommendations"] = at
            notes.append(f"composite {c_low:.3f}–{c_high:.3f} spans {at[0]} and {at[1]}")
    gates: dict[str, dict[str, Any]] = {}
    for name, floor in suite.gates.items():
        if name in intervals and _straddles(*intervals[name], floor):
            lo, hi = intervals[name]
            gates[name] = {"interval": [lo, hi], "floor": floor}
            notes.append(f"{name} {lo:.3f}–{hi:.3f} straddles its gate {floor:g}")
    if gates:
        out["gates"] = gates
    if not notes:
        return None
    out["note"] = "; ".join(notes)
    return out
