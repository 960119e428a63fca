"""The ``ray`` executor: evaluation on a Ray cluster.

Files (:func:`agentgauge.engine.evaluate_files`) are evaluated where they lie: the driver lists
them and cuts them into shards (:mod:`~agentgauge.results.shards`); Ray Data hands the shards
to a pool of scoring actors, one CPU each, spread over the cluster's nodes; each actor reads its
shard, scores it with the suite's metrics (built once per actor) and writes the shard's samples
as Parquet into the run's results folder (:mod:`~agentgauge.results.dataset`). The driver only
counts finished shards: no sample passes through it. When the shards are done, the run's
summary is streamed from the Parquet files (:mod:`~agentgauge.results.summary`) and registered
with the run in the SQLite store, with the run's place, so that every command reads the run.

A stream of traces given to :func:`agentgauge.engine.evaluate` (the Python API) is scored by
Ray tasks batch by batch instead, into the store.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np

from agentgauge.config import Suite
from agentgauge.engine import (
    Batch,
    BatchRunner,
    EngineError,
    EvaluateOptions,
    FileRun,
    Outcome,
    checked_metrics,
    executor,
    progress_bar,
    score_batch,
)
from agentgauge.metrics.base import Metric
from agentgauge.results.dataset import ResultsFolder, ShardWriter
from agentgauge.results.parquet import ParquetSamples
from agentgauge.results.shards import (
    InputFile,
    Shard,
    inspect_file,
    list_inputs,
    plan_shards,
    shard_items,
)
from agentgauge.results.summary import compute_stats
from agentgauge.store import RunInfo, Store

__all__ = ["RAY_CONNECT_TIMEOUT_S", "RayExecutor", "connect_ray", "score_shard"]

RAY_CONNECT_TIMEOUT_S = 10.0
"""How long a Ray cluster's address is tried before the run gives up."""


def connect_ray(address: str | None, n_cpus: int) -> tuple[Any, bool]:
    """Join the Ray cluster at ``address`` (else ``RAY_ADDRESS``), or start a local one with
    ``n_cpus`` CPUs when neither is given; a process already connected stays connected.

    Args:
        address: the cluster's address (``HOST:PORT``, ``ray://HOST:PORT``, ``auto``).
        n_cpus: the CPUs of a local cluster started here.

    Returns:
        The ``ray`` module and whether the connection was made here (to close it after).

    Raises:
        EngineError: the 'ray' extra is missing, or the cluster cannot be reached (in one
            line, within seconds: Ray itself retries for minutes).
    """
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        _check_reachable(address)  # before Ray is imported: seconds saved on a typo
    try:
        import ray
    except ImportError as exc:
        raise EngineError(
            "the ray executor needs the 'ray' extra: pip install 'agentgauge[ray]'"
        ) from exc
    if ray.is_initialized():
        return ray, False
    local: dict[str, Any] = {}
    if address is None:
        # a cluster started here stays on this machine and reports nothing anywhere
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        local = {"num_cpus": n_cpus, "_node_ip_address": "127.0.0.1", "include_dashboard": False}
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False, **local)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise EngineError(f"cannot connect to the Ray cluster at {address}: {first}") from None
    return ray, True


def _require_extra() -> None:
    """The libraries of the 'ray' extra, or one line saying how to install them."""
    if any(importlib.util.find_spec(name) is None for name in ("ray", "pyarrow", "duckdb")):
        raise EngineError("the ray executor needs the 'ray' extra: pip install 'agentgauge[ray]'")


def _check_reachable(address: str) -> None:
    """Fail at once on a cluster address nothing listens at (a typo, a cluster not started):
    Ray's own client would retry for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # ``auto`` and the like: Ray finds the cluster, or says it cannot, quickly
    try:
        with socket.create_connection((host.strip("[]"), int(port)), RAY_CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise EngineError(
            f"cannot connect to the Ray cluster at {address}: {reason} (is it started? check "
            "--ray-address or RAY_ADDRESS)"
        ) from None


# scoring a shard ----------------------------------------------------------------------------


def score_shard(
    shard: Shard,
    suite: Suite,
    metrics: Sequence[Metric],
    folder: ResultsFolder,
    run_id: str,
    batch_size: int,
) -> tuple[int, int]:
    """Read, score and write one shard (in a worker); returns its samples and read errors.

    Args:
        shard: the shard.
        suite: the run's suite.
        metrics: its metrics, built.
        folder: the run's results dataset.
        run_id: the run.
        batch_size: items scored together (a row group of the shard's file).
    """
    writer = ShardWriter(folder, run_id, shard.name, [m.name for m in metrics])
    try:
        batch: Batch = []
        for entry in shard_items(shard):
            batch.append(entry)
            if len(batch) >= batch_size:
                writer.write(score_batch(batch, suite, metrics, compress=False))
                batch = []
        if batch:
            writer.write(score_batch(batch, suite, metrics, compress=False))
        writer.commit()
    except BaseException:
        with suppress(OSError):
            writer.abort()
        raise
    return writer.n_samples, writer.n_errors


class _ShardScorer:
    """A Ray Data actor: builds the suite's metrics once, then scores the shards it is given."""

    def __init__(self, suite_json: str, results: str, run_id: str, batch_size: int) -> None:
        self._suite = Suite.model_validate_json(suite_json)
        self._metrics = self._suite.build_metrics()
        self._folder = ResultsFolder(results)
        self._run_id = run_id
        self._batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, list[Any]]:
        names, samples, errors = [], [], []
        for text in batch["shard"]:
            shard = Shard.from_json(str(text))
            n, e = score_shard(
                shard, self._suite, self._metrics, self._folder, self._run_id, self._batch_size
            )
            names.append(shard.name)
            samples.append(n)
            errors.append(e)
        return {"shard": names, "samples": samples, "errors": errors}


# the driver -----------------------------------------------------------------------------------


def _results_folder(store: Store, options: EvaluateOptions) -> ResultsFolder:
    if options.results:
        return ResultsFolder(options.results)
    if store.path == ":memory:":
        raise EngineError(
            "a distributed run keeps its samples in a results folder: give one (--results), "
            "or a store file beside which it goes"
        )
    db = Path(store.path)
    return ResultsFolder(str(db.with_name(f"{db.stem}-results")))


def _fingerprints(files: Sequence[InputFile]) -> list[dict[str, Any]]:
    return [f.as_dict() for f in files]


def _check_unchanged(run: RunInfo, files: Sequence[InputFile]) -> None:
    before = {f["source"]: f for f in run.config.get("files", [])}
    for f in files:
        was = before.get(f.source)
        if was is not None and (was["size"], was["mtime_ns"]) != (f.size, f.mtime_ns):
            raise EngineError(
                f"{f.source} changed since run {run.id} began (its size or time differ): "
                "resuming would pair the stored shards with other lines; start a new run, or "
                "resume with --force to continue knowingly"
            )


def _inspect_on_cluster(ray: Any, shard_bytes: int) -> Any:
    task = ray.remote(num_cpus=1)(inspect_file)

    def inspect(needs: Sequence[tuple[InputFile, str]]) -> list[list[dict[str, Any]]]:
        parts: list[list[dict[str, Any]]] = ray.get(
            [task.remote(f, kind, shard_bytes) for f, kind in needs]
        )
        return parts

    return inspect


def _quiet_ray_data(ray: Any) -> Any:
    """Ray Data's context with its own progress bars off (the run shows one)."""
    import logging

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    return context


def run_on_cluster(run: FileRun, *, store: Store, options: EvaluateOptions) -> str:
    """Evaluate files on a Ray cluster into a results dataset; the run is registered in the
    store with its place and, when every shard is done, its summary.

    Args:
        run: the suite, the files (paths, glob patterns or URIs), their format and the run to
            continue, if any.
        store: the store that registers the run.
        options: ``jobs`` (scoring actors; default: the cluster's CPUs), ``ray_address``,
            ``results``, ``shard_bytes``, ``batch_size``, ``progress``.

    Returns:
        The run id.

    Raises:
        EngineError: a cluster that cannot be reached, an input that names no file, a file
            changed since a resumed run began, a judge with a budget.
    """
    _require_extra()
    suite = run.suite
    judge = suite.judge
    if judge is not None and (judge.max_calls is not None or judge.max_cost_usd is not None):
        raise EngineError(
            "a judge's budget (max_calls, max_cost_usd) is counted in one process: run this "
            "suite with --executor local"
        )
    resumed = store.get_run(run.resume_id) if run.resume_id else None
    if resumed is not None and resumed.place is not None:
        folder = ResultsFolder(resumed.place)
    else:
        folder = _results_folder(store, options)
    files = list_inputs([str(s) for s in run.sources])
    if resumed is not None and not run.force:
        _check_unchanged(resumed, files)
    ray, started_here = connect_ray(options.ray_address, options.jobs or os.cpu_count() or 1)
    try:
        checked_metrics(suite)  # a judge without its key, a bad option: before any shard
        return _run(ray, run, files, folder, resumed, store, options)
    finally:
        if started_here:
            ray.shutdown()


def _run(
    ray: Any,
    run: FileRun,
    files: list[InputFile],
    folder: ResultsFolder,
    resumed: RunInfo | None,
    store: Store,
    options: EvaluateOptions,
) -> str:
    shard_bytes = int((resumed.config if resumed else {}).get("shard_bytes", options.shard_bytes))
    shards = plan_shards(
        files, run.trace_format, shard_bytes, _inspect_on_cluster(ray, shard_bytes)
    )
    if resumed is None:
        run_id = store.create_run(
            kind="evaluate",
            suite=run.suite.name,
            config={
                "suite": run.suite.model_dump(mode="json"),
                "format": run.trace_format,
                "executor": "ray",
                "results": folder.uri,
                "shard_bytes": shard_bytes,
                # a list, not keyed by path: a path is never mistaken for a secret's key
                "files": _fingerprints(files),
            },
            sources=[f.source for f in files],
            place=folder.uri,
        )
    else:
        run_id = resumed.id
        store.reopen_run(run_id)
    run_info = store.get_run(run_id)
    source = ParquetSamples(folder, run_info)
    folder.remove_partial(run_id)
    done = folder.done_shards(run_id)
    todo = [s for s in shards if s.name not in done]
    counts = {"shards": len(shards), "shards_done": len(shards) - len(todo)}
    counts.update(samples=source.count("samples"), read_errors=source.count("read_errors"))
    store.save_summary(run_id, {"counts": counts})
    try:
        _score_shards(ray, run, todo, folder, run_id, store, options, counts)
    except BaseException as exc:
        if not isinstance(exc, KeyboardInterrupt):
            with suppress(sqlite3.Error, OSError):
                store.finish_run(run_id, "failed")
        raise
    stats = compute_stats(source, run_id, source.merged_stats())
    store.save_summary(run_id, {"counts": counts, "stats": stats.as_dict()})
    store.finish_run(run_id)
    return run_id


def _score_shards(
    ray: Any,
    run: FileRun,
    todo: list[Shard],
    folder: ResultsFolder,
    run_id: str,
    store: Store,
    options: EvaluateOptions,
    counts: dict[str, int],
) -> None:
    if not todo:
        return
    _quiet_ray_data(ray)
    actors = options.jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
    actors = min(actors, len(todo))
    dataset = ray.data.from_items(
        [{"shard": s.to_json()} for s in todo], override_num_blocks=len(todo)
    ).map_batches(
        _ShardScorer,
        fn_constructor_kwargs={
            "suite_json": run.suite.model_dump_json(),
            "results": folder.uri,
            "run_id": run_id,
            "batch_size": options.batch_size,
        },
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=1,
        # a lost actor is not restarted: the run stops, and its resume redoes that shard only
        max_restarts=0,
    )
    saved = time.monotonic()
    with progress_bar(options.progress, counts["shards"], "scoring shards") as advance:
        advance(counts["shards_done"])
        for receipt in dataset.iter_rows():
            counts["shards_done"] += 1
            counts["samples"] += int(receipt["samples"])
            counts["read_errors"] += int(receipt["errors"])
            advance(1)
            if time.monotonic() - saved > 1.0:  # the counts that `runs` shows, as they grow
                store.save_summary(run_id, {"counts": counts})
                saved = time.monotonic()
    store.save_summary(run_id, {"counts": counts})


# Python streams ---------------------------------------------------------------------------


def _score_batch_on_ray(batch: Batch, suite_json: str) -> Outcome:
    """A Ray task; a worker process builds the suite's metrics at its first batch only
    (:meth:`Suite.build_metrics` keeps them)."""
    suite = Suite.model_validate_json(suite_json)
    return score_batch(batch, suite, suite.build_metrics())


class _RayRunner:
    """Ray tasks on an existing cluster (``address``) or a local one started here."""

    def __init__(self, suite: Suite, n_jobs: int, address: str | None) -> None:
        self._ray, self._started_here = connect_ray(address, n_jobs)
        self._task = self._ray.remote(_score_batch_on_ray)
        self._suite_ref = self._ray.put(suite.model_dump_json())
        self._max_pending = 2 * n_jobs

    def run(self, batches: Iterator[Batch]) -> Iterator[Outcome]:
        ray = self._ray
        pending: list[Any] = []
        for batch in batches:
            pending.append(self._task.remote(batch, self._suite_ref))
            if len(pending) >= self._max_pending:
                finished, pending = ray.wait(pending, num_returns=1)
                yield from ray.get(finished)
        while pending:
            finished, pending = ray.wait(pending, num_returns=1)
            yield from ray.get(finished)

    def close(self, wait: bool = True) -> None:
        if self._started_here:
            self._ray.shutdown()


class RayExecutor:
    """A Ray cluster (RAY_ADDRESS, --ray-address) or a local one: files read, scored and
    written as Parquet by its workers (the 'ray' extra)."""

    def __call__(
        self, suite: Suite, metrics: Sequence[Metric], *, jobs: int, address: str | None
    ) -> BatchRunner:
        """Ray tasks scoring the batches of a stream of traces, into the store."""
        return _RayRunner(suite, jobs, address)

    def evaluate_files(self, run: FileRun, *, store: Store, options: EvaluateOptions) -> str:
        """Files evaluated on the cluster (:func:`run_on_cluster`)."""
        return run_on_cluster(run, store=store, options=options)


executor(
    "ray",
    description="a Ray cluster (RAY_ADDRESS, --ray-address) or a local one; files are read, "
    "scored and written as Parquet by its workers (the 'ray' extra)",
)(RayExecutor())
