"""A run's summary streamed from its samples: exact sums whatever the order and the chunking,
the figures of the lists they replace, memory flat in the number of samples, and the summary
kept with a finished run."""

from __future__ import annotations

import random
import tracemalloc
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from agentgauge.results import summary_stats
from agentgauge.stats import Moments, summarize
from agentgauge.store import _VALUE_COLUMNS, MetricRow, SampleRow, Store


def test_moments_are_exact_whatever_the_order_and_the_chunks() -> None:
    rng = random.Random(7)
    values = [rng.uniform(-1, 1) * 10.0 ** rng.randint(-20, 20) for _ in range(20_000)]
    values += [0.0, 5e-324, -5e-324, 1e-310, 0.1, 0.2, 0.3]
    whole = Moments()
    whole.add(values)
    exact = sum(Fraction(v) for v in values)
    assert whole.total == float(exact)  # correctly rounded, unlike a float sum
    assert whole.mean == float(exact / len(values))
    assert sum(values) != float(exact) or np.sum(values) != float(exact)
    shuffled, parts = values[:], []
    rng.shuffle(shuffled)
    for start in range(0, len(shuffled), 997):
        part = Moments()
        part.add(shuffled[start : start + 997])
        parts.append(part)
    merged = Moments()
    for part in reversed(parts):
        merged.merge(Moments.from_dict(part.as_dict()))
    assert (merged.n, merged.total, merged.mean, merged.variance) == (
        whole.n,
        whole.total,
        whole.mean,
        whole.variance,
    )
    squares = sum(Fraction(v * v) for v in values)
    n = len(values)
    assert whole.variance == pytest.approx(float((squares - exact * exact / n) / (n - 1)))


def test_moments_keep_integers_and_extremes() -> None:
    tokens = Moments()
    tokens.add([120, 80])
    tokens.add(np.array([1_000_000], dtype=np.int64))
    assert tokens.total == 1_000_200 and isinstance(tokens.total, int)
    assert (tokens.low, tokens.high, tokens.n) == (80.0, 1_000_000.0, 3)
    empty = Moments()
    assert (empty.total, empty.mean, empty.variance) == (None, None, None)
    huge = Moments()
    huge.add([1e200, -1e200, 2.0])
    assert huge.total == 2.0 and huge.variance == float("inf")


def test_summarize_is_scipy_below_the_bootstrap_limit_and_normal_above() -> None:
    rng = np.random.default_rng(3)
    small = list(rng.uniform(size=300))
    s = summarize([None, *small])
    assert s.mean == float(sum(Fraction(v) for v in small) / 300)
    assert (s.n, s.n_missing) == (300, 1)
    big = rng.uniform(size=30_000)
    b = summarize(list(big))
    half = 1.959963984540054 * big.std(ddof=1) / np.sqrt(big.size)
    assert (b.ci_low, b.ci_high) == pytest.approx((big.mean() - half, big.mean() + half))


def _sample(seq: int, rng: random.Random) -> SampleRow:
    a = None if seq % 11 == 0 else rng.random()
    b = rng.random()
    composite = None if a is None else (a + b) / 2
    usage = {
        "input_tokens": rng.randint(10, 5000),
        "output_tokens": rng.randint(1, 900),
        "total_tokens": None,
        "cost_usd": None if seq % 7 == 0 else rng.random() / 100,
        "model_calls": 3,
    }
    if seq % 5 == 0:
        usage["judge"] = {"calls": 1, "cached": 0, "input_tokens": 40, "cost_usd": 0.001}
    return SampleRow(
        key=f"f.jsonl#{seq + 1}",
        seq=seq,
        source="f.jsonl",
        line=seq + 1,
        trace_id=f"t{seq}",
        task_id=f"task{seq % 50}",
        composite=composite,
        coverage=1.0 if a is not None else 0.5,
        recommendation=None,
        band=None,
        error="a: boom" if seq % 13 == 0 else None,
        details={},
        metrics=(MetricRow("a", a, None, None), MetricRow("b", b, None, None)),
        usage=usage,
    )


def _filled(path: Path, n: int) -> tuple[Store, str, list[SampleRow]]:
    rng = random.Random(n)
    store = Store(path)
    run_id = store.create_run(kind="evaluate", suite="s", config={"suite": {"metrics": ["a", "b"]}})
    rows = [_sample(seq, rng) for seq in range(n)]
    for start in range(0, n, 5000):
        store.write_batch(run_id, rows[start : start + 5000])
    return store, run_id, rows


def test_the_streamed_summary_has_the_figures_of_the_samples(tmp_path: Path) -> None:
    store, run_id, rows = _filled(tmp_path / "s.db", 1500)
    stats = summary_stats(store, run_id)
    for name in ("a", "b"):
        assert stats.metrics[name] == summarize([r.values[name] for r in rows])
    assert stats.composite == summarize([r.composite for r in rows])
    assert (
        stats.bins["a"]
        == np.histogram(
            [r.values["a"] for r in rows if r.values["a"] is not None], 20, range=(0, 1)
        )[0].tolist()
    )
    assert stats.n_failed == sum(r.error is not None for r in rows) == 116
    assert stats.mean_coverage == float(sum(Fraction(r.coverage) for r in rows) / 1500)
    assert stats.lowest_coverage == 0.5
    usage = stats.agent_usage
    inputs = [r.usage["input_tokens"] for r in rows if r.usage]
    assert usage["input_tokens"]["total"] == sum(inputs)
    assert usage["input_tokens"]["mean"] == summarize(inputs).mean
    costs = [r.usage["cost_usd"] for r in rows if r.usage]
    assert usage["cost_usd"]["n_missing"] == sum(c is None for c in costs) == 215
    assert usage["total_tokens"]["n"] == 0
    paired = [(r.composite, r.usage["cost_usd"]) for r in rows if r.usage]
    paired = [(c, u) for c, u in paired if c is not None and u is not None]
    assert stats.composite_per_usd == pytest.approx(
        sum(c for c, _ in paired) / sum(u for _, u in paired), rel=1e-12
    )
    assert stats.judge == {
        "calls": 300,
        "cached": 0,
        "requests": 0,
        "input_tokens": 12_000,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "total_tokens": 0,
        "cost_unknown": 0,
        "cost_usd": pytest.approx(0.3),
    }
    store.close()


def test_a_finished_run_keeps_its_summary_and_new_samples_forget_it(tmp_path: Path) -> None:
    store, run_id, rows = _filled(tmp_path / "k.db", 200)
    assert summary_stats(store, run_id).n_samples == 200  # running: computed, not kept
    assert store.get_run(run_id).summary is None
    store.finish_run(run_id)
    first = summary_stats(store, run_id)
    assert store.get_run(run_id).summary == {"stats": first.as_dict()}
    # what is kept is what is read next time: the samples are not read again
    store.connection.execute("DELETE FROM sample_metrics")
    assert summary_stats(store, run_id) == first
    store.write_batch(run_id, rows[:1])
    assert store.get_run(run_id).summary is None
    store.close()


_VALUES = ", ".join(f"v{i}" for i in range(_VALUE_COLUMNS))


def _copied(store: Store, run_id: str, times: int) -> str:
    """A run holding ``times`` copies of a run's samples (made in SQL: fast)."""
    copy = store.create_run(kind="evaluate", suite="s", config={"suite": {"metrics": ["a", "b"]}})
    n = store.connection.execute(
        "SELECT COUNT(*) FROM samples WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    for k in range(times):
        store.connection.execute(
            "INSERT INTO samples (run_id, key, seq, source, line, trace_id, task_id, composite, "
            "coverage, recommendation, band, error, details, trace, usage, category, error_type) "
            "SELECT ?, key || ?, seq + ?, source, line, trace_id, task_id, composite, coverage, "
            "recommendation, band, error, details, trace, usage, category, error_type "
            "FROM samples WHERE run_id = ?",
            (copy, f"/{k}", k * n, run_id),
        )
        store.connection.execute(
            f"INSERT INTO sample_metrics SELECT ?, part, sample_key || ?, present, {_VALUES}, "
            "notes FROM sample_metrics WHERE run_id = ?",
            (copy, f"/{k}", run_id),
        )
    store.connection.execute(
        "INSERT INTO run_metrics SELECT ?, metric, position FROM run_metrics WHERE run_id = ?",
        (copy, run_id),
    )
    return copy


def _summary_peak(store: Store, run_id: str) -> tuple[int, int]:
    """The peak of Python's allocations while a run is summarised, and its samples' number."""
    tracemalloc.start()
    try:
        n = summary_stats(store, run_id).n_samples
        return tracemalloc.get_traced_memory()[1], n
    finally:
        tracemalloc.stop()


def test_the_summary_memory_does_not_grow_with_the_samples(tmp_path: Path) -> None:
    # above the bootstrap's limit (20,000 values): the columns are only streamed
    store, run_id, _ = _filled(tmp_path / "m.db", 21_000)
    larger = _copied(store, run_id, 3)
    (small, n_small), (large, n_large) = _summary_peak(store, run_id), _summary_peak(store, larger)
    assert (n_small, n_large) == (21_000, 63_000)
    assert large < small * 1.2 + 256 * 1024, (small, large)
    # the lists it replaces held each sample's usage: tens of megabytes at this size
    assert large < 10 * 1024 * 1024
    store.close()
