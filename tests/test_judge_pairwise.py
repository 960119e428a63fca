"""Pairwise judging with position bias controlled, against fake judges on 127.0.0.1 whose
behaviour is known, through pydantic-ai's OpenAI provider and ``agentgauge judge pairwise``:
a judge that always prefers the first position (consistency 0, never "B wins"), a judge that
prefers the better answer (B wins, with a CI), Bradley-Terry over three runs (checked against
choix), and the pairwise section of ``agentgauge compare``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.model import Task, Trace
from agentgauge.stats import bradley_terry, mean_ci
from judge_server import KEY_ENV, JudgeServer

runner = CliRunner()
N_TASKS = 12


@pytest.fixture(autouse=True)
def _fresh(fresh_judges: None) -> None:
    """Each test starts with no remembered verdict."""


def _asks_preference(body: dict[str, Any]) -> bool:
    return "better" in json.dumps(body.get("tools") or "")


def first_position(body: dict[str, Any]) -> dict[str, Any] | None:
    if not _asks_preference(body):
        return None  # the probe of the output modes
    return {"reasoning": "The first one reads better.", "better": "1"}


def better_quality(body: dict[str, Any]) -> dict[str, Any] | None:
    """Prefers the response with the higher 'quality N'; a tie when equal."""
    if not _asks_preference(body):
        return None
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    q1, q2 = (int(x) for x in re.findall(r"quality (\d+)", prompt))
    better = "1" if q1 > q2 else "2" if q2 > q1 else "tie"
    return {"reasoning": f"Quality {q1} against {q2}.", "better": better}


def _run(tmp_path: Path, name: str, quality: Any) -> str:
    traces = tmp_path / f"{name}.jsonl"
    with traces.open("w") as fh:
        for i in range(N_TASKS):
            trace = Trace(
                id=f"{name}-{i}",
                task=Task(id=f"task-{i}", input=f"question {i}"),
                output=f"answer {i} of quality {quality(i)}",
            )
            fh.write(trace.model_dump_json() + "\n")
    db = tmp_path / "runs.db"
    args = ["evaluate", str(traces), "--db", str(db), "--jobs", "1", "--no-progress"]
    result = runner.invoke(app, [*args, "--json", str(tmp_path / f"{name}.json")])
    assert result.exit_code == 0, result.output
    return str(json.loads((tmp_path / f"{name}.json").read_text())["run_id"])


def _pairwise(server: JudgeServer, tmp_path: Path, *runs: str) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / "pairwise.json"
    args = ["judge", "pairwise", *runs, "--criteria", "The answer is more helpful."]
    args += ["--judge", "judge-model", "--judge-url", server.base_url]
    args += ["--judge-api-key-env", KEY_ENV, "--db", str(tmp_path / "runs.db")]
    result = runner.invoke(app, [*args, "--json", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result, json.loads(out.read_text())


def test_a_position_biased_judge_gives_no_reliable_preference(
    server: JudgeServer, tmp_path: Path
) -> None:
    run_a = _run(tmp_path, "a", lambda i: 1)
    run_b = _run(tmp_path, "b", lambda i: 9)  # B is better, but the judge never looks
    server.answer = first_position
    result, doc = _pairwise(server, tmp_path, run_a, run_b)
    pair = doc["pairs"][0]
    assert pair["n"] == N_TASKS
    assert pair["inconsistent"] == N_TASKS and pair["wins_a"] == pair["wins_b"] == 0
    assert pair["consistency"] == 0.0
    assert pair["win_rate_b"] == 0.5  # inconsistent pairs count as ties, never as wins
    assert pair["conclusion"] == "no reliable preference"
    assert "no reliable preference" in result.output
    assert "B preferred" not in result.output
    # each task in both orders, under anonymous labels only
    judged = [r for r in server.requests if _asks_preference(r["body"])]
    assert len(judged) == 2 * N_TASKS
    prompts = [
        next(m["content"] for m in r["body"]["messages"] if m["role"] == "user") for r in judged
    ]
    assert all(run_a not in p and run_b not in p for p in prompts)
    firsts = [re.search(r"<response_1>\n(.*)\n</response_1>", p)[1] for p in prompts]  # type: ignore[index]
    assert sum("quality 1" in f for f in firsts) == sum("quality 9" in f for f in firsts) == N_TASKS
    # compare shows the recorded result
    shown = runner.invoke(
        app, ["compare", run_a, run_b, "--db", str(tmp_path / "runs.db")], terminal_width=200
    )
    assert shown.exit_code == 0, shown.output
    assert "no reliable preference" in shown.output


def test_a_fair_judge_prefers_b_with_a_ci_and_bradley_terry(
    server: JudgeServer, tmp_path: Path
) -> None:
    qualities = {"a": lambda i: 3, "b": lambda i: 5 if i < 9 else 3, "c": lambda i: 7}
    runs = [_run(tmp_path, name, q) for name, q in qualities.items()]
    server.answer = better_quality
    result, doc = _pairwise(server, tmp_path, *runs)
    ab, ac, bc = doc["pairs"]
    # A vs B: B better on 9 tasks, a tie on 3
    assert (ab["wins_b"], ab["ties"], ab["wins_a"], ab["inconsistent"]) == (9, 3, 0, 0)
    assert ab["consistency"] == 1.0
    scores = [1.0] * 9 + [0.5] * 3
    assert ab["win_rate_b"] == pytest.approx(np.mean(scores))
    assert (ab["ci_low"], ab["ci_high"]) == pytest.approx(mean_ci(scores))
    assert ab["conclusion"] == "B preferred"
    assert ac["wins_b"] == bc["wins_b"] == N_TASKS
    # Bradley-Terry: C > B > A, and equal to choix's penalised fit of the same outcomes
    bt = doc["bradley_terry"]
    s = dict(zip(bt["runs"], bt["strengths"], strict=True))
    assert s[runs[2]] > s[runs[1]] > s[runs[0]]
    assert all(
        lo <= x <= hi
        for x, lo, hi in zip(bt["strengths"], bt["ci_low"], bt["ci_high"], strict=True)
    )
    import choix

    data = []
    for i, j, won in (
        [(1, 0, 1.0)] * 9 + [(1, 0, 0.5)] * 3 + [(2, 0, 1.0)] * 12 + [(2, 1, 1.0)] * 12
    ):
        data += [(i, j), (i, j)] if won == 1.0 else [(i, j), (j, i)]
    expected = choix.opt_pairwise(3, data, alpha=0.01, method="BFGS")
    assert bt["strengths"] == pytest.approx(list(expected - expected.mean()), abs=1e-4)
    assert "Bradley-Terry strengths" in result.output and "B preferred" in result.output


def test_bradley_terry_recovers_known_strengths() -> None:
    # outcomes drawn from known strengths: the fit's intervals hold them
    rng = np.random.default_rng(3)
    truth = np.array([-1.0, 0.0, 1.0])
    outcomes = []
    for _ in range(300):
        i, j = rng.choice(3, size=2, replace=False)
        p = 1 / (1 + np.exp(truth[j] - truth[i]))
        outcomes.append((int(i), int(j), float(rng.random() < p)))
    fit = bradley_terry(3, outcomes)
    for x, lo, hi in zip(truth, fit.ci_low, fit.ci_high, strict=True):
        assert lo <= x <= hi
