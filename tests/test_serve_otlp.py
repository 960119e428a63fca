"""The live OTLP receiver: a real pydantic-ai app exports its spans with the OTel SDK's
OTLP/HTTP exporter to the receiver on 127.0.0.1, and each run is scored into the store as it
ends. Other clients post OTLP/JSON (gzip or not) by hand."""

from __future__ import annotations

import gzip
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the dev extra")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import load_suite
from agentgauge.serve.otlp import LiveRun, ReceiverError, ReceiverSettings
from agentgauge.store import Store
from instrumented_app import ANSWER, run_planner

FIXTURES = Path(__file__).parent / "fixtures" / "otel"
JSON = {"Content-Type": "application/json"}


def _receiver(db: Path, **settings: object) -> LiveRun:
    options = ReceiverSettings(port=0, **settings)  # type: ignore[arg-type]
    return LiveRun(load_suite("behavior"), db, options).start()


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_a_pydantic_ai_app_exporting_with_the_otlp_exporter_is_scored(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    live = _receiver(db)
    provider = TracerProvider(resource=Resource.create({"service.name": "tides-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{live.url}/v1/traces")))
    run_planner(provider)
    run_planner(provider)
    assert provider.force_flush()
    provider.shutdown()
    run_id = live.stop()
    with Store(db) as store:
        run = store.get_run(run_id)
        assert run.kind == "live"
        samples = list(store.iter_samples(run_id, with_trace=True))
    assert len(samples) == 2
    for sample in samples:
        trace = sample.trace()
        assert trace is not None
        assert trace.agent == "planner" and trace.output == ANSWER
        assert [c.name for c in trace.tool_calls] == ["ask_researcher", "lookup", "archive"]
        assert trace.metadata["source_format"] == "otlp-proto"
        assert trace.metadata["service_name"] == "tides-app"
        assert trace.usage is not None and trace.usage.input_tokens == 800
        # behaviour metrics on the live run: 4 llm + 3 tool calls + 1 handoff agent steps,
        # r = 3/8 in [0.2, 0.6] -> tool_usage 1.0
        assert sample.values["tool_usage"] == pytest.approx(1.0)
        assert sample.composite is not None and sample.error is None


def test_otlp_json_requests_gzip_or_not_and_bad_requests(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    live = _receiver(db)
    body = (FIXTURES / "layered.otlp.json").read_bytes()
    url = f"{live.url}/v1/traces"
    json_type = {"Content-Type": "application/json"}
    assert _post(url, body, json_type) == (200, b"{}")
    other = body.replace(b"ba8feaab6506d164e11ec1dbbc9a8a20", b"0" * 31 + b"1")
    gzip_headers = {**json_type, "Content-Encoding": "gzip"}
    assert _post(url, gzip.compress(other), gzip_headers) == (200, b"{}")
    status, reply = _post(url, b"{not json", json_type)
    assert status == 400 and b"cannot read the request" in reply
    assert _post(f"{live.url}/v1/metrics", body, json_type)[0] == 404
    run_id = live.stop()
    with Store(db) as store:
        samples = list(store.iter_samples(run_id, with_trace=True))
    assert [s.trace_id for s in samples] == ["ba8feaab6506d164e11ec1dbbc9a8a20", "0" * 31 + "1"]
    for sample in samples:
        trace = sample.trace()
        assert trace is not None and trace.metadata["merged_spans"] == 4


def test_a_trace_whose_root_never_comes_is_closed_when_idle(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    live = _receiver(db, idle_timeout_s=0.2)
    lines = (FIXTURES / "openai_agents.jsonl").read_text().splitlines()
    for line in lines[:-1]:  # the last line holds the root span
        assert _post(f"{live.url}/v1/traces", line.encode(), JSON)[0] == 200
    # the receiver closes the trace on its own while it runs: wait for the sample (bounded)
    samples: list[object] = []
    for _ in range(100):
        with Store(db) as store:
            runs = store.list_runs()
            samples = list(store.iter_samples(runs[0].id)) if runs else []
        if samples:
            break
        time.sleep(0.1)
    assert len(samples) == 1
    live.stop()


def test_the_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    live = _receiver(tmp_path / "a.db")
    port = int(live.url.rsplit(":", 1)[1])
    with pytest.raises(ReceiverError, match=f"cannot listen on 127.0.0.1:{port}"):
        LiveRun(load_suite("behavior"), tmp_path / "b.db", ReceiverSettings(port=port))
    live.stop()


def test_serve_needs_otlp() -> None:
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "give --otlp" in result.output
