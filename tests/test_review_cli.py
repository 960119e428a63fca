"""``agentgauge review baseline`` and ``review evaluate`` end to end: real PeerRead data, the
packaged BERTScore model, a real SQLite store, and a judge served on 127.0.0.1."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import BUILTIN_SUITES
from agentgauge.model import Trace
from agentgauge.review.loader import read_paper_file
from agentgauge.store import Store
from judge_server import CONSTRUCTIVE_VALUE, PLANNING_VALUE, TECHNICAL_VALUE, judge_server
from report_data import embedded

runner = CliRunner()

SIX = BUILTIN_SUITES["review"]["metrics"]

# A two-agent trace. Tool calls get_paper, get_paper, save_review: the tool graph has
# get_paper→get_paper and get_paper→save_review, shortest get_paper ⇝ save_review is 1 of the 2
# transitions taken → tool_efficiency = path_convergence = 1/2 (no references for tool
# selection).
# Typed messages task_request, result_delivery, status_update → overhead 1/3. Steps: manager
# 2 (0, 5), reviewer 4 (1–4): mean 3, sample stdev √2 → balance 1 − √2/3.
# coordination_quality = ½(1 − 1/3) + ½(1 − √2/3). duration 2 s → time_taken 1/(1 + ln 2).
AGENT_TRACE = {
    "id": "agent-run-1",
    "task": {"id": "review"},
    "steps": [
        {"index": 0, "kind": "message", "agent": "manager", "recipient": "reviewer",
         "message_type": "task_request", "content": "review paper 660"},
        {"index": 1, "kind": "tool_call", "agent": "reviewer", "tool_call": {"name": "get_paper"}},
        {"index": 2, "kind": "tool_call", "agent": "reviewer", "tool_call": {"name": "get_paper"}},
        {"index": 3, "kind": "tool_call", "agent": "reviewer",
         "tool_call": {"name": "save_review"}},
        {"index": 4, "kind": "message", "agent": "reviewer", "recipient": "manager",
         "message_type": "result_delivery", "content": "done"},
        {"index": 5, "kind": "message", "agent": "manager", "recipient": "reviewer",
         "message_type": "status_update", "content": "thanks"},
    ],
}  # fmt: skip
TOOL_EFFICIENCY = 1 / 2
COORDINATION = 0.5 * (1 - 1 / 3) + 0.5 * (1 - math.sqrt(2) / 3)
TIME_TAKEN = 1 / (1 + math.log(2.0))


def _gen_file(tmp_path: Path, shared_data: Path) -> tuple[Path, str]:
    """Three lines: a review identical to a human one with its agent trace, a bad line, and a
    bare review of another paper."""
    paper, errors = read_paper_file(shared_data / "peerread/acl_2017/dev/reviews/660.json")
    assert paper is not None and not errors
    copied = paper.to_task().references[0]
    lines = [
        {
            "paper_id": "660",
            "review": copied,
            "scores": {"RECOMMENDATION": 4, "CLARITY": 4},
            "duration_s": 2.0,
            "trace": AGENT_TRACE,
        },
        {"paper_id": "660", "review": "x", "scores": {"NOVELTY": 5}},
        {
            "paper_id": "acl_2017/dev/173",
            "review": "The paper is clear but the baselines are weak.",
        },
    ]
    gen = tmp_path / "gen.jsonl"
    gen.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return gen, copied


def _run(*args: str) -> Any:
    result = runner.invoke(app, ["review", *args, "--jobs", "1", "--no-progress"])
    assert result.exit_code == 0, result.output
    return result


def test_baseline_on_real_peerread(shared_data: Path, tmp_path: Path) -> None:
    out, db = tmp_path / "out.json", tmp_path / "runs.db"
    peerread = str(shared_data / "peerread")
    result = _run(
        "baseline", "--peerread", peerread, "--limit", "2", "--json", str(out), "--db", str(db)
    )
    doc = json.loads(out.read_text())
    # acl_2017/dev: 37 and 94 have one review each; 173 and 352 are the first two with two.
    assert [p["task_id"] for p in doc["papers"]] == ["acl_2017/dev/173", "acl_2017/dev/352"]
    assert [s["id"] for s in doc["samples"]] == [
        "acl_2017/dev/173#human0",
        "acl_2017/dev/173#human1",
        "acl_2017/dev/352#human0",
        "acl_2017/dev/352#human1",
    ]
    for sample in doc["samples"]:
        assert set(SIX) <= set(sample["metrics"])
        # Only Tier 1's task_success and output_similarity can be measured on a human review.
        assert sample["metrics"]["planning_judge"] is None
        assert sample["metrics"]["time_taken"] is None
        assert sample["coverage"] == pytest.approx(2 / 6)
        assert sample["composite"] == pytest.approx(
            (sample["metrics"]["task_success"] + sample["metrics"]["output_similarity"]) / 2
        )
    assert doc["coverage"] == pytest.approx(2 / 6)
    assert doc["tiers"]["tier1"]["present"] is True
    assert doc["tiers"]["tier2"]["present"] is False
    assert doc["tiers"]["tier2"]["judge_configured"] is False
    assert doc["tiers"]["tier3"]["present"] is False
    assert doc["baseline"]["samples"] == 4
    assert "Tier 2 (LLM judges) ABSENT" in " ".join(result.output.split())
    # the verdicts say what they are: the suite's thresholds on how alike people's reviews are
    mean = sum(s["composite"] for s in doc["samples"]) / len(doc["samples"])
    said = " ".join(result.output.split())
    assert (
        "what the verdicts mean: the suite's thresholds (accept >= 0.8, weak_accept >= 0.6, "
        "weak_reject >= 0.4; bands excellent >= 0.9, good >= 0.75, fair >= 0.5)" in said
    )
    assert f"Their mean composite {mean:.3f} reads as " in said
    assert "review evaluate --thresholds human" in said
    assert "no judge configured" in " ".join(result.output.split())
    # Both reviewers of 173 and of 352 gave RECOMMENDATION 4: MAE 0 on both columns.
    rec = next(r for r in doc["aspect_agreement"] if r["aspect"] == "RECOMMENDATION")
    assert rec["generated"] == rec["human_ceiling"]
    assert (rec["generated"]["n"], rec["generated"]["mae"]) == (4, 0.0)
    # The table is kept with the run in the store.
    with Store(db) as store:
        assert store.records(doc["run_id"], "aspect_agreement") == doc["aspect_agreement"]


def test_evaluate_generated_reviews_without_a_judge(shared_data: Path, tmp_path: Path) -> None:
    gen, _ = _gen_file(tmp_path, shared_data)
    out, html = tmp_path / "out.json", tmp_path / "report.html"
    result = _run(
        "evaluate",
        "--reviews",
        str(gen),
        "--peerread",
        str(shared_data / "peerread"),
        "--json",
        str(out),
        "--html",
        str(html),
        "--db",
        str(tmp_path / "r.db"),
    )
    doc = json.loads(out.read_text())
    # The bad line is reported with its file, line and field; the two others are scored.
    assert doc["errors"] == [
        {"source": str(gen), "line": 2, "field": "scores", "message": doc["errors"][0]["message"]}
    ]
    assert "NOVELTY" in doc["errors"][0]["message"]
    first, bare = doc["samples"]
    assert first["id"] == "acl_2017/dev/660#L1"
    values = first["metrics"]
    assert values["time_taken"] == pytest.approx(TIME_TAKEN)
    assert values["tool_efficiency"] == pytest.approx(TOOL_EFFICIENCY)
    assert values["coordination_quality"] == pytest.approx(COORDINATION)
    # The review is a copy of a human review: BERTScore F1, cosine and jaccard are 1.
    assert values["output_similarity"] == pytest.approx(1.0, abs=1e-5)
    assert values["task_success"] == 1.0
    assert values["planning_judge"] is None
    assert first["coverage"] == pytest.approx(5 / 6)
    expected = (TIME_TAKEN + 1.0 + COORDINATION + TOOL_EFFICIENCY + 1.0) / 5
    assert first["composite"] == pytest.approx(expected, abs=1e-5)
    # (0.5906 + 1 + 0.5976 + 0.6667 + 1) / 5 = 0.7710: weak_accept (0.6 ≤ · < 0.8).
    assert first["recommendation"] == "weak_accept"
    # The bare review has no trace and no duration: Tier 1's similarity only.
    assert bare["coverage"] == pytest.approx(2 / 6)
    assert doc["tiers"]["tier2"]["present"] is False
    assert doc["tiers"]["tier3"]["present"] is True
    assert "Tier 2 (LLM judges) ABSENT" in " ".join(result.output.split())
    # Aspect agreement: 660's reviewers gave RECOMMENDATION 4 and 3 (mean 3.5) → |4 − 3.5|.
    rec = next(r for r in doc["aspect_agreement"] if r["aspect"] == "RECOMMENDATION")
    assert (rec["generated"]["n"], rec["generated"]["mae"]) == (1, 0.5)
    # Ceiling over the papers reviewed (660 and 173): 4 vs 3, 3 vs 4, 4 vs 4, 4 vs 4 → 0.5.
    assert (rec["human_ceiling"]["n"], rec["human_ceiling"]["mae"]) == (4, 0.5)
    assert [p["task_id"] for p in doc["papers"]] == ["acl_2017/dev/660", "acl_2017/dev/173"]
    page = html.read_text()
    assert doc["run_id"] in page
    # the aspect agreement kept with the run is a table of the report too, beside the tiers
    sections = {s["title"]: s for s in embedded(page)[0]["run"]["sections"]}
    assert "generated.mae" in sections["Agreement with the human reviewers"]["columns"]
    assert any("Tier 2 (LLM judges) ABSENT" in t for t in sections["Tiers"]["items"])


def test_evaluate_with_a_judge_on_127_0_0_1(shared_data: Path, tmp_path: Path) -> None:
    gen, _ = _gen_file(tmp_path, shared_data)
    out = tmp_path / "out.json"
    with judge_server() as server:
        _run(
            "evaluate",
            "--reviews",
            str(gen),
            "--peerread",
            str(shared_data / "peerread"),
            "--judge",
            "test-judge",
            "--judge-url",
            server.base_url,
            "--json",
            str(out),
            "--db",
            str(tmp_path / "r.db"),
        )
        assert server.requests  # the judges were really called over HTTP
    doc = json.loads(out.read_text())
    first, bare = doc["samples"]
    values = first["metrics"]
    assert values["planning_judge"] == pytest.approx(PLANNING_VALUE)
    # Reported beside the composite with weight 0.
    assert values["technical_accuracy"] == pytest.approx(TECHNICAL_VALUE)
    assert values["constructiveness"] == pytest.approx(CONSTRUCTIVE_VALUE)
    assert first["coverage"] == pytest.approx(1.0)
    expected = (TIME_TAKEN + 1.0 + COORDINATION + TOOL_EFFICIENCY + PLANNING_VALUE + 1.0) / 6
    assert first["composite"] == pytest.approx(expected, abs=1e-5)
    # No steps to judge for the bare review: the planning judge is None with its reason.
    assert bare["metrics"]["planning_judge"] is None
    assert doc["tiers"]["tier2"]["present"] is True
    assert doc["config"]["suite"]["weights"].get("technical_accuracy", 0) == 0


def test_usage_errors(shared_data: Path, tmp_path: Path) -> None:
    missing = runner.invoke(
        app,
        [
            "review",
            "evaluate",
            "--reviews",
            str(tmp_path / "no.jsonl"),
            "--peerread",
            str(shared_data / "peerread"),
        ],
    )
    assert missing.exit_code == 2
    not_peerread = runner.invoke(app, ["review", "baseline", "--peerread", str(tmp_path)])
    assert not_peerread.exit_code == 2
    assert "reviews" in not_peerread.output


def test_evaluate_with_a_suite_file(shared_data: Path, tmp_path: Path) -> None:
    # Tier 2 weighs nothing (under its former name) and time weighs double: the first line is
    # fully covered and its composite is (2·time + 1 + coordination + tool + 1) / 6.
    gen, _ = _gen_file(tmp_path, shared_data)
    suite = tmp_path / "suite.toml"
    suite.write_text(
        'extends = "review"\n[weights]\nplanning_rational = 0.0\ntime_taken = 2.0\n'
        "task_success = 1.0\ncoordination_quality = 1.0\ntool_efficiency = 1.0\n"
        "output_similarity = 1.0\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.json"
    args = ["evaluate", "--reviews", str(gen), "--peerread", str(shared_data / "peerread")]
    result = _run(*args, "--suite", str(suite), "--json", str(out), "--db", str(tmp_path / "r.db"))
    # the judge's former name is still accepted, with one line saying so
    warned = [line for line in result.output.splitlines() if "deprecated" in line]
    assert warned == [
        "warning: the metric 'planning_rational' is now called 'planning_judge'; the old name "
        "is deprecated"
    ]
    doc = json.loads(out.read_text())
    assert doc["config"]["suite"]["weights"]["planning_judge"] == 0.0
    first = doc["samples"][0]
    assert first["coverage"] == pytest.approx(1.0)
    expected = (2 * TIME_TAKEN + 1.0 + COORDINATION + TOOL_EFFICIENCY + 1.0) / 6
    assert first["composite"] == pytest.approx(expected, abs=1e-5)
    # the packaged model goes in the suite's shared [text] table
    assert doc["config"]["suite"]["text"] == {"model": "all-MiniLM-L6-v2"}
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "review"\n[weights]\nnot_a_metric = 1.0\n', encoding="utf-8")
    result = runner.invoke(app, ["review", *args, "--suite", str(bad)])
    assert result.exit_code == 2
    assert "not_a_metric" in result.output


def test_bertscore_unavailable_is_said_on_the_terminal(shared_data: Path, tmp_path: Path) -> None:
    gen, _ = _gen_file(tmp_path, shared_data)
    missing = tmp_path / "no-such-model"
    result = _run(
        "evaluate", "--reviews", str(gen), "--peerread", str(shared_data / "peerread"),
        "--text-model", str(missing), "--db", str(tmp_path / "r.db"),
    )  # fmt: skip
    said = " ".join(result.output.split())
    assert f"warning: BERTScore is unavailable (BERTScore with '{missing}' failed" in said
    assert "task_success, output_similarity have no value on 2 samples" in said


def _two_papers(tmp_path: Path, shared_data: Path) -> Path:
    """A PeerRead folder with the two papers of ``_gen_file`` only (660 and 173, two human
    reviews each), so that ``review baseline`` on it scores their four held-out reviews."""
    reviews = tmp_path / "peerread/acl_2017/dev/reviews"
    reviews.mkdir(parents=True)
    for paper in ("660", "173"):
        source = shared_data / f"peerread/acl_2017/dev/reviews/{paper}.json"
        (reviews / f"{paper}.json").write_bytes(source.read_bytes())
    return tmp_path / "peerread"


def test_evaluate_shows_the_human_reviewers_beside(shared_data: Path, tmp_path: Path) -> None:
    gen, _ = _gen_file(tmp_path, shared_data)
    peerread = _two_papers(tmp_path, shared_data)
    db, base, out, html = (tmp_path / n for n in ("r.db", "base.json", "out.json", "r.html"))
    _run("baseline", "--peerread", str(peerread), "--json", str(base), "--db", str(db))
    humans = json.loads(base.read_text())["samples"]
    assert len(humans) == 4
    result = _run(
        "evaluate", "--reviews", str(gen), "--peerread", str(peerread), "--json", str(out),
        "--html", str(html), "--db", str(db),
    )  # fmt: skip
    doc = json.loads(out.read_text())
    rows = {r["metric"]: r for r in doc["human_reviewers"]["metrics"]}
    assert list(rows) == [*SIX, "composite"]
    assert doc["human_reviewers"]["samples"] == 4
    # the human column is the baseline's mean over the same papers, metric by metric
    for name in ("output_similarity", "task_success"):
        mean = sum(s["metrics"][name] for s in humans) / 4
        assert rows[name]["human"] == pytest.approx(mean)
        assert rows[name]["n_human"] == 4
    assert rows["composite"]["human"] == pytest.approx(sum(s["composite"] for s in humans) / 4)
    assert rows["time_taken"]["human"] is None and rows["time_taken"]["n_human"] == 0
    # the generated column: the copy succeeds (1.0), the bare review of 173 does not
    assert rows["task_success"]["generated"] == pytest.approx(0.5)
    assert rows["time_taken"]["generated"] == pytest.approx(TIME_TAKEN)
    assert doc["thresholds_rule"] == {"rule": "default"}
    assert doc["config"]["thresholds"] == {"rule": "default"}
    said = " ".join(result.output.split())
    assert "beside the human reviewers (4 held-out reviews of these papers)" in said
    assert "generated human reviewers" in said
    sections = {s["title"]: s for s in embedded(html.read_text())[0]["run"]["sections"]}
    table = sections["Beside the human reviewers"]
    assert table["columns"][:3] == ["metric", "generated", "human reviewers"]
    assert table["rows"][-1][0] == "composite"
    assert "Records: human_reviewers" not in sections
    with Store(db) as store:
        assert store.records(doc["run_id"], "human_reviewers") == doc["human_reviewers"]["metrics"]


def test_evaluate_with_thresholds_from_the_human_reviewers(
    shared_data: Path, tmp_path: Path
) -> None:
    gen, _ = _gen_file(tmp_path, shared_data)
    peerread = _two_papers(tmp_path, shared_data)
    db, base, out = (tmp_path / n for n in ("r.db", "base.json", "out.json"))
    _run("baseline", "--peerread", str(peerread), "--json", str(base), "--db", str(db))
    sims = sorted(
        s["metrics"]["output_similarity"] for s in json.loads(base.read_text())["samples"]
    )
    # two reviews a paper: each is held out against the other, so the pairs tie
    assert sims[0] == pytest.approx(sims[1]) and sims[2] == pytest.approx(sims[3])
    assert sims[1] < sims[2]
    # the median of four: the mean of the middle two; the two above it succeed
    threshold = (sims[1] + sims[2]) / 2
    composites = sorted([sims[0] / 2, sims[1] / 2, (sims[2] + 1) / 2, (sims[3] + 1) / 2])
    # quartiles by linear interpolation: positions 0.75, 1.5 and 2.25 of 0..3
    q1 = composites[0] + 0.75 * (composites[1] - composites[0])
    q2 = (composites[1] + composites[2]) / 2
    q3 = composites[2] + 0.25 * (composites[3] - composites[2])
    result = _run(
        "evaluate", "--reviews", str(gen), "--peerread", str(peerread), "--json", str(out),
        "--db", str(db), "--thresholds", "human",
    )  # fmt: skip
    doc = json.loads(out.read_text())
    used = doc["config"]["thresholds"]
    assert used["rule"] == "human" and used["human_samples"] == 4
    assert used["confidence_threshold"] == pytest.approx(threshold)
    assert used["recommendation"] == pytest.approx(
        {"accept": q3, "weak_accept": q2, "weak_reject": q1}
    )
    suite = doc["config"]["suite"]
    assert suite["options"]["task_success"]["confidence_threshold"] == pytest.approx(threshold)
    assert suite["thresholds"]["accept"] == pytest.approx(q3)
    rows = {r["metric"]: r for r in doc["human_reviewers"]["metrics"]}
    assert rows["task_success"]["human"] == pytest.approx(0.5)
    assert rows["composite"]["human"] == pytest.approx(sum(composites) / 4)
    first = doc["samples"][0]
    assert first["metrics"]["task_success"] == 1.0
    # (0.5906 + 1 + 0.5976 + 0.5 + 1) / 5 = 0.7376 reaches the humans' upper quartile (0.685
    # on this data): accept, where the default cut-offs say weak_accept
    assert first["composite"] >= q3
    assert first["recommendation"] == "accept"
    said = " ".join(result.output.split())
    assert f"task_success at weighted similarity {threshold:.3f} (their median)" in said
    # without two human reviews of a paper reviewed there is nothing to derive from
    lone = tmp_path / "lone.jsonl"
    lone.write_text(json.dumps({"paper_id": "37", "review": "Fine."}) + "\n", encoding="utf-8")
    failed = runner.invoke(
        app,
        ["review", "evaluate", "--reviews", str(lone), "--peerread", str(shared_data / "peerread"),
         "--thresholds", "human", "--db", str(db), "--no-progress"],
    )  # fmt: skip
    assert failed.exit_code != 0
    assert "--thresholds human: no human review" in " ".join(failed.output.split())


def test_a_run_stored_under_a_former_name_still_displays(tmp_path: Path) -> None:
    # A run scored before the planning judge was renamed: its metric rows hold the old name.
    from agentgauge.config import Suite
    from agentgauge.engine import EvaluateOptions, evaluate
    from agentgauge.workflows.review_report import tier_status

    old = "planning_rational"
    suite = Suite(
        name="old", metrics=[old], weights={old: 1.0}, options={old: {"fallback": "heuristic"}}
    )
    db, out = tmp_path / "r.db", tmp_path / "show.json"
    trace = Trace.model_validate(AGENT_TRACE)
    with Store(db) as store:
        run_id = evaluate([trace], suite, store=store, options=EvaluateOptions(progress=False))
        samples = list(store.iter_samples(run_id))
    # no error among 6 steps; 2 distinct calls among get_paper, get_paper, save_review
    assert samples[0].values == {old: pytest.approx((1 + 2 / 3) / 2)}
    assert tier_status(samples, [old])["tier2"]["present"] is True
    result = runner.invoke(app, ["show", run_id, "--db", str(db), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert old in result.output
    doc = json.loads(out.read_text())
    assert doc["samples"][0]["metrics"][old] == pytest.approx(5 / 6)
