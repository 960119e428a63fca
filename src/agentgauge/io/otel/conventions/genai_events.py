"""The OpenTelemetry GenAI conventions' deprecated message events, as span events or as OTLP
log records joined to their span: ``gen_ai.system.message``, ``gen_ai.user.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message`` and ``gen_ai.choice`` (conventions up
to 1.30), and the older ``gen_ai.content.prompt``/``gen_ai.content.completion`` events that
carry ``gen_ai.prompt``/``gen_ai.completion``."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import event_body, messages
from agentgauge.io.otel.observation import Message
from agentgauge.io.otel.wire.span import Span

__all__ = ["GenAIEvents"]

_INPUT_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_OUTPUT_EVENTS = {"gen_ai.choice": "assistant"}


def _from_events(
    span: Span, roles: dict[str, str], legacy_event: str, legacy_key: str, role: str
) -> list[Message] | None:
    found: list[Message] = []
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
