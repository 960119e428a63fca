"""Importers: a trace format's name -> the reader that streams a file's Traces (and ReadErrors).

Built in: ``native`` (agentgauge JSONL), ``otel`` (OpenTelemetry GenAI / OpenInference
OTLP/JSON spans) and ``openai-chat`` (chats in OpenAI's message format with optional expected
messages). Other packages add theirs through the ``agentgauge.importers`` entry-point
group::

    @importer("csv", description="one trace per CSV row")
    def read_csv(path: str | Path) -> Iterator[Trace | ReadError]: ...

An importer's keyword options (``read_otel``'s ``group_by``, ...) are listed in its
:class:`ImporterInfo`, so that a command passes each importer only the options it takes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

from agentgauge._safe import unexpected
from agentgauge.io.jsonl import RawLine, ReadError, count_lines, write_traces
from agentgauge.registry import Registry, keyword_options

if TYPE_CHECKING:
    from agentgauge.model import Trace

__all__ = [
    "BUILTIN_IMPORTERS",
    "IMPORTERS",
    "ImportCounts",
    "Importer",
    "ImporterInfo",
    "Pending",
    "convert",
    "get_importer",
    "importer",
    "isolated",
    "parse_raw_line",
]

Importer: TypeAlias = "Callable[..., Iterator[Trace | ReadError]]"
"""``read(path, **options)``: the file's traces, and a ReadError for each part it cannot read."""


class Pending(Protocol):
    """A record a reader has found but not yet made into its Trace: the rest of the work is
    done where the record is scored (a worker), not in the process that reads the file.

    ``id`` is the id of the Trace it makes (what the record is keyed by before it is made).
    """

    @property
    def id(self) -> str: ...

    def finish(self, warnings: list[ReadError]) -> Trace | ReadError:
        """The record's Trace, or what is wrong with it; warnings about it (values left out
        or replaced) go in ``warnings``, in order.

        Args:
            warnings: where its warnings go.
        """
        ...


PendingReader: TypeAlias = "Callable[[str | Path], Iterator[Trace | ReadError | Pending]]"
"""A reader that leaves part of its records' work to the scoring workers (:class:`Pending`)."""

LineSplitter: TypeAlias = "Callable[[str | Path], Iterator[RawLine | ReadError]]"
LineParser: TypeAlias = "Callable[[RawLine, list[ReadError]], Trace | ReadError]"
"""One line's trace (or what is wrong with it); a warning about the line (a value left out or
replaced) goes in the list, before the trace."""


@dataclass(frozen=True)
class ImporterInfo:
    """What the registry knows about an importer.

    Args:
        name: the format's name (``--format``).
        read: the reader.
        options: the reader's keyword options and their defaults.
        lines: for a format of one trace per line: the file's raw lines, each naming this
            format, parsed later in the scoring workers (in parallel) by ``parse``; None when
            only ``read`` reads the format.
        no_trace_hint: what to tell a user whose files gave no trace at all.
        parse: with ``lines``: one line's trace (or what is wrong with it).
        pending: for a format whose records span lines (a run's spans over a whole file): a
            reader like ``read`` whose items may be :class:`Pending` records, which the
            scoring workers finish (in parallel); None when ``read`` does all the work.
        prepare: loads what finishing its records needs (the conventions that read spans),
            called before the scoring workers start: forked workers share what it loaded
            instead of each loading it on its first batch.
    """

    name: str
    read: Importer
    options: dict[str, Any]
    lines: LineSplitter | None = None
    no_trace_hint: str | None = None
    parse: LineParser | None = None
    pending: PendingReader | None = None
    prepare: Callable[[], object] | None = None

    def items(self, paths: Iterable[str | Path]) -> Iterable[Trace | ReadError | RawLine | Pending]:
        """What the engine scores from ``paths``: raw lines when the format has them, else
        the pending reader's records when it has one, else the reader's traces and read
        errors (a reader that fails costs the rest of its file only: :func:`isolated`).

        Args:
            paths: the files, in order.
        """
        if self.lines is not None:
            return itertools.chain.from_iterable(self.lines(p) for p in paths)
        read = self.pending or self.read
        return itertools.chain.from_iterable(isolated(read, p) for p in paths)

    def count(self, paths: Iterable[str | Path]) -> int | None:
        """The number of items :meth:`items` yields, when it is known without reading.

        Args:
            paths: the files.
        """
        if self.lines is None:
            return None
        return count_lines(paths)


def importer(
    name: str,
    *,
    description: str = "",
    lines: LineSplitter | None = None,
    no_trace_hint: str | None = None,
    parse: LineParser | None = None,
    pending: PendingReader | None = None,
    prepare: Callable[[], object] | None = None,
) -> Callable[[Importer], Importer]:
    """Register a reader ``read(path, **options) -> Iterator[Trace | ReadError]`` as the
    importer of the format ``name``.

    Args:
        name: the format's name.
        description: one line for ``agentgauge plugins`` (default: the reader's docstring's
            first line).
        lines: see :class:`ImporterInfo`.
        no_trace_hint: see :class:`ImporterInfo`.
        parse: see :class:`ImporterInfo` (required with ``lines``).
        pending: see :class:`ImporterInfo`.
        prepare: see :class:`ImporterInfo`.
    """
    if (lines is None) != (parse is None):
        raise TypeError(f"@importer({name!r}): lines and parse go together")

    def info(read: Importer) -> ImporterInfo:
        if not callable(read):
            raise TypeError(f"@importer({name!r}) decorates a function, not {read!r}")
        options = keyword_options(read)
        return ImporterInfo(name, read, options, lines, no_trace_hint, parse, pending, prepare)

    return IMPORTERS.decorator(name, info, description=description)


_SPANS = "agentgauge.io.otel"
BUILTIN_IMPORTERS: dict[str, str] = {
    "native": "agentgauge.io.native",
    "otel": _SPANS,
    "otlp-json": _SPANS,
    "otlp-proto": _SPANS,
    "jaeger": _SPANS,
    "tempo": _SPANS,
    "openai-agents": _SPANS,
    "langsmith": _SPANS,
    "langfuse": _SPANS,
    "mlflow": _SPANS,
    "openai-chat": "agentgauge.io.openai_chat",
    "tau2": "agentgauge.io.tau2",
}
"""Which module registers each built-in format: ``--format native`` imports the native reader
alone (not the span readers, nor tau2's conversations). A test checks this table against what
the modules register."""

IMPORTERS: Registry[ImporterInfo] = Registry(
    "trace format",
    "agentgauge.importers",
    builtins=(
        "agentgauge.io.native",
        "agentgauge.io.otel",
        "agentgauge.io.openai_chat",
        "agentgauge.io.tau2",
    ),
    adopt=lambda name, obj: importer(name)(obj),
    index=BUILTIN_IMPORTERS,
)
"""Every importer by format name."""


def parse_raw_line(raw: RawLine, warnings: list[ReadError]) -> Trace | ReadError:
    """The trace of one raw line, read by the importer its format names (in a worker).

    Args:
        raw: the line.
        warnings: where a warning about the line goes (a value left out or replaced).
    """
    parse = IMPORTERS.get(raw.trace_format).parse
    if parse is None:  # a raw line comes only from a format that has a parser
        raise ValueError(f"the {raw.trace_format!r} format reads whole files, not lines")
    return parse(raw, warnings)


def get_importer(name: str) -> Importer:
    """The reader of a format.

    Args:
        name: a registered format name.

    Raises:
        UnknownNameError: for an unknown format, naming the known ones.
    """
    return IMPORTERS.get(name).read


_Item = TypeVar("_Item")


def isolated(read: Callable[..., Iterator[_Item]], path: str | Path) -> Iterator[_Item | ReadError]:
    """``read(path)``, whose failure is an error of that file and not of the command: what it
    read before it stopped is kept, and the other files are read. (The built-in readers keep
    each record apart already: one that fails costs that record only.)

    Args:
        read: an importer's reader (or pending reader), with its options applied.
        path: the file.
    """
    line = 0
    try:
        for item in read(path):
            if isinstance(item, ReadError) and item.source == str(path):
                line = item.line
            yield item
    except Exception as exc:  # the import boundary: a reader's bug costs its file
        message = f"the rest of the file is not read: {unexpected(exc)}"
        yield ReadError(str(path), line + 1, None, message)


@dataclass(frozen=True)
class ImportCounts:
    """What :func:`convert` did.

    Args:
        traces: traces written.
        errors: records of the input that could not be read as a trace.
        warnings: records read with a value left out or replaced.
    """

    traces: int
    errors: int
    warnings: int = 0


def convert(
    paths: Sequence[str | Path],
    out: str | Path,
    read: Importer,
    *,
    on_error: Callable[[ReadError], None] | None = None,
    keep_secrets: bool = False,
) -> ImportCounts:
    """Read files with an importer and write their traces as native JSONL, their credentials
    hidden as the store hides them.

    Args:
        paths: the files to read, in this order.
        out: the JSONL file to write (``.gz`` compresses it).
        read: the reader of the files' format, with its options applied.
        on_error: called with each record that could not be read (and each warning), as it
            is met.
        keep_secrets: write credentials as they are.
    """
    n_errors = n_warnings = 0

    def traces() -> Iterable[Trace]:
        nonlocal n_errors, n_warnings
        for path in paths:
            for item in isolated(read, path):
                if isinstance(item, ReadError):
                    n_warnings += item.warning
                    n_errors += not item.warning
                    if on_error is not None:
                        on_error(item)
                else:
                    yield item

    n_traces = write_traces(traces(), out, keep_secrets=keep_secrets)
    return ImportCounts(n_traces, n_errors, n_warnings)
