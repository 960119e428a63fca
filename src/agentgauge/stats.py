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

__all__ = [
    "PairedComparison",
    "Summary",
    "mean_ci",
    "paired_comparison",
    "pass_at_k",
    "pass_hat_k",
    "summarize",
]


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

    def __str__(self) -> str:
        """``0.732 [0.683, 0.776] (n=72)``: the mean, its interval and the counts."""
        missing = f", {self.n_missing} missing" if self.n_missing else ""
        if self.mean is None:
            return f"— (n=0{missing})"
        ci = "" if self.ci_low is None else f" [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        return f"{self.mean:.3f}{ci} (n={self.n}{missing})"


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


@dataclass(frozen=True)
class PairedComparison:
    """B minus A over paired observations.

    Args:
        n: number of pairs.
        mean_a: mean of A over the pairs.
        mean_b: mean of B over the pairs.
        diff: mean of B − A.
        ci_low: lower bound of the bootstrap interval of the mean difference.
        ci_high: upper bound.
        p_value: two-sided sign-flip permutation test of a zero mean difference.
    """

    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_comparison(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 5000,
    seed: int = 0,
) -> PairedComparison:
    """Compare paired observations: mean difference, its bootstrap CI and a permutation p-value.

    The interval is scipy's percentile bootstrap of the mean of ``b − a``; the p-value is
    ``scipy.stats.permutation_test`` with ``permutation_type="samples"`` (each pair's sign
    flipped at random), exact when there are few pairs.

    Args:
        a: the baseline's values.
        b: the candidate's values, paired with ``a`` by position.
        confidence: coverage of the interval.
        n_resamples: resamples of the bootstrap and of the permutation test.
        seed: seed of both.
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} and {y.size}")
    if x.size == 0:
        raise ValueError("no pairs to compare")
    d = y - x
    ci = mean_ci(d, confidence=confidence, n_resamples=n_resamples, seed=seed)
    p: float | None = None
    if x.size >= 2:
        if np.all(d == 0):
            p = 1.0
        else:
            res = sps.permutation_test(
                (x, y),
                lambda u, v, axis: np.mean(v - u, axis=axis),
                permutation_type="samples",
                n_resamples=n_resamples,
                vectorized=True,
                random_state=np.random.default_rng(seed),
            )
            p = float(res.pvalue)
    return PairedComparison(
        n=int(x.size),
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        diff=float(d.mean()),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        p_value=p,
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn from n succeeds (c of n did).

    ``pass@k = 1 − C(n−c, k) / C(n, k)`` (the unbiased estimator of Chen et al., 2021).

    Args:
        n: trials of the task.
        c: successful trials.
        k: trials drawn.
    """
    _check_nck(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all of k trials drawn from n succeed: ``pass^k = C(c, k) / C(n, k)``.

    Args:
        n: trials of the task.
        c: successful trials.
        k: trials drawn.
    """
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must be between 0 and n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and the number of trials n={n}")
