"""``agentgauge view``'s server: its JSON API over a real store, served by uvicorn on
127.0.0.1, checked against the store read directly and against the library's own comparison;
and the command itself in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.documents.compare import compare_runs
from agentgauge.store import Store
from viewer_server import DEMO, SECRET, record_runs, viewer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, list[str]]]:
    db, ids = record_runs(tmp_path_factory.mktemp("web"))
    with viewer(db) as url:
        yield url, db, ids


def _get(url: str, path: str, **params: Any) -> Any:
    query = urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(f"{url}{path}?{query}", timeout=60) as response:
        return json.load(response)


def _error(url: str, path: str, **params: Any) -> tuple[int, str]:
    with pytest.raises(urllib.error.HTTPError) as caught:
        _get(url, path, **params)
    return caught.value.code, json.load(caught.value)["error"]


def _categories() -> dict[str, str]:
    """The demo traces' task categories by trace id, read from the file."""
    with DEMO.open(encoding="utf-8") as fh:
        return {t["id"]: t["task"]["category"] for t in map(json.loads, fh)}


def test_runs_list(served: tuple[str, Path, list[str]]) -> None:
    url, db, ids = served
    runs = _get(url, "api/runs")["runs"]
    assert [r["id"] for r in runs] == ids[::-1]  # newest first
    demo = runs[-1]
    with Store(db) as store:
        composites = [c for rows in store.iter_columns(ids[0], ["composite"]) for (c,) in rows]
    assert demo["n_samples"] == 72 and demo["source"] == "demo_traces.jsonl"
    assert demo["composite"]["mean"] == pytest.approx(sum(composites) / len(composites))
    assert demo["composite"]["ci_low"] < demo["composite"]["mean"] < demo["composite"]["ci_high"]
    assert (demo["recommendation"], demo["band"]) == ("weak_accept", "fair")
    # the agent's cost, as the traces recorded it
    with DEMO.open(encoding="utf-8") as fh:
        cost = sum(json.loads(line)["usage"]["cost_usd"] for line in fh)
    assert demo["cost_usd"] == pytest.approx(cost)


def test_run_page(served: tuple[str, Path, list[str]]) -> None:
    url, db, ids = served
    doc = _get(url, "api/run", id=ids[0][:6])  # a unique prefix is enough
    with Store(db) as store:
        names = store.metric_names(ids[0])
        tool_usage = [v for chunk in store.iter_metric(ids[0], "tool_usage") for v in chunk]
    assert [m["name"] for m in doc["metrics"]] == names
    for m in doc["metrics"]:
        assert sum(m["bins"]) == m["n"]
    usage = next(m for m in doc["metrics"] if m["name"] == "tool_usage")
    assert usage["n_missing"] == tool_usage.count(None) == 28
    assert sum(n for _, n in usage["missing"]) == 28
    assert sorted(doc["facets"]["category"]) == sorted(
        [c, n] for c, n in Counter(_categories().values()).items()
    )
    assert doc["composite"]["mean_coverage"] == pytest.approx(
        sum(r.coverage for r in Store(db).iter_samples(ids[0])) / 72
    )


def _expected_page(
    db: Path, run_id: str, category: str, low: float, offset: int, limit: int
) -> tuple[int, list[str]]:
    """The filter and sort of the samples API, done by hand over every stored sample."""
    categories = _categories()
    with Store(db) as store:
        kept = [
            r
            for r in store.iter_samples(run_id)
            if categories[r.trace_id] == category
            and r.values["accuracy"] is not None
            and r.values["accuracy"] >= low
        ]
    kept.sort(key=lambda r: (r.composite is None, -(r.composite or 0.0), r.seq))
    return len(kept), [r.key for r in kept[offset : offset + limit]]


def test_samples_are_filtered_and_sorted_by_the_server(served: tuple[str, Path, list[str]]) -> None:
    url, db, ids = served
    page = _get(
        url,
        "api/samples",
        run=ids[0],
        category="tool_use",
        range="accuracy:0.5:",
        sort="composite",
        desc="1",
        offset=2,
        limit=5,
    )
    total, keys = _expected_page(db, ids[0], "tool_use", 0.5, 2, 5)
    assert (page["total"], [r["key"] for r in page["rows"]]) == (total, keys)
    assert total > 7
    searched = _get(url, "api/samples", run=ids[0], search="DEMO-00", limit=500)
    assert [r["trace_id"] for r in searched["rows"]] == [f"demo-00{i}" for i in range(10)]
    # a page never holds more than 500 rows
    assert _get(url, "api/samples", run=ids[0], limit=10**6)["limit"] == 500


def test_sample_page_neighbours_and_hidden_secrets(served: tuple[str, Path, list[str]]) -> None:
    url, db, ids = served
    with Store(db) as store:
        keys = [r.key for r in store.iter_samples(ids[0])]
        hostile = next(store.iter_samples(ids[2]))
    doc = _get(url, "api/sample", run=ids[0], key=keys[1])
    assert (doc["prev"], doc["next"], doc["trace"]["id"]) == (keys[0], keys[2], "demo-001")
    assert [s["index"] for s in doc["trace"]["steps"]] == [0, 1, 2]
    # timed steps: each starts where its clock says, from the first
    assert doc["trace"]["steps"][1]["offset_s"] == pytest.approx(1.311)
    evil = _get(url, "api/sample", run=ids[2], key=hostile.key)
    text = json.dumps(evil)
    assert SECRET not in text and "[credential hidden]" in text
    call = evil["trace"]["steps"][1]["tool"]
    assert SECRET not in call["arguments"] and '"q": "\\u003cscript' not in call["arguments"]
    assert '"api_key": "***"' in call["arguments"]
    # the content itself is kept, as text: the page never reads it as markup
    assert evil["trace"]["output"] == "<script>window.__pwned = 1; alert('script')</script>"
    assert evil["trace"]["graph"]["edges"][0]["types"] == ["handoff"]


def _task_means(store: Store, run_id: str) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for row in store.iter_samples(run_id):
        if row.composite is not None:
            values.setdefault(row.task_id, []).append(row.composite)
    return {task: sum(v) / len(v) for task, v in values.items()}


def test_compare_reuses_the_paired_comparison(served: tuple[str, Path, list[str]]) -> None:
    url, db, ids = served
    doc = _get(url, "api/compare", a=ids[0], b=ids[1], by="task")
    with Store(db) as store:
        expected = compare_runs(store, ids[0], ids[1], by="task")
        a, b = _task_means(store, ids[0]), _task_means(store, ids[1])
    assert doc["metrics"] == json.loads(json.dumps(expected["metrics"]))
    assert [r["id"] for r in doc["runs"]] == ids[:2]
    # tasks with repeats are paired by their mean composite; the largest falls first
    fell = sorted((b[t] - a[t], t) for t in a if b[t] < a[t])[:25]
    assert [(r["diff"], r["pair"]) for r in doc["regressed"]] == [
        (pytest.approx(d), t) for d, t in fell
    ]
    assert len(fell) > 3


def test_errors_are_json_with_a_status(served: tuple[str, Path, list[str]]) -> None:
    url, _, ids = served
    assert _error(url, "api/run", id="nope")[0] == 404
    assert _error(url, "api/samples", run=ids[0], range="accuracy:x:")[0] == 400
    assert _error(url, "api/samples", run=ids[0], sort="nope")[0] == 404
    assert _error(url, "api/sample", run=ids[0], key="no such key")[0] == 404
    assert _error(url, "api/compare", a=ids[0], b=ids[1], by="x") == (
        400,
        "by must be 'task' or 'id', not 'x'",
    )
    assert _error(url, "api/run")[1] == "missing parameter 'id'"


def test_page_and_assets_are_served_from_the_package(served: tuple[str, Path, list[str]]) -> None:
    url, _, _ = served
    with urllib.request.urlopen(url, timeout=30) as response:
        page = response.read().decode()
        csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'self'" in csp
    assert '<script src="assets/app.js"></script>' in page
    for name in ("app.js", "app.css", "chart.umd.min.js"):
        with urllib.request.urlopen(f"{url}assets/{name}", timeout=30) as response:
            assert response.status == 200 and len(response.read()) > 1000
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{url}assets/secret.txt", timeout=30)
    assert caught.value.code == 404


def test_view_command_serves_until_interrupted(tmp_path: Path) -> None:
    db, ids = record_runs(tmp_path)
    env = {**os.environ, "COLUMNS": "200"}
    command = [sys.executable, "-m", "agentgauge", "view", "--db", str(db), "--port", "0"]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(": ", 1)[1].split(" ")[0]
        assert url.startswith("http://127.0.0.1:")
        # the socket is bound before the line is printed: connections wait for the server
        assert [r["id"] for r in _get(url, "api/runs")["runs"]] == ids[::-1]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    assert proc.returncode == 0


def test_view_command_errors_are_one_line(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["view", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 2 and "no store at" in missing.output
    db = tmp_path / "s.db"
    Store(db).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["view", "--db", str(db), "--port", str(port)])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output


def test_a_run_named_after_it_was_shown_shows_its_name(served: tuple[str, Path, list[str]]) -> None:
    url, db, ids = served
    before = {r["id"]: r for r in _get(url, "api/runs")["runs"]}
    assert before[ids[2]]["name"] is None
    with Store(db) as store:
        store.label_run(ids[2], name="hostile content", tags=["security"])
    after = {r["id"]: r for r in _get(url, "api/runs")["runs"]}
    assert (after[ids[2]]["name"], after[ids[2]]["tags"]) == ("hostile content", ["security"])
    assert _get(url, "api/run", id=ids[2])["run"]["tags"] == ["security"]
