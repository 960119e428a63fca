import numpy as np
import pytest
from scipy import stats as sps

from agentgauge.stats import mean_ci, summarize
from bootstrap_reference import scipy_interval


def test_summary_counts_missing_and_matches_scipy_bootstrap() -> None:
    rng = np.random.default_rng(1)
    values = list(rng.uniform(size=200))
    s = summarize([*values, None, None])
    assert s.n == 200 and s.n_missing == 2
    assert s.mean == pytest.approx(float(np.mean(values)))
    ref = sps.bootstrap(
        (np.asarray(values),),
        np.mean,
        n_resamples=2000,
        method="percentile",
        random_state=np.random.default_rng(0),
    )
    assert s.ci_low == pytest.approx(ref.confidence_interval.low)
    assert s.ci_high == pytest.approx(ref.confidence_interval.high)
    assert s.ci_low < s.mean < s.ci_high


def test_degenerate_and_large_samples() -> None:
    assert mean_ci([0.5]) is None
    assert mean_ci([0.3, 0.3, 0.3]) == (0.3, 0.3)
    empty = summarize([None])
    assert (empty.mean, empty.n, empty.n_missing) == (None, 0, 1)
    rng = np.random.default_rng(2)
    big = rng.uniform(size=50_000)
    low, high = mean_ci(big)
    # a large sample: the bootstrap interval meets the normal one, z(0.975) ≈ 1.96
    half = sps.norm.ppf(0.975) * big.std(ddof=1) / np.sqrt(big.size)
    assert (low, high) == pytest.approx((big.mean() - half, big.mean() + half))


@pytest.mark.parametrize("seed", [0, 3, 11])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_mean_ci_equals_scipy_bootstrap_to_the_last_bit(seed: int, confidence: float) -> None:
    # computed with numpy alone, the interval is scipy's percentile bootstrap value for value:
    # the same draws, batches and linear quantile (ties, binary and repeating fractions)
    rng = np.random.default_rng(seed)
    for values in (
        rng.uniform(size=37),
        rng.integers(0, 2, size=1500).astype(float),
        rng.choice([0.0, 0.25, 1 / 3, 1.0], size=401),
    ):
        expected = scipy_interval(values, confidence=confidence, n_resamples=500, seed=seed)
        assert mean_ci(values, confidence=confidence, n_resamples=500, seed=seed) == expected
