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
    "is_response_body",
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


_TEXT_TYPES = frozenset({"text", "output_text", "input_text"})


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCall | None:
    if not isinstance(name, str):
        return None
    arguments = maybe_json(arguments)
    return ToolCall(
        id=str(call_id) if call_id is not None else None,
        name=name,
        arguments=arguments if isinstance(arguments, dict) else {},
    )


def _block(block: Any) -> tuple[str | None, ToolCall | None, tuple[str, Any] | None]:
    """One content block (a part) of a message: its text, the call it asks for, or the tool
    result it carries, in any of the shapes instrumentations record.

    Text: a string, GenAI ``{type: text, content}``, OpenAI ``{type: text, text}``, Responses
    ``output_text``/``input_text``, Gemini and Bedrock ``{text}``, OpenInference
    ``{message_content: {...}}``. Calls: GenAI ``tool_call``, Anthropic ``tool_use``, Responses
    ``function_call``, Gemini ``function_call``, Bedrock ``toolUse``. Results: GenAI
    ``tool_call_response``, Anthropic ``tool_result``, Responses ``function_call_output``,
    Gemini ``function_response``, Bedrock ``toolResult``.
    """
    if isinstance(block, str):
        return block, None, None
    if not isinstance(block, dict):
        return None, None, None
    block = block.get("message_content", block)
    if not isinstance(block, dict):
        return None, None, None
    kind = block.get("type")
    if isinstance(block.get("function_call"), dict):
        fn = block["function_call"]
        return None, _call(fn.get("id"), fn.get("name"), fn.get("args")), None
    if isinstance(block.get("toolUse"), dict):
        use = block["toolUse"]
        return None, _call(use.get("toolUseId"), use.get("name"), use.get("input")), None
    if isinstance(block.get("function_response"), dict):
        fn = block["function_response"]
        return None, None, (str(fn.get("id")), maybe_json(fn.get("response")))
    if isinstance(block.get("toolResult"), dict):
        res = block["toolResult"]
        return None, None, (str(res.get("toolUseId")), maybe_json(res.get("content")))
    if kind == "tool_call":
        return None, _call(block.get("id"), block.get("name"), block.get("arguments")), None
    if kind == "tool_use":
        return None, _call(block.get("id"), block.get("name"), block.get("input")), None
    if kind == "function_call":
        call_id = block.get("call_id", block.get("id"))
        return None, _call(call_id, block.get("name"), block.get("arguments")), None
    if kind == "tool_call_response":
        result = block.get("response", block.get("result"))
        return None, None, (str(block.get("id")), maybe_json(result))
    if kind == "tool_result":
        return None, None, (str(block.get("tool_use_id")), maybe_json(block.get("content")))
    if kind == "function_call_output":
        return None, None, (str(block.get("call_id")), maybe_json(block.get("output")))
    if kind is None or kind in _TEXT_TYPES:
        value = block.get("content", block.get("text"))
        if isinstance(value, str):
            return value, None, None
    return None, None, None


def text_of(content: Any) -> str | None:
    """The text of a message content: a string, or the text blocks of a list of blocks.

    Args:
        content: the content as recorded.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [text for text, _, _ in map(_block, content) if text is not None]
        return "\n".join(texts) if texts else None
    return None


def tool_call(raw: Any) -> ToolCall | None:
    """A requested call: a ``tool_call`` part, OpenAI ``{id, function}``, OpenInference
    ``{tool_call: {...}}`` or OpenLLMetry ``{id, name, arguments}``.

    Args:
        raw: the call as recorded.
    """
    if not isinstance(raw, dict):
        return None
    raw = raw.get("tool_call", raw)
    fn = raw.get("function", raw) if isinstance(raw, dict) else None
    if not isinstance(fn, dict):
        return None
    arguments = fn.get("arguments", fn.get("args"))  # LangChain's tool calls hold args
    return _call(raw.get("id"), fn.get("name"), arguments)


_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
"""A LangChain message's ``type`` as a role."""


def message(raw: Any, default_role: str) -> Message | None:
    """A message in the parts-based schema, OpenAI style (chat or Responses items),
    OpenInference, Gemini, Bedrock or Anthropic content blocks, or a choice body.

    Args:
        raw: the message as recorded.
        default_role: its role when it names none.
    """
    if isinstance(raw, str):
        return Message(default_role, raw)
    if not isinstance(raw, dict):
        return None
    if raw.get("lc") and isinstance(raw.get("kwargs"), dict):
        # a LangChain message as its serializer writes it: the class names the role
        kind = raw["id"][-1] if isinstance(raw.get("id"), list) and raw["id"] else ""
        role_of_class = {"AIMessage": "ai", "HumanMessage": "human", "ToolMessage": "tool"}
        raw = {"type": role_of_class.get(str(kind), "system"), **raw["kwargs"]}
    inner = raw.get("message")
    if isinstance(inner, dict):
        # a gen_ai.choice body or an OpenInference "message.*" group
        raw = {**inner, "role": inner.get("role", default_role)}
    elif isinstance(inner, str | list):
        raw = {**raw, "content": maybe_json(inner)}  # a choice whose message is its content
    content = raw.get("content")
    if isinstance(content, dict) and isinstance(content.get("parts"), list):
        # a Gemini Content (an ADK event body): its parts and its role
        raw = {**raw, "parts": content["parts"], "role": content.get("role") or raw.get("role")}
    role = str(raw.get("role") or _LANGCHAIN_ROLES.get(str(raw.get("type"))) or default_role)
    if raw.get("type") in ("function_call", "function_call_output"):
        blocks: list[Any] = [raw]  # a Responses item that is a call or its output
    else:
        content = raw.get("parts") if isinstance(raw.get("parts"), list) else raw.get("content")
        if not isinstance(content, list) and raw.get("contents") is not None:
            content = raw.get("contents")
        blocks = content if isinstance(content, list) else [content] if content else []
    texts, calls, responses = [], [], []
    for text, call, response in map(_block, blocks):
        if text is not None:
            texts.append(text)
        if call is not None:
            calls.append(call)
        if response is not None:
            responses.append(response)
    raw_calls = raw.get("tool_calls")
    if isinstance(raw_calls, list):
        calls += [c for c in map(tool_call, raw_calls) if c is not None]
    text = "\n".join(texts) if texts else None
    # OpenAI messages name the call in ``tool_call_id``; the ``gen_ai.tool.message`` event of
    # the 1.30 conventions names it in ``id``
    _, call_id = first(raw, "tool_call_id", "id")
    if role == "tool" and call_id is not None and not responses:
        responses.append((str(call_id), maybe_json(raw.get("content"))))
        text = None  # a tool's reply is not a message of the conversation's speakers
    return Message(role, text, calls, responses)


def is_response_body(value: Any) -> bool:
    """Whether a recorded value is a provider's response object (a chat completion, a
    Responses object, a Gemini response) or a list of them, not a message.

    Args:
        value: the recorded value, parsed.
    """
    if isinstance(value, list):
        return bool(value) and all(is_response_body(v) for v in value)
    if not isinstance(value, dict) or "role" in value:
        return False
    return any(isinstance(value.get(key), list) for key in ("choices", "candidates", "output"))


def _items(value: Any) -> list[Any]:
    """The messages of a recorded value: a list (or LangChain's batch of one), one message,
    or a response object (a chat completion's ``choices``, Gemini's ``candidates``, a
    Responses object's ``output``, LangChain's ``generations``)."""
    if isinstance(value, list):
        # a batch of one conversation (LangChain's chat model inputs)
        if len(value) == 1 and isinstance(value[0], list):
            return value[0]
        if any(is_response_body(v) for v in value):  # response objects: their messages
            return [item for v in value for item in _items(v)]
        return value
    if isinstance(value, dict):
        if isinstance(value.get("generations"), list):  # LangChain's LLMResult
            batches = [b if isinstance(b, list) else [b] for b in value["generations"]]
            return [
                g.get("message", g.get("text")) if isinstance(g, dict) else g
                for batch in batches
                for g in batch
            ]
        for key, inner in (("choices", "message"), ("candidates", "content")):
            if isinstance(value.get(key), list):
                return [c.get(inner, c) if isinstance(c, dict) else c for c in value[key]]
        if isinstance(value.get("output"), list) and "role" not in value:
            return list(value["output"])
    return [value]


def messages(value: Any, default_role: str) -> list[Message]:
    """Every message of a recorded value (see :func:`message`).

    Args:
        value: a message, a list of them, a response object, or their JSON text.
        default_role: the role of a message that names none.
    """
    items = _items(maybe_json(value))
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
    """A deprecated GenAI event's body: its attributes, the JSON in ``gen_ai.event.content``,
    or a whole message written as JSON text in its ``content`` (a log record's body).

    Args:
        ev: the event (or log record).
    """
    body = maybe_json(ev.attributes.get("gen_ai.event.content"))
    if isinstance(body, dict):
        return body
    attrs = {k: maybe_json(v) for k, v in ev.attributes.items()}
    content = attrs.get("content")
    if isinstance(content, dict) and any(k in content for k in ("role", "message", "tool_calls")):
        return content  # the whole message written as the log record's body text
    return attrs


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
