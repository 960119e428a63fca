"""The import report, and bad input made from real exports: every problem is reported with
its file and position, and the rest is imported."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.jsonl import ReadError, read_traces
from agentgauge.io.otel import MAX_ATTRIBUTE_CHARS, read_otel
from agentgauge.io.otel.report import ImportReport
from agentgauge.model import Trace

FIXTURES = Path(__file__).parent / "fixtures" / "otel"
runner = CliRunner()


def _lines(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def _spans(line: dict[str, object]) -> list[dict[str, object]]:
    return [
        span
        for rs in line["resourceSpans"]  # type: ignore[attr-defined]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def test_report_counts_per_format() -> None:
    report = ImportReport("otel")
    read = report.watch(read_otel)
    for name in ("layered.jsonl", "openai_agents.jsonl", "layered.jaeger.json"):
        list(read(FIXTURES / name))
    assert report.traces == 3
    assert report.rows() == [
        # format, files, traces, steps, tool calls, merged, skipped
        ["jaeger", "1", "1", "6", "2", "4", "1"],
        ["otlp-json", "2", "2", "14", "4", "4", "6"],
    ]
    assert report.skipped_lines() == [
        "skipped spans, no step for this kind of span: POST /ask (2), Agent workflow (1), chain (4)"
    ]


def test_cli_import_prints_the_report(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    files = [str(FIXTURES / n) for n in ("layered.jsonl", "openai_agents.jsonl")]
    result = runner.invoke(app, ["import", *files, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "otlp-json" in result.output and "merged" in result.output
    assert "chain (4)" in result.output
    assert "wrote 2 traces" in result.output


def test_nothing_usable_exits_1_with_a_hint_naming_the_formats_tried(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"title": "meeting notes"}\n')
    result = runner.invoke(app, ["import", str(path), "--out", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "no trace was imported" in result.output
    for name in ("OTLP/JSON", "OTLP protobuf", "Jaeger query-API JSON", "Tempo trace JSON"):
        assert name in result.output
    assert "openai-chat" in result.output  # the other formats are named


def _bad_export(tmp_path: Path) -> Path:
    """The openai-agents export and the layered one in one file, broken on purpose:
    line 1: a span without its spanId; the openai-agents generation span (line 2) carries a
    50 MB attribute; the layered trace's root names a child as its parent (a cycle); the
    last line is cut in the middle."""
    agents, layered = _lines("openai_agents.jsonl"), _lines("layered.jsonl")
    orphan = json.loads(json.dumps(layered[0]))
    del _spans(orphan)[0]["spanId"]
    generation = _spans(agents[0])[0]
    generation["attributes"].append(  # type: ignore[attr-defined]
        {"key": "app.dump", "value": {"stringValue": "x" * 50_000_000}}
    )
    root = next(line for line in layered if any("parentSpanId" not in s for s in _spans(line)))
    child = _spans(layered[0])[0]
    root_span = next(s for s in _spans(root) if "parentSpanId" not in s)
    root_span["parentSpanId"] = child["spanId"]
    lines = [json.dumps(orphan), *map(json.dumps, agents), *map(json.dumps, layered)]
    text = "\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2] + "\n"
    path = tmp_path / "broken.jsonl"
    path.write_text(text)
    return path


def test_bad_input_is_reported_with_file_and_position_and_the_rest_imported(
    tmp_path: Path,
) -> None:
    path = _bad_export(tmp_path)
    items = list(read_otel(path))
    errors = [i for i in items if isinstance(i, ReadError)]
    traces = [i for i in items if isinstance(i, Trace)]
    assert {e.source for e in errors} == {str(path)}
    by_line = {e.line: e for e in errors}
    assert by_line[1].field is not None and by_line[1].field.endswith(".spanId")
    assert "missing" in by_line[1].message
    big = by_line[2]
    assert big.field is not None and big.field.endswith("attributes.app.dump")
    assert "50.0 million characters" in big.message
    assert str(MAX_ATTRIBUTE_CHARS // 1_000_000) in big.message
    cut = max(by_line)
    assert "invalid JSON" in by_line[cut].message
    cycle = [e for e in errors if e.field == "parentSpanId"]
    assert len(cycle) == 1 and "form a cycle" in cycle[0].message
    # the two runs are still imported, the generation span without its huge attribute
    assert len(traces) == 2
    agents = next(t for t in traces if t.agent == "Triage agent")
    assert [s.kind.value for s in agents.steps][:2] == ["llm", "handoff"]
    layered = next(t for t in traces if t is not agents)
    assert [c.name for c in layered.tool_calls] == ["get_weather", "get_weather"]


def test_cli_import_of_bad_input_has_no_traceback(tmp_path: Path) -> None:
    path = _bad_export(tmp_path)
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["import", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert "Traceback" not in result.output
    assert f"{path}:1:" in result.output
    assert len([t for t in read_traces(out) if isinstance(t, Trace)]) == 2


def test_a_file_of_other_bytes_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "picture.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    items = list(read_otel(path))
    assert len(items) == 1 and isinstance(items[0], ReadError)
    assert items[0].line == 1 and "not JSON text" in items[0].message


def test_a_truncated_pretty_printed_request_is_an_error_at_its_line(tmp_path: Path) -> None:
    text = (FIXTURES / "layered.otlp.json").read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    (error,) = list(read_otel(path))
    assert isinstance(error, ReadError)
    assert error.line == len(text[: len(text) // 2].rstrip().splitlines())
    assert "the document that starts on line 1 ends early" in error.message


FRAMEWORKS = Path(__file__).parent / "fixtures" / "frameworks"


def _otlp(spans: list[dict[str, object]]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n"


def _value(value: object) -> dict[str, object]:
    return {"intValue": value} if isinstance(value, int) else {"stringValue": value}


def _span(span_id: str, name: str, parent: str | None, **attrs: object) -> dict[str, object]:
    return {
        "traceId": "ab" * 16,
        "spanId": span_id * 8,
        "parentSpanId": parent * 8 if parent else None,
        "name": name,
        "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": "2000000000",
        "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
    }


def test_the_report_says_per_trace_what_is_missing_and_strict_exits_1(tmp_path: Path) -> None:
    # a model call that recorded usage but no content, and a tool with no arguments and no
    # schema anywhere in the run: the run's output and the call's arguments are missing
    gappy = tmp_path / "gappy.jsonl"
    gappy.write_text(
        _otlp(
            [
                _span("a1", "invoke_agent helper", None),
                _span("b2", "chat gpt-4o-mini", "a1", **{"gen_ai.usage.input_tokens": 12}),
                _span("c3", "execute_tool lookup", "a1"),
            ]
        )
    )
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["import", str(gappy), "--out", str(out), "--strict"])
    assert result.exit_code == 1, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert f"trace {'ab' * 16}: tool calls without arguments (1), no output (1)" in lines
    assert "1 of 1 traces lack something: tool calls without arguments in 1, no output in 1" in (
        lines
    )
    assert "wrote 1 traces" in result.output  # written all the same
    again = ["import", str(gappy), "--out", str(out), "--overwrite"]
    assert runner.invoke(app, again).exit_code == 0
    whole = str(FRAMEWORKS / "strands_default" / "spans.jsonl")
    result = runner.invoke(app, ["import", whole, "--out", str(out), "--overwrite", "--strict"])
    assert result.exit_code == 0, result.output
    assert "lack something" not in result.output


def test_strict_exits_1_on_a_record_that_could_not_be_read(tmp_path: Path) -> None:
    lines = (FIXTURES / "openai_v2.jsonl").read_text().splitlines()
    source = tmp_path / "spans.jsonl"
    source.write_text("\n".join([*lines, "{not json"]) + "\n")
    out = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["import", str(source), "--out", str(out)]).exit_code == 0
    strict = ["import", str(source), "--out", str(out), "--overwrite", "--strict"]
    assert runner.invoke(app, strict).exit_code == 1


def test_a_trace_that_recovered_nothing_is_reported_and_scores_nothing(tmp_path: Path) -> None:
    # spans no convention knows (an HTTP server's): a trace with no steps and no output
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "POST /ask",
        "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": "2000000000",
        "attributes": [{"key": "http.route", "value": {"stringValue": "/ask"}}],
    }
    source = tmp_path / "spans.jsonl"
    source.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    [trace] = [t for t in read_otel(source) if isinstance(t, Trace)]
    assert trace.metadata["missing"] == {"output": 1, "model_call": 1}
    results = tmp_path / "results.json"
    evaluated = runner.invoke(
        app,
        [
            "evaluate",
            str(source),
            "--format",
            "otel",
            "--suite",
            "behavior",
            "--db",
            str(tmp_path / "runs.db"),
            "--jobs",
            "1",
            "--no-progress",
            "--json",
            str(results),
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    [sample] = json.loads(results.read_text())["samples"]
    assert sample["composite"] is None and sample["recommendation"] is None
    assert sample["coverage"] == 0
    assert set(sample["metrics"].values()) == {None}
    assert "accept" not in evaluated.output
    assert "coverage 0%: no weighted metric was measured" in " ".join(evaluated.output.split())
