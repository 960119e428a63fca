"""Import agent traces recorded as spans (OpenTelemetry and the products that export their
own span trees) as agentgauge Traces, in three stages:

1. :mod:`~agentgauge.io.otel.wire`: every wire format (OTLP/JSON, OTLP protobuf, SDK span
   lists, Jaeger, Tempo, OTLP log records, the OpenAI Agents SDK's, LangSmith's and
   Langfuse's exports) is read into :class:`~agentgauge.io.otel.wire.span.Span` objects;
2. :mod:`~agentgauge.io.otel.conventions`: each instrumentation convention (the GenAI
   semantic conventions old and latest, OpenInference, OpenLLMetry, Langfuse, Google ADK,
   ...) reads what a span means into one
   :class:`~agentgauge.io.otel.observation.Observation`: a model call, a tool execution, an
   agent run, a handoff, with its model, messages, tool call, result, error and usage;
3. :mod:`~agentgauge.io.otel.assemble`: the observations of one run
   (:mod:`~agentgauge.io.otel.runs`) become one Trace, the records of one call merged
   (:mod:`~agentgauge.io.otel.merge`).

:func:`read_otel` streams a file's runs; :class:`SpanStream` takes documents as they come
(the live receiver). Bad input becomes a :class:`~agentgauge.io.jsonl.ReadError` naming the
file, line and field, and reading goes on.
"""

from __future__ import annotations

from agentgauge.io.otel.stream import DEFAULT_TASK_ID_ATTRIBUTE, GroupBy, SpanStream, read_otel
from agentgauge.io.otel.wire.formats import SPAN_FORMATS, SpanFormat
from agentgauge.io.otel.wire.otlp import MAX_ATTRIBUTE_CHARS

__all__ = [
    "DEFAULT_TASK_ID_ATTRIBUTE",
    "MAX_ATTRIBUTE_CHARS",
    "SPAN_FORMATS",
    "GroupBy",
    "SpanFormat",
    "SpanStream",
    "read_otel",
]
