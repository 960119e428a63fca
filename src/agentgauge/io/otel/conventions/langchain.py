"""LangChain and LangGraph through OpenInference (scope
``openinference.instrumentation.langchain``). The instrumentation calls a run an AGENT when
its name contains "agent": a LangGraph graph named as an agent (``create_react_agent(...,
name="weather_agent")``, a subgraph agent) is one, but so is the model node of LangGraph's
prebuilt agents, named ``agent`` (``model`` in LangChain's ``create_agent``): a node of a
prebuilt agent (``metadata.langgraph_node``, the span's own name) is a step of its graph's
agent, not an agent. As the name rule misses agents not named so (``name="forecaster"``),
a chain whose output state holds an answer carrying the chain's own name is an agent too:
LangGraph's prebuilt agent and LangChain's ``create_agent`` name their answers after the agent
(a graph with its default name ``LangGraph`` is no agent; its answers carry no name). A
tool run's ``output.value`` is the ``ToolMessage`` that answers the
model's call, and names it (``tool_call_id``); a tool that raised answers with LangGraph's
error text."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import maybe_json
from agentgauge.io.otel.conventions.openinference import span_kind
from agentgauge.io.otel.wire.span import Span

__all__ = ["LangChain"]

_SCOPE = "openinference.instrumentation.langchain"
# the nodes of LangGraph's prebuilt agents (langgraph.prebuilt.create_react_agent,
# langchain.agents.create_agent): the model's turn and the tools' turn
_PREBUILT_NODES = frozenset({"agent", "model", "tools"})


def _answers_as_itself(span: Span) -> bool:
    """Whether the chain's output state holds an AI message named after the chain."""
    state = maybe_json(span.attributes.get("output.value"))
    messages = state.get("messages") if isinstance(state, dict) else None
    for message in messages if isinstance(messages, list) else []:
        data = message.get("data", message) if isinstance(message, dict) else None
        if isinstance(data, dict) and data.get("type") == "ai" and data.get("name") == span.name:
            return True
    return False


def _prebuilt_node(span: Span) -> bool:
    """Whether the span is the run of a prebuilt agent's own node."""
    metadata = maybe_json(span.attributes.get("metadata"))
    node = metadata.get("langgraph_node") if isinstance(metadata, dict) else None
    return node == span.name and node in _PREBUILT_NODES


@convention("langchain", rank=45)
class LangChain(Convention):
    """LangChain / LangGraph (OpenInference): agents, not prebuilt nodes; tool call ids."""

    # langgraph.prebuilt.tool_node.TOOL_CALL_ERROR_TEMPLATE, what its ToolNode answers for a
    # tool that raised
    tool_error_texts = (r"Error: (?P<error>.*)\n Please fix your mistakes\.$",)

    def operation(self, span: Span) -> str | None:
        kind = span_kind(span, _SCOPE)
        if kind == "AGENT" and _prebuilt_node(span):
            return "chain"
        if kind == "CHAIN" and not _prebuilt_node(span) and _answers_as_itself(span):
            return "invoke_agent"
        return None

    def agent_name(self, span: Span) -> str | None:
        kind = span_kind(span, _SCOPE)
        if kind not in ("AGENT", "CHAIN") or _prebuilt_node(span):
            return None
        if kind == "AGENT" or _answers_as_itself(span):
            return span.name
        return None

    def tool_call_id(self, span: Span) -> str | None:
        if span_kind(span, _SCOPE) != "TOOL":
            return None
        message = maybe_json(span.attributes.get("output.value"))
        data = message.get("data", message) if isinstance(message, dict) else None
        call_id = data.get("tool_call_id") if isinstance(data, dict) else None
        return str(call_id) if call_id else None
