"""Results are never silently wrong: weights too small to divide by are refused, a resumed run
refuses a source that changed, and a judge's score is read only from a number."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import SuiteError, load_suite
from agentgauge.judges import client as judge_client
from agentgauge.judges.prompts import PlanningRationalityVerdict
from agentgauge.metrics.base import create_metric
from agentgauge.model import Step, StepKind, Task, ToolCall, Trace
from agentgauge.review.prompts import ConstructivenessVerdict
from judge_server import VERDICTS, JudgeServer, judge_server

runner = CliRunner()


def _suite(tmp_path: Path, weight: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(f'name = "w"\nmetrics = ["accuracy"]\n[weights]\naccuracy = {weight}\n')
    return path


@pytest.mark.parametrize("weight", ["5e-324", "1e-10", "2.2e-308"])
def test_a_weight_below_the_floor_is_refused(tmp_path: Path, weight: str) -> None:
    with pytest.raises(SuiteError, match="below the smallest weight"):
        load_suite(str(_suite(tmp_path, weight)))


def test_the_smallest_weight_gives_the_plain_mean(tmp_path: Path) -> None:
    # the accuracy of 3 right answers out of 5 is 0.6 whatever the (only) weight
    lines = [
        json.dumps({"id": f"r{i}", "task": {"id": f"t{i}", "expected_output": "a"},
                    "output": "a" if i < 3 else "b"})
        for i in range(5)
    ]  # fmt: skip
    data = tmp_path / "t.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.json"
    args = ["evaluate", str(data), "--suite", str(_suite(tmp_path, "1e-9")), "--jobs", "1"]
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "a.db"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["aggregate"]["composite"]["mean"] == pytest.approx(0.6)
    refused = runner.invoke(app, [*args[:2], "--suite", str(_suite(tmp_path, "5e-324"))])
    assert refused.exit_code == 2 and "below the smallest weight" in refused.output


def test_resume_refuses_a_changed_source_unless_forced(tmp_path: Path) -> None:
    data = tmp_path / "t.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"r{i}", "task": {"id": "t"}}) + "\n" for i in range(3))
    )
    db = tmp_path / "a.db"
    first = runner.invoke(app, ["evaluate", str(data), "--db", str(db), "--jobs", "1"])
    assert first.exit_code == 0, first.output
    run_id = _last_run(db)
    same = runner.invoke(app, ["evaluate", "--resume", run_id, "--db", str(db)])
    assert same.exit_code == 0, same.output
    with data.open("a") as fh:
        fh.write(json.dumps({"id": "r3", "task": {"id": "t"}}) + "\n")
    changed = runner.invoke(app, ["evaluate", "--resume", run_id, "--db", str(db)])
    assert changed.exit_code == 2
    assert "changed since run" in changed.output and "--force" in changed.output
    forced = runner.invoke(app, ["evaluate", "--resume", run_id, "--db", str(db), "--force"])
    assert forced.exit_code == 0, forced.output


def _last_run(db: Path) -> str:
    import sqlite3

    return str(sqlite3.connect(db).execute("SELECT id FROM runs").fetchone()[0])


@pytest.mark.parametrize("lax", [True, "5", 4.0])
def test_judge_verdicts_are_validated_strictly(lax: object) -> None:
    good = {"rationale": "r", "logical_flow": 5, "decision_quality": 4, "resource_efficiency": 3}
    assert PlanningRationalityVerdict.model_validate_json(json.dumps(good)).logical_flow == 5
    with pytest.raises(ValidationError):
        PlanningRationalityVerdict.model_validate_json(json.dumps({**good, "logical_flow": lax}))
    review = {"rationale": "r", "actionable_feedback": lax, "balanced_critique": 2,
              "improvement_guidance": 5}  # fmt: skip
    with pytest.raises(ValidationError):
        ConstructivenessVerdict.model_validate(review)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    judge_client._MEMO.clear()
    with judge_server() as state:
        yield state
    judge_client._MEMO.clear()


def test_a_judge_answering_true_gets_no_score(
    server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AG_JUDGE_KEY", "k")
    monkeypatch.setitem(
        VERDICTS, "logical_flow", {**VERDICTS["logical_flow"], "logical_flow": True}
    )
    options: dict[str, Any] = {
        "model": "judge-model", "base_url": server.base_url, "api_key_env": "AG_JUDGE_KEY",
        "timeout_s": 5.0, "retries": 0, "output_retries": 1,
        "cache_path": str(tmp_path / "c.db"),
    }  # fmt: skip
    trace = Trace(
        id="p",
        task=Task(id="t"),
        steps=[Step(index=0, kind=StepKind.tool_call, tool_call=ToolCall(name="search"))],
    )
    result = create_metric("planning_rationality", options).score(trace)
    assert result.value is None
    assert result.reason is not None and "judge output invalid" in result.reason
