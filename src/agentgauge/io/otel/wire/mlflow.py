"""MLflow's trace JSON (``mlflow.entities.Trace.to_json()``, what its SDK and UI export): ``{"info":
{...}, "data": {"spans": [...]}}``, one trace per document, or a list of them.

MLflow's spans are OpenTelemetry spans whose attributes hold JSON text (``mlflow.spanType``,
``mlflow.spanInputs``, ``mlflow.spanOutputs``, ``mlflow.chat.tokenUsage``, ...: the ``mlflow``
convention reads them). Three shapes of span dict are read, as ``Span.from_dict`` reads them:

- MLflow 3: ``trace_id``/``span_id``/``parent_span_id`` in base64 (the protobuf JSON mapping),
  ``start_time_unix_nano``/``end_time_unix_nano``, ``status: {code: STATUS_CODE_ERROR,
  message}``, events with ``time_unix_nano``;
- its newer dicts (``mlflow_span_dict_version`` 4): the OpenTelemetry trace id in
  ``otel_trace_id`` and hex span ids, ``status: {code: ERROR, message}``;
- MLflow 2: ``context: {trace_id, span_id}`` and ``parent_id`` in ``0x`` hex, ``start_time``
  /``end_time``, ``status_code``/``status_message``, events with ``timestamp``.

The trace's ``info`` gives the service name (``tags["service.name"]``) and the session
(``trace_metadata["mlflow.trace.session"]``), as resource and span attributes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_mlflow", "mlflow_spans"]


def _is_trace(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("info"), dict)
        and isinstance(doc.get("data"), dict)
        and isinstance(doc["data"].get("spans"), list)
    )


def is_mlflow(doc: Any) -> bool:
    """Whether a JSON document is an MLflow trace (or a list of them).

    Args:
        doc: the parsed document.
    """
    if isinstance(doc, list):
        return bool(doc) and all(_is_trace(t) for t in doc)
    return _is_trace(doc)


def _span(raw: Any, info: dict[str, Any]) -> Any:
    """One MLflow span dict as a flattened OTLP/JSON span (what is not a span is passed on
    for the span reader to report)."""
    if not isinstance(raw, dict):
        return raw
    context = raw["context"] if isinstance(raw.get("context"), dict) else {}
    trace_id = raw.get("otel_trace_id") or context.get("trace_id") or raw.get("trace_id")
    if isinstance(raw.get("status"), dict):
        status = raw["status"]
    else:
        status = {"code": raw.get("status_code"), "message": raw.get("status_message")}
    attributes = raw["attributes"] if isinstance(raw.get("attributes"), dict) else {}
    session = (info.get("trace_metadata") or {}).get("mlflow.trace.session")
    if session is not None:
        attributes = {"session.id": session, **attributes}
    return {
        "traceId": trace_id,
        "spanId": context.get("span_id") or raw.get("span_id"),
        "parentSpanId": raw.get("parent_span_id") or raw.get("parent_id"),
        "name": raw.get("name"),
        "startTimeUnixNano": raw.get("start_time_unix_nano", raw.get("start_time")),
        "endTimeUnixNano": raw.get("end_time_unix_nano", raw.get("end_time")),
        "attributes": attributes,
        "events": [
            {"name": ev.get("name"), "attributes": ev.get("attributes")}
            for ev in raw.get("events") or []
            if isinstance(ev, dict)
        ],
        "status": status,
    }


def mlflow_spans(doc: Any) -> dict[str, Any]:
    """An MLflow trace (or a list of them) as an OTLP/JSON request, one resource per trace.

    Args:
        doc: a document :func:`is_mlflow` accepts.
    """
    traces = doc if isinstance(doc, list) else [doc]
    resources = []
    for trace in traces:
        info: dict[str, Any] = trace["info"]
        tags = info.get("tags") if isinstance(info.get("tags"), dict) else {}
        service = tags.get("service.name") if isinstance(tags, dict) else None
        resource = {"service.name": service} if service else {}
        spans = [_span(raw, info) for raw in trace["data"]["spans"]]
        resources.append(
            {"resource": {"attributes": resource}, "scopeSpans": [{"scope": {}, "spans": spans}]}
        )
    return {"resourceSpans": resources}
