"""A distributed run's samples read from its Parquet shards: the same reads as the store's
(:class:`~agentgauge.store.SampleSource`), so that every report and the viewer work on it.

Whole-run reads stream the files in input order with pyarrow, a batch at a time; filtered,
sorted and grouped reads (the viewer's pages, facets, the reasons of missing values) are DuckDB
queries over the files, which read only the columns they need.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from agentgauge.io.jsonl import WARNING, ReadError
from agentgauge.results.dataset import (
    SAMPLE_FIELDS,
    STATS_KEY,
    ResultsFolder,
    iter_table_batches,
    metric_column,
)
from agentgauge.results.summary import StatsBuilder
from agentgauge.store import (
    SAMPLE_COLUMNS,
    Facet,
    MetricRow,
    RunInfo,
    SampleQuery,
    SampleRow,
    StoreError,
)

if TYPE_CHECKING:
    import duckdb

__all__ = ["ParquetSamples"]

_FACETS = ("recommendation", "band", "error_type", "category", "task_id")

_ROW_FIELDS = [f for f in SAMPLE_FIELDS if f != "trace"]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class ParquetSamples:
    """The samples of one distributed run, in its results dataset.

    Args:
        folder: the results dataset.
        run: the run (its suite gives the metrics' order).
    """

    def __init__(self, folder: ResultsFolder, run: RunInfo) -> None:
        self.folder = folder
        self.run = run

    # what the run holds -------------------------------------------------------------------

    def _files(self, dataset: str = "samples") -> list[str]:
        return self.folder.files(dataset, self.run.id)

    @cached_property
    def _metrics(self) -> list[str]:
        import pyarrow.parquet as pq

        files = self._files()
        if not files:
            return []
        fs, _ = self.folder.filesystem()
        with fs.open_input_file(files[0]) as fh:
            names = pq.read_schema(fh).names
        return [n.split(".", 1)[1] for n in names if n.startswith("metric.")]

    def metric_names(self, run_id: str) -> list[str]:
        """The run's metrics, in the order of its suite."""
        return list(self._metrics)

    def count(self, dataset: str = "samples") -> int:
        """How many rows the run's files of ``samples`` or ``read_errors`` hold (from their
        footers: no row is read)."""
        import pyarrow.parquet as pq

        fs, _ = self.folder.filesystem()
        total = 0
        for path in self._files(dataset):
            with fs.open_input_file(path) as fh:
                total += pq.ParquetFile(fh).metadata.num_rows
        return total

    def merged_stats(self) -> StatsBuilder | None:
        """The run's running statistics, merged from its shards' footers (no sample is read);
        None when a shard has none."""
        import pyarrow.parquet as pq

        fs, _ = self.folder.filesystem()
        merged = StatsBuilder()
        for path in self._files():
            with fs.open_input_file(path) as fh:
                kept = (pq.ParquetFile(fh).metadata.metadata or {}).get(STATS_KEY)
            part = None if kept is None else StatsBuilder.from_dict(json.loads(kept))
            if part is None:
                return None
            merged.merge(part)
        return merged

    # streams --------------------------------------------------------------------------------

    def iter_metric(
        self, run_id: str, metric: str, *, ordered: bool = False, chunk: int = 8192
    ) -> Iterator[list[float | None]]:
        """One metric's values, chunk by chunk (always in input order)."""
        if metric not in self._metrics:
            return
        column = metric_column("metric", metric)
        for batch in iter_table_batches(self.folder, "samples", run_id, [column], chunk):
            yield batch.column(0).to_pylist()

    def iter_columns(
        self, run_id: str, columns: Sequence[str], *, ordered: bool = False, chunk: int = 8192
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Columns of the samples, as rows chunk by chunk (always in input order); the names
        are :meth:`Store.iter_columns`'s."""
        wanted = []
        for c in columns:
            if c == "failed":
                wanted.append("error")
            elif c in SAMPLE_COLUMNS or c.startswith("usage."):
                wanted.append(c)
            else:
                raise ValueError(f"not a sample column: {c!r}")
        for batch in iter_table_batches(
            self.folder, "samples", run_id, list(dict.fromkeys(wanted)), chunk
        ):
            values = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            picked = [
                [e is not None for e in values["error"]] if c == "failed" else values[c]
                for c in columns
            ]
            yield list(zip(*picked, strict=True))

    def _row(self, record: dict[str, Any], with_trace: bool) -> SampleRow:
        usage = record["usage"]
        return SampleRow(
            key=record["key"],
            seq=record["seq"],
            source=record["source"],
            line=record["line"],
            trace_id=record["trace_id"],
            task_id=record["task_id"],
            composite=record["composite"],
            coverage=record["coverage"],
            recommendation=record["recommendation"],
            band=record["band"],
            error=record["error"],
            details=json.loads(record["details"]),
            metrics=tuple(
                MetricRow(
                    m,
                    record[metric_column("metric", m)],
                    record[metric_column("reason", m)],
                    record[metric_column("error", m)],
                )
                for m in self._metrics
            ),
            trace_json=record.get("trace") if with_trace else None,
            usage=json.loads(usage) if usage else None,
            category=record["category"],
        )

    def _row_columns(self, with_trace: bool) -> list[str]:
        columns = [*_ROW_FIELDS, *(["trace"] if with_trace else [])]
        for m in self._metrics:
            columns += [metric_column(kind, m) for kind in ("metric", "reason", "error")]
        return columns

    def iter_samples(
        self, run_id: str, *, order: str = "seq", limit: int | None = None, with_trace: bool = False
    ) -> Iterator[SampleRow]:
        """The samples with their metric values: in input order, streamed; ``worst`` (lowest
        composite first, errors first) sorted by DuckDB."""
        columns = self._row_columns(with_trace)
        if order == "worst":
            sql = (
                f"SELECT {', '.join(map(_quoted, columns))} FROM samples "
                "ORDER BY error IS NULL, composite IS NOT NULL, composite, seq"
            )
            if limit is not None:
                sql += f" LIMIT {int(limit)}"
            yield from self._query_rows(sql, (), with_trace)
            return
        if order != "seq":
            raise KeyError(order)
        n = 0
        for batch in iter_table_batches(self.folder, "samples", run_id, columns, 1024):
            for record in batch.to_pylist():
                if limit is not None and n >= limit:
                    return
                n += 1
                yield self._row(record, with_trace)

    # queries ----------------------------------------------------------------------------------

    @cached_property
    def _db(self) -> duckdb.DuckDBPyConnection:
        import duckdb
        import pyarrow.dataset as pads

        fs, _ = self.folder.filesystem()
        db = duckdb.connect()
        # a page or a facet reads a few columns of every row, never holds the run
        db.execute("SET memory_limit = '1GB'")
        for dataset in ("samples", "read_errors"):
            files = self._files(dataset)
            if files:
                db.register(dataset, pads.dataset(files, filesystem=fs, format="parquet"))
            else:
                empty = "source VARCHAR, line BIGINT, field VARCHAR, message VARCHAR"
                if dataset == "samples":
                    empty = "key VARCHAR, seq BIGINT"
                db.execute(f"CREATE TABLE {dataset} ({empty})")
        return db

    def _query_rows(self, sql: str, params: Sequence[Any], with_trace: bool) -> Iterator[SampleRow]:
        if not self._files():
            return
        cursor = self._db.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        while rows := cursor.fetchmany(1024):
            for row in rows:
                yield self._row(dict(zip(names, row, strict=True)), with_trace)

    def get_sample(self, run_id: str, key: str) -> SampleRow:
        """One sample with its trace."""
        columns = ", ".join(map(_quoted, self._row_columns(True)))
        for row in self._query_rows(
            f"SELECT {columns} FROM samples WHERE key = ?", (key,), with_trace=True
        ):
            return row
        raise StoreError(f"{self.folder.uri}: run {run_id} has no sample {key!r}")

    def neighbours(self, run_id: str, seq: int) -> tuple[str | None, str | None]:
        """The keys of the samples before and after position ``seq`` in input order."""
        if not self._files():
            return None, None
        before = self._db.execute(
            "SELECT key FROM samples WHERE seq < ? ORDER BY seq DESC LIMIT 1", [seq]
        ).fetchone()
        after = self._db.execute(
            "SELECT key FROM samples WHERE seq > ? ORDER BY seq LIMIT 1", [seq]
        ).fetchone()
        return (before[0] if before else None, after[0] if after else None)

    def _where(self, query: SampleQuery) -> tuple[str, list[Any]]:
        own, params = query.column_conditions(like="ILIKE")
        clauses = ["TRUE", *own]
        for metric, low, high in query.ranges:
            column = "composite" if metric == "composite" else self._metric_sql(metric)
            clauses.append(f"{column} IS NOT NULL")
            for op, bound in ((">=", low), ("<=", high)):
                if bound is not None:
                    clauses.append(f"{column} {op} ?")
                    params.append(bound)
        return " AND ".join(clauses), params

    def _metric_sql(self, metric: str) -> str:
        if metric not in self._metrics:
            raise StoreError(f"run {self.run.id} has no metric {metric!r}")
        return _quoted(metric_column("metric", metric))

    def query_samples(
        self, run_id: str, query: SampleQuery, *, offset: int = 0, limit: int = 50
    ) -> tuple[int, list[SampleRow]]:
        """One page of the samples, filtered and sorted by DuckDB."""
        if not self._files():
            return 0, []
        where, params = self._where(query)
        total = self._db.execute(f"SELECT COUNT(*) FROM samples WHERE {where}", params).fetchone()
        direction = "DESC" if query.descending else "ASC"
        if query.sort == "seq":
            order = f"seq {direction}"
        else:
            column = "composite" if query.sort == "composite" else self._metric_sql(query.sort)
            order = f"{column} IS NULL, {column} {direction}, seq"
        columns = ", ".join(map(_quoted, self._row_columns(False)))
        sql = f"SELECT {columns} FROM samples WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
        rows = list(self._query_rows(sql, [*params, int(limit), int(offset)], with_trace=False))
        return int(total[0]) if total else 0, rows

    def facet_counts(self, run_id: str, column: str) -> list[Facet]:
        """The values a column takes over the samples, most frequent first."""
        if column not in _FACETS:
            raise ValueError(f"not a sample facet: {column!r}")
        if not self._files():
            return []
        return [
            Facet(*r)
            for r in self._db.execute(
                f"SELECT {column}, COUNT(*), AVG(composite), COUNT(error_type) FROM samples "
                f"WHERE {column} IS NOT NULL GROUP BY {column} ORDER BY COUNT(*) DESC, {column}"
            ).fetchall()
        ]

    def missing_reasons(self, run_id: str, per_metric: int = 5) -> dict[str, list[tuple[str, int]]]:
        """Why metrics had no value: per metric, its most frequent reasons and their counts."""
        if not self._metrics:
            return {}
        parts = []
        for m in self._metrics:
            value, reason, error = (
                _quoted(metric_column(k, m)) for k in ("metric", "reason", "error")
            )
            parts.append(
                f"SELECT ? AS metric, COALESCE({error}, {reason}, 'no reason given') AS why "
                f"FROM samples WHERE {value} IS NULL"
            )
        sql = (
            f"SELECT metric, why, COUNT(*) AS n FROM ({' UNION ALL '.join(parts)}) "
            "GROUP BY metric, why ORDER BY metric, n DESC, why"
        )
        out: dict[str, list[tuple[str, int]]] = {}
        for metric, why, n in self._db.execute(sql, list(self._metrics)).fetchall():
            reasons = out.setdefault(metric, [])
            if len(reasons) < per_metric:
                reasons.append((why, int(n)))
        return out

    def read_errors(
        self, run_id: str, limit: int | None = None, *, warnings: bool | None = None
    ) -> list[ReadError]:
        """The bad input lines, in file and line order (only the warnings, or only the errors,
        as :meth:`Store.read_errors` says)."""
        if not self._files("read_errors"):
            return []
        where, args = "", []
        if warnings is not None:
            where = " WHERE message LIKE ?" if warnings else " WHERE message NOT LIKE ?"
            args.append(WARNING + "%")
        sql = f"SELECT source, line, field, message FROM read_errors{where} ORDER BY source, line"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [ReadError(*r) for r in self._db.execute(sql, args).fetchall()]
