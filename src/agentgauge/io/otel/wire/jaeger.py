"""Jaeger's query-API JSON (``/api/traces``, the UI's "Download JSON") as OTLP/JSON spans.

A Jaeger export is ``{"data": [{"traceID", "spans": [...], "processes": {...}}]}``. Each span
has ``traceID``/``spanID``, ``operationName``, ``references`` (``CHILD_OF`` names the parent),
``startTime`` and ``duration`` in microseconds, typed ``tags``, ``logs`` (events: a timestamp
and typed ``fields``, the event's name in the field ``event``) and a ``processID`` naming its
process (service name and tags). When Jaeger stores OpenTelemetry spans it keeps the
attributes as tags and adds ``otel.scope.name``, ``otel.status_code``,
``otel.status_description`` and ``span.kind``; those become the scope and the status again.

The converted document goes through the same span reader as OTLP/JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["is_jaeger", "jaeger_to_otlp"]

_SCOPE_TAGS = ("otel.scope.name", "otel.library.name")
_INT64_DIGITS = 19
_LATEST_US = 1e17  # microseconds since 1970: about the year 5138
_STATUS_TAGS = {"otel.status_code", "otel.status_description", "error"}


def is_jaeger(doc: Any) -> bool:
    """Whether a JSON document is a Jaeger query-API export.

    Args:
        doc: the parsed document.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        return False
    return all(isinstance(t, dict) and "spans" in t for t in doc["data"])


def _list(value: Any) -> list[Any]:
    """A field that should be a list, or none when it is anything else."""
    return value if isinstance(value, list) else []


def _time(value: Any) -> int | float | None:
    """A time in microseconds, or None when it is not a finite number (NaN, Infinity, text);
    an integer stays one (as a float, today's microseconds lose their last digits once made
    nanoseconds)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return value if math.isfinite(value) and abs(value) < _LATEST_US else None
    except OverflowError:  # an integer too large for a float
        return None


def _tag_value(tag: dict[str, Any]) -> Any:
    value = tag.get("value")
    kind = str(tag.get("type", "string")).lower()
    if kind == "int64" and isinstance(value, str) and value.lstrip("-").isdigit():
        # an int64 has at most 19 digits: a longer one is kept as the text it is
        return int(value) if len(value.lstrip("-")) <= _INT64_DIGITS else value
    if kind == "float64" and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if kind == "bool" and isinstance(value, str):
        return value.lower() == "true"
    return value


def _tags(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, list):
        return {}
    return {str(t["key"]): _tag_value(t) for t in raw if isinstance(t, dict) and "key" in t}


def _span(raw: dict[str, Any], processes: dict[str, Any]) -> tuple[str, str | None, dict[str, Any]]:
    """A Jaeger span as an OTLP/JSON span, with its service and scope."""
    tags = _tags(raw.get("tags"))
    scope = next((str(tags[k]) for k in _SCOPE_TAGS if k in tags), None)
    failed = str(tags.get("otel.status_code", "")).upper() == "ERROR" or tags.get("error") is True
    parent = next(
        (
            ref.get("spanID")
            for ref in _list(raw.get("references"))
            if isinstance(ref, dict) and ref.get("refType", "CHILD_OF") == "CHILD_OF"
        ),
        raw.get("parentSpanID"),
    )
    start = _time(raw.get("startTime"))
    duration = _time(raw.get("duration"))
    span: dict[str, Any] = {
        "traceId": raw.get("traceID"),
        "spanId": raw.get("spanID"),
        "parentSpanId": parent,
        "name": raw.get("operationName", ""),
        "attributes": {
            k: v
            for k, v in tags.items()
            if k not in _STATUS_TAGS and k not in _SCOPE_TAGS and not k.startswith("otel.scope.")
        },
        "events": [
            {"name": str(fields.pop("event", "")), "attributes": fields}
            for fields in (
                _tags(log.get("fields")) for log in _list(raw.get("logs")) if isinstance(log, dict)
            )
        ],
        "status": {"code": 2, "message": tags.get("otel.status_description")} if failed else {},
    }
    if start is not None:
        span["startTimeUnixNano"] = int(start * 1000)
        if duration is not None and _time(start + duration) is not None:
            span["endTimeUnixNano"] = int((start + duration) * 1000)
    process: Any = processes.get(str(raw.get("processID")), raw.get("process"))
    if not isinstance(process, dict):
        process = {}
    service = str(process.get("serviceName", ""))
    resource = {**_tags(process.get("tags")), "service.name": service}
    return json.dumps(resource, sort_keys=True, default=str), scope, span


def jaeger_to_otlp(doc: dict[str, Any]) -> dict[str, Any]:
    """A Jaeger query-API export as an OTLP/JSON ``ExportTraceServiceRequest`` (attributes as
    plain values), one resource per Jaeger process and one scope per ``otel.scope.name``.

    Args:
        doc: the parsed export (see :func:`is_jaeger`).
    """
    groups: dict[str, dict[str | None, list[dict[str, Any]]]] = {}
    for trace in _list(doc.get("data")):
        if not isinstance(trace, dict):
            continue
        found = trace.get("processes")
        processes: dict[str, Any] = found if isinstance(found, dict) else {}
        for raw in _list(trace.get("spans")):
            if not isinstance(raw, dict):
                groups.setdefault("{}", {}).setdefault(None, []).append(raw)
                continue
            resource, scope, span = _span(raw, processes)
            groups.setdefault(resource, {}).setdefault(scope, []).append(span)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": json.loads(resource)},
                "scopeSpans": [
                    {"scope": {"name": scope} if scope else {}, "spans": spans}
                    for scope, spans in scopes.items()
                ],
            }
            for resource, scopes in groups.items()
        ]
    }
