"""LlamaIndex through OpenInference (scope ``openinference.instrumentation.llama_index``),
whose dispatcher names each span ``{Class}.{method}``: an agent's turn in a workflow
(``AgentWorkflow``, or one ``FunctionAgent``/``ReActAgent`` run on its own) is its
``run_agent_step``, the agent named by the step's event (``AgentSetup(...,
current_agent_name='weather')``, recorded as its repr in ``input.value``). The workflow's
handoff tool, the tools' ``{"kwargs": ...}`` and the LLM's ``_prepare_chat_with_tools`` spans
follow the rules every framework's do."""

from __future__ import annotations

import re

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions.openinference import span_kind
from agentgauge.io.otel.wire.span import Span

__all__ = ["LlamaIndex"]

_SCOPE = "openinference.instrumentation.llama_index"
_AGENT_STEP = "run_agent_step"
_CURRENT_AGENT = re.compile(r"current_agent_name='((?:[^'\\]|\\.)+)'")


@convention("llamaindex", rank=45)
class LlamaIndex(Convention):
    """LlamaIndex (OpenInference): a workflow agent's turn is its run_agent_step."""

    def operation(self, span: Span) -> str | None:
        return "invoke_agent" if self.agent_name(span) is not None else None

    def agent_name(self, span: Span) -> str | None:
        if span_kind(span, _SCOPE) is None or span.name.rpartition(".")[2] != _AGENT_STEP:
            return None
        found = _CURRENT_AGENT.findall(str(span.attributes.get("input.value") or ""))
        return found[-1] if found else None
