"""``agentgauge export-otel``: a run's scores as gen_ai.evaluation.result events, parented to
the root span of each evaluated run, in OTLP/JSON logs that protobuf's own parser accepts."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "otel"
runner = CliRunner()


def _root_span(name: str) -> tuple[str, str]:
    """The trace id and span id of the fixture's span without a parent."""
    for line in (FIXTURES / name).read_text().splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    if "parentSpanId" not in span:
                        return span["traceId"], span["spanId"]
    raise AssertionError("no root span")


def _attributes(record: dict[str, object]) -> dict[str, object]:
    return {
        a["key"]: next(iter(a["value"].values()))  # type: ignore[index]
        for a in record["attributes"]  # type: ignore[attr-defined]
    }


def test_scores_go_back_as_evaluation_events_on_the_root_spans(tmp_path: Path) -> None:
    db, out = tmp_path / "a.db", tmp_path / "scores.jsonl"
    files = [str(FIXTURES / n) for n in ("pydantic_ai.jsonl", "openai_agents.jsonl")]
    common = ["--db", str(db), "--jobs", "1", "--no-progress", "--format", "otel"]
    result = runner.invoke(app, ["evaluate", *files, *common])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        (run,) = store.list_runs()
        samples = {s.trace_id: s for s in store.iter_samples(run.id)}
    result = runner.invoke(app, ["export-otel", run.id, "--out", str(out), "--db", str(db)])
    assert result.exit_code == 0, result.output
    requests = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(requests) == 2
    for request, fixture in zip(
        requests, ("pydantic_ai.jsonl", "openai_agents.jsonl"), strict=True
    ):
        (resource_logs,) = request["resourceLogs"]
        resource = _attributes(resource_logs["resource"])
        assert resource["agentgauge.run.id"] == run.id
        sample = samples[str(resource["agentgauge.sample.id"])]
        records = resource_logs["scopeLogs"][0]["logRecords"]
        trace_id, span_id = _root_span(fixture)
        assert {(r["traceId"], r["spanId"]) for r in records} == {(trace_id, span_id)}
        assert {r["eventName"] for r in records} == {"gen_ai.evaluation.result"}
        by_name = {str(_attributes(r)["gen_ai.evaluation.name"]): _attributes(r) for r in records}
        assert list(by_name) == [*sample.values, "agentgauge.composite"]
        for metric, value in sample.values.items():
            event = by_name[metric]
            if value is None:
                assert "gen_ai.evaluation.score.value" not in event
                assert event["gen_ai.evaluation.score.label"] == "not_available"
                assert event["gen_ai.evaluation.explanation"] == sample.reasons[metric]
            else:
                assert event["gen_ai.evaluation.score.value"] == pytest.approx(value)
        composite = by_name["agentgauge.composite"]
        assert composite["gen_ai.evaluation.score.value"] == pytest.approx(sample.composite)
        assert composite["gen_ai.evaluation.score.label"] == sample.band


@pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.proto") is None, reason="the otel extra"
)
def test_the_events_parse_as_an_otlp_logs_request(tmp_path: Path) -> None:
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    db, out = tmp_path / "a.db", tmp_path / "scores.jsonl"
    common = ["--db", str(db), "--jobs", "1", "--no-progress", "--format", "otel"]
    result = runner.invoke(app, ["evaluate", str(FIXTURES / "pydantic_ai.jsonl"), *common])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        (run,) = store.list_runs()
    assert (
        runner.invoke(app, ["export-otel", run.id, "--out", str(out), "--db", str(db)]).exit_code
        == 0
    )
    text = out.read_text()
    # OTLP/JSON writes ids in hex; protobuf's own JSON mapping wants base64
    doc = json.loads(text)
    for record in doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
        for key in ("traceId", "spanId"):
            record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    request = Parse(json.dumps(doc), ExportLogsServiceRequest())
    records = request.resource_logs[0].scope_logs[0].log_records
    assert all(r.event_name == "gen_ai.evaluation.result" for r in records)
    assert records[0].span_id.hex() == _root_span("pydantic_ai.jsonl")[1]


def test_an_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    Store(db).close()
    result = runner.invoke(
        app, ["export-otel", "nope", "--out", str(tmp_path / "x"), "--db", str(db)]
    )
    assert result.exit_code == 2
    assert "nope" in result.output
