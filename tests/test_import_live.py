"""A live pydantic-ai run (tests/instrumented_app.py), recorded by its own instrumentation with
the real OTel SDK, imported: the SDK records the spans in memory, the test writes them as the
console exporter prints them (``span.to_json()``), and the importer reads that file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the OTel SDK comes with the dev extra")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from agentgauge.io.otel import read_otel
from agentgauge.model import StepKind, Trace
from instrumented_app import ANSWER, run_planner


def test_pydantic_ai_run_recorded_by_the_otel_sdk(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_planner(provider)
    spans = exporter.get_finished_spans()
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([json.loads(span.to_json()) for span in spans]))
    (trace,) = list(read_otel(path))
    assert isinstance(trace, Trace)
    assert [(s.kind.value, s.agent, s.recipient) for s in trace.steps] == [
        ("llm", "planner", None),
        ("tool_call", "planner", None),
        ("handoff", "planner", "researcher"),
        ("llm", "researcher", None),
        ("tool_call", "researcher", None),
        ("tool_call", "researcher", None),
        ("tool_result", "researcher", None),
        ("tool_result", "researcher", None),
        ("llm", "researcher", None),
        ("tool_result", "planner", None),
        ("llm", "planner", None),
    ]
    assert [(c.id, c.name, c.arguments) for c in trace.tool_calls] == [
        ("c1", "ask_researcher", {"topic": "tides"}),
        ("c2", "lookup", {"term": "tide"}),
        ("c3", "archive", {}),
    ]
    assert trace.steps[2].content == "Research tides"
    # the two tools run at once: their results are in the order they ended, which the run
    # does not fix
    assert {s.error: s.result for s in trace.steps[6:8]} == {
        None: "the moon pulls the sea",
        "the archive is offline": "the archive is offline",  # ModelRetry's message
    }
    assert trace.steps[9].result == ANSWER
    assert [t.name for t in trace.task.tools] == ["ask_researcher", "lookup", "archive"]
    # 1 message -> 100 tokens, 3 messages (request, calls, replies) -> 300; 4 calls of 10
    llm_usage = [(s.usage.input_tokens, s.usage.output_tokens) for s in trace.steps if s.usage]
    assert llm_usage == [(100, 10), (100, 10), (300, 10), (300, 10)]
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (800, 40)
    assert trace.agent == "planner"
    assert trace.task.input == "Why are there tides?"
    assert trace.output == ANSWER
    assert all(s.kind is not StepKind.error for s in trace.steps)
