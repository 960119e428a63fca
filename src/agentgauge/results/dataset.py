"""A results dataset: the Parquet shards of distributed runs, partitioned by run.

Layout under the results folder (a local folder, or any URI pyarrow opens: ``s3://``,
``gs://``, ``hdfs://``, ``file://``)::

    samples/run=<RUN_ID>/part-<ORDINAL>-<DIGEST>.parquet      one file per input shard
    read_errors/run=<RUN_ID>/part-<ORDINAL>-<DIGEST>.parquet  its unreadable lines, if any

A worker writes a shard's files under a temporary name and renames them when the shard is
complete, the samples file last: a shard is done when its samples file exists, so a killed run
resumes shard by shard, never repeating or losing one. The ordinal orders the shards as the
input is ordered (files in the order given, each file's shards by offset), so reading the
files in name order and their rows in file order reads the samples in input order.

One row per sample: the store's sample columns (the same text, redacted the same way), the
trace as JSON, the agent's usage figures as typed columns, and per metric of the run's suite
``metric.<NAME>`` (its value), ``reason.<NAME>`` and ``error.<NAME>``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentgauge.results.summary import USAGE_FIELDS, StatsBuilder
from agentgauge.store import PreparedBatch

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

__all__ = [
    "ERROR_COLUMNS",
    "SAMPLE_FIELDS",
    "STATS_KEY",
    "ResultsFolder",
    "ShardWriter",
    "error_schema",
    "metric_column",
    "sample_schema",
]

SAMPLE_FIELDS = (
    "key",
    "seq",
    "source",
    "line",
    "trace_id",
    "task_id",
    "composite",
    "coverage",
    "recommendation",
    "band",
    "error",
    "details",
    "trace",
    "usage",
    "category",
    "error_type",
)
"""The store's sample columns, in the order of a prepared batch's rows."""

_INTEGER_USAGE = frozenset(USAGE_FIELDS) - {"cost_usd"}

STATS_KEY = b"agentgauge.stats"
"""The key, in a samples file's footer, of its samples' running statistics
(:class:`~agentgauge.results.summary.StatsBuilder`): the run's summary merges them."""

ERROR_COLUMNS = ("source", "line", "field", "message")
"""The columns of a read error."""


def metric_column(kind: str, metric: str) -> str:
    """The column of a metric's ``metric`` (value), ``reason`` or ``error``.

    Args:
        kind: ``metric``, ``reason`` or ``error``.
        metric: the metric's name.
    """
    return f"{kind}.{metric}"


def _arrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ImportError as exc:
        from agentgauge.errors import AgentgaugeError

        raise AgentgaugeError(
            "distributed runs keep their results in Parquet: pip install 'agentgauge[ray]'"
        ) from exc
    return pa


def sample_schema(metrics: Sequence[str]) -> pa.Schema:
    """The schema of a run's samples files.

    Args:
        metrics: the run's metrics, in the order of its suite.
    """
    pa = _arrow()
    text, integer, number = pa.string(), pa.int64(), pa.float64()
    types = {"seq": integer, "line": integer, "composite": number, "coverage": number}
    fields = [
        pa.field(name, pa.binary() if name == "trace" else types.get(name, text))
        for name in SAMPLE_FIELDS
    ]
    fields += [
        pa.field(f"usage.{name}", integer if name in _INTEGER_USAGE else number)
        for name in USAGE_FIELDS
    ]
    fields.append(pa.field("usage.judge", text))
    for metric in metrics:
        fields += [
            pa.field(metric_column("metric", metric), number),
            pa.field(metric_column("reason", metric), text),
            pa.field(metric_column("error", metric), text),
        ]
    return pa.schema(fields)


def error_schema() -> pa.Schema:
    """The schema of a run's read-errors files."""
    pa = _arrow()
    return pa.schema(
        [
            pa.field("source", pa.string()),
            pa.field("line", pa.int64()),
            pa.field("field", pa.string()),
            pa.field("message", pa.string()),
        ]
    )


def _usage_value(usage: dict[str, Any] | None, name: str) -> Any:
    value = None if usage is None else usage.get(name)
    if value is None:
        return None
    if name in _INTEGER_USAGE:
        return int(value)
    return float(value)


def _sample_columns(batch: PreparedBatch, metrics: Sequence[str]) -> dict[str, list[Any]]:
    """A prepared batch's samples as columns of :func:`sample_schema`."""
    columns: dict[str, list[Any]] = {
        name: [row[i] for row in batch.samples] for i, name in enumerate(SAMPLE_FIELDS)
    }
    usages = [None if text is None else json.loads(text) for text in columns["usage"]]
    for name in USAGE_FIELDS:
        columns[f"usage.{name}"] = [_usage_value(u, name) for u in usages]
    columns["usage.judge"] = [
        None if not u or not u.get("judge") else json.dumps(u["judge"]) for u in usages
    ]
    # metric values, each sample's (:class:`~agentgauge.store.SampleValues`)
    index = {key: i for i, key in enumerate(columns["key"])}
    n = len(batch.samples)
    for metric in metrics:
        for kind in ("metric", "reason", "error"):
            columns[metric_column(kind, metric)] = [None] * n
    known = set(metrics)
    for sample in batch.metric_values:
        i = index[sample.key]
        for metric, value, reason, error in sample.rows():
            if metric in known:
                columns[metric_column("metric", metric)][i] = value
                columns[metric_column("reason", metric)][i] = reason
                columns[metric_column("error", metric)][i] = error
    return columns


@dataclass(frozen=True)
class ResultsFolder:
    """A results dataset's root: its filesystem and the path on it.

    Args:
        uri: the folder as the user gave it (a path or a URI), recorded with the runs.
    """

    uri: str

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """The pyarrow filesystem and the root's path on it."""
        _arrow()
        import pyarrow.fs as pafs

        if "://" in self.uri:
            fs, path = pafs.FileSystem.from_uri(self.uri)
            return fs, path.rstrip("/")
        from pathlib import Path

        return pafs.LocalFileSystem(), str(Path(self.uri).resolve())

    def run_folder(self, dataset: str, run_id: str) -> str:
        """The folder of one run's files of ``samples`` or ``read_errors``."""
        _, root = self.filesystem()
        return f"{root}/{dataset}/run={run_id}"

    def files(self, dataset: str, run_id: str) -> list[str]:
        """The complete shard files of a run, in input order (the shards' ordinals)."""
        import pyarrow.fs as pafs

        fs, _ = self.filesystem()
        selector = pafs.FileSelector(self.run_folder(dataset, run_id), allow_not_found=True)
        names = [
            info.path
            for info in fs.get_file_info(selector)
            if info.type == pafs.FileType.File
            and info.base_name.startswith("part-")
            and info.base_name.endswith(".parquet")
        ]
        return sorted(names)

    def done_shards(self, run_id: str) -> set[str]:
        """The names (``part-<ORDINAL>-<DIGEST>``) of a run's complete shards."""
        return {
            path.rsplit("/", 1)[1].removesuffix(".parquet")
            for path in self.files("samples", run_id)
        }

    def remove_partial(self, run_id: str) -> None:
        """Delete what a killed run left half-written (temporary files)."""
        import pyarrow.fs as pafs

        fs, _ = self.filesystem()
        for dataset in ("samples", "read_errors"):
            selector = pafs.FileSelector(self.run_folder(dataset, run_id), allow_not_found=True)
            for info in fs.get_file_info(selector):
                if info.base_name.startswith(".tmp-"):
                    fs.delete_file(info.path)

    def remove_run(self, run_id: str) -> None:
        """Delete a run's files."""
        fs, _ = self.filesystem()
        for dataset in ("samples", "read_errors"):
            folder = self.run_folder(dataset, run_id)
            if fs.get_file_info(folder).type.name == "Directory":
                fs.delete_dir(folder)


class ShardWriter:
    """Writes one shard of a run: its samples (row group by row group, as batches are scored)
    and its read errors, each under a temporary name until :meth:`commit`.

    Args:
        folder: the results dataset.
        run_id: the run.
        shard: the shard's name (``part-<ORDINAL>-<DIGEST>``).
        metrics: the run's metrics, in the order of its suite.
    """

    def __init__(
        self, folder: ResultsFolder, run_id: str, shard: str, metrics: Sequence[str]
    ) -> None:
        self._fs, _ = folder.filesystem()
        self._folder, self._run_id, self._shard = folder, run_id, shard
        self._metrics = list(metrics)
        self._schema = sample_schema(metrics)
        self._temporary = f".tmp-{uuid.uuid4().hex}-{shard}.parquet"
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._stats = StatsBuilder()
        self.n_samples = 0
        self.n_errors = 0

    def _writer(self, dataset: str) -> pq.ParquetWriter:
        import pyarrow.parquet as pq

        if dataset not in self._writers:
            folder = self._folder.run_folder(dataset, self._run_id)
            self._fs.create_dir(folder, recursive=True)
            schema = self._schema if dataset == "samples" else error_schema()
            self._writers[dataset] = pq.ParquetWriter(
                f"{folder}/{self._temporary}", schema, filesystem=self._fs, compression="zstd"
            )
        return self._writers[dataset]

    def write(self, batch: PreparedBatch) -> None:
        """Write a scored batch (:func:`~agentgauge.store.prepare_batch`; traces not compressed:
        Parquet compresses its columns)."""
        pa = _arrow()
        if batch.samples:
            columns = _sample_columns(batch, self._metrics)
            for metric in self._metrics:
                self._stats.add_metric(metric, columns[metric_column("metric", metric)])
            failed = [error is not None for error in columns["error"]]
            values = {**columns, "failed": failed}
            self._stats.add_rows(
                list(zip(*(values[c] for c in StatsBuilder.ROW_COLUMNS), strict=True))
            )
            table = pa.Table.from_pydict(columns, schema=self._schema)
            self._writer("samples").write_table(table)
            self.n_samples += len(batch.samples)
        if batch.errors:
            errors = {name: [e[i] for e in batch.errors] for i, name in enumerate(ERROR_COLUMNS)}
            self._writer("read_errors").write_table(
                pa.Table.from_pydict(errors, schema=error_schema())
            )
            self.n_errors += len(batch.errors)

    def commit(self) -> None:
        """Close the files and give them their final names, the samples file last (its name
        marks the shard done); a shard without samples still gets an (empty) samples file."""
        self._writer("samples").add_key_value_metadata(
            {STATS_KEY: json.dumps(self._stats.as_dict())}
        )
        for dataset in ("read_errors", "samples"):
            writer = self._writers.pop(dataset, None)
            if writer is None:
                continue
            writer.close()
            folder = self._folder.run_folder(dataset, self._run_id)
            self._fs.move(f"{folder}/{self._temporary}", f"{folder}/{self._shard}.parquet")

    def abort(self) -> None:
        """Close and delete what was written."""
        for dataset, writer in list(self._writers.items()):
            writer.close()
            folder = self._folder.run_folder(dataset, self._run_id)
            self._fs.delete_file(f"{folder}/{self._temporary}")
        self._writers.clear()


def iter_table_batches(
    folder: ResultsFolder, dataset: str, run_id: str, columns: Sequence[str], chunk: int
) -> Iterator[pa.RecordBatch]:
    """Some columns of a run's files, batch by batch, in input order.

    Args:
        folder: the results dataset.
        dataset: ``samples`` or ``read_errors``.
        run_id: the run.
        columns: the columns to read.
        chunk: rows per batch at most.
    """
    import pyarrow.parquet as pq

    fs, _ = folder.filesystem()
    for path in folder.files(dataset, run_id):
        with fs.open_input_file(path) as fh:
            yield from pq.ParquetFile(fh).iter_batches(batch_size=chunk, columns=list(columns))
