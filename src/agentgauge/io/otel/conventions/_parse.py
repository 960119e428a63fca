"""What the conventions share: JSON that instrumentations store as text, flattened
attributes, and messages in every shape they come in (GenAI parts, OpenAI style,
OpenInference, Gemini parts, a choice body)."""

from __future__ import annotations

import json
from typing import Any

from agentgauge._safe import DECODE_ERRORS
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Event, first
from agentgauge.model import ToolCall, ToolSpec

__all__ = [
    "event_body",
    "flattened_messages",
    "integer",
    "is_json_schema",
    "maybe_json",
    "message",
    "messages",
    "plain_value",
    "text_of",
    "tool_call",
    "tool_specs",
    "unflatten",
]


def maybe_json(value: Any) -> Any:
    """A value that instrumentations store either as JSON text or as a structured value."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except DECODE_ERRORS:
            return value
    return value


def _listify(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _listify(v) for k, v in node.items()}
        if node and all(k.isdigit() for k in node):
            return [node[k] for k in sorted(node, key=int)]
    return node


def unflatten(attrs: dict[str, Any], prefix: str) -> list[Any]:
    """``prefix.{i}.a.b`` attributes (OpenInference, OpenLLMetry) as a list of nested dicts."""
    tree: dict[str, Any] = {}
    for key, value in attrs.items():
        if key.startswith(prefix + "."):
            node = tree
            *path, leaf = key[len(prefix) + 1 :].split(".")
            for part in path:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    break
                node = child
            else:
                node[leaf] = value
    out = _listify(tree)
    return out if isinstance(out, list) else []


def text_of(content: Any) -> str | None:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                part = part.get("message_content", part)
                if isinstance(part, dict) and part.get("type", "text") == "text":
                    value = part.get("content", part.get("text"))
                    if isinstance(value, str):
                        texts.append(value)
        return "\n".join(texts) if texts else None
    return None


def tool_call(raw: Any) -> ToolCall | None:
    """A requested call: a ``tool_call`` part, OpenAI ``{id, function}``, OpenInference
    ``{tool_call: {...}}`` or OpenLLMetry ``{id, name, arguments}``."""
    if not isinstance(raw, dict):
        return None
    raw = raw.get("tool_call", raw)
    fn = raw.get("function", raw) if isinstance(raw, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    arguments = maybe_json(fn.get("arguments"))
    call_id = raw.get("id")
    return ToolCall(
        id=str(call_id) if call_id is not None else None,
        name=fn["name"],
        arguments=arguments if isinstance(arguments, dict) else {},
    )


def _gemini_call(raw: dict[str, Any]) -> ToolCall | None:
    return tool_call({"id": raw.get("id"), "name": raw.get("name"), "arguments": raw.get("args")})


def message(raw: Any, default_role: str) -> Message | None:
    """A message in the parts-based schema, OpenAI style, OpenInference or a choice body."""
    if isinstance(raw, str):
        return Message(default_role, raw)
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("message"), dict):
        # a gen_ai.choice body or an OpenInference "message.*" group
        raw = {**raw["message"], "role": raw["message"].get("role", default_role)}
    role = str(raw.get("role") or default_role)
    if isinstance(raw.get("parts"), list):
        # GenAI parts are typed; Gemini / ADK parts are keyed (function_call, function_response)
        parts = [p for p in raw["parts"] if isinstance(p, dict)]
        calls = [
            tool_call(p) if p.get("type") == "tool_call" else _gemini_call(p["function_call"])
            for p in parts
            if p.get("type") == "tool_call" or isinstance(p.get("function_call"), dict)
        ]
        responses = [
            (str(p.get("id")), maybe_json(p.get("response", p.get("result"))))
            for p in (
                p.get("function_response", p)
                for p in parts
                if p.get("type") == "tool_call_response"
                or isinstance(p.get("function_response"), dict)
            )
        ]
        return Message(role, text_of(parts), [c for c in calls if c], responses)
    raw_calls = raw.get("tool_calls")
    calls = [tool_call(c) for c in raw_calls] if isinstance(raw_calls, list) else []
    text = text_of(raw.get("content"))
    if text is None:
        text = text_of(raw.get("contents"))
    responses = []
    # OpenAI messages name the call in ``tool_call_id``; the ``gen_ai.tool.message`` event of
    # the 1.30 conventions names it in ``id``
    _, call_id = first(raw, "tool_call_id", "id")
    if role == "tool" and call_id is not None:
        responses.append((str(call_id), maybe_json(raw.get("content"))))
        text = None  # a tool's reply is not a message of the conversation's speakers
    return Message(role, text, [c for c in calls if c], responses)


def messages(value: Any, default_role: str) -> list[Message]:
    value = maybe_json(value)
    items = value if isinstance(value, list) else [value]
    return [m for m in (message(maybe_json(v), default_role) for v in items) if m]


def flattened_messages(attrs: dict[str, Any], prefix: str, role: str) -> list[Message] | None:
    """Messages flattened into ``prefix.{i}.*`` attributes; None when there are none.

    Args:
        attrs: a span's attributes.
        prefix: ``llm.input_messages``, ``gen_ai.prompt``, ...
        role: the role of a message that names none.
    """
    flat = unflatten(attrs, prefix)
    return messages(flat, role) if flat else None


def plain_value(attrs: dict[str, Any], key: str) -> str | None:
    """OpenInference ``input.value`` / ``output.value`` when it is text, not a JSON payload."""
    value = attrs.get(key)
    mime = attrs.get(key.replace(".value", ".mime_type"))
    if isinstance(value, str) and value and mime != "application/json":
        return value
    return None


def event_body(ev: Event) -> Any:
    """A deprecated GenAI event's body: its attributes, or the JSON in ``gen_ai.event.content``."""
    body = maybe_json(ev.attributes.get("gen_ai.event.content"))
    if isinstance(body, dict):
        return body
    return {k: maybe_json(v) for k, v in ev.attributes.items()}


def integer(attrs: dict[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` whose value is a whole number (or its text).

    Args:
        attrs: a span's attributes (or a recorded object).
        keys: the keys, in order of preference.
    """
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            try:
                return int(value)
            except ValueError:
                continue
    return None


def is_json_schema(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "object" and "properties" in value


def tool_specs(definitions: list[Any]) -> list[ToolSpec]:
    """Tool schemas in OpenAI's function format (``{function: {...}}``) or flat (``{name,
    description, parameters}``); what is neither is left out.

    Args:
        definitions: the recorded definitions.
    """
    specs = []
    for d in definitions:
        if isinstance(d, dict):
            fn = d.get("function", d)
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                params = maybe_json(fn.get("parameters"))
                specs.append(
                    ToolSpec(
                        name=fn["name"],
                        description=str(fn.get("description") or ""),
                        **({"parameters": params} if isinstance(params, dict) else {}),
                    )
                )
    return specs
