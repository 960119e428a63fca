"""A run's summary, computed by streaming its samples: per-metric and composite means with
their intervals and distributions, coverage, failures, and the agent's and judges' usage.

Memory stays flat in the number of samples: each column is read chunk by chunk and folded into
exact running sums (:class:`~agentgauge.stats.Moments`); only a run of at most
``max_bootstrap_n`` values is read again, in input order, for its bootstrap interval. The sums
being exact, a run gives the same figures from the SQLite store and from a Parquet results
dataset, whatever the order its shards are read in.

A finished run's summary is kept with the run in the store (:meth:`Store.save_summary`), so
that listing and showing it again reads no sample.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from sqlite3 import Error as SQLiteError
from typing import Any

from agentgauge.stats import Moments, Summary, ValueChunks, few_values, summary_of
from agentgauge.store import RunInfo, SampleSource, Store

__all__ = [
    "BINS",
    "JUDGE_COUNTS",
    "SUMMARY_VERSION",
    "USAGE_FIELDS",
    "RunStats",
    "StatsBuilder",
    "compute_stats",
    "judge_totals",
    "run_stats",
]

BINS = 20
"""Bins of a distribution over [0, 1]."""

USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "total_tokens",
    "cost_usd",
    "model_calls",
)
"""The agent's usage figures of a sample, as :func:`agentgauge.usage.trace_usage` counts them."""

JUDGE_COUNTS = (
    "calls",
    "cached",
    "requests",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "total_tokens",
    "cost_unknown",
)
"""The judges' counts a run adds up (their ``cost_usd`` besides)."""

SUMMARY_VERSION = 1
"""The shape of a kept summary; one of another version is computed again."""


@dataclass(frozen=True)
class RunStats:
    """What a run's summary views show, computed once from its samples.

    Args:
        n_samples: scored samples.
        n_failed: samples with a metric error.
        metrics: metric -> mean, interval and counts, in the order of the run's suite.
        composite: the composites' mean, interval and counts.
        bins: metric (and ``composite``) -> counts of the values in :data:`BINS` equal bins
            over [0, 1].
        mean_coverage: the samples' mean coverage (None without samples).
        lowest_coverage: their lowest coverage.
        agent_usage: usage field -> its total, mean, interval and counts over the samples.
        judge: the judges' totals over the samples (None when no judge was called).
        composite_per_usd: Σ composite / Σ cost over the samples with both.
        composite_per_1k_tokens: Σ composite / (Σ total tokens / 1000), likewise.
    """

    n_samples: int
    n_failed: int
    metrics: dict[str, Summary]
    composite: Summary
    bins: dict[str, list[int]]
    mean_coverage: float | None
    lowest_coverage: float | None
    agent_usage: dict[str, dict[str, Any]]
    judge: dict[str, Any] | None
    composite_per_usd: float | None
    composite_per_1k_tokens: float | None

    def aggregate(self) -> dict[str, Summary]:
        """Per-metric summaries and ``composite`` last (:func:`run_aggregate`'s shape)."""
        return {**self.metrics, "composite": self.composite}

    def as_dict(self) -> dict[str, Any]:
        """The statistics as JSON, for :meth:`from_dict`."""
        return {
            "version": SUMMARY_VERSION,
            "n_samples": self.n_samples,
            "n_failed": self.n_failed,
            "metrics": {name: s.as_dict() for name, s in self.metrics.items()},
            "composite": self.composite.as_dict(),
            "bins": self.bins,
            "mean_coverage": self.mean_coverage,
            "lowest_coverage": self.lowest_coverage,
            "agent_usage": self.agent_usage,
            "judge": self.judge,
            "composite_per_usd": self.composite_per_usd,
            "composite_per_1k_tokens": self.composite_per_1k_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunStats | None:
        """Statistics kept by :meth:`as_dict`; None when they are of another version.

        Args:
            data: the JSON object.
        """
        if data.get("version") != SUMMARY_VERSION:
            return None
        return cls(
            n_samples=data["n_samples"],
            n_failed=data["n_failed"],
            metrics={name: Summary(**s) for name, s in data["metrics"].items()},
            composite=Summary(**data["composite"]),
            bins=data["bins"],
            mean_coverage=data["mean_coverage"],
            lowest_coverage=data["lowest_coverage"],
            agent_usage=data["agent_usage"],
            judge=data["judge"],
            composite_per_usd=data["composite_per_usd"],
            composite_per_1k_tokens=data["composite_per_1k_tokens"],
        )


def run_stats(store: Store, run: RunInfo, source: SampleSource) -> RunStats:
    """A run's statistics: the ones kept with a finished run, else computed from its samples
    (and kept, when the run is finished).

    Args:
        store: the store that registers the run.
        run: the run.
        source: where its samples are (:func:`agentgauge.results.samples_of`).
    """
    kept = (run.summary or {}).get("stats")
    if kept is not None and run.status != "running":
        stats = RunStats.from_dict(kept)
        if stats is not None:
            return stats
    parts = getattr(source, "merged_stats", None)
    stats = compute_stats(source, run.id, parts() if callable(parts) else None)
    if run.status != "running":
        # a cache: a store that cannot be written (read-only, busy) computes it again next time
        with suppress(SQLiteError, OSError):
            store.save_summary(run.id, {**(run.summary or {}), "stats": stats.as_dict()})
    return stats


@dataclass
class _Column:
    """One column's running statistics."""

    moments: Moments = field(default_factory=Moments)
    missing: int = 0
    bins: list[int] | None = None

    def add(self, values: Sequence[Any], binned: bool = False) -> None:
        present = [v for v in values if v is not None]
        self.missing += len(values) - len(present)
        self.moments.add(present)
        if binned:
            counts = _histogram(present)
            self.bins = [c + (self.bins[i] if self.bins else 0) for i, c in enumerate(counts)]

    def merge(self, other: _Column) -> None:
        self.moments.merge(other.moments)
        self.missing += other.missing
        if other.bins is not None:
            mine = self.bins or [0] * BINS
            self.bins = [a + b for a, b in zip(mine, other.bins, strict=True)]

    def summary(self, read: ValueChunks) -> Summary:
        return summary_of(self.moments, self.missing, read)

    def bin_counts(self) -> list[int]:
        return [0] * BINS if self.bins is None else list(self.bins)

    def as_dict(self) -> dict[str, Any]:
        return {"moments": self.moments.as_dict(), "missing": self.missing, "bins": self.bins}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> _Column:
        return cls(Moments.from_dict(data["moments"]), int(data["missing"]), data.get("bins"))


_EDGES = [i * (1.0 / BINS) for i in range(BINS)] + [1.0]  # numpy.linspace(0, 1, BINS + 1)


def _histogram(values: Sequence[Any]) -> list[int]:
    """``numpy.histogram(values, BINS, range=(0.0, 1.0))``'s counts: values outside [0, 1]
    (and NaN) are not counted, the last bin holds 1.0. A few plain numbers are counted in
    plain Python, as numpy places them (the same index, then one bin down or up when the
    value falls on the other side of an edge)."""
    if not few_values(values) or any(type(v) not in (float, int, bool) for v in values):
        import numpy as np

        binned, _ = np.histogram(np.asarray(values, dtype=float), BINS, range=(0.0, 1.0))
        return [int(c) for c in binned]
    counts = [0] * BINS
    for value in values:
        x = float(value)
        if not 0.0 <= x <= 1.0:
            continue
        i = min(int(x * BINS), BINS - 1)
        if x < _EDGES[i]:
            i -= 1
        elif x >= _EDGES[i + 1] and i != BINS - 1:
            i += 1
        counts[i] += 1
    return counts


_ROW_COLUMNS = ["composite", "coverage", "failed", *(f"usage.{f}" for f in USAGE_FIELDS)]
_ROW_COLUMNS.append("usage.judge")


class StatsBuilder:
    """A run's statistics as its samples go by: exact and mergeable, so that the shards of a
    distributed run are summarised where they are written (:meth:`as_dict` in each shard's
    footer) and merged by the driver in the time of reading the footers.

    Feed it each metric's values (:meth:`add_metric`) and the other columns' rows
    (:meth:`add_rows`), in any order and chunking; :meth:`finish` makes the statistics.
    """

    def __init__(self) -> None:
        self.metrics: dict[str, _Column] = {}
        self.composite, self.coverage = _Column(), _Column()
        self.usage = {name: _Column() for name in USAGE_FIELDS}
        self.judge = _JudgeTotals()
        self.per = {name: (Moments(), Moments()) for name in ("cost_usd", "total_tokens")}
        self.n_failed = 0

    ROW_COLUMNS = tuple(_ROW_COLUMNS)
    """The columns :meth:`add_rows` takes, in order (:meth:`Store.iter_columns`'s names)."""

    def add_metric(self, name: str, values: Sequence[float | None]) -> None:
        """Add values of one metric (None where it has none).

        Args:
            name: the metric.
            values: its values over some samples.
        """
        self.metrics.setdefault(name, _Column()).add(values, binned=True)

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        """Add samples' rows of :attr:`ROW_COLUMNS`.

        Args:
            rows: the rows.
        """
        if not rows:
            return
        columns = list(zip(*rows, strict=True))
        composites = columns[0]
        self.composite.add(composites, binned=True)
        self.coverage.add(columns[1])
        self.n_failed += sum(1 for failed in columns[2] if failed)
        for k, name in enumerate(USAGE_FIELDS):
            self.usage[name].add(columns[3 + k])
        self.judge.add(columns[3 + len(USAGE_FIELDS)])
        for name, (scores, spent) in self.per.items():
            used = columns[3 + USAGE_FIELDS.index(name)]
            known = [(c, u) for c, u in zip(composites, used, strict=True) if None not in (c, u)]
            scores.add([c for c, _ in known])
            spent.add([u for _, u in known])

    def merge(self, other: StatsBuilder) -> None:
        """Add another part's statistics (another shard of the run).

        Args:
            other: its statistics.
        """
        for name, column in other.metrics.items():
            self.metrics.setdefault(name, _Column()).merge(column)
        self.composite.merge(other.composite)
        self.coverage.merge(other.coverage)
        for name, column in other.usage.items():
            self.usage[name].merge(column)
        self.judge.merge_totals(other.judge)
        for name, (scores, spent) in other.per.items():
            self.per[name][0].merge(scores)
            self.per[name][1].merge(spent)
        self.n_failed += other.n_failed

    def as_dict(self) -> dict[str, Any]:
        """The running statistics as JSON (:meth:`from_dict`)."""
        return {
            "version": SUMMARY_VERSION,
            "metrics": {name: c.as_dict() for name, c in self.metrics.items()},
            "composite": self.composite.as_dict(),
            "coverage": self.coverage.as_dict(),
            "usage": {name: c.as_dict() for name, c in self.usage.items()},
            "judge": self.judge.as_dict(),
            "per": {k: [a.as_dict(), b.as_dict()] for k, (a, b) in self.per.items()},
            "n_failed": self.n_failed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatsBuilder | None:
        """Running statistics written by :meth:`as_dict`; None when of another version.

        Args:
            data: the JSON object.
        """
        if data.get("version") != SUMMARY_VERSION:
            return None
        built = cls()
        built.metrics = {n: _Column.from_dict(c) for n, c in data["metrics"].items()}
        built.composite = _Column.from_dict(data["composite"])
        built.coverage = _Column.from_dict(data["coverage"])
        built.usage = {n: _Column.from_dict(c) for n, c in data["usage"].items()}
        built.judge = _JudgeTotals.from_dict(data["judge"])
        built.per = {
            k: (Moments.from_dict(a), Moments.from_dict(b)) for k, (a, b) in data["per"].items()
        }
        built.n_failed = int(data["n_failed"])
        return built

    def finish(self, source: SampleSource, run_id: str) -> RunStats:
        """The run's statistics; a column of at most 20,000 values is read again from the
        source, in input order, for its bootstrap interval.

        Args:
            source: where the run's samples are.
            run_id: the run's full id.
        """
        return RunStats(
            n_samples=self.coverage.moments.n + self.coverage.missing,
            n_failed=self.n_failed,
            metrics={
                name: column.summary(_metric_reader(source, run_id, name))
                for name, column in self.metrics.items()
            },
            composite=self.composite.summary(_column_reader(source, run_id, "composite")),
            bins={
                **{name: c.bin_counts() for name, c in self.metrics.items()},
                "composite": self.composite.bin_counts(),
            },
            mean_coverage=self.coverage.moments.mean,
            lowest_coverage=self.coverage.moments.low,
            agent_usage={
                name: {
                    "total": column.moments.total,
                    **column.summary(_column_reader(source, run_id, f"usage.{name}")).as_dict(),
                }
                for name, column in self.usage.items()
            },
            judge=self.judge.totals(),
            composite_per_usd=_ratio(*self.per["cost_usd"], 1.0),
            composite_per_1k_tokens=_ratio(*self.per["total_tokens"], 1000.0),
        )


def compute_stats(source: SampleSource, run_id: str, parts: StatsBuilder | None = None) -> RunStats:
    """A run's statistics: from its parts' running statistics when at hand (a distributed
    run's shards keep theirs), else by streaming its samples (one pass per metric, one over
    the rest).

    Args:
        source: where the run's samples are.
        run_id: the run's full id.
        parts: the merged running statistics of the run's parts, if known.
    """
    if parts is None:
        parts = StatsBuilder()
        for name in source.metric_names(run_id):
            for chunk in source.iter_metric(run_id, name):
                parts.add_metric(name, chunk)
        for rows in source.iter_columns(run_id, StatsBuilder.ROW_COLUMNS):
            parts.add_rows(rows)
    return parts.finish(source, run_id)


def _ratio(scores: Moments, spent: Moments, scale: float) -> float | None:
    """Σ scores / (Σ spent / scale); None when nothing was spent."""
    total, cost = scores.total, spent.total
    if total is None or cost is None or cost <= 0:
        return None
    return float(total) / (float(cost) / scale)


def _metric_reader(source: SampleSource, run_id: str, metric: str) -> ValueChunks:
    def read(ordered: bool) -> Iterator[list[float | None]]:
        return source.iter_metric(run_id, metric, ordered=ordered)

    return read


def _column_reader(source: SampleSource, run_id: str, column: str) -> ValueChunks:
    def read(ordered: bool) -> Iterator[list[Any]]:
        for rows in source.iter_columns(run_id, [column], ordered=ordered):
            yield [r[0] for r in rows]

    return read


class _JudgeTotals:
    """The judges' spending over the samples, added up as it streams by."""

    def __init__(self) -> None:
        self.parts = 0
        self.counts = dict.fromkeys(JUDGE_COUNTS, 0)
        self.cost = Moments()

    def add(self, spends: Iterable[str | Mapping[str, Any] | None]) -> None:
        parts = [json.loads(s) if isinstance(s, str) else s for s in spends if s]
        self.merge([p for p in parts if p])

    def merge(self, parts: Sequence[Mapping[str, Any]]) -> None:
        self.parts += len(parts)
        for key in JUDGE_COUNTS:
            self.counts[key] += sum(part.get(key) or 0 for part in parts)
        self.cost.add([float(part.get("cost_usd") or 0.0) for part in parts])

    def merge_totals(self, other: _JudgeTotals) -> None:
        self.parts += other.parts
        for key in JUDGE_COUNTS:
            self.counts[key] += other.counts[key]
        self.cost.merge(other.cost)

    def totals(self) -> dict[str, Any] | None:
        if not self.parts:
            return None
        return {**self.counts, "cost_usd": self.cost.total}

    def as_dict(self) -> dict[str, Any]:
        return {"parts": self.parts, "counts": self.counts, "cost": self.cost.as_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> _JudgeTotals:
        totals = cls()
        totals.parts = int(data["parts"])
        totals.counts = {key: data["counts"].get(key, 0) for key in JUDGE_COUNTS}
        totals.cost = Moments.from_dict(data["cost"])
        return totals


def judge_totals(
    totals: Mapping[str, Any] | None, parts: Iterable[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The judges' totals of a run's samples with more spending added (a rubric's once-per-run
    evaluation steps).

    Args:
        totals: the samples' totals (:attr:`RunStats.judge`), None when there are none.
        parts: more spending, in :func:`~agentgauge.judges.cost.judge_spend`'s shape.
    """
    adding = _JudgeTotals()
    if totals is not None:
        adding.parts = 1
        adding.counts = {key: totals.get(key) or 0 for key in JUDGE_COUNTS}
        adding.cost.add([float(totals.get("cost_usd") or 0.0)])
    adding.merge(list(parts))
    return adding.totals()
