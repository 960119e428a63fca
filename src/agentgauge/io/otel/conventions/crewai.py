"""CrewAI through OpenInference (scope ``openinference.instrumentation.crewai``): an agent's
turn at a task is the AGENT span ``{role}._execute_core``, the agent (its ``role``) in
``input.value``; a delegation (CrewAI's agent tools, whose arguments name the ``coworker``:
``Delegate work to coworker``, ``Ask question to coworker``) runs the coworker inside the
tool's span, so that span is the coworker's run, handed over by the delegating agent; a task's
and a crew's output (``TaskOutput``, ``CrewOutput``) hold the answer in ``raw``.
A tool that failed answers the model with one of CrewAI's error texts (whatever instruments
the run)."""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import maybe_json
from agentgauge.io.otel.conventions.openinference import span_kind
from agentgauge.io.otel.wire.span import Span

__all__ = ["CrewAI"]

_SCOPE = "openinference.instrumentation.crewai"
_AGENT_SUFFIX = "._execute_core"


def _value(span: Span, key: str) -> Any:
    return maybe_json(span.attributes.get(key))


def _coworker(span: Span) -> str | None:
    """The coworker a delegation span runs."""
    if span_kind(span, _SCOPE) != "TOOL":
        return None
    arguments = _value(span, "input.value")
    coworker = arguments.get("coworker") if isinstance(arguments, dict) else None
    return coworker.strip() if isinstance(coworker, str) and coworker.strip() else None


@convention("crewai", rank=45)
class CrewAI(Convention):
    """CrewAI (OpenInference): agents by role, delegations as the coworker's run, outputs."""

    # crewai's native tool calls (agent_utils, agent_executor) and its ReAct tool usage
    # (translations/en.json: tool_usage_exception, tool_usage_error)
    tool_error_texts = (
        r"Error executing tool: (?P<error>.*)",
        r"I encountered an error while trying to use the tool\. This was the error: "
        r"(?P<error>.*?)\.?\n Tool ",
        r"I encountered an error: (?P<error>.*)",
    )

    def operation(self, span: Span) -> str | None:
        return "invoke_agent" if _coworker(span) is not None else None

    def agent_name(self, span: Span) -> str | None:
        coworker = _coworker(span)
        if coworker is not None:
            return coworker
        if span_kind(span, _SCOPE) != "AGENT":
            return None
        inputs = _value(span, "input.value")
        agent = inputs.get("agent") if isinstance(inputs, dict) else None
        role = agent.get("role") if isinstance(agent, dict) else None
        if isinstance(role, str) and role:
            return role
        if span.name.endswith(_AGENT_SUFFIX):
            return span.name[: -len(_AGENT_SUFFIX)] or None
        return None

    def output_text(self, span: Span) -> str | None:
        if span_kind(span, _SCOPE) is None:
            return None
        output = _value(span, "output.value")
        raw = output.get("raw") if isinstance(output, dict) else None
        return raw if isinstance(raw, str) and raw else None
