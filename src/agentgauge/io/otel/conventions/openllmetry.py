"""OpenLLMetry (Traceloop) before it adopted the GenAI message attributes: flattened
``gen_ai.prompt.{i}.*``/``gen_ai.completion.{i}.*`` messages with their tool calls,
``llm.request.functions.{i}.*`` as the tools offered, and the older
``gen_ai.usage.prompt_tokens``/``completion_tokens``."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import flattened_messages, integer, tool_specs, unflatten
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span
from agentgauge.model import ToolSpec

__all__ = ["OpenLLMetry"]


@convention("openllmetry", rank=20)
class OpenLLMetry(Convention):
    """OpenLLMetry (Traceloop): flattened prompts and completions, request functions."""

    def input_messages(self, span: Span) -> list[Message] | None:
        return flattened_messages(span.attributes, "gen_ai.prompt", "user")

    def output_messages(self, span: Span) -> list[Message] | None:
        return flattened_messages(span.attributes, "gen_ai.completion", "assistant")

    def input_tokens(self, span: Span) -> int | None:
        return integer(span.attributes, "gen_ai.usage.prompt_tokens")

    def output_tokens(self, span: Span) -> int | None:
        return integer(span.attributes, "gen_ai.usage.completion_tokens")

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        return tool_specs(unflatten(span.attributes, "llm.request.functions")) or None
