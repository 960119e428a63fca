"""The bootstrap of a few values without numpy: numpy's draws, numpy's sums and scipy's
percentile interval, equal to the last bit (a short command's summary resamples in plain
Python and must print what a long one prints)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from agentgauge._bootstrap import bootstrap_percentile, bounded_draws, resample_indices
from agentgauge.results.summary import BINS, _histogram
from agentgauge.stats import Moments, mean_ci, summarize
from bootstrap_reference import scipy_interval


@pytest.mark.parametrize("seed", [0, 1, 2**40 + 7, 2**70 + 3])
def test_the_draws_are_numpys(seed: int) -> None:
    for n in [*range(1, 20), 127, 128, 129, 1000]:
        expected = np.random.default_rng(seed).integers(0, n, (9, n)).tolist()
        assert [list(row) for row in resample_indices(n, 9, seed)] == expected
    # wide bounds: Lemire's method draws again often (each redraw shifts the stream)
    for bound in (2**31 + 5, 3 * 2**30, 2**32 - 3, 2**32 - 1):
        for count in (1, 2, 3, 2001):
            expected = np.random.default_rng(seed).integers(0, bound, count).tolist()
            assert bounded_draws(seed, bound, count) == expected


def _samples() -> list[list[float]]:
    rng = np.random.default_rng(5)
    samples: list[list[float]] = []
    for n in [*range(2, 17), 20, 64, 127, 128, 129, 300]:
        samples.append(rng.uniform(size=n).tolist())
        samples.append(rng.integers(0, 2, size=n).astype(float).tolist())  # ties
        samples.append(rng.choice([0.1, 0.2, 1 / 3, 2 / 3, 1.0], size=n).tolist())
    # signs and magnitudes far apart, signed zeros, sums that overflow to ±inf and to NaN
    samples.append([1e-300, -2.5e6, 3.0, 7e15, -0.0, 0.1])
    samples.append([-0.0, -0.0, -0.0])
    samples.append([1e308, 1e308, -1e308, 5.0])
    samples.append([1e308] * 4 + [-1e308] * 12)
    return samples


@pytest.mark.parametrize(("seed", "confidence"), [(0, 0.95), (7, 0.5)])
def test_the_interval_of_a_few_values_is_scipys_to_the_last_bit(
    seed: int, confidence: float
) -> None:
    for values in _samples():
        expected = scipy_interval(values, confidence=confidence, n_resamples=400, seed=seed)
        got = bootstrap_percentile(values, confidence=confidence, n_resamples=400, seed=seed)
        assert repr(got) == repr(expected), values  # repr: NaN and -0.0 compared too


def _moments(values: list[object] | np.ndarray) -> dict[str, object]:
    moments = Moments()
    with np.errstate(all="ignore"):  # numpy's sum of inf and -inf
        moments.add(values)  # type: ignore[arg-type]
    return moments.as_dict()


def test_the_moments_of_a_few_plain_numbers_are_numpys() -> None:
    inf, nan = math.inf, math.nan
    for values in (
        [1, 2, 3],
        [True, False, 1],
        [1, 2.5, -3],
        [0.1, 0.2, 0.30000000000000004],
        [5e-324, -5e-324, 1e-310, 2.0**-1022],
        [1e200, 3.0, -1e200],  # squares past the largest double
        [inf, 2.0, -inf, 1.0],
        [nan, 4.0],
        [inf],
        [2**62, -(2**63), 2**63 - 1],
        [0.0, -0.0, 1.0],  # numpy's choice between signed zeros: left to numpy
        [-0.0, 0.0],
        [],
    ):
        expected = _moments(np.asarray(values))
        assert _moments(list(values)) == expected, values
        assert _moments(tuple(values)) == expected, values  # type: ignore[arg-type]
    # what numpy reads another way is left to numpy
    assert _moments([2**64, 1]) == _moments(np.asarray([2**64, 1]))
    assert _moments([np.float32(0.1), 0.2]) == _moments(np.asarray([np.float32(0.1), 0.2]))


def test_a_few_values_are_binned_as_numpy_bins_them() -> None:
    edges = np.linspace(0.0, 1.0, BINS + 1).tolist()
    rng = np.random.default_rng(9)
    cases = [
        edges,
        [math.nextafter(e, 2.0) for e in edges],
        [math.nextafter(e, -1.0) for e in edges],
        [0.0, -0.0, 1.0, 1.0000000000000002, -1e-300, math.nan, math.inf, 2, 1, 0, True],
        rng.uniform(size=200).tolist(),
        (rng.integers(0, 100, size=200) / 100).tolist(),
        [],
    ]
    for values in cases:
        expected, _ = np.histogram(np.asarray(values, dtype=float), BINS, range=(0.0, 1.0))
        assert _histogram(values) == expected.tolist(), values


_FRESH = """
import json, sys
from agentgauge.stats import mean_ci, summarize
values = json.loads(sys.argv[1])
s = summarize(values)
pair = list(mean_ci(values[:2]) or ())
print(json.dumps([s.mean, s.ci_low, s.ci_high, pair, "numpy" in sys.modules]))
"""


def test_a_fresh_process_summarises_a_few_values_as_numpy_does_without_importing_it() -> None:
    values = [0.5, 0.25, 1.0, 0.0, 1 / 3, 0.9, 0.9]
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, json.dumps(values)],
        capture_output=True,
        text=True,
        check=True,
    )
    mean, low, high, pair, numpy_imported = json.loads(done.stdout)
    assert not numpy_imported
    # this process has numpy: the same figures from numpy's resampling
    assert "numpy" in sys.modules
    expected = summarize(values)
    assert (mean, low, high) == (expected.mean, expected.ci_low, expected.ci_high)
    assert tuple(pair) == mean_ci(np.asarray(values[:2]))
