"""A span file's JSON documents: one per line (the Collector's file exporter), one or several
concatenated (pretty-printed requests, the products' downloads), or one OTLP protobuf request;
gzip is told by the first bytes. Every way a file can fail to read becomes a ReadError with
its line, and reading goes on where it can."""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

from agentgauge._safe import (
    DECODE_ERRORS,
    describe,
    may_hold_surrogate,
    replace_surrogates,
    size_limit,
)
from agentgauge.io.jsonl import ReadError, decode_error, invalid_json
from agentgauge.io.otel.wire.protobuf import decode_request, is_protobuf

__all__ = ["Document", "decode_document", "is_binary", "read_documents"]


class Document(NamedTuple):
    """One JSON document of a file.

    Args:
        line: the line it starts on.
        doc: the decoded document.
        replaced: the paths of its strings (and keys) read with a lone surrogate replaced by
            U+FFFD, for the warning.
    """

    line: int
    doc: Any
    replaced: Sequence[tuple[str | int, ...]] = ()


MAX_FILE_BYTES = 1 << 30
"""The most a span file may hold once decompressed (``AGENTGAUGE_MAX_SPAN_FILE_BYTES``): a
document of a whole file is held in memory, and a small ``.gz`` can hold gigabytes."""


class _Capped(io.RawIOBase):
    """A stream that fails, as a file that cannot be read on, past ``cap`` bytes."""

    def __init__(self, raw: IO[bytes], cap: int, file: IO[bytes]) -> None:
        self._raw, self._cap, self._total, self._file = raw, cap, 0, file

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        self._total += count
        if self._total > self._cap:
            raise OSError(
                f"it holds more than {self._cap} bytes once decompressed "
                "(AGENTGAUGE_MAX_SPAN_FILE_BYTES)"
            )
        return int(count)

    def close(self) -> None:
        self._raw.close()
        self._file.close()  # a GzipFile leaves the file it reads open
        super().close()


def _open_binary(path: str | Path) -> IO[bytes]:
    """A file's bytes, decompressed when they are gzip (told by their first bytes), at most
    :data:`MAX_FILE_BYTES` of them."""
    cap = size_limit("AGENTGAUGE_MAX_SPAN_FILE_BYTES", MAX_FILE_BYTES)
    fh = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    compressed = fh.read(2) == b"\x1f\x8b"
    fh.seek(0)
    raw = cast(IO[bytes], gzip.GzipFile(fileobj=fh)) if compressed else fh
    return cast(IO[bytes], io.BufferedReader(_Capped(raw, cap, fh)))


def _protobuf_document(path: str | Path, needle: str | None) -> Iterator[Document | ReadError]:
    """The one request of an OTLP protobuf file, as its OTLP/JSON dict."""
    with _open_binary(path) as fh:
        data = fh.read()
    try:
        doc = decode_request(data)
    except ImportError:
        message = (
            "the file is not JSON text, and reading it as OTLP protobuf needs "
            "opentelemetry-proto: pip install 'agentgauge[otel]'"
        )
        yield ReadError(str(path), 1, None, message)
        return
    except ValueError as exc:
        yield ReadError(str(path), 1, None, f"the file is not JSON text, and {exc}")
        return
    if needle is None or needle in doc:
        yield Document(1, doc)


def read_documents(
    path: str | Path, needle: str | None = None, *, binary: bool = False
) -> Iterator[Document | ReadError]:
    """The JSON documents of a file with the line each starts on.

    One document per line (the file exporter); when the first line is not a whole document the
    file is read as one document or several concatenated ones (pretty-printed output). A file
    that cannot be read on (not UTF-8, a corrupt ``.gz``) ends with a ReadError. With a
    ``needle``, only the lines (or the whole text) containing it are parsed.
    """
    last = 0
    try:
        if binary:
            yield from _protobuf_document(path, needle)
            return
        for item in _documents_of(path, needle):
            last = item.line
            yield item
    except (UnicodeDecodeError, OSError, EOFError, zlib.error) as exc:
        yield ReadError(str(path), last + 1, None, f"the file cannot be read on: {exc}")


def is_binary(path: str | Path) -> bool:
    """Whether a file's content is binary (protobuf) rather than JSON text; a file that cannot
    be read counts as text, whose reader reports why."""
    try:
        with _open_binary(path) as fh:
            return is_protobuf(fh.read(64))
    except (OSError, EOFError, zlib.error):
        return False


def _documents_of(path: str | Path, needle: str | None) -> Iterator[Document | ReadError]:
    source = str(path)
    with io.TextIOWrapper(_open_binary(path), encoding="utf-8-sig") as fh:
        first = 0
        for first, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                doc, replaced = decode_document(text)
                if needle is None or needle in text:
                    yield Document(first, doc, replaced)
            except json.JSONDecodeError as exc:
                if exc.pos < len(text.rstrip()):
                    yield invalid_json(source, first, exc)  # a broken line of a JSONL file
                else:
                    # a document that goes on past its first line: pretty-printed JSON
                    rest = text + fh.read()
                    if needle is None or needle in rest:
                        yield from _concatenated(rest, source, first)
                    return
            except DECODE_ERRORS as exc:
                yield decode_error(source, first, exc)
            break
        for number, text in enumerate(fh, start=first + 1):
            if text.strip() and (needle is None or needle in text):
                try:
                    yield Document(number, *decode_document(text))
                except DECODE_ERRORS as exc:
                    yield decode_error(source, number, exc)


def _integer(digits: str) -> int | float:
    """A JSON integer of a span document; one longer than Python reads (4,300 digits) is read
    as an infinity, so that the value it stands for (a time, a token count, an attribute) is
    left out with a warning, as an infinite number is, and its document is read."""
    try:
        return int(digits)
    except ValueError:
        return -math.inf if digits.startswith("-") else math.inf


_DECODER = json.JSONDecoder(parse_int=_integer)


def decode_document(text: str) -> tuple[Any, list[tuple[str | int, ...]]]:
    """A span document's JSON text decoded: a lone surrogate read as U+FFFD (the trace it
    makes is written) and an integer too long to read as an infinity (the value is left out
    with a warning); returns the document and where surrogates were replaced.

    Args:
        text: the JSON text of one document (a file's, a line's, a request's).

    Raises:
        json.JSONDecodeError: the text is not JSON (its position tells a pretty-printed
            document from a broken line), or another of :data:`~agentgauge._safe.DECODE_ERRORS`
            (:func:`~agentgauge._safe.describe` says it for a user).
    """
    # one decoder for every document (json.loads builds one a call); json.loads for a text
    # that opens with a byte-order mark, which it refuses in its own words
    doc = json.loads(text, parse_int=_integer) if text[:1] == "\ufeff" else _DECODER.decode(text)
    return replace_surrogates(doc) if may_hold_surrogate(text) else (doc, [])


def _second_line_is_json(text: str) -> bool:
    """Whether the second non-blank line is a whole JSON document: a JSONL file whose first
    line is cut short, not a pretty-printed document that is."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        json.loads(lines[1])
    except DECODE_ERRORS:
        return False
    return True


def _concatenated(text: str, source: str, first_line: int) -> Iterator[Document | ReadError]:
    pos, n_docs = 0, 0
    surrogates = may_hold_surrogate(text)
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        line = first_line + text.count("\n", 0, pos)
        try:
            doc, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            if n_docs == 0 and _second_line_is_json(text):
                # not pretty-printed JSON either: one document per line, with a bad first line
                for offset, raw in enumerate(text.splitlines()):
                    if raw.strip():
                        try:
                            yield Document(first_line + offset, *decode_document(raw))
                        except DECODE_ERRORS as line_exc:
                            yield decode_error(source, first_line + offset, line_exc)
                return
            message = f"invalid JSON: {exc.msg} at column {exc.colno}"
            if exc.pos >= len(text.rstrip()):
                message = f"invalid JSON: the document that starts on line {line} ends early"
            at = min(exc.pos, len(text.rstrip()))  # the last line with content, at the end
            yield ReadError(
                source,
                first_line + text.count("\n", 0, at),
                None,
                f"{message}; the rest of the file is skipped",
            )
            return
        except DECODE_ERRORS as exc:
            yield ReadError(source, line, None, f"{describe(exc)}; the rest of the file is skipped")
            return
        doc, replaced = replace_surrogates(doc) if surrogates else (doc, [])
        yield Document(line, doc, replaced)
        n_docs += 1
        pos = end
