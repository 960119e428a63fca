"""strands-agents' own spans (scope ``strands.telemetry.tracer``): older releases (1.2) end a
failed tool's ``execute_tool`` span with an OK status, the failure only in its
``tool.status`` attribute (``"error"``) and the error text as the tool's answer (the
``gen_ai.choice`` event's ``message``: ``[{"text": "Error: ..."}]``)."""

from __future__ import annotations

from agentgauge.io.otel.conventions import Convention, convention
from agentgauge.io.otel.conventions._parse import maybe_json
from agentgauge.io.otel.wire.span import Span

__all__ = ["Strands"]

_SCOPE = "strands.telemetry.tracer"


def _answer_text(span: Span) -> str | None:
    """The text of the tool's answer, as its ``gen_ai.choice`` event records it."""
    for event in span.events:
        if event.name != "gen_ai.choice":
            continue
        blocks = maybe_json(event.attributes.get("message"))
        texts = (
            [str(b["text"]) for b in blocks if isinstance(b, dict) and b.get("text") is not None]
            if isinstance(blocks, list)
            else []
        )
        if texts:
            return "\n".join(texts)
    return None


@convention("strands", rank=15)
class Strands(Convention):
    """strands-agents: a failed tool told by ``tool.status``."""

    def error(self, span: Span) -> str | None:
        if span.scope != _SCOPE or span.attributes.get("tool.status") != "error":
            return None
        return _answer_text(span) or "error"
