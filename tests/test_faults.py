"""Fault injection through the real paths: hostile HTTP servers on 127.0.0.1 against the model
runner, the main process killed under its workers, two writers on one store, caps on line and
response sizes, and no model download unless asked."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.jsonl import ReadError, read_traces
from agentgauge.model import Trace
from test_cli import _lines, _slow_env, _start_slow_run, _suite
from toolcall_samples import READ_FILE_TOOL, deepfabric_sample, write_jsonl
from toolcall_server import record_retry_waits

runner = CliRunner()
HUGE = 3 * 1024 * 1024


def _reply(conn: socket.socket, status: str, body: bytes, extra: str = "") -> None:
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
    conn.sendall(head.encode() + body)


def _serve_one(conn: socket.socket, mode: str, stop: threading.Event) -> None:
    with conn:
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        if mode == "429":
            _reply(conn, "429 Too Many Requests", b"slow down", "Retry-After: 999999999\r\n")
        elif mode == "500":
            _reply(conn, "500 Internal Server Error", b"boom")
        elif mode == "garbage":
            conn.sendall(b"\x00\xffNOT HTTP AT ALL\r\n\r\n" * 10)
        elif mode == "drop":
            conn.shutdown(socket.SHUT_RDWR)
        elif mode == "slowloris":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{")
            while not stop.wait(0.2):
                try:
                    conn.sendall(b" ")
                except OSError:
                    return
        elif mode == "hugeint":
            _reply(conn, "200 OK", b'{"choices": [], "n": ' + b"9" * 5000 + b"}")
        elif mode == "deep":
            _reply(conn, "200 OK", b'{"choices": ' + b"[" * 5000 + b"]" * 5000 + b"}")
        elif mode == "surrogate":
            message = b'{"role": "assistant", "content": "bad \\ud800 answer"}'
            _reply(conn, "200 OK", b'{"choices": [{"index": 0, "message": ' + message + b"}]}")
        elif mode == "huge":
            with suppress(OSError):  # the client stops reading at its size cap
                _reply(conn, "200 OK", b'{"choices": [' + b" " * HUGE + b"]}")
        elif mode == "huge-chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            piece = b" " * 65536
            try:
                for _ in range(HUGE // len(piece) + 2):
                    conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                conn.sendall(b"0\r\n\r\n")
            except OSError:
                return


@contextmanager
def _hostile(mode: str) -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve_one, args=(conn, mode, stop), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("429", "HTTP 429"),
        ("500", "HTTP 500"),
        ("garbage", ""),
        ("drop", ""),
        ("slowloris", "no complete response"),
        ("huge", "larger than 1048576 bytes"),
        ("hugeint", "more than 4300 digits"),
        ("deep", "nested too deeply"),
        ("huge-chunked", "larger than 1048576 bytes"),
    ],
)
def test_a_hostile_server_fails_each_sample_and_the_run_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, error: str
) -> None:
    waits = record_retry_waits(monkeypatch)
    monkeypatch.setenv("AGENTGAUGE_MAX_RESPONSE_BYTES", str(1024 * 1024))
    rows = [deepfabric_sample(id=f"s{i}", tools=[READ_FILE_TOOL]) for i in range(2)]
    dataset = write_jsonl(tmp_path / "d.jsonl", rows)
    out = tmp_path / "p.jsonl"
    with _hostile(mode) as base:
        result = runner.invoke(
            app,
            ["toolcall", "run", "--endpoint", base, "--model", "m", "--dataset", str(dataset),
             "--format", "deepfabric", "--out", str(out), "--timeout", "1", "--max-retries", "1",
             "--no-score", "--no-progress"],
        )  # fmt: skip
    # every request failed: said, with exit status 1, once every sample has its line
    assert result.exit_code == 1, result.output
    assert "every request failed" in result.output
    predictions = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(predictions) == 4  # two samples of two turns each
    assert all("result" not in p and error in p["error"] for p in predictions), predictions
    # an absurd Retry-After is capped, never waited out
    assert all(w <= 120.0 for w in waits)


def test_a_degenerate_answer_is_written_and_every_line_is_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_retry_waits(monkeypatch)
    dataset = write_jsonl(tmp_path / "d.jsonl", [deepfabric_sample(id="s", tools=[READ_FILE_TOOL])])
    out = tmp_path / "p.jsonl"
    with _hostile("surrogate") as base:
        result = runner.invoke(
            app,
            ["toolcall", "run", "--endpoint", base, "--model", "m", "--dataset", str(dataset),
             "--format", "deepfabric", "--out", str(out), "--db", str(tmp_path / "s.db"),
             "--jobs", "1", "--no-progress"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2 and all(p["result"]["content"] == "bad \ud800 answer" for p in lines)


def test_sigkill_of_the_main_process_ends_its_workers(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    proc = _start_slow_run(tmp_path, 3000, db)
    try:
        assert proc.poll() is None
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert len(children) >= 2  # the pool's workers
        os.kill(proc.pid, signal.SIGKILL)  # the main process only, not its group
        proc.wait()
        deadline = time.monotonic() + 60
        alive = list(children)
        while alive and time.monotonic() < deadline:
            alive = [c for c in alive if Path(f"/proc/{c}").exists() and not _zombie(c)]
            time.sleep(0.1)
        assert alive == []
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _zombie(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def test_two_writers_on_one_store_keep_every_sample(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    env = _slow_env(tmp_path)
    suite = str(_suite(tmp_path, "slow_plugin"))
    procs = []
    for name in ("a", "b"):
        data = tmp_path / f"{name}.jsonl"
        data.write_text("\n".join(_lines(300)) + "\n")
        cmd = [sys.executable, "-m", "agentgauge", "evaluate", str(data), "--suite", suite,
               "--db", str(db), "--jobs", "1", "--batch-size", "20", "--no-progress"]  # fmt: skip
        procs.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE))
    for proc in procs:
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT run_id, COUNT(*) FROM samples GROUP BY run_id").fetchall()
    assert sorted(n for _, n in rows) == [300, 300]
    assert {s for (s,) in con.execute("SELECT status FROM runs")} == {"completed"}


def test_a_line_over_the_cap_is_an_error_of_that_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTGAUGE_MAX_LINE_BYTES", "4096")
    short = json.dumps({"id": "a", "task": {"id": "t"}})
    long = json.dumps({"id": "b", "task": {"id": "t"}, "output": "x" * 100_000})
    path = tmp_path / "t.jsonl"
    last = json.dumps({"id": "c", "task": {"id": "t"}})
    path.write_text(f"{short}\n{long}\n{last}\n")
    items = list(read_traces(path))
    assert [t.id for t in items if isinstance(t, Trace)] == ["a", "c"]
    [error] = [e for e in items if isinstance(e, ReadError)]
    assert error.line == 2 and "longer than 4096 bytes" in error.message


def test_no_model_download_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    assert runner.invoke(app, ["--allow-download", "metrics"]).exit_code == 0
    assert "HF_HUB_OFFLINE" not in os.environ
    assert runner.invoke(app, ["metrics"]).exit_code == 0
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_a_missing_model_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgauge.metrics.text import BertScorer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match="is not installed: run once with 'agentgauge --allow-"):
        BertScorer("agentgauge-test/no-such-model")


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db) as con:
            return int(con.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_sigint_sigterm_sigkill_during_the_run_and_its_resumes_lose_nothing(
    tmp_path: Path,
) -> None:
    n = 1200
    db = tmp_path / "k.db"
    env = _slow_env(tmp_path)
    proc = _start_slow_run(tmp_path, n, db)
    run_id = ""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        os.killpg(proc.pid, sig)
        proc.wait(timeout=120)
        with sqlite3.connect(db) as con:
            run_id, status = con.execute("SELECT id, status FROM runs").fetchone()
        assert status == "running" and _count(db) < n  # interrupted, not finished
        before = _count(db)
        cmd = [sys.executable, "-m", "agentgauge", "evaluate", "--db", str(db), "--resume",
               run_id, "--jobs", "2", "--batch-size", "50", "--no-progress"]  # fmt: skip
        proc = subprocess.Popen(
            cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 60
        while proc.poll() is None and _count(db) < before + 100 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    out = tmp_path / "o.json"
    shown = runner.invoke(app, ["show", run_id, "--db", str(db), "--json", str(out)])
    assert shown.exit_code == 0, shown.output
    doc = json.loads(out.read_text())
    # every sample exactly once, with the value an uninterrupted run gives it
    assert [s["id"] for s in doc["samples"]] == [f"r{i}" for i in range(n)]
    assert [s["metrics"]["slow_plugin"] for s in doc["samples"]] == [(i % 5) / 4 for i in range(n)]
    assert doc["status"] == "completed"
