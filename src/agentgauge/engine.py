"""Scoring traces with a suite.

:func:`score_traces` scores traces in memory (pure). :func:`evaluate` streams traces from
files or any iterable, scores them in batches over a process pool, writes every finished batch
to the store in one transaction (so an interrupted run resumes where it stopped) and isolates
failures: a bad line becomes a read error, a metric that raises becomes an error of that
sample and metric, and the run goes on.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import signal
import sqlite3
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import islice, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from agentgauge._price_cache import kept_rates
from agentgauge._redact import hide_credentials, redact_json
from agentgauge._safe import DecodeError, guarded, may_hold_surrogate
from agentgauge.config import Suite
from agentgauge.errors import AgentgaugeError
from agentgauge.io.importers import IMPORTERS, Pending, parse_raw_line
from agentgauge.io.jsonl import RawLine, ReadError, iter_raw_lines, parse_line
from agentgauge.judges.cost import judge_spend
from agentgauge.judges.preflight import JudgeSetupError, check_judge
from agentgauge.metrics._catalog import TEXT_METRICS
from agentgauge.metrics.base import (
    BatchMetric,
    Metric,
    MetricResult,
    score_many,
    sharing_per_trace,
)
from agentgauge.model import Trace
from agentgauge.registry import Registry
from agentgauge.scoring import (
    UNCERTAIN,
    band,
    composite,
    failed_gates,
    gate_note,
    noise_intervals,
    recommendation,
    uncertainty,
)
from agentgauge.store import MetricRow, PreparedBatch, SampleRow, Store, prepare_batch
from agentgauge.usage import usage_json

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = [
    "EXECUTORS",
    "Batch",
    "BatchRunner",
    "EngineError",
    "EvaluateOptions",
    "ExecutorFactory",
    "FileRun",
    "Outcome",
    "SampleScore",
    "checked_metrics",
    "collector_paused",
    "evaluate",
    "evaluate_files",
    "executor",
    "item_key",
    "iter_sources",
    "progress_bar",
    "resume_file_run",
    "score_batch",
    "score_traces",
]

Item = Trace | ReadError | RawLine | Pending
Batch = list[tuple[int, str, Item]]
"""Items to score, each with its sequence number and resume key."""
Outcome = PreparedBatch
"""A scored batch: its samples', metric values' and read errors' rows, ready for the store."""


@dataclass
class SampleScore:
    """Everything computed for one trace.

    Args:
        trace_id: the trace's id.
        task_id: the trace's task id.
        values: metric -> value (None when not applicable, not measured or failed).
        details: metric -> details dict.
        reasons: metric -> reason (for None values and explanations).
        metric_errors: metric -> error message, for metrics that raised.
        composite: renormalised weighted mean, None when no weighted metric was measured.
        coverage: share of the suite's weight that was measured.
        recommendation: accept / weak_accept / weak_reject / reject, None without composite.
        band: excellent / good / fair / poor, None without composite.
        usage: the trace's tokens and cost (:func:`agentgauge.usage.trace_usage`), with what
            the judges spent on it under ``judge`` (:func:`agentgauge.judges.cost.judge_spend`).
    """

    trace_id: str
    task_id: str
    values: dict[str, float | None] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: dict[str, str | None] = field(default_factory=dict)
    metric_errors: dict[str, str] = field(default_factory=dict)
    composite: float | None = None
    coverage: float = 0.0
    recommendation: str | None = None
    band: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        """All metric errors of the sample in one line, None when there were none."""
        if not self.metric_errors:
            return None
        return "; ".join(f"{m}: {e}" for m, e in self.metric_errors.items())


def _error_text(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _score_one_metric(
    metric: Metric, traces: Sequence[Trace], batch: bool = True
) -> list[MetricResult | str]:
    """Results of one metric over a batch; a metric that raises fails only the failing samples.

    ``batch=False`` says that the metric has no ``score_batch`` (already checked, once).
    """
    try:
        return list(score_many(metric, traces)) if batch else [metric.score(t) for t in traces]
    except Exception:
        out: list[MetricResult | str] = []
        for trace in traces:
            try:
                out.append(metric.score(trace))
            except Exception as exc:
                out.append(_error_text(exc))
        return out


_ROUND = 64
"""Traces scored by every per-trace metric before the next ones."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block: while a batch is parsed and scored, or
    a file of traces is read.

    Scoring makes many short-lived objects, freed by reference counting as soon as they are
    done with; the collector, triggered by their number, would walk every live object (the
    imported libraries' included) again and again, a third of the run's time. It resumes
    after the batch, so the garbage it finds is at most one batch's.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def score_traces(
    traces: Sequence[Trace], suite: Suite, metrics: Sequence[Metric] | None = None
) -> list[SampleScore]:
    """Score traces with every metric of ``suite`` and combine them.

    A metric that raises on a trace becomes an error for that sample and metric (its value is
    None) and the other metrics and samples are unaffected.

    Args:
        traces: the traces to score.
        suite: metrics, weights, options and thresholds.
        metrics: the suite's metrics already built (to reuse loaded models); built if None.
    """
    built = list(metrics) if metrics is not None else suite.build_metrics()
    empty = [_nothing_to_score(t) for t in traces]
    with collector_paused():
        scored = iter(
            _score_traces([t for t, e in zip(traces, empty, strict=True) if not e], suite, built)
        )
    return [
        _unscored(trace, built) if nothing else next(scored)
        for trace, nothing in zip(traces, empty, strict=True)
    ]


NOTHING_TO_SCORE = "nothing to score: the import recovered no step and no output of this run"


def _nothing_to_score(trace: Trace) -> bool:
    """Whether a trace is an import that recovered nothing of its run: no step, no output, and
    its importer says the output is missing (``metadata["missing"]``). No metric can say
    anything true about it, least of all that it went well. A trace written as it is (a
    model's empty answer to a tool-calling task) is scored: saying nothing is a result."""
    missing = trace.metadata.get("missing")
    return (
        not trace.steps
        and trace.output is None
        and isinstance(missing, dict)
        and bool(missing.get("output"))
    )


def _unscored(trace: Trace, built: Sequence[Metric]) -> SampleScore:
    """The sample of a trace with nothing to score: every metric None with the reason, no
    composite, coverage 0, no verdict; no metric (and no judge) runs on it."""
    names = [m.name for m in built]
    return SampleScore(
        trace.id,
        trace.task.id,
        values=dict.fromkeys(names),
        reasons=dict.fromkeys(names, NOTHING_TO_SCORE),
        usage=usage_json(trace),
    )


_Verdicts = dict[tuple[float | None, ...], tuple[float | None, float, str | None, str | None]]
"""The weighted values of a sample -> its composite, coverage, recommendation and band."""


def _score_traces(
    traces: Sequence[Trace], suite: Suite, built: Sequence[Metric]
) -> list[SampleScore]:
    samples: list[SampleScore] = []
    batched = {
        # models and judges: the whole batch in one call
        i: _score_one_metric(m, traces)
        for i, m in enumerate(built)
        if isinstance(m, BatchMetric)
    }
    verdicts: _Verdicts = {}
    # The other metrics take a few traces at a time, all of them, so that what they share
    # about a trace (word sets, call diagnoses) is still in their small caches; the samples
    # are completed while their traces and results are still in the processor's caches too.
    for start in range(0, len(traces), _ROUND):
        chunk = traces[start : start + _ROUND]
        with sharing_per_trace():
            outcomes = [
                batched[i][start : start + _ROUND]
                if i in batched
                else _score_one_metric(m, chunk, batch=False)
                for i, m in enumerate(built)
            ]
        samples += _completed(chunk, built, outcomes, suite, verdicts)
    return samples


def _completed(
    traces: Sequence[Trace],
    built: Sequence[Metric],
    outcomes: Sequence[Sequence[MetricResult | str]],
    suite: Suite,
    verdicts: _Verdicts,
) -> list[SampleScore]:
    """The samples of ``traces``: their metrics' results, usage, composite and verdicts;
    ``verdicts`` keeps the composite, coverage, recommendation and band of each combination
    of weighted values seen."""
    columns = [(m.name, outcome) for m, outcome in zip(built, outcomes, strict=True)]
    weights, thresholds, gates = suite.weights, suite.thresholds, suite.gates
    samples = []
    for k, trace in enumerate(traces):
        values: dict[str, float | None] = {}
        details: dict[str, dict[str, Any]] = {}
        reasons: dict[str, str | None] = {}
        errors: dict[str, str] = {}
        for name, outcome in columns:
            result = outcome[k]
            if isinstance(result, str):
                values[name] = None
                errors[name] = result
                reasons[name] = "metric raised an error"
            else:
                values[name] = result.value
                details[name] = result.details
                reasons[name] = result.reason
        usage = usage_json(trace)
        if (spent := judge_spend(details.values())) is not None:
            usage["judge"] = spent
        # the composite and its verdicts depend on the weighted values alone: samples that
        # share them (most, in a good run) share one computation
        key = tuple(map(values.get, weights))
        if (scored := verdicts.get(key)) is None:
            comp = composite(values, weights, lower_is_better=suite.lower_is_better)
            scored = verdicts[key] = (
                comp.value,
                comp.coverage,
                None if comp.value is None else recommendation(comp.value, thresholds)[0],
                None if comp.value is None else band(comp.value, thresholds),
            )
        value, coverage, verdict, interpretation = scored
        failed = failed_gates(values, gates) if gates else {}
        noisy = noise_intervals(details) if verdict is not None else {}
        doubt = uncertainty(values, noisy, suite, failed) if noisy else None
        if doubt is not None:
            # the judges' noise could change the verdict: neither the composite's nor a gate's
            verdict = UNCERTAIN
            details[UNCERTAIN] = doubt
        elif failed:
            # a failed gate rejects the sample, and its details say which
            verdict = "reject"
            details["gates"] = {"failed": failed, "note": gate_note(failed)}
        samples.append(
            SampleScore(  # in field order: keywords would double the cost of the call
                trace.id,
                trace.task.id,
                values,
                details,
                reasons,
                errors,
                value,
                coverage,
                verdict,
                interpretation,
                usage,
            )
        )
    return samples


class EngineError(AgentgaugeError, RuntimeError):
    """An evaluation that could not go on or be resumed (a worker process died, a file of
    the run is gone)."""


def iter_sources(paths: Iterable[str | Path]) -> Iterator[RawLine | ReadError]:
    """The raw lines of several JSONL files, one after the other (parsed later, in workers)."""
    for path in paths:
        yield from iter_raw_lines(path)


def _to_rows(
    keyed: Sequence[tuple[int, str, Trace, str | None, int | None, str | None]],
    scores: list[SampleScore],
) -> list[SampleRow]:
    rows = []
    metric_row = partial(tuple.__new__, MetricRow)
    for (seq, key, trace, source, line, text), sc in zip(keyed, scores, strict=True):
        trace_json, unstorable = _stored_trace(trace, text)
        error = f"{sc.error}; {unstorable}" if sc.error and unstorable else sc.error or unstorable
        errors = sc.metric_errors
        # the metrics' rows made in C
        metrics = tuple(
            map(
                metric_row,
                zip(
                    sc.values,
                    sc.values.values(),
                    map(sc.reasons.get, sc.values),
                    map(errors.get, sc.values) if errors else repeat(None),
                    strict=False,
                ),
            )
        )
        rows.append(
            SampleRow(  # in field order: keywords would double the cost of the call
                key,
                seq,
                source,
                line,
                sc.trace_id,
                sc.task_id,
                sc.composite,
                sc.coverage,
                sc.recommendation,
                sc.band,
                error,
                sc.details,
                metrics,
                trace_json,
                sc.usage,
                trace.task.category,
            )
        )
    return rows


def _stored_trace(trace: Trace, text: str | None) -> tuple[bytes | None, str | None]:
    """The trace as the store keeps it, with its secrets redacted (the metrics saw it whole);
    ``text`` is the line it was read from, kept as it is when it holds nothing to redact.

    Returns:
        The JSON, or None and the reason when the trace cannot be written as JSON.
    """
    try:
        if text is None or may_hold_surrogate(text):
            # a line that escapes a lone surrogate was read with U+FFFD in its place
            text = guarded(trace.model_dump_json, exclude_none=True)
        return guarded(redact_json(text).encode, "utf-8"), None
    except DecodeError as exc:
        return None, f"the trace cannot be stored: {exc}"


def score_batch(
    batch: Batch, suite: Suite, metrics: Sequence[Metric], *, compress: bool = True
) -> Outcome:
    """Parse (when raw) and score one batch: the unit of work an executor runs.

    Args:
        batch: the items, as :func:`evaluate` hands them to the executor.
        suite: the suite.
        metrics: the suite's metrics, built (:meth:`Suite.build_metrics`).
        compress: compress the traces for the store (a columnar file compresses its own).
    """
    with collector_paused():
        return _parse_and_score(batch, suite, metrics, compress)


def _parse_and_score(
    batch: Batch, suite: Suite, metrics: Sequence[Metric], compress: bool
) -> Outcome:
    errors: list[ReadError] = []
    keyed: list[tuple[int, str, Trace, str | None, int | None, str | None]] = []
    for seq, key, item in batch:
        if isinstance(item, RawLine):
            native = item.trace_format == "native"
            # a line's warning (a value replaced), then its trace
            parsed = parse_line(item, errors) if native else parse_raw_line(item, errors)
            if isinstance(parsed, ReadError):
                errors.append(parsed)
            else:
                # a native line is the trace's JSON, stored as it is when it holds no secret
                text = item.text if native else None
                keyed.append((seq, key, parsed, item.source, item.line, text))
        elif isinstance(item, ReadError):
            errors.append(item)
        elif isinstance(item, Trace):
            keyed.append((seq, key, item, None, None, None))
        else:  # a record its reader left to finish here (a run's spans to assemble)
            made = item.finish(errors)
            if isinstance(made, ReadError):
                errors.append(made)
            else:
                # keyed as the trace it made, as when its reader makes it
                keyed.append((seq, item_key(seq, made), made, None, None, None))
    scores = score_traces([k[2] for k in keyed], suite, metrics) if keyed else []
    return prepare_batch(_to_rows(keyed, scores), errors, compress=compress)


_worker_state: tuple[Suite, list[Metric]] | None = None


def _die_with_parent() -> None:
    """End this worker when the process that started it dies (a SIGKILL leaves no one to
    stop the pool): the kernel's parent-death signal on Linux, a watching thread elsewhere."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        import ctypes

        with suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before the signal was set
                    os._exit(1)
                return
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


_PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _init_worker(suite_json: str) -> None:
    global _worker_state
    _die_with_parent()
    # Ctrl-C is the main process's to handle: it stops the pool, saved batches stay saved
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    suite = Suite.model_validate_json(suite_json)
    _worker_state = (suite, suite.build_metrics())
    # what the worker holds from here on (the modules, the metrics and their models) is never
    # walked by its collector again: a full collection then walks the batches' objects alone
    gc.freeze()


def _score_batch_in_worker(pickled: bytes) -> bytes:
    """Score a batch sent pickled, and send its outcome back pickled: read and written here
    with the collector paused (a batch of spans is thousands of objects, whose unpickling
    would otherwise set the collector walking the whole heap, again and again)."""
    assert _worker_state is not None, "worker not initialised"
    with collector_paused():
        outcome = score_batch(pickle.loads(pickled), *_worker_state)
        return pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)


def _warm_up() -> None:
    """Runs in each worker at start, so that all workers exist before the progress display."""


def item_key(seq: int, item: Item) -> str:
    """The key a sample is stored under: ``source#line`` for what was read from a line, else
    ``seq:trace_id``.

    Args:
        seq: the item's position in the input.
        item: a raw line, a read error, a trace or a pending record (keyed by the id of the
            trace it makes).
    """
    if isinstance(item, RawLine | ReadError):
        return f"{item.source}#{item.line}"
    # the key is stored and shown: an id that holds a credential is written without it
    return f"{seq}:{hide_credentials(item.id)}"


def _batches(
    items: Iterable[Item],
    done: Callable[[Sequence[str]], set[str]] | None,
    size: int,
    on_skip: Callable[[int], None],
    first_seq: int = 0,
) -> Iterator[Batch]:
    """The items in batches of ``size``, those ``done`` finds already stored left out (asked
    batch by batch: a resumed run holds no list of what it already has)."""
    batch: Batch = []
    for seq, item in enumerate(items, start=first_seq):
        batch.append((seq, item_key(seq, item), item))
        if len(batch) >= size:
            yield from _not_done(batch, done, on_skip)
            batch = []
    if batch:
        yield from _not_done(batch, done, on_skip)


def _not_done(
    batch: Batch, done: Callable[[Sequence[str]], set[str]] | None, on_skip: Callable[[int], None]
) -> Iterator[Batch]:
    if done is None:
        yield batch
        return
    stored = done([key for _, key, _ in batch])
    if stored:
        on_skip(len(stored))
        batch = [entry for entry in batch if entry[1] not in stored]
    if batch:
        yield batch


def _read_paused(items: Iterable[Item], size: int) -> Iterator[Item]:
    """A file's items, read ``size`` at a time with the collector paused, as they are scored
    (a batch of spans read is thousands of objects, which would set the collector walking the
    whole heap again and again); it runs between the batches."""
    iterator = iter(items)
    while True:
        with collector_paused():
            chunk = list(islice(iterator, size))
        if not chunk:
            return
        yield from chunk


def _judge_cache_in_store(suite: Suite, store: Store) -> Suite:
    """The suite with its judge cache in the results store's file, unless it names its own."""
    judge = suite.judge
    if judge is None or "cache_path" in judge.model_fields_set or store.path == ":memory:":
        return suite
    return suite.model_copy(update={"judge": judge.model_copy(update={"cache_path": store.path})})


def _embedding_cache_in_store(suite: Suite, store: Store) -> Suite:
    """The suite with its text metrics' embedding cache in the results store's file, unless
    it names its own: a rerun over the same texts runs no model."""
    text = suite.text or {}
    if (
        "embedding_cache" in text
        or store.path == ":memory:"
        or not any(name in TEXT_METRICS for name in suite.metrics)
    ):
        return suite
    return suite.model_copy(update={"text": {**text, "embedding_cache": store.path}})


@dataclass(frozen=True)
class EvaluateOptions:
    """How :func:`evaluate` records, runs and shows a run.

    Args:
        run_id: the id of the new run, or of the run to resume.
        resume: continue ``run_id``, skipping the samples and bad lines it already holds.
        kind: what produced the run (recorded with it).
        sources: the input files (recorded with the run).
        extra_config: more configuration echoed in the run's record (secrets redacted).
        jobs: worker processes; 1 scores in this process; default the number of cores. A
            suite whose judge has a budget (max_calls, max_cost_usd) is scored in this process,
            so that the budget holds for the whole run.
        batch_size: traces per batch (the unit of work and of commit).
        executor: a registered executor (:data:`EXECUTORS`): ``local`` (this process when
            ``jobs`` is 1, else a process pool), ``ray`` (a Ray cluster: tasks scoring these
            batches; files given to :func:`evaluate_files` are read, scored and written as
            Parquet by the cluster's workers; ``jobs`` bounds the work in flight), or a
            plugin's.
        ray_address: the Ray cluster to join; ``RAY_ADDRESS`` when None, else a local one is
            started.
        results: where an executor that keeps its results outside the store (``ray``: a
            Parquet results dataset) puts them: a folder or a URI; None puts a folder beside
            the store's file.
        shard_bytes: such an executor's unit of work: about this many bytes of input.
        progress: show a progress bar.
        total: the number of items, for the progress bar.
        first_seq: the sequence number of the first item: a resumed run whose items do not
            start over from its first (a simulation's remaining conversations) numbers them
            after those it holds.
        on_written: told of each batch once it is written (the store, the run id and the
            batch's rows), in the thread that writes: a live run's rolling summary.
        judge_optional: a judge metric with no judge model is None on every sample ("no
            judge configured") instead of a set-up error (a review run's Tier 2, which may be
            absent).
    """

    run_id: str | None = None
    resume: bool = False
    kind: str = "evaluate"
    sources: Sequence[str] = ()
    extra_config: Mapping[str, Any] | None = None
    jobs: int | None = None
    batch_size: int = 128
    executor: str = "local"
    ray_address: str | None = None
    results: str | None = None
    shard_bytes: int = 64 << 20
    progress: bool = True
    total: int | None = None
    first_seq: int = 0
    on_written: Callable[[Store, str, Outcome], None] | None = None
    judge_optional: bool = False


def checked_metrics(suite: Suite, *, judge_optional: bool = False) -> list[Metric]:
    """The suite's metrics, built, once what they need is checked (the judges' models, keys and
    URLs), without calling anything.

    The suite's ``[judge]`` settings are checked first, before the metrics are built (some load
    libraries for seconds), so a missing key fails at once and a judge given on the command line
    is checked even when no metric of the suite uses it; then each metric checks itself through
    an optional ``preflight()`` method. A judge metric that has no judge model (and no
    fallback) would be None on every sample: it is an error unless ``judge_optional``.

    Args:
        suite: the suite.
        judge_optional: accept judge metrics without a judge model.

    Raises:
        JudgeSetupError: naming the environment variable or option to set.
    """
    if suite.judge is not None:
        check_judge(suite.judge)
    built = suite.build_metrics()
    unjudged = [m.name for m in built if getattr(m, "unjudged", False)]  # judge metrics
    if unjudged and not judge_optional:
        raise JudgeSetupError(
            f"no judge model for {', '.join(unjudged)}: give --judge MODEL (a pydantic-ai model "
            "such as openai:gpt-4o-mini, or the model served at --judge-url), or set model in "
            "the suite's [judge] table"
        )
    for m in built:
        preflight = getattr(m, "preflight", None)
        if callable(preflight):
            preflight()
    return built


def _prepare(metrics: Sequence[Metric], store: Store, run_id: str) -> None:
    """Work a metric does once per run before the samples (a rubric writing its evaluation
    steps, so that every worker reads the same ones), recorded with the run."""
    for m in metrics:
        prepare = getattr(m, "prepare", None)
        if callable(prepare):
            for record in prepare():
                store.append_record(run_id, "judge_setup", record)


def evaluate(
    items: Iterable[Item], suite: Suite, *, store: Store, options: EvaluateOptions | None = None
) -> str:
    """Score a stream of traces with a suite and write everything to the store.

    Args:
        items: Traces, raw JSONL lines (:func:`iter_sources`, parsed in the workers) or
            ReadErrors from a reader (recorded as errors).
        suite: metrics, weights, options and thresholds.
        store: where the run, its samples and its errors go (batch by batch).
        options: the run's id, resume, workers, executor, batch size and progress display
            (:class:`EvaluateOptions`; its defaults when None).

    Returns:
        The run id.

    Raises:
        JudgeSetupError: a judge that cannot work as configured (no key in the environment,
            an unknown provider, an unreachable URL), before a run is recorded.
    """
    opts = options or EvaluateOptions()
    suite = _judge_cache_in_store(suite, store)
    # the suite that scores also keeps its embeddings in the store: a cache, not part of the
    # run's record
    scoring = _embedding_cache_in_store(suite, store)
    # built here first, so that a bad option (or executor) fails before a run is recorded or a
    # worker starts
    built = checked_metrics(scoring, judge_optional=opts.judge_optional)
    make_runner = EXECUTORS.get(opts.executor)
    # Workers are started before the progress display starts its refresh thread (fork safety),
    # and before the run is recorded: a cluster that cannot be reached records nothing.
    runner = _start_runner(scoring, built, make_runner, opts)
    try:
        run_id, done = _start_run(store, suite, opts)
        _prepare(built, store, run_id)
    except BaseException:
        runner.close(wait=False)
        raise
    try:
        with progress_bar(opts.progress, opts.total) as advance:
            outcomes = runner.run(_batches(items, done, opts.batch_size, advance, opts.first_seq))
            while _write_next(outcomes, store, run_id, opts.on_written, advance):
                pass
    except BaseException as exc:
        # interrupted or failed: what is saved is saved; busy workers are not waited for
        runner.close(wait=False)
        if not isinstance(exc, KeyboardInterrupt):
            _mark_failed(store, run_id)
        raise
    runner.close()
    # a run that scored nothing (an empty input, no line a trace) is no result: failed, with
    # its read errors, never a completed run of 0 samples
    store.finish_run(run_id, "completed" if store.get_run(run_id).n_samples else "failed")
    return run_id


def _write_next(
    outcomes: Iterator[Outcome],
    store: Store,
    run_id: str,
    on_written: Callable[[Store, str, Outcome], None] | None,
    advance: Callable[[int], None],
) -> bool:
    """Score the next batch and write it; False when there is none left.

    The collector stays paused until the batch is written and let go: it resumes where none
    of the batch's objects is alive, rather than walking the rows about to be written.
    """
    with collector_paused():
        outcome = next(outcomes, None)
        if outcome is None:
            return False
        store.write_prepared(run_id, outcome)
        if on_written is not None:
            on_written(store, run_id, outcome)
        advance(outcome.size)
        del outcome
    return True


def _mark_failed(store: Store, run_id: str) -> None:
    """Record that a run stopped on an error (``--resume`` still continues it); a store that
    cannot be written (a full disk) keeps it "running", which resumes the same way."""
    with suppress(sqlite3.Error, OSError):
        store.finish_run(run_id, "failed")


def _start_run(
    store: Store, suite: Suite, opts: EvaluateOptions
) -> tuple[str, Callable[[Sequence[str]], set[str]] | None]:
    """Record a new run, or reopen the one to resume; returns its id and, when resuming, what
    finds the keys it already holds among some."""
    if opts.resume:
        if opts.run_id is None:
            raise ValueError("resume needs the run_id of the run to continue")
        run_id = store.get_run(opts.run_id).id
        store.reopen_run(run_id)
        return run_id, partial(store.done_among, run_id)
    config = {"suite": suite.model_dump(mode="json"), **(opts.extra_config or {})}
    run_id = store.create_run(
        kind=opts.kind, suite=suite.name, config=config, sources=opts.sources, run_id=opts.run_id
    )
    return run_id, None


def _start_runner(
    suite: Suite, built: Sequence[Metric], make_runner: ExecutorFactory, opts: EvaluateOptions
) -> BatchRunner:
    """The runner that scores the batches, its workers started: ``make_runner``'s, or this
    process's when the suite's judge has a budget; one worker when the input is known to fit
    in one batch."""
    n_jobs = max(1, opts.jobs if opts.jobs is not None else (os.cpu_count() or 1))
    judge = suite.judge
    if judge is not None and (judge.max_calls is not None or judge.max_cost_usd is not None):
        # A judge budget is counted in the process that makes the calls: one process keeps it
        # the run's budget (the judge's calls still run concurrently inside it).
        make_runner, n_jobs = EXECUTORS.get("local"), 1
    elif opts.total is not None and opts.total <= opts.batch_size:
        # one batch at most: a pool would score it in one worker, after seconds of start-up
        n_jobs = 1
    return make_runner(suite, built, jobs=n_jobs, address=opts.ray_address)


@contextmanager
def progress_bar(
    show: bool, total: int | None, label: str = "scoring"
) -> Iterator[Callable[[int], None]]:
    """A progress bar (hidden unless ``show``); yields the function that advances it.

    Args:
        show: show it.
        total: the count it goes to, when known.
        label: what it counts.
    """
    with Progress(
        TextColumn(f"[bold]{label}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=not show,
    ) as bar:
        task = bar.add_task(label, total=total)

        def advance(n: int) -> None:
            bar.advance(task, n)

        yield advance


class BatchRunner(Protocol):
    """Runs the batches of one evaluation somewhere; made by an executor."""

    def run(self, batches: Iterator[Batch]) -> Iterator[Outcome]:
        """Score each batch (:func:`score_batch`) and yield its outcome, in any order (the
        local runners keep the batches' order)."""
        ...

    def close(self, wait: bool = True) -> None:
        """Release the workers; ``wait=False`` when interrupted (busy workers are not waited
        for)."""
        ...


class ExecutorFactory(Protocol):
    """``factory(suite, metrics, *, jobs, address) -> BatchRunner``: ``metrics`` are the
    suite's, built in this process; ``jobs`` the parallelism asked for; ``address`` the
    cluster to join, for executors that use one.

    A factory may also read files itself, where they lie, and keep the results where it
    chooses: its ``evaluate_files(run, *, store, options) -> run_id`` attribute then runs an
    evaluation of files (:func:`evaluate_files`) whole, registering the run in the store.
    """

    def __call__(
        self, suite: Suite, metrics: Sequence[Metric], *, jobs: int, address: str | None
    ) -> BatchRunner: ...


def executor(name: str, *, description: str = "") -> Callable[[ExecutorFactory], ExecutorFactory]:
    """Register an executor factory under ``name`` (``evaluate --executor NAME``).

    Args:
        name: the executor's name.
        description: one line for ``agentgauge plugins`` (default: the factory's docstring's
            first line).
    """
    return EXECUTORS.decorator(name, description=description)


EXECUTORS: Registry[ExecutorFactory] = Registry(
    "executor",
    "agentgauge.executors",
    builtins=("agentgauge.engine", "agentgauge.results.cluster"),
    adopt=lambda name, obj: executor(name)(obj),
    # --executor local imports nothing more (ray's module imports the results' readers)
    index={"local": "agentgauge.engine", "ray": "agentgauge.results.cluster"},
)
"""Every executor by name: ``local``, ``ray`` and those of the ``agentgauge.executors`` entry
points."""


@executor("local", description="this process (--jobs 1) or a pool of worker processes")
def _local(
    suite: Suite, metrics: Sequence[Metric], *, jobs: int, address: str | None
) -> BatchRunner:
    """This process (one job) or a pool of worker processes on this machine."""
    return _PoolRunner(suite, jobs) if jobs > 1 else _InlineRunner(suite, metrics)


class _InlineRunner:
    """Scores in this process, metrics built once."""

    def __init__(self, suite: Suite, metrics: Sequence[Metric]) -> None:
        self._suite = suite
        self._metrics = metrics

    def run(self, batches: Iterator[Batch]) -> Iterator[Outcome]:
        for batch in batches:
            yield score_batch(batch, self._suite, self._metrics)

    def close(self, wait: bool = True) -> None:
        return None


def _load_before_fork() -> None:
    """Load here, once, what each worker would otherwise load for itself on its first batch:
    the models' prices kept between processes, from which the samples' usage is priced
    (forked workers share this process's memory)."""
    kept_rates("")  # the first look-up reads the whole file


def _unpickled(pickled: bytes) -> Outcome:
    with collector_paused():
        outcome: Outcome = pickle.loads(pickled)
    return outcome


class _PoolRunner:
    """A process pool; each worker builds the suite's metrics once (the pool's modules are
    imported here: a run of one batch, scored in the command's own process, needs none)."""

    def __init__(self, suite: Suite, n_jobs: int) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        forked = "fork" in mp.get_all_start_methods()
        ctx = mp.get_context("fork") if forked else mp.get_context()
        if forked:
            _load_before_fork()
        self._pool = ProcessPoolExecutor(
            n_jobs, mp_context=ctx, initializer=_init_worker, initargs=(suite.model_dump_json(),)
        )
        self._pool.submit(_warm_up).result()
        self._max_pending = 2 * n_jobs

    def run(self, batches: Iterator[Batch]) -> Iterator[Outcome]:
        from concurrent.futures.process import BrokenProcessPool

        # the outcomes in the batches' order: the store is written as one process writes it
        # (the same line's messages from two batches end the same way)
        pending: deque[Future[bytes]] = deque()
        try:
            for batch in batches:
                pickled = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
                pending.append(self._pool.submit(_score_batch_in_worker, pickled))
                if len(pending) >= self._max_pending:
                    yield _unpickled(pending.popleft().result())
            while pending:
                yield _unpickled(pending.popleft().result())
        except BrokenProcessPool as exc:
            raise EngineError(
                f"a worker process died ({exc}); finished batches are saved: resume the run"
            ) from exc

    def close(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


@dataclass(frozen=True)
class FileRun:
    """An evaluation of trace files: the suite, the files and the format they are in.

    Args:
        suite: what to compute and how to combine it.
        sources: the trace files, read in this order.
        trace_format: ``native`` JSONL or another registered format
            (:data:`~agentgauge.io.importers.IMPORTERS`).
        resume_id: the run this evaluation continues; None starts a new run.
        executor: the executor the run must run on whatever the options say (a distributed
            run continues on a cluster); None takes the options'.
        force: continue the run even when a file changed since it began.
    """

    suite: Suite
    sources: Sequence[str | Path]
    trace_format: str = "native"
    resume_id: str | None = None
    executor: str | None = None
    force: bool = False


def source_fingerprint(path: Path) -> dict[str, Any]:
    """A file's size and SHA-256, recorded with a run so that ``--resume`` notices a source
    that changed (its line numbers, which key the samples, would no longer match).

    Args:
        path: the file.
    """
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def _check_unchanged(
    run_id: str, sources: Sequence[Path], recorded: Sequence[Mapping[str, Any]]
) -> None:
    before = {r.get("path"): {"size": r.get("size"), "sha256": r.get("sha256")} for r in recorded}
    for path in sources:
        if str(path) in before and source_fingerprint(path) != before[str(path)]:
            raise EngineError(
                f"{path} changed since run {run_id} began (its size or content differ): resuming "
                "would pair the stored samples with other lines; start a new run, or resume "
                "with --force to continue knowingly"
            )


def resume_file_run(
    store: Store, run_id: str, paths: Sequence[Path] = (), *, force: bool = False
) -> FileRun:
    """What an interrupted ``evaluate`` run read, so that it continues where it stopped: its
    suite, its files and their format, as recorded with the run.

    Args:
        store: the store holding the run.
        run_id: the run's id, or a unique prefix of it.
        paths: the files to read when the run recorded none.
        force: continue even when a file changed since the run began.

    Raises:
        StoreError: no such run.
        EngineError: a run made by another command, one of its files is gone, or one changed
            (unless ``force``).
    """
    run = store.get_run(run_id)
    if run.kind != "evaluate":
        raise EngineError(
            f"run {run.id} is a {run.kind} run: resume it with the command that made it "
            "(evaluate resumes evaluate runs)"
        )
    suite = Suite.model_validate(run.suite_config)
    trace_format = run.config.get("format", "native")
    if run.place is not None:
        # a distributed run: its executor checks its files where they lie
        executor = str(run.config.get("executor", "ray"))
        return FileRun(suite, run.sources, trace_format, run.id, executor, force)
    sources = [Path(s) for s in run.sources] or list(paths)
    gone = [p for p in sources if not p.is_file()]
    if gone:
        raise EngineError(f"no such file: {gone[0]} (a source of run {run.id})")
    if not force:
        _check_unchanged(run.id, sources, run.config.get("source_fingerprints", []))
    return FileRun(suite, sources, trace_format, resume_id=run.id)


def evaluate_files(run: FileRun, *, store: Store, options: EvaluateOptions | None = None) -> str:
    """Score trace files with :func:`evaluate`, starting a run or continuing one.

    A format of one trace per line (native JSONL) is handed to the workers line by line
    (parsed there); other formats go through their importer. An executor that reads files
    itself (``ray``: a cluster's workers read them where they lie) runs the whole evaluation.

    Args:
        run: the suite, the files, their format and the run to continue, if any.
        store: where the run goes.
        options: workers, executor, batch size and progress display (files read line by line
            are counted first for the progress bar's total); the run's id, sources and format
            come from ``run``.

    Returns:
        The run id.

    Raises:
        UnknownNameError: the run's format or the executor is not registered.
    """
    opts = options or EvaluateOptions()
    importer = IMPORTERS.get(run.trace_format)
    reads_files = getattr(EXECUTORS.get(run.executor or opts.executor), "evaluate_files", None)
    if callable(reads_files):
        run_id: str = reads_files(run, store=store, options=opts)
        return run_id
    paths = [Path(p) for p in run.sources]
    if importer.prepare is not None:
        importer.prepare()  # before the workers start, so that they share what it loads
    items = _read_paused(importer.items(paths), opts.batch_size)
    total = importer.count(paths) if opts.progress else None
    opts = replace(
        opts,
        run_id=run.resume_id,
        resume=run.resume_id is not None,
        sources=[str(p) for p in paths],
        extra_config={
            "format": run.trace_format,
            # a list, not keyed by path: a path is never mistaken for a secret's key
            "source_fingerprints": [{"path": str(p), **source_fingerprint(p)} for p in paths],
        },
        total=total,
    )
    return evaluate(items, run.suite, store=store, options=opts)
