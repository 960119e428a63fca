"""Logfire's own attributes.

Its LLM provider integrations in their first attribute format (``version=1``, the default of
Logfire's releases before 4.x): the request as ``request_data`` (the provider's JSON body:
``model``, ``messages``, ``tools``, parameters) and the answer as ``response_data`` (OpenAI
chat: ``{message, usage}``; a streamed answer: ``{combined_chunk_content, chunk_count}``;
Anthropic: ``{message: {content: [blocks]}, usage}``). The span is a model call when its
``request_data`` holds messages. Logfire's newer format is the GenAI conventions'
(``gen_ai.*``), which :mod:`~agentgauge.io.otel.conventions.genai` reads.

Its OpenAI Agents SDK integration (``instrument_openai_agents()``, scope
``logfire.openai_agents``) names each span by its message template: ``Agent run: {name!r}``
(an agent, ``name``), ``Function: {name}`` (a tool: ``input``, ``output``, ``error``),
``Handoff: {from_agent} → {to_agent}``, ``Chat completion with ...``/``Responses API with ...``
(a model call: ``input`` and ``output`` messages, ``usage``); its turn and task spans, whose
``usage`` sums the calls below them, make no step."""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention, text
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


def _template(span: Span) -> str:
    """The integration's message template (the span's name, before its values)."""
    template = span.attributes.get("logfire.msg_template")
    return template if isinstance(template, str) else ""


_AGENTS_SDK = {
    "Agent run: {name!r}": "invoke_agent",
    "Function: {name}": "execute_tool",
    "Handoff: {from_agent} → {to_agent}": "handoff",
}


def _agents_sdk(span: Span) -> str | None:
    """What an ``instrument_openai_agents()`` span records, by its template."""
    if span.scope != "logfire.openai_agents":
        return None
    template = _template(span)
    if template.startswith(("Chat completion with", "Responses API with")):
        return "chat"
    # its turn, task and trace spans (all marked gen_ai.system): no step of their own
    kind = span.attributes.get("sdk_span_type")
    return _AGENTS_SDK.get(template) or (str(kind) if kind else "trace")


def _usage(span: Span, *keys: str) -> int | None:
    if _agents_sdk(span) == "chat":
        usage = maybe_json(span.attributes.get("usage"))
        if isinstance(usage, dict):
            for key in keys:
                if isinstance(usage.get(key), int):
                    return int(usage[key])
    usage = _response(span).get("usage")
    if isinstance(usage, dict):
        for key in keys:
            if isinstance(usage.get(key), int):
                return int(usage[key])
    return None


@convention("logfire", rank=45)
class Logfire(Convention):
    """Logfire: request_data / response_data; its OpenAI Agents SDK integration's spans."""

    def operation(self, span: Span) -> str | None:
        operation = _agents_sdk(span)
        if operation is not None:
            return operation
        return "chat" if isinstance(_request(span).get("messages"), list) else None

    def agent_name(self, span: Span) -> str | None:
        return text(span, "name") if _agents_sdk(span) == "invoke_agent" else None

    def tool_name(self, span: Span) -> str | None:
        return text(span, "name") if _agents_sdk(span) == "execute_tool" else None

    def arguments(self, span: Span) -> Any:
        if _agents_sdk(span) != "execute_tool":
            return None
        return maybe_json(span.attributes.get("input"))

    def result(self, span: Span) -> Any:
        if _agents_sdk(span) != "execute_tool":
            return None
        return maybe_json(span.attributes.get("output"))

    def error(self, span: Span) -> str | None:
        if _agents_sdk(span) != "execute_tool":
            return None
        error = maybe_json(span.attributes.get("error"))
        if isinstance(error, dict):
            return str(error.get("message") or error)
        return str(error) if error else None

    def handoff_source(self, span: Span) -> str | None:
        return text(span, "from_agent") if _agents_sdk(span) == "handoff" else None

    def handoff_target(self, span: Span) -> str | None:
        return text(span, "to_agent") if _agents_sdk(span) == "handoff" else None

    def model(self, span: Span) -> str | None:
        model = _request(span).get("model") or _response(span).get("model")
        return str(model) if model else None

    def input_messages(self, span: Span) -> list[Message] | None:
        if _agents_sdk(span) == "chat" and span.attributes.get("input") is not None:
            return messages(span.attributes.get("input"), "user") or None
        request = _request(span)
        found = messages(request.get("messages"), "user") if request.get("messages") else []
        system = request.get("system")  # Anthropic's system prompt is no message
        if isinstance(system, str) and system:
            found.insert(0, Message("system", system))
        return found or None

    def output_messages(self, span: Span) -> list[Message] | None:
        if _agents_sdk(span) == "chat" and span.attributes.get("output") is not None:
            return messages(span.attributes.get("output"), "assistant") or None
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
