"""Agno: the team's and the agent's names, and the teams' delegation. OpenInference's Agno
instrumentation names an agent's run in ``agent.name`` since its 1.x; before, only in
``agno.agent`` (an agent) and ``agno.team`` (a team, whose leader runs as an agent too).

A team leader's own delegation tools (``delegate_task_to_member``,
``delegate_task_to_members``; Agno 1.x's ``transfer_task_to_member`` and, routing,
``forward_task_to_member``) are how a team hands a
task to its members, not tools of the user's: they make no tool call. The member's run, which
OpenInference's Agno instrumentation records as an agent span inside the team's, is the
handoff. Agno's spans are otherwise OpenInference's (read by that convention)."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.wire.span import Span

__all__ = ["Agno"]

_DELEGATION_TOOLS = frozenset(
    {
        "delegate_task_to_member",
        "delegate_task_to_members",
        "transfer_task_to_member",
        "forward_task_to_member",
    }
)


@convention("agno", rank=25)
class Agno(Convention):
    """Agno: agno.agent / agno.team names; a team's delegation tools are no tool calls."""

    def operation(self, span: Span) -> str | None:
        name = text(span, "tool.name", "gen_ai.tool.name") or span.name
        return "delegate" if name in _DELEGATION_TOOLS else None

    def agent_name(self, span: Span) -> str | None:
        return text(span, "agno.agent", "agno.team")
