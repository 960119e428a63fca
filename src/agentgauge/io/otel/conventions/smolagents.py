"""smolagents through OpenInference (scope ``openinference.instrumentation.smolagents``): an
agent's run is the AGENT span ``{agent name}.run`` (the manager's and each managed agent's;
a managed agent's run inside the manager's step is the manager handing the task over); the
``final_answer`` tool is how an agent gives its answer, which its run records as its output,
not a tool the agent used."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.conventions.openinference import span_kind
from agentgauge.io.otel.wire.span import Span

__all__ = ["Smolagents"]

_SCOPE = "openinference.instrumentation.smolagents"
_RUN_SUFFIX = ".run"
_FINAL_ANSWER = "final_answer"


@convention("smolagents", rank=45)
class Smolagents(Convention):
    """smolagents (OpenInference): agents by their run spans; final_answer is the answer."""

    def operation(self, span: Span) -> str | None:
        if span_kind(span, _SCOPE) == "TOOL" and text(span, "tool.name") == _FINAL_ANSWER:
            return _FINAL_ANSWER
        return None

    def agent_name(self, span: Span) -> str | None:
        if span_kind(span, _SCOPE) == "AGENT" and span.name.endswith(_RUN_SUFFIX):
            return span.name[: -len(_RUN_SUFFIX)] or None
        return None
