"""DeepFabric conversations: ``messages`` (or ``conversations`` in its older layout), ``tools``
in OpenAI format, ``tool_context.executions``.

Any tool-call id and extra keys are accepted (DeepFabric's own validator rejects ids such as
``call_0`` that its docs use). A conversation whose messages carry no call expects the first of
its ``tool_context.executions`` at its first turn, as DeepFabric's own evaluator does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from agentgauge.io.jsonl import ReadError
from agentgauge.model import Task
from agentgauge.toolcall.formats import Turns, dataset_format
from agentgauge.toolcall.formats._conversations import read_conversations

__all__ = ["read_deepfabric"]


@dataset_format(
    "deepfabric", description="DeepFabric conversations: messages, tools, tool_context.executions"
)
def read_deepfabric(path: str | Path, turns: Turns = "all") -> Iterator[Task | ReadError]:
    """DeepFabric conversations (messages, tools, tool_context.executions).

    Args:
        path: a JSONL file (optionally ``.gz``), one conversation per line.
        turns: a task per assistant turn (``all``) or for the last one (``last``).
    """
    return read_conversations(path, "deepfabric", turns=turns, executions_fallback=True)
