"""Tuning sessions as library calls (no command line): prepared, checked, run into a store."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgauge.io.jsonl import ReadError
from agentgauge.store import Store
from agentgauge.tuning.agent_run import TuningError
from agentgauge.tuning.session import TuneOptions, TuningSession

SIM = "agentgauge.agents.simulated:SimulatedAgent"


def test_a_session_stores_each_episode_and_its_best_setting(tmp_path: Path) -> None:
    options = TuneOptions(
        agent=SIM,
        tasks="simulated",
        strategy="random",
        episodes=3,
        tasks_per_episode=2,
        seed=1,
        jobs=1,
        progress=False,
    )
    session = TuningSession.prepare(options)
    assert session.setup.simulation
    with Store(tmp_path / "t.db") as store:
        outcome = session.run(store)
        history = store.records(outcome.run_id, "tuning")
        [stored] = store.records(outcome.run_id, "tuning_result")
        run = store.get_run(outcome.run_id)
    assert (run.kind, run.status) == ("tune", "completed")
    levels = [h["objective"] for h in history]
    assert len(levels) == 3 and all(level is not None for level in levels)
    best = max(range(3), key=lambda i: levels[i])
    assert outcome.summary.best_episode == best
    assert outcome.summary.best_params == history[best]["params"]
    assert outcome.summary.best_objective_in_tuning == levels[best]
    assert stored == outcome.as_dict()["result"]
    assert outcome.config["strategy"] == "random" and outcome.config["learning_rate"] is None


def test_preparing_checks_before_any_agent_runs(tmp_path: Path) -> None:
    with pytest.raises(TuningError, match="'grid' is not one of rl, bayes, random"):
        TuningSession.prepare(TuneOptions(agent=SIM, tasks="simulated", strategy="grid"))
    with pytest.raises(TuningError, match=r"learning_rate 0\.5 is outside"):
        TuningSession.prepare(TuneOptions(agent=SIM, tasks="simulated", learning_rate=0.5))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "difficulty": "impossible"}\nnot json\n', encoding="utf-8")
    skipped: list[ReadError] = []
    with pytest.raises(TuningError, match="no valid task"):
        TuningSession.prepare(TuneOptions(agent=SIM, tasks=str(tasks)), on_skip=skipped.append)
    assert [(e.source, e.line) for e in skipped] == [(str(tasks), 1), (str(tasks), 2)]
