"""GenAI events exported as OTLP log records (``resourceLogs``): each joins the span its
``traceId``/``spanId`` name, as an event of it, or (the
``gen_ai.client.inference.operation.details`` event) as the attributes the span lacks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgauge._safe import describe
from agentgauge.io.otel.wire.otlp import SHAPE_ERRORS, any_value, attributes_of, objects
from agentgauge.io.otel.wire.span import BadField, Event, Span, hex_id

__all__ = ["LogEvent", "attach_logs", "log_events"]


@dataclass
class LogEvent:
    """A GenAI log record and the span it names.

    Args:
        trace_id: the span's trace id.
        span_id: the span's id.
        source: the file it was read from.
        line: where its document starts.
        event: the record as an event of the span.
    """

    trace_id: str
    span_id: str
    source: str
    line: int
    event: Event


def log_events(
    doc: dict[str, Any], source: str, line: int
) -> tuple[list[LogEvent], list[BadField]]:
    """The GenAI events of an OTLP logs export, each with the span it belongs to, and the
    records that could not be read.

    Args:
        doc: the ``{"resourceLogs": [...]}`` document.
        source: the file it was read from.
        line: where it starts.
    """
    events: list[LogEvent] = []
    errors: list[BadField] = []
    for i, rl in objects(doc.get("resourceLogs"), "resourceLogs", errors):
        for j, sl in objects(rl.get("scopeLogs"), f"resourceLogs[{i}].scopeLogs", errors):
            where_sl = f"resourceLogs[{i}].scopeLogs[{j}].logRecords"
            for k, rec in objects(sl.get("logRecords"), where_sl, errors):
                where = f"{where_sl}[{k}]"
                try:
                    attrs = attributes_of(rec.get("attributes"), f"{where}.attributes")
                    body = any_value(rec.get("body"), f"{where}.body")
                except BadField as exc:
                    errors.append(exc)
                    continue
                except SHAPE_ERRORS as exc:
                    errors.append(BadField(where, describe(exc)))
                    continue
                name = str(rec.get("eventName") or attrs.pop("event.name", "") or "")
                if not name.startswith("gen_ai."):
                    continue  # application logs: nothing an agent trace is made of
                trace_id, span_id = hex_id(rec.get("traceId")), hex_id(rec.get("spanId"))
                if trace_id is None or span_id is None:
                    missing = "traceId" if trace_id is None else "spanId"
                    errors.append(BadField(f"{where}.{missing}", f"missing: {name} names no span"))
                    continue
                if isinstance(body, dict):
                    attrs.update(body)
                elif body is not None:
                    attrs.setdefault("content", body)
                events.append(LogEvent(trace_id, span_id, source, line, Event(name, attrs)))
    return events, errors


def attach_logs(spans: list[Span], logs: list[LogEvent]) -> dict[str, Any]:
    """Put log events on their spans; returns notes for the trace's metadata.

    ``gen_ai.client.inference.operation.details`` carries span-attribute keys (messages,
    tool definitions), which fill the span's missing attributes; older events join the span's
    events.

    Args:
        spans: the spans of one trace.
        logs: the log events of that trace.
    """
    by_id = {s.span_id: s for s in spans}
    unattached = 0
    for log in logs:
        span = by_id.get(log.span_id)
        if span is None:
            unattached += 1
        elif log.event.name == "gen_ai.client.inference.operation.details":
            for key, value in log.event.attributes.items():
                span.attributes.setdefault(key, value)
        else:
            span.events.append(log.event)
    notes: dict[str, Any] = {"log_records": len(logs)} if logs else {}
    if unattached:
        notes["unattached_log_records"] = unattached
    return notes
