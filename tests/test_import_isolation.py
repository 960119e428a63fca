"""What a reader cannot take whole costs only that value, record or file, and is said where:

- a lone surrogate (half of a UTF-16 pair: no file or store can hold it) is read as U+FFFD
  with a warning naming the file, the line and the field, on every surface strings come in
  (native JSONL, OTLP and the other span formats, JSON text inside an attribute or a tool
  call's arguments, openai-chat, tau2-bench results, the live receiver);
- a span time no date can hold and a token count that is infinite or absurd are left out of
  the trace with a located warning; the rest of the trace is imported and scored;
- a reader's own failure on one record (a bug) is an error of that record: under
  ``evaluate --format F`` the run completes and keeps the file's other traces, for every
  importer (a plugin's reader that fails costs the rest of its file only).
"""

from __future__ import annotations

import base64
import json
import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.importers import IMPORTERS, importer
from agentgauge.io.jsonl import ReadError
from agentgauge.io.otel.wire.otlp import spans_of
from agentgauge.model import Trace
from agentgauge.store import Store

ROOT = Path(__file__).parent
FIXTURES = ROOT / "fixtures" / "otel"
LAYERED_ID = "ba8feaab6506d164e11ec1dbbc9a8a20"
SURROGATE_WARNING = "warning: a lone surrogate (half of a UTF-16 pair, not text) was read as U+FFFD"
runner = CliRunner()


def _import(tmp_path: Path, source: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["import", str(source), "--out", str(out), "--overwrite", *args])
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return [json.loads(line) for line in out.read_text().splitlines()], result.output


def _evaluate(tmp_path: Path, sources: list[Path], fmt: str) -> tuple[str, list[Any], list[Any]]:
    tmp_path.mkdir(exist_ok=True)
    db = tmp_path / "ag.db"
    args = ["evaluate", *map(str, sources), "--format", fmt, "--db", str(db), "--jobs", "1"]
    result = runner.invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    with Store(db) as store:
        (run,) = store.list_runs()
        samples = list(store.iter_samples(run.id, with_trace=True))
        return run.status, samples, store.read_errors(run.id)


# -- lone surrogates ------------------------------------------------------------------------


def _single_agent_lines() -> list[str]:
    return (ROOT / "data" / "otel" / "single_agent.json").read_text().splitlines()


def test_a_native_line_with_a_lone_surrogate_is_read_with_a_located_warning(
    tmp_path: Path,
) -> None:
    lines = (ROOT.parent / "examples" / "demo_traces.jsonl").read_text().splitlines()[:2]
    trace = json.loads(lines[1])
    trace["output"] = "it is 18\udc80C"
    trace["steps"][0]["content"] = "a\ud800b"
    source = tmp_path / "traces.jsonl"
    text = lines[0] + "\n" + json.dumps(trace) + "\n"  # json.dumps escapes them: \udc80
    source.write_text(text, encoding="utf-8")
    written, output = _import(tmp_path, source, "--format", "native")
    assert written[1]["output"] == "it is 18\ufffdC"
    assert written[1]["steps"][0]["content"] == "a\ufffdb"
    assert f"traces.jsonl:2: output: {SURROGATE_WARNING} (and 1 more)" in output
    assert "0 errors, 1 warnings" in output
    status, samples, problems = _evaluate(tmp_path, [source], "native")
    assert status == "completed" and len(samples) == 2
    (warning,) = problems
    assert (warning.line, warning.field, warning.warning) == (2, "output", True)
    assert samples[1].trace().output == "it is 18\ufffdC"


def test_a_span_attribute_and_json_text_inside_one_are_located(tmp_path: Path) -> None:
    lines = _single_agent_lines()
    # an attribute's own text, and JSON text in an attribute (a tool call's arguments)
    lines[0] = lines[0].replace('{"stringValue": "gpt-4o"}', '{"stringValue": "gpt-4o\\udfff"}', 1)
    lines = [
        line.replace('\\"city\\": \\"Paris\\"', '\\"city\\": \\"Pa\\\\ud800ris\\"')
        for line in lines
    ]
    source = tmp_path / "spans.json"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (trace,), output = _import(tmp_path, source)
    assert "gpt-4o\ufffd" in json.dumps(trace, ensure_ascii=False)
    assert trace["steps"][1]["tool_call"]["arguments"] == {"city": "Pa\ufffdris", "unit": "celsius"}
    assert "spans.json:1: resourceSpans[0].scopeSpans[0].spans[0].attributes[2].value" in output
    assert "stringValue: " + SURROGATE_WARNING in output
    assert (
        f"spans.json:1: trace {trace['id']}: steps[1].tool_call.arguments.city: "
        + SURROGATE_WARNING
    ) in output


@pytest.mark.parametrize(
    "name",
    ["langsmith.json", "langfuse_export.json", "layered.jaeger.json", "layered.tempo.json"],
)
def test_every_span_format_warns_of_a_lone_surrogate(tmp_path: Path, name: str) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    source = tmp_path / name
    source.write_text(text.replace("sunny", "sun\\ud800ny"), encoding="utf-8")
    (trace,), output = _import(tmp_path, source)
    assert "sun\ufffdny" in trace["output"]
    assert f"{name}:1: " in output and SURROGATE_WARNING in output


def test_openai_chat_warns_of_a_lone_surrogate_in_text_and_in_arguments(tmp_path: Path) -> None:
    chat = {
        "messages": [
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Pa\\ud800ris"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "18C"},
            {"role": "assistant", "content": "18\udc00C in Paris"},
        ]
    }  # fmt: skip
    source = tmp_path / "chats.jsonl"
    second = {**chat, "messages": [*chat["messages"][:3], {"role": "assistant", "content": "18C"}]}
    source.write_text(json.dumps(chat) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    (first, other), output = _import(tmp_path, source, "--format", "openai-chat")
    assert first["output"] == "18\ufffdC in Paris"
    assert other["steps"][2]["tool_call"]["arguments"] == {"city": "Pa\ufffdris"}
    assert f"chats.jsonl:1: messages[3].content: {SURROGATE_WARNING}" in output
    assert (
        f"chats.jsonl:2: trace line-2: steps[2].tool_call.arguments.city: {SURROGATE_WARNING}"
        in output
    )
    assert "0 errors, 2 warnings" in output


@pytest.mark.parametrize(
    "old, new, shown, field",
    [
        ('"gpt-4o"', '"gpt\\ud800"', "gpt\ufffd", "value.stringValue"),
        # a token count of 5,000 digits (Python reads at most 4,300): the count is left out
        (
            '{"intValue": "120"}',
            '{"intValue": ' + "9" * 5000 + "}",
            "gpt-4o",
            "attributes[5].value",
        ),
    ],
    ids=["lone surrogate", "5000-digit integer"],
)
def test_the_receiver_reads_a_request_with_a_bad_value_and_warns(
    tmp_path: Path, old: str, new: str, shown: str, field: str
) -> None:
    import http.client

    from agentgauge.config import load_suite
    from agentgauge.serve.otlp import LiveRun, ReceiverSettings

    db = tmp_path / "live.db"
    live = LiveRun(load_suite("behavior"), db, ReceiverSettings(port=0)).start()
    body = "\n".join(_single_agent_lines()).replace(old, new, 1)
    host, port = live.url.removeprefix("http://").rsplit(":", 1)
    for line in body.splitlines():
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request(
            "POST", "/v1/traces", line.encode(), {"Content-Type": "application/json"}
        )
        assert connection.getresponse().status == 200
        connection.close()
    run_id = live.stop()
    with Store(db) as store:
        (sample,) = store.iter_samples(run_id, with_trace=True)
        (warning,) = store.read_errors(run_id)
    assert shown in sample.trace().model_dump_json()
    assert (warning.source, warning.line, warning.warning) == ("otlp", 1, True)
    assert warning.field is not None and warning.field.endswith(field)


# -- values left out ---------------------------------------------------------------------------


def _chat_span_changed(change: Callable[[dict[str, Any]], None]) -> list[str]:
    lines = _single_agent_lines()
    doc = json.loads(lines[0])
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["name"] == "chat gpt-4o"
    change(span)
    return [json.dumps(doc), *lines[1:]]


def _token(value: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(span: dict[str, Any]) -> None:
        for attribute in span["attributes"]:
            if attribute["key"] == "gen_ai.usage.input_tokens":
                attribute["value"] = value

    return change


@pytest.mark.parametrize(
    "change, field, says",
    [
        (
            lambda s: s.update(startTimeUnixNano="9" * 25),
            "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano",
            "outside the years 1 to 9999",
        ),
        (
            lambda s: s.update(endTimeUnixNano="99999-01-01T00:00:00Z"),
            "resourceSpans[0].scopeSpans[0].spans[0].endTimeUnixNano",
            "the time is left out",
        ),
        (_token({"doubleValue": "Infinity"}), "span c100000000000001: input_tokens", "left out"),
        (_token({"intValue": "9" * 4000}), "span c100000000000001: input_tokens", "10^15"),
        (
            _token({"intValue": "9" * 5000}),
            "resourceSpans[0].scopeSpans[0].spans[0].attributes[5].value",
            "the attribute is left out",
        ),
        (_token({"intValue": "-3"}), "span c100000000000001: input_tokens", "10^15"),
    ],
    ids=["time overflow", "far ISO time", "infinite tokens", "4000 digits", "5000 digits", "neg"],
)
def test_a_bad_time_or_token_count_is_left_out_and_the_trace_kept(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], field: str, says: str
) -> None:
    source = tmp_path / "spans.json"
    source.write_text("\n".join(_chat_span_changed(change)) + "\n", encoding="utf-8")
    (trace,), output = _import(tmp_path, source)
    assert f"spans.json:1: {field}: warning: " in output and says in output, output
    # the other model call's tokens, its steps and its answer are all there
    assert [s["kind"] for s in trace["steps"]][:2] == ["llm", "tool_call"]
    assert trace["output"]
    assert trace["steps"][-1]["usage"]["input_tokens"] == 200
    status, samples, problems = _evaluate(tmp_path, [source], "otel")
    assert status == "completed" and len(samples) == 1 and samples[0].error is None
    assert [p.warning for p in problems] == [True]
    with Store(tmp_path / "ag.db") as store:
        run_id = store.list_runs()[0].id
    shown = runner.invoke(app, ["show", run_id, "--db", str(tmp_path / "ag.db")])
    assert shown.exit_code == 0 and "read with a value left out" in shown.output


@pytest.mark.parametrize("pretty", [False, True], ids=["lines", "pretty-printed"])
def test_a_number_too_long_to_read_a_bad_scope_or_resource_value_cost_only_that_value(
    tmp_path: Path, pretty: bool
) -> None:
    lines = _single_agent_lines()
    doc = json.loads(lines[0])
    scope_spans = doc["resourceSpans"][0]["scopeSpans"][0]
    scope_spans["scope"] = {"name": {"a": "dict"}, "version": [1]}
    resource = doc["resourceSpans"][0]["resource"]["attributes"]
    resource.append({"key": "host.id", "value": {"intValue": "12x"}})
    for attribute in scope_spans["spans"][0]["attributes"]:
        if attribute["key"] == "gen_ai.usage.input_tokens":
            attribute["value"] = {"intValue": "HUGE"}
    docs = [doc, *map(json.loads, lines[1:])]
    text = "\n".join(json.dumps(d, indent=1 if pretty else None) for d in docs)
    # a bare JSON integer of 5,000 digits (Python reads at most 4,300)
    source = tmp_path / "spans.json"
    source.write_text(text.replace('"HUGE"', "9" * 5000) + "\n", encoding="utf-8")
    (trace,), output = _import(tmp_path, source)
    # one warning a line (the store keeps one), the first said whole
    assert (
        "spans.json:1: resourceSpans[0].resource.attributes[2].value: warning: bad attribute "
        "value {'intValue': '12x'}: invalid literal for int() with base 10: '12x': the attribute "
        "is left out (and 2 more)" in output
    )
    assert "0 errors, 1 warnings" in output
    problems = [f"{p.field}: {p.message}" for p in _evaluate(tmp_path / "run", [source], "otel")[2]]
    assert len(problems) == 1 and "(and 2 more)" in problems[0]
    # each of the three, in the span document as read (the long integer an infinity)
    read = json.loads(json.dumps(docs[0]))
    read["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][5]["value"] = {
        "intValue": math.inf
    }
    spans, bad = spans_of(read, 1)
    assert len(spans) == len(scope_spans["spans"])
    assert [(b.field, b.warning) for b in bad] == [
        ("resourceSpans[0].resource.attributes[2].value", True),
        ("resourceSpans[0].scopeSpans[0].scope.name", True),
        ("resourceSpans[0].scopeSpans[0].spans[0].attributes[5].value", True),
    ]
    assert str(bad[2]) == "a number too large to use: the attribute is left out"
    # every span read: the model calls (the second one's tokens), the tool call, the answer
    assert [s["kind"] for s in trace["steps"]][:2] == ["llm", "tool_call"]
    assert "input_tokens" not in trace["steps"][0].get("usage", {})
    assert trace["steps"][-1]["usage"]["input_tokens"] == 200
    assert trace["output"] and trace["metadata"]["service_name"] == "weather-bot"


# -- a reader's failure costs its record ------------------------------------------------------


def _other_id(data: bytes, trace_id: str, new: str) -> bytes:
    """The export with its trace id replaced in every form it is written in (hex, base64,
    a UUID, raw protobuf bytes)."""
    old_b, new_b = bytes.fromhex(trace_id), bytes.fromhex(new)
    forms = [
        (trace_id.encode(), new.encode()),
        (base64.b64encode(old_b), base64.b64encode(new_b)),
        (
            "-".join(
                (trace_id[:8], trace_id[8:12], trace_id[12:16], trace_id[16:20], trace_id[20:])
            ).encode(),
            "-".join((new[:8], new[8:12], new[12:16], new[16:20], new[20:])).encode(),
        ),
        (old_b, new_b),
    ]
    for old, replacement in forms:
        if old in data:
            return data.replace(old, replacement)
    raise AssertionError(f"{trace_id} is not in the export")


# each importer, a file of its format with two traces: the first read is the one that fails
SPAN_FILES = {
    "otel": ("layered.jsonl", LAYERED_ID),
    "otlp-json": ("layered.otlp.json", LAYERED_ID),
    "otlp-proto": ("layered.pb", LAYERED_ID),
    "jaeger": ("layered.jaeger.json", LAYERED_ID),
    "tempo": ("layered.tempo.json", LAYERED_ID),
    "openai-agents": ("openai_agents_sdk.jsonl", None),
    "langsmith": ("langsmith.json", "01a2135ec2b672c68dbc72904a3e42a3"),
    "langfuse": ("langfuse_export.json", "1248faa676e6baeba8121a5686876ce6"),
}
SECOND = "0123456789abcdef0123456789abcdef"


def _two_traces(tmp_path: Path, fmt: str) -> Path:
    name, trace_id = SPAN_FILES[fmt]
    data = (FIXTURES / name).read_bytes()
    if trace_id is None:  # the OpenAI Agents SDK's own ids
        other = data.replace(b"trace_4f8b8377e23f4642a9a0413afc2e79ab", b"trace_" + SECOND.encode())
    else:
        other = _other_id(data, trace_id, SECOND)
    path = tmp_path / name
    # two requests of protobuf concatenated are one request of both (repeated fields append)
    path.write_bytes(data + other if fmt == "otlp-proto" else data + b"\n" + other)
    return path


def _failing_once(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    real, calls = getattr(module, name), []

    def once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("an unforeseen bug")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, once)


def _check_one_lost(
    status: str, samples: list[Any], problems: list[ReadError], path: Path, second: str = ""
) -> None:
    """The run completed, with the error of the record lost and every other trace (the
    second trace whole; a format of one span a line keeps the first trace, less a span)."""
    assert status == "completed"
    assert all(s.trace() is not None for s in samples)
    assert any(second in (s.trace_id or "") for s in samples)
    if len(samples) > 1:
        assert len(samples) == 2 and samples[0].trace().metadata["span_count"] > 1
    (problem,) = problems
    assert problem.source == str(path) and not problem.warning and problem.line >= 1
    assert "agentgauge could not read it (RuntimeError: an unforeseen bug)" in problem.message


@pytest.mark.parametrize(
    "where, fmt",
    [
        (where, fmt)
        for where in ("document", "trace")
        for fmt in sorted(SPAN_FILES)
        # a protobuf file is one request: its one document is the whole file
        if (where, fmt) != ("document", "otlp-proto")
    ],
)
def test_a_span_reader_failing_on_one_record_loses_only_that_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, where: str
) -> None:
    import agentgauge.io.otel.stream as stream

    if fmt == "otlp-proto":
        pytest.importorskip("opentelemetry.proto")
    path = _two_traces(tmp_path, fmt)
    _failing_once(monkeypatch, stream, "as_otlp" if where == "document" else "build_trace")
    status, samples, problems = _evaluate(tmp_path, [path], fmt)
    if where == "trace":
        assert len(samples) == 1
    _check_one_lost(status, samples, problems, path, SECOND)


def test_openai_chat_and_native_readers_failing_on_one_line_lose_only_that_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentgauge.io.jsonl as jsonl
    import agentgauge.io.openai_chat as openai_chat

    chats = tmp_path / "chats.jsonl"
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    chats.write_text(json.dumps(chat) + "\n" + json.dumps(chat) + "\n", encoding="utf-8")
    _failing_once(monkeypatch, openai_chat, "_trace")
    status, samples, problems = _evaluate(tmp_path / "chat", [chats], "openai-chat")
    assert len(samples) == 1
    _check_one_lost(status, samples, problems, chats, "line-2")

    native = tmp_path / "traces.jsonl"
    lines = (ROOT.parent / "examples" / "demo_traces.jsonl").read_text().splitlines()[:2]
    native.write_text("\n".join(lines) + "\n", encoding="utf-8")

    calls: list[int] = []

    class Failing(Trace):
        @classmethod
        def model_validate_json(cls, *args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("an unforeseen bug")
            return Trace.model_validate_json(*args, **kwargs)

    monkeypatch.setattr(jsonl, "Trace", Failing)
    status, samples, problems = _evaluate(tmp_path / "native", [native], "native")
    assert len(samples) == 1
    _check_one_lost(status, samples, problems, native, json.loads(lines[1])["id"])


def test_a_plugin_reader_that_fails_costs_the_rest_of_its_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    IMPORTERS.load()  # the snapshot holds every built-in format, whichever ran before
    monkeypatch.setattr(IMPORTERS, "_entries", dict(IMPORTERS._entries))
    lines = (ROOT.parent / "examples" / "demo_traces.jsonl").read_text().splitlines()

    @importer("first-line-then-fail")
    def read(path: str | Path) -> Any:
        yield Trace.model_validate_json(Path(path).read_text().splitlines()[0])
        raise KeyError("a reader's bug")

    files = []
    for i in range(2):
        path = tmp_path / f"in{i}.jsonl"
        path.write_text(lines[i] + "\n" + lines[i + 2] + "\n", encoding="utf-8")
        files.append(path)
    (tmp_path / "import").mkdir()
    status, samples, problems = _evaluate(tmp_path / "db", files, "first-line-then-fail")
    assert status == "completed"
    assert [s.trace_id for s in samples] == [json.loads(lines[i])["id"] for i in range(2)]
    assert [(p.source, p.line) for p in problems] == [(str(f), 1) for f in files]
    assert all("the rest of the file is not read" in p.message for p in problems)
    out = tmp_path / "import" / "out.jsonl"
    args = ["import", *map(str, files), "--format", "first-line-then-fail", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "wrote 2 traces" in result.output
    with sqlite3.connect(tmp_path / "db" / "ag.db") as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("completed",)


def test_tau2_a_bad_task_costs_its_simulations_only_and_a_surrogate_is_read(
    tmp_path: Path,
) -> None:
    doc = json.loads((ROOT / "fixtures" / "tau2" / "mock_4trials.json").read_text())
    doc["tasks"][0]["user_scenario"] = ["a scenario", "that is not an object"]
    doc["simulations"][1]["messages"][1]["content"] = "please update task\udc80 1"
    source = tmp_path / "results.json"
    source.write_text(json.dumps(doc), encoding="utf-8")
    status, samples, problems = _evaluate(tmp_path, [source], "tau2")
    assert status == "completed"
    # the first task's 4 trials are errors; the 8 others are imported and stored
    assert sorted(s.trace_id for s in samples) == sorted(
        f"{task}#t{trial}" for task in ("update_task_1", "impossible_task_1") for trial in range(4)
    )
    assert all(s.trace() is not None for s in samples)
    errors = [p for p in problems if not p.warning]
    assert [p.line for p in errors] == [1, 4, 7, 10]
    assert all(p.field == f"simulations[{p.line - 1}]" for p in errors)
    assert all("agentgauge could not read it (AttributeError" in p.message for p in errors)
    (warning,) = [p for p in problems if p.warning]
    assert warning.line == 2 and SURROGATE_WARNING in warning.message
    assert warning.field == "trace update_task_1#t0: steps[1].content"
    (updated,) = [s for s in samples if s.trace_id == "update_task_1#t0"]
    assert updated.trace().steps[1].content == "please update task\ufffd 1"
