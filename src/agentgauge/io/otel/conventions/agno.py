"""Agno's teams: the leader's own delegation tools (``delegate_task_to_member``,
``delegate_task_to_members``; Agno 1.x's ``transfer_task_to_member``) are how a team hands a
task to its members, not tools of the user's: they make no tool call. The member's run, which
OpenInference's Agno instrumentation records as an agent span inside the team's, is the
handoff. Agno's spans are otherwise OpenInference's (read by that convention)."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.wire.span import Span

__all__ = ["Agno"]

_DELEGATION_TOOLS = frozenset(
    {"delegate_task_to_member", "delegate_task_to_members", "transfer_task_to_member"}
)


@convention("agno", rank=25)
class Agno(Convention):
    """Agno: a team's delegation tools are coordination, not tool calls."""

    def operation(self, span: Span) -> str | None:
        name = text(span, "tool.name", "gen_ai.tool.name") or span.name
        return "delegate" if name in _DELEGATION_TOOLS else None
