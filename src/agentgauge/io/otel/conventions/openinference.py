"""OpenInference (Arize): ``openinference.span.kind`` (LLM, TOOL, AGENT, ...), flattened
``llm.input_messages``/``llm.output_messages``, ``llm.token_count.*``, ``llm.model_name``,
``llm.tools``, ``llm.invocation_parameters``, ``tool.*`` and ``tool_call.*``, ``agent.name``,
``session.id``, and ``input.value``/``output.value`` (text, or the JSON of the request and
response). An openai-agents handoff is a TOOL span named ``handoff to X``."""

from __future__ import annotations

import re
from typing import Any

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.conventions._parse import (
    flattened_messages,
    integer,
    is_json_schema,
    is_response_body,
    maybe_json,
    messages,
    plain_value,
    tool_specs,
    unflatten,
)
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span
from agentgauge.model import ToolSpec

__all__ = ["OpenInference", "span_kind"]

_OPERATIONS = {
    "LLM": "chat",
    "TOOL": "execute_tool",
    "AGENT": "invoke_agent",
    "RETRIEVER": "retrieval",
    "EMBEDDING": "embeddings",
}
_HANDOFF_PREFIX = "handoff to "
_SECRET = re.compile(r"api[_-]?key|secret|password|authori[sz]ation|access[_-]?token", re.I)


def span_kind(span: Span, scope: str | None = None) -> str | None:
    """The span's OpenInference kind (``LLM``, ``TOOL``, ``AGENT``, ``CHAIN``, ...), upper-cased;
    None when it has none, or when ``scope`` is given and the span is of another
    instrumentation (a framework's conventions read only their instrumentation's spans).

    Args:
        span: the span.
        scope: the instrumentation scope the span must have.
    """
    if scope is not None and span.scope != scope:
        return None
    kind = span.attributes.get("openinference.span.kind")
    return kind.upper() if isinstance(kind, str) else None


@convention("openinference", rank=50)
class OpenInference(Convention):
    """OpenInference: openinference.span.kind, llm.*, tool.*, input.value / output.value."""

    def operation(self, span: Span) -> str | None:
        kind = span.attributes.get("openinference.span.kind")
        if not isinstance(kind, str):
            return None
        if kind.upper() == "TOOL" and span.name.startswith(_HANDOFF_PREFIX):
            return "handoff"
        return _OPERATIONS.get(kind.upper(), kind.lower())

    def agent_name(self, span: Span) -> str | None:
        return text(span, "agent.name")

    def tool_name(self, span: Span) -> str | None:
        return text(span, "tool.name")

    def tool_call_id(self, span: Span) -> str | None:
        return text(span, "tool_call.id")

    def arguments(self, span: Span) -> Any:
        attrs = span.attributes
        value = maybe_json(attrs.get("tool_call.function.arguments"))
        if value is not None:
            return value
        # tool.parameters is the tool's schema, never the call's values
        return maybe_json(attrs.get("input.value"))

    def result(self, span: Span) -> Any:
        return maybe_json(span.attributes.get("output.value"))

    def model(self, span: Span) -> str | None:
        return text(span, "llm.model_name")

    def response_id(self, span: Span) -> str | None:
        body = maybe_json(span.attributes.get("output.value"))
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            return str(body["id"])
        return None

    def input_messages(self, span: Span) -> list[Message] | None:
        return flattened_messages(span.attributes, "llm.input_messages", "user")

    def output_messages(self, span: Span) -> list[Message] | None:
        flat = flattened_messages(span.attributes, "llm.output_messages", "assistant")
        if flat is not None or span.attributes.get("openinference.span.kind") != "LLM":
            return flat
        # a streamed call's LLM span may keep only the response body (openai-agents' stream:
        # a list of Responses objects) in output.value
        body = maybe_json(span.attributes.get("output.value"))
        if not is_response_body(body):
            return None
        return messages(body, "assistant") or None

    def input_text(self, span: Span) -> str | None:
        return plain_value(span.attributes, "input.value")

    def output_text(self, span: Span) -> str | None:
        return plain_value(span.attributes, "output.value")

    def input_tokens(self, span: Span) -> int | None:
        return integer(span.attributes, "llm.token_count.prompt")

    def output_tokens(self, span: Span) -> int | None:
        return integer(span.attributes, "llm.token_count.completion")

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        attrs = span.attributes
        definitions = [
            maybe_json(t.get("tool", {}).get("json_schema"))
            for t in unflatten(attrs, "llm.tools")
            if isinstance(t, dict)
        ]
        schema = maybe_json(attrs.get("tool.parameters"))
        if (
            isinstance(schema, dict)
            and schema
            and not is_json_schema(schema)
            and all(isinstance(p, dict) and "type" in p for p in schema.values())
        ):
            schema = {"type": "object", "properties": schema}  # smolagents: the properties
        if isinstance(attrs.get("tool.name"), str) and is_json_schema(schema):
            description = attrs.get("tool.description")
            definitions.append(
                {"name": attrs["tool.name"], "description": description, "parameters": schema}
            )
        return tool_specs(definitions) or None

    def request_params(self, span: Span) -> dict[str, Any] | None:
        invocation = maybe_json(span.attributes.get("llm.invocation_parameters"))
        if not isinstance(invocation, dict):
            return None
        # a client's settings may carry its credentials: they never enter a Trace
        return {k: v for k, v in invocation.items() if not _SECRET.search(k)}

    def conversation_id(self, span: Span) -> str | None:
        return text(span, "session.id")

    def responded(self, span: Span) -> bool | None:
        return "llm.finish_reason" in span.attributes

    def handoff_source(self, span: Span) -> str | None:
        return plain_value(span.attributes, "input.value")

    def handoff_target(self, span: Span) -> str | None:
        target = plain_value(span.attributes, "output.value")
        if target is None and span.name.startswith(_HANDOFF_PREFIX):
            return span.name[len(_HANDOFF_PREFIX) :] or None
        return target
