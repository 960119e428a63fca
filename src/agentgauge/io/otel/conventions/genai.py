"""The OpenTelemetry GenAI semantic conventions' span attributes, latest and older: the
operation, agent and tool names, tool call ids, arguments and results, the model, response
id, usage (``input_tokens``/``output_tokens``), the tools offered, the request's parameters,
and the messages (``gen_ai.input.messages``/``gen_ai.output.messages`` in the parts-based or
OpenAI-style schema, else the older JSON ``gen_ai.prompt``/``gen_ai.completion``)."""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.conventions._parse import integer, maybe_json, messages, tool_specs
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span
from agentgauge.model import ToolSpec

__all__ = ["GenAI"]

_REQUEST_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.top_k": "top_k",
    "gen_ai.request.max_tokens": "max_tokens",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.presence_penalty": "presence_penalty",
}


def _side(span: Span, current: str, older: str, role: str) -> list[Message] | None:
    for key in (current, older):
        value = span.attributes.get(key)
        if value not in (None, ""):
            return messages(value, role)
    return None


@convention("genai", rank=10)
class GenAI(Convention):
    """OpenTelemetry GenAI semantic conventions: span attributes (gen_ai.*)."""

    def operation(self, span: Span) -> str | None:
        return text(span, "gen_ai.operation.name")

    def agent_name(self, span: Span) -> str | None:
        return text(span, "gen_ai.agent.name", "gen_ai.workflow.name")

    def tool_name(self, span: Span) -> str | None:
        return text(span, "gen_ai.tool.name")

    def tool_call_id(self, span: Span) -> str | None:
        return text(span, "gen_ai.tool.call.id")

    def arguments(self, span: Span) -> Any:
        return maybe_json(span.attributes.get("gen_ai.tool.call.arguments"))

    def result(self, span: Span) -> Any:
        return maybe_json(span.attributes.get("gen_ai.tool.call.result"))

    def model(self, span: Span) -> str | None:
        return text(span, "gen_ai.request.model", "gen_ai.response.model")

    def response_id(self, span: Span) -> str | None:
        return text(span, "gen_ai.response.id")

    def input_messages(self, span: Span) -> list[Message] | None:
        return _side(span, "gen_ai.input.messages", "gen_ai.prompt", "user")

    def output_messages(self, span: Span) -> list[Message] | None:
        return _side(span, "gen_ai.output.messages", "gen_ai.completion", "assistant")

    def input_tokens(self, span: Span) -> int | None:
        return integer(span.attributes, "gen_ai.usage.input_tokens")

    def output_tokens(self, span: Span) -> int | None:
        return integer(span.attributes, "gen_ai.usage.output_tokens")

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        definitions = maybe_json(span.attributes.get("gen_ai.tool.definitions"))
        return tool_specs(definitions) if isinstance(definitions, list) else None

    def request_params(self, span: Span) -> dict[str, Any] | None:
        attrs = span.attributes
        return {name: attrs[key] for key, name in _REQUEST_PARAMS.items() if key in attrs}

    def conversation_id(self, span: Span) -> str | None:
        return text(span, "gen_ai.conversation.id", "session.id", "thread.id")

    def responded(self, span: Span) -> bool | None:
        attrs = span.attributes
        return "gen_ai.response.finish_reasons" in attrs or "gen_ai.response.model" in attrs


_SPAN_NAME_OPERATIONS = frozenset(
    {
        "chat",
        "text_completion",
        "generate_content",
        "execute_tool",
        "invoke_agent",
        "invoke_workflow",
        "plan",
        "create_agent",
        "embeddings",
    }
)


_AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow", "create_agent"})


def _operation_and_target(span: Span) -> tuple[str | None, str | None]:
    """The operation and its target in a span named "{operation} {target}"."""
    first_word, _, rest = span.name.partition(" ")
    if first_word in _SPAN_NAME_OPERATIONS:
        return first_word, rest or None
    return None, None


@convention("genai-span-names", rank=90)
class GenAISpanNames(Convention):
    """OpenTelemetry GenAI semantic conventions: what the span name tells ("{operation}
    {target}"), else a tool name or a model attribute telling the operation."""

    def agent_name(self, span: Span) -> str | None:
        operation, target = _operation_and_target(span)
        return target if operation in _AGENT_OPERATIONS else None

    def tool_name(self, span: Span) -> str | None:
        operation, target = _operation_and_target(span)
        return target if operation == "execute_tool" else None

    def operation(self, span: Span) -> str | None:
        operation, _ = _operation_and_target(span)
        if operation is not None:
            return operation
        attrs = span.attributes
        if "gen_ai.tool.name" in attrs:
            return "execute_tool"
        if any(
            k in attrs for k in ("gen_ai.request.model", "gen_ai.system", "gen_ai.provider.name")
        ):
            return "chat"
        return None
