"""``--agent`` imports the user's code, and only that: files in the current folder named like a
library never replace the installed library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.agents.protocol import load_agent

SHADOWS = ("optuna", "sklearn", "jinja2", "matplotlib")


def _plant(folder: Path) -> None:
    for name in SHADOWS:
        (folder / f"{name}.py").write_text(
            f"open({str(folder / 'RAN')!r}, 'a').write({name!r} + '\\n')\n"
        )


def test_tune_with_the_bundled_agent_runs_nothing_from_the_current_folder(
    tmp_path: Path,
) -> None:
    _plant(tmp_path)
    # -P: Python itself puts nothing of the current folder on the path; agentgauge must not
    cmd = [sys.executable, "-P", "-m", "agentgauge", "tune", "--agent",
           "agentgauge.agents.simulated:SimulatedAgent", "--tasks", "simulated",
           "--strategy", "bayes", "--episodes", "2", "--tasks-per-episode", "2",
           "--db", str(tmp_path / "a.db"), "--plot", str(tmp_path / "p.png"),
           "--no-progress"]  # fmt: skip
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "RAN").exists(), (tmp_path / "RAN").read_text()


def test_an_agent_in_the_current_folder_still_loads_and_shadows_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(tmp_path)
    (tmp_path / "my_agent_mod.py").write_text(
        "class Agent:\n    def run(self, task, params, recorder):\n        return 'ok'\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    agent = load_agent("my_agent_mod:Agent")
    assert agent.run(None, {}, None) == "ok"
    assert str(tmp_path) not in sys.path
    import jinja2

    assert Path(jinja2.__file__).parent.name == "jinja2"
    assert not (tmp_path / "RAN").exists()
