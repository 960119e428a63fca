"""The OpenTelemetry GenAI / OpenInference importer on hand-written OTLP/JSON span files.

Fixtures (tests/data/otel) are shaped as the tools write them: the Collector's file exporter
(one ExportTraceServiceRequest per line, children exported before their root), a pretty-printed
OTLP document, an SDK console-exporter list of flattened spans with ISO times, and lines that
are broken on purpose. Expected values are read off the fixtures by hand.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.importers import IMPORTERS, get_importer
from agentgauge.io.jsonl import ReadError, read_traces
from agentgauge.io.otel import read_otel
from agentgauge.model import StepKind, Trace

DATA = Path(__file__).parent / "data" / "otel"
runner = CliRunner()


def _only_trace(path: Path, **options: str) -> Trace:
    items = list(read_otel(path, **options))  # type: ignore[arg-type]
    assert len(items) == 1, items
    assert isinstance(items[0], Trace), items[0]
    return items[0]


def _at(seconds: float) -> datetime:
    # the fixtures' clock starts at 1_700_000_000 s after the epoch
    return datetime.fromtimestamp(1_700_000_000, UTC) + (
        datetime.fromtimestamp(seconds, UTC) - datetime.fromtimestamp(0, UTC)
    )


def test_single_agent_with_two_tool_calls() -> None:
    trace = _only_trace(DATA / "single_agent.json")
    assert trace.id == "5b8aa5a2d2c872e8321cf37308d69df2"
    assert trace.task.id == "conv-42"
    assert trace.task.input == "What's the weather in Paris and in Rome?"
    assert [t.name for t in trace.task.tools] == ["get_weather"]
    assert trace.task.tools[0].parameters["required"] == ["city"]
    assert trace.agent == "WeatherAgent"
    assert [(s.index, s.kind, s.id, s.parent_id) for s in trace.steps] == [
        (0, StepKind.llm, "c100000000000001", "a100000000000001"),
        (1, StepKind.tool_call, "e100000000000001", "a100000000000001"),
        (2, StepKind.tool_result, "e100000000000001:result", "e100000000000001"),
        (3, StepKind.tool_call, "e200000000000002", "a100000000000001"),
        (4, StepKind.tool_result, "e200000000000002:result", "e200000000000002"),
        (5, StepKind.llm, "c200000000000002", "a100000000000001"),
    ]
    assert {s.agent for s in trace.steps} == {"WeatherAgent"}
    calls = [(c.id, c.name, c.arguments) for c in trace.tool_calls]
    assert calls == [
        ("call_1", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("call_2", "get_weather", {"city": "Rome", "unit": "celsius"}),
    ]
    assert [trace.steps[2].result, trace.steps[4].result] == [
        {"temp": 18, "sky": "sunny"},
        {"temp": 24, "sky": "clear"},
    ]
    assert [s.duration_s for s in trace.steps] == [0.9, 0.5, None, 0.8, None, 1.3]
    assert trace.steps[2].started_at == _at(1.6)  # a result arrives when its tool span ends
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in trace.steps if s.usage] == [
        (120, 30),
        (200, 25),
    ]
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (320, 55)
    assert trace.output == "Paris: 18°C and sunny. Rome: 24°C and clear."
    assert (trace.started_at, trace.ended_at, trace.duration_s) == (_at(0), _at(4), 4.0)
    assert trace.params == {"model": "gpt-4o", "temperature": 0.2}
    meta = trace.metadata
    assert meta["unmapped_spans"] == {"GET": 1}  # the HTTP client span under the first tool
    assert meta["span_count"] == 6
    assert meta["service_name"] == "weather-bot"
    assert meta["models"] == {"gpt-4o": 2}
    assert meta["tool_calls_in_messages"] == 2


def test_multi_agent_handoff_and_tool_error() -> None:
    trace = _only_trace(DATA / "handoff.json")  # one pretty-printed OTLP document
    assert trace.agent == "Support"  # the invoke_workflow root
    assert trace.task.id == "ticket-7"
    assert trace.task.input == "I was charged twice for order 1234"  # OpenAI-style messages
    got = [(s.kind.value, s.agent, s.recipient) for s in trace.steps]
    assert got == [
        ("llm", "Triage", None),
        # transfer_to_billing_agent: a handoff only (no tool call), and not a second one when
        # Billing agent starts
        ("handoff", "Triage", "Billing agent"),
        ("llm", "Billing agent", None),
        # a nested invoke_agent: the calling agent hands off to it
        ("handoff", "Billing agent", "Fraud checker"),
        ("llm", "Fraud checker", None),
        ("tool_call", "Billing agent", None),
        ("tool_result", "Billing agent", None),
        ("tool_call", "Billing agent", None),
        ("tool_result", "Billing agent", None),
        ("llm", "Billing agent", None),
    ]
    assert trace.steps[1].message_type is not None
    assert trace.steps[1].message_type.value == "handoff"
    assert trace.steps[3].content == "Check order 1234 for fraud"
    assert trace.steps[3].id == "b000000000000007"  # the nested agent's span
    failed = trace.steps[6]
    assert (failed.error, failed.result) == ("payment gateway timeout", None)
    assert trace.steps[8].result == {"status": "refunded"}
    assert [c.arguments for c in trace.tool_calls] == [
        {"order_id": "1234", "amount": 42.5},
        {"order_id": "1234", "amount": 42.5},
    ]
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (
        80 + 150 + 30 + 300,
        12 + 20 + 5 + 40,
    )
    assert trace.output == "I've refunded the duplicate charge of $42.50 for order 1234."
    assert trace.duration_s == 5.0
    assert trace.metadata["error_spans"] == 1
    assert "unmapped_spans" not in trace.metadata


def test_legacy_attributes_events_and_console_exporter_list() -> None:
    trace = _only_trace(DATA / "legacy_flat.json")
    assert trace.id == "4bf92f3577b34da6a3ce929d0e0e4736"  # "0x" prefix dropped
    assert trace.task.id == trace.id  # no conversation id: the trace id
    # gen_ai.user.message span event
    assert trace.task.input == "Summarise the causes of the 1929 crash"
    assert [s.kind.value for s in trace.steps] == ["llm", "tool_call", "llm"]
    assert [s.duration_s for s in trace.steps] == [1.0, 2.25, 1.5]  # from ISO 8601 times
    assert trace.steps[1].tool_call is not None
    # the tool span records no arguments: they come from the model's own call of the tool
    # (the gen_ai.choice event), matched by name
    assert (trace.steps[1].tool_call.name, trace.steps[1].tool_call.arguments) == (
        "web_search",
        {"q": "1929 crash causes"},
    )
    # gen_ai.prompt_tokens / completion_tokens
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in trace.steps if s.usage] == [
        (50, 10),
        (400, 60),
    ]
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (450, 70)
    # gen_ai.completion attribute; the first call's gen_ai.choice event only asks for a tool
    assert trace.steps[0].content is None
    assert trace.output == "Speculation on margin and bank failures caused the crash."
    assert trace.duration_s == 6.0
    assert trace.agent is None
    assert trace.params == {"model": "gpt-3.5-turbo", "max_tokens": 256}
    assert trace.metadata["unmapped_spans"] == {"research_pipeline": 1}
    assert trace.metadata["tool_calls_in_messages"] == 1  # from the gen_ai.choice event body


def test_openinference_dialect() -> None:
    trace = _only_trace(DATA / "openinference.json")
    assert trace.task.id == "sess-9"  # session.id
    assert trace.agent == "RestaurantAgent"
    assert trace.task.input == "Book a table for 2 at Luigi's at 7pm"
    assert [(t.name, t.description) for t in trace.task.tools] == [
        ("book_table", "Reserve a table")
    ]
    assert [s.kind.value for s in trace.steps] == ["llm", "tool_call", "tool_result", "llm"]
    # tool.parameters holds the tool's JSON Schema here: the call's values come from input.value
    assert trace.tool_calls[0].arguments == {
        "restaurant": "Luigi's",
        "party_size": 2,
        "time": "19:00",
    }
    assert trace.steps[2].result == {"confirmation": "LUI-2291"}
    assert trace.steps[3].content == (
        "Your table for 2 at Luigi's is booked for 7pm (confirmation LUI-2291)."
    )
    assert trace.output == "Your table for 2 at Luigi's is booked for 7pm."  # the root's output
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (210 + 260, 35 + 18)
    assert trace.params == {"temperature": 0, "max_tokens": 1024, "model": "claude-3-5-sonnet"}
    assert [s.duration_s for s in trace.steps] == [1.0, 0.6, None, 1.0]


def test_otlp_log_events_join_their_spans() -> None:
    items = list(read_otel(DATA / "with_logs.json"))
    trace, orphans = items
    assert isinstance(trace, Trace) and isinstance(orphans, ReadError)
    # gen_ai.client.inference.operation.details (line 1) fills the first call's messages;
    # a deprecated gen_ai.choice log record (event.name attribute, kvlist body) the second's
    assert trace.task.input == "Translate 'bonjour' to English"
    assert [(s.kind.value, s.content) for s in trace.steps] == [
        ("llm", "Hello."),
        ("llm", "Hello!"),
    ]
    assert trace.output == "Hello!"
    # the application log has no GenAI event name; the stray record names an absent span
    assert trace.metadata["log_records"] == 3
    assert trace.metadata["unattached_log_records"] == 1
    assert (orphans.line, orphans.field) == (3, "traceId")
    assert "dddddddddddddddddddddddddddddddd" in orphans.message


def test_log_files_read_beside_the_span_file(tmp_path: Path) -> None:
    logs_line, spans_line, _ = (DATA / "with_logs.json").read_text().splitlines()
    (tmp_path / "logs.json").write_text(logs_line + "\n")
    (tmp_path / "spans.json").write_text(spans_line + "\n")
    (trace,) = read_otel(tmp_path / "spans.json", log_files=[tmp_path / "logs.json"])
    together = next(t for t in read_otel(DATA / "with_logs.json") if isinstance(t, Trace))
    assert trace == together


def test_google_adk_spans(tmp_path: Path) -> None:
    trace = _only_trace(DATA / "adk.json")
    assert (trace.agent, trace.task.id) == ("weather_agent", "s-oslo")
    # gcp.vertex.agent.llm_request / llm_response (Gemini contents), tool_call_args / response
    assert trace.task.input == "How cold is it in Oslo?"
    assert [s.kind.value for s in trace.steps] == ["llm", "tool_call", "tool_result", "llm"]
    assert trace.tool_calls[0].model_dump() == {
        "id": "adk-1",
        "name": "get_weather",
        "arguments": {"city": "Oslo"},
    }
    assert trace.steps[2].result == {"temperature": -3}
    assert trace.output == "It is -3°C in Oslo."
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (110, 15)
    assert trace.duration_s == 2.2
    assert trace.metadata["unmapped_spans"] == {"invocation": 1}
    assert trace.metadata["tool_calls_in_messages"] == 1  # the function_call part
    # without the tool span, the function_call / function_response parts are the trajectory
    first, second = (json.loads(line) for line in (DATA / "adk.json").read_text().splitlines())
    spans = first["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[:] = [s for s in spans if not s["name"].startswith("execute_tool")]
    path = tmp_path / "adk_llm_only.json"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    llm_only = _only_trace(path)
    assert [(s.kind.value, s.id) for s in llm_only.steps] == [
        ("llm", "a000000000000003"),
        ("tool_call", "a000000000000003:call0"),
        ("tool_result", "a000000000000003:call0:result"),
        ("llm", "a000000000000005"),
    ]
    assert llm_only.tool_calls == trace.tool_calls
    assert llm_only.steps[2].result == {"temperature": -3}


def test_bad_lines_and_spans_are_reported_and_reading_goes_on() -> None:
    items = list(read_otel(DATA / "malformed.json"))
    source = str(DATA / "malformed.json")
    kinds = [type(i).__name__ for i in items]
    # each trace comes out as soon as the line holding its root has been read
    assert kinds == ["ReadError", "ReadError", "Trace", "Trace", "ReadError"]
    errors = [i for i in items if isinstance(i, ReadError)]
    assert [(e.source, e.line, e.field) for e in errors] == [
        (source, 2, None),
        (source, 3, "resourceSpans[0].scopeSpans[0].spans[0].spanId"),
        (source, 6, "traceId"),
    ]
    assert errors[0].message.startswith("invalid JSON")
    assert "span id" in errors[1].message
    assert "1000000000000003" in errors[2].message  # a span that came after its root
    x, y = (i for i in items if isinstance(i, Trace))
    assert (x.id, x.agent, [s.kind.value for s in x.steps]) == (
        "11111111111111111111111111111111",
        "X",
        ["llm"],  # the child from line 1 joined its root from line 3
    )
    assert (y.agent, y.steps) == ("Y", [])


def _otlp_line(spans: list[dict[str, object]]) -> str:
    return json.dumps(
        {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    )


def _span(
    trace_id: str,
    span_id: str,
    name: str,
    seconds: tuple[int, int],
    attributes: dict[str, str | int],
    parent: str | None = None,
) -> dict[str, object]:
    """An OTLP/JSON span; ``seconds`` = (start, end) after the fixtures' clock start."""
    base = 1_700_000_000_000_000_000

    def value(v: str | int) -> dict[str, str]:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}

    return {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent or "",
        "name": name,
        "startTimeUnixNano": str(base + seconds[0] * 10**9),
        "endTimeUnixNano": str(base + seconds[1] * 10**9),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }


def _turn(trace_id: str, span_id: str, start_s: int, answer: str) -> list[dict[str, object]]:
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "Helper",
        "gen_ai.conversation.id": "chat-1",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": answer}]),
    }
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": answer}]),
        "gen_ai.usage.input_tokens": 7,
    }
    return [
        _span(trace_id, span_id + "c", "chat m", (start_s, start_s + 1), chat, span_id + "a"),
        _span(trace_id, span_id + "a", "invoke_agent Helper", (start_s, start_s + 2), agent),
    ]


def test_group_by_conversation(tmp_path: Path) -> None:
    path = tmp_path / "turns.json"
    path.write_text(
        _otlp_line(_turn("t1", "s1", 0, "Hello!"))
        + "\n"
        + _otlp_line(_turn("t2", "s2", 10, "Goodbye!"))
        + "\n"
    )
    per_trace = list(read_otel(path))
    assert [t.id for t in per_trace if isinstance(t, Trace)] == ["t1", "t2"]
    trace = _only_trace(path, group_by="conversation")
    assert (trace.id, trace.task.id, trace.agent) == ("chat-1", "chat-1", "Helper")
    assert trace.metadata["trace_ids"] == ["t1", "t2"]
    assert [s.content for s in trace.steps] == ["Hello!", "Goodbye!"]  # same agent: no handoff
    assert trace.output == "Goodbye!"  # the last turn's agent output, not the first's
    assert trace.duration_s == 12.0
    assert trace.usage is not None and trace.usage.input_tokens == 14
    with pytest.raises(ValueError, match="group_by"):
        list(read_otel(path, group_by="session"))  # type: ignore[arg-type]


def test_plan_span_is_a_reasoning_step(tmp_path: Path) -> None:
    plan_text = "1. find flights 2. compare prices 3. book the cheapest"
    plan = {
        "gen_ai.operation.name": "plan",
        "gen_ai.agent.name": "Planner",
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": plan_text}]}]
        ),
    }
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Planner"}
    spans = [
        _span("tp", "p", "plan Planner", (1, 3), plan, parent="a"),
        _span("tp", "a", "invoke_agent Planner", (0, 4), agent),
    ]
    path = tmp_path / "plan.json"
    path.write_text(_otlp_line(spans) + "\n")
    (step,) = _only_trace(path).steps
    assert (step.kind, step.agent, step.content, step.duration_s, step.id, step.parent_id) == (
        StepKind.reasoning,
        "Planner",
        plan_text,
        2.0,
        "p",
        "a",
    )


def test_tool_calls_from_messages_when_no_tool_span(tmp_path: Path) -> None:
    def chat(span_id: str, start_s: int, inputs: object, outputs: object) -> dict[str, object]:
        messages = {
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
        }
        return _span("t9", span_id, "chat m", (start_s, start_s + 1), messages)

    question = {"role": "user", "parts": [{"type": "text", "content": "How many A1 left?"}]}
    ask = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "call_9", "name": "stock", "arguments": {"sku": "A1"}}
        ],
    }
    reply = {"role": "tool", "tool_call_id": "call_9", "content": '{"units": 3}'}  # OpenAI style
    spans = [
        chat("c1", 0, [question], [ask]),
        chat("c2", 3, [question, ask, reply], [{"role": "assistant", "content": "3 left."}]),
    ]
    path = tmp_path / "llm_only.json"
    path.write_text(_otlp_line(spans) + "\n")
    trace = _only_trace(path)
    assert [(s.kind.value, s.id, s.parent_id) for s in trace.steps] == [
        ("llm", "c1", None),
        ("tool_call", "c1:call0", "c1"),
        ("tool_result", "c1:call0:result", "c1:call0"),
        ("llm", "c2", None),
    ]
    assert trace.tool_calls[0].arguments == {"sku": "A1"}
    assert trace.steps[2].result == {"units": 3}
    assert trace.output == "3 left."
    assert trace.task.input == "How many A1 left?"
    assert trace.metadata["tool_calls_from_messages"] == 1


def test_task_id_attribute_and_gzip(tmp_path: Path) -> None:
    packed = tmp_path / "single_agent.json.gz"
    packed.write_bytes(gzip.compress((DATA / "single_agent.json").read_bytes()))
    trace = _only_trace(packed, task_id_attribute="gen_ai.agent.id")
    assert trace.task.id == "asst_w1"
    assert len(trace.steps) == 6


@pytest.mark.parametrize(
    ("key", "value", "blank_lines", "line", "field", "says"),
    [
        # an attribute value that cannot be decoded: left out, with its field path
        (
            "gen_ai.usage.input_tokens",
            "many",
            1,
            2,
            "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value",
            "many",
        ),
        # a value no token count can be: left out, naming the span and the field
        ("gen_ai.usage.output_tokens", "-3", 0, 1, "span s: output_tokens", "from 0 to 10^15"),
    ],
)
def test_bad_values_are_left_out_with_a_located_warning(
    tmp_path: Path, key: str, value: str, blank_lines: int, line: int, field: str, says: str
) -> None:
    span = {
        "traceId": "t",
        "spanId": "s",
        "name": "chat m",
        "attributes": [{"key": key, "value": {"intValue": value}}],
    }
    path = tmp_path / "bad.json"
    path.write_text("\n" * blank_lines + _otlp_line([span]) + "\n")
    warning, trace = read_otel(path)
    assert isinstance(warning, ReadError) and warning.warning
    assert (warning.line, warning.field) == (line, field)
    assert says in warning.message and "left out" in warning.message
    assert isinstance(trace, Trace) and trace.usage is None  # the span is read without it


def test_python_console_exporter_and_broken_first_line(tmp_path: Path) -> None:
    # ConsoleSpanExporter prints each span as an indented object when it ends (root last)
    spans = json.loads((DATA / "legacy_flat.json").read_text())
    spans.sort(key=lambda span: span["end_time"])
    console = tmp_path / "console.txt"
    console.write_text("".join(json.dumps(span, indent=4) + "\n" for span in spans))
    assert _only_trace(console) == _only_trace(DATA / "legacy_flat.json")
    # a JSONL file whose first line is cut short: an error on line 1, the rest is read
    lines = (DATA / "single_agent.json").read_text().splitlines()
    cut = tmp_path / "cut.json"
    cut.write_text("\n".join([lines[0][:50], *lines[1:]]) + "\n")
    error, trace = read_otel(cut)
    assert isinstance(error, ReadError) and (error.line, error.field) == (1, None)
    assert isinstance(trace, Trace)
    assert [s.kind.value for s in trace.steps] == ["tool_call", "tool_result", "llm"]


def test_credentials_in_invocation_parameters_are_dropped(tmp_path: Path) -> None:
    settings = '{"temperature": 0.5, "max_tokens": 64, "api_key": "sk-x", "Authorization": "B"}'
    attributes = {"llm.invocation_parameters": settings, "llm.token_count.prompt": 3}
    span = _span("t", "s", "chat m", (0, 1), attributes)
    span["attributes"].append(  # type: ignore[attr-defined]
        {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}}
    )
    path = tmp_path / "creds.json"
    path.write_text(_otlp_line([span]) + "\n")
    assert _only_trace(path).params == {"temperature": 0.5, "max_tokens": 64}


def test_javascript_console_exporter_spans(tmp_path: Path) -> None:
    # @opentelemetry/sdk-trace-base ConsoleSpanExporter: id, parentId, microsecond times
    spans = [
        {
            "traceId": "js1",
            "id": "r",
            "name": "invoke_agent Bot",
            "timestamp": 1_700_000_000_000_000,
            "duration": 2_500_000,
            "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Bot"},
        },
        {
            "traceId": "js1",
            "parentId": "r",
            "id": "t",
            "name": "execute_tool add",
            "timestamp": 1_700_000_000_500_000,
            "duration": 250_000,
            "attributes": {"gen_ai.tool.name": "add", "gen_ai.tool.call.arguments": '{"a": 1}'},
        },
    ]
    path = tmp_path / "js.json"
    path.write_text(json.dumps(spans, indent=2))
    trace = _only_trace(path)
    assert (trace.agent, trace.duration_s) == ("Bot", 2.5)
    assert [(s.kind.value, s.agent, s.duration_s) for s in trace.steps] == [
        ("tool_call", "Bot", 0.25)
    ]
    assert trace.tool_calls[0].arguments == {"a": 1}


def test_broken_envelopes_and_values_never_crash_the_reader(tmp_path: Path) -> None:
    root = json.loads((DATA / "single_agent.json").read_text().splitlines()[2])
    span = root["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    lines = [
        '{"resourceSpans": "oops"}',
        '{"resourceSpans": [{"resource": 3, "scopeSpans": []}]}',
        '{"resourceLogs": [{"scopeLogs": [{"logRecords": [7]}]}]}',
        "[1, 2]",
        "42",
    ]
    for n, key in enumerate(sorted(span)):
        for bad in (None, 1, "x", [], {}, [{"key": 1}], True):
            mutated = {**span, key: bad, "traceId": f"m{n}-{bad!r}"}
            envelope = {"resourceSpans": [{"scopeSpans": [{"spans": [mutated]}]}]}
            lines.append(json.dumps(envelope))
    for n, bad in enumerate((None, 1, "x", [], {}, True)):  # a scope's name that is no string
        spans = [{**span, "traceId": f"scope{n}"}]
        scope_spans = [{"scope": {"name": bad}, "spans": spans}]
        lines.append(json.dumps({"resourceSpans": [{"scopeSpans": scope_spans}]}))
    path = tmp_path / "broken.json"
    path.write_text("\n".join(lines) + "\n")
    items = list(read_otel(path))
    assert all(isinstance(i, Trace | ReadError) for i in items)
    assert {i.id for i in items if isinstance(i, Trace)} >= {f"scope{n}" for n in range(6)}
    errors = {i.line: i for i in items if isinstance(i, ReadError)}
    assert errors[1].field == "resourceSpans"
    assert errors[2].field == "resourceSpans[0].resource"
    assert errors[3].field == "resourceLogs[0].scopeLogs[0].logRecords[0]"
    assert errors[4].field == "[0]"
    assert errors[5].field is None
    assert sum(isinstance(i, Trace) for i in items) > 0


def test_odd_attribute_values_never_crash_the_builder(tmp_path: Path) -> None:
    lines = (DATA / "single_agent.json").read_text().splitlines()
    odd: list[dict[str, object]] = [
        {"stringValue": '[1, "x", null, {"parts": 5}, {"role": 1, "parts": [1, {"type": 2}]}]'},
        {"stringValue": '[{"message": {"contents": [{"message_content": "s"}]}}]'},
        {"stringValue": '[{"function": {"name": "f", "parameters": "not a schema"}}]'},
        {"stringValue": '{"name": 3}'},
        {"stringValue": "-7"},
        {"intValue": "-5"},
        {"boolValue": True},
        {"arrayValue": {"values": [{"intValue": "1"}]}},
        {"kvlistValue": {"values": [{"key": "x", "value": {"stringValue": "y"}}]}},
        {},
    ]
    first = json.loads(lines[0])
    chat = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]  # the richest span
    for index in range(len(chat["attributes"])):
        for value in odd:
            chat["attributes"][index]["value"], kept = value, chat["attributes"][index]["value"]
            path = tmp_path / "odd.json"
            path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
            *warnings, trace = read_otel(path)
            # the trace is read; a value no convention can take is left out with a warning
            assert isinstance(trace, Trace), warnings
            assert all(isinstance(w, ReadError) and w.warning for w in warnings)
            chat["attributes"][index]["value"] = kept


def test_registry() -> None:
    assert set(IMPORTERS) == {
        "native",
        "otel",
        "otlp-json",
        "otlp-proto",
        "jaeger",
        "tempo",
        "openai-agents",
        "langsmith",
        "langfuse",
        "mlflow",
        "openai-chat",
        "tau2",
    }
    assert get_importer("native") is read_traces
    known = (
        "jaeger, langfuse, langsmith, mlflow, native, openai-agents, openai-chat, otel, otlp-json"
    )
    with pytest.raises(ValueError, match=known):
        get_importer("zipkin")


def test_cli_evaluate_otel_computes_behaviour_metrics(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    files = [str(DATA / name) for name in ("single_agent.json", "handoff.json", "malformed.json")]
    result = runner.invoke(
        app,
        [
            "evaluate",
            *files,
            "--format",
            "otel",
            "--suite",
            "behavior",
            "--db",
            str(tmp_path / "a.db"),
            "--jobs",
            "1",
            "--json",
            str(out),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["config"]["format"] == "otel"
    metrics = {s["task_id"]: s["metrics"] for s in doc["samples"]}
    single, handoff = metrics["conv-42"], metrics["ticket-7"]
    # single agent: agent steps = 2 llm + 2 tool_call (tool results are the environment's),
    # r = 2/4 = 0.5 in [0.2, 0.6] -> 1.0. Efficiency counts those n = 4: step = 1 - 4/20 = 0.8;
    # each has a span duration (0.9, 0.5, 0.8, 1.3 s): mean 0.875 s, time = 1/1.875;
    # 0.7*0.8 + 0.3/1.875 = 0.72.
    assert single["tool_usage"] == pytest.approx(1.0)
    assert single["efficiency"] == pytest.approx(0.72)
    # handoff: agent steps = 4 llm + 2 tool_call + 2 handoff = 8 (the transfer tool is a
    # handoff only), r = 2/8 -> 1.0. n = 8, step = 0.6; the handoffs have no duration, so there
    # is no time score (the ruling): efficiency = the step score.
    assert handoff["tool_usage"] == pytest.approx(1.0)
    assert handoff["efficiency"] == pytest.approx(0.6)
    # X: one llm step and no tool call, and its spans declare no tool: tool-free, so no
    # tool_usage; n = 1, and its 0.1 s span duration is known: 0.7*0.95 + 0.3/(1 + 0.1).
    # Y has no agent step: no tool_usage.
    x = metrics["11111111111111111111111111111111"]
    assert x["tool_usage"] is None
    assert x["efficiency"] == pytest.approx(0.7 * 0.95 + 0.3 / 1.1)
    assert metrics["22222222222222222222222222222222"]["tool_usage"] is None
    assert [(e["line"], e["field"]) for e in doc["errors"]] == [
        (2, None),
        (3, "resourceSpans[0].scopeSpans[0].spans[0].spanId"),
        (6, "traceId"),
    ]


def test_cli_import_writes_native_jsonl(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    files = [str(DATA / "openinference.json"), str(DATA / "malformed.json")]
    result = runner.invoke(app, ["import", *files, "--format", "otel", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 3 traces" in result.output and "3 errors" in result.output
    back = list(read_traces(out))
    expected = [t for f in files for t in read_otel(f) if isinstance(t, Trace)]
    assert back == expected
    bad = runner.invoke(app, ["import", files[0], "--format", "zipkin", "--out", str(out)])
    assert bad.exit_code == 2


def test_cli_resume_reads_the_run_format_and_import_takes_log_files(tmp_path: Path) -> None:
    db, out = tmp_path / "a.db", tmp_path / "out.json"
    files = [str(DATA / "handoff.json"), str(DATA / "malformed.json")]
    common = ["--db", str(db), "--jobs", "1", "--no-progress", "--json", str(out)]
    first = runner.invoke(app, ["evaluate", *files, "--format", "otel", *common])
    assert first.exit_code == 0, first.output
    before = json.loads(out.read_text())
    # no --format: the run's own format is used again, so nothing new is read or misread
    resumed = ["evaluate", *files, "--resume", before["run_id"], *common, "--overwrite"]
    again = runner.invoke(app, resumed)
    assert again.exit_code == 0, again.output
    after = json.loads(out.read_text())
    assert (len(after["samples"]), after["errors"]) == (len(before["samples"]), before["errors"])

    logs_line, spans_line, _ = (DATA / "with_logs.json").read_text().splitlines()
    (tmp_path / "logs.json").write_text(logs_line + "\n")
    (tmp_path / "spans.json").write_text(spans_line + "\n")
    traces = tmp_path / "t.jsonl"
    args = ["import", str(tmp_path / "spans.json"), "--logs", str(tmp_path / "logs.json")]
    result = runner.invoke(app, [*args, "--out", str(traces)])
    assert result.exit_code == 0, result.output
    (trace,) = read_traces(traces)
    assert isinstance(trace, Trace) and trace.task.input == "Translate 'bonjour' to English"


def test_an_otel_file_read_as_native_jsonl_gets_a_hint(tmp_path: Path) -> None:
    args = ["evaluate", str(DATA / "handoff.json"), "--db", str(tmp_path / "h.db")]
    result = runner.invoke(app, [*args, "--jobs", "1", "--no-progress"])
    # nothing scored is a failure, with the hint
    assert result.exit_code == 1
    assert "0 samples" in result.output
    assert "read with --format otel" in " ".join(result.output.split())


def test_an_attribute_that_cannot_be_read_is_named_by_its_path_in_either_form() -> None:
    # attributes as an object (the SDKs' console spans) and as OTLP's key/value list: the
    # value that cannot be read is left out and named where it is; the others are read
    from agentgauge.io.otel.wire.otlp import attributes_of, spans_of
    from agentgauge.io.otel.wire.span import BadField

    span = {
        "name": "chat",
        "context": {"trace_id": "0x" + "1" * 32, "span_id": "0x" + "2" * 16},
        "attributes": {
            "gen_ai.usage.input_tokens": {"intValue": "many"},
            "ok": {"stringValue": "s"},
            "n": 3,
            "listed": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "x"}]}},
        },
    }
    (read,), problems = spans_of([span], 7)
    assert read.attributes == {"ok": "s", "n": 3}
    assert [(p.field, p.warning) for p in problems] == [
        ("[0].attributes.gen_ai.usage.input_tokens", True),
        ("[0].attributes.listed.arrayValue.values[1]", True),
    ]
    assert "invalid literal for int()" in str(problems[0])
    listed = [
        {"key": "a", "value": {"stringValue": "1"}},
        {"key": "b", "value": {"doubleValue": "z"}},
    ]
    with pytest.raises(BadField) as caught:
        attributes_of(listed, "w")
    assert caught.value.field == "w[1].value"
    assert attributes_of({"a": {"stringValue": None}, "b": {"boolValue": 0}, "c": {}}, "w") == {
        "a": None,
        "b": False,
        "c": None,
    }
