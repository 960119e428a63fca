"""Run-level statistics: means with bootstrap confidence intervals.

The interval of a mean is scipy's percentile bootstrap (``scipy.stats.bootstrap``, seeded, so
the same values give the same interval). Past ``max_bootstrap_n`` values the resampling costs
more than it tells: the interval is then the normal (CLT) interval of the mean, which the
percentile bootstrap converges to at that size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

__all__ = ["Summary", "mean_ci", "summarize"]


@dataclass(frozen=True)
class Summary:
    """Mean of the available values with its confidence interval.

    Args:
        mean: mean over the non-missing values (None when there are none).
        ci_low: lower bound of the interval (None with fewer than two values).
        ci_high: upper bound of the interval.
        n: number of non-missing values.
        n_missing: number of None values.
    """

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    n_missing: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    max_bootstrap_n: int = 20_000,
) -> tuple[float, float] | None:
    """Confidence interval of the mean.

    Args:
        values: the observations (no None).
        confidence: coverage of the interval.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling.
        max_bootstrap_n: above this many values, use the normal interval instead.

    Returns:
        (low, high), or None with fewer than two values.
    """
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        return None
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    if data.size > max_bootstrap_n:
        half = sps.norm.ppf(0.5 + confidence / 2) * data.std(ddof=1) / math.sqrt(data.size)
        m = float(data.mean())
        return m - half, m + half
    res = sps.bootstrap(
        (data,),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        random_state=np.random.default_rng(seed),
        vectorized=True,
        batch=max(1, 2_000_000 // data.size),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def summarize(values: Sequence[float | None], **kwargs: Any) -> Summary:
    """Mean, confidence interval and counts of values that may contain None.

    Args:
        values: observations, None for missing.
        **kwargs: passed to :func:`mean_ci`.
    """
    present = [v for v in values if v is not None]
    missing = len(values) - len(present)
    if not present:
        return Summary(None, None, None, 0, missing)
    ci = mean_ci(present, **kwargs)
    mean = float(np.mean(present))
    return Summary(mean, ci[0] if ci else None, ci[1] if ci else None, len(present), missing)
