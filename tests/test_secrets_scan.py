"""Planted secrets never reach what agentgauge writes: the store (every text and decompressed
blob), the JSON, CSV and HTML reports, the predictions file and the terminal. The metrics see
the trace whole."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.model import Trace
from local_http import serving
from toolcall_samples import READ_FILE_TOOL, deepfabric_sample, write_jsonl

runner = CliRunner()

SECRETS = {
    "params.api_key": "sk-proj-PLANTEDparamsKEY0000000",
    "metadata.OPENAI_API_KEY": "PLANTED-openai-env-value",
    "tool token": "PLANTED-tool-token-value",
    "aws": "AKIAPLANTED000000000",
    "bearer": "PLANTEDbearerTOKEN1234567890",
    "pw": "hunter2",
    "url query": "PLANTEDurlQUERYkey",
    "basic auth": "PLANTEDbasicPASSWORD",
}


@metric("saw_planted_key")
def _saw_planted_key(trace: Trace) -> MetricResult:
    return MetricResult(value=float(trace.params.get("api_key") == SECRETS["params.api_key"]))


def _planted_trace() -> dict[str, object]:
    return {
        "id": "leaky",
        "task": {"id": "t", "input": "look it up", "expected_output": "done"},
        "output": "done",
        "params": {"model": "m", "api_key": SECRETS["params.api_key"]},
        "metadata": {"OPENAI_API_KEY": SECRETS["metadata.OPENAI_API_KEY"]},
        "steps": [
            {
                "index": 0,
                "kind": "tool_call",
                "tool_call": {
                    "name": "login",
                    "arguments": {"token": SECRETS["tool token"], "pw": SECRETS["pw"]},
                },
            },
            {
                "index": 1,
                "kind": "tool_result",
                "content": f'{{"pw": "{SECRETS["pw"]}", "aws": "{SECRETS["aws"]}"}}',
            },
            {
                "index": 2,
                "kind": "llm",
                "content": (
                    f"sent Authorization: Bearer {SECRETS['bearer']} to "
                    f"https://api.example.com/v1?api-key={SECRETS['url query']} and "
                    f"https://alice:{SECRETS['basic auth']}@db.example.com/"
                ),
            },
        ],
    }


def _leaks(text: str) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret in text]


def _store_texts(db: Path) -> Iterator[str]:
    """Every text value of every table, blobs decompressed."""
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        for row in con.execute(f"SELECT * FROM {table}"):  # table names from the schema
            for value in row:
                if isinstance(value, bytes):
                    with suppress(zlib.error):
                        value = zlib.decompress(value)
                    yield value.decode("utf-8", "replace")
                elif isinstance(value, str):
                    yield value
    con.close()


def _scan(folder: Path, terminal: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in folder.iterdir():
        if path.suffix == ".db":
            leaks = [leak for text in _store_texts(path) for leak in _leaks(text)]
        else:
            leaks = _leaks(path.read_text(encoding="utf-8", errors="replace"))
        if leaks:
            found[path.name] = sorted(set(leaks))
    if _leaks(terminal):
        found["terminal"] = _leaks(terminal)
    return found


def test_evaluate_writes_no_planted_secret_and_metrics_see_the_raw_trace(tmp_path: Path) -> None:
    data = tmp_path / "in" / "t.jsonl"
    data.parent.mkdir()
    data.write_text(json.dumps(_planted_trace()) + "\n")
    suite = tmp_path / "in" / "s.toml"
    suite.write_text(
        'name = "s"\nmetrics = ["accuracy", "saw_planted_key"]\n[weights]\naccuracy = 1\n'
    )
    out = tmp_path / "out"
    out.mkdir()
    db = out / "s.db"
    result = runner.invoke(
        app,
        ["evaluate", str(data), "--suite", str(suite), "--db", str(db), "--jobs", "1",
         "--no-progress",
         "--json", str(out / "r.json"), "--csv", str(out / "r.csv"), "--html", str(out / "r.html")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "r.json").read_text())
    shown = runner.invoke(app, ["show", doc["run_id"], "--db", str(db)])
    assert _scan(out, result.output + shown.output) == {}
    # the metrics saw the trace whole
    assert doc["samples"][0]["metrics"]["saw_planted_key"] == 1.0
    # what is stored is still a trace, with the secrets hidden
    blob = sqlite3.connect(db).execute("SELECT trace FROM samples").fetchone()[0]
    stored = json.loads(zlib.decompress(blob))
    assert stored["params"]["api_key"] == "***"
    assert stored["steps"][0]["tool_call"]["arguments"] == {"token": "***", "pw": "***"}


class _Echo(BaseHTTPRequestHandler):
    """A failing server that echoes the request's credentials in its error."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = (
            f"bad request to {self.path} with Authorization: {self.headers.get('Authorization')}"
            f" from https://alice:{SECRETS['basic auth']}@proxy.example.com/"
        ).encode()
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


def test_a_server_echoing_credentials_leaks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = write_jsonl(
        tmp_path / "df.jsonl", [deepfabric_sample(id="df", tools=[READ_FILE_TOOL])]
    )
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("AG_KEY", SECRETS["bearer"])
    with serving(_Echo) as base:
        endpoint = f"{base}/v1?api-version=2024-06-01&api-key={SECRETS['url query']}"
        result = runner.invoke(
            app,
            ["toolcall", "run", "--endpoint", endpoint, "--model", "m", "--dataset", str(dataset),
             "--format", "deepfabric", "--out", str(out / "p.jsonl"), "--api-key-env", "AG_KEY",
             "--max-retries", "0", "--db", str(out / "s.db"), "--jobs", "1", "--no-progress",
             "--json", str(out / "r.json"), "--html", str(out / "r.html")],
        )  # fmt: skip
    # every request failed (exit status 1), and the reports are still written
    assert result.exit_code == 1, result.output
    assert (out / "r.json").is_file() and (out / "r.html").is_file()
    predictions = [json.loads(line) for line in (out / "p.jsonl").read_text().splitlines()]
    # the requests reached the server (the query string kept) and their failures are recorded
    assert predictions and all("api-version=2024-06-01" in p["error"] for p in predictions)
    assert _scan(out, result.output) == {}


def test_import_writes_no_planted_secret_unless_asked_and_keeps_every_type(
    tmp_path: Path,
) -> None:
    source = tmp_path / "in.jsonl"
    trace = _planted_trace()
    steps = trace["steps"]
    assert isinstance(steps, list)
    # a secret-looking argument name over a list, a number and an object: kept as they are
    steps.append(
        {
            "index": 3,
            "kind": "tool_call",
            "tool_call": {
                "name": "rotate",
                "arguments": {"password": ["a", "b"], "token": 7, "secret": {"length": 12}},
            },
        }
    )
    source.write_text(json.dumps(trace) + "\n")
    hidden, kept = tmp_path / "hidden.jsonl", tmp_path / "kept.jsonl"
    args = ["import", str(source), "--format", "native"]
    done = runner.invoke(app, [*args, "--out", str(hidden)])
    assert done.exit_code == 0, done.output
    assert _leaks(hidden.read_text()) == [] and _leaks(done.output) == []
    written = json.loads(hidden.read_text())
    assert written["params"]["api_key"] == "***"
    assert written["steps"][3]["tool_call"]["arguments"] == {
        "password": ["***", "***"],
        "token": 7,
        "secret": {"length": 12},
    }
    assert Trace.model_validate(written).output == "done"
    assert runner.invoke(app, [*args, "--out", str(kept), "--keep-secrets"]).exit_code == 0
    assert sorted(_leaks(kept.read_text())) == sorted(SECRETS)


def test_a_leak_hidden_in_a_written_file_still_costs_safety(tmp_path: Path) -> None:
    from agentgauge.metrics.behavior import Safety

    leaked = {
        "id": "leak",
        "task": {"id": "t", "input": "connect"},
        "output": f"connected with key {SECRETS['params.api_key']}",
    }
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(leaked) + "\n")
    hidden = tmp_path / "hidden.jsonl"
    args = ["import", str(source), "--format", "native", "--out", str(hidden)]
    assert runner.invoke(app, args).exit_code == 0
    rescored = Trace.model_validate_json(hidden.read_text())
    assert rescored.output == "connected with key [credential hidden]"
    # the output is unsafe either way: ×0.5
    safety = Safety()
    assert safety.score(Trace.model_validate(leaked)).value == 0.5
    assert safety.score(rescored).value == 0.5
