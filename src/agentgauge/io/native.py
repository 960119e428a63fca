"""The native format as an importer: agentgauge JSONL, one trace per line, read by
:mod:`agentgauge.io.jsonl` and registered here, so that the reader does not depend on the
registry that lists it."""

from __future__ import annotations

from agentgauge.io.importers import importer
from agentgauge.io.jsonl import iter_raw_lines, parse_line, read_traces

__all__ = ["read_traces"]

importer(
    "native",
    description="agentgauge JSONL, one trace per line (.jsonl, .jsonl.gz)",
    lines=iter_raw_lines,
    parse=parse_line,
    no_trace_hint=(
        "no line of the input was a trace. The native format is JSONL, one trace per line; "
        "an OpenTelemetry export (OTLP/JSON) is read with --format otel."
    ),
)(read_traces)
