"""One layered export (three OpenAI instrumentations under an HTTP server span) in every span
format the importer reads, plain and gzip-compressed, told apart by content or named.

The files were written from the same spans by tests/fixtures/make_otel_fixtures.py: the
Collector file exporter's lines, one whole OTLP/JSON request, the SDK console exporter's list,
an OTLP protobuf request, Tempo's trace API JSON and Jaeger's query-API JSON.
"""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.importers import IMPORTERS, get_importer
from agentgauge.io.jsonl import ReadError, read_traces
from agentgauge.io.otel import read_otel
from agentgauge.model import StepKind, Trace

FIXTURES = Path(__file__).parent / "fixtures" / "otel"
HAS_PROTO = importlib.util.find_spec("opentelemetry.proto") is not None
FILES = {
    "layered.jsonl": "otlp-json",
    "layered.otlp.json": "otlp-json",
    "layered.sdk.json": "otlp-json",
    "layered.pb": "otlp-proto",
    "layered.tempo.json": "tempo",
    "layered.jaeger.json": "jaeger",
}
needs_proto = pytest.mark.skipif(not HAS_PROTO, reason="opentelemetry-proto is the otel extra")


def _cases() -> list[object]:
    return [
        pytest.param(name, marks=needs_proto) if name.endswith(".pb") else name for name in FILES
    ]


def _check_layered(trace: Trace) -> None:
    """What every format of the layered export must give: one step per model call."""
    assert [s.kind for s in trace.steps] == [
        StepKind.llm,
        StepKind.tool_call,
        StepKind.tool_call,
        StepKind.tool_result,
        StepKind.tool_result,
        StepKind.llm,
    ]
    assert [(c.id, c.name, c.arguments) for c in trace.tool_calls] == [
        ("call_paris", "get_weather", {"city": "Paris"}),
        ("call_rome", "get_weather", {"city": "Rome"}),
    ]
    assert trace.usage is not None
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (150, 24)
    assert trace.id == "ba8feaab6506d164e11ec1dbbc9a8a20"
    assert trace.metadata["span_count"] == 7
    assert trace.metadata["merged_spans"] == 4
    assert trace.output == "Paris: 18°C and sunny. Rome: 24°C and clear."
    assert [t.name for t in trace.task.tools] == ["get_weather"]


def _only(items: list[Trace | ReadError]) -> Trace:
    assert len(items) == 1 and isinstance(items[0], Trace), items
    return items[0]


@pytest.mark.parametrize("name", _cases())
def test_every_format_is_told_apart_by_its_content(name: str) -> None:
    _check_layered(_only(list(read_otel(FIXTURES / name))))


@pytest.mark.parametrize("name", _cases())
def test_each_format_named_reads_the_same(name: str) -> None:
    _check_layered(_only(list(get_importer(FILES[name])(FIXTURES / name))))


@pytest.mark.parametrize("name", _cases())
def test_gzip_is_told_by_its_bytes_not_its_name(name: str, tmp_path: Path) -> None:
    data = gzip.compress((FIXTURES / name).read_bytes())
    for target in (tmp_path / f"{name}.gz", tmp_path / "export.bin"):
        target.write_bytes(data)
        _check_layered(_only(list(read_otel(target))))


def test_scopes_and_service_survive_jaeger_and_tempo() -> None:
    for name in ("layered.tempo.json", "layered.jaeger.json"):
        trace = _only(list(read_otel(FIXTURES / name)))
        assert trace.metadata["scopes"] == [
            "openinference.instrumentation.openai",
            "opentelemetry.instrumentation.openai.v1",
            "opentelemetry.instrumentation.openai_v2",
            "weather.app",
        ]
        assert trace.metadata["service_name"] == "weather-layered"


def test_a_named_format_that_does_not_fit_is_an_error_naming_it() -> None:
    items = list(get_importer("jaeger")(FIXTURES / "layered.otlp.json"))
    assert len(items) == 1 and isinstance(items[0], ReadError)
    assert "not a Jaeger export" in items[0].message
    items = list(get_importer("tempo")(FIXTURES / "layered.jaeger.json"))
    assert isinstance(items[0], ReadError) and "not a Tempo export" in items[0].message


@needs_proto
def test_bytes_that_are_no_protobuf_request_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "noise.pb"
    path.write_bytes(b"\x00\x01garbage\xff\xfe")
    (error,) = list(read_otel(path))
    assert isinstance(error, ReadError)
    assert error.line == 1 and "not an OTLP protobuf export request" in error.message


def test_span_importers_take_the_span_options() -> None:
    span_options = {"group_by": "trace", "task_id_attribute": "gen_ai.conversation.id"}
    for name in ("otel", "otlp-json", "otlp-proto", "jaeger", "tempo", "openai-agents"):
        options = IMPORTERS.get(name).options
        assert {k: options[k] for k in span_options} == span_options
        assert options["log_files"] == ()


def test_cli_import_with_a_named_format(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        ["import", str(FIXTURES / "layered.jaeger.json"), "--format", "jaeger", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    (trace,) = list(read_traces(out))
    assert isinstance(trace, Trace)
    _check_layered(trace)


MLFLOW_TRACE = (
    Path(__file__).parent / "fixtures" / "frameworks" / "mlflow_tracing_api" / "trace.json"
)


def test_cli_import_of_an_mlflow_trace_gives_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    for named in ([], ["--format", "mlflow"]):
        args = ["import", str(MLFLOW_TRACE), "--out", str(out), "--overwrite", *named]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "mlflow" in result.output and "wrote 1 traces" in result.output
        [trace] = read_traces(out)
        assert trace.metadata["source_format"] == "mlflow"
        assert trace.agent == "weather_agent"
        assert [s.kind.value for s in trace.steps] == [
            "llm",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "llm",
        ]
    not_mlflow = str(FIXTURES / "layered.jsonl")
    args = ["import", not_mlflow, "--out", str(out), "--overwrite", "--format", "mlflow"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert "not an MLflow trace" in result.output
