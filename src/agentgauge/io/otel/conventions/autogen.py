"""AutoGen's own spans. Its runtime records every message as its own OTel trace (scope
``autogen SingleThreadedAgentRuntime``: ``autogen create/publish/process/send/ack`` spans with
``messaging.operation`` and ``messaging.destination`` ``{type}.({key})-A`` for an agent,
``{type}.({source})-T`` for a topic), and AgentChat's GenAI spans (scope ``autogen-core``:
``create_agent``, ``invoke_agent``, ``execute_tool``) name the agent's id ``{type}/{key}``.
An AgentChat team gives its run a UUID that ends every agent and topic type it registers
(``weather_{team id}``, ``group_topic_{team id}``) and keys them: the traces of one team run
share it, it is their run id. The runtime's messaging spans make no step, but for the
``process`` span of a message delivered to an AgentChat agent (``recipient_agent_class``
``ChatAgentContainer``): that is the agent's run, named by its type less the team's id.
AgentChat 0.5 records no GenAI spans: its tools' runs are autogen-core's ``BaseTool`` spans
(scope ``base_tool``, named after the tool, with ``tool_name`` and ``tool_args``)."""

from __future__ import annotations

import re
from typing import Any

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.conventions._parse import maybe_json
from agentgauge.io.otel.wire.span import Span

__all__ = ["AutoGen"]

_RUNTIME_SCOPE = re.compile(r"autogen \w*AgentRuntime$")
_GENAI_SCOPE = "autogen-core"
_TEAM_ID = re.compile(r"_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
_TOOL_SCOPE = "base_tool"
_AGENT_CONTAINER = "ChatAgentContainer"
_NAMING = ("gen_ai.agent.id", "messaging.destination", "sender_agent_type", "recipient_agent_type")


def _agent_process(span: Span) -> bool:
    """Whether a runtime span is an AgentChat agent processing a message."""
    attrs = span.attributes
    return (
        attrs.get("messaging.operation") == "process"
        and attrs.get("recipient_agent_class") == _AGENT_CONTAINER
    )


def _is_autogen(span: Span) -> bool:
    return span.scope == _GENAI_SCOPE or bool(_RUNTIME_SCOPE.match(span.scope or ""))


@convention("autogen", rank=45)
class AutoGen(Convention):
    """AutoGen: the team run that joins its per-message traces; runtime messaging spans."""

    def operation(self, span: Span) -> str | None:
        if span.scope == _TOOL_SCOPE and "tool_name" in span.attributes:
            return "execute_tool"
        if _RUNTIME_SCOPE.match(span.scope or "") and "messaging.operation" in span.attributes:
            return "invoke_agent" if _agent_process(span) else "messaging"
        return None

    def agent_name(self, span: Span) -> str | None:
        if not (_RUNTIME_SCOPE.match(span.scope or "") and _agent_process(span)):
            return None
        kind = str(span.attributes.get("recipient_agent_type") or "")
        return _TEAM_ID.sub("", kind) or None

    def tool_name(self, span: Span) -> str | None:
        return text(span, "tool_name") if span.scope == _TOOL_SCOPE else None

    def arguments(self, span: Span) -> Any:
        return maybe_json(span.attributes.get("tool_args")) if span.scope == _TOOL_SCOPE else None

    def run_id(self, span: Span) -> str | None:
        if not _is_autogen(span):
            return None
        for key in _NAMING:
            found = _TEAM_ID.search(str(span.attributes.get(key) or ""))
            if found:
                return found.group(1)
        return None
