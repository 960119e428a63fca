"""The OpenTelemetry GenAI conventions' events, as span events or as OTLP log records joined
to their span: the latest ``gen_ai.client.inference.operation.details`` (carrying
``gen_ai.input.messages``, ``gen_ai.output.messages`` and ``gen_ai.tool.definitions``, one or
several events per span), the deprecated ``gen_ai.system.message``, ``gen_ai.user.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message`` and ``gen_ai.choice`` (conventions up
to 1.30), and the older ``gen_ai.content.prompt``/``gen_ai.content.completion`` events that
carry ``gen_ai.prompt``/``gen_ai.completion``."""

from __future__ import annotations

from typing import Any

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import event_body, maybe_json, messages, tool_specs
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span
from agentgauge.model import ToolSpec

__all__ = ["GenAIEvents"]

_INPUT_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_OUTPUT_EVENTS = {"gen_ai.choice": "assistant"}
_DETAILS = "gen_ai.client.inference.operation.details"


def _details(span: Span, key: str) -> list[Any]:
    """The values of one attribute over the span's operation-details events."""
    return [
        ev.attributes[key] for ev in span.events if ev.name == _DETAILS and key in ev.attributes
    ]


def _from_events(
    span: Span, roles: dict[str, str], legacy_event: str, legacy_key: str, role: str
) -> list[Message] | None:
    detailed = "gen_ai.input.messages" if role == "user" else "gen_ai.output.messages"
    found = [m for value in _details(span, detailed) for m in messages(value, role)]
    if found:
        return found
    for ev in span.events:
        if ev.name in roles:
            found += messages(event_body(ev), roles[ev.name])
        elif ev.name == legacy_event:
            found += messages(ev.attributes.get(legacy_key), role)
    return found or None


@convention("genai-events", rank=60)
class GenAIEvents(Convention):
    """OpenTelemetry GenAI semantic conventions: message events (span events, log records)."""

    def input_messages(self, span: Span) -> list[Message] | None:
        return _from_events(span, _INPUT_EVENTS, "gen_ai.content.prompt", "gen_ai.prompt", "user")

    def output_messages(self, span: Span) -> list[Message] | None:
        return _from_events(
            span, _OUTPUT_EVENTS, "gen_ai.content.completion", "gen_ai.completion", "assistant"
        )

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        definitions = [maybe_json(v) for v in _details(span, "gen_ai.tool.definitions")]
        return [spec for d in definitions if isinstance(d, list) for spec in tool_specs(d)] or None
