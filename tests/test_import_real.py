"""The OpenTelemetry importer on spans recorded by the real instrumentation libraries.

The files in tests/fixtures/otel were written by ``tests/fixtures/make_otel_fixtures.py``: the
real ``openai`` SDK against a scripted chat-completions server on 127.0.0.1, the real
instrumentation packages and the real OTel SDK and OTLP encoder (``versions.json`` says which
versions). The server's script fixes what the model says and its token counts
(``40 + 10 * messages`` in, ``7 + 5 * tool calls`` out), so every expected value below follows
from the script.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.jsonl import ReadError, read_traces
from agentgauge.io.otel import read_otel
from agentgauge.model import StepKind, Trace

FIXTURES = Path(__file__).parent / "fixtures" / "otel"
QUESTION = "What's the weather in Paris and in Rome?"
FINAL = "Paris: 18°C and sunny. Rome: 24°C and clear."
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def _traces(name: str) -> list[Trace]:
    items = list(read_otel(FIXTURES / name))
    assert all(isinstance(t, Trace) for t in items), items
    return [t for t in items if isinstance(t, Trace)]


def _kinds(trace: Trace) -> list[tuple[str, str | None, str | None]]:
    return [(s.kind.value, s.agent, s.recipient) for s in trace.steps]


# The plain tool loop: system + user -> two get_weather calls; + assistant + 2 tool messages
# -> the answer. Usage: (40 + 10*2, 7 + 5*2) + (40 + 10*5, 7) = (150, 24).
LOOP_FILES = [
    "openinference_openai.jsonl",  # one trace per model call, no span around them
    "openai_v2.jsonl",  # conventions 1.30: content in log events, tool results keyed "id"
    "openai_v2_latest.jsonl",  # latest conventions: gen_ai.input/output.messages parts
    "openllmetry.jsonl",  # OpenLLMetry 0.62: parts and gen_ai.tool.definitions
    "openllmetry_legacy.jsonl",  # OpenLLMetry 0.40: gen_ai.prompt.N, llm.request.functions.N
    "layered.jsonl",  # all three OpenAI instrumentations at once under an HTTP server span
]


@pytest.mark.parametrize("name", LOOP_FILES)
def test_tool_loop_is_one_run_with_results_and_usage_counted_once(name: str) -> None:
    (trace,) = _traces(name)
    assert [s.kind for s in trace.steps] == [
        StepKind.llm,
        StepKind.tool_call,
        StepKind.tool_call,
        StepKind.tool_result,
        StepKind.tool_result,
        StepKind.llm,
    ]
    calls = [(c.id, c.name, c.arguments) for c in trace.tool_calls]
    assert calls == [
        ("call_paris", "get_weather", {"city": "Paris"}),
        ("call_rome", "get_weather", {"city": "Rome"}),
    ]
    results = [(s.parent_id, s.result) for s in trace.steps if s.kind is StepKind.tool_result]
    call_steps = [s.id for s in trace.steps if s.kind is StepKind.tool_call]
    assert results == [
        (call_steps[0], {"temp": 18, "sky": "sunny"}),
        (call_steps[1], {"temp": 24, "sky": "clear"}),
    ]
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in trace.steps if s.usage] == [
        (60, 17),
        (90, 7),
    ]
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (150, 24)
    assert trace.task.input == QUESTION
    assert trace.output == FINAL
    assert trace.agent is None  # no agent span: no placeholder name
    assert {s.agent for s in trace.steps} == {None}
    assert trace.params["temperature"] == 0.2
    # the official instrumentation does not record the tools offered; the others do
    expected_tools = [] if name.startswith("openai_v2") else ["get_weather"]
    assert [t.name for t in trace.task.tools] == expected_tools
    if expected_tools:
        assert trace.task.tools[0].parameters == WEATHER_SCHEMA
        assert trace.task.tools[0].description == "The current weather of a city."


def test_bare_model_calls_are_joined_by_the_tool_calls_they_answer() -> None:
    (trace,) = _traces("openinference_openai.jsonl")
    assert len(trace.metadata["trace_ids"]) == 2  # type: ignore[arg-type]
    assert trace.metadata["span_count"] == 2


def test_log_events_exported_after_their_spans_are_read() -> None:
    (trace,) = _traces("openai_v2.jsonl")
    # 2 system + 2 user + 1 assistant + 2 tool messages + 2 choices
    assert trace.metadata["log_records"] == 9
    assert "unattached_log_records" not in trace.metadata


def test_layered_instrumentation_is_merged_into_one_step_per_model_call() -> None:
    (trace,) = _traces("layered.jsonl")
    meta = trace.metadata
    assert meta["span_count"] == 7  # 3 records of each of 2 calls + the HTTP server span
    assert meta["merged_spans"] == 4
    assert meta["scopes"] == [
        "openinference.instrumentation.openai",
        "opentelemetry.instrumentation.openai.v1",
        "opentelemetry.instrumentation.openai_v2",
        "weather.app",
    ]
    assert meta["unmapped_spans"] == {"POST /ask": 1}  # an HTTP server span is no agent
    assert meta["models"] == {"gpt-4o-mini": 2}
    # the merged step keeps the outermost record (the official instrumentation's span)
    llm_spans = [s.id for s in trace.steps if s.kind is StepKind.llm]
    lines = [json.loads(line) for line in (FIXTURES / "layered.jsonl").read_text().splitlines()]
    outer = {
        span["spanId"]
        for line in lines
        for rs in line.get("resourceSpans", [])
        for ss in rs["scopeSpans"]
        if ss["scope"]["name"] == "opentelemetry.instrumentation.openai_v2"
        for span in ss["spans"]
    }
    assert set(llm_spans) == outer


def test_openai_agents_with_openinference() -> None:
    (trace,) = _traces("openai_agents.jsonl")
    assert _kinds(trace) == [
        ("llm", "Triage agent", None),
        # the handoff span, not a tool called "to Weather agent"; transfer_to_weather_agent
        # is no tool call either
        ("handoff", "Triage agent", "Weather agent"),
        ("llm", "Weather agent", None),
        ("tool_call", "Weather agent", None),
        ("tool_call", "Weather agent", None),
        ("tool_result", "Weather agent", None),
        ("tool_result", "Weather agent", None),
        ("llm", "Weather agent", None),
    ]
    assert trace.agent == "Triage agent"  # not the unnamed "Agent workflow" around the agents
    assert trace.steps[1].message_type is not None
    assert trace.steps[1].message_type.value == "handoff"
    # the tool spans carry no call id: they take the ids the model gave the calls
    calls = [(c.id, c.name, c.arguments) for c in trace.tool_calls]
    assert calls == [
        ("call_paris", "get_weather", {"city": "Paris"}),
        ("call_forecast", "get_forecast", {"city": "Rome", "days": 2}),
    ]
    paris, forecast = trace.steps[5], trace.steps[6]
    assert (paris.result, paris.error) == ({"temp": 18, "sky": "sunny"}, None)
    assert forecast.result == "An error occurred while running the tool. Please try again."
    assert forecast.error is not None and "get_forecast" in forecast.error
    # tools from the tool spans' names, descriptions and JSON schemas
    tools = {t.name: t for t in trace.task.tools}
    assert list(tools) == ["get_weather", "get_forecast"]
    assert tools["get_forecast"].description == "The forecast of a city for the next days."
    assert tools["get_forecast"].parameters["required"] == ["city", "days"]
    # (40 + 10*2, 7 + 5) + (40 + 10*4, 7 + 10) + (40 + 10*7, 7)
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (250, 36)
    assert trace.output == FINAL
    assert trace.task.input == QUESTION
    assert trace.metadata["error_spans"] == 1


@pytest.mark.parametrize("name", ["pydantic_ai.jsonl", "pydantic_ai_layered.jsonl"])
def test_pydantic_ai_delegation_and_a_tool_raising_model_retry(name: str) -> None:
    (trace,) = _traces(name)
    assert _kinds(trace) == [
        ("llm", "triage_agent", None),
        ("tool_call", "triage_agent", None),
        # the agent run inside the triage agent's tool: a handoff to it
        ("handoff", "triage_agent", "weather_agent"),
        ("llm", "weather_agent", None),
        ("tool_call", "weather_agent", None),
        ("tool_call", "weather_agent", None),
        ("tool_result", "weather_agent", None),
        ("tool_result", "weather_agent", None),
        ("llm", "weather_agent", None),
        ("tool_result", "triage_agent", None),
        ("llm", "triage_agent", None),
    ]
    assert trace.steps[2].content == "Weather in Paris and Rome?"
    calls = [(c.id, c.name, c.arguments) for c in trace.tool_calls]
    assert calls == [
        ("call_delegate", "ask_weather_agent", {"question": "Weather in Paris and Rome?"}),
        ("call_paris", "get_weather", {"city": "Paris"}),
        ("call_forecast", "get_forecast", {"city": "Rome", "days": 2}),
    ]
    retry = trace.steps[7]
    message = "the forecast service is unavailable, answer without it"
    assert (retry.error, retry.result) == (message, message)  # ModelRetry's own message
    assert trace.steps[9].result == FINAL
    tools = [t.name for t in trace.task.tools]
    assert tools == ["ask_weather_agent", "get_weather", "get_forecast"]
    # instructions go as a system message: triage [system, user] (60, 7 + 5), weather
    # [system, user] (60, 7 + 10), then + assistant + 2 tool replies (90, 7), triage + assistant
    # + tool reply (80, 7)
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (290, 43)
    assert trace.agent == "triage_agent"
    assert trace.output == FINAL


def test_pydantic_ai_under_other_instrumentations_and_a_controller() -> None:
    (trace,) = _traces("pydantic_ai_layered.jsonl")
    meta = trace.metadata
    # each of the 4 model calls recorded by pydantic-ai, OpenLLMetry and OpenInference
    assert meta["merged_spans"] == 8
    assert meta["models"] == {"gpt-4o-mini": 4}
    # the controller's span around the agent names it another way: no agent, no handoff
    assert meta["unmapped_spans"] == {"invoke_agent triage-agent": 1}
    assert meta["scopes"] == [
        "controller",
        "openinference.instrumentation.openai",
        "opentelemetry.instrumentation.openai.v1",
        "pydantic-ai",
    ]


def test_openai_agents_sdk_own_trace_export(tmp_path: Path) -> None:
    """The SDK's tracing processor export of the same run: the same steps, ids and usage."""
    (spans,) = _traces("openai_agents.jsonl")
    (own,) = _traces("openai_agents_sdk.jsonl")
    assert _kinds(own) == _kinds(spans)
    assert [(c.id, c.name, c.arguments) for c in own.tool_calls] == [
        (c.id, c.name, c.arguments) for c in spans.tool_calls
    ]
    assert [s.result for s in own.steps] == [s.result for s in spans.steps]
    assert own.usage == spans.usage
    assert (own.agent, own.output, own.task.input) == (spans.agent, spans.output, spans.task.input)
    forecast = own.steps[6].error
    assert forecast is not None and forecast.startswith("Error running tool (non-fatal)")
    assert own.metadata["source_format"] == "openai-agents"
    assert own.metadata["unmapped_spans"] == {"task": 1, "turn": 3}
    # the backend exporter's batch: {"data": [items]}
    items = [json.loads(line) for line in (FIXTURES / "openai_agents_sdk.jsonl").open()]
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({"data": items}))
    (batched,) = list(read_otel(batch))
    assert isinstance(batched, Trace)
    assert _kinds(batched) == _kinds(own) and batched.usage == own.usage


def _check_traced_loop(trace: Trace) -> None:
    """The tool loop without a system message, traced by LangSmith or Langfuse: the tool
    records carry no call id and take the ones the model gave."""
    assert [s.kind for s in trace.steps] == [
        StepKind.llm,
        StepKind.tool_call,
        StepKind.tool_result,
        StepKind.tool_call,
        StepKind.tool_result,
        StepKind.llm,
    ]
    assert [(c.id, c.name, c.arguments) for c in trace.tool_calls] == [
        ("call_paris", "get_weather", {"city": "Paris"}),
        ("call_rome", "get_weather", {"city": "Rome"}),
    ]
    assert [s.result for s in trace.steps if s.kind is StepKind.tool_result] == [
        {"temp": 18, "sky": "sunny"},
        {"temp": 24, "sky": "clear"},
    ]
    # no system message here: [user] (50, 7 + 10), then [user, assistant, 2 tools] (80, 7)
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (130, 24)
    assert [t.name for t in trace.task.tools] == ["get_weather"]
    assert trace.task.tools[0].parameters == WEATHER_SCHEMA
    assert (trace.task.input, trace.output, trace.agent) == (QUESTION, FINAL, None)


def test_langsmith_run_tree_and_run_list(tmp_path: Path) -> None:
    (trace,) = _traces("langsmith.json")
    _check_traced_loop(trace)
    assert trace.metadata["source_format"] == "langsmith"
    assert trace.metadata["unmapped_spans"] == {"weather_request": 1}
    # the same runs as a list linked by parent_run_id (Client.list_runs)
    tree = json.loads((FIXTURES / "langsmith.json").read_text())
    runs, todo = [], [tree]
    while todo:
        run = todo.pop()
        todo += run.pop("child_runs")
        runs.append(run)
    flat = tmp_path / "runs.json"
    flat.write_text(json.dumps(runs))
    (again,) = list(read_otel(flat))
    assert isinstance(again, Trace)
    assert again.steps == trace.steps and again.usage == trace.usage


def test_langfuse_sdk_spans() -> None:
    """The Langfuse SDK's own spans (langfuse.observation.* attributes), as its OTLP exporter
    sends them."""
    (trace,) = _traces("langfuse.jsonl")
    _check_traced_loop(trace)
    assert trace.metadata["scopes"] == ["langfuse-sdk"]
    assert trace.metadata["unmapped_spans"] == {"weather_request": 1}


LANGFUSE_TRACE_ID = "1248faa676e6baeba8121a5686876ce6"


def _langfuse_export() -> dict[str, Any]:
    """The same loop as Langfuse's public API returns its trace: the trace (the app root's
    input and output) and its observations: the SPAN ``weather_request``, two GENERATIONs, two
    TOOLs."""
    doc: dict[str, Any] = json.loads((FIXTURES / "langfuse_export.json").read_text())
    return doc


def _read(path: Path, span_format: str = "auto") -> tuple[list[Trace], list[ReadError]]:
    items = list(read_otel(path, span_format=span_format))  # type: ignore[arg-type]
    traces = [i for i in items if isinstance(i, Trace)]
    return traces, [i for i in items if isinstance(i, ReadError)]


def test_langfuse_trace_export() -> None:
    (trace,) = _traces("langfuse_export.json")
    _check_traced_loop(trace)
    assert trace.id == LANGFUSE_TRACE_ID and trace.task.id == LANGFUSE_TRACE_ID
    assert trace.metadata["source_format"] == "langfuse"
    assert trace.metadata["models"] == {"gpt-4o-mini-2024-07-18": 2}
    # the trace itself and its SPAN observation make no step
    assert trace.metadata["unmapped_spans"] == {"weather_request": 2}
    (sdk,) = _traces("langfuse.jsonl")
    assert [(s.kind, s.tool_call, s.result, s.usage) for s in trace.steps] == [
        (s.kind, s.tool_call, s.result, s.usage) for s in sdk.steps
    ]


def _shapes() -> dict[str, list[Any]]:
    """Each shape's documents, one per line of the file."""
    trace = _langfuse_export()
    observations = trace["observations"]
    listed = {**trace, "observations": [o["id"] for o in observations]}
    return {
        "list of traces": [[trace]],
        "page of traces": [{"data": [trace], "meta": {"page": 1, "totalItems": 1}}],
        "traces page with the observations": [{"data": [listed, *observations]}],
        "observations alone": [{"data": observations}],
        "traces page, then observations page": [{"data": [listed]}, {"data": observations}],
        # the trace page's "Download trace as JSON" and the server-side trace download
        "trace page download with its observations": [
            {"trace": listed, "observations": observations}
        ],
        "server-side download of the observations": [{"observations": observations, "scores": []}],
    }


@pytest.mark.parametrize("shape", list(_shapes()))
def test_langfuse_export_shapes_give_the_same_run(shape: str, tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in _shapes()[shape]))
    (trace,), errors = _read(path)
    assert errors == []
    _check_traced_loop(trace)
    assert trace.id == LANGFUSE_TRACE_ID
    # without the trace object in their document only the SPAN observation is left over
    with_trace = ("traces", "observations", "with its observations")
    unmapped = 2 if shape.endswith(with_trace) and not shape.startswith("server") else 1
    assert trace.metadata["unmapped_spans"] == {"weather_request": unmapped}


def test_langfuse_agents_handoffs_and_errors(tmp_path: Path) -> None:
    """AGENT observations name the agents of the steps below them (a nested one is a handoff);
    a TOOL or GENERATION at level ERROR is a failed step with its status message."""
    trace = _langfuse_export()
    root, first, paris, rome, second = trace["observations"]
    root.update(type="AGENT", name="triage")
    weather = {
        "id": "a9e0c0de00000001",
        "traceId": trace["id"],
        "parentObservationId": root["id"],
        "type": "AGENT",
        "name": "weather",
        "startTime": second["startTime"],
        "endTime": second["endTime"],
    }
    second["parentObservationId"] = weather["id"]
    del rome["output"]
    rome.update(level="ERROR", statusMessage="no weather station in Rome")
    second.update(level="ERROR", statusMessage="rate limited")
    trace["observations"] = [root, first, paris, rome, weather, second]
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(trace))
    (run,), errors = _read(path, "langfuse")
    assert errors == []
    assert [(s.kind.value, s.agent, s.recipient, s.error) for s in run.steps] == [
        ("llm", "triage", None, None),
        ("tool_call", "triage", None, None),
        ("tool_result", "triage", None, None),
        ("tool_call", "triage", None, None),
        ("tool_result", "triage", None, "no weather station in Rome"),
        ("handoff", "triage", "weather", None),
        ("llm", "weather", None, "rate limited"),
    ]
    assert run.agent == "triage"
    assert [s.result for s in run.steps if s.kind is StepKind.tool_result] == [
        {"temp": 18, "sky": "sunny"},
        None,
    ]


def test_langfuse_tool_arguments_as_given(tmp_path: Path) -> None:
    """A TOOL observation whose input is the arguments themselves (not the SDK decorator's
    ``args`` / ``kwargs``) keeps them as they are."""
    trace = _langfuse_export()
    trace["observations"][2]["input"] = {"city": "Paris", "unit": "celsius"}
    path = tmp_path / "tool.json"
    path.write_text(json.dumps(trace))
    (run,), _ = _read(path)
    assert run.tool_calls[0].arguments == {"city": "Paris", "unit": "celsius"}
    assert run.tool_calls[0].id == "call_paris"


def test_langfuse_bad_input_is_reported_with_position_and_the_rest_imported(
    tmp_path: Path,
) -> None:
    """Line 1: an observation without its id; line 2: a page whose second observation has no
    trace id and whose last item is no observation; line 3: two observations naming each
    other as parent (a cycle, in another trace); line 4: not JSON."""
    first = _langfuse_export()
    del first["observations"][3]["id"]  # the Rome tool call: its call and result are lost
    cycled = _langfuse_export()
    cycled["id"] = "0" * 31 + "1"
    observations = cycled["observations"]
    cycled["observations"] = [o["id"] for o in observations]
    for obs in observations:
        obs["traceId"] = cycled["id"]
    observations[1]["parentObservationId"] = observations[2]["id"]
    observations[2]["parentObservationId"] = observations[1]["id"]
    loose = _langfuse_export()["observations"]
    for obs in loose:
        obs["traceId"] = "0" * 31 + "2"
    del loose[1]["traceId"]
    lines = [
        json.dumps(first),
        json.dumps({"data": [*loose, {"comment": "x"}]}),
        json.dumps({"data": [cycled, *observations]}),
        "{not json",
    ]
    path = tmp_path / "broken.json"
    path.write_text("\n".join(lines) + "\n")
    traces, errors = _read(path)
    assert [(e.source, e.line, e.field) for e in errors] == [
        (str(path), 1, "observations[3].id"),
        (str(path), 2, "data[1].traceId"),
        (str(path), 3, "parentSpanId"),
        (str(path), 4, None),
    ]
    assert "missing: every observation needs its id" in errors[0].message
    assert errors[1].message.endswith("(and 1 more)")
    assert "form a cycle" in errors[2].message
    assert "invalid JSON" in errors[3].message
    by_id = {t.id: t for t in traces}
    assert sorted(by_id) == ["0" * 31 + "1", "0" * 31 + "2", LANGFUSE_TRACE_ID]
    assert [c.id for c in by_id[LANGFUSE_TRACE_ID].tool_calls] == ["call_paris"]
    # the generation without a trace id is left out, and with it the ids of the calls it asked
    # for; the TOOL observations remain
    assert [(c.id, c.arguments) for c in by_id["0" * 31 + "2"].tool_calls] == [
        (None, {"city": "Paris"}),
        (None, {"city": "Rome"}),
    ]
    assert [s.kind for s in by_id["0" * 31 + "2"].steps].count(StepKind.llm) == 1


@pytest.mark.parametrize(
    "name",
    ["langsmith.json", "openai_agents_sdk.jsonl", "langfuse.jsonl", "layered.jaeger.json"],
)
def test_other_formats_are_not_taken_for_langfuse(name: str) -> None:
    (trace, *_) = _traces(name)
    assert trace.metadata["source_format"] != "langfuse"
    (error,) = [i for i in read_otel(FIXTURES / name, span_format="langfuse")][:1]
    assert isinstance(error, ReadError)
    assert error.field == "observations" and "not a Langfuse export" in error.message


def test_cli_import_langfuse_export_prints_its_report(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    path = str(FIXTURES / "langfuse_export.json")
    result = CliRunner().invoke(app, ["import", path, "--format", "langfuse", "--out", str(out)])
    assert result.exit_code == 0, result.output
    # format, files, traces, steps, tool calls, merged, skipped
    row = next(line for line in result.output.splitlines() if "langfuse" in line)
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == [
        "langfuse", "1", "1", "6", "2", "0", "2"
    ]  # fmt: skip
    assert "weather_request (2)" in result.output
    (trace,) = list(read_traces(out))
    assert isinstance(trace, Trace)
    _check_traced_loop(trace)
