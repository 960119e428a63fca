"""MLflow Tracing's span attributes (``mlflow.*``), as its OTLP exporter sends them and as its
trace JSON (``Trace.to_json()``) holds them: ``mlflow.spanType`` (``CHAT_MODEL``/``LLM``,
``TOOL``, ``AGENT``, ``CHAIN``, ...), ``mlflow.spanInputs``/``mlflow.spanOutputs`` (the
function's arguments and return value, the model client's request and response: an OpenAI
chat completion, or a list of messages), ``mlflow.chat.tokenUsage``, ``mlflow.chat.tools``,
``mlflow.chat.messages`` (MLflow 2.x) and ``mlflow.llm.model``. Every value is JSON text.

An autologged framework's run is an ``AGENT`` span too (``mlflow.openai.agent_run_root`` on the
OpenAI Agents SDK's runner): it names no agent, so it counts as the wrapper it is. The Agents
SDK's handoff is a ``Handoff`` span whose inputs name ``from_agent`` and outputs ``to_agent``."""

from __future__ import annotations

import json
from typing import Any

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import maybe_json, messages, tool_specs
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
_PARAMS = ("temperature", "top_p", "max_tokens", "seed", "frequency_penalty", "presence_penalty")


def _attr(span: Span, key: str) -> Any:
    """An attribute's value: MLflow writes each as JSON (a string in quotes, ``true``)."""
    value = span.attributes.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return maybe_json(value)


def _span_type(span: Span) -> str | None:
    kind = _attr(span, "mlflow.spanType")
    return kind.upper() if isinstance(kind, str) else None


def _handoff(span: Span) -> tuple[Any, Any] | None:
    inputs, outputs = _attr(span, "mlflow.spanInputs"), _attr(span, "mlflow.spanOutputs")
    if isinstance(inputs, dict) and isinstance(outputs, dict) and "to_agent" in outputs:
        return inputs.get("from_agent"), outputs.get("to_agent")
    return None


def _chat_messages(value: Any, role: str) -> list[Message] | None:
    """Messages of a model call's inputs or outputs: a request (``{messages}``), a chat
    completion (``{choices: [{message}]}``), a list of messages, or a message."""
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            return messages(value["messages"], role)
        if isinstance(value.get("choices"), list):
            return [
                m
                for choice in value["choices"]
                if isinstance(choice, dict)
                for m in messages(choice.get("message"), role)
            ]
        if "role" in value:
            return messages(value, role)
        return None
    if isinstance(value, list):
        return messages(value, role)
    return None


@convention("mlflow", rank=35)
class MLflow(Convention):
    """MLflow Tracing: mlflow.spanType, mlflow.spanInputs / spanOutputs, mlflow.chat.*."""

    def operation(self, span: Span) -> str | None:
        kind = _span_type(span)
        if kind is None:
            return None
        if _handoff(span) is not None:
            return "handoff"
        return _OPERATIONS.get(kind, kind.lower())

    def agent_name(self, span: Span) -> str | None:
        if _span_type(span) != "AGENT" or _attr(span, "mlflow.openai.agent_run_root") is True:
            return None
        return span.name or None

    def tool_name(self, span: Span) -> str | None:
        if _span_type(span) != "TOOL":
            return None
        name = _attr(span, "mlflow.spanFunctionName")
        return str(name) if isinstance(name, str) and name else span.name or None

    def arguments(self, span: Span) -> Any:
        return _attr(span, "mlflow.spanInputs") if _span_type(span) == "TOOL" else None

    def result(self, span: Span) -> Any:
        return _attr(span, "mlflow.spanOutputs") if _span_type(span) == "TOOL" else None

    def model(self, span: Span) -> str | None:
        inputs = _attr(span, "mlflow.spanInputs")
        model = inputs.get("model") if isinstance(inputs, dict) else None
        model = model or _attr(span, "mlflow.llm.model") or _attr(span, "model")
        return str(model) if isinstance(model, str) and model else None

    def input_messages(self, span: Span) -> list[Message] | None:
        if _span_type(span) not in ("CHAT_MODEL", "LLM"):
            return None
        return _chat_messages(_attr(span, "mlflow.spanInputs"), "user")

    def output_messages(self, span: Span) -> list[Message] | None:
        if _span_type(span) not in ("CHAT_MODEL", "LLM"):
            return None
        found = _chat_messages(_attr(span, "mlflow.spanOutputs"), "assistant")
        if found:
            return found
        # MLflow 2.x: the conversation with the answer last, in mlflow.chat.messages
        chat = messages(_attr(span, "mlflow.chat.messages") or [], "assistant")
        return chat[-1:] if chat and chat[-1].role == "assistant" else None

    def input_text(self, span: Span) -> str | None:
        if _span_type(span) != "AGENT":
            return None
        inputs = _attr(span, "mlflow.spanInputs")
        if isinstance(inputs, dict) and len(inputs) == 1:
            inputs = next(iter(inputs.values()))
        return inputs if isinstance(inputs, str) else None

    def output_text(self, span: Span) -> str | None:
        if _span_type(span) != "AGENT":
            return None
        outputs = _attr(span, "mlflow.spanOutputs")
        return outputs if isinstance(outputs, str) else None

    def input_tokens(self, span: Span) -> int | None:
        return _tokens(span, "input_tokens", "prompt_tokens")

    def output_tokens(self, span: Span) -> int | None:
        return _tokens(span, "output_tokens", "completion_tokens")

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        tools = _attr(span, "mlflow.chat.tools")
        return tool_specs(tools) if isinstance(tools, list) else None

    def request_params(self, span: Span) -> dict[str, Any] | None:
        inputs = _attr(span, "mlflow.spanInputs")
        if _span_type(span) not in ("CHAT_MODEL", "LLM") or not isinstance(inputs, dict):
            return None
        return {k: inputs[k] for k in _PARAMS if isinstance(inputs.get(k), int | float)} or None

    def handoff_source(self, span: Span) -> str | None:
        pair = _handoff(span)
        return str(pair[0]) if pair and pair[0] else None

    def handoff_target(self, span: Span) -> str | None:
        pair = _handoff(span)
        return str(pair[1]) if pair and pair[1] else None


def _tokens(span: Span, key: str, openai_key: str) -> int | None:
    usage = _attr(span, "mlflow.chat.tokenUsage")
    if isinstance(usage, dict) and isinstance(usage.get(key), int):
        return int(usage[key])
    outputs = _attr(span, "mlflow.spanOutputs")  # MLflow 2.x: the response's own usage
    usage = outputs.get("usage") if isinstance(outputs, dict) else None
    if isinstance(usage, dict) and isinstance(usage.get(openai_key), int):
        return int(usage[openai_key])
    return None
