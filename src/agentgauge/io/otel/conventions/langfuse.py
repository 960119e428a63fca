"""Langfuse's observation attributes, as its SDK's spans carry them and as Langfuse's own
downloads are read (:mod:`agentgauge.io.otel.wire.langfuse`): ``generation`` is a model call
(the input's messages and tools, the output message, the model, the usage details),
``tool`` a tool call (the decorated function's keyword arguments, its output), ``agent`` an
agent; an ``ERROR`` level is the error, with the status message; another observation's (and
the trace's) text input and output are what was asked and answered.

It ranks after the instrumentations' own conventions: a download keeps the attributes of the
span each observation was made from, which say more than the type Langfuse gave it (an
OpenInference handoff is a ``TOOL`` observation)."""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.conventions._parse import integer, maybe_json, messages, tool_specs
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span
from agentgauge.model import ToolSpec

__all__ = ["Langfuse"]

_OPERATIONS = {"generation": "chat", "tool": "execute_tool", "agent": "invoke_agent"}


def _type(span: Span) -> Any:
    return span.attributes.get("langfuse.observation.type")


def _request(span: Span) -> dict[str, Any]:
    """A generation's input: an object with ``messages`` and ``tools``, or the messages."""
    given = maybe_json(span.attributes.get("langfuse.observation.input"))
    return given if isinstance(given, dict) else {"messages": given}


def _usage(span: Span) -> dict[str, Any]:
    usage = maybe_json(span.attributes.get("langfuse.observation.usage_details"))
    return usage if isinstance(usage, dict) and _type(span) == "generation" else {}


def _text(span: Span, *keys: str) -> str | None:
    """An observation's (or the trace's) input or output when it is text."""
    if _type(span) in ("generation", "tool"):
        return None
    for key in keys:
        value = maybe_json(span.attributes.get(key))
        if isinstance(value, str) and value:
            return value
    return None


@convention("langfuse", rank=55)
class Langfuse(Convention):
    """Langfuse: langfuse.observation.* (its SDK's spans and its downloads)."""

    def operation(self, span: Span) -> str | None:
        return _OPERATIONS.get(str(_type(span)))

    def agent_name(self, span: Span) -> str | None:
        return span.name if _type(span) == "agent" and span.name else None

    def tool_name(self, span: Span) -> str | None:
        return span.name if _type(span) == "tool" and span.name else None

    def arguments(self, span: Span) -> Any:
        if _type(span) != "tool":
            return None
        given = maybe_json(span.attributes.get("langfuse.observation.input"))
        call = given if isinstance(given, dict) else {}
        # the SDK's decorator records {"args": [...], "kwargs": {...}}; others the arguments
        decorated = "kwargs" in call and not call.get("args")
        return call.get("kwargs") if decorated else call

    def result(self, span: Span) -> Any:
        if _type(span) != "tool":
            return None
        return maybe_json(span.attributes.get("langfuse.observation.output"))

    def error(self, span: Span) -> str | None:
        if span.attributes.get("langfuse.observation.level") != "ERROR":
            return None
        return text(span, "langfuse.observation.status_message") or "error"

    def model(self, span: Span) -> str | None:
        return (
            text(span, "langfuse.observation.model.name") if _type(span) == "generation" else None
        )

    def input_messages(self, span: Span) -> list[Message] | None:
        if _type(span) != "generation":
            return None
        given = _request(span).get("messages")
        return messages(given, "user") if given not in (None, "") else None

    def output_messages(self, span: Span) -> list[Message] | None:
        if _type(span) != "generation":
            return None
        output = maybe_json(span.attributes.get("langfuse.observation.output"))
        return messages(output, "assistant") if output not in (None, "") else None

    def response_id(self, span: Span) -> str | None:
        output = maybe_json(span.attributes.get("langfuse.observation.output"))
        if _type(span) == "generation" and isinstance(output, dict):
            response_id = output.get("id")
            return response_id if isinstance(response_id, str) else None
        return None

    def input_text(self, span: Span) -> str | None:
        return _text(span, "langfuse.observation.input", "langfuse.trace.input")

    def output_text(self, span: Span) -> str | None:
        return _text(span, "langfuse.observation.output", "langfuse.trace.output")

    def input_tokens(self, span: Span) -> int | None:
        usage = _usage(span)
        return integer({"n": usage.get("prompt_tokens", usage.get("input"))}, "n")

    def output_tokens(self, span: Span) -> int | None:
        usage = _usage(span)
        return integer({"n": usage.get("completion_tokens", usage.get("output"))}, "n")

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        if _type(span) != "generation":
            return None
        tools = maybe_json(_request(span).get("tools"))
        return tool_specs(tools) if isinstance(tools, list) else None
