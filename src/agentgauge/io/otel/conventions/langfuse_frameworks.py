"""What the frameworks' own shapes tell in a Langfuse download. Langfuse names an observation after
the span it was made from, and its trace page's download keeps only that name and the type it
gave the observation (no attributes): an agent's name, or a tool's, is then only in the
framework's naming of its spans:

- agents: ``invoke_agent X`` (GenAI conventions), ``X run`` (pydantic-ai's run message, which
  Langfuse takes for the name), ``X.run`` (OpenInference's Agno instrumentation),
  ``agent_run [X]`` (Google ADK before 1.x, OpenInference's ADK instrumentation);
- tools: ``execute_tool X`` (GenAI conventions), ``execute_tool [X]`` (ADK),
  ``running tool: X`` (pydantic-ai's tool message).

Langfuse's LangChain integration types every chain whose name holds "agent" as an agent: the
model node of LangGraph's prebuilt agents (``agent``; ``model`` in LangChain's
``create_agent``) is one of those, a step of its graph's agent and no agent of its own. It is
known by its LangGraph metadata (``langgraph_node`` naming the observation itself) or, in the
trace page's download that keeps no metadata, by its name alone.

A LangGraph run's output is its state: its ``messages`` (LangChain's, tagged ``type: ai``), the
answer last; the trace page's download keeps it only as the trace's output.

It reads only observations of Langfuse's type ``agent`` or ``tool`` and ranks before the
Langfuse convention, which gives the name as it stands; an attribute of the span's own
instrumentation, when the download kept it, ranks before both."""

from __future__ import annotations

import re

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import maybe_json, messages
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.langsmith import openai_message
from agentgauge.io.otel.wire.span import Span

__all__ = ["LangfuseFrameworks"]

_AGENT_NAMES = (
    re.compile(r"^invoke_agent (?P<name>.+)$"),
    re.compile(r"^agent_run \[(?P<name>.+)\]$"),
    re.compile(r"^(?P<name>(?!agent$).+) run$"),  # "agent run" names no agent
    re.compile(r"^(?P<name>.+)\.run$"),
)
_TOOL_NAMES = (
    re.compile(r"^execute_tool \[(?P<name>.+)\]$"),
    re.compile(r"^execute_tool (?P<name>.+)$"),
    re.compile(r"^running tool: (?P<name>.+)$"),
)


_PREBUILT_NODES = frozenset({"agent", "model"})
_NODE = "langfuse.observation.metadata.langgraph_node"


def _prebuilt_node(span: Span) -> bool:
    """A prebuilt LangGraph agent's model node that Langfuse typed as an agent."""
    if span.attributes.get("langfuse.observation.type") != "agent":
        return False
    if span.name not in _PREBUILT_NODES:
        return False
    node = span.attributes.get(_NODE)
    recorded = any(not key.startswith("langfuse.") for key in span.attributes)
    return node == span.name or (node is None and not recorded)


def _named(span: Span, kind: str, patterns: tuple[re.Pattern[str], ...]) -> str | None:
    if span.attributes.get("langfuse.observation.type") != kind:
        return None
    for pattern in patterns:
        found = pattern.match(span.name)
        if found:
            return found["name"].strip() or None
    return None


@convention("langfuse-frameworks", rank=54)
class LangfuseFrameworks(Convention):
    """Langfuse downloads: the frameworks' span names, LangGraph's nodes and states."""

    def operation(self, span: Span) -> str | None:
        return "chain" if _prebuilt_node(span) else None

    def agent_name(self, span: Span) -> str | None:
        return _named(span, "agent", _AGENT_NAMES)

    def tool_name(self, span: Span) -> str | None:
        return _named(span, "tool", _TOOL_NAMES)

    def output_messages(self, span: Span) -> list[Message] | None:
        if span.attributes.get("langfuse.observation.type") == "generation":
            return None
        for key in ("langfuse.observation.output", "langfuse.trace.output"):
            state = maybe_json(span.attributes.get(key))
            if isinstance(state, dict) and isinstance(state.get("messages"), list):
                converted = [openai_message(m) for m in state["messages"]]
                return messages(converted, "assistant") or None
        return None
