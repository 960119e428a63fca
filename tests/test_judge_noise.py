"""A judge's own noise, measured and used: repeated sampling against a fake judge on 127.0.0.1
whose noise is known (it answers 4 or 5 at random on a 1-5 rubric), through pydantic-ai's
OpenAI provider and the whole ``agentgauge evaluate`` path (store, terminal, JSON, CSV)."""

from __future__ import annotations

import csv
import hashlib
import json
import math
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.documents.pages import run_document
from agentgauge.judges import client as judge_client
from agentgauge.judges.noise import combine, krippendorff_alpha, noise_summary, straddles
from agentgauge.model import Task, Trace
from agentgauge.store import Store
from judge_server import KEY_ENV, JudgeServer

runner = CliRunner()
K = 5
N_NOISY = 40
N_STEADY = 6
THRESHOLD = (4.5 - 1) / 4  # 4.5 on the 1-5 scale


@pytest.fixture(autouse=True)
def _fresh(fresh_judges: None) -> None:
    """Each test starts with no remembered verdict."""


def _user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def coin_judge(body: dict[str, Any]) -> dict[str, Any]:
    """4 or 5 with equal chances, drawn from the prompt and the request's seed (so a repeat
    of the same request gets the same answer); 2 always for a 'steady' answer."""
    prompt = _user(body)
    if "steady" in prompt:
        return {"reasoning": "Clearly poor.", "score": 2}
    digest = hashlib.sha256(f"{prompt}|{body.get('seed')}".encode()).digest()
    return {"reasoning": "Good enough.", "score": 4 + digest[0] % 2}


def _write_inputs(tmp_path: Path, server: JudgeServer) -> tuple[Path, Path]:
    traces = tmp_path / "traces.jsonl"
    with traces.open("w") as fh:
        for i in range(N_NOISY + N_STEADY):
            output = f"steady answer {i}" if i >= N_NOISY else f"answer number {i}"
            trace = Trace(id=f"t{i}", task=Task(id=f"q{i}", input=f"question {i}"), output=output)
            fh.write(trace.model_dump_json() + "\n")
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f"""
name = "noisy"
[metrics.helpful]
kind = "rubric"
criteria = "The answer helps."
steps = ["Read the answer.", "Decide."]
threshold = {THRESHOLD}
[weights]
helpful = 1.0
[gates]
helpful = {THRESHOLD}
[judge]
model = "judge-model"
base_url = "{server.base_url}"
api_key_env = "{KEY_ENV}"
output_mode = "tool"
concurrency = 8
"""
    )
    return traces, suite


def _expected_mean_sd(k: int) -> float:
    """E[s] of k answers 4 or 5 with equal chances, on the unit scale (0.75 or 1.0): with j
    fives the sample variance is 0.25² · j(k−j) / (k(k−1))."""
    return sum(
        math.comb(k, j) / 2**k * 0.25 * math.sqrt(j * (k - j) / (k * (k - 1))) for j in range(k + 1)
    )


def test_noise_recovered_and_uncertain_verdicts(server: JudgeServer, tmp_path: Path) -> None:
    server.answer = coin_judge
    traces, suite = _write_inputs(tmp_path, server)
    out_json, out_csv = tmp_path / "run.json", tmp_path / "run.csv"
    args = ["evaluate", str(traces), "--suite", str(suite), "--db", str(tmp_path / "a.db")]
    args += ["--judge-samples", str(K), "--jobs", "1", "--no-progress"]
    result = runner.invoke(app, [*args, "--json", str(out_json), "--csv", str(out_csv)])
    # the steady samples' 2 of 5 keep the mean below the gate's floor: a failed gate, exit 3
    assert result.exit_code == 3, result.output
    assert "gate failed: helpful" in result.output
    n = N_NOISY + N_STEADY
    assert len(server.requests) == n * K
    # each sample index is its own request, with its own seed
    seeds = sorted(
        r["body"]["seed"] for r in server.requests if "answer number 0" in _user(r["body"])
    )
    assert seeds == list(range(K))

    doc = json.loads(out_json.read_text())
    samples = {s["id"]: s for s in doc["samples"]}
    answers = {i: samples[i]["details"]["helpful"]["judge_samples"]["values"] for i in samples}
    assert all(len(a) == K for a in answers.values())
    # every answer kept; the value is their mean
    for sid, sample in samples.items():
        details = sample["details"]["helpful"]["judge_samples"]
        assert [a["score"] for a in details["answers"]] == [1 + 4 * v for v in answers[sid]]
        assert sample["metrics"]["helpful"] == pytest.approx(np.mean(answers[sid]))

    # the measured noise matches the injected one: 4 or 5 at random is SD 0.125 on the unit
    # scale (pooled over the noisy samples; the steady ones add six zero variances)
    noise = doc["judge_noise"]["helpful"]
    injected_var = 0.125**2 * N_NOISY / n  # E[s²] = σ² on the noisy samples, 0 on the steady
    low, high = noise["pooled_sd_ci"]
    assert low <= math.sqrt(injected_var) <= high
    expected_mean_sd = _expected_mean_sd(K) * N_NOISY / n
    assert noise["mean_sd_ci"][0] <= expected_mean_sd <= noise["mean_sd_ci"][1]
    assert noise["samples"] == n and noise["answers"] == n * K
    # agreement and alpha by hand from the stored answers
    rows = [answers[f"t{i}"] for i in range(n)]
    pair_shares = [np.mean([a == b for a, b in combinations(row, 2)]) for row in rows]
    assert noise["agreement"] == pytest.approx(np.mean(pair_shares))
    assert noise["alpha"] == pytest.approx(_hand_interval_alpha(rows))
    assert noise["between_sd"] == pytest.approx(np.std([np.mean(r) for r in rows], ddof=1))

    # uncertain: exactly the samples whose answers straddle 4.5, i.e. not unanimous; the
    # steady ones (2, far below) are a certain reject by the gate
    mixed = {sid for sid, a in answers.items() if len(set(a)) > 1}
    assert len(mixed) > N_NOISY * 0.8
    uncertain = {sid for sid, s in samples.items() if s["recommendation"] == "uncertain"}
    assert uncertain == mixed
    for sid in mixed:
        assert samples[sid]["details"]["helpful"]["uncertain"] is True
        assert "straddles its gate" in samples[sid]["details"]["uncertain"]["note"]
    for i in range(N_NOISY, n):
        assert samples[f"t{i}"]["recommendation"] == "reject"
    assert noise["uncertain"] == len(mixed)
    assert doc["aggregate"]["composite"]["uncertain_samples"] == len(mixed)
    with out_csv.open() as fh:
        verdicts = {row["id"]: row["recommendation"] for row in csv.DictReader(fh)}
    assert {sid for sid, v in verdicts.items() if v == "uncertain"} == mixed
    assert f"{len(mixed)} samples uncertain" in result.output
    assert "judge noise" in result.output

    # the viewer's documents: the run's noise and the verdict filter's count
    with Store(tmp_path / "a.db") as store:
        page = run_document(store, doc["run_id"])
    assert page["judge_noise"]["uncertain"] == len(mixed)
    assert ["uncertain", len(mixed)] in page["facets"]["recommendation"]

    # a rerun costs nothing: every (prompt, sample index) is cached; --fail-under within the
    # judges' noise of the mean composite fails as uncertain, well below it passes (the exit
    # code stays the failed gate's)
    server.requests.clear()
    judge_client._MEMO.clear()
    composite = doc["aggregate"]["composite"]
    mean, se = composite["mean"], composite["judge_noise_se"]
    assert se > 0
    within = runner.invoke(app, [*args, "--fail-under", f"{mean - se:.6f}"])
    assert within.exit_code == 3, within.output
    assert "uncertain: composite" in within.output
    clear = runner.invoke(app, [*args, "--fail-under", f"{max(0.0, mean - 4 * se):.6f}"])
    assert clear.exit_code == 3, clear.output
    assert "--fail-under" not in clear.output
    assert server.requests == []


def _hand_interval_alpha(rows: list[list[float]]) -> float:
    """Krippendorff's alpha, interval metric, no missing values: 1 − D_o / D_e with D_o the
    mean squared difference of pairable values within units and D_e over all values."""
    values = [v for row in rows for v in row]
    total = len(values)
    within = (
        sum(sum((a - b) ** 2 for a in row for b in row) / (len(row) - 1) for row in rows) / total
    )
    between = sum((a - b) ** 2 for a in values for b in values) / (total * (total - 1))
    return 1 - within / between


def test_alpha_matches_a_hand_computation_with_missing_values() -> None:
    # Krippendorff's own example (2011, "Computing Krippendorff's alpha-reliability", C):
    # four coders, twelve units, missing values; interval alpha 0.849, nominal 0.743
    nan = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    rows = [[c[u] for c in coders if c[u] is not None] for u in range(12)]
    assert krippendorff_alpha(rows, "interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(rows, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha([[1.0, 1.0], [1.0, 1.0]], "interval") is None


def test_combine_mean_and_majority() -> None:
    # mean of 4, 5, 5 on the unit scale with its t-interval
    values = [0.75, 1.0, 1.0]
    got = combine(values, "mean")
    sd = float(np.std(values, ddof=1))
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2)
    assert got.value == pytest.approx(2.75 / 3)
    assert got.interval == pytest.approx((max(0, got.value - half), 1.0))
    assert straddles(got.interval, THRESHOLD)
    # unanimous answers: no measured spread
    assert combine([1.0] * 4, "mean").interval == (1.0, 1.0)
    # majority: 2 of 3 is not established (the interval is the whole scale), 7 of 7 is
    assert combine([1.0, 1.0, 0.0], "majority").interval == (0.0, 1.0)
    assert combine([1.0, 1.0, 0.0], "majority").value == 1.0
    assert combine([0.0] * 7, "majority").interval == (0.0, 0.0)
    assert combine([1.0, 0.0], "majority").value == 0.5  # a tie: the share of passes
    assert not straddles((0.9, 1.0), 0.875)
    assert straddles((0.8, 0.875), 0.875)


def test_noise_summary_without_repeats() -> None:
    summary = noise_summary([[0.5], [0.7]], "mean", [0.5, 0.7])
    assert summary["samples"] == 0 and summary["pooled_sd"] is None
    assert summary["between_sd"] == pytest.approx(np.std([0.5, 0.7], ddof=1))
