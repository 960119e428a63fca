"""A live pydantic-ai run, recorded by its own instrumentation with the real OTel SDK, imported.

pydantic-ai's function model answers from a script (no network); the SDK records the spans in
memory and writes them as its console exporter prints them (``span.to_json()``), and the
importer reads that file.
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
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

from agentgauge.io.otel import read_otel
from agentgauge.model import StepKind, Trace

ANSWER = "Tides follow the moon."


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The script: the first request of a run calls its agent's tools, the next answers.
    Usage is 100 input tokens per message so far and 10 output tokens."""
    usage = RequestUsage(input_tokens=100 * len(messages), output_tokens=10)
    tools = [t.name for t in info.function_tools]
    if len(messages) > 1:
        return ModelResponse(parts=[TextPart(ANSWER)], usage=usage)
    if "ask_researcher" in tools:
        calls = [ToolCallPart("ask_researcher", {"topic": "tides"}, tool_call_id="c1")]
    else:
        calls = [
            ToolCallPart("lookup", {"term": "tide"}, tool_call_id="c2"),
            ToolCallPart("archive", {}, tool_call_id="c3"),
        ]
    return ModelResponse(parts=calls, usage=usage)


def _record_run() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def instrumented() -> list[Instrumentation]:
        return [Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))]

    researcher = Agent(FunctionModel(_respond), name="researcher", capabilities=instrumented())
    planner = Agent(FunctionModel(_respond), name="planner", capabilities=instrumented())

    @researcher.tool_plain
    def lookup(term: str) -> str:
        """Look a term up."""
        return "the moon pulls the sea"

    @researcher.tool_plain
    def archive() -> str:
        """Search the archive."""
        raise ModelRetry("the archive is offline")

    @planner.tool
    async def ask_researcher(ctx: RunContext[None], topic: str) -> str:
        """Delegate to the researcher."""
        return (await researcher.run(f"Research {topic}", usage=ctx.usage)).output

    assert planner.run_sync("Why are there tides?").output == ANSWER
    return exporter


def test_pydantic_ai_run_recorded_by_the_otel_sdk(tmp_path: Path) -> None:
    spans = _record_run().get_finished_spans()
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
    assert trace.steps[6].result == "the moon pulls the sea"
    assert trace.steps[7].error == "the archive is offline"  # ModelRetry's message
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
