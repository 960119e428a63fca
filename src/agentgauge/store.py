"""The results store: one SQLite file (stdlib ``sqlite3``, WAL mode), versioned schema.

Tables: ``runs`` (kind, suite, full config minus secrets, status), ``samples`` (one row per
scored trace, with its composite, verdict, tokens and cost, task category, error type and the
trace itself compressed), ``sample_metrics`` (a sample's metric values in one row, each metric
in the place ``run_metrics`` gives it in its run), ``read_errors``
(bad input lines), ``records`` (ordered JSON records that a domain attaches to a run, such as
a tuning history), ``judge_cache``, ``embedding_cache`` and
``bertscore_cache``.
Every batch is committed as one transaction, so a killed run loses at most the batch in
flight and ``--resume`` continues from the rest.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from operator import itemgetter
from pathlib import Path, PurePath
from typing import Any, NamedTuple, Protocol, overload

from isal import isal_zlib

from agentgauge._redact import hide_credentials, redact_json, redact_secrets
from agentgauge._safe import (
    DecodeError,
    dumps,
    guarded,
    loads,
    may_hold_surrogate,
    storable_text,
    without_surrogates,
)
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import WARNING, ReadError
from agentgauge.model import Trace
from agentgauge.scoring import Thresholds

__all__ = [
    "BERTSCORE_CACHE_SCHEMA",
    "JUDGE_CACHE_SCHEMA",
    "SAMPLE_COLUMNS",
    "SCHEMA_VERSION",
    "CacheFile",
    "Facet",
    "MetricRow",
    "PreparedBatch",
    "RunInfo",
    "SampleQuery",
    "SampleRow",
    "SampleSource",
    "SampleValues",
    "Store",
    "StoreError",
    "prepare_batch",
    "redact_secrets",
]

SCHEMA_VERSION = 9

JUDGE_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    output TEXT NOT NULL,
    usage TEXT,
    created_at TEXT NOT NULL
)
"""
"""The judge cache's table (:class:`agentgauge.judges.cache.JudgeCache`): part of the store's
schema, so that one file holds both, and created on its own by a judge that runs without a
store."""

BERTSCORE_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding_cache (
    model TEXT NOT NULL,
    layer INTEGER NOT NULL,
    text_hash BLOB NOT NULL,
    token_ids BLOB NOT NULL,
    vectors BLOB NOT NULL,
    PRIMARY KEY (model, layer, text_hash)
);
CREATE TABLE IF NOT EXISTS bertscore_cache (
    key BLOB PRIMARY KEY,
    precision REAL NOT NULL,
    recall REAL NOT NULL,
    f1 REAL NOT NULL
) WITHOUT ROWID
"""
"""What BERTScore already computed: token embeddings by model, layer and the text's digest
(:meth:`Store.cached_embeddings`), and the scores of (candidate, reference) pairs by a digest
of the model, layer, texts and weights (:meth:`Store.cached_scores`). A rerun over the same
texts runs no model, and over the same pairs computes nothing."""

_VALUE_COLUMNS = 16
"""The metric values a row of ``sample_metrics`` holds: metric ``position`` of a run (its order
of first appearance) is column ``v{position % 16}`` of the sample's row ``position // 16``; bit
``position % 16`` of the row's ``present`` says the sample has a value (None or a number) for it;
``notes`` holds the reasons and errors (JSON: metric -> ``[reason, error]``, None when none)."""

_FIRST_SAMPLE_COLUMNS = """        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        source TEXT,
        line INTEGER,
        trace_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        composite REAL,
        coverage REAL NOT NULL,
        recommendation TEXT,
        band TEXT,
        error TEXT,
        details TEXT NOT NULL,
        trace BLOB,"""
"""The columns of the samples table as it was first made (later versions add more)."""

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        suite TEXT NOT NULL,
        config TEXT NOT NULL,
        sources TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE TABLE samples (
"""
    + _FIRST_SAMPLE_COLUMNS
    + """
        PRIMARY KEY (run_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX samples_seq ON samples(run_id, seq);
    CREATE TABLE metric_values (
        run_id TEXT NOT NULL,
        sample_key TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL,
        reason TEXT,
        error TEXT,
        PRIMARY KEY (run_id, metric, sample_key)
    ) WITHOUT ROWID;
    CREATE TABLE read_errors (
        run_id TEXT NOT NULL,
        source TEXT NOT NULL,
        line INTEGER NOT NULL,
        field TEXT,
        message TEXT NOT NULL,
        PRIMARY KEY (run_id, source, line)
    ) WITHOUT ROWID;
    CREATE TABLE records (
        run_id TEXT NOT NULL,
        stream TEXT NOT NULL,
        seq INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (run_id, stream, seq)
    ) WITHOUT ROWID;
    """
    + JUDGE_CACHE_SCHEMA
    + ";",
    # a sample's metric values are read by sample: without this index every read scanned the
    # whole run (quadratic summaries and exports)
    2: "CREATE INDEX metric_values_by_sample ON metric_values(run_id, sample_key)",
    # a sample's tokens and cost (the agent's and the judges'), as JSON
    3: "ALTER TABLE samples ADD COLUMN usage TEXT",
    # the viewer filters and sorts a run's samples by these, server-side (100,000 samples and
    # more); samples stored before keep their error type, read from their details
    4: """
    ALTER TABLE samples ADD COLUMN category TEXT;
    ALTER TABLE samples ADD COLUMN error_type TEXT;
    UPDATE samples SET error_type = (
        SELECT e FROM (
            SELECT json_extract(CASE WHEN d.type = 'object' THEN d.value END, '$.error_type') AS e
            FROM json_each(samples.details) AS d
        ) WHERE e IS NOT NULL LIMIT 1
    );
    -- every column a filter, a sort, a facet or a summary reads, in one index: a run's rows
    -- hold its traces, and scanning those for 100,000 samples takes seconds
    CREATE INDEX samples_view ON samples(
        run_id, seq, composite, coverage, category, recommendation, band, error_type, task_id,
        trace_id
    );
    CREATE INDEX samples_failed ON samples(run_id) WHERE error IS NOT NULL;
    """,
    5: BERTSCORE_CACHE_SCHEMA,
    # samples become a rowid table: a row holds a trace and its details (kilobytes), which a
    # table clustered on its text key keeps few to a page and splits often; writing a sample
    # took twice as long. The (run_id, seq) index goes: samples_view begins with it, and it ends
    # with the key, which a rowid table's index does not hold by itself (a page of keys is read
    # from the index alone).
    6: """
    CREATE TABLE samples_by_rowid (
"""
    + _FIRST_SAMPLE_COLUMNS
    + """
        usage TEXT,
        category TEXT,
        error_type TEXT,
        UNIQUE (run_id, key)
    );
    INSERT INTO samples_by_rowid (run_id, key, seq, source, line, trace_id, task_id, composite,
        coverage, recommendation, band, error, details, trace, usage, category, error_type)
    SELECT run_id, key, seq, source, line, trace_id, task_id, composite, coverage,
        recommendation, band, error, details, trace, usage, category, error_type
    FROM samples ORDER BY run_id, seq;
    DROP TABLE samples;
    ALTER TABLE samples_by_rowid RENAME TO samples;
    CREATE INDEX samples_view ON samples(
        run_id, seq, composite, coverage, category, recommendation, band, error_type, task_id,
        trace_id, key
    );
    CREATE INDEX samples_failed ON samples(run_id) WHERE error IS NOT NULL;
    """,
    # where a run's samples are when not in this file (a distributed run's Parquet results
    # dataset), and the run's summary, kept once the run is finished so that listing and
    # showing it reads no sample
    7: """
    ALTER TABLE runs ADD COLUMN place TEXT;
    ALTER TABLE runs ADD COLUMN summary TEXT;
    """,
    # a sample's metric values are read by their primary key, a page of samples at a time:
    # the index cost a second B-tree insert per value written, a quarter of a batch's writing
    8: "DROP INDEX IF EXISTS metric_values_by_sample",
    # a sample's metric values in one row (:data:`_VALUE_COLUMNS` of them a row, by the place
    # the run gave each metric), not one row each: writing a batch inserted seven rows per
    # sample for the behaviour suite, half of the time a batch took to write
    9: f"""
    CREATE TABLE run_metrics (
        run_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (run_id, metric)
    ) WITHOUT ROWID;
    CREATE TABLE sample_metrics (
        run_id TEXT NOT NULL,
        part INTEGER NOT NULL,
        sample_key TEXT NOT NULL,
        present INTEGER NOT NULL,
        {", ".join(f"v{i} REAL" for i in range(_VALUE_COLUMNS))},
        notes TEXT,
        PRIMARY KEY (run_id, part, sample_key)
    ) WITHOUT ROWID;
    INSERT INTO run_metrics
    SELECT run_id, metric, ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY metric) - 1
    FROM (SELECT DISTINCT run_id, metric FROM metric_values);
    INSERT INTO sample_metrics
    SELECT v.run_id, m.position / {_VALUE_COLUMNS}, v.sample_key,
        SUM(1 << (m.position % {_VALUE_COLUMNS})),
        {
        ", ".join(
            f"MAX(CASE WHEN m.position % {_VALUE_COLUMNS} = {i} THEN v.value END)"
            for i in range(_VALUE_COLUMNS)
        )
    },
        NULLIF(json_group_object(v.metric, json_array(v.reason, v.error))
            FILTER (WHERE v.reason IS NOT NULL OR v.error IS NOT NULL), '{{}}')
    FROM metric_values AS v JOIN run_metrics AS m ON m.run_id = v.run_id AND m.metric = v.metric
    GROUP BY v.run_id, m.position / {_VALUE_COLUMNS}, v.sample_key;
    DROP TABLE metric_values;
    """,
}


_NO_VALUES = (None,) * _VALUE_COLUMNS
_SAMPLE_COLUMNS_WRITTEN = (
    "run_id, key, seq, source, line, trace_id, task_id, composite, coverage, recommendation, "
    "band, error, details, trace, usage, category, error_type"
).split(", ")
_VALUE_COLUMNS_WRITTEN = (
    "run_id",
    "part",
    "sample_key",
    "present",
    *(f"v{i}" for i in range(_VALUE_COLUMNS)),
    "notes",
)
_PAGE_SIZE = 8192
_SAMPLES_PAGE = 256  # samples read at a time, whose metric values are read together
_SQL_VARIABLES = 500  # bound parameters per statement, well under SQLite's limit
_WARNING_LIKE = WARNING + "%"  # a read error that is a warning (the line was read)


def _statements(script: str) -> Iterator[str]:
    """The statements of an SQL script, one by one (to run them inside one transaction)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending
            pending = ""
    if pending.strip():
        yield pending


class StoreError(AgentgaugeError, RuntimeError):
    """A store that cannot be opened or a run that does not exist."""


@dataclass(frozen=True)
class RunInfo:
    """A run's row in the store."""

    id: str
    kind: str
    suite: str
    config: dict[str, Any]
    sources: list[str]
    status: str
    created_at: str
    finished_at: str | None
    n_samples: int
    n_errors: int
    place: str | None = None
    summary: dict[str, Any] | None = None

    @property
    def name(self) -> str | None:
        """The name the run was given (``--name``), if any."""
        name = self.config.get("name")
        return name if isinstance(name, str) else None

    @property
    def tags(self) -> list[str]:
        """The tags the run was given (``--tag``)."""
        tags = self.config.get("tags")
        return [str(t) for t in tags] if isinstance(tags, list) else []

    @property
    def model(self) -> str | None:
        """The model the run used, when its configuration names one."""
        return self._setting("model")

    @property
    def mode(self) -> str | None:
        """The run's mode (a tool-calling run's value-matching mode), when it has one."""
        return self._setting("mode")

    @property
    def source(self) -> str | None:
        """The run's first input file's name, with how many more there are."""
        if not self.sources:
            return None
        more = f" +{len(self.sources) - 1}" if len(self.sources) > 1 else ""
        return PurePath(self.sources[0]).name + more

    def _setting(self, key: str) -> str | None:
        """A setting at the top of the configuration or one table down (the suite's and the
        judge's tables left out)."""
        if isinstance(self.config.get(key), str):
            return str(self.config[key])
        for name, table in self.config.items():
            if name not in ("suite", "judge") and isinstance(table, dict):
                found = table.get(key)
                if isinstance(found, str):
                    return found
        return None

    @property
    def suite_config(self) -> dict[str, Any]:
        """The configuration of the run's suite as stored (empty for a run without one)."""
        suite: dict[str, Any] = self.config.get("suite", {})
        return suite

    @property
    def weights(self) -> dict[str, float]:
        """The weights of the run's suite (empty for a run stored without a suite)."""
        weights: dict[str, float] = self.suite_config.get("weights", {})
        return weights

    @property
    def metric_order(self) -> list[str]:
        """The metric names of the run's suite, in its order (empty when unknown)."""
        names: list[str] = self.suite_config.get("metrics", [])
        return names

    @property
    def gates(self) -> dict[str, float]:
        """The floors of the run's suite (``[gates]``): metric -> floor."""
        gates: dict[str, float] = self.suite_config.get("gates", {})
        return gates

    @property
    def thresholds(self) -> Thresholds:
        """The recommendation and band cut-offs of the run's suite (the defaults when the run
        has no suite)."""
        return Thresholds.model_validate(self.suite_config.get("thresholds", {}))


class MetricRow(NamedTuple):
    """One metric value of one sample, as written by the engine.

    Named tuples, not dataclasses, for the rows: a report reads every sample of a run, and
    building a tuple costs a fraction of a frozen dataclass's ``__init__``.
    """

    metric: str
    value: float | None
    reason: str | None
    error: str | None


class Facet(NamedTuple):
    """One value of a sample column over a run (:meth:`Store.facet_counts`)."""

    value: str
    n: int
    mean_composite: float | None
    n_error_type: int


class SampleRow(NamedTuple):
    """One scored sample, as written by the engine and read back by :meth:`Store.iter_samples`.

    ``metrics`` holds one row per metric, in the order of the run's suite when read back;
    ``trace_json`` is the trace as it was read (a JSON document), or None when it was not
    stored or not asked for; ``category`` is the task's category.
    """

    key: str
    seq: int
    source: str | None
    line: int | None
    trace_id: str
    task_id: str
    composite: float | None
    coverage: float
    recommendation: str | None
    band: str | None
    error: str | None
    details: dict[str, Any]
    metrics: tuple[MetricRow, ...]
    trace_json: bytes | None = None
    usage: dict[str, Any] | None = None
    category: str | None = None

    @property
    def error_type(self) -> str | None:
        """The error type the first metric to name one gives (a tool-calling metric's
        ``error_type`` detail, such as ``type_error:base``); None when none does."""
        for detail in self.details.values():
            if isinstance(detail, dict) and detail.get("error_type") is not None:
                return str(detail["error_type"])
        return None

    @property
    def values(self) -> dict[str, float | None]:
        """Each metric's value (None where not available), in the order of ``metrics``."""
        return {m.metric: m.value for m in self.metrics}

    @property
    def reasons(self) -> dict[str, str]:
        """The metrics that gave a reason, and their reasons."""
        return {m.metric: m.reason for m in self.metrics if m.reason}

    @property
    def metric_errors(self) -> dict[str, str]:
        """The metrics that raised an error on this sample, and their messages."""
        return {m.metric: m.error for m in self.metrics if m.error}

    def trace(self) -> Trace | None:
        """The stored trace as a :class:`Trace` (None when ``trace_json`` is None)."""
        return None if self.trace_json is None else Trace.model_validate_json(self.trace_json)


_FACETS = ("recommendation", "band", "error_type", "category", "task_id")
"""The sample columns a run's samples can be filtered on and counted by."""

SAMPLE_COLUMNS = (
    "key",
    "seq",
    "trace_id",
    "task_id",
    "composite",
    "coverage",
    "failed",
    "recommendation",
    "band",
    "category",
    "error_type",
)
"""The columns :meth:`Store.iter_columns` reads besides the usage fields: ``failed`` is
whether the sample had a metric error."""

_USAGE_FIELD = re.compile(r"usage\.([a-z_]+)")


def _column_sql(column: str) -> str:
    """The SQL expression of a column of :meth:`Store.iter_columns`."""
    if column == "failed":
        return "error IS NOT NULL"
    if column in SAMPLE_COLUMNS:
        return column
    if match := _USAGE_FIELD.fullmatch(column):
        return f"json_extract(usage, '$.{match.group(1)}')"
    raise ValueError(f"not a sample column: {column!r}")


def _sample_columns(with_trace: bool, prefix: str = "") -> str:
    """The columns of :class:`SampleRow`, in its order; the trace is left in the file unless
    asked for."""
    names = (
        "key seq source line trace_id task_id composite coverage recommendation band error details"
    ).split()
    trace = f"{prefix}trace" if with_trace else "NULL"
    return ", ".join([*(prefix + n for n in names), trace, f"{prefix}usage", f"{prefix}category"])


@dataclass(frozen=True)
class SampleQuery:
    """Which samples of a run to read, and in what order (:meth:`Store.query_samples`).

    Args:
        search: a part of the trace id or the task id (case-insensitive).
        recommendation: only the samples with this verdict.
        band: only the samples in this band.
        error_type: only the samples with this error type.
        task_id: only the samples of this task.
        category: only the samples of tasks in this category.
        ranges: ``(metric, low, high)``: only the samples whose value of the metric (or of
            ``composite``) lies within [low, high]; a None bound is open; a sample without a
            value is left out.
        sort: ``seq`` (input order), ``composite`` or a metric's name.
        descending: highest first; samples without a value come last either way.
    """

    search: str | None = None
    recommendation: str | None = None
    band: str | None = None
    error_type: str | None = None
    task_id: str | None = None
    category: str | None = None
    ranges: tuple[tuple[str, float | None, float | None], ...] = ()
    sort: str = "seq"
    descending: bool = False

    def column_conditions(
        self, prefix: str = "", like: str = "LIKE"
    ) -> tuple[list[str], list[Any]]:
        """The SQL conditions on a sample's own columns (the search and the exact filters)
        and their parameters.

        Args:
            prefix: what names the samples' table before a column (``"s."``).
            like: the case-insensitive LIKE of the database (``ILIKE`` in DuckDB).
        """
        clauses: list[str] = []
        params: list[Any] = []
        if self.search:
            escaped = self.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            clauses.append(
                f"({prefix}trace_id {like} ? ESCAPE '\\' OR {prefix}task_id {like} ? ESCAPE '\\')"
            )
            params += [f"%{escaped}%"] * 2
        for column, value in (
            ("recommendation", self.recommendation),
            ("band", self.band),
            ("error_type", self.error_type),
            ("task_id", self.task_id),
            ("category", self.category),
        ):
            if value is not None:
                clauses.append(f"{prefix}{column} = ?")
                params.append(value)
        return clauses, params

    def where(self, run_id: str, positions: Mapping[str, int]) -> tuple[str, tuple[Any, ...]]:
        """The SQL condition on ``samples AS s`` and its parameters.

        Args:
            run_id: the run.
            positions: the place of each of the run's metrics among its values
                (:data:`_VALUE_COLUMNS`).
        """
        own, own_params = self.column_conditions("s.")
        clauses = ["s.run_id = ?", *own]
        params: list[Any] = [run_id, *own_params]
        for metric, low, high in self.ranges:
            bounds = [(">=", low), ("<=", high)]
            if metric == "composite":
                clauses.append("s.composite IS NOT NULL")
                clauses += [f"s.composite {op} ?" for op, bound in bounds if bound is not None]
            elif metric not in positions:  # a metric the run has no value of
                clauses.append("0")
                continue
            else:
                part, column = divmod(positions[metric], _VALUE_COLUMNS)
                inner = ["run_id = ?", "part = ?", f"v{column} IS NOT NULL"]
                params += [run_id, part]
                inner += [f"v{column} {op} ?" for op, bound in bounds if bound is not None]
                clauses.append(
                    f"s.key IN (SELECT sample_key FROM sample_metrics WHERE {' AND '.join(inner)})"
                )
            params += [bound for _, bound in bounds if bound is not None]
        return " AND ".join(clauses), tuple(params)


@overload
def _text(value: str) -> str: ...
@overload
def _text(value: str | None) -> str | None: ...
def _text(value: str | None) -> str | None:
    """Text as SQLite can hold it (a lone surrogate from the input escaped)."""
    return None if value is None else storable_text(value)


def _shown(value: str | None) -> str | None:
    """Text from the input or a model, as the store keeps it: credentials hidden, then
    :func:`_text`."""
    if value is None:
        return None
    if len(value) <= _SHORT_TEXT:
        return _shown_short(value)
    return _text(hide_credentials(value))


# the reasons, ids and categories of a run's samples repeat: each short one is screened once
_SHORT_TEXT = 256


@lru_cache(maxsize=8192)
def _shown_short(value: str) -> str:
    return _text(hide_credentials(value))


def _encoder(default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """``json.JSONEncoder(default=default).encode`` (``json.dumps`` when ``default`` is None),
    its C encoder made once rather than for every value written: a sample's details, notes
    and usage (with the stdlib's pure-Python encoder, the encoder itself).

    The circular check is left to the encoder of the stdlib: a circular value, which exceeds
    the recursion limit here, is written by it, and fails as ``json.dumps`` fails.
    """
    whole = json.JSONEncoder(default=default) if default is not None else json.JSONEncoder()
    if c_make_encoder is None:  # pragma: no cover - CPython has the C encoder
        return whole.encode
    chunks = c_make_encoder(
        None,  # no circular check
        whole.default,
        encode_basestring_ascii,
        None,
        whole.key_separator,
        whole.item_separator,
        False,
        False,
        True,
    )

    def encode(value: Any) -> str:
        try:
            return "".join(chunks(value, 0))
        except RecursionError:  # circular, or nested too deeply: as json.dumps says it
            return whole.encode(value)

    return encode


# ``json.dumps(value, default=str)`` and ``json.dumps(value)``
_any_json = _encoder(str)
_plain_json = _encoder()


def _stored_json(value: Any) -> str:
    """``value`` as the store keeps JSON from the input, a model or a judge: its secrets hidden
    (:func:`redact_json`) and a lone surrogate read as U+FFFD (the JSON escape of one would
    read back as text that no report, page or file can write).

    Raises:
        DecodeError: the value cannot be written as JSON.
    """
    text = guarded(_any_json, value)
    if may_hold_surrogate(text):
        text = dumps(without_surrogates(loads(text)))
    return redact_json(text)


# ISA-L's fastest level: zlib's format (read back with ``zlib.decompress``) at a fifth of
# zlib's level 1 time per trace, for a stored trace about a fifth larger
_TRACE_LEVEL = 0


def _sample_values(s: SampleRow, compress: bool = True) -> tuple[Any, ...]:
    """A sample's columns (after the run id); a value that cannot be stored (details JSON
    cannot write, text UTF-8 cannot encode) becomes the sample's error instead of failing the
    batch."""
    error = s.error
    try:
        details = _stored_json(s.details)
    except DecodeError as exc:
        details = "{}"
        error = f"{error}; " if error else ""
        error += f"the sample's details cannot be stored: {exc}"
    return (
        _text(s.key),
        s.seq,
        _text(s.source),
        s.line,
        _text(hide_credentials(s.trace_id)),  # one per sample: not worth a cache entry
        _shown(s.task_id),
        s.composite,
        s.coverage,
        s.recommendation,
        s.band,
        _shown(error),
        details,
        None
        if s.trace_json is None
        else isal_zlib.compress(s.trace_json, _TRACE_LEVEL)
        if compress
        else s.trace_json,
        _plain_json(s.usage) if s.usage is not None else None,
        _shown(s.category),
        _shown(s.error_type),
    )


class PreparedBatch(NamedTuple):
    """A batch's rows as the store writes them, the run id left out (:func:`prepare_batch`).

    Workers make them, so that the process that owns the store only inserts: the details'
    JSON, the redaction and the trace's compression are done beside the scoring, and a batch
    travels back as strings and bytes rather than as nested objects.
    """

    samples: list[tuple[Any, ...]]
    metric_values: list[SampleValues]
    errors: list[tuple[Any, ...]]

    @property
    def size(self) -> int:
        """Samples and read errors in the batch: the items it accounts for (a warning is
        about a sample or an error, not an item of its own)."""
        return len(self.samples) + sum(not e[3].startswith(WARNING) for e in self.errors)


def prepare_batch(
    samples: Sequence[SampleRow], errors: Sequence[ReadError] = (), *, compress: bool = True
) -> PreparedBatch:
    """The rows of a batch of samples and read errors, ready for :meth:`Store.write_prepared`.

    Args:
        samples: scored samples.
        errors: the input lines that could not be read.
        compress: compress the traces, as the store keeps them (False for a columnar file,
            which compresses its own).
    """
    rows = [_sample_values(s, compress) for s in samples]
    return PreparedBatch(
        rows,
        _metric_values(samples, rows),
        [(_text(e.source), e.line, _shown(e.field), _shown(e.message)) for e in errors],
    )


class SampleValues(NamedTuple):
    """A sample's metric values as :func:`prepare_batch` makes them: its key as stored, the
    metrics' names (one tuple shared by the samples of a batch that have the same metrics),
    their values in that order, and the JSON of their reasons and errors (metric ->
    ``[reason, error]``, for the metrics that have one; None when none has)."""

    key: str
    metrics: tuple[str, ...]
    values: tuple[float | None, ...]
    notes: str | None

    def rows(self) -> Iterator[tuple[str, float | None, str | None, str | None]]:
        """``(metric, value, reason, error)`` of each of the sample's metrics, in order."""
        notes = json.loads(self.notes) if self.notes else {}
        for metric, value in zip(self.metrics, self.values, strict=True):
            reason, error = notes.get(metric, _NO_NOTE)
            yield metric, value, reason, error


_NO_NOTE = (None, None)
_NO_REASON = "no reason given"


def _metric_values(samples: Sequence[SampleRow], rows: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Each sample's :class:`SampleValues`."""
    values = []
    stored: dict[tuple[str, ...], tuple[str, ...]] = {}
    for s, row in zip(samples, rows, strict=True):
        metrics = s.metrics
        names = tuple([m[0] for m in metrics])
        if (kept := stored.get(names)) is None:
            kept = stored[names] = tuple(map(_text, names))
        noted = {
            name: [_shown(m[2]), _shown(m[3])]
            for name, m in zip(kept, metrics, strict=True)
            if m[2] is not None or m[3] is not None
        }
        values.append(
            SampleValues(
                row[0],  # the sample's key as stored
                kept,
                tuple([m[1] for m in metrics]),
                _any_json(noted) if noted else None,
            )
        )
    return values


def _insert_or_replace(
    db: sqlite3.Connection, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]
) -> None:
    """``INSERT OR REPLACE`` the rows (values of ``columns``, in order), leaving out the
    columns that are NULL in every row (a column left out is NULL all the same): sqlite3
    binds a None only after looking for an adapter of it, two failed attribute look-ups that
    cost more than the rest of the value's binding (a row of ``sample_metrics`` pads a run's
    seven metrics with nine)."""
    if not rows:
        return
    keep = [
        i
        for i, column in enumerate(zip(*rows, strict=True))
        if column[0] is not None or column.count(None) < len(rows)
    ]
    # the run id and the key are never NULL: at least two columns, and itemgetter's tuples
    values: Iterable[tuple[Any, ...]] = rows
    if len(keep) < len(columns):
        values = map(itemgetter(*keep), rows)
    db.executemany(
        f"INSERT OR REPLACE INTO {table} ({', '.join(columns[i] for i in keep)}) "
        f"VALUES ({','.join('?' * len(keep))})",
        values,
    )


def _metric_rows(
    key: str, places: Sequence[tuple[str, int, int]], found: Mapping[tuple[int, str], Any]
) -> tuple[MetricRow, ...]:
    """A sample's metric values from its rows of ``sample_metrics`` (``found``, by part and
    key), in the order of ``places`` (each metric's name, part and column)."""
    metrics = []
    notes: dict[int, dict[str, list[str | None]]] = {}  # each row's
    for name, part, column in places:
        row = found.get((part, key))
        if row is None or not row[3] >> column & 1:
            continue  # the sample has no value of this metric
        if (noted := notes.get(part)) is None:
            noted = notes[part] = json.loads(row[-1]) if row[-1] else {}
        reason, error = noted.get(name, _NO_NOTE)
        metrics.append(MetricRow(name, row[4 + column], reason, error))
    return tuple(metrics)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class SampleSource(Protocol):
    """Where a run's samples are read from: the store itself, or a distributed run's results
    dataset (:func:`agentgauge.results.samples_of` picks). Every read takes the run's full id;
    a whole run is only ever streamed, never held."""

    def metric_names(self, run_id: str) -> list[str]:
        """The run's metrics, in the order of its suite."""
        ...

    def iter_metric(
        self, run_id: str, metric: str, *, ordered: bool = False, chunk: int = 8192
    ) -> Iterator[list[float | None]]:
        """One metric's values, chunk by chunk (:meth:`Store.iter_metric`)."""
        ...

    def iter_columns(
        self, run_id: str, columns: Sequence[str], *, ordered: bool = False, chunk: int = 8192
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Columns of the samples, chunk by chunk (:meth:`Store.iter_columns`)."""
        ...

    def iter_samples(
        self, run_id: str, *, order: str = "seq", limit: int | None = None, with_trace: bool = False
    ) -> Iterator[SampleRow]:
        """The samples with their metric values (:meth:`Store.iter_samples`)."""
        ...

    def get_sample(self, run_id: str, key: str) -> SampleRow:
        """One sample with its trace (:meth:`Store.get_sample`)."""
        ...

    def neighbours(self, run_id: str, seq: int) -> tuple[str | None, str | None]:
        """The keys before and after a position (:meth:`Store.neighbours`)."""
        ...

    def query_samples(
        self, run_id: str, query: SampleQuery, *, offset: int = 0, limit: int = 50
    ) -> tuple[int, list[SampleRow]]:
        """One page of filtered, sorted samples (:meth:`Store.query_samples`)."""
        ...

    def facet_counts(self, run_id: str, column: str) -> list[Facet]:
        """The values a column takes (:meth:`Store.facet_counts`)."""
        ...

    def missing_reasons(self, run_id: str, per_metric: int = 5) -> dict[str, list[tuple[str, int]]]:
        """Why metrics had no value (:meth:`Store.missing_reasons`)."""
        ...

    def read_errors(
        self, run_id: str, limit: int | None = None, *, warnings: bool | None = None
    ) -> list[ReadError]:
        """The bad input lines (:meth:`Store.read_errors`)."""
        ...


class Store:
    """A SQLite results store.

    Args:
        path: the database file, created with its schema on first use; ``":memory:"`` for a
            throw-away store.
    """

    def __init__(self, path: str | Path = "agentgauge.db") -> None:
        self.path = str(path)
        try:
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open store: {exc}") from None
        self._db.row_factory = sqlite3.Row
        try:
            # a new file's pages (an existing file keeps its own): a sample's row holds its
            # trace and details, a few kilobytes, which a 4 KiB page held one at a time, half
            # empty (every byte of it written twice, to the log and to the file)
            self._db.execute(f"PRAGMA page_size={_PAGE_SIZE}")
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as exc:
            # not an SQLite file, a read-only place, a full disk
            self._db.close()
            raise StoreError(f"{self.path}: cannot use as a store: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # schema -------------------------------------------------------------------------------

    def _user_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchall()[0][0])

    def _migrate(self) -> None:
        version = self._user_version()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: store schema version {version} is newer than this agentgauge "
                f"({SCHEMA_VERSION}); upgrade agentgauge"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                # another process may have migrated the file since it was read: its version is
                # read again under the write lock, so that no step is applied twice
                if self._user_version() < target:
                    for statement in _statements(_MIGRATIONS[target]):
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version={target}")
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for domain modules that keep their own tables."""
        return self._db

    # runs ---------------------------------------------------------------------------------

    def create_run(
        self,
        *,
        kind: str,
        suite: str,
        config: dict[str, Any],
        sources: Sequence[str] = (),
        run_id: str | None = None,
        place: str | None = None,
    ) -> str:
        """Record a new run and return its id. Secrets in ``config`` are redacted.

        Args:
            kind: what produced it (evaluate, toolcall, review, tune, ...).
            suite: the suite's name.
            config: the full configuration, echoed in results (secrets redacted).
            sources: the input files.
            run_id: an explicit id; a short random one by default.
            place: where the run's samples are kept when not in this file (a distributed
                run's results dataset); None keeps them here.
        """
        rid = run_id or uuid.uuid4().hex[:12]
        self._db.execute(
            "INSERT INTO runs(id, kind, suite, config, sources, status, created_at, place) "
            "VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
            (
                rid,
                kind,
                suite,
                json.dumps(redact_secrets(config)),
                json.dumps(list(sources)),
                _now(),
                place,
            ),
        )
        return rid

    def save_summary(self, run_id: str, summary: dict[str, Any]) -> None:
        """Keep a run's summary with it (a JSON object), so that listing or showing the run
        reads no sample again; writing samples to the run forgets it.

        Args:
            run_id: the run (its full id).
            summary: the summary.
        """
        self._db.execute("UPDATE runs SET summary = ? WHERE id = ?", (json.dumps(summary), run_id))

    def finish_run(self, run_id: str, status: str = "completed") -> None:
        """Mark a run completed (or another final status)."""
        self._db.execute(
            "UPDATE runs SET status = ?, finished_at = ? WHERE id = ?", (status, _now(), run_id)
        )

    def label_run(self, run_id: str, *, name: str | None = None, tags: Sequence[str] = ()) -> None:
        """Give a run a name and tags (kept in its configuration; tags add to its own).

        Args:
            run_id: the run (a unique prefix is accepted).
            name: its name; None keeps the one it has.
            tags: tags to add.
        """
        run = self.get_run(run_id)
        config = dict(run.config)
        if name is not None:
            config["name"] = name
        if tags:
            config["tags"] = list(dict.fromkeys([*run.tags, *tags]))
        self._db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), run.id))

    def reopen_run(self, run_id: str) -> None:
        """Mark a run as running again (for ``--resume``); the summary of a run kept here is
        forgotten (a distributed run's keeps its counts: its driver brings them up to date)."""
        self.get_run(run_id)
        self._db.execute(
            "UPDATE runs SET status = 'running', finished_at = NULL, "
            "summary = CASE WHEN place IS NULL THEN NULL ELSE summary END WHERE id = ?",
            (run_id,),
        )

    def get_run(self, run_id: str) -> RunInfo:
        """The run ``run_id``; a unique prefix of the id is accepted.

        Raises:
            StoreError: no such run, or an ambiguous prefix.
        """
        rows = self._db.execute(
            "SELECT * FROM runs WHERE id = ? OR id LIKE ? ORDER BY id = ? DESC",
            (run_id, run_id.replace("%", "") + "%", run_id),
        ).fetchall()
        if not rows:
            raise StoreError(f"{self.path}: no run {run_id!r}")
        if len(rows) > 1 and rows[0]["id"] != run_id:
            raise StoreError(f"{self.path}: run id prefix {run_id!r} is ambiguous")
        return self._run_info(rows[0])

    def list_runs(self, limit: int | None = None) -> list[RunInfo]:
        """Runs, newest first."""
        sql = "SELECT * FROM runs ORDER BY created_at DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [self._run_info(r) for r in self._db.execute(sql).fetchall()]

    def _run_info(self, row: sqlite3.Row) -> RunInfo:
        n_samples = self._db.execute(
            "SELECT COUNT(*) FROM samples WHERE run_id = ?", (row["id"],)
        ).fetchone()[0]
        n_errors = self._db.execute(
            "SELECT COUNT(*) FROM read_errors WHERE run_id = ? AND message NOT LIKE ?",
            (row["id"], _WARNING_LIKE),
        ).fetchone()[0]
        summary = json.loads(row["summary"]) if row["summary"] else None
        if row["place"] is not None:
            # a distributed run: its samples are in its results dataset, counted there
            counts = (summary or {}).get("counts", {})
            n_samples, n_errors = counts.get("samples", 0), counts.get("read_errors", 0)
        return RunInfo(
            id=row["id"],
            kind=row["kind"],
            suite=row["suite"],
            config=json.loads(row["config"]),
            sources=json.loads(row["sources"]),
            status=row["status"],
            created_at=row["created_at"],
            finished_at=row["finished_at"],
            n_samples=n_samples,
            n_errors=n_errors,
            place=row["place"],
            summary=summary,
        )

    # samples ------------------------------------------------------------------------------

    def write_batch(
        self, run_id: str, samples: Sequence[SampleRow], errors: Sequence[ReadError] = ()
    ) -> None:
        """Write one batch of samples and read errors in a single transaction.

        Args:
            run_id: the run.
            samples: scored samples.
            errors: the input lines that could not be read.
        """
        self.write_prepared(run_id, prepare_batch(samples, errors))

    def write_prepared(self, run_id: str, batch: PreparedBatch) -> None:
        """Write a batch made ready by :func:`prepare_batch` in a single transaction.

        Args:
            run_id: the run.
            batch: the rows of its samples, metric values and read errors.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            _insert_or_replace(
                db, "samples", _SAMPLE_COLUMNS_WRITTEN, [(run_id, *row) for row in batch.samples]
            )
            if batch.metric_values:
                _insert_or_replace(
                    db,
                    "sample_metrics",
                    _VALUE_COLUMNS_WRITTEN,
                    self._value_rows(run_id, batch.metric_values),
                )
            # one row per line: an error there replaces a warning, never the other way
            db.executemany(
                "INSERT INTO read_errors VALUES (?,?,?,?,?) "
                "ON CONFLICT (run_id, source, line) DO UPDATE SET field = excluded.field, "
                "message = excluded.message WHERE read_errors.message LIKE ? "
                "OR excluded.message NOT LIKE ?",
                [(run_id, *row, _WARNING_LIKE, _WARNING_LIKE) for row in batch.errors],
            )
            db.execute(
                "UPDATE runs SET summary = NULL WHERE id = ? AND summary IS NOT NULL", (run_id,)
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # a Ctrl-C can land just after the COMMIT
                db.execute("ROLLBACK")
            raise

    def _value_rows(self, run_id: str, samples: Sequence[SampleValues]) -> list[tuple[Any, ...]]:
        """The rows of ``sample_metrics`` that hold the samples' values; a metric new to the
        run is given the next place (inside the batch's transaction)."""
        positions = self._positions(run_id)
        layouts: dict[tuple[str, ...], tuple[int, tuple[None, ...]] | None] = {}
        rows: list[tuple[Any, ...]] = []
        for key, names, values, notes in samples:
            if names not in layouts:
                layouts[names] = self._layout(run_id, names, positions)
            layout = layouts[names]
            if layout is not None:  # the run's first metrics, in their order: one row
                present, padding = layout
                rows.append((run_id, 0, key, present, *values, *padding, notes))
                continue
            parts: dict[int, list[Any]] = {}
            for name, value in zip(names, values, strict=True):
                part, column = divmod(positions[name], _VALUE_COLUMNS)
                if (row := parts.get(part)) is None:
                    row = parts[part] = [run_id, part, key, 0, *_NO_VALUES, notes]
                row[3] |= 1 << column
                row[4 + column] = value
            rows += map(tuple, parts.values())
        return rows

    def _layout(
        self, run_id: str, names: tuple[str, ...], positions: dict[str, int]
    ) -> tuple[int, tuple[None, ...]] | None:
        """Give the run's new metrics among ``names`` their places; when ``names`` are the
        run's first metrics in their order, the ``present`` bits and the padding of a row."""
        for name in names:
            if name not in positions:
                positions[name] = len(positions)
                self._db.execute(
                    "INSERT INTO run_metrics VALUES (?, ?, ?)", (run_id, name, positions[name])
                )
        if len(names) <= _VALUE_COLUMNS and all(
            positions[name] == i for i, name in enumerate(names)
        ):
            return (1 << len(names)) - 1, _NO_VALUES[len(names) :]
        return None

    def _positions(self, run_id: str) -> dict[str, int]:
        """The place of each of the run's metrics among its values (:data:`_VALUE_COLUMNS`)."""
        return {
            r[0]: r[1]
            for r in self._db.execute(
                "SELECT metric, position FROM run_metrics WHERE run_id = ?", (run_id,)
            )
        }

    def done_among(self, run_id: str, keys: Sequence[str]) -> set[str]:
        """Which of these keys the run already holds, as a sample or as a bad line (``source#line``
        keys): what a resumed run skips, asked a batch at a time.

        Args:
            run_id: the run.
            keys: sample keys.
        """
        done: set[str] = set()
        for start in range(0, len(keys), _SQL_VARIABLES):
            chunk = [_text(k) for k in keys[start : start + _SQL_VARIABLES]]
            marks = ",".join("?" * len(chunk))
            done.update(
                r[0]
                for r in self._db.execute(
                    f"SELECT key FROM samples WHERE run_id = ? AND key IN ({marks})",
                    (run_id, *chunk),
                )
            )
            wanted = set(chunk)
            parts = [k.rpartition("#") for k in chunk]
            lines = [(source, int(line)) for source, _, line in parts if line.isdigit()]
            for source in {source for source, _ in lines}:
                numbers = [line for s, line in lines if s == source]
                done.update(
                    key
                    for (line,) in self._db.execute(
                        "SELECT line FROM read_errors WHERE run_id = ? AND source = ? "
                        "AND line BETWEEN ? AND ?",
                        (run_id, source, min(numbers), max(numbers)),
                    )
                    if (key := f"{source}#{line}") in wanted
                )
        return done

    def count_done(self, run_id: str) -> int:
        """How many samples and bad lines the run holds (what a resumed run has behind it).

        Args:
            run_id: the run.
        """
        return sum(
            int(
                self._db.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (run_id,)
                ).fetchall()[0][0]
            )
            for table in ("samples", "read_errors")
        )

    def metric_names(self, run_id: str) -> list[str]:
        """The metrics recorded for a run, in the order of its suite when known."""
        names = sorted(self._positions(run_id))
        order = self.get_run(run_id).metric_order
        return sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n))

    def iter_metric(
        self, run_id: str, metric: str, *, ordered: bool = False, chunk: int = 8192
    ) -> Iterator[list[float | None]]:
        """One metric's values over a run's samples, chunk by chunk (None where not
        available): memory stays flat whatever the run's size.

        Args:
            run_id: the run (its full id).
            metric: the metric.
            ordered: in input order (slower); in the index's order otherwise.
            chunk: values per chunk.
        """
        position = self._positions(run_id).get(metric)
        if position is None:  # no value of it in the run
            return
        part, column = divmod(position, _VALUE_COLUMNS)
        if ordered:
            sql = (
                f"SELECT v.v{column} FROM samples AS s JOIN sample_metrics AS v "
                "ON v.run_id = s.run_id AND v.part = ?2 AND v.sample_key = s.key "
                "WHERE s.run_id = ?1 AND v.present & ?3 ORDER BY s.seq"
            )
        else:  # in the order of the samples' keys
            sql = (
                f"SELECT v{column} FROM sample_metrics "
                "WHERE run_id = ?1 AND part = ?2 AND present & ?3"
            )
        for rows in self._chunks(sql, (run_id, part, 1 << column), chunk):
            yield [r[0] for r in rows]

    def iter_columns(
        self, run_id: str, columns: Sequence[str], *, ordered: bool = False, chunk: int = 8192
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Columns of a run's samples, as rows chunk by chunk: memory stays flat whatever
        the run's size.

        Args:
            run_id: the run (its full id).
            columns: among :data:`SAMPLE_COLUMNS`, and ``usage.FIELD`` for a field of the
                samples' usage (``usage.judge`` is the judges' spending, as JSON text).
            ordered: in input order; in any order otherwise.
            chunk: rows per chunk.
        """
        selected = ", ".join(_column_sql(c) for c in columns)
        sql = f"SELECT {selected} FROM samples WHERE run_id = ?"
        if ordered:
            sql += " ORDER BY seq"
        yield from self._chunks(sql, (run_id,), chunk)

    def _chunks(
        self, sql: str, params: Sequence[Any], size: int
    ) -> Iterator[list[tuple[Any, ...]]]:
        cursor = self._db.cursor()
        cursor.row_factory = None
        try:
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(size):
                yield rows
        finally:
            cursor.close()

    def iter_samples(
        self, run_id: str, *, order: str = "seq", limit: int | None = None, with_trace: bool = False
    ) -> Iterator[SampleRow]:
        """The samples of a run with their metric values (in the order of the run's suite).

        Args:
            run_id: the run.
            order: ``seq`` (input order) or ``worst`` (lowest composite first, errors first).
            limit: at most this many.
            with_trace: also read the stored trace (``trace_json``; None otherwise).
        """
        order_sql = {
            "seq": "seq",
            "worst": "error IS NULL, composite IS NOT NULL, composite, seq",
        }[order]
        columns = _sample_columns(with_trace)
        sql = f"SELECT {columns} FROM samples WHERE run_id = ? ORDER BY {order_sql}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._sample_rows(run_id, sql, (run_id,))

    def get_sample(self, run_id: str, key: str) -> SampleRow:
        """One sample of a run, with its trace.

        Args:
            run_id: the run (its full id).
            key: the sample's key.

        Raises:
            StoreError: the run has no such sample.
        """
        sql = f"SELECT {_sample_columns(True)} FROM samples WHERE run_id = ? AND key = ?"
        for row in self._sample_rows(run_id, sql, (run_id, key)):
            return row
        raise StoreError(f"{self.path}: run {run_id} has no sample {key!r}")

    def neighbours(self, run_id: str, seq: int) -> tuple[str | None, str | None]:
        """The keys of the samples before and after position ``seq`` in input order (None at
        either end).

        Args:
            run_id: the run.
            seq: a sample's position.
        """
        before = self._db.execute(
            "SELECT key FROM samples WHERE run_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
            (run_id, seq),
        ).fetchone()
        after = self._db.execute(
            "SELECT key FROM samples WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT 1",
            (run_id, seq),
        ).fetchone()
        return (before[0] if before else None, after[0] if after else None)

    def query_samples(
        self, run_id: str, query: SampleQuery, *, offset: int = 0, limit: int = 50
    ) -> tuple[int, list[SampleRow]]:
        """One page of a run's samples, filtered and sorted in SQL (fast on 100,000 samples).

        Args:
            run_id: the run (its full id).
            query: the filters and the order.
            offset: samples to skip.
            limit: at most this many.

        Returns:
            How many samples pass the filters, and the page (without traces).

        Raises:
            StoreError: a sort key that is neither a column nor a metric of the run.
        """
        where, params = query.where(run_id, self._positions(run_id))
        total = self._db.execute(
            f"SELECT COUNT(*) FROM samples AS s WHERE {where}", params
        ).fetchone()[0]
        join, join_params, order = self._sample_order(run_id, query)
        # the page's keys first, from the samples_view index alone; then its rows
        keys = [
            key
            for (key,) in self._db.execute(
                f"SELECT s.key FROM samples AS s {join} WHERE {where} ORDER BY {order} "
                "LIMIT ? OFFSET ?",
                (*join_params, *params, int(limit), int(offset)),
            )
        ]
        marks = ", ".join("?" * len(keys))
        sql = f"SELECT {_sample_columns(False)} FROM samples WHERE run_id = ? AND key IN ({marks})"
        by_key = {row.key: row for row in self._sample_rows(run_id, sql, (run_id, *keys))}
        return int(total), [by_key[key] for key in keys]

    def _sample_order(self, run_id: str, query: SampleQuery) -> tuple[str, tuple[Any, ...], str]:
        """The join, its parameters and the ORDER BY of a query's sort (missing values last)."""
        direction = "DESC" if query.descending else "ASC"
        if query.sort == "seq":
            return "", (), f"s.seq {direction}"
        if query.sort == "composite":
            return "", (), f"s.composite IS NULL, s.composite {direction}, s.seq"
        position = self._positions(run_id).get(query.sort)
        if position is None:
            raise StoreError(f"run {run_id} has no metric {query.sort!r} to sort by")
        part, column = divmod(position, _VALUE_COLUMNS)
        join = (
            "LEFT JOIN sample_metrics AS o ON o.run_id = s.run_id AND o.part = ? "
            "AND o.sample_key = s.key"
        )
        return join, (part,), f"o.v{column} IS NULL, o.v{column} {direction}, s.seq"

    def _sample_rows(self, run_id: str, sql: str, params: Sequence[Any]) -> Iterator[SampleRow]:
        """Samples from a query selecting :func:`_sample_columns`, each with its metric
        values in the order of the run's suite."""
        # each metric's place among the run's values, in the order of the run's suite
        positions = self._positions(run_id)
        places = [
            (name, *divmod(positions[name], _VALUE_COLUMNS)) for name in self.metric_names(run_id)
        ]
        parts = sorted({part for _, part, _ in places})
        # a page of samples at a time, then their values: one statement per page (and part)
        values_sql = "SELECT * FROM sample_metrics WHERE run_id = ? AND part = ? AND sample_key IN "
        # plain tuples made into rows in C: a report reads every metric value of a run
        samples, sample_values = self._db.cursor(), self._db.cursor()
        samples.row_factory = sample_values.row_factory = None
        samples.execute(sql, params)
        while page := samples.fetchmany(_SAMPLES_PAGE):
            keys = [row[0] for row in page]
            marks = f"({','.join('?' * len(keys))})"
            found = {
                (part, r[2]): r
                for part in parts
                for r in sample_values.execute(values_sql + marks, (run_id, part, *keys))
            }
            metrics = {key: _metric_rows(key, places, found) for key in keys}
            for row in page:
                blob = row[12]
                yield SampleRow._make(
                    (
                        *row[:11],
                        json.loads(row[11]),
                        metrics[row[0]],
                        zlib.decompress(blob) if blob is not None else None,
                        json.loads(row[13]) if row[13] else None,
                        row[14],
                    )
                )

    def facet_counts(self, run_id: str, column: str) -> list[Facet]:
        """The values a column takes over a run's samples, most frequent first (None left
        out), each with its samples' mean composite and how many of them name an error type.

        Args:
            run_id: the run.
            column: ``recommendation``, ``band``, ``error_type``, ``category`` or ``task_id``.
        """
        if column not in _FACETS:
            raise ValueError(f"not a sample facet: {column!r}")
        return [
            Facet(*r)
            for r in self._db.execute(
                f"SELECT {column}, COUNT(*), AVG(composite), COUNT(error_type) FROM samples "
                f"WHERE run_id = ? AND {column} IS NOT NULL "
                f"GROUP BY {column} ORDER BY COUNT(*) DESC, {column}",
                (run_id,),
            )
        ]

    def missing_reasons(self, run_id: str, per_metric: int = 5) -> dict[str, list[tuple[str, int]]]:
        """Why metrics had no value: per metric, its most frequent reasons (or errors) and how
        many samples gave each.

        Args:
            run_id: the run.
            per_metric: at most this many reasons per metric.
        """
        out: dict[str, list[tuple[str, int]]] = {}
        for metric, position in sorted(self._positions(run_id).items()):
            part, column = divmod(position, _VALUE_COLUMNS)
            reasons: Counter[str] = Counter()
            for notes, count in self._db.execute(
                f"SELECT notes, COUNT(*) FROM sample_metrics WHERE run_id = ? AND part = ? "
                f"AND present & ? AND v{column} IS NULL GROUP BY notes",
                (run_id, part, 1 << column),
            ):
                reason, error = json.loads(notes).get(metric, _NO_NOTE) if notes else _NO_NOTE
                shown = error if error is not None else reason
                reasons[_NO_REASON if shown is None else shown] += count
            if reasons:
                out[metric] = sorted(reasons.items(), key=lambda r: (-r[1], r[0]))[:per_metric]
        return out

    def read_errors(
        self, run_id: str, limit: int | None = None, *, warnings: bool | None = None
    ) -> list[ReadError]:
        """The bad input lines of a run, in file and line order.

        Args:
            run_id: the run.
            limit: at most this many (the first ones).
            warnings: only the lines read with a value left out or replaced (True), only
                those that could not be read (False), or both (None).
        """
        where, args = "run_id = ?", [run_id]
        if warnings is not None:
            where += " AND message LIKE ?" if warnings else " AND message NOT LIKE ?"
            args.append(_WARNING_LIKE)
        sql = f"SELECT source, line, field, message FROM read_errors WHERE {where} "
        sql += "ORDER BY source, line"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [ReadError(*r) for r in self._db.execute(sql, args)]

    # domain records -----------------------------------------------------------------------

    def append_record(self, run_id: str, stream: str, record: dict[str, Any]) -> int:
        """Append a JSON record to a named stream of a run; returns its sequence number.

        Args:
            run_id: the run.
            stream: the stream's name (e.g. ``tuning``).
            record: JSON-serialisable; its secrets are redacted (:func:`redact_secrets` with
                ``hide_text``).
        """
        text = _stored_json(record)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            seq = self._db.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM records WHERE run_id = ? AND stream = ?",
                (run_id, stream),
            ).fetchone()[0]
            self._db.execute("INSERT INTO records VALUES (?, ?, ?, ?)", (run_id, stream, seq, text))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return int(seq)

    def streams(self, run_id: str) -> dict[str, int]:
        """The record streams of a run (a domain's results beside its samples) and their sizes."""
        return {
            r[0]: r[1]
            for r in self._db.execute(
                "SELECT stream, COUNT(*) FROM records WHERE run_id = ? GROUP BY stream "
                "ORDER BY stream",
                (run_id,),
            )
        }

    def records(self, run_id: str, stream: str, *, last: int | None = None) -> list[dict[str, Any]]:
        """The records of a stream, in the order they were appended.

        Args:
            run_id: the run.
            stream: the stream.
            last: only the last this many.
        """
        sql = "SELECT record FROM records WHERE run_id = ? AND stream = ? ORDER BY seq"
        if last is not None:
            sql = (
                "SELECT record FROM (SELECT seq, record FROM records WHERE run_id = ? AND "
                f"stream = ? ORDER BY seq DESC LIMIT {int(last)}) ORDER BY seq"
            )
        return [json.loads(r[0]) for r in self._db.execute(sql, (run_id, stream))]

    # embedding cache ----------------------------------------------------------------------

    def cached_embeddings(
        self, model: str, layer: int, digests: Sequence[bytes]
    ) -> dict[bytes, tuple[bytes, bytes]]:
        """The cached ``(token_ids, vectors)`` blobs of the texts with these digests.

        Args:
            model: the model's name, as the embeddings were stored under it.
            layer: the hidden layer.
            digests: the texts' digests; the ones not cached are missing from the result.
        """
        found: dict[bytes, tuple[bytes, bytes]] = {}
        for start in range(0, len(digests), _SQL_VARIABLES):
            chunk = digests[start : start + _SQL_VARIABLES]
            rows = self._db.execute(
                "SELECT text_hash, token_ids, vectors FROM embedding_cache "
                f"WHERE model = ? AND layer = ? AND text_hash IN ({','.join('?' * len(chunk))})",
                (model, layer, *chunk),
            )
            found.update((r[0], (r[1], r[2])) for r in rows)
        return found

    def cache_embeddings(
        self, model: str, layer: int, rows: Sequence[tuple[bytes, bytes, bytes]]
    ) -> None:
        """Keep embeddings for later runs, in one transaction.

        Args:
            model: the model's name.
            layer: the hidden layer.
            rows: ``(digest, token_ids, vectors)`` blobs; a digest already cached is kept.
        """
        self._insert_cached(
            "INSERT OR IGNORE INTO embedding_cache VALUES (?, ?, ?, ?, ?)",
            [(model, layer, *row) for row in rows],
        )

    def cached_scores(self, keys: Sequence[bytes]) -> dict[bytes, tuple[float, float, float]]:
        """The cached BERTScore ``(precision, recall, f1)`` of the pairs with these keys.

        Args:
            keys: the pairs' digests; the ones not cached are missing from the result.
        """
        found: dict[bytes, tuple[float, float, float]] = {}
        for start in range(0, len(keys), _SQL_VARIABLES):
            chunk = keys[start : start + _SQL_VARIABLES]
            rows = self._db.execute(
                "SELECT key, precision, recall, f1 FROM bertscore_cache "
                f"WHERE key IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            found.update((r[0], (r[1], r[2], r[3])) for r in rows)
        return found

    def cache_scores(self, rows: Sequence[tuple[bytes, float, float, float]]) -> None:
        """Keep BERTScore results for later runs, in one transaction.

        Args:
            rows: ``(key, precision, recall, f1)``; a key already cached is kept.
        """
        self._insert_cached("INSERT OR IGNORE INTO bertscore_cache VALUES (?, ?, ?, ?)", rows)

    def _insert_cached(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(sql, rows)
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def delete_run(self, run_id: str) -> None:
        """Remove a run and everything attached to it."""
        rid = self.get_run(run_id).id
        self._db.execute("BEGIN IMMEDIATE")
        for table, col in (
            ("sample_metrics", "run_id"),
            ("run_metrics", "run_id"),
            ("samples", "run_id"),
            ("read_errors", "run_id"),
            ("records", "run_id"),
            ("runs", "id"),
        ):
            self._db.execute(f"DELETE FROM {table} WHERE {col} = ?", (rid,))
        self._db.execute("COMMIT")


_OPEN_CACHE_FILES: dict[tuple[int, str], Store] = {}


class CacheFile:
    """The embedding and BERTScore caches of the store file at ``path``, as the text metrics
    take them (:class:`agentgauge.metrics.text.EmbeddingCache`).

    The file is opened on first use in each process and kept open there: a metric built once
    and inherited by forked worker processes never shares its parent's connection.

    Args:
        path: the store file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    def __repr__(self) -> str:
        return f"CacheFile({self.path!r})"

    def _store(self) -> Store:
        key = (os.getpid(), self.path)
        if key not in _OPEN_CACHE_FILES:
            _OPEN_CACHE_FILES[key] = Store(self.path)
        return _OPEN_CACHE_FILES[key]

    def cached_embeddings(
        self, model: str, layer: int, digests: Sequence[bytes]
    ) -> dict[bytes, tuple[bytes, bytes]]:
        """See :meth:`Store.cached_embeddings`."""
        return self._store().cached_embeddings(model, layer, digests)

    def cache_embeddings(
        self, model: str, layer: int, rows: Sequence[tuple[bytes, bytes, bytes]]
    ) -> None:
        """See :meth:`Store.cache_embeddings`."""
        self._store().cache_embeddings(model, layer, rows)

    def cached_scores(self, keys: Sequence[bytes]) -> dict[bytes, tuple[float, float, float]]:
        """See :meth:`Store.cached_scores`."""
        return self._store().cached_scores(keys)

    def cache_scores(self, rows: Sequence[tuple[bytes, float, float, float]]) -> None:
        """See :meth:`Store.cache_scores`."""
        self._store().cache_scores(rows)
