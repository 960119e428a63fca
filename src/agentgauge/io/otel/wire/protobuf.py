"""OTLP protobuf files: an ``ExportTraceServiceRequest`` (or ``ExportLogsServiceRequest``) as
the OTLP/HTTP exporter sends it, read with ``opentelemetry-proto``.

The request becomes the same dict as its OTLP/JSON form (protobuf's JSON mapping, with ids in
base64, which the span reader accepts), so one reader serves both. ``opentelemetry-proto`` is
the optional extra ``agentgauge[otel]``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["decode_request", "is_protobuf"]


def is_protobuf(head: bytes) -> bool:
    """Whether a file's first bytes (after decompression) are binary rather than JSON text.

    Args:
        head: the first bytes of the content.
    """
    text = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    return bool(text) and text[:1] not in (b"{", b"[")


def decode_request(data: bytes) -> dict[str, Any]:
    """An OTLP protobuf export request as its OTLP/JSON dict.

    Args:
        data: the serialized ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest``.

    Raises:
        ImportError: without ``opentelemetry-proto``.
        ValueError: for bytes that are neither request.
    """
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    try:
        spans = ExportTraceServiceRequest.FromString(data)
        if spans.resource_spans:
            return dict(MessageToDict(spans))
        logs = ExportLogsServiceRequest.FromString(data)
        if logs.resource_logs:
            return dict(MessageToDict(logs))
    except DecodeError as exc:
        raise ValueError(f"it is not an OTLP protobuf export request: {exc}") from None
    raise ValueError("it is not an OTLP protobuf export request: it holds no spans nor logs")
