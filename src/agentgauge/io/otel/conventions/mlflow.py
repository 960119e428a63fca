"""MLflow Tracing's span attributes, in its trace JSON and over OTLP alike, each value JSON
text: ``mlflow.spanType`` (``CHAT_MODEL``/``LLM`` a model call, ``TOOL`` a tool, ``AGENT`` an
agent; ``CHAIN``, ``RETRIEVER``, ``PARSER``, ``EMBEDDING``, ``RERANKER``, ``MEMORY``,
``UNKNOWN`` make no step), ``mlflow.spanInputs``/``mlflow.spanOutputs`` (a model call's
request and response objects or messages, a tool's arguments and result, an agent's input and
answer), ``mlflow.chat.tokenUsage`` (MLflow 2: the usage in the response object),
``mlflow.chat.tools``, ``mlflow.chat.messages`` (MLflow 2), ``mlflow.llm.model``,
``mlflow.spanFunctionName``.

The openai-agents autologging records the run as an ``AGENT`` span marked
``mlflow.openai.agent_run_root`` around the agents (a wrapper), and each handoff as a span
whose inputs name ``from_agent`` and outputs ``to_agent``.
"""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import integer, maybe_json, messages, tool_specs
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span
from agentgauge.model import ToolSpec

__all__ = ["MLflow"]

_OPERATIONS = {
    "CHAT_MODEL": "chat",
    "LLM": "chat",
    "TOOL": "execute_tool",
    "AGENT": "invoke_agent",
}


def _value(span: Span, key: str) -> Any:
    return maybe_json(span.attributes.get(key))


def _type(span: Span) -> str | None:
    kind = _value(span, "mlflow.spanType")
    return kind if isinstance(kind, str) else None


def _handoff(span: Span) -> tuple[Any, Any]:
    given, answer = _value(span, "mlflow.spanInputs"), _value(span, "mlflow.spanOutputs")
    source = given.get("from_agent") if isinstance(given, dict) else None
    target = answer.get("to_agent") if isinstance(answer, dict) else None
    return source, target


def _usage(span: Span) -> dict[str, Any]:
    """``mlflow.chat.tokenUsage``, else (MLflow 2) the usage of the response object the model
    call recorded as its output."""
    usage = _value(span, "mlflow.chat.tokenUsage")
    if isinstance(usage, dict):
        return usage
    answer = _value(span, "mlflow.spanOutputs")
    if _type(span) in ("CHAT_MODEL", "LLM") and isinstance(answer, dict):
        usage = answer.get("usage")
    return usage if isinstance(usage, dict) else {}


@convention("mlflow", rank=35)
class MLflow(Convention):
    """MLflow Tracing: mlflow.spanType, mlflow.spanInputs / spanOutputs, mlflow.chat.*."""

    def operation(self, span: Span) -> str | None:
        kind = _type(span)
        if kind is None:
            return None
        if _handoff(span) != (None, None):
            return "handoff"
        if kind == "AGENT" and _value(span, "mlflow.openai.agent_run_root") in (True, "true"):
            return "wrapper"
        return _OPERATIONS.get(kind.upper(), kind.lower())

    def agent_name(self, span: Span) -> str | None:
        return (span.name or None) if _type(span) == "AGENT" else None

    def tool_name(self, span: Span) -> str | None:
        if _type(span) != "TOOL":
            return None
        name = _value(span, "mlflow.spanFunctionName")
        return name if isinstance(name, str) and name else span.name or None

    def arguments(self, span: Span) -> Any:
        return _value(span, "mlflow.spanInputs") if _type(span) == "TOOL" else None

    def result(self, span: Span) -> Any:
        return _value(span, "mlflow.spanOutputs") if _type(span) == "TOOL" else None

    def model(self, span: Span) -> str | None:
        if _type(span) not in ("CHAT_MODEL", "LLM"):
            return None
        for key in ("mlflow.llm.model", "model"):
            value = _value(span, key)
            if isinstance(value, str) and value:
                return value
        return None

    def response_id(self, span: Span) -> str | None:
        answer = _value(span, "mlflow.spanOutputs")
        if _type(span) in ("CHAT_MODEL", "LLM") and isinstance(answer, dict):
            response_id = answer.get("id")
            return response_id if isinstance(response_id, str) else None
        return None

    def input_messages(self, span: Span) -> list[Message] | None:
        if _type(span) not in ("CHAT_MODEL", "LLM"):
            return None
        given = _value(span, "mlflow.spanInputs")
        if isinstance(given, dict):
            given = given.get("messages", given.get("input"))
        if given in (None, ""):
            chat = _value(span, "mlflow.chat.messages")
            if isinstance(chat, list):  # MLflow 2: the whole conversation, the answer last
                given = [
                    m for m in chat if not (isinstance(m, dict) and m.get("role") == "assistant")
                ]
        return messages(given, "user") if given not in (None, "") else None

    def output_messages(self, span: Span) -> list[Message] | None:
        if _type(span) not in ("CHAT_MODEL", "LLM"):
            return None
        answer = _value(span, "mlflow.spanOutputs")
        return messages(answer, "assistant") if answer not in (None, "") else None

    def input_text(self, span: Span) -> str | None:
        given = _value(span, "mlflow.spanInputs")
        return given if isinstance(given, str) and given else None

    def output_text(self, span: Span) -> str | None:
        answer = _value(span, "mlflow.spanOutputs")
        return answer if isinstance(answer, str) and answer else None

    def input_tokens(self, span: Span) -> int | None:
        return integer(_usage(span), "input_tokens", "prompt_tokens")

    def output_tokens(self, span: Span) -> int | None:
        return integer(_usage(span), "output_tokens", "completion_tokens")

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        tools = _value(span, "mlflow.chat.tools")
        return tool_specs(tools) if isinstance(tools, list) else None

    def handoff_source(self, span: Span) -> str | None:
        source, _ = _handoff(span)
        return source if isinstance(source, str) else None

    def handoff_target(self, span: Span) -> str | None:
        _, target = _handoff(span)
        return target if isinstance(target, str) else None
