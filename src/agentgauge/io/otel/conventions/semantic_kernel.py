"""Semantic Kernel's own telemetry before it took the GenAI conventions' names (its 1.2x
releases): a model call's ``gen_ai.operation.name`` is ``chat.completions`` (or
``text.completions``), a kernel function runs in a span of the scope
``semantic_kernel.functions.kernel_function`` named ``{plugin}-{function}`` with no GenAI
attribute (the arguments are then only in the model's call, matched by name), and an agent's
invocation is a span of the scope ``semantic_kernel.utils.telemetry.agent_diagnostics...``
named after the agent. The messages are in GenAI log records (read by the GenAI events'
convention). Its later releases write the GenAI conventions' names, read by that convention.
"""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention, text
from agentgauge.io.otel.wire.span import Span

__all__ = ["SemanticKernel"]

_OPERATIONS = {"chat.completions": "chat", "text.completions": "text_completion"}
_FUNCTION_SCOPE = "semantic_kernel.functions.kernel_function"
_AGENT_SCOPE = "semantic_kernel.utils.telemetry.agent_diagnostics"


def _scope(span: Span) -> str:
    return span.scope or ""


@convention("semantic-kernel", rank=8)
class SemanticKernel(Convention):
    """Semantic Kernel 1.2x: chat.completions, kernel-function and agent spans by scope."""

    def operation(self, span: Span) -> str | None:
        if not _scope(span).startswith("semantic_kernel"):
            return None
        operation = text(span, "gen_ai.operation.name")
        if operation in _OPERATIONS:
            return _OPERATIONS[operation]
        if operation is None and _scope(span) == _FUNCTION_SCOPE:
            return "execute_tool"
        if operation is None and _scope(span).startswith(_AGENT_SCOPE):
            return "invoke_agent"
        return None

    def tool_name(self, span: Span) -> str | None:
        if _scope(span) == _FUNCTION_SCOPE and "gen_ai.tool.name" not in span.attributes:
            return span.name or None
        return None

    def agent_name(self, span: Span) -> str | None:
        if _scope(span).startswith(_AGENT_SCOPE) and "gen_ai.agent.name" not in span.attributes:
            return span.name or None
        return None
