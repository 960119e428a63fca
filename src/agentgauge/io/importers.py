"""Importers: a format name -> a function that streams a file's Traces (and ReadErrors)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentgauge.io.jsonl import ReadError, read_traces, write_traces
from agentgauge.io.openai_chat import read_openai_chat
from agentgauge.io.otel import read_otel
from agentgauge.model import Trace

__all__ = ["IMPORTERS", "ImportCounts", "Importer", "convert", "get_importer"]

Importer = Callable[[str | Path], Iterator[Trace | ReadError]]

IMPORTERS: dict[str, Importer] = {
    "native": read_traces,
    "otel": read_otel,
    "openai-chat": read_openai_chat,
}
"""``native``: agentgauge JSONL; ``otel``: OpenTelemetry GenAI / OpenInference OTLP/JSON spans;
``openai-chat``: chats in OpenAI's message format with optional expected messages."""


def get_importer(name: str) -> Importer:
    """The importer of a format.

    Args:
        name: a key of :data:`IMPORTERS`.

    Raises:
        ValueError: for an unknown format, naming the known ones.
    """
    try:
        return IMPORTERS[name]
    except KeyError:
        known = ", ".join(sorted(IMPORTERS))
        raise ValueError(f"unknown trace format {name!r}: use one of {known}") from None


@dataclass(frozen=True)
class ImportCounts:
    """What :func:`convert` did.

    Args:
        traces: traces written.
        errors: records of the input that could not be read as a trace.
    """

    traces: int
    errors: int


def convert(
    paths: Sequence[str | Path],
    out: str | Path,
    read: Importer,
    *,
    on_error: Callable[[ReadError], None] | None = None,
) -> ImportCounts:
    """Read files with an importer and write their traces as native JSONL.

    Args:
        paths: the files to read, in this order.
        out: the JSONL file to write (``.gz`` compresses it).
        read: the importer of the files' format.
        on_error: called with each record that could not be read, as it is met.
    """
    n_errors = 0

    def traces() -> Iterable[Trace]:
        nonlocal n_errors
        for path in paths:
            for item in read(path):
                if isinstance(item, ReadError):
                    n_errors += 1
                    if on_error is not None:
                        on_error(item)
                else:
                    yield item

    n_traces = write_traces(traces(), out)
    return ImportCounts(n_traces, n_errors)
