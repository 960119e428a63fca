"""OTLP/JSON (and the span lists the SDKs' console exporters print) read into spans: typed
``AnyValue`` attributes, ids in hex or base64, times in nanoseconds or ISO 8601. Every other
wire format is converted to this shape first (:mod:`.formats`).

This is where hostile input is met first: a value of an unexpected shape is an error of its
span (:data:`SHAPE_ERRORS`), an oversized attribute is left out and reported, and the rest of
the document is read."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from agentgauge._safe import DECODE_ERRORS, describe
from agentgauge.io.jsonl import ReadError, read_warning
from agentgauge.io.otel.wire.span import BadField, Event, Span, first, hex_id, time_or_none

__all__ = [
    "MAX_ATTRIBUTE_CHARS",
    "SHAPE_ERRORS",
    "any_value",
    "attributes_of",
    "line_error",
    "objects",
    "spans_of",
]

MAX_ATTRIBUTE_CHARS = 10_000_000
"""Attribute values longer than this are left out of their span (and reported)."""

# A span or trace whose values have an unexpected shape or size (a time past year 9999, an
# infinite token count, a list where an object belongs) is an error of that span or trace.
SHAPE_ERRORS: tuple[type[Exception], ...] = (
    *DECODE_ERRORS,
    TypeError,
    AttributeError,
    KeyError,
    IndexError,
)


def any_value(value: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as plain JSON (flattened exporters already give plain values)."""
    if not isinstance(value, dict):
        return value
    try:
        if "stringValue" in value:
            return value["stringValue"]
        if "intValue" in value:
            return int(value["intValue"])
        if "doubleValue" in value:
            return float(value["doubleValue"])
        if "boolValue" in value:
            return bool(value["boolValue"])
        if "bytesValue" in value:
            return value["bytesValue"]
    except OverflowError:  # an infinite number, or an integer too long to read
        raise BadField(where, "a number too large to use") from None
    except (TypeError, ValueError) as exc:
        raise BadField(where, f"bad attribute value {value!r:.80}: {exc}") from None
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values") or []
        return [any_value(v, f"{where}.arrayValue.values[{i}]") for i, v in enumerate(items)]
    if "kvlistValue" in value:
        return attributes_of(
            (value["kvlistValue"] or {}).get("values") or [], f"{where}.kvlistValue"
        )
    return value or None


def attributes_of(raw: Any, where: str, problems: list[BadField] | None = None) -> dict[str, Any]:
    """OTLP ``[{key, value}]`` attributes (or a plain dict of them) as a dict.

    Args:
        raw: the attributes as the export gives them.
        where: their path, for the errors.
        problems: where a value that cannot be read (a 5,000-digit ``intValue``) goes as a
            warning, the attribute left out; without it, such a value is an error.
    """
    if raw is None:
        return {}
    # each value's path is written only for an error: a span's attributes are read by the
    # thousand, and nearly all of them are strings, taken as they are
    if isinstance(raw, dict):
        pairs = [(str(k), v, k) for k, v in raw.items()]
        path = "{}.{}"
    elif isinstance(raw, list):
        pairs = []
        for i, kv in enumerate(raw):
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise BadField(f"{where}[{i}].key", "an attribute needs a string 'key'")
            pairs.append((kv["key"], kv.get("value"), i))
        path = "{}[{}].value"
    else:
        raise BadField(where, f"expected a list of key/value attributes, got {type(raw).__name__}")
    out: dict[str, Any] = {}
    for key, value, at in pairs:
        if type(value) is dict and "stringValue" in value:
            out[key] = value["stringValue"]  # any_value's first case
            continue
        try:
            out[key] = any_value(value, path.format(where, at))
        except BadField as exc:
            if problems is None:
                raise
            problems.append(BadField(exc.field, f"{exc}: the attribute is left out", warning=True))
    return out


def _drop_oversized(attrs: dict[str, Any], where: str, problems: list[BadField]) -> None:
    """Leave out attribute values over :data:`MAX_ATTRIBUTE_CHARS` (a whole document pasted
    into an attribute), each reported as a problem of its span."""
    for key in [k for k, v in attrs.items() if isinstance(v, str) and len(v) > MAX_ATTRIBUTE_CHARS]:
        size = len(attrs.pop(key)) / 1e6
        message = (
            f"a value of {size:.1f} million characters, over the limit of "
            f"{MAX_ATTRIBUTE_CHARS / 1e6:.0f} million: the attribute is left out, the span kept"
        )
        problems.append(BadField(f"{where}.{key}", message, warning=True))


def _decode_span(
    raw: Any,
    where: str,
    line: int,
    resource: dict[str, Any],
    scope: str | None,
    problems: list[BadField],
) -> Span:
    """One span, in OTLP/JSON or flattened (SDK console) form; what is left out of it goes in
    ``problems``."""
    if not isinstance(raw, dict):
        raise BadField(where, f"expected a span object, got {type(raw).__name__}")
    context: dict[str, Any] = raw["context"] if isinstance(raw.get("context"), dict) else {}
    ids = {**context, **raw}
    trace_key, trace_id = first(ids, "traceId", "trace_id")
    span_key, span_id = first(ids, "spanId", "span_id", "id")
    parent_key, parent = first(raw, "parentSpanId", "parent_span_id", "parent_id", "parentId")
    for key, value in ((trace_key, trace_id), (span_key, span_id), (parent_key, parent)):
        if value is not None and not isinstance(value, str):
            raise BadField(f"{where}.{key}", f"expected a hex string, got {value!r:.40}")
    trace_hex, span_hex = hex_id(trace_id), hex_id(span_id)
    if trace_hex is None:
        raise BadField(f"{where}.{trace_key}", "missing: every span needs its trace id")
    if span_hex is None:
        raise BadField(f"{where}.{span_key}", "missing: every span needs its span id")
    start_key, start = first(raw, "startTimeUnixNano", "start_time")
    end_key, end = first(raw, "endTimeUnixNano", "end_time")
    start_ns = time_or_none(start, f"{where}.{start_key}", problems)
    end_ns = time_or_none(end, f"{where}.{end_key}", problems)
    if start_ns is None and start is None and _finite(raw.get("timestamp")):
        # the JavaScript console exporter: microseconds since the epoch and a duration
        start_ns = time_or_none(int(raw["timestamp"] * 1000), f"{where}.timestamp", problems)
        if start_ns is not None and _finite(raw.get("duration")):
            end_ns = time_or_none(
                start_ns + int(raw["duration"] * 1000), f"{where}.duration", problems
            )
    status: dict[str, Any] = raw["status"] if isinstance(raw.get("status"), dict) else {}
    code = status.get("code", status.get("status_code"))
    message = status.get("message", status.get("description"))
    events: list[Event] = []
    bad: list[BadField] = []
    for i, ev in objects(raw.get("events"), f"{where}.events", bad):
        attrs = attributes_of(ev.get("attributes"), f"{where}.events[{i}].attributes", problems)
        _drop_oversized(attrs, f"{where}.events[{i}].attributes", problems)
        events.append(Event(str(ev.get("name", "")), attrs))
    if bad:
        raise bad[0]
    own_resource = raw.get("resource")
    if isinstance(own_resource, dict) and "attributes" in own_resource:
        resource = attributes_of(own_resource["attributes"], f"{where}.resource.attributes")
    if isinstance(raw.get("scope"), str):
        scope = raw["scope"]  # a flattened span naming its instrumentation scope
    attributes = attributes_of(raw.get("attributes"), f"{where}.attributes", problems)
    _drop_oversized(attributes, f"{where}.attributes", problems)
    return Span(
        trace_id=trace_hex,
        span_id=span_hex,
        parent_id=hex_id(parent),
        name=str(raw.get("name") or ""),
        start_ns=start_ns,
        end_ns=end_ns,
        attributes=attributes,
        events=events,
        status_error=code in (2, "2", "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR"),
        status_message=str(message) if message else None,
        resource=resource,
        scope=scope,
        line=line,
    )


def spans_of(doc: Any, line: int) -> tuple[list[Span], list[BadField]]:
    """The spans of one OTLP/JSON document (a request, a span or a list of spans); spans that
    cannot be read come back as errors."""
    spans: list[Span] = []
    errors: list[BadField] = []

    def take(raw: Any, where: str, resource: dict[str, Any], scope: str | None) -> None:
        try:
            spans.append(_decode_span(raw, where, line, resource, scope, errors))
        except BadField as exc:
            errors.append(exc)
        except SHAPE_ERRORS as exc:
            errors.append(BadField(where, describe(exc)))

    if isinstance(doc, list):
        for i, item in enumerate(doc):
            if isinstance(item, dict) and "resourceSpans" in item:
                more, bad = spans_of(item, line)
                spans += more
                errors += [BadField(f"[{i}].{e.field}", str(e)) for e in bad]
            else:
                take(item, f"[{i}]", {}, None)
        return spans, errors
    if not isinstance(doc, dict):
        return [], [BadField("", f"expected a JSON object or list, got {type(doc).__name__}")]
    if "resourceSpans" not in doc:
        if "name" in doc and any(k in doc for k in ("context", "spanId", "span_id", "id")):
            take(doc, "span", {}, None)
            return spans, errors
        return [], [BadField("resourceSpans", "missing: not an OTLP trace export nor a span")]
    for i, rs in objects(doc.get("resourceSpans"), "resourceSpans", errors):
        where_rs = f"resourceSpans[{i}]"
        try:
            # a resource attribute that cannot be decoded is left out (a warning), not its spans
            resource = attributes_of(
                (rs.get("resource") or {}).get("attributes"),
                f"{where_rs}.resource.attributes",
                errors,
            )
        except (BadField, AttributeError):
            errors.append(BadField(f"{where_rs}.resource", "expected a resource object"))
            continue
        scope_key = "scopeSpans" if "scopeSpans" in rs else "instrumentationLibrarySpans"
        for j, ss in objects(rs.get(scope_key), f"{where_rs}.{scope_key}", errors):
            scope = _scope_name(ss, f"{where_rs}.{scope_key}[{j}]", errors)
            where_ss = f"{where_rs}.{scope_key}[{j}].spans"
            for k, raw in objects(ss.get("spans"), where_ss, errors):
                take(raw, f"{where_ss}[{k}]", resource, scope)
    return spans, errors


def _scope_name(scope_spans: dict[str, Any], where: str, problems: list[BadField]) -> str | None:
    """The instrumentation scope's name; one that is not text is left out with a warning
    (its spans are read, without the conventions that know them by their scope)."""
    key = "scope" if "scope" in scope_spans else "instrumentationLibrary"
    info = scope_spans.get(key)
    if info is None:
        return None
    name = info.get("name") if isinstance(info, dict) else info
    if name is None or isinstance(name, str):
        return name
    field = f"{where}.{key}.name" if isinstance(info, dict) else f"{where}.{key}"
    message = f"expected a scope name, got {type(name).__name__}: the scope is left out"
    problems.append(BadField(field, message, warning=True))
    return None


def objects(value: Any, where: str, errors: list[BadField]) -> Iterator[tuple[int, Any]]:
    """The items of a list in the export's envelope; a non-list or a non-object is an error."""
    if value is None:
        return
    if not isinstance(value, list):
        errors.append(BadField(where, f"expected a list, got {type(value).__name__}"))
        return
    for i, item in enumerate(value):
        if isinstance(item, dict):
            yield i, item
        else:
            errors.append(BadField(f"{where}[{i}]", f"expected an object, got {item!r:.40}"))


def line_error(source: str, line: int, errors: list[BadField]) -> ReadError:
    """All the errors of one line as one ReadError (the store keeps one per line): the first
    error first, a warning when every one is a warning (the line was read)."""
    errors = sorted(errors, key=lambda e: e.warning)  # stable: errors first, in their order
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if errors[0].warning:
        return read_warning(source, line, errors[0].field or None, str(errors[0]) + more)
    return ReadError(source, line, errors[0].field or None, str(errors[0]) + more)


def _finite(value: Any) -> bool:
    """Whether a console exporter's microseconds are a number that nanoseconds can hold."""
    if isinstance(value, float):
        return math.isfinite(value * 1000)
    return isinstance(value, int) and not isinstance(value, bool)
