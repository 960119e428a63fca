"""``agentgauge run``, ``tune`` and ``impact`` end to end (CliRunner, real SQLite store)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.agents.simulated import simulated_tasks
from agentgauge.cli import app
from agentgauge.io.jsonl import read_traces
from agentgauge.model import Trace
from agentgauge.store import Store

SIM = "agentgauge.agents.simulated:SimulatedAgent"
runner = CliRunner()


def _tasks_file(tmp_path: Path, n: int = 4, bad_line: bool = False) -> Path:
    path = tmp_path / "tasks.jsonl"
    lines = [t.model_dump_json() for t in simulated_tasks()[:n]]
    if bad_line:
        lines.insert(1, '{"id": "broken", "difficulty": "impossible"}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_run_writes_traces_and_scores_them(tmp_path: Path) -> None:
    tasks = _tasks_file(tmp_path, bad_line=True)
    out, db, doc = tmp_path / "traces.jsonl", tmp_path / "ag.db", tmp_path / "r.json"
    result = runner.invoke(
        app,
        [
            "run", "--agent", SIM, "--tasks", str(tasks), "--out", str(out),
            "--params", "temperature=0.1,max_steps=30,context_length=5000",
            "--repeats", "2", "--db", str(db), "--json", str(doc), "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "SIMULATION" in result.output
    assert f"{tasks}:2: difficulty" in result.output  # the bad line is reported, the run goes on
    traces = [t for t in read_traces(out) if isinstance(t, Trace)]
    assert len(traces) == 8
    assert {t.id for t in traces} == {f"sim-0{i}#s{s}" for i in range(4) for s in (0, 1)}
    assert traces[0].params["max_steps"] == 30 and traces[0].params["temperature"] == 0.1
    data = json.loads(doc.read_text())
    assert len(data["samples"]) == 8
    assert data["config"]["params"]["context_length"] == 5000
    with Store(db) as store:
        assert store.list_runs()[0].kind == "agent-run"


def test_run_no_score_and_bad_params(tmp_path: Path) -> None:
    tasks = _tasks_file(tmp_path)
    out = tmp_path / "t.jsonl"
    ok = runner.invoke(
        app,
        ["run", "--agent", SIM, "--tasks", str(tasks), "--out", str(out), "--no-score",
         "--no-progress", "--db", str(tmp_path / "x.db")],
    )  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert not (tmp_path / "x.db").exists()
    bad = runner.invoke(
        app,
        ["run", "--agent", SIM, "--tasks", str(tasks), "--out", str(out), "--overwrite",
         "--params", "temperature=9"],
    )  # fmt: skip
    assert bad.exit_code == 2
    assert "'temperature': 9 is outside [0.1, 2]" in bad.output
    missing = runner.invoke(
        app,
        [
            "run",
            "--agent",
            "nowhere:Agent",
            "--tasks",
            str(tasks),
            "--out",
            str(out),
            "--overwrite",
        ],
    )
    assert missing.exit_code == 2 and "cannot import 'nowhere'" in missing.output


def test_tune_stores_history_and_reports_best_by_level(tmp_path: Path) -> None:
    db, plot, doc = tmp_path / "ag.db", tmp_path / "conv.png", tmp_path / "tune.json"
    result = runner.invoke(
        app,
        [
            "tune", "--agent", SIM, "--tasks", "simulated", "--strategy", "bayes",
            "--episodes", "6", "--tasks-per-episode", "5", "--repeats", "2", "--seed", "3",
            "--db", str(db), "--plot", str(plot), "--json", str(doc), "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Best parameters by level" in result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(doc.read_text())
    with Store(db) as store:
        run = store.list_runs()[0]
        assert run.kind == "tune" and run.status == "completed"
        history = store.records(run.id, "tuning")
        summary = store.records(run.id, "tuning_result")[0]
    assert [h["episode"] for h in history] == list(range(6))
    assert all(len(h["tasks"]) == 5 and h["seeds"] == [3000, 3001] for h in history)
    assert set(history[0]["metrics"]) >= {"accuracy", "efficiency", "tool_usage", "safety"}
    levels = [h["objective"] for h in history]
    best = max(range(6), key=lambda i: levels[i])
    assert summary["best_episode"] == best
    assert summary["best_params"] == history[best]["params"]
    assert data["result"]["best_objective_in_tuning"] == levels[best]
    assert history[0]["params"] == {
        "context_length": 1000,
        "temperature": 0.7,
        "max_steps": 10,
        "tool_usage_threshold": 0.5,
        "reasoning_depth": 2,
    }
    # `show` gives the tune run's records back: the best parameters, and all of them in JSON
    shown_json = tmp_path / "shown.json"
    shown = runner.invoke(app, ["show", run.id, "--db", str(db), "--json", str(shown_json)])
    assert shown.exit_code == 0, shown.output
    assert "records kept with this run: tuning (6), tuning_result (1)" in shown.output
    assert f"best by level: context_length={summary['best_params']['context_length']}" in (
        shown.output
    )
    assert json.loads(shown_json.read_text())["records"]["tuning"] == history


def test_tune_rejects_bad_options(tmp_path: Path) -> None:
    base = ["tune", "--agent", SIM, "--tasks", "simulated", "--db", str(tmp_path / "a.db")]
    bad = runner.invoke(app, [*base, "--strategy", "grid"])
    assert bad.exit_code == 2 and "'grid' is not one of rl, bayes, random" in bad.output
    lr = runner.invoke(app, [*base, "--strategy", "rl", "--learning-rate", "0.5"])
    assert lr.exit_code == 2 and "learning_rate 0.5 is outside" in lr.output
    metric = runner.invoke(app, [*base, "--objective", "fluency"])
    assert metric.exit_code == 2 and "'fluency' is not in suite" in metric.output


def test_impact_writes_table_heatmap_and_claims(tmp_path: Path) -> None:
    db, plot, doc = tmp_path / "ag.db", tmp_path / "impact.png", tmp_path / "impact.json"
    tasks = _tasks_file(tmp_path, n=6)
    result = runner.invoke(
        app,
        [
            "impact", "--agent", SIM, "--tasks", str(tasks), "--sweep",
            "temperature,max_steps", "--points", "4", "--repeats", "2", "--db", str(db),
            "--plot", str(plot), "--json", str(doc), "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "SIMULATED agent" in result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(doc.read_text())
    effects = {(e["param"], e["metric"]): e for e in data["effects"]}
    assert {p for p, _ in effects} == {"temperature", "max_steps"}
    assert effects["temperature", "efficiency"]["significant"] is False
    assert effects["temperature", "efficiency"]["slope"] == 0.0
    verdicts = {(c["param"], c["metric"]): c["verdict"] for c in data["claims"]}
    assert verdicts["context_length", "accuracy"] == "not measured"
    with Store(db) as store:
        run = store.list_runs()[0]
        assert run.kind == "impact"
        assert len(store.records(run.id, "impact")) == len(data["effects"])


def test_bayes_without_optuna_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if the 'tune' extra were missing
    db = tmp_path / "ag.db"
    args = ["tune", "--agent", SIM, "--tasks", "simulated", "--strategy", "bayes"]
    result = runner.invoke(app, [*args, "--episodes", "2", "--db", str(db), "--no-progress"])
    assert result.exit_code == 2
    assert result.output == (
        "error: the bayes strategy needs optuna, in the 'tune' extra: "
        "pip install 'agentgauge[tune]'\n"
    )
