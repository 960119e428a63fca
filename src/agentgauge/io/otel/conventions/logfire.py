"""Logfire's LLM provider integrations in their first attribute format (``version=1``, the
default of Logfire's releases before 4.x): the request as ``request_data`` (the provider's
JSON body: ``model``, ``messages``, ``tools``, parameters) and the answer as ``response_data``
(OpenAI chat: ``{message, usage}``; a streamed answer: ``{combined_chunk_content,
chunk_count}``; Anthropic: ``{message: {content: [blocks]}, usage}``). The span is a model call
when its ``request_data`` holds messages. Logfire's newer format is the GenAI conventions'
(``gen_ai.*``), which :mod:`~agentgauge.io.otel.conventions.genai` reads."""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import maybe_json, messages, tool_specs
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span
from agentgauge.model import ToolSpec

__all__ = ["Logfire"]

_PARAMS = ("temperature", "top_p", "max_tokens", "seed", "frequency_penalty", "presence_penalty")


def _request(span: Span) -> dict[str, Any]:
    body = maybe_json(span.attributes.get("request_data"))
    return body if isinstance(body, dict) else {}


def _response(span: Span) -> dict[str, Any]:
    body = maybe_json(span.attributes.get("response_data"))
    return body if isinstance(body, dict) else {}


def _usage(span: Span, *keys: str) -> int | None:
    usage = _response(span).get("usage")
    if isinstance(usage, dict):
        for key in keys:
            if isinstance(usage.get(key), int):
                return int(usage[key])
    return None


@convention("logfire", rank=45)
class Logfire(Convention):
    """Logfire's request_data / response_data (its LLM integrations' first format)."""

    def operation(self, span: Span) -> str | None:
        return "chat" if isinstance(_request(span).get("messages"), list) else None

    def model(self, span: Span) -> str | None:
        model = _request(span).get("model") or _response(span).get("model")
        return str(model) if model else None

    def input_messages(self, span: Span) -> list[Message] | None:
        request = _request(span)
        found = messages(request.get("messages"), "user") if request.get("messages") else []
        system = request.get("system")  # Anthropic's system prompt is no message
        if isinstance(system, str) and system:
            found.insert(0, Message("system", system))
        return found or None

    def output_messages(self, span: Span) -> list[Message] | None:
        response = _response(span)
        if isinstance(response.get("message"), dict):
            return messages(response["message"], "assistant") or None
        combined = response.get("combined_chunk_content")
        if isinstance(combined, str) and combined:
            return [Message("assistant", combined)]
        return None

    def input_tokens(self, span: Span) -> int | None:
        return _usage(span, "prompt_tokens", "input_tokens")

    def output_tokens(self, span: Span) -> int | None:
        return _usage(span, "completion_tokens", "output_tokens")

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        tools = _request(span).get("tools")
        return tool_specs(tools) if isinstance(tools, list) else None

    def request_params(self, span: Span) -> dict[str, Any] | None:
        request = _request(span)
        return {k: request[k] for k in _PARAMS if request.get(k) is not None} or None
