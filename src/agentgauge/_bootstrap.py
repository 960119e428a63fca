"""numpy's seeded percentile bootstrap of a mean, reproduced in plain Python for small samples.

A command scoring a few traces prints a dozen intervals, each a bootstrap of a handful of
values: importing numpy for them costs more than the resampling itself (and numpy's BLAS
threads cost processor time besides). This module draws the same resamples that
``numpy.random.default_rng(seed).integers(0, n, (n_resamples, n))`` draws (``SeedSequence``,
``PCG64``, Lemire's bounded integers as numpy buffers them), sums each resample as numpy's
``add.reduce`` sums a row (pairwise, in blocks of eight) and takes the same quantile, so that
the interval is equal to numpy's to the last bit (:func:`agentgauge.stats.mean_ci`, which
chooses between the two, is tested against numpy on many sizes and seeds).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import accumulate

__all__ = ["bootstrap_percentile", "bounded_draws", "resample_indices"]

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_M128 = (1 << 128) - 1

# numpy.random.SeedSequence's hash constants
_POOL_SIZE = 4
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_XSHIFT = 16

_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645  # PCG64's 128-bit multiplier
_BLOCK = 128  # numpy's pairwise summation block (PW_BLOCKSIZE)


def _words(seed: int) -> list[int]:
    """A non-negative integer seed as 32-bit words, least significant first (``[0]`` for 0)."""
    words = [seed & _M32]
    seed >>= 32
    while seed:
        words.append(seed & _M32)
        seed >>= 32
    return words


def _seed_state(seed: int) -> list[int]:
    """``SeedSequence(seed).generate_state(4, numpy.uint64)``."""
    entropy = _words(seed)
    hash_a = _INIT_A

    def hashmix(value: int) -> int:
        nonlocal hash_a
        value ^= hash_a
        hash_a = (hash_a * _MULT_A) & _M32
        value = (value * hash_a) & _M32
        return value ^ (value >> _XSHIFT)

    def mix(x: int, y: int) -> int:
        result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _M32
        return result ^ (result >> _XSHIFT)

    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(_POOL_SIZE)]
    for src in range(_POOL_SIZE):
        for dst in range(_POOL_SIZE):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL_SIZE, len(entropy)):
        for dst in range(_POOL_SIZE):
            pool[dst] = mix(pool[dst], hashmix(entropy[src]))
    hash_b = _INIT_B
    state32 = []
    for i in range(2 * _POOL_SIZE):
        value = pool[i % _POOL_SIZE] ^ hash_b
        hash_b = (hash_b * _MULT_B) & _M32
        value = (value * hash_b) & _M32
        state32.append(value ^ (value >> _XSHIFT))
    return [state32[i] | (state32[i + 1] << 32) for i in range(0, len(state32), 2)]


class _PCG64:
    """numpy's ``PCG64`` bit generator (XSL-RR 128/64)."""

    def __init__(self, seed: int) -> None:
        words = _seed_state(seed)
        initstate = (words[0] << 64) | words[1]
        self._inc = ((((words[2] << 64) | words[3]) << 1) | 1) & _M128
        state = (self._inc + initstate) & _M128
        self._state = (state * _PCG_MULT + self._inc) & _M128

    def words32(self, count: int) -> list[int]:
        """The next ``count`` 64-bit outputs as 32-bit draws: each output's low half, then
        its high half (numpy's ``next_uint32``)."""
        state, inc = self._state, self._inc
        words: list[int] = []
        append = words.append
        for _ in range(count):
            state = (state * _PCG_MULT + inc) & _M128
            value = ((state >> 64) ^ state) & _M64
            rotation = state >> 122
            value = ((value >> rotation) | (value << (64 - rotation))) & _M64
            append(value & _M32)
            append(value >> 32)
        self._state = state
        return words


def bounded_draws(seed: int, bound: int, count: int) -> list[int]:
    """``numpy.random.default_rng(seed).integers(0, bound, count).tolist()``.

    Args:
        seed: a non-negative integer seed.
        bound: the draws are below it: 2 to 2**32 - 1.
        count: how many draws.
    """
    bits = _PCG64(seed)
    # Lemire's method as numpy runs it on 32-bit draws: a draw times the bound, kept unless
    # its low 32 bits fall below (2**32 - bound) % bound (then drawn again)
    threshold = (_M32 - (bound - 1)) % bound
    drawn: list[int] = []
    while len(drawn) < count:
        for word in bits.words32((count - len(drawn) + 1) // 2):
            m = word * bound
            if m & _M32 >= threshold:
                drawn.append(m >> 32)
    del drawn[count:]  # an odd count leaves one over (numpy keeps it for its next call)
    return drawn


@lru_cache(maxsize=8)
def resample_indices(n: int, n_resamples: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """The rows of ``numpy.random.default_rng(seed).integers(0, n, (n_resamples, n))``.

    Args:
        n: how many values each resample draws from (and draws), at least 1.
        n_resamples: how many resamples.
        seed: a non-negative integer seed.
    """
    if n == 1:
        return ((0,),) * n_resamples
    drawn = bounded_draws(seed, n, n * n_resamples)
    return tuple(tuple(drawn[k : k + n]) for k in range(0, len(drawn), n))


def _pairwise_sum(values: Sequence[float]) -> float:
    """The sum of doubles in numpy's order (``add.reduce`` along a contiguous row)."""
    n = len(values)
    if n < 8:
        total = -0.0
        for v in values:
            total += v
        return total
    if n <= _BLOCK:
        r = list(values[:8])
        i = 8
        end = n - n % 8
        while i < end:
            for k in range(8):
                r[k] += values[i + k]
            i += 8
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for v in values[i:]:
            total += v
        return total
    half = n // 2
    half -= half % 8
    return _pairwise_sum(values[:half]) + _pairwise_sum(values[half:])


def bootstrap_percentile(
    data: Sequence[float], *, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of finite doubles, as
    ``agentgauge.stats`` computes it with numpy: the same resampled means (numpy's sum of
    each resample plus 0.0, divided by its size), sorted, and the same type-7 quantile.

    Args:
        data: at least two finite doubles, none of them ``-0.0``.
        confidence: coverage of the interval.
        n_resamples: bootstrap resamples.
        seed: a non-negative integer seed.
    """
    n = len(data)
    size = float(n)
    if n < 8:
        # the common case: a few values draw the same rows again and again (3 values, 27
        # rows), each row's mean (its sum from -0.0, value by value) made once and counted
        counted = []
        for row, times in _counted_rows(n, n_resamples, seed):
            total = -0.0
            for i in row:
                total += data[i]
            counted.append(((0.0 + total) / size, times))
        if any(m != m for m, _ in counted):  # a NaN (infinities of both signs): numpy's too
            return math.nan, math.nan
        counted.sort()
        ends = list(accumulate(times for _, times in counted))

        def mean_at(k: int) -> float:
            return counted[bisect_right(ends, k)][0]

        return _quantiles(mean_at, n_resamples, confidence)
    means = [
        (0.0 + _pairwise_sum([data[i] for i in row])) / size
        for row in resample_indices(n, n_resamples, seed)
    ]
    if any(m != m for m in means):
        return math.nan, math.nan
    means.sort()
    return _quantiles(means.__getitem__, len(means), confidence)


@lru_cache(maxsize=8)
def _counted_rows(n: int, n_resamples: int, seed: int) -> tuple[tuple[tuple[int, ...], int], ...]:
    """Each row of :func:`resample_indices` once, with the times it is drawn."""
    return tuple(Counter(resample_indices(n, n_resamples, seed)).items())


def _quantiles(
    mean_at: Callable[[int], float], count: int, confidence: float
) -> tuple[float, float]:
    """numpy's type-7 quantiles of the central ``confidence`` of ``count`` sorted means, the
    ``k``-th of them being ``mean_at(k)``."""
    alpha = (1 - confidence) / 2
    total = float(count)
    bounds = []
    for p in (alpha, 1 - alpha):
        jg = p * total + (1 - p)
        j = jg // 1 - 1
        g = 0.0 if j < 0 else jg % 1
        below = mean_at(int(min(max(j, 0.0), total - 1)))
        above = mean_at(int(min(max(j + 1, 0.0), total - 1)))
        bounds.append((1 - g) * below + g * above)
    return bounds[0], bounds[1]
