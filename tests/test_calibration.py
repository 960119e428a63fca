"""Judge calibration: agreement statistics against scipy and scikit-learn, and
``agentgauge judge calibrate`` on labels made from PeerRead's aspect scores, scored by a rubric
judge through a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score, mean_absolute_error
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.jsonl import write_traces
from agentgauge.judges import client as judge_client
from agentgauge.review.agreement import aspect_agreement
from agentgauge.review.loader import load_peerread
from agentgauge.review.pipeline import aspect_labels
from agentgauge.stats import agreement, leave_one_out, paired_bootstrap_ci
from judge_server import JudgeServer, judge_server

runner = CliRunner()


def _half_up(x: float) -> int:
    return math.floor(x + 0.5)


def test_agreement_matches_the_reference_libraries() -> None:
    predicted = [1, 2, 2, 3, 4, 5, 5, 3, 4, 2]
    target = [1.5, 2.0, 3.0, 3.0, 3.5, 4.5, 5.0, 2.0, 4.0, 2.5]
    found = agreement(predicted, target, scale=[1, 2, 3, 4, 5])
    assert found.n == 10
    assert found.mae == pytest.approx(mean_absolute_error(target, predicted))
    rho = spearmanr(predicted, target)
    assert found.spearman == pytest.approx(rho.statistic)
    assert found.spearman_p == pytest.approx(rho.pvalue)
    # kappa against the target rounded to the nearest point, halves going up
    rounded = [_half_up(t) for t in target]
    assert rounded == [2, 2, 3, 3, 4, 5, 5, 2, 4, 3]
    expected = cohen_kappa_score(predicted, rounded, labels=[1, 2, 3, 4, 5], weights="quadratic")
    assert found.kappa == pytest.approx(expected)
    assert found.mae_ci is None  # no interval unless asked for

    with_ci = agreement(predicted, target, scale=[1, 2, 3, 4, 5], confidence=0.95, seed=3)
    for value, ci in (
        (with_ci.mae, with_ci.mae_ci),
        (with_ci.spearman, with_ci.spearman_ci),
        (with_ci.kappa, with_ci.kappa_ci),
    ):
        assert ci is not None and value is not None and ci[0] <= value <= ci[1]
    # seeded: the same data give the same interval
    assert agreement(predicted, target, confidence=0.95, seed=3).mae_ci == with_ci.mae_ci


def test_undefined_figures_are_none() -> None:
    constant = agreement([3, 3, 3], [3.0, 3.0, 3.0], scale=[1, 2, 3, 4, 5], confidence=0.95)
    assert constant.mae == 0.0
    assert constant.spearman is None and constant.kappa is None
    assert constant.spearman_ci is None and constant.kappa_ci is None
    assert agreement([], []).n == 0
    assert paired_bootstrap_ci(lambda a, b: float(np.mean(a - b)), [1.0], [2.0]) is None


def test_leave_one_out_pairs_each_rater_with_the_others() -> None:
    groups = [[{"m": 1.0}, {"m": 3.0}, {"m": 5.0}], [{"m": 2.0}]]
    pairs = list(leave_one_out(groups))
    assert pairs == [
        ({"m": 1.0}, [{"m": 3.0}, {"m": 5.0}]),
        ({"m": 3.0}, [{"m": 1.0}, {"m": 5.0}]),
        ({"m": 5.0}, [{"m": 1.0}, {"m": 3.0}]),
    ]


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    judge_client._MEMO.clear()
    with judge_server() as state:
        yield state
    judge_client._MEMO.clear()


def _clarity_judge(means: dict[str, float]) -> Any:
    """A judge that scores each paper's clarity as its reviewers' mean, rounded (halves up)."""

    def answer(body: dict[str, Any]) -> dict[str, Any] | None:
        fields = body["tools"][0]["function"]["parameters"]["properties"]
        if "score" not in fields:
            return None  # the evaluation steps: the scripted ones
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        title = json.loads(re.search(r"<output>\n(.*)\n</output>", user, re.S)[1])["title"]
        return {"reasoning": "Judged.", "score": _half_up(means[title])}

    return answer


def test_calibrate_on_peerread_aspect_labels(
    server: JudgeServer, tmp_path: Path, shared_data: Path
) -> None:
    papers = load_peerread(shared_data / "peerread", venues=["acl_2017"]).papers
    traces, labels = aspect_labels(papers, {"CLARITY": "clarity"})
    assert {label["metric"] for label in labels} == {"clarity"}
    humans: dict[str, list[float]] = {}
    for label in labels:
        humans.setdefault(label["trace_id"], []).append(label["score"])
    titles = {t.id: t.output["title"] for t in traces if isinstance(t.output, dict)}
    means = {titles[t]: float(np.mean(scores)) for t, scores in humans.items()}
    server.answer = _clarity_judge(means)

    write_traces(traces, tmp_path / "papers.jsonl")
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    (tmp_path / "suite.toml").write_text(
        f"""
[metrics.clarity]
kind = "rubric"
criteria = "The paper is clearly written."
inputs = ["output"]
[judge]
model = "judge-model"
base_url = "{server.base_url}"
output_mode = "tool"
"""
    )
    out = tmp_path / "calibration.json"
    result = runner.invoke(
        app,
        [
            "judge", "calibrate", "--suite", str(tmp_path / "suite.toml"),
            "--traces", str(tmp_path / "papers.jsonl"), "--labels", str(tmp_path / "labels.jsonl"),
            "--db", str(tmp_path / "cache.db"), "--json", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "clarity (1-5)" in result.output and "judge" in result.output
    assert "humans" in result.output

    (row,) = json.loads(out.read_text())["metrics"]
    # the judge: its score against the mean of each paper's reviewers
    predicted = [_half_up(means[titles[t]]) for t in humans]
    target = [means[titles[t]] for t in humans]
    judge = row["judge"]
    assert row["traces"] == judge["n"] == len(humans)
    assert judge["mae"] == pytest.approx(mean_absolute_error(target, predicted))
    assert judge["spearman"] == pytest.approx(spearmanr(predicted, target).statistic)
    kappa = cohen_kappa_score(
        predicted, [_half_up(t) for t in target], labels=[1, 2, 3, 4, 5], weights="quadratic"
    )
    assert judge["kappa"] == pytest.approx(kappa) == pytest.approx(1.0)
    low, high = judge["mae_ci"]
    assert low <= judge["mae"] <= high
    # the ceiling: each reviewer against the others, as the review pipeline computes it
    groups = [[{"CLARITY": s} for s in scores] for scores in humans.values()]
    review_ceiling = aspect_agreement(leave_one_out(groups), ["CLARITY"])["CLARITY"]
    ceiling = row["human_ceiling"]
    assert ceiling["n"] == review_ceiling.n == sum(len(s) for s in humans.values() if len(s) > 1)
    assert ceiling["mae"] == pytest.approx(review_ceiling.mae)
    assert ceiling["spearman"] == pytest.approx(review_ceiling.spearman)
    assert ceiling["kappa"] is not None and ceiling["kappa_ci"] is not None
    # one call writes the rubric's steps, one per paper judges it
    assert len(server.requests) == 1 + len(humans)


def test_calibrate_refuses_labels_off_the_judges_scale(server: JudgeServer, tmp_path: Path) -> None:
    from agentgauge.model import Task, Trace

    write_traces([Trace(id="t", task=Task(id="t"), output="x")], tmp_path / "t.jsonl")
    (tmp_path / "l.jsonl").write_text('{"trace_id": "t", "metric": "q", "score": 9}\n')
    (tmp_path / "s.toml").write_text(
        f'[metrics.q]\nkind = "rubric"\ncriteria = "Good."\n'
        f'[judge]\nmodel = "m"\nbase_url = "{server.base_url}"\n'
    )
    args = ["judge", "calibrate", "--suite", str(tmp_path / "s.toml"), "--traces"]
    args += [str(tmp_path / "t.jsonl"), "--labels", str(tmp_path / "l.jsonl")]
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "c.db")])
    assert result.exit_code == 2
    assert "labels of 'q' lie outside its scale 1-5 (e.g. 9.0)" in result.output

    (tmp_path / "l.jsonl").write_text('{"trace_id": "t", "metric": "nope", "score": 1}\n')
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "c.db")])
    assert result.exit_code == 2 and "metric 'nope' is not in suite" in result.output

    (tmp_path / "l.jsonl").write_text('{"trace_id": "t", "metric": "q"}\n')
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "c.db")])
    assert result.exit_code == 2 and "l.jsonl:1: score: Field required" in result.output
