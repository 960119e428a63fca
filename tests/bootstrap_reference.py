"""scipy's percentile bootstrap of a mean, the reference agentgauge's intervals are equal to."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps


def scipy_interval(
    values: Sequence[float] | np.ndarray, *, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    """scipy's percentile bootstrap interval of the mean of ``values``, drawn from
    ``numpy.random.default_rng(seed)`` in the batches agentgauge uses.

    Args:
        values: the sample.
        confidence: the confidence level.
        n_resamples: the number of resamples.
        seed: the generator's seed.
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # scipy's note on degenerate (all equal) data
        ref = sps.bootstrap(
            (np.asarray(values),),
            np.mean,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method="percentile",
            random_state=np.random.default_rng(seed),
            vectorized=True,
            batch=max(1, 2_000_000 // len(values)),
        )
    return float(ref.confidence_interval.low), float(ref.confidence_interval.high)
