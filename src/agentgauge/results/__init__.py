"""Results beyond one SQLite file: where a run's samples are read from, and its summary.

A run scored on one machine keeps its samples in the store; a distributed run's workers write
them as Parquet shards of a results dataset, and the store registers the run with its place
and its summary. :func:`samples_of` gives the reads of either kind (the same interface), and
:func:`summary_stats` the run's statistics, computed by streaming the samples (never all of
them in memory) and kept with the run once it is finished.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgauge._lazy import lazy_exports
from agentgauge.results.summary import (
    BINS,
    JUDGE_COUNTS,
    USAGE_FIELDS,
    RunStats,
    compute_stats,
    judge_totals,
    run_stats,
)
from agentgauge.store import RunInfo, SampleSource, Store

if TYPE_CHECKING:
    from agentgauge.results.dataset import ResultsFolder as ResultsFolder
    from agentgauge.results.parquet import ParquetSamples as ParquetSamples

__all__ = [
    "BINS",
    "JUDGE_COUNTS",
    "USAGE_FIELDS",
    "ParquetSamples",
    "ResultsFolder",
    "RunStats",
    "compute_stats",
    "judge_totals",
    "run_stats",
    "samples_of",
    "summary_stats",
]


# a distributed run's results: a run kept in the store never needs them
__getattr__ = lazy_exports(
    globals(),
    {"ParquetSamples": "agentgauge.results.parquet", "ResultsFolder": "agentgauge.results.dataset"},
)


def samples_of(store: Store, run: RunInfo) -> SampleSource:
    """Where a run's samples are read from: the store, or the run's results dataset.

    Args:
        store: the store that registers the run.
        run: the run.
    """
    if run.place is not None:
        from agentgauge.results.dataset import ResultsFolder
        from agentgauge.results.parquet import ParquetSamples

        return ParquetSamples(ResultsFolder(run.place), run)
    return store


def summary_stats(store: Store, run_id: str) -> RunStats:
    """A run's statistics (:func:`run_stats`), from wherever its samples are.

    Args:
        store: the store that registers the run.
        run_id: the run (a unique prefix is accepted).
    """
    run = store.get_run(run_id)
    return run_stats(store, run, samples_of(store, run))
