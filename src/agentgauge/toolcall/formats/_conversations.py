"""Chat conversations with tool calls (the ``deepfabric`` and ``openai`` formats), and what
every format's reader shares: the line error and the expected call of one value each.

A conversation gives one task per assistant turn, ``<id>#<n>``: each assistant message that
calls tools or answers in text, ``n`` counting every assistant message from 1 (``turns="last"``:
only the last of them, as ``<id>``). The task's input is the conversation before that message
(earlier calls and tool results included), its expected calls the message's ``tool_calls`` (none:
the model should answer without a call), its reference answer the message's text (the
conversation's ``final_answer`` for the last turn). Any tool-call id and extra keys are accepted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import AliasChoices, Field, ValidationError

from agentgauge._safe import DECODE_ERRORS
from agentgauge.io.jsonl import (
    ReadError,
    decode_error,
    iter_raw_lines,
    validate_line,
    validation_read_error,
)
from agentgauge.io.openai_chat import (
    CallFunction,
    ChatTool,
    Loose,
    decode_arguments,
    message_text,
    tool_spec,
)
from agentgauge.model import JSON, ExpectedCall, Task, ToolSpec
from agentgauge.toolcall.formats import Turns

__all__ = ["LineError", "expected_call", "read_conversations"]


class LineError(Exception):
    """A line that cannot become a task: the field at fault and what is wrong with it.

    Args:
        field: the field's path in the line, None for the whole line.
        message: what is wrong.
    """

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class _MessageToolCall(Loose):
    id: str | None = None
    function: CallFunction


class _Message(Loose):
    role: str
    content: JSON = None
    tool_calls: list[_MessageToolCall] | None = None


class _Execution(Loose):
    function_name: str
    arguments: str | dict[str, JSON] | None = None


class _ToolContext(Loose):
    executions: list[_Execution] = Field(default_factory=list)


class _Conversation(Loose):
    id: str | int | None = None
    # DeepFabric's older layout names the messages "conversations"
    messages: list[_Message] = Field(
        min_length=1, validation_alias=AliasChoices("messages", "conversations")
    )
    tools: list[ChatTool] | None = None
    tool_context: _ToolContext | None = None
    final_answer: str | None = None
    metadata: dict[str, JSON] | None = None


def _decoded_arguments(raw: str | dict[str, JSON] | None, field: str) -> dict[str, JSON]:
    try:
        return decode_arguments(raw)
    except ValueError as exc:
        raise LineError(field, str(exc)) from None


def expected_call(name: str, arguments: Mapping[str, JSON]) -> ExpectedCall:
    """The expected call of ``name`` with exactly these argument values.

    Args:
        name: the function.
        arguments: each argument's one acceptable value.
    """
    return ExpectedCall(name=name, arguments={k: [v] for k, v in arguments.items()})


def _tool_spec(tool: ChatTool, field: str) -> ToolSpec:
    try:
        return tool_spec(tool)
    except ValueError as exc:
        raise LineError(field, str(exc)) from None


def _prompt_message(message: _Message) -> dict[str, JSON]:
    """A message as sent again in a later turn's prompt (tool-call arguments as JSON text)."""
    sent: dict[str, JSON] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        sent["tool_calls"] = [
            {
                **({"id": call.id} if call.id is not None else {}),
                "type": "function",
                "function": {
                    "name": call.function.name,
                    "arguments": call.function.arguments
                    if isinstance(call.function.arguments, str)
                    else json.dumps(call.function.arguments or {}),
                },
            }
            for call in message.tool_calls
        ]
    for key in ("tool_call_id", "name"):
        value = (message.model_extra or {}).get(key)
        if isinstance(value, str):
            sent[key] = value
    return sent


def _turn_calls(conv: _Conversation, index: int) -> list[ExpectedCall]:
    calls = (conv.messages[index].tool_calls or []) if index < len(conv.messages) else []
    return [
        expected_call(
            call.function.name,
            _decoded_arguments(
                call.function.arguments, f"messages[{index}].tool_calls[{j}].function.arguments"
            ),
        )
        for j, call in enumerate(calls)
    ]


def _conversation_tasks(
    conv: _Conversation, source: str, line: int, turns: Turns, executions_fallback: bool
) -> list[Task]:
    """One task per assistant message that calls tools or answers (numbered among all the
    assistant messages from 1); only the last one for ``turns="last"``."""
    base_id = str(conv.id) if conv.id is not None else f"line-{line}"
    messages = conv.messages
    assistant = [i for i, m in enumerate(messages) if m.role == "assistant"]
    chosen = [
        (n, i)
        for n, i in enumerate(assistant, start=1)
        if messages[i].tool_calls or message_text(messages[i].content)
    ]
    if not chosen:  # nothing to score yet: the assistant's first turn
        chosen = [(1, assistant[0] if assistant else len(messages))]
    executions = conv.tool_context.executions if conv.tool_context else []
    fallback: list[ExpectedCall] = []
    if executions_fallback and executions and not any(m.tool_calls for m in messages):
        # DeepFabric's own evaluator expects the first execution at the first turn
        first = executions[0]
        field = "tool_context.executions[0].arguments"
        fallback = [expected_call(first.function_name, _decoded_arguments(first.arguments, field))]
    tools = [_tool_spec(t, f"tools[{i}]") for i, t in enumerate(conv.tools or [])]
    metadata: dict[str, JSON] = {"source": source, "conversation_id": base_id}
    if conv.metadata:
        metadata["dataset_metadata"] = conv.metadata
    tasks = []
    for n, i in chosen[-1:] if turns == "last" else chosen:
        expected = _turn_calls(conv, i) or (fallback if (n, i) == chosen[0] else [])
        if (n, i) == chosen[-1] and conv.final_answer:
            reference = conv.final_answer
        elif expected or i == len(messages):
            reference = None
        else:
            reference = message_text(messages[i].content)
        user = next(
            (message_text(m.content) for m in reversed(messages[:i]) if m.role == "user"), None
        )
        tasks.append(
            Task(
                id=f"{base_id}#{n}" if turns == "all" else base_id,
                input=[_prompt_message(m) for m in messages[:i]],
                description=user or "",
                expected_output=reference,
                tools=tools,
                expected_calls=expected,
                reference_trajectory=[e.function_name for e in executions] or None,
                metadata={**metadata, "turn": n},
            )
        )
    return tasks


def read_conversations(
    path: str | Path, source: str, *, turns: Turns = "all", executions_fallback: bool = False
) -> Iterator[Task | ReadError]:
    """Stream chat conversations as Tasks, one per assistant turn.

    Args:
        path: a JSONL file (optionally ``.gz``), one conversation per line.
        source: the format's name, recorded in each task's ``metadata["source"]``.
        turns: ``all``: a task ``<id>#<n>`` per assistant message that calls tools or answers,
            ``n`` counting every assistant message from 1; ``last``: only the last of them,
            as ``<id>``.
        executions_fallback: a conversation whose messages carry no call expects the first of
            its ``tool_context.executions`` at its first turn (as DeepFabric's own evaluator
            does).
    """
    for raw in iter_raw_lines(path):
        conv = validate_line(_Conversation, raw)
        if isinstance(conv, ReadError):
            yield conv
            continue
        try:
            yield from _conversation_tasks(conv, source, raw.line, turns, executions_fallback)
        except LineError as exc:
            yield ReadError(raw.source, raw.line, exc.field, exc.message)
        except ValidationError as exc:
            yield validation_read_error(raw.source, raw.line, exc)
        except DECODE_ERRORS as exc:  # a value too large or too deep to use
            yield decode_error(raw.source, raw.line, exc)
