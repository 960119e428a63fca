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

import numpy as np

from agentgauge.stats import Moments, Summary, ValueChunks, summary_of
from agentgauge.store import RunInfo, SampleSource, Store

__all__ = [
    "BINS",
    "JUDGE_COUNTS",
    "SUMMARY_VERSION",
    "USAGE_FIELDS",
    "RunStats",
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
    stats = compute_stats(source, run.id)
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
    bins: np.ndarray | None = None

    def add(self, values: Sequence[Any], binned: bool = False) -> list[Any]:
        present = [v for v in values if v is not None]
        self.missing += len(values) - len(present)
        self.moments.add(present)
        if binned:
            counts, _ = np.histogram(np.asarray(present, dtype=float), BINS, range=(0.0, 1.0))
            self.bins = counts if self.bins is None else self.bins + counts
        return present

    def summary(self, read: ValueChunks) -> Summary:
        return summary_of(self.moments, self.missing, read)

    def bin_counts(self) -> list[int]:
        return [0] * BINS if self.bins is None else [int(c) for c in self.bins]


def compute_stats(source: SampleSource, run_id: str) -> RunStats:
    """Stream a run's samples into its statistics (one pass per metric, one over the rest;
    a run of at most 20,000 values per column reads them again in order for its bootstrap).

    Args:
        source: where the run's samples are.
        run_id: the run's full id.
    """
    metrics: dict[str, Summary] = {}
    bins: dict[str, list[int]] = {}
    for name in source.metric_names(run_id):
        column = _Column()
        for chunk in source.iter_metric(run_id, name):
            column.add(chunk, binned=True)
        metrics[name] = column.summary(_metric_reader(source, run_id, name))
        bins[name] = column.bin_counts()

    usage_columns = [f"usage.{f}" for f in USAGE_FIELDS]
    composite, coverage = _Column(), _Column()
    usage = {f: _Column() for f in USAGE_FIELDS}
    judge = _JudgeTotals()
    per = {"cost_usd": (Moments(), Moments()), "total_tokens": (Moments(), Moments())}
    n_failed = 0
    for rows in source.iter_columns(
        run_id, ["composite", "coverage", "failed", *usage_columns, "usage.judge"]
    ):
        columns = list(zip(*rows, strict=True))
        composite.add(columns[0], binned=True)
        coverage.add(columns[1])
        n_failed += sum(1 for failed in columns[2] if failed)
        for k, name in enumerate(USAGE_FIELDS):
            usage[name].add(columns[3 + k])
        judge.add(columns[3 + len(USAGE_FIELDS)])
        for name, (scores, spent) in per.items():
            k = 3 + USAGE_FIELDS.index(name)
            both = [(c, u) for c, u in zip(columns[0], columns[k], strict=True) if c is not None]
            known = [pair for pair in both if pair[1] is not None]
            scores.add([c for c, _ in known])
            spent.add([u for _, u in known])
    return RunStats(
        n_samples=coverage.moments.n + coverage.missing,
        n_failed=n_failed,
        metrics=metrics,
        composite=composite.summary(_column_reader(source, run_id, "composite")),
        bins={**bins, "composite": composite.bin_counts()},
        mean_coverage=coverage.moments.mean,
        lowest_coverage=coverage.moments.low,
        agent_usage={
            name: {
                "total": column.moments.total,
                **column.summary(_column_reader(source, run_id, f"usage.{name}")).as_dict(),
            }
            for name, column in usage.items()
        },
        judge=judge.totals(),
        composite_per_usd=_ratio(*per["cost_usd"], 1.0),
        composite_per_1k_tokens=_ratio(*per["total_tokens"], 1000.0),
    )


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

    def totals(self) -> dict[str, Any] | None:
        if not self.parts:
            return None
        return {**self.counts, "cost_usd": self.cost.total}


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
