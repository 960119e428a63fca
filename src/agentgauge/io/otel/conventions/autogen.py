"""AutoGen's own spans. Its runtime records every message as its own OTel trace (scope
``autogen SingleThreadedAgentRuntime``: ``autogen create/publish/process/send/ack`` spans with
``messaging.operation`` and ``messaging.destination`` ``{type}.({key})-A`` for an agent,
``{type}.({source})-T`` for a topic), and AgentChat's GenAI spans (scope ``autogen-core``:
``create_agent``, ``invoke_agent``, ``execute_tool``) name the agent's id ``{type}/{key}``.
An AgentChat team gives its run a UUID that ends every agent and topic type it registers
(``weather_{team id}``, ``group_topic_{team id}``) and keys them: the traces of one team run
share it, it is their run id. The runtime's messaging spans make no step."""

from __future__ import annotations

import re

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.wire.span import Span

__all__ = ["AutoGen"]

_RUNTIME_SCOPE = re.compile(r"autogen \w*AgentRuntime$")
_GENAI_SCOPE = "autogen-core"
_TEAM_ID = re.compile(r"_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
_NAMING = ("gen_ai.agent.id", "messaging.destination", "sender_agent_type", "recipient_agent_type")


def _is_autogen(span: Span) -> bool:
    return span.scope == _GENAI_SCOPE or bool(_RUNTIME_SCOPE.match(span.scope or ""))


@convention("autogen", rank=45)
class AutoGen(Convention):
    """AutoGen: the team run that joins its per-message traces; runtime messaging spans."""

    def operation(self, span: Span) -> str | None:
        if _RUNTIME_SCOPE.match(span.scope or "") and "messaging.operation" in span.attributes:
            return "messaging"
        return None

    def run_id(self, span: Span) -> str | None:
        if not _is_autogen(span):
            return None
        for key in _NAMING:
            found = _TEAM_ID.search(str(span.attributes.get(key) or ""))
            if found:
                return found.group(1)
        return None
