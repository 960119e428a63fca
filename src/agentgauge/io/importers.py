"""Importers: a format name -> a function that streams a file's Traces (and ReadErrors)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from agentgauge.io.jsonl import ReadError, read_traces
from agentgauge.io.openai_chat import read_openai_chat
from agentgauge.io.otel import read_otel
from agentgauge.model import Trace

__all__ = ["IMPORTERS", "Importer", "get_importer"]

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
