"""The ``openai-chat`` format: one chat per line, in OpenAI's chat-completions message format.

A line is ``{"id", "messages", "tools", "expected_messages", "metadata"}``; only ``messages`` is
required. Messages are OpenAI chat messages (``role`` system/developer, user, assistant, tool;
assistant ``tool_calls`` as ``{"id", "function": {"name", "arguments"}}`` with arguments as a
JSON string or object) or LangChain message dicts (``role`` or ``type`` human/ai/tool, tool calls
as ``{"name", "args", "id"}``).

``messages`` become the trace's steps, one or more per message, empty messages included:

- a system or user message: a ``message`` step whose ``agent`` is ``system`` or ``user`` (the
  environment: never judged as the agent's work);
- an assistant message: an ``llm`` step with its text (``agent`` = the message's ``name``),
  then one ``tool_call`` step per call, whose ``parent_id`` is the ``llm`` step's id. Arguments
  that are not a JSON object are kept as ``{"_raw": text}`` so that the call is scored as made;
- a tool message: a ``tool_result`` step whose ``parent_id`` is the call it answers (its
  ``tool_call_id``, else the oldest call not yet answered).

The trace's ``output`` is the text of the last assistant message. ``expected_messages`` (absent:
no reference) become the task's ``reference_trajectory`` (one reference step per message, with
its role, text, tool calls and tool outputs) and its ``expected_calls`` (every reference call in
order; none when the reference makes no call), and the text of their last assistant message is
the task's ``expected_output``. The task's ``input`` is the conversation up to its first
assistant message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgauge._safe import DECODE_ERRORS, describe, may_hold_surrogate, unexpected
from agentgauge.io.importers import importer
from agentgauge.io.jsonl import (
    RawLine,
    ReadError,
    iter_raw_lines,
    storable_trace,
    surrogate_warning,
    validate_line,
    validation_read_error,
)
from agentgauge.model import (
    JSON,
    ExpectedCall,
    ReferenceStep,
    Role,
    Step,
    StepKind,
    Task,
    ToolCall,
    ToolSpec,
    Trace,
)

__all__ = [
    "CallFunction",
    "ChatFunction",
    "ChatTool",
    "Loose",
    "decode_arguments",
    "message_text",
    "parse_chat_line",
    "read_openai_chat",
    "tool_spec",
]


class Loose(BaseModel):
    """An input shape that keeps the keys it does not name."""

    model_config = ConfigDict(extra="allow")


class CallFunction(Loose):
    """The function of a tool call: its name and its arguments (a JSON string or an object)."""

    name: str
    arguments: str | dict[str, JSON] | None = None


class _Call(Loose):
    id: str | None = None
    function: CallFunction | None = None
    name: str | None = None
    args: dict[str, JSON] | None = None


class _Message(Loose):
    role: str | None = None
    type: str | None = None
    content: JSON = None
    name: str | None = None
    id: str | None = None
    tool_calls: list[_Call] | None = None
    tool_call_id: str | None = None


class ChatFunction(Loose):
    """A function offered to the model: ``{"name", "description", "parameters"}``."""

    name: str
    description: str = ""
    parameters: dict[str, JSON] | None = None


class ChatTool(Loose):
    """A tool offered to the model: OpenAI's ``{"type": "function", "function": {...}}`` or
    the flat ``{"name", "description", "parameters"}``."""

    function: ChatFunction | None = None
    name: str | None = None
    description: str = ""
    parameters: dict[str, JSON] | None = None


class _Chat(Loose):
    id: str | int | None = None
    messages: list[_Message] = Field(min_length=1)
    tools: list[ChatTool] | None = None
    expected_messages: list[_Message] | None = None
    metadata: dict[str, JSON] | None = None


_R = TypeVar("_R", bound=BaseModel)
_Make = Callable[[type[Any], dict[str, Any]], Any]
"""``make(model, fields)``: a record of the trace, validated or trusted."""

_set = object.__setattr__
_new = object.__new__


@cache
def _template(model: type[BaseModel]) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...]]:
    """A model's fields in order with their defaults, and the fields whose default a factory
    makes (a new one each time)."""
    fields = model.model_fields
    factories = tuple(
        (name, field.default_factory)
        for name, field in fields.items()
        if field.default_factory is not None
    )
    return {name: field.default for name, field in fields.items()}, factories


def _trusted(model: type[_R], fields: dict[str, Any]) -> _R:
    """A record of values that need no validation: the chat's own values, which its model
    validated as the record's field types are validated (and nested no deeper than the JSON
    parser allows), or values this reader made. It is the record validation would make, without
    checking every value once more (a chat's records were most of its reading time)."""
    template, factories = _template(model)
    values = template.copy()  # the fields in their order, as validation orders them
    values.update(fields)
    for name, factory in factories:
        if name not in fields:
            values[name] = factory()
    record = _new(model)
    _set(record, "__dict__", values)
    _set(record, "__pydantic_fields_set__", set(fields))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


def _validated(model: type[_R], fields: dict[str, Any]) -> _R:
    return model(**fields)


_DEEP_ENOUGH = 128
"""Arguments given as JSON text with this many brackets may be nested deeper than validation
takes: their call is validated (and its error located) as any record."""


class _FieldError(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
}


_JSON = json.JSONDecoder()  # as json.loads decodes


def decode_arguments(raw: str | dict[str, JSON] | None) -> dict[str, JSON]:
    """A tool call's arguments as a dict: a JSON object given as text or already decoded.

    Args:
        raw: the ``arguments`` of a call; None or ``""`` is no argument.

    Raises:
        ValueError: for text that is not JSON, or JSON that is not an object.
    """
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if raw[0] == "{" and raw[-1] == "}":
        # an object and nothing else, read as json.loads reads it, without its checks for
        # blanks around (half its time on a call's arguments); anything else is read, or
        # refused with the reason, by json.loads
        try:
            value, end = _JSON.raw_decode(raw)
        except Exception:
            end = -1
        if end == len(raw):
            return value  # type: ignore[no-any-return]
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON: {exc.msg}") from None
    except DECODE_ERRORS as exc:
        raise ValueError(f"arguments cannot be read: {describe(exc)}") from None
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def tool_spec(tool: ChatTool) -> ToolSpec:
    """The :class:`~agentgauge.model.ToolSpec` of a tool in OpenAI format.

    Args:
        tool: the tool as given.

    Raises:
        ValueError: when the tool has no name.
    """
    return _tool_spec(tool, _validated)


def _tool_spec(tool: ChatTool, make: _Make) -> ToolSpec:
    fn = tool.function
    name = fn.name if fn is not None else tool.name
    if not name:
        raise ValueError("a tool needs function.name (or name)")
    params = fn.parameters if fn is not None else tool.parameters
    description = fn.description if fn is not None else tool.description
    fields = {"name": name, "description": description, "parameters": params or {"type": "object"}}
    spec: ToolSpec = make(ToolSpec, fields)
    return spec


def message_text(content: JSON) -> str | None:
    """The text of a message's ``content``: a string, or the text of OpenAI content parts.

    Args:
        content: the ``content`` of a chat message.
    """
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str)) or None
    return None


def _role(message: _Message, i: int, messages: str = "messages") -> Role:
    given = message.role if message.role is not None else message.type
    if given is not None:
        role = _ROLES.get(given) or _ROLES.get(given.lower())
        if role is not None:
            return role
    field = f"{messages}[{i}].role"
    if given is None:
        raise _FieldError(field, "a message needs a 'role'")
    known = ", ".join(_ROLES)
    raise _FieldError(field, f"unknown role {given!r}; use one of {known}")


def _call(call: _Call, field: tuple[str, int, int], *, lenient: bool, make: _Make) -> ToolCall:
    """A message's tool call; ``lenient``: arguments that cannot be decoded are kept raw.
    ``field``: the messages' field, the message's and the call's index (named on an error)."""
    function = call.function
    if function is not None:
        name, raw, given = function.name, function.arguments, "function.arguments"
    elif call.name is not None:
        name, raw, given = call.name, call.args, "args"
    else:
        raise _FieldError(_call_field(field), "a tool call needs function.name (or name)")
    try:
        arguments = decode_arguments(raw)
    except ValueError as exc:
        if not lenient:
            raise _FieldError(f"{_call_field(field)}.{given}", str(exc)) from None
        arguments = {"_raw": str(raw)}
    if raw.__class__ is str and raw.count("[") + raw.count("{") >= _DEEP_ENOUGH:
        make = _validated  # decoded here, not by the chat's parser: maybe nested too deeply
    made: ToolCall = make(ToolCall, {"id": call.id, "name": name, "arguments": arguments})
    return made


def _call_field(field: tuple[str, int, int]) -> str:
    messages, i, k = field
    return f"{messages}[{i}].tool_calls[{k}]"


def _content(message: _Message) -> JSON:
    """A message's content as text when it is text (or text parts), else as given."""
    if isinstance(message.content, str | list):
        return message_text(message.content)
    return message.content


def _steps(
    messages: list[_Message], roles: list[Role], make: _Make
) -> tuple[list[Step], list[ToolCall], list[tuple[int, Step]]]:
    """The chat's steps, its calls, and the position and step of each call."""
    steps: list[Step] = []
    unanswered: list[str] = []
    calls: list[ToolCall] = []
    given: list[tuple[int, Step]] = []

    def add(kind: StepKind, **fields: Any) -> Step:
        fields["index"] = len(steps)
        fields["kind"] = kind
        step: Step = make(Step, fields)
        steps.append(step)
        return step

    for i, (message, role) in enumerate(zip(messages, roles, strict=True)):
        if role in ("system", "user"):
            add(StepKind.message, id=message.id, agent=role, content=message_text(message.content))
        elif role == "assistant":
            turn_id = message.id or f"message-{i}"
            add(StepKind.llm, id=turn_id, agent=message.name, content=message_text(message.content))
            for k, raw_call in enumerate(message.tool_calls or []):
                call = _call(raw_call, ("messages", i, k), lenient=True, make=make)
                step_id = call.id or f"{turn_id}:call{k}"
                unanswered.append(step_id)
                calls.append(call)
                given.append(
                    (
                        len(steps),
                        add(
                            StepKind.tool_call,
                            id=step_id,
                            agent=message.name,
                            parent_id=turn_id,
                            tool_call=call,
                        ),
                    )
                )
        else:
            answered = message.tool_call_id
            if answered is None and unanswered:
                answered = unanswered[0]
            if answered in unanswered:
                unanswered.remove(answered)
            add(StepKind.tool_result, id=message.id, parent_id=answered, result=_content(message))
    return steps, calls, given


def _reference(messages: list[_Message], make: _Make) -> list[ReferenceStep]:
    reference = []
    for i, message in enumerate(messages):
        reference.append(
            make(
                ReferenceStep,
                {
                    "role": _role(message, i, "expected_messages"),
                    "content": _content(message),
                    "tool_calls": [
                        _call(c, ("expected_messages", i, k), lenient=False, make=make)
                        for k, c in enumerate(message.tool_calls or [])
                    ],
                    "tool_call_id": message.tool_call_id,
                    "name": message.name,
                },
            )
        )
    return reference


def _expected_call(call: ToolCall, make: _Make) -> ExpectedCall:
    """A reference call as an expected call: each argument's one acceptable value."""
    arguments = {k: [v] for k, v in call.arguments.items()}
    expected: ExpectedCall = make(ExpectedCall, {"name": call.name, "arguments": arguments})
    return expected


def _last_assistant_text(messages: list[_Message], roles: list[Role]) -> str | None:
    for message, role in zip(reversed(messages), reversed(roles), strict=True):
        if role == "assistant":
            return message_text(message.content)
    return None


def _trace(chat: _Chat, line: int, make: _Make = _validated) -> Trace:
    """The chat's trace, its records made by ``make`` (:func:`_trusted` for a chat whose
    model validated every value, read from JSON text)."""
    roles = [_role(m, i) for i, m in enumerate(chat.messages)]
    steps, calls, given = _steps(chat.messages, roles, make)
    first_assistant = roles.index("assistant") if "assistant" in roles else len(roles)
    prompt: list[JSON] = [
        {"role": role, "content": message.content}
        for role, message in zip(roles[:first_assistant], chat.messages, strict=False)
    ]
    user = next((s.content for s in steps if s.agent == "user" and s.content), None)
    reference = None
    expected_calls = None
    expected_output = None
    if chat.expected_messages is not None:
        reference = _reference(chat.expected_messages, make)
        reference_calls = [c for step in reference for c in step.tool_calls]
        expected_calls = [_expected_call(c, make) for c in reference_calls]
        expected_output = _last_assistant_text(
            chat.expected_messages, [step.role for step in reference]
        )
    tools = []
    for k, tool in enumerate(chat.tools or []):
        try:
            tools.append(_tool_spec(tool, make))
        except ValueError as exc:
            raise _FieldError(f"tools[{k}]", str(exc)) from None
    task_id = str(chat.id) if chat.id is not None else f"line-{line}"
    task = {
        "id": task_id,
        "input": prompt,
        "description": user or "",
        "expected_output": expected_output,
        "tools": tools,
        "expected_calls": expected_calls,
        "reference_trajectory": reference,
        "metadata": {"source": "openai-chat"},
    }
    trace: Trace = make(
        Trace,
        {
            "id": task_id,
            "task": make(Task, task),
            "output": _last_assistant_text(chat.messages, roles),
            "steps": steps,
            "metadata": dict(chat.metadata or {}),
        },
    )
    # the calls listed as found, for the metrics that read them
    trace._keep_calls_made((calls, given))
    if reference:
        holding = [(i, step) for i, step in enumerate(reference) if step.tool_calls]
        trace.task._keep_reference_calls((reference_calls, holding))
    return trace


def parse_chat_line(raw: RawLine, warnings: list[ReadError] | None = None) -> Trace | ReadError:
    """The trace of one line of an ``openai-chat`` file, or a ReadError naming the line and
    the field at fault.

    Args:
        raw: the line.
        warnings: where the line's warning goes (one a line: the store keeps one), when a
            value was replaced (a lone surrogate read as U+FFFD).
    """
    found: list[ReadError] = []
    chat = validate_line(_Chat, raw, found)
    if isinstance(chat, ReadError):
        return chat
    try:
        replaced: list[tuple[str | int, ...]] = []
        if may_hold_surrogate(raw.text):
            # read from Python values (json.loads), whose nesting no parser bounded
            trace, replaced = storable_trace(_trace(chat, raw.line))
        else:  # no value can hold a lone surrogate; the chat's parser bounded their nesting
            trace = _trace(chat, raw.line, _trusted)
    except _FieldError as exc:
        return ReadError(raw.source, raw.line, exc.field, exc.message)
    except ValidationError as exc:
        return validation_read_error(raw.source, raw.line, exc)
    except Exception as exc:  # the import boundary: a bug costs this line
        return ReadError(raw.source, raw.line, None, unexpected(exc))
    if replaced and not found:  # in a tool call's arguments, given as JSON text
        found.append(surrogate_warning(raw.source, raw.line, replaced, prefix=f"trace {trace.id}"))
    if warnings is not None:
        warnings.extend(found[:1])
    return trace


_FORMAT = "openai-chat"


def _chat_lines(path: str | Path) -> Iterator[RawLine | ReadError]:
    return iter_raw_lines(path, trace_format=_FORMAT)


@importer(
    _FORMAT,
    description="chats in OpenAI's message format, with optional expected messages",
    lines=_chat_lines,
    parse=parse_chat_line,
)
def read_openai_chat(path: str | Path) -> Iterator[Trace | ReadError]:
    """Stream the chats of an ``openai-chat`` JSONL file as Traces; a bad line comes out as a
    ReadError naming the file, the line and the field, and reading goes on.

    Args:
        path: a ``.jsonl`` file, optionally ``.gz``-compressed.
    """
    for raw in _chat_lines(path):
        if isinstance(raw, ReadError):
            yield raw
            continue
        warnings: list[ReadError] = []
        trace = parse_chat_line(raw, warnings)
        yield from warnings
        yield trace
