"""The Python API: read traces, score them with a suite, compare two runs.

A run is scored in memory unless a store is named; its numbers are those that
``agentgauge evaluate`` prints for the same traces and suite::

    import agentgauge as ag
    result = ag.evaluate(ag.load_traces("traces.jsonl"), suite="behavior")
    print(result.aggregate["composite"])
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentgauge.config import Suite, load_suite
from agentgauge.documents.compare import RunSamples, compare_samples
from agentgauge.documents.summary import run_aggregate, run_usage, run_verdict
from agentgauge.engine import EvaluateOptions, collector_paused
from agentgauge.engine import evaluate as run_engine
from agentgauge.errors import AgentgaugeError
from agentgauge.io.importers import get_importer
from agentgauge.io.jsonl import ReadError
from agentgauge.metrics.base import Metric, MetricResult, create_metric, score_many
from agentgauge.model import Trace
from agentgauge.results import samples_of
from agentgauge.stats import Summary
from agentgauge.store import RunInfo, SampleRow, Store

__all__ = ["RunResult", "TraceReadError", "compare", "evaluate", "load_traces", "score"]

_SHOWN_ERRORS = 5


class TraceReadError(AgentgaugeError, ValueError):
    """Records of the input that are not traces (raised by :func:`load_traces`).

    Args:
        errors: every record that could not be read, with its file, line and field.
        traces: the traces that were read, for a caller that goes on without the others.
    """

    def __init__(self, errors: list[ReadError], traces: list[Trace]) -> None:
        self.errors = errors
        self.traces = traces
        shown = "\n".join(f"  {e}" for e in errors[:_SHOWN_ERRORS])
        more = len(errors) - _SHOWN_ERRORS
        tail = f"\n  ... and {more} more" if more > 0 else ""
        bad = (
            "1 record is not a trace"
            if len(errors) == 1
            else f"{len(errors)} records are not traces"
        )
        super().__init__(f"{bad} ({len(traces)} read):\n{shown}{tail}")


def load_traces(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    format: str = "native",
    *,
    on_error: Literal["raise", "skip"] = "raise",
) -> list[Trace]:
    """Read the traces of one file or several.

    Every file is read to its end first, so that all its bad records are known together.

    Args:
        paths: a file or a list of files.
        format: ``native`` (agentgauge JSONL, plain or ``.gz``) or another importer's name
            (``otel``: OpenTelemetry GenAI / OpenInference OTLP/JSON spans; ``openai-chat``:
            chats in OpenAI's message format; or an installed plugin's).
        on_error: ``raise`` raises :class:`TraceReadError` when a record is not a trace (it
            lists the bad records and holds the good traces); ``skip`` leaves them out with
            a warning that counts them.

    Raises:
        FileNotFoundError: a path that is not a file.
        UnknownNameError: an unknown format (a ValueError naming the known ones).
        TraceReadError: records that are not traces, with ``on_error="raise"``.
    """
    read = get_importer(format)
    files = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    for path in files:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such file: {os.fspath(path)}")
    traces: list[Trace] = []
    errors: list[ReadError] = []
    # every trace read stays alive: the collector, triggered by their number, would walk
    # them all again and again (more than half the time of a large file)
    with collector_paused():
        for path in files:
            for item in read(os.fspath(path)):
                if isinstance(item, ReadError):
                    errors.append(item)
                else:
                    traces.append(item)
    if errors and on_error == "raise":
        raise TraceReadError(errors, traces)
    if errors:
        warnings.warn(
            f"skipped {len(errors)} records that are not traces; the first: {errors[0]}",
            stacklevel=2,
        )
    return traces


@dataclass(frozen=True, repr=False)
class RunResult:
    """A scored run.

    Args:
        run: the run's record: ``id``, ``suite`` (its name), ``config`` (the suite's metrics,
            weights, options and thresholds, and the run's metadata), ``status``.
        samples: one :class:`~agentgauge.store.SampleRow` per scored trace, in input order:
            ``trace_id``, ``task_id``, ``values`` (metric -> value; None when not measured),
            ``reasons`` (why a value is None or what it means), ``metric_errors`` (metric ->
            error of a metric that raised), ``details``, ``composite``, ``coverage`` (the share
            of the suite's weight that was measured), ``recommendation``, ``band`` and
            ``error`` (the metric errors in one line, None without any) and ``usage`` (the
            trace's tokens and cost, and what the judges spent on it).
        aggregate: metric -> :class:`~agentgauge.stats.Summary` (mean, 95% bootstrap CI,
            n, n_missing) over the samples, ``"composite"`` included.
        usage: the run's tokens and cost (:func:`~agentgauge.report.export.run_usage`): the
            agent's totals and means with CIs, the judges' totals.
        read_errors: the records given as read errors instead of traces.
        recommendation: the suite's recommendation for the mean composite (accept,
            weak_accept, weak_reject, reject); None without a composite.
        band: the suite's band for the mean composite (excellent, good, fair, poor).
        store_path: the store file holding the run; None when the run was kept in memory.
    """

    run: RunInfo
    samples: list[SampleRow]
    aggregate: dict[str, Summary]
    usage: dict[str, Any]
    read_errors: list[ReadError]
    recommendation: str | None
    band: str | None
    store_path: str | None

    @classmethod
    def load(cls, store: Store, run_id: str) -> RunResult:
        """A run from a store, e.g. one that ``agentgauge evaluate`` made.

        Args:
            store: the results store.
            run_id: the run (a unique prefix is accepted).
        """
        run = store.get_run(run_id)
        source = samples_of(store, run)  # the store, or a distributed run's results dataset
        aggregate = run_aggregate(store, run.id)
        means = {name: summary.mean for name, summary in aggregate.items()}
        verdict = run_verdict(run, aggregate["composite"].mean, means)
        return cls(
            run=run,
            samples=list(source.iter_samples(run.id)),
            aggregate=aggregate,
            usage=run_usage(store, run.id),
            read_errors=source.read_errors(run.id),
            recommendation=verdict["recommendation"],
            band=verdict["band"],
            store_path=None if store.path == ":memory:" else store.path,
        )

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.run.id

    @property
    def composite(self) -> float | None:
        """The mean composite over the samples (None when no sample has one)."""
        return self.aggregate["composite"].mean

    @property
    def metric_names(self) -> list[str]:
        """The run's metrics, in the order of its suite."""
        return [name for name in self.aggregate if name != "composite"]

    def __repr__(self) -> str:
        return (
            f"RunResult(run_id={self.run.id!r}, suite={self.run.suite!r}, "
            f"samples={len(self.samples)}, read_errors={len(self.read_errors)}, "
            f"composite={self.aggregate['composite']}, recommendation={self.recommendation!r})"
        )


def _chosen_suite(suite: str | os.PathLike[str] | Suite) -> Suite:
    if isinstance(suite, Suite):
        suite.validate_names(f"suite {suite.name!r}")
        return suite
    return load_suite(os.fspath(suite))


@contextmanager
def _opened(store: str | os.PathLike[str] | Store | None) -> Iterator[Store]:
    """The store to write to: a throw-away one in memory, a file opened here, or the caller's."""
    if isinstance(store, Store):
        yield store
        return
    with Store(":memory:" if store is None else os.fspath(store)) as opened:
        yield opened


def evaluate(
    traces: Iterable[Trace | ReadError],
    suite: str | os.PathLike[str] | Suite = "behavior",
    *,
    store: str | os.PathLike[str] | Store | None = None,
    jobs: int = 1,
    batch_size: int = 128,
    progress: bool = False,
    run_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> RunResult:
    """Score traces with a suite.

    A metric that raises on a trace becomes an error of that sample and metric (see
    ``metric_errors``) and the run goes on.

    Args:
        traces: the traces (read errors from a reader are recorded in ``read_errors``).
        suite: a built-in suite's name (``behavior``, ``toolcall``, ``review``), a suite TOML
            file or a :class:`~agentgauge.config.Suite`.
        store: None keeps the run in memory; a path (or a :class:`~agentgauge.store.Store`)
            also records it there, where ``agentgauge show``, ``compare`` and the reports read
            it.
        jobs: worker processes (1 scores in this process).
        batch_size: traces per batch (the unit of work, and of commit in a store).
        progress: show a progress bar.
        run_id: the id of the new run (a short random one by default).
        metadata: more keys recorded with the run's configuration (secrets redacted), e.g.
            the model or the prompt's version.

    Raises:
        SuiteError: an unknown suite, metric, weight or option.
    """
    chosen = _chosen_suite(suite)
    options = EvaluateOptions(
        run_id=run_id,
        extra_config={"metadata": dict(metadata)} if metadata else None,
        jobs=jobs,
        batch_size=batch_size,
        progress=progress,
        total=len(traces) if isinstance(traces, Sized) else None,
    )
    with _opened(store) as opened:
        rid = run_engine(traces, chosen, store=opened, options=options)
        return RunResult.load(opened, rid)


def score(trace: Trace, metric: str | Metric, **options: Any) -> MetricResult:
    """Score one trace with one metric.

    Unlike :func:`evaluate`, an exception of the metric is raised.

    Args:
        trace: the trace.
        metric: a registered metric's name (``agentgauge metrics`` lists them) or a metric
            object.
        options: the metric's options, with a name.

    Raises:
        UnknownMetricError: an unregistered name.
        MetricOptionError: an option the metric does not take, or a value it refuses.
    """
    if isinstance(metric, str):
        built = create_metric(metric, options)
    elif options:
        raise TypeError("options go with a metric's name; a metric object has its own")
    else:
        built = metric
    return score_many(built, [trace])[0]


def compare(
    run_a: RunResult,
    run_b: RunResult,
    *,
    by: Literal["task", "id"] = "task",
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Is run B better than run A? The paired comparison of ``agentgauge compare``.

    Samples are paired by task (the mean over repeats of a task on each side) or by trace
    id; each metric and the composite get B − A with a bootstrap CI and a paired permutation
    p-value. The composite is the primary test; the metrics' verdicts use Benjamini–Hochberg
    adjusted p-values (``q_value``).

    Args:
        run_a: the baseline run.
        run_b: the candidate run.
        by: pair samples by ``task`` or by trace ``id``.
        alpha: significance level of the verdicts.

    Returns:
        ``{"run_a", "run_b", "by", "alpha", "metrics": {METRIC: {n, mean_a, mean_b, diff,
        ci_low, ci_high, p_value, q_value, verdict}}, "only_in_a", "only_in_b", "warnings"}``,
        the document of ``agentgauge compare --json``.
    """
    a, b = (RunSamples(r.run, r.metric_names, r.samples) for r in (run_a, run_b))
    return compare_samples(a, b, by=by, alpha=alpha)
