"""The input of a distributed run, cut into shards that workers read where they lie.

A run's input is files (paths, glob patterns, or URIs that pyarrow opens). The driver lists
them (names, sizes and modification times: no content) and cuts each into shards:

- a JSONL file into byte ranges of about ``shard_bytes``, each holding the lines that begin in
  it; the line numbers of each range's first line come from counting newlines, done by the
  workers (:func:`inspect_file`), never by the driver;
- a compressed file (``.gz``) into one shard (a gzip stream cannot be entered in the middle);
- a Parquet file of traces (one trace a row) into its row groups;
- a file of another format (an OpenTelemetry export, a plugin's) into one shard, read by its
  importer.

Shards are numbered in input order (its ordinal), and named by that number and a digest of what
they cover, so that the same input gives the same shards when a run is resumed.
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agentgauge.engine import EngineError, Item, item_key
from agentgauge.io.importers import IMPORTERS
from agentgauge.io.jsonl import RawLine, ReadError, iter_raw_lines

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = [
    "SEQ_BITS",
    "InputFile",
    "Shard",
    "inspect_file",
    "list_inputs",
    "plan_shards",
    "shard_items",
]

SEQ_BITS = 32
"""A sample's position: its shard's ordinal above these bits, its place in the shard below."""

_NEWLINE_BLOCK = 8 << 20


@dataclass(frozen=True)
class InputFile:
    """One input file, as the driver lists it.

    Args:
        source: the path or URI, as the samples name it.
        size: its size in bytes.
        mtime_ns: its modification time (with the size: how a resume sees it changed).
    """

    source: str
    size: int
    mtime_ns: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Shard:
    """A part of one input file that one worker reads and scores.

    Args:
        ordinal: its place in the input (the order of its samples).
        source: the file.
        kind: ``lines`` (a byte range of JSONL), ``parquet`` (row groups), ``file`` (the
            whole file, through the format's importer).
        trace_format: the run's input format.
        start: ``lines``: the first byte of the range.
        end: ``lines``: the byte after it; None to the end of the file.
        first_line: ``lines``: the number of the first line that begins in the range;
            ``parquet``: the number of its first row in the file.
        row_groups: ``parquet``: the row groups.
    """

    ordinal: int
    source: str
    kind: str
    trace_format: str
    start: int = 0
    end: int | None = None
    first_line: int = 1
    row_groups: tuple[int, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        """``part-<ORDINAL>-<DIGEST>``: the name of its files in the results dataset."""
        what = json.dumps([self.source, self.kind, self.start, self.end, list(self.row_groups)])
        digest = hashlib.sha256(what.encode("utf-8")).hexdigest()[:10]
        return f"part-{self.ordinal:09d}-{digest}"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Shard:
        data = json.loads(text)
        data["row_groups"] = tuple(data.get("row_groups") or ())
        return cls(**data)


def _filesystem(source: str) -> tuple[pafs.FileSystem, str]:
    import pyarrow.fs as pafs

    if "://" in source:
        fs, path = pafs.FileSystem.from_uri(source)
        return fs, path
    return pafs.LocalFileSystem(), str(Path(source).resolve())


def _has_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def list_inputs(sources: Sequence[str]) -> list[InputFile]:
    """The files the sources name, in order: a glob pattern gives its files sorted by name.

    Args:
        sources: paths, glob patterns or URIs (``s3://bucket/traces/*.jsonl.gz``).

    Raises:
        EngineError: a source that names no file.
    """
    import pyarrow.fs as pafs

    out: list[InputFile] = []
    for source in sources:
        if "://" in source:
            fs, path = pafs.FileSystem.from_uri(source)
            scheme = source.split("://", 1)[0]
            prefix = f"{scheme}://" if scheme != "file" else "file://"
            if _has_pattern(path):
                base = path.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0].rsplit("/", 1)[0]
                infos = fs.get_file_info(pafs.FileSelector(base, recursive=True))
                from fnmatch import fnmatchcase

                matched = sorted(
                    i for i in infos if i.type == pafs.FileType.File and fnmatchcase(i.path, path)
                )
                found = [(prefix + i.path, i) for i in sorted(matched, key=lambda i: i.path)]
            else:
                info = fs.get_file_info(path)
                found = [(source, info)] if info.type == pafs.FileType.File else []
            files = [InputFile(name, int(i.size or 0), int(i.mtime_ns or 0)) for name, i in found]
        else:
            names = sorted(glob.glob(source)) if _has_pattern(source) else [source]
            files = [
                InputFile(name, (stat := Path(name).stat()).st_size, stat.st_mtime_ns)
                for name in names
                if Path(name).is_file()
            ]
        if not files:
            raise EngineError(f"no such file: {source}")
        out += files
    return out


def _kind(source: str, trace_format: str) -> str:
    if source.endswith(".parquet"):
        return "parquet"
    info = IMPORTERS.get(trace_format)
    if info.lines is iter_raw_lines:
        return "lines"
    return "file"


def plan_shards(
    files: Sequence[InputFile],
    trace_format: str,
    shard_bytes: int,
    inspect: Callable[[Sequence[tuple[InputFile, str]]], list[list[dict[str, Any]]]],
) -> list[Shard]:
    """Cut the files into shards, in input order.

    Args:
        files: the input files, in order.
        trace_format: the run's format (its importer reads ``file`` shards).
        shard_bytes: about this many bytes of plain JSONL a shard.
        inspect: runs :func:`inspect_file` on some ``(file, kind)`` pairs where the data lies
            (the cluster's workers) and returns their parts, in order.
    """
    kinds = [_kind(f.source, trace_format) for f in files]
    needs = [
        (f, k)
        for f, k in zip(files, kinds, strict=True)
        if k == "parquet"
        or (k == "lines" and not f.source.endswith(".gz") and f.size > shard_bytes)
    ]
    inspected = dict(zip([f.source for f, _ in needs], inspect(needs), strict=True))
    shards: list[Shard] = []
    for f, kind in zip(files, kinds, strict=True):
        parts = inspected.get(f.source) or [{}]
        for part in parts:
            shards.append(
                Shard(
                    ordinal=len(shards),
                    source=f.source,
                    kind=kind,
                    trace_format=trace_format,
                    **part,
                )
            )
    return shards


def inspect_file(file: InputFile, kind: str, shard_bytes: int) -> list[dict[str, Any]]:
    """A file's shards: the byte ranges of plain JSONL (with the number of each range's first
    line, from counting newlines) or the row groups of Parquet. Runs where the file lies.

    Args:
        file: the file.
        kind: ``lines`` or ``parquet``.
        shard_bytes: about this many bytes a range (or row groups a shard).
    """
    fs, path = _filesystem(file.source)
    if kind == "parquet":
        import pyarrow.parquet as pq

        with fs.open_input_file(path) as fh:
            meta = pq.ParquetFile(fh).metadata
        parts, row = [], 1
        for group in range(meta.num_row_groups):
            parts.append({"row_groups": (group,), "first_line": row})
            row += meta.row_group(group).num_rows
        return parts or [{"row_groups": ()}]
    bounds = [*range(0, file.size, shard_bytes), file.size]
    # newlines before each boundary's previous byte: the first line that begins at or after
    # the boundary is number 2 + that count (1 at the start of the file)
    cuts = [b - 1 for b in bounds[1:-1]]
    counts, seen, position = [], 0, 0
    with fs.open_input_file(path) as fh:
        for cut in cuts:
            while position < cut:
                block = fh.read(min(_NEWLINE_BLOCK, cut - position))
                if not block:
                    break
                seen += block.count(b"\n")
                position += len(block)
            counts.append(seen)
    parts = [{"start": 0, "end": bounds[1], "first_line": 1}]
    for k, count in enumerate(counts, start=1):
        parts.append({"start": bounds[k], "end": bounds[k + 1], "first_line": count + 2})
    return parts


def _opener(source: str) -> Callable[[], IO[bytes]]:
    fs, path = _filesystem(source)

    def open_binary() -> IO[bytes]:
        raw = io.BufferedReader(fs.open_input_file(path))
        if source.endswith(".gz"):
            import gzip

            return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
        return raw

    return open_binary


def _parquet_rows(shard: Shard) -> Iterator[RawLine | ReadError]:
    """A Parquet shard's rows as lines of JSON (one trace a row, or its ``trace`` column of
    JSON text), numbered by row in the file."""
    import pyarrow.parquet as pq

    fs, path = _filesystem(shard.source)
    number = shard.first_line - 1
    try:
        with fs.open_input_file(path) as fh:
            parquet = pq.ParquetFile(fh)
            for group in shard.row_groups:
                table = parquet.read_row_group(group)
                only_text = table.column_names == ["trace"]
                for row in table.to_pylist():
                    number += 1
                    value = row["trace"] if only_text else row
                    text = value if isinstance(value, str) else json.dumps(value, default=str)
                    yield RawLine(shard.source, number, text)
    except OSError as exc:
        yield ReadError(shard.source, number + 1, None, f"the file cannot be read on: {exc}")


def shard_items(shard: Shard) -> Iterator[tuple[int, str, Item]]:
    """What a worker scores of a shard: each item with its position and key (as
    :func:`agentgauge.engine.evaluate` numbers and keys them).

    Args:
        shard: the shard.
    """
    items: Iterator[Item]
    if shard.kind == "lines":
        items = iter_raw_lines(
            shard.source,
            start=shard.start,
            end=shard.end,
            first_line=shard.first_line,
            opener=_opener(shard.source),
        )
    elif shard.kind == "parquet":
        items = _parquet_rows(shard)
    else:
        info = IMPORTERS.get(shard.trace_format)
        items = iter(info.items([shard.source]))
    base = shard.ordinal << SEQ_BITS
    for i, item in enumerate(items):
        seq = base + i
        yield seq, item_key(seq, item), item
