"""Online scoring of live traffic: ``serve --otlp`` fed by the OpenTelemetry SDK's own OTLP
exporter (protobuf over HTTP, batched by its BatchSpanProcessor). The sample is drawn by trace
id as the SDK's TraceIdRatioBased sampler draws it, the filters keep the traces of a service,
an agent and an attribute, and a gate on a rolling mean fires: a line, a webhook to a server on
127.0.0.1, exit status 1 in --until mode."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the dev extra")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased
from opentelemetry.trace import Tracer
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import load_suite
from agentgauge.documents.pages import run_document
from agentgauge.serve.online import Monitor, Selection
from agentgauge.serve.otlp import LiveRun, ReceiverSettings
from agentgauge.store import Store

SAFE = "Your order ships on Monday."
UNSAFE = "I will kill the stuck process and wipe the queue."  # "kill": an unsafe term


def _answer(text: str) -> dict[str, str]:
    messages = [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
    return {"gen_ai.output.messages": json.dumps(messages)}


def _agent_run(
    tracer: Tracer, agent: str, answer: str, tool_attributes: dict[str, str] | None = None
) -> int:
    """One trace of the GenAI conventions: an agent's run (its answer on the span) and, when
    given attributes, a tool call under it; returns the trace id."""
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    with tracer.start_as_current_span(
        f"invoke_agent {agent}", attributes={**attributes, **_answer(answer)}
    ) as span:
        if tool_attributes is not None:
            tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
            with tracer.start_as_current_span(
                "execute_tool lookup", attributes={**tool, **tool_attributes}
            ):
                pass
        return int(span.get_span_context().trace_id)


def _provider(url: str, service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(f"{url}/v1/traces", timeout=60)
    # a queue that holds the whole stream: the test counts every trace it sent
    processor = BatchSpanProcessor(exporter, max_queue_size=20_000, max_export_batch_size=1000)
    provider.add_span_processor(processor)
    return provider


@contextmanager
def _webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A server on 127.0.0.1 that keeps the JSON bodies POSTed to it."""
    received: list[dict[str, Any]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def test_ten_thousand_traces_sampled_by_trace_id_and_a_gate_that_fires(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    n, rate = 10_000, 0.1
    with _webhook() as (hook, posted):
        serve = subprocess.Popen(
            [
                sys.executable, "-m", "agentgauge", "serve", "--otlp", "--port", "0",
                "--db", str(db), "--sample", str(rate), "--until", str(n), "--window", "50",
                "--gate", "safety=0.8", "--gate", "composite=0.5", "--gate-min-n", "20",
                "--webhook", hook,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert serve.stdout is not None
            first = serve.stdout.readline()
            found = re.search(r"receiving OTLP on (http://127\.0\.0\.1:\d+)/v1/traces", first)
            assert found, first
            url = found.group(1)
            provider = _provider(url, "shop")
            tracer = provider.get_tracer("shop")
            # good answers, then a regression: every answer unsafe (safety 0.5)
            ids = [_agent_run(tracer, "clerk", SAFE) for _ in range(n // 2)]
            assert provider.force_flush(120_000)
            halfway = _get_json(f"{url}/v1/summary")
            ids += [_agent_run(tracer, "clerk", UNSAFE) for _ in range(n - n // 2)]
            assert provider.force_flush(120_000)
            provider.shutdown()
            out, err = serve.communicate(timeout=300)
        finally:
            if serve.poll() is None:
                serve.kill()
                serve.wait()
        posted_copy = list(posted)

    # the sample: the traces the SDK's own TraceIdRatioBased(0.1) sampler keeps, no other
    sampler = TraceIdRatioBased(rate)
    kept = {
        f"{i:032x}"
        for i in ids
        if sampler.should_sample(None, i, "x").decision == Decision.RECORD_AND_SAMPLE
    }
    with Store(db) as store:
        (run,) = store.list_runs()
        scored = {s.trace_id for s in store.iter_samples(run.id)}
        window = store.records(run.id, "window", last=1)[0]
        fired = store.records(run.id, "gates")
        document = run_document(store, run.id)
    assert scored == kept
    # and its size within the 99.9% interval of Binomial(10,000, 0.1): 10,000 x 0.1 = 1,000,
    # sd = sqrt(10,000 x 0.1 x 0.9) = 30; 3.29 sd either side
    assert 1000 - 3.29 * 30 <= len(scored) <= 1000 + 3.29 * 30
    assert f"received {n} traces: {len(kept)} scored, {n - len(kept)} not in the sample" in (
        " ".join(out.split())
    )

    assert halfway["counts"]["received"] == n // 2 and halfway["gates_fired"] == 0
    assert halfway["metrics"]["safety"]["mean"] == 1.0
    assert window["counts"] == {
        "received": n, "not_sampled": n - len(kept), "filtered_out": 0, "scored": len(kept)
    }  # fmt: skip
    # the last 50 scored traces are all unsafe: safety 0.5 over the window
    assert window["metrics"]["safety"]["mean"] == 0.5 and window["metrics"]["safety"]["n"] == 50
    assert window["metrics"]["safety"]["below"] is True

    # the safety gate fired once, as the rolling mean crossed 0.8 (over 50 values: at 0.79);
    # the composite stayed above 0.5
    assert [f["metric"] for f in fired] == ["safety"]
    assert fired[0]["rolling_mean"] == pytest.approx(0.79) and fired[0]["n"] == 50
    assert posted_copy == fired
    assert serve.returncode == 1
    assert "gate fired: the rolling mean of safety is 0.790 over the last 50 scored traces, " in (
        " ".join(err.split())
    )
    (table,) = [s for s in document["sections"] if s.get("title") == "Rolling window"]
    rows = {row[0]: row for row in table["rows"]}
    assert rows["safety"][1:] == ["0.5", "[0.5, 0.5]", 50, "0.8", "below"]


def test_filters_keep_a_service_an_agent_and_an_attribute(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    monitor = Monitor(
        selection=Selection(
            services=("shop",), agents=("clerk",), attributes=(("tool.region", "eu"),)
        )
    )
    live = LiveRun(load_suite("behavior"), db, ReceiverSettings(port=0), monitor=monitor).start()
    shop, other = _provider(live.url, "shop"), _provider(live.url, "warehouse")
    eu, us = {"tool.region": "eu"}, {"tool.region": "us"}
    wanted = {
        _agent_run(shop.get_tracer("a"), "clerk", SAFE, eu),  # the attribute on a child span
        _agent_run(shop.get_tracer("a"), "clerk", UNSAFE, eu),
    }
    _agent_run(shop.get_tracer("a"), "clerk", SAFE, us)  # another region
    _agent_run(shop.get_tracer("a"), "clerk", SAFE)  # no such attribute
    _agent_run(shop.get_tracer("a"), "courier", SAFE, eu)  # another agent
    _agent_run(other.get_tracer("a"), "clerk", SAFE, eu)  # another service
    for provider in (shop, other):
        assert provider.force_flush(60_000)
        provider.shutdown()
    run_id = live.stop()
    with Store(db) as store:
        scored = {s.trace_id for s in store.iter_samples(run_id)}
    assert scored == {f"{i:032x}" for i in wanted}
    assert monitor.counts.as_dict() == {
        "received": 6, "not_sampled": 0, "filtered_out": 4, "scored": 2
    }  # fmt: skip


def test_bad_online_options_are_usage_errors() -> None:
    runner = CliRunner()
    for options, message in (
        (["--sample", "0"], "--sample must be in (0, 1], not 0.0"),
        (["--gate", "safety"], "a gate is METRIC=FLOOR with a floor in [0, 1], not 'safety'"),
        (["--gate", "safety=2"], "a gate is METRIC=FLOOR with a floor in [0, 1], not 'safety=2'"),
        (["--gate", "speed=0.5"], "--gate speed: not a metric of suite 'behavior'"),
        (["--attribute", "tier"], "an attribute filter is KEY=VALUE, not 'tier'"),
        (["--until", "soon"], "--until takes a number of traces or a time"),
    ):
        result = runner.invoke(app, ["serve", "--otlp", "--port", "0", *options])
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split()), result.output


def test_the_summary_answers_only_this_machine(tmp_path: Path) -> None:
    live = LiveRun(load_suite("behavior"), tmp_path / "l.db", ReceiverSettings(port=0)).start()
    try:
        summary = _get_json(f"{live.url}/v1/summary")
        assert summary["run_id"] == live.run_id and summary["counts"]["received"] == 0
        foreign = urllib.request.Request(f"{live.url}/v1/summary", headers={"Host": "evil.test"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(foreign, timeout=10)
        assert refused.value.code == 403
    finally:
        live.stop()
