"""The live receiver stores what it acknowledges and takes only what an OTLP exporter sends: a
receiver killed with SIGKILL loses no acknowledged span (``serve --resume``), SIGTERM scores
what is open, a store that cannot be written is answered 503, bursts of connections are not
reset, bodies are capped, and web pages (foreign Origin, Host, content types) are refused."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import load_suite
from agentgauge.io.otel import SpanStream
from agentgauge.model import Trace
from agentgauge.serve.otlp import LiveRun, ReceiverError, ReceiverSettings
from agentgauge.store import Store

FIXTURE = Path(__file__).parent / "fixtures" / "otel" / "openai_agents.jsonl"
TRACE_ID = "d9c772031009b51e48925a228f7f1f5c"
JSON = {"Content-Type": "application/json"}


def _trace_lines(i: int) -> list[bytes]:
    """The 13 requests of one traced agent run (the last holds its root span), as trace ``i``."""
    text = FIXTURE.read_text().replace(TRACE_ID, f"{i + 1:032x}")
    return [line.encode() for line in text.splitlines()]


def _whole_trace() -> Trace:
    """The run the 13 requests make when nothing stops the receiver."""
    stream = SpanStream("otlp")
    items = [
        item
        for number, line in enumerate(_trace_lines(0), 1)
        for item in stream.add(json.loads(line), number)
    ]
    items += list(stream.finish())
    (trace,) = [item for item in items if isinstance(item, Trace)]
    return trace


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("POST", "/v1/traces", body, headers=JSON if headers is None else headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _receiver(db: Path, **settings: Any) -> LiveRun:
    return LiveRun(load_suite("behavior"), db, ReceiverSettings(port=0, **settings)).start()


def _serve(
    db: Path, *args: str, limit: int | None = None
) -> tuple[subprocess.Popen[str], str, str]:
    """``agentgauge serve --otlp`` in a child process; its URL and run id."""

    def limited() -> None:
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    cmd = [sys.executable, "-m", "agentgauge", "serve", "--otlp", "--port", "0", "--db", str(db)]
    child = subprocess.Popen(
        [*cmd, "--idle-timeout", "600", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limited,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert "receiving OTLP on" in line, line + (child.stderr.read() if child.stderr else "")
    url = line.split(" on ", 1)[1].split("/v1/traces", 1)[0]
    run_id = line.split("into run ", 1)[1].split(";", 1)[0]
    return child, url, run_id


def test_spans_acknowledged_before_a_kill_are_scored_when_serve_resumes(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    child, url, run_id = _serve(db)
    acknowledged = 0
    for i in range(4):
        for body in _trace_lines(i)[:-1]:  # each run waits for its root span
            acknowledged += _post(url, body)[0] == 200
    child.kill()  # SIGKILL: no chance to save anything then
    child.wait(30)
    assert acknowledged == 4 * 12
    live = _receiver(db, resume=run_id)
    for i in range(4):
        assert _post(live.url, _trace_lines(i)[-1])[0] == 200
    assert live.stop() == run_id
    with Store(db) as store:
        run = store.get_run(run_id)
        samples = list(store.iter_samples(run_id, with_trace=True))
    assert run.status == "completed" and run.kind == "live"
    assert sorted(s.trace_id or "" for s in samples) == [f"{i + 1:032x}" for i in range(4)]
    whole = _whole_trace()
    for sample in samples:
        trace = sample.trace()
        # the whole run, from the spans stored before the kill and the root after it
        assert trace is not None and sample.error is None
        assert [s.kind for s in trace.steps] == [s.kind for s in whole.steps]
        assert trace.output == whole.output
    # resuming again scores nothing twice
    again = _receiver(db, resume=run_id)
    again.stop()
    with Store(db) as store:
        assert len(list(store.iter_samples(run_id))) == 4


def test_sigterm_scores_the_open_traces_and_finishes_the_run(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    child, url, run_id = _serve(db)
    for i in range(3):
        for body in _trace_lines(i)[:-1]:
            assert _post(url, body)[0] == 200
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    with Store(db) as store:
        assert store.get_run(run_id).status == "completed"
        assert len(list(store.iter_samples(run_id))) == 3


def test_a_store_that_cannot_be_written_is_answered_503_and_nothing_acknowledged_is_lost(
    tmp_path: Path,
) -> None:
    db = tmp_path / "live.db"
    child, url, run_id = _serve(db, limit=400 * 1024)
    statuses = []
    for i in range(40):
        for body in _trace_lines(i)[:-1]:
            statuses.append(_post(url, body)[0])
            if statuses[-1] != 200:
                break
        if statuses[-1] != 200:
            break
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert statuses[-1] == 503 and "cannot be stored" in err
    with sqlite3.connect(db) as con:
        stored = con.execute(
            "SELECT COUNT(*) FROM records WHERE run_id = ? AND stream = 'otlp'", (run_id,)
        ).fetchone()[0]
    assert stored == statuses.count(200)


def test_a_file_that_is_not_a_store_is_refused_at_start(tmp_path: Path) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("not a database\n" * 100)
    with pytest.raises(ReceiverError, match="cannot use the store"):
        _receiver(db)
    result = CliRunner().invoke(app, ["serve", "--otlp", "--port", "0", "--db", str(db)])
    assert result.exit_code == 2 and "cannot use the store" in result.output


def test_a_burst_of_connections_is_not_reset(tmp_path: Path) -> None:
    live = _receiver(tmp_path / "live.db")
    body = _trace_lines(0)[0]
    results: list[int | str] = []
    start = threading.Barrier(200)

    def one() -> None:
        start.wait()
        try:
            results.append(_post(live.url, body)[0])
        except OSError as exc:
            results.append(type(exc).__name__)

    threads = [threading.Thread(target=one) for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    live.stop()
    assert results.count(200) == 200, [r for r in results if r != 200][:5]


def test_bodies_are_capped_and_bad_ones_answered(tmp_path: Path) -> None:
    live = _receiver(tmp_path / "live.db", max_request_bytes=1 << 20)
    bomb = gzip.compress(b" " * (8 << 20) + b"{}")  # 8 MB of blanks in 8 KB
    assert len(bomb) < 64 << 10
    gz = {**JSON, "Content-Encoding": "gzip"}
    assert _post(live.url, bomb, gz)[0] == 413
    assert _post(live.url, b"{}" + b" " * (2 << 20))[0] == 413
    status, reply = _post(live.url, b"not gzip at all", gz)
    assert status == 400 and b"not gzip" in reply
    status, reply = _post(live.url, b"[" * 100_000 + b"]" * 100_000)
    assert status == 400 and b"nested too deeply" in reply
    live.stop()


def test_requests_a_web_page_can_send_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    live = _receiver(db)
    body = _trace_lines(0)[-1]
    port = live.url.rsplit(":", 1)[1]
    for headers, status in [
        ({"Content-Type": "text/plain"}, 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ({}, 415),
        ({**JSON, "Origin": "http://evil.example"}, 403),
        ({**JSON, "Origin": "null"}, 403),
        ({**JSON, "Host": f"evil.example:{port}"}, 403),
    ]:
        assert _post(live.url, body, headers)[0] == status, headers
    # an exporter on this machine, and a page served by the receiver's own origin, are taken
    assert _post(live.url, body, {**JSON, "Host": f"localhost:{port}"})[0] == 200
    run_id = live.stop()
    with Store(db) as store:
        assert len(list(store.iter_samples(run_id))) == 1


def test_a_receiver_other_machines_reach_needs_a_token(tmp_path: Path) -> None:
    with pytest.raises(ReceiverError, match="give a --token"):
        _receiver(tmp_path / "a.db", host="0.0.0.0")
    live = _receiver(tmp_path / "b.db", host="0.0.0.0", token="s3cret-token")
    url = live.url.replace("0.0.0.0", "127.0.0.1")
    body = _trace_lines(0)[-1]
    assert _post(url, body)[0] == 401
    assert _post(url, body, {**JSON, "Authorization": "Bearer wrong"})[0] == 401
    assert _post(url, body, {**JSON, "Authorization": "Bearer s3cret-token"})[0] == 200
    live.stop()
    os.environ.pop("AGENTGAUGE_RECEIVER_TOKEN", None)
    result = CliRunner().invoke(
        app, ["serve", "--otlp", "--host", "0.0.0.0", "--port", "0", "--db", str(tmp_path / "c.db")]
    )
    assert result.exit_code == 2 and "--token" in result.output


def test_the_viewer_refuses_a_foreign_host_and_many_ranges(tmp_path: Path) -> None:
    from viewer_server import record_runs, viewer

    db, ids = record_runs(tmp_path)
    with viewer(db) as url:
        host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)

        def get(path: str, headers: dict[str, str]) -> tuple[int, bytes]:
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            try:
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                return response.status, response.read()
            finally:
                connection.close()

        status, body = get("/api/runs", {"Host": "evil.example"})
        assert status == 400 and ids[0].encode() not in body
        assert get("/api/runs", {"Host": f"localhost:{port}"})[0] == 200
        ranges = "&".join(f"range=composite:0.{i % 10}:1" for i in range(1200))
        status, body = get(f"/api/samples?run={ids[0]}&{ranges}", {})
        assert status == 200, body[:200]
        doc = json.loads(body)
        assert doc["rows"] and all(r["composite"] >= 0.9 for r in doc["rows"])
        many = "&".join(f"range=m{i}:0:1" for i in range(100))
        status, body = get(f"/api/samples?run={ids[0]}&{many}", {})
        assert status == 400 and b"at most 64 metrics" in body
