"""A judge's own noise: repeated answers combined, their spread, and thresholds they straddle.

A judgment asked ``k`` times (``[judge] samples = k``) gives ``k`` values on the unit scale.

**One sample** (:func:`combine`):

- ordinal judges (scores, weighted criteria): the value is the **mean** of the answers; its
  noise interval is the 95% Student-t interval of that mean, ``mean ± t(0.975, k−1)·s/√k``
  (``s`` the answers' standard deviation, ``ddof = 1``), clipped to [0, 1];
- pass/fail judges: the value is the **majority** (1.0 or 0.0; a tie is 0.5, the share of
  passes). When the t-interval of the share of passes holds 0.5, the majority itself is not
  established and the interval is the whole scale [0, 1]; otherwise it is the value alone.

Answers that all agree have no measured spread: the interval is the value itself. A threshold
``t`` is **straddled** (:func:`straddles`) when the interval's low end is below ``t`` and its
high end reaches it: the judge's own noise could put the value on either side, so a verdict
that depends on it is ``uncertain``.

**A run** (:func:`noise_summary`), over the samples with at least two answers:

- ``mean_sd``: the mean within-sample standard deviation (``ddof = 1``), with its 95%
  bootstrap interval over the samples;
- ``pooled_sd``: the square root of the mean within-sample variance (the unbiased estimate of
  the answers' variance, so its square estimates the judge's σ² without the bias of a mean of
  square roots), with the interval of the mean variance, square-rooted;
- ``agreement``: the share of pairs of answers to the same sample that are equal, averaged
  over the samples; ``unanimous``: the share of samples whose answers all agree;
- ``alpha``: Krippendorff's alpha with the repeats as coders and the samples as units (the
  ``krippendorff`` package; interval distance for ordinal judges, nominal for pass/fail): 1
  when repeats agree perfectly, 0 when they agree no better than chance;
- ``between_sd``: the standard deviation of the samples' values across the run, and
  ``noise_to_spread`` = ``pooled_sd / between_sd``: how much of the run's spread is the judge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentgauge.stats import mean_ci

__all__ = [
    "Aggregate",
    "Combined",
    "combine",
    "krippendorff_alpha",
    "noise_summary",
    "repeat_agreement",
    "straddles",
]

Aggregate = Literal["mean", "majority"]

_CONFIDENCE = 0.95
_DIGITS = 9  # as scoring.THRESHOLD_DECIMALS: thresholds compare after rounding


@dataclass(frozen=True)
class Combined:
    """The answers of one sample combined.

    Args:
        value: the mean or the majority.
        sd: the answers' standard deviation (``ddof = 1``); None with one answer.
        low: the low end of the noise interval.
        high: the high end.
    """

    value: float
    sd: float | None
    low: float
    high: float

    @property
    def interval(self) -> tuple[float, float]:
        """``(low, high)``."""
        return self.low, self.high


def _half_width(values: Sequence[float]) -> tuple[float | None, float]:
    k = len(values)
    if k < 2:
        return None, 0.0
    import numpy as np
    from scipy import stats  # on first use: most runs have no repeated judge

    sd = float(np.std(values, ddof=1))
    return sd, float(stats.t.ppf(0.5 + _CONFIDENCE / 2, k - 1)) * sd / math.sqrt(k)


def combine(values: Sequence[float], aggregate: Aggregate) -> Combined:
    """One sample's answers as one value with its noise interval.

    Args:
        values: the answers on the unit scale (1.0 / 0.0 for pass / fail), at least one.
        aggregate: ``"mean"`` (ordinal judges) or ``"majority"`` (pass/fail judges).

    Raises:
        ValueError: no value.
    """
    import numpy as np

    if not values:
        raise ValueError("combine needs at least one answer")
    sd, half = _half_width(values)
    mean = float(np.mean(values))
    if aggregate == "mean":
        return Combined(mean, sd, max(0.0, mean - half), min(1.0, mean + half))
    passes = sum(v >= 0.5 for v in values)
    fails = len(values) - passes
    value = 1.0 if passes > fails else 0.0 if fails > passes else 0.5
    share = passes / len(values)
    settled = passes != fails and abs(share - 0.5) > half
    return Combined(value, sd, value if settled else 0.0, value if settled else 1.0)


def straddles(interval: tuple[float, float], threshold: float) -> bool:
    """Whether a noise interval lies on both sides of a threshold (its low end below, its
    high end at or above; compared after rounding to 9 decimals).

    Args:
        interval: ``(low, high)``.
        threshold: the threshold or gate.
    """
    low, high = (round(x, _DIGITS) for x in interval)
    t = round(threshold, _DIGITS)
    return low < t <= high


def repeat_agreement(rows: Sequence[Sequence[float]]) -> tuple[float, float]:
    """The mean share of equal pairs among each sample's answers, and the share of samples
    whose answers are unanimous.

    Args:
        rows: each sample's answers (samples with fewer than two are skipped).
    """
    import numpy as np

    pairs, unanimous = [], []
    for row in rows:
        k = len(row)
        if k < 2:
            continue
        _, counts = np.unique(np.round(np.asarray(row, dtype=float), _DIGITS), return_counts=True)
        pairs.append(float((counts * (counts - 1)).sum() / (k * (k - 1))))
        unanimous.append(float(len(counts) == 1))
    if not pairs:
        raise ValueError("no sample has two answers")
    return float(np.mean(pairs)), float(np.mean(unanimous))


def krippendorff_alpha(
    rows: Sequence[Sequence[float]], level: Literal["interval", "nominal"]
) -> float | None:
    """Krippendorff's alpha of the repeats (coders) over the samples (units).

    Args:
        rows: each sample's answers; a sample with fewer answers than the others has missing
            values for the repeats it lacks.
        level: ``"interval"`` or ``"nominal"``.

    Returns:
        Alpha, or None when it is undefined (a single value in the whole matrix: no expected
        disagreement to compare with).
    """
    import krippendorff
    import numpy as np

    width = max((len(r) for r in rows), default=0)
    matrix = np.full((width, len(rows)), np.nan)
    for j, row in enumerate(rows):
        matrix[: len(row), j] = row
    observed = matrix[~np.isnan(matrix)]
    if width < 2 or observed.size == 0 or np.all(observed == observed[0]):
        return None
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def _ci(values: Sequence[float]) -> tuple[float, float] | None:
    return mean_ci(values, confidence=_CONFIDENCE)


def noise_summary(
    rows: Sequence[Sequence[float]], aggregate: Aggregate, values: Sequence[float]
) -> dict[str, Any]:
    """A judge metric's noise over a run.

    Args:
        rows: each sample's answers on the unit scale.
        aggregate: how the metric combined them.
        values: the samples' combined values (for the between-sample spread).

    Returns:
        ``{"samples", "answers", "aggregate", "mean_sd", "mean_sd_ci", "pooled_sd",
        "pooled_sd_ci", "agreement", "unanimous", "alpha", "alpha_level", "between_sd",
        "noise_to_spread"}``; the noise figures are None when no sample has two answers.
    """
    import numpy as np

    repeated = [list(r) for r in rows if len(r) >= 2]
    level: Literal["interval", "nominal"] = "nominal" if aggregate == "majority" else "interval"
    between = float(np.std(values, ddof=1)) if len(values) >= 2 else None
    out: dict[str, Any] = {
        "samples": len(repeated),
        "answers": sum(len(r) for r in repeated),
        "aggregate": aggregate,
        "alpha_level": level,
        "between_sd": between,
    }
    if not repeated:
        keys = ("mean_sd", "mean_sd_ci", "pooled_sd", "pooled_sd_ci", "agreement", "unanimous")
        return {**out, **dict.fromkeys(keys), "alpha": None, "noise_to_spread": None}
    sds = [float(np.std(r, ddof=1)) for r in repeated]
    variances = [sd * sd for sd in sds]
    pooled = math.sqrt(float(np.mean(variances)))
    var_ci = _ci(variances)
    agreement, unanimous = repeat_agreement(repeated)
    return {
        **out,
        "mean_sd": float(np.mean(sds)),
        "mean_sd_ci": _ci(sds),
        "pooled_sd": pooled,
        "pooled_sd_ci": None if var_ci is None else (math.sqrt(var_ci[0]), math.sqrt(var_ci[1])),
        "agreement": agreement,
        "unanimous": unanimous,
        "alpha": krippendorff_alpha(rows, level),
        "noise_to_spread": pooled / between if between else None,
    }
