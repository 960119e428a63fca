"""Run-level statistics: means with bootstrap confidence intervals, paired comparisons,
pass@k, and agreement between raters.

The interval of a mean is the percentile bootstrap of ``scipy.stats.bootstrap``, seeded, so the
same values give the same interval; it is computed with numpy alone, the same resamples and the
same linear quantile as scipy's (equal to its interval to the last bit), so that a command
scoring a few traces need not import ``scipy.stats``; a few values are resampled in plain
Python, the same draws and the same arithmetic as numpy's (:mod:`agentgauge._bootstrap`), so
that such a command need not import numpy either. Past ``max_bootstrap_n`` values the
resampling costs more than it tells: the interval is then the normal (CLT) interval of the mean,
which the percentile bootstrap converges to at that size.

Agreement compares one rater's scores with a reference (the mean of the other raters of the
same item): mean absolute error (scikit-learn), Spearman's rank correlation (scipy, ties get
average ranks) and, on an ordinal scale, Cohen's quadratic-weighted kappa (scikit-learn's
``cohen_kappa_score``) against the reference rounded to the nearest point of the scale. Their
intervals are percentile bootstraps over the pairs, resampled together.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from agentgauge._bootstrap import bootstrap_percentile

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Agreement",
    "BradleyTerry",
    "Moments",
    "PairedComparison",
    "ScoredItem",
    "Summary",
    "ValueChunks",
    "against_others",
    "agreement",
    "bradley_terry",
    "few_values",
    "leave_one_out",
    "mean_ci",
    "paired_bootstrap_ci",
    "paired_comparison",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_over_counts",
    "pass_k_over_tasks",
    "sign_flip_p_value",
    "summarize",
    "summarize_stream",
    "summary_of",
]


def _scipy_stats() -> Any:
    """``scipy.stats``, imported on first use: a second or more of start-up that the counting
    functions (pass@k, pass^k) never need."""
    from scipy import stats

    return stats


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


_SHIFT = 1073
"""Every finite double times 2**(53 + _SHIFT) is an integer: :class:`Moments` sums those
integers, exactly."""

_HALF = 26  # a 53-bit mantissa as two halves, summed in int64 without overflow


def _scaled_sum(values: np.ndarray) -> int:
    """The exact sum of finite doubles, times 2**(53 + _SHIFT), as an integer."""
    import numpy as np

    if values.size == 0:
        return 0
    mantissas, exponents = np.frexp(values)
    whole = np.ldexp(mantissas, 53).astype(np.int64)  # exact: a double has 53 bits
    order = np.argsort(exponents, kind="stable")
    exponents, whole = exponents[order], whole[order]
    starts = np.flatnonzero(np.r_[True, exponents[1:] != exponents[:-1]])
    high = np.add.reduceat(whole >> _HALF, starts)
    low = np.add.reduceat(whole & ((1 << _HALF) - 1), starts)
    total = 0
    for exponent, h, lo in zip(
        exponents[starts].tolist(), high.tolist(), low.tolist(), strict=True
    ):
        total += ((h << _HALF) + lo) << (exponent + _SHIFT)
    return total


_CHUNK = 1 << 20  # values per exact sum: int64 partial sums stay far from overflowing
_PLAIN_CHUNK = 256
"""A list of at most this many plain Python numbers is added without numpy (as exactly)."""


def few_values(values: object) -> bool:
    """Whether ``values`` is a list or tuple short enough to be worked on in plain Python
    rather than with numpy (whose import costs more than a few values' arithmetic).

    Args:
        values: the values.
    """
    return isinstance(values, list | tuple) and len(values) <= _PLAIN_CHUNK


_MANTISSA = float(1 << 53)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class Moments:
    """Count, sum, sum of squares and extremes of numbers given chunk by chunk.

    The sums are exact (integers scaled by a power of two), so the mean and variance are the
    same whatever the order and the chunking of the values: a run summarised from SQLite in
    input order and from Parquet shards in any order gives the same figures, and the moments
    of shards merge (:meth:`merge`) into the moments of the whole. The sum of squares adds the
    squares as doubles (each rounded once), exactly.

    Args:
        n: how many values.
        integral: every value was an integer (a total of integers stays an integer).
    """

    n: int = 0
    integral: bool = True
    _sum: int = 0
    _squares: int = 0
    _low: float | None = None
    _high: float | None = None
    _nonfinite: float = 0.0  # NaN and infinities, added as doubles
    _squares_overflow: bool = False  # a value past 1e154: its square is no double

    def add(self, values: Sequence[float] | np.ndarray) -> None:
        """Add values (no None).

        Args:
            values: numbers, ints or floats.
        """
        if not (few_values(values) and self._add_plain(cast("Sequence[float]", values))):
            self._add_array(values)

    def _add_plain(self, values: Sequence[float]) -> bool:
        """:meth:`add` of a few plain Python numbers, without numpy; False, and nothing
        added, when numpy would read them another way (another type, an integer past int64)
        or pick between signed zeros for an extreme."""
        integral = True
        doubles = []
        for value in values:
            kind = type(value)
            if kind is float:
                integral = False
            elif (kind is not int and kind is not bool) or not _INT64_MIN <= value <= _INT64_MAX:
                return False
            doubles.append(float(value))
        finite = [v for v in doubles if math.isfinite(v)]
        if finite:
            low, high = min(finite), max(finite)
            if (low == 0.0 or high == 0.0) and any(
                math.copysign(1.0, v) < 0 for v in finite if v == 0.0
            ):
                return False
        if not doubles:
            return True
        self.integral = self.integral and integral
        self.n += len(doubles)
        if len(finite) < len(doubles):
            nonfinite = 0.0
            for v in doubles:
                if not math.isfinite(v):
                    nonfinite += v
            self._nonfinite += nonfinite
        if not finite:
            return True
        self._low = low if self._low is None else min(self._low, low)
        self._high = high if self._high is None else max(self._high, high)
        total = squares = 0
        for v in finite:
            mantissa, exponent = math.frexp(v)
            total += int(mantissa * _MANTISSA) << (exponent + _SHIFT)
            square = v * v
            if square == math.inf:
                self._squares_overflow = True
            else:
                mantissa, exponent = math.frexp(square)
                squares += int(mantissa * _MANTISSA) << (exponent + _SHIFT)
        self._sum += total
        self._squares += squares
        return True

    def _add_array(self, values: Sequence[float] | np.ndarray) -> None:
        import numpy as np

        data = np.asarray(values)
        if data.size == 0:
            return
        self.integral = self.integral and data.dtype.kind in "iub"
        data = data.astype(np.float64, copy=False).ravel()
        self.n += int(data.size)
        finite = np.isfinite(data)
        if not finite.all():
            self._nonfinite += float(np.sum(data[~finite]))
            data = data[finite]
            if data.size == 0:
                return
        low, high = float(data.min()), float(data.max())
        self._low = low if self._low is None else min(self._low, low)
        self._high = high if self._high is None else max(self._high, high)
        for start in range(0, data.size, _CHUNK):
            part = data[start : start + _CHUNK]
            self._sum += _scaled_sum(part)
            with np.errstate(over="ignore"):
                squares = part * part
            if not np.isfinite(squares).all():
                self._squares_overflow = True
                squares = squares[np.isfinite(squares)]
            self._squares += _scaled_sum(squares)

    def merge(self, other: Moments) -> None:
        """Add another stream's moments to these.

        Args:
            other: the moments of other values.
        """
        self.n += other.n
        self.integral = self.integral and other.integral
        self._sum += other._sum
        self._squares += other._squares
        self._nonfinite += other._nonfinite
        self._squares_overflow = self._squares_overflow or other._squares_overflow
        for mine, theirs, pick in (("_low", other._low, min), ("_high", other._high, max)):
            if theirs is not None:
                current = getattr(self, mine)
                setattr(self, mine, theirs if current is None else pick(current, theirs))

    @property
    def total(self) -> float | int | None:
        """The sum (an int when every value was one); None without values."""
        if self.n == 0:
            return None
        if self._nonfinite != 0.0:  # NaN included
            return self._nonfinite
        exact = Fraction(self._sum, 1 << (53 + _SHIFT))
        return int(exact) if self.integral else float(exact)

    @property
    def mean(self) -> float | None:
        """The mean, correctly rounded; None without values."""
        if self.n == 0:
            return None
        if self._nonfinite != 0.0:  # NaN included
            return self._nonfinite
        return float(Fraction(self._sum, self.n << (53 + _SHIFT)))

    @property
    def low(self) -> float | None:
        """The smallest finite value."""
        return self._low

    @property
    def high(self) -> float | None:
        """The largest finite value."""
        return self._high

    @property
    def variance(self) -> float | None:
        """The sample variance (ddof 1); None with fewer than two values."""
        if self.n < 2:
            return None
        if self._nonfinite != 0.0:  # NaN included
            return math.nan
        if self._squares_overflow:
            return math.inf
        scale = 1 << (53 + _SHIFT)
        spread = Fraction(self.n * self._squares * scale - self._sum * self._sum, scale * scale)
        return max(0.0, float(spread / (self.n * (self.n - 1))))

    def as_dict(self) -> dict[str, Any]:
        """The moments as JSON (the sums as decimal strings), for :meth:`from_dict`."""
        return {
            "n": self.n,
            "integral": self.integral,
            "sum": str(self._sum),
            "squares": str(self._squares),
            "low": self._low,
            "high": self._high,
            "nonfinite": None if self._nonfinite == 0.0 else repr(self._nonfinite),
            "squares_overflow": self._squares_overflow,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Moments:
        """Moments written by :meth:`as_dict`.

        Args:
            data: the JSON object.
        """
        nonfinite = data.get("nonfinite")
        return cls(
            n=int(data["n"]),
            integral=bool(data["integral"]),
            _sum=int(data["sum"]),
            _squares=int(data["squares"]),
            _low=data.get("low"),
            _high=data.get("high"),
            _nonfinite=0.0 if nonfinite is None else float(nonfinite),
            _squares_overflow=bool(data.get("squares_overflow", False)),
        )


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
    data = values
    if not few_values(values):
        import numpy as np

        data = np.asarray(values, dtype=float)
    moments = Moments()
    moments.add(data)
    return _interval(
        moments,
        data,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        max_bootstrap_n=max_bootstrap_n,
    )


def _interval(
    moments: Moments,
    ordered: Sequence[float] | np.ndarray | None,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
    max_bootstrap_n: int,
) -> tuple[float, float] | None:
    """The interval of the mean of the values ``moments`` counted; ``ordered`` holds them in
    their order when there are at most ``max_bootstrap_n`` (the bootstrap resamples them)."""
    if moments.n < 2:
        return None
    if moments.low is not None and moments.low == moments.high and moments.low == moments.mean:
        return moments.low, moments.low
    if moments.n > max_bootstrap_n or ordered is None:
        variance, mean = moments.variance, moments.mean
        assert variance is not None and mean is not None
        half = (
            _scipy_stats().norm.ppf(0.5 + confidence / 2)
            * math.sqrt(variance)
            / math.sqrt(moments.n)
        )
        return mean - half, mean + half
    return _bootstrap(ordered, confidence=confidence, n_resamples=n_resamples, seed=seed)


_PLAIN_RESAMPLED = 32_000
"""While numpy is not imported, a bootstrap drawing at most this many values in all (values
times resamples: 16 values at the default 2,000 resamples) runs in plain Python, which costs
less than importing numpy (the interval is the same)."""


def _bootstrap(
    ordered: Sequence[float] | np.ndarray, *, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``ordered`` (in their order), with
    numpy or, for a few plain finite numbers while numpy is not imported, without it."""
    if (
        isinstance(ordered, list | tuple)
        and 1 <= len(ordered) * n_resamples <= _PLAIN_RESAMPLED
        and "numpy" not in sys.modules
        and type(seed) is int
        and seed >= 0
        and all(type(v) in (float, int, bool) for v in ordered)
    ):
        plain = [float(v) for v in ordered]
        if all(map(math.isfinite, plain)):
            return bootstrap_percentile(
                plain, confidence=confidence, n_resamples=n_resamples, seed=seed
            )
    import numpy as np

    data = np.asarray(ordered, dtype=float)
    return _bootstrap_percentile(
        data,
        confidence=confidence,
        n_resamples=n_resamples,
        rng=np.random.default_rng(seed),
        batch=max(1, 2_000_000 // data.size),
    )


def _bootstrap_percentile(
    data: np.ndarray, *, confidence: float, n_resamples: int, rng: np.random.Generator, batch: int
) -> tuple[float, float]:
    """``scipy.stats.bootstrap((data,), np.mean, method="percentile", batch=batch, ...)``:
    the same draws in the same batches, and scipy's default quantile (Hyndman and Fan's
    type 7, in scipy's arithmetic) of the resampled means."""
    import numpy as np

    n = data.shape[-1]
    means = [
        np.mean(data[rng.integers(0, n, (min(batch, n_resamples - k), n))], axis=-1)
        for k in range(0, n_resamples, batch)
    ]
    theta = np.sort(np.concatenate(means))
    if np.isnan(theta[-1]):
        return math.nan, math.nan
    alpha = (1 - confidence) / 2
    p = np.asarray([alpha, 1 - alpha], dtype=float)
    count = float(theta.size)
    jg = p * count + (1 - p)
    j = jg // 1 - 1
    g = jg % 1
    g[j < 0] = 0
    below = np.clip(j, 0.0, count - 1).astype(np.int64)
    above = np.clip(j + 1, 0.0, count - 1).astype(np.int64)
    ci = (1 - g) * theta[below] + g * theta[above]
    return float(ci[0]), float(ci[1])


def summarize(values: Sequence[float | None], **kwargs: Any) -> Summary:
    """Mean, confidence interval and counts of values that may contain None.

    Args:
        values: observations, None for missing.
        **kwargs: passed to :func:`mean_ci`.
    """
    return summarize_stream(lambda ordered: [values], **kwargs)


ValueChunks = Callable[[bool], Iterable[Sequence[float | None]]]
"""``read(ordered)``: the values of a column chunk by chunk (None for missing), in input order
when ``ordered``, in any order otherwise."""


def summarize_stream(
    read: ValueChunks,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    max_bootstrap_n: int = 20_000,
) -> Summary:
    """:func:`summarize` of values read chunk by chunk: memory stays flat in their number.

    One pass in any order counts the values and sums them exactly (:class:`Moments`); when
    there are at most ``max_bootstrap_n``, a second pass reads them in input order for the
    bootstrap. Above, the interval is the normal one, from the moments alone.

    Args:
        read: the values (:data:`ValueChunks`); called once or twice.
        confidence: coverage of the interval.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling.
        max_bootstrap_n: above this many values, use the normal interval instead.
    """
    moments = Moments()
    missing = 0
    for chunk in read(False):
        present = [v for v in chunk if v is not None]
        missing += len(chunk) - len(present)
        moments.add(present)
    return summary_of(
        moments,
        missing,
        read,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        max_bootstrap_n=max_bootstrap_n,
    )


def summary_of(
    moments: Moments,
    n_missing: int,
    read: ValueChunks | None,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    max_bootstrap_n: int = 20_000,
) -> Summary:
    """The :class:`Summary` of values already counted.

    Args:
        moments: their moments.
        n_missing: how many were None.
        read: reads them again in input order, for the bootstrap (:data:`ValueChunks`);
            None gives the normal interval whatever their number.
        confidence: coverage of the interval.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling.
        max_bootstrap_n: above this many values, use the normal interval instead.
    """
    if moments.n == 0:
        return Summary(None, None, None, 0, n_missing)
    ordered = None
    if read is not None and 2 <= moments.n <= max_bootstrap_n:
        ordered = [v for chunk in read(True) for v in chunk if v is not None]
    ci = _interval(
        moments,
        ordered,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        max_bootstrap_n=max_bootstrap_n,
    )
    return Summary(moments.mean, ci[0] if ci else None, ci[1] if ci else None, moments.n, n_missing)


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

    The interval is scipy's percentile bootstrap of the mean of ``b − a``; the p-value is the
    two-sided sign-flip permutation test of that mean (:func:`sign_flip_p_value`, the test of
    ``scipy.stats.permutation_test`` with ``permutation_type="samples"``), exact when there
    are few pairs.

    Args:
        a: the baseline's values.
        b: the candidate's values, paired with ``a`` by position.
        confidence: coverage of the interval.
        n_resamples: resamples of the bootstrap and of the permutation test.
        seed: seed of both.
    """
    import numpy as np

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
        p = 1.0 if np.all(d == 0) else sign_flip_p_value(d, n_resamples=n_resamples, seed=seed)
    return PairedComparison(
        n=int(x.size),
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        diff=float(d.mean()),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        p_value=p,
    )


_SIGN_BATCH_CELLS = 4_000_000  # random signs drawn at once (4 MB of bits, 32 MB as floats)


def sign_flip_p_value(d: Sequence[float] | np.ndarray, *, n_resamples: int, seed: int) -> float:
    """Two-sided p-value of the mean of paired differences ``d`` under random sign flips
    (the pair's two values swapped): the null distribution and the p-value of
    ``scipy.stats.permutation_test((a, b), mean of b − a, permutation_type="samples")``,
    computed as one product of a sign matrix with ``d`` per batch, so that 12,000 pairs take a
    fraction of a second instead of scipy's minutes.

    With ``2**n <= n_resamples`` every sign pattern is enumerated and the p-value is exact;
    otherwise ``n_resamples`` random patterns (seeded) and the ``+1`` correction of a random
    test. Values of the null distribution within ``100·eps·|observed|`` of the observed mean
    count as equal to it, as in scipy; the p-value is ``min(1, 2·min(P(≤), P(≥)))``.

    Args:
        d: the differences ``b − a``.
        n_resamples: random sign patterns when the test is not exact.
        seed: seed of the patterns.
    """
    import numpy as np

    diffs = np.asarray(d, dtype=float)
    n = diffs.size
    observed = float(diffs.mean())
    if n < 63 and 2**n <= n_resamples:
        patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        null = ((1 - 2 * patterns) @ diffs) / n
        total, adjustment = 2**n, 0
    else:
        # a flipped pair's sign is a random bit b: sum(s·d) = sum(d) − 2·sum(b·d), eight bits
        # to a random byte
        rng = np.random.default_rng(seed)
        null = np.empty(n_resamples)
        batch, width, whole = max(1, _SIGN_BATCH_CELLS // n), (n + 7) // 8, diffs.sum()
        for start in range(0, n_resamples, batch):
            size = min(batch, n_resamples - start)
            drawn = np.frombuffer(rng.bytes(size * width), dtype=np.uint8).reshape(size, width)
            flipped = np.unpackbits(drawn, axis=1, count=n)
            null[start : start + size] = (whole - 2.0 * (flipped @ diffs)) / n
        total, adjustment = n_resamples, 1
    gamma = abs(np.finfo(float).eps * 100 * observed)
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / (total + adjustment)
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / (total + adjustment)
    return float(min(1.0, 2 * min(less, greater)))


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


def pass_k_over_tasks(
    trials: Mapping[str, Sequence[bool]], ks: Sequence[int]
) -> dict[int, dict[str, float | int | None]]:
    """pass@k and pass^k averaged over the tasks with at least k trials, for each k.

    Args:
        trials: each task's trials, True for a trial that succeeded.
        ks: the k values (each at least 1).

    Returns:
        k -> ``{"tasks", "pass_at_k", "pass_hat_k"}``; the means are None when no task has
        k trials.
    """
    return pass_k_over_counts({task: (len(v), sum(v)) for task, v in trials.items()}, ks)


def pass_k_over_counts(
    counts: Mapping[str, tuple[int, int]], ks: Sequence[int]
) -> dict[int, dict[str, float | int | None]]:
    """:func:`pass_k_over_tasks` from each task's counts: two numbers whatever its trials.

    Args:
        counts: each task's (trials, successes).
        ks: the k values (each at least 1).
    """
    table: dict[int, dict[str, float | int | None]] = {}
    for k in ks:
        eligible = [(n, c) for n, c in counts.values() if n >= k]
        if not eligible:
            table[k] = {"tasks": 0, "pass_at_k": None, "pass_hat_k": None}
            continue
        at = [pass_at_k(n, c, k) for n, c in eligible]
        hat = [pass_hat_k(n, c, k) for n, c in eligible]
        table[k] = {
            "tasks": len(eligible),
            "pass_at_k": sum(at) / len(at),
            "pass_hat_k": sum(hat) / len(hat),
        }
    return table


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must be between 0 and n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and the number of trials n={n}")


ScoredItem = tuple[Mapping[str, float], Sequence[Mapping[str, float]]]
"""One rater's scores of an item (by aspect or metric) and the scores of the raters it is
compared with."""

_MIN_SPEARMAN_N = 3


def against_others(items: Iterable[ScoredItem], key: str) -> tuple[list[float], list[float]]:
    """Each item's score on ``key`` beside the mean of the compared raters' scores on it.

    Args:
        items: the scored items; an item counts when it and at least one compared rater
            give ``key``.
        key: the aspect or metric.

    Returns:
        ``(scores, reference means)``, paired by position.
    """
    import numpy as np

    predicted: list[float] = []
    target: list[float] = []
    for scores, others in items:
        if key not in scores:
            continue
        other_values = [o[key] for o in others if key in o]
        if not other_values:
            continue
        predicted.append(float(scores[key]))
        target.append(float(np.mean(other_values)))
    return predicted, target


def leave_one_out(groups: Iterable[Sequence[Mapping[str, float]]]) -> Iterator[ScoredItem]:
    """Each rater of each item against the other raters of that item.

    Args:
        groups: per item, the scores of its raters; items with fewer than two raters yield
            nothing.
    """
    for raters in groups:
        if len(raters) < 2:
            continue
        for i, scores in enumerate(raters):
            yield scores, [*raters[:i], *raters[i + 1 :]]


def paired_bootstrap_ci(
    statistic: Callable[[np.ndarray, np.ndarray], float],
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``statistic(x, y)`` over the pairs, resampled together.

    Resamples where the statistic is undefined (NaN: a constant side for a correlation) are
    dropped.

    Args:
        statistic: a function of the two paired arrays.
        x: the first values.
        y: the values paired with them.
        confidence: coverage of the interval.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling.

    Returns:
        ``(low, high)``; None with fewer than two pairs or when fewer than half the resamples
        define the statistic.
    """
    import numpy as np

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size < 2:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for idx in rng.integers(0, a.size, size=(n_resamples, a.size)):
        value = statistic(a[idx], b[idx])
        if math.isfinite(value):
            values.append(value)
    if len(values) < n_resamples / 2:
        return None
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Agreement:
    """How well one rater's scores agree with a reference's.

    Args:
        n: pairs compared.
        mae: mean absolute error; None without pairs.
        spearman: Spearman's rho; None with fewer than three pairs or a constant side.
        spearman_p: its two-sided p-value.
        kappa: Cohen's quadratic-weighted kappa on the scale's points; None without a scale or
            when it is undefined (both sides constant).
        mae_ci: the bootstrap interval of the MAE (when asked for).
        spearman_ci: the bootstrap interval of rho.
        kappa_ci: the bootstrap interval of kappa.
    """

    n: int
    mae: float | None = None
    spearman: float | None = None
    spearman_p: float | None = None
    kappa: float | None = None
    mae_ci: tuple[float, float] | None = None
    spearman_ci: tuple[float, float] | None = None
    kappa_ci: tuple[float, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    import numpy as np

    if x.size < _MIN_SPEARMAN_N or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    return float(_scipy_stats().spearmanr(x, y).statistic)


def _on_scale(values: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Each value at the nearest point of the scale (halves go up)."""
    import numpy as np

    nearest = np.floor(values + 0.5)
    return np.clip(nearest, points.min(), points.max()).astype(int)


def _kappa(points: np.ndarray) -> Callable[[np.ndarray, np.ndarray], float]:
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    def kappa(x: np.ndarray, y: np.ndarray) -> float:
        a, b = _on_scale(x, points), _on_scale(y, points)
        if np.all(a == a[0]) and np.all(b == b[0]):
            return math.nan
        return float(cohen_kappa_score(a, b, labels=points, weights="quadratic"))

    return kappa


def agreement(
    predicted: Sequence[float],
    target: Sequence[float],
    *,
    scale: Sequence[int] | None = None,
    confidence: float | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Agreement:
    """MAE, Spearman and (on an ordinal scale) quadratic-weighted kappa of ``predicted``
    against ``target``, with bootstrap intervals when ``confidence`` is given.

    Args:
        predicted: the rater's scores.
        target: the reference scores (e.g. the mean of the other raters), paired by position.
        scale: the integer points of an ordinal scale (1..5): kappa is computed with both
            sides rounded to the nearest point; None leaves kappa out.
        confidence: coverage of the intervals; None computes none.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling.
    """
    import numpy as np

    x, y = np.asarray(predicted, dtype=float), np.asarray(target, dtype=float)
    n = int(x.size)
    if n == 0:
        return Agreement(n=0)

    def mae(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.mean(np.abs(a - b)))

    rho = _spearman(x, y)
    p = float(_scipy_stats().spearmanr(x, y).pvalue) if math.isfinite(rho) else math.nan
    kappa_of = _kappa(np.asarray(sorted(set(scale)))) if scale else None
    kappa = kappa_of(x, y) if kappa_of is not None else math.nan

    def ci(statistic: Callable[[np.ndarray, np.ndarray], float]) -> tuple[float, float] | None:
        if confidence is None:
            return None
        return paired_bootstrap_ci(
            statistic, x, y, confidence=confidence, n_resamples=n_resamples, seed=seed
        )

    def defined(value: float) -> float | None:
        return value if math.isfinite(value) else None

    return Agreement(
        n=n,
        mae=mae(x, y),
        spearman=defined(rho),
        spearman_p=defined(p),
        kappa=defined(kappa),
        mae_ci=ci(mae),
        spearman_ci=ci(_spearman) if defined(rho) is not None else None,
        kappa_ci=ci(kappa_of) if kappa_of is not None and defined(kappa) is not None else None,
    )


@dataclass(frozen=True)
class BradleyTerry:
    """Bradley–Terry strengths of several items from pairwise outcomes.

    Args:
        strengths: each item's log-strength, centred on 0 (item i beats item j with
            probability ``1 / (1 + exp(sⱼ − sᵢ))``).
        ci_low: the low ends of their 95% bootstrap intervals.
        ci_high: the high ends.
        n: the outcomes used.
    """

    strengths: list[float]
    ci_low: list[float]
    ci_high: list[float]
    n: int


_BT_PENALTY = 0.01


def _bt_counts(n_items: int, i: np.ndarray, j: np.ndarray, score: np.ndarray) -> np.ndarray:
    """wins[a, b]: how often a beat b, a win counted twice and a tie once each way (so that a
    tie is half a win for each side)."""
    import numpy as np

    wins = np.zeros((n_items, n_items))
    np.add.at(wins, (i, j), 2 * score)
    np.add.at(wins, (j, i), 2 * (1 - score))
    return wins


def _bt_fit(wins: np.ndarray) -> np.ndarray:
    """The penalised maximum-likelihood strengths: minimise ``α·Σ sᵢ² + Σ wᵢⱼ·log(1 +
    exp(−(sᵢ − sⱼ)))`` (choix's ``opt_pairwise`` objective, weighted by the counts)."""
    import numpy as np
    from scipy.optimize import minimize

    n = wins.shape[0]

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        diff = params[:, None] - params[None, :]
        value = _BT_PENALTY * float(params @ params) + float(
            (wins * np.logaddexp(0.0, -diff)).sum()
        )
        lose = wins / (1.0 + np.exp(diff))  # wᵢⱼ·P(j beats i)
        grad = 2 * _BT_PENALTY * params - lose.sum(axis=1) + lose.sum(axis=0)
        return value, grad

    result = minimize(objective, np.zeros(n), jac=True, method="BFGS", tol=1e-9)
    params = np.asarray(result.x, dtype=float)
    return params - float(params.mean())


def bradley_terry(
    n_items: int,
    outcomes: Sequence[tuple[int, int, float]],
    *,
    n_resamples: int = 200,
    seed: int = 0,
) -> BradleyTerry:
    """Bradley–Terry strengths and their 95% percentile bootstrap intervals (the outcomes
    resampled with replacement).

    The fit is the penalised maximum likelihood of choix's ``opt_pairwise`` (a small L2
    penalty, 0.01, keeps the strengths finite when an item wins every comparison), computed
    on the win counts with scipy (the tests check it against choix itself).

    Args:
        n_items: how many items.
        outcomes: ``(i, j, score)`` with score 1.0 when i won, 0.0 when j won, 0.5 a tie.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling.

    Raises:
        ValueError: fewer than two items, no outcome, or an index out of range.
    """
    import numpy as np

    if n_items < 2 or not outcomes:
        raise ValueError("Bradley-Terry needs two items and at least one outcome")
    if any(not (0 <= i < n_items and 0 <= j < n_items and i != j) for i, j, _ in outcomes):
        raise ValueError("an outcome names an item out of range, or an item against itself")
    i, j, score = (np.asarray(column) for column in zip(*outcomes, strict=True))
    score = np.clip(score.astype(float), 0.0, 1.0)
    strengths = _bt_fit(_bt_counts(n_items, i, j, score))
    rng = np.random.default_rng(seed)
    fits = np.array(
        [
            _bt_fit(_bt_counts(n_items, i[idx], j[idx], score[idx]))
            for idx in rng.integers(0, len(outcomes), size=(n_resamples, len(outcomes)))
        ]
    )
    low, high = np.percentile(fits, [2.5, 97.5], axis=0)
    return BradleyTerry(
        strengths=[float(x) for x in strengths],
        ci_low=[float(x) for x in low],
        ci_high=[float(x) for x in high],
        n=len(outcomes),
    )
