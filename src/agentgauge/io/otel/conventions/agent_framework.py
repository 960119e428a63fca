"""Microsoft Agent Framework's workflow spans (scope ``agent_framework``), beside its GenAI
agent, chat and tool spans: ``workflow.build`` defines a workflow (a trace of its own, no run),
``workflow.run`` runs one around its agents (a wrapper)."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.wire.span import Span

__all__ = ["AgentFramework"]

_OPERATIONS = {"workflow.build": "definition", "workflow.run": "wrapper"}


@convention("agent-framework", rank=45)
class AgentFramework(Convention):
    """Microsoft Agent Framework: its workflow's build (a definition) and run (a wrapper)."""

    def operation(self, span: Span) -> str | None:
        return _OPERATIONS.get(span.name) if span.scope == "agent_framework" else None
