"""OpenAI chat conversations whose assistant messages carry ``tool_calls``, with ``tools``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from agentgauge.io.jsonl import ReadError
from agentgauge.model import Task
from agentgauge.toolcall.formats import Turns, dataset_format
from agentgauge.toolcall.formats._conversations import read_conversations

__all__ = ["read_openai"]


@dataset_format("openai", description="OpenAI chat conversations with tool_calls, and tools")
def read_openai(path: str | Path, turns: Turns = "all") -> Iterator[Task | ReadError]:
    """OpenAI chat conversations with tool_calls and tools.

    Args:
        path: a JSONL file (optionally ``.gz``), one conversation per line.
        turns: a task per assistant turn (``all``) or for the last one (``last``).
    """
    return read_conversations(path, "openai", turns=turns)
