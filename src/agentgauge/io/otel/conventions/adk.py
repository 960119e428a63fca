"""Google ADK's own span attributes (scope ``gcp.vertex.agent``): the model request's
``contents`` and the response's ``content`` in Gemini's parts (``text``, ``function_call``,
``function_response``), a tool's arguments and its response (``{"error": ...}`` from a tool
that raised is its error); the span of merged parallel tool responses, which is no tool
call."""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import maybe_json, messages
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span

__all__ = ["GoogleADK", "GoogleADKMergedTools"]


def _side(span: Span, attribute: str, key: str, role: str) -> list[Message] | None:
    recorded = maybe_json(span.attributes.get(attribute))
    if isinstance(recorded, dict) and recorded.get(key):
        return messages(recorded[key], role)
    return None


@convention("google-adk", rank=40)
class GoogleADK(Convention):
    """Google ADK: gcp.vertex.agent.* request, response, tool arguments and response."""

    def arguments(self, span: Span) -> Any:
        return maybe_json(span.attributes.get("gcp.vertex.agent.tool_call_args"))

    def result(self, span: Span) -> Any:
        return maybe_json(span.attributes.get("gcp.vertex.agent.tool_response"))

    def error(self, span: Span) -> str | None:
        # a tool that raised answers the model {"error": "..."} (ADK's function response)
        response = maybe_json(span.attributes.get("gcp.vertex.agent.tool_response"))
        if isinstance(response, dict) and list(response) == ["error"] and response["error"]:
            return str(response["error"])
        return None

    def input_messages(self, span: Span) -> list[Message] | None:
        return _side(span, "gcp.vertex.agent.llm_request", "contents", "user")

    def output_messages(self, span: Span) -> list[Message] | None:
        return _side(span, "gcp.vertex.agent.llm_response", "content", "assistant")


@convention("google-adk-merged-tools", rank=5)
class GoogleADKMergedTools(Convention):
    """Google ADK: the span of parallel tool calls' merged responses ("(merged tools)") is no
    tool call; each call has its own span."""

    def operation(self, span: Span) -> str | None:
        if span.attributes.get("gen_ai.tool.name") == "(merged tools)":
            return "merged_tool_responses"
        return None
