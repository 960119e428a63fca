"""The native format: JSONL, one Trace per line, plain or gzip-compressed.

Reading streams line by line and never holds a whole file. A line that is not valid JSON or
not a valid Trace becomes a :class:`ReadError` naming the file, the line and the field, and
reading goes on.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from agentgauge._atomic import atomic_path
from agentgauge._redact import redact_json
from agentgauge._safe import (
    DECODE_ERRORS,
    NESTED_TOO_DEEPLY,
    describe,
    may_hold_surrogate,
    replace_surrogates,
    size_limit,
    unexpected,
)
from agentgauge.model import Trace

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "MAX_LINE_BYTES",
    "NESTED_TOO_DEEPLY",
    "WARNING",
    "RawLine",
    "ReadError",
    "count_lines",
    "decode_error",
    "error_line",
    "error_message",
    "field_path",
    "invalid_json",
    "iter_raw_lines",
    "open_text",
    "parse_line",
    "printable",
    "read_traces",
    "read_warning",
    "storable_trace",
    "surrogate_note",
    "surrogate_warning",
    "validate_line",
    "validation_read_error",
    "write_traces",
]


WARNING = "warning: "
"""How the message of a warning begins: a value was left out or replaced, and the record that
holds it was read (:func:`read_warning`)."""


@dataclass(frozen=True)
class ReadError:
    """A line that could not be read as a Trace, or a warning about one that was read with a
    value left out or replaced (its message begins with ``warning: ``).

    Args:
        source: the file it came from.
        line: 1-based line number.
        field: dotted path of the offending field, or None when the line is not JSON.
        message: what is wrong.
    """

    source: str
    line: int
    field: str | None
    message: str

    @property
    def warning(self) -> bool:
        """Whether this is a warning: the record was read, without the value named."""
        return self.message.startswith(WARNING)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return error_line(self.source, self.line, self.field, self.message)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def error_line(source: str, line: int, field: str | None, message: str) -> str:
    """``file:line: field: message`` for a terminal: control characters from the input (an
    escape sequence in a bad key) are shown escaped, never sent to the terminal.

    Args:
        source: the file.
        line: 1-based line number.
        field: the offending field, if any.
        message: what is wrong.
    """
    text = f"{source}:{line}: {field}: {message}" if field else f"{source}:{line}: {message}"
    return printable(text)


def printable(text: str) -> str:
    """``text`` for a terminal: control characters (an escape sequence from the input) are
    shown escaped, never sent to the terminal.

    Args:
        text: any text that came from the input.
    """
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text)


@dataclass(frozen=True)
class RawLine:
    """One unparsed line, so that parsing can happen in a worker process.

    Args:
        source: the file it came from.
        line: 1-based line number.
        text: the line.
        trace_format: the importer that reads it (a format of one trace per line).
    """

    source: str
    line: int
    text: str
    trace_format: str = "native"

    @property
    def key(self) -> str:
        return f"{self.source}#{self.line}"


def open_text(path: str | Path, mode: str = "r") -> IO[str]:
    """Open a text file, transparently gzip-compressed when its name ends in ``.gz``."""
    p = Path(path)
    if p.suffix == ".gz":
        binary = gzip.GzipFile(p, mode.replace("t", "") + "b")
        return io.TextIOWrapper(binary, encoding="utf-8")
    return open(p, mode, encoding="utf-8")


def _binary_lines(path: str | Path) -> IO[bytes]:
    p = Path(path)
    return cast(IO[bytes], gzip.GzipFile(p, "rb")) if p.suffix == ".gz" else open(p, "rb")


MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line a reader takes (``AGENTGAUGE_MAX_LINE_BYTES`` sets another); a longer one
is an error of that line, skipped without being held in memory."""


def iter_raw_lines(
    path: str | Path,
    *,
    start: int = 0,
    end: int | None = None,
    first_line: int = 1,
    opener: Callable[[], IO[bytes]] | None = None,
    trace_format: str = "native",
) -> Iterator[RawLine | ReadError]:
    """Yield the non-blank lines of a JSONL file with their 1-based numbers.

    A UTF-8 byte-order mark is skipped. A line that is not UTF-8 comes out as a ReadError and
    reading goes on; a file that cannot be read on (a corrupt or truncated ``.gz``) ends with
    a ReadError at the line it stopped.

    Args:
        path: the file (its name is the lines' source).
        start: read the lines that begin at or after this byte offset (a plain file's shard).
        end: and before this one; None reads to the end.
        first_line: the number of the first line that begins at or after ``start``.
        opener: opens the file as binary (a remote file's stream); ``path`` is opened
            (``.gz`` decompressed) by default.
        trace_format: the format of its lines, named in each :class:`RawLine`.
    """
    source = str(path)
    number = first_line - 1
    limit = size_limit("AGENTGAUGE_MAX_LINE_BYTES", MAX_LINE_BYTES)
    try:
        with (opener or (lambda: _binary_lines(path)))() as fh:
            position = _line_start_at(fh, start)
            while end is None or position < end:
                data = fh.readline(limit + 1)
                if not data:
                    break
                number += 1
                position += len(data)
                if len(data) > limit and not data.endswith(b"\n"):
                    # what is left of the line is skipped unread, not held in memory
                    position += _skip_line(fh)
                    yield ReadError(
                        source,
                        number,
                        None,
                        f"the line is longer than {limit} bytes (the limit is set with "
                        "AGENTGAUGE_MAX_LINE_BYTES)",
                    )
                    continue
                if number == 1:
                    data = data.removeprefix(codecs.BOM_UTF8)
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield ReadError(
                        source, number, None, f"not UTF-8 text (byte {exc.start + 1} of the line)"
                    )
                    continue
                if text and not text.isspace():  # not blank (strip() would copy the line)
                    yield RawLine(source, number, text, trace_format)
    except (OSError, EOFError, zlib.error) as exc:
        yield ReadError(source, number + 1, None, f"the file cannot be read on: {exc}")


def _skip_line(fh: IO[bytes]) -> int:
    """Read past the rest of the current line, a megabyte at a time; returns the bytes read."""
    skipped = 0
    while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
        skipped += len(rest)
    return skipped + len(rest)


def _line_start_at(fh: IO[bytes], start: int) -> int:
    """Move to the first line that begins at or after ``start`` (a shard's first line: the
    line that began before it is the previous shard's); returns its offset."""
    if start <= 0:
        return 0
    fh.seek(start - 1)
    if fh.read(1) == b"\n":
        return start
    return start + _skip_line(fh)


def count_lines(paths: Iterable[str | Path]) -> int:
    """Count the non-blank lines of the files (for a progress bar's total); a file that cannot
    be read to its end counts what could be read."""
    total = 0
    for path in paths:
        try:
            with _binary_lines(path) as fh:
                total += sum(1 for data in fh if data.strip())
        except (OSError, EOFError, zlib.error):
            continue
    return total


def field_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a dotted path: ``("steps", 2, "kind")`` → ``steps[2].kind``.

    Args:
        loc: the ``loc`` of one entry of ``ValidationError.errors()``.
    """
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def error_message(error: Mapping[str, Any]) -> str:
    """The message of one pydantic error, without the "Value error, " that pydantic puts
    before the text of a ValueError raised in a validator.

    Args:
        error: one entry of ``ValidationError.errors()``.
    """
    message = str(error["msg"])
    for prefix in _PYDANTIC_PREFIXES:
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


_AT_BYTE = re.compile(r"^Invalid JSON: (?P<what>.*) at line 1 column (?P<column>\d+)$", re.DOTALL)


def _parser_message(message: str, text: str) -> str:
    """pydantic's "Invalid JSON: ... at line 1 column N" as the stdlib's errors read: its
    column counts bytes of UTF-8, the stdlib's (and an editor's) characters."""
    found = _AT_BYTE.match(message)
    if found is None:
        return message
    before = text.encode("utf-8", "surrogatepass")[: int(found["column"]) - 1]
    column = len(before.decode("utf-8", "ignore")) + 1
    return f"invalid JSON: {found['what']} at column {column}"


def invalid_json(source: str, line: int, exc: json.JSONDecodeError) -> ReadError:
    """A ReadError for text that is not JSON, with the column the stdlib parser reports.

    Args:
        source: the file.
        line: 1-based line number.
        exc: the parser's error.
    """
    return decode_error(source, line, exc)


def decode_error(source: str, line: int, exc: BaseException) -> ReadError:
    """A ReadError for a line that could not be decoded, whatever the reason (not JSON, an
    integer too long, nesting too deep, a number too large, text that is not Unicode).

    Args:
        source: the file.
        line: 1-based line number.
        exc: one of :data:`agentgauge._safe.DECODE_ERRORS`.
    """
    return ReadError(source, line, None, describe(exc))


def validation_read_error(
    source: str, line: int, exc: ValidationError, *, prefix: str | None = None
) -> ReadError:
    """The first error of a pydantic ValidationError as a ReadError, counting the others.

    Args:
        source: the file.
        line: 1-based line number.
        exc: the validation error.
        prefix: prepended to the field path (e.g. the trace a span group builds).
    """
    first = exc.errors()[0]
    path = field_path(first["loc"])
    if prefix:
        path = f"{prefix}: {path}" if path else prefix
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return ReadError(source, line, path or None, error_message(first) + more)


def read_warning(source: str, line: int, field: str | None, message: str) -> ReadError:
    """A warning: the record at ``line`` was read, with the value at ``field`` left out or
    replaced as ``message`` says.

    Args:
        source: the file.
        line: 1-based line number.
        field: the value's dotted path.
        message: what was done, for a user.
    """
    return ReadError(source, line, field, WARNING + message)


def surrogate_note(
    where: list[tuple[str | int, ...]], *, prefix: str | None = None
) -> tuple[str, str]:
    """The field and the message of the warning for text read with a lone surrogate replaced
    by U+FFFD (half of a UTF-16 pair: no file and no store can hold it as text).

    Args:
        where: the paths of the strings (or keys) replaced, in order (not empty).
        prefix: put before the first path (the trace a value belongs to).
    """
    path = field_path(where[0]) or "(the value itself)"
    more = f" (and {len(where) - 1} more)" if len(where) > 1 else ""
    message = f"a lone surrogate (half of a UTF-16 pair, not text) was read as U+FFFD{more}"
    return (f"{prefix}: {path}" if prefix else path), message


def surrogate_warning(
    source: str, line: int, where: list[tuple[str | int, ...]], *, prefix: str | None = None
) -> ReadError:
    """The warning of :func:`surrogate_note` for a line.

    Args:
        source: the file.
        line: 1-based line number.
        where: the paths of the strings (or keys) replaced, in order (not empty).
        prefix: put before the first path (the trace a value belongs to).
    """
    return read_warning(source, line, *surrogate_note(where, prefix=prefix))


def validate_line(
    model: type[M], raw: RawLine | ReadError, warnings: list[ReadError] | None = None
) -> M | ReadError:
    """Validate one JSON line as ``model``, or return a ReadError naming the field at fault.

    Args:
        model: a pydantic model class.
        raw: the line (a line that could not be read is passed through).
        warnings: where the warning about a line read with a value replaced goes (a lone
            surrogate read as U+FFFD); without it the replacement is silent.
    """
    if isinstance(raw, ReadError):
        return raw
    try:
        if may_hold_surrogate(raw.text):
            # a lone surrogate is read as U+FFFD: what cannot be written is not read
            data, where = replace_surrogates(json.loads(raw.text))
            parsed = model.model_validate(data)
            if where and warnings is not None:
                warnings.append(surrogate_warning(raw.source, raw.line, where))
            return parsed
        return model.model_validate_json(raw.text)
    except ValidationError as exc:
        error = exc
    except DECODE_ERRORS as exc:  # raised by a validator on a hostile value
        return decode_error(raw.source, raw.line, exc)
    except Exception as exc:  # the import boundary: a bug costs this line only
        return ReadError(raw.source, raw.line, None, unexpected(exc))
    first = error.errors()[0]
    if first["type"] == "json_invalid" or (first["type"] == "model_type" and not first["loc"]):
        # pydantic's message has no position: the stdlib parser says where, or what it got
        try:
            data = json.loads(raw.text)
        except DECODE_ERRORS as jexc:
            return decode_error(raw.source, raw.line, jexc)
        if isinstance(data, dict):
            # the stdlib read it and pydantic's parser did not (its depth limit, a lone surrogate)
            return ReadError(
                raw.source, raw.line, None, _parser_message(error_message(first), raw.text)
            )
        return ReadError(
            raw.source, raw.line, None, f"expected a JSON object, got {type(data).__name__}"
        )
    return validation_read_error(raw.source, raw.line, error)


def parse_line(
    raw: RawLine | ReadError, warnings: list[ReadError] | None = None
) -> Trace | ReadError:
    """Parse one line into a Trace, or a ReadError naming the field at fault.

    Args:
        raw: the line.
        warnings: where the warning about a value replaced goes (:func:`validate_line`).
    """
    return validate_line(Trace, raw, warnings)


def storable_trace(trace: Trace) -> tuple[Trace, list[tuple[str | int, ...]]]:
    """``trace`` as a file and the store can write it, and where it was not: a lone surrogate
    that a reader decoded inside a value (JSON text in a span attribute, a tool call's
    arguments given as text) is read as U+FFFD (:func:`surrogate_note` says so).

    Args:
        trace: a trace a reader made.
    """
    try:
        trace.model_dump_json()
    except PydanticSerializationError:
        data, where = replace_surrogates(trace.model_dump())
        if not where:
            raise
        return Trace.model_validate(data), where
    return trace, []


def read_traces(path: str | Path) -> Iterator[Trace | ReadError]:
    """Stream the Traces of a JSONL file; bad lines come out as ReadError and reading goes on
    (a line read with a value replaced comes after its warning).

    Args:
        path: a ``.jsonl`` file, optionally ``.gz``-compressed.
    """
    for raw in iter_raw_lines(path):
        warnings: list[ReadError] = []
        trace = parse_line(raw, warnings)
        yield from warnings
        yield trace


def write_traces(traces: Iterable[Trace], path: str | Path, *, keep_secrets: bool = False) -> int:
    """Write Traces as JSONL (gzip when the name ends in ``.gz``); returns how many.

    Args:
        traces: the traces.
        path: the file to write.
        keep_secrets: write credentials as they are; by default they are hidden as the store
            hides them (:func:`agentgauge._redact.redact_json`), every value keeping its type.
    """
    n = 0
    with atomic_path(path) as temporary, open_text(temporary, "w") as fh:
        for trace in traces:
            text = trace.model_dump_json(exclude_none=True)
            fh.write(text if keep_secrets else redact_json(text))
            fh.write("\n")
            n += 1
    return n
