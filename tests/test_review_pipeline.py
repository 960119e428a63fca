"""The review pipeline: GEN lines and the human baseline as Traces, aspect agreement (hand
values checked against scipy / scikit-learn), per-paper figures and the composite."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from agentgauge.io.jsonl import RawLine, ReadError
from agentgauge.model import Trace
from agentgauge.review.agreement import aspect_agreement
from agentgauge.review.loader import PeerReadPaper, load_peerread
from agentgauge.review.pipeline import (
    PaperIndex,
    baseline_traces,
    human_comparison,
    human_thresholds,
    parse_generated_line,
    per_paper,
    read_generated,
    review_agreement,
)
from agentgauge.scoring import composite
from agentgauge.stats import leave_one_out
from agentgauge.store import MetricRow, SampleRow

# --- aspect agreement -------------------------------------------------------------------------

# Four papers' human scores (R = RECOMMENDATION, C = CLARITY).
HUMANS = [
    [{"RECOMMENDATION": 4, "CLARITY": 3}, {"RECOMMENDATION": 2, "CLARITY": 5}],  # mean R 3, C 4
    [{"RECOMMENDATION": 5}, {"RECOMMENDATION": 4}, {"RECOMMENDATION": 3}],  # mean R 4
    [{"RECOMMENDATION": 1, "CLARITY": 2}],  # mean R 1, C 2
    [{"RECOMMENDATION": 2}, {"RECOMMENDATION": 3}],  # mean R 2.5
]
GENERATED = [
    {"RECOMMENDATION": 4, "CLARITY": 4},
    {"RECOMMENDATION": 5},
    {"RECOMMENDATION": 2, "CLARITY": 1},
    {"RECOMMENDATION": 2},
]


def test_aspect_agreement_by_hand() -> None:
    table = aspect_agreement(zip(GENERATED, HUMANS, strict=True))
    rec = table["RECOMMENDATION"]
    # pairs (generated, human mean): (4, 3), (5, 4), (2, 1), (2, 2.5) → MAE (1+1+1+0.5)/4.
    assert rec.n == 4
    assert rec.mae == pytest.approx(0.875)
    # ranks: generated [3, 4, 1.5, 1.5], human [3, 4, 1, 2]; centred [.5, 1.5, -1, -1] and
    # [.5, 1.5, -1.5, -.5]: rho = 4.5 / √(4.5 · 5) = √0.9.
    assert rec.spearman == pytest.approx(math.sqrt(0.9))
    reference = spearmanr([4, 5, 2, 2], [3, 4, 1, 2.5])
    assert rec.spearman == pytest.approx(reference.statistic)
    assert rec.spearman_p == pytest.approx(reference.pvalue)
    # CLARITY: (4, 4), (1, 2) → MAE 0.5; two pairs are too few for a rank correlation.
    clarity = table["CLARITY"]
    assert (clarity.n, clarity.mae, clarity.spearman) == (2, 0.5, None)
    assert table["ORIGINALITY"].n == 0
    assert table["ORIGINALITY"].mae is None


def test_human_ceiling_is_leave_one_out() -> None:
    # Each reviewer against the others' mean; paper 3 has one reviewer and drops out.
    # R: (4, 2), (2, 4), (5, 3.5), (4, 4), (3, 4.5), (2, 3), (3, 2) → |err| 2+2+1.5+0+1.5+1+1 = 9.
    ceiling = aspect_agreement(leave_one_out(HUMANS))
    rec = ceiling["RECOMMENDATION"]
    assert rec.n == 7
    assert rec.mae == pytest.approx(9 / 7)
    reference = spearmanr([4, 2, 5, 4, 3, 2, 3], [2, 4, 3.5, 4, 4.5, 3, 2])
    assert rec.spearman == pytest.approx(reference.statistic)
    # C: (3, 5), (5, 3) → MAE 2.
    assert ceiling["CLARITY"].mae == pytest.approx(2.0)


def test_constant_scores_have_no_rank_correlation() -> None:
    generated = [{"RECOMMENDATION": 3}] * 4
    table = aspect_agreement(zip(generated, HUMANS, strict=True))
    # (3, 3), (3, 4), (3, 1), (3, 2.5): MAE (0 + 1 + 2 + 0.5)/4; a constant side → no rho.
    assert table["RECOMMENDATION"].mae == pytest.approx(0.875)
    assert table["RECOMMENDATION"].spearman is None


# --- real PeerRead: the baseline and GEN lines ------------------------------------------------


@pytest.fixture(scope="module")
def papers(shared_data: Path) -> list[PeerReadPaper]:
    corpus = load_peerread(shared_data / "peerread")
    assert not corpus.errors
    return corpus.papers


def _paper(papers: list[PeerReadPaper], task_id: str) -> PeerReadPaper:
    return next(p for p in papers if f"{p.venue}/{p.split}/{p.paper_id}" == task_id)


def test_baseline_holds_out_each_human_review(papers: list[PeerReadPaper]) -> None:
    paper = _paper(papers, "acl_2017/dev/660")  # two reviews, RECOMMENDATION 4 and 3
    references = paper.to_task().references
    traces = list(baseline_traces([paper, _paper(papers, "acl_2017/dev/37")]))  # 37: one review
    assert [t.id for t in traces] == ["acl_2017/dev/660#human0", "acl_2017/dev/660#human1"]
    for i, trace in enumerate(traces):
        assert isinstance(trace.output, dict)
        assert trace.output["review"] == references[i]
        assert trace.task.references == [references[1 - i]]
        assert trace.task.metadata["held_out"] == i
        assert trace.task.id == "acl_2017/dev/660"
    assert traces[0].output["scores"]["RECOMMENDATION"] == 4.0  # type: ignore[index]
    assert traces[0].task.metadata["human_scores"][0]["RECOMMENDATION"] == 3.0  # type: ignore[index]


def test_baseline_agreement_equals_the_human_ceiling(papers: list[PeerReadPaper]) -> None:
    # The baseline's "generated" reviews are the humans held out in turn, so both columns of
    # the table are computed from the same pairs.
    sample = papers[:40]
    table = review_agreement(baseline_traces(sample), sample)
    rec = next(row for row in table if row.aspect == "RECOMMENDATION")
    assert rec.generated == rec.human_ceiling
    assert rec.generated.n == sum(
        len(p.to_task().references) for p in sample if len(p.to_task().references) > 1
    )


def _raw(obj: object, line: int = 1) -> RawLine:
    return RawLine("gen.jsonl", line, obj if isinstance(obj, str) else json.dumps(obj))


def test_generated_line_with_an_agent_trace(papers: list[PeerReadPaper]) -> None:
    index = PaperIndex(papers)
    agent_trace = {
        "id": "run-7",
        "task": {"id": "whatever", "reference_trajectory": ["get_paper", "save_review"]},
        "steps": [
            {
                "index": 0,
                "kind": "tool_call",
                "agent": "manager",
                "tool_call": {"name": "get_paper"},
            }
        ],
        "duration_s": 12.0,
    }
    line = {
        "paper_id": "660",
        "review": "A solid paper.",
        "scores": {"RECOMMENDATION": 4, "CLARITY": 3.5},
        "trace": agent_trace,
    }
    trace = parse_generated_line(_raw(line, 3), index)
    assert isinstance(trace, Trace)
    assert trace.id == "acl_2017/dev/660#L3"
    assert trace.output == {
        "review": "A solid paper.",
        "scores": {"RECOMMENDATION": 4.0, "CLARITY": 3.5},
    }
    assert trace.task.references == _paper(papers, "acl_2017/dev/660").to_task().references
    assert trace.task.reference_trajectory == ["get_paper", "save_review"]
    assert [s.tool_call.name for s in trace.steps if s.tool_call] == ["get_paper"]
    assert trace.duration_s == 12.0
    assert trace.metadata["agent_trace_id"] == "run-7"
    # duration_s on the line overrides the trace's; an int id is read as a string.
    line2 = {**line, "paper_id": 660, "duration_s": 2.5}
    trace2 = parse_generated_line(_raw(line2), index)
    assert isinstance(trace2, Trace)
    assert trace2.duration_s == 2.5


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("{not json", None, "invalid JSON"),
        ("[1, 2]", None, "expected a JSON object"),
        ({"review": "x"}, "paper_id", "Field required"),
        ({"paper_id": "660"}, "review", "Field required"),
        ({"paper_id": "660", "review": "  \n"}, "review", "the review is empty"),
        ({"paper_id": "660", "review": "x", "score": {}}, "score", "Extra inputs"),
        ({"paper_id": "660", "review": "x", "scores": {"NOVELTY": 3}}, "scores", "NOVELTY"),
        ({"paper_id": "660", "review": "x", "scores": {"CLARITY": 7}}, "scores", "outside"),
        ({"paper_id": "660", "review": "x", "scores": {"CLARITY": 10**400}}, "scores", "outside"),
        ({"paper_id": "660", "review": "x", "scores": {"CLARITY": True}}, "scores", "number"),
        ({"paper_id": "660", "review": "x", "duration_s": -1}, "duration_s", "greater"),
        ({"paper_id": "12", "review": "x"}, "paper_id", "ambiguous"),
        ({"paper_id": "99999", "review": "x"}, "paper_id", "no paper"),
        (
            {
                "paper_id": "660",
                "review": "x",
                "trace": {"id": "t", "task": {"id": "t"}, "steps": [{"index": 0, "kind": "sleep"}]},
            },
            "trace.steps[0].kind",
            "Input should be",
        ),
    ],
)
def test_bad_generated_lines_name_the_field(
    papers: list[PeerReadPaper], line: object, field: str | None, message: str
) -> None:
    error = parse_generated_line(_raw(line, 5), PaperIndex(papers))
    assert isinstance(error, ReadError)
    assert (error.source, error.line, error.field) == ("gen.jsonl", 5, field)
    assert message in error.message


def test_an_ambiguous_id_resolves_with_venue_and_split(
    papers: list[PeerReadPaper], tmp_path: Path
) -> None:
    gen = tmp_path / "gen.jsonl"
    lines = [
        {"paper_id": "conll_2016/train/12", "review": "ok"},
        "oops",
        {"paper_id": "acl_2017/train/12", "review": "ok"},
    ]
    gen.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    items = list(read_generated(gen, PaperIndex(papers)))
    assert [type(i).__name__ for i in items] == ["Trace", "ReadError", "Trace"]
    assert [i.task.id for i in items if isinstance(i, Trace)] == [
        "conll_2016/train/12",
        "acl_2017/train/12",
    ]
    assert isinstance(items[1], ReadError) and items[1].line == 2


# --- per-paper figures and the composite ------------------------------------------------------


def _sample(
    seq: int,
    task_id: str,
    metrics: dict[str, float | None],
    composite: float | None,
    coverage: float,
) -> SampleRow:
    return SampleRow(
        key=str(seq),
        seq=seq,
        source=None,
        line=None,
        trace_id=f"trace-{seq}",
        task_id=task_id,
        composite=composite,
        coverage=coverage,
        recommendation=None,
        band=None,
        error=None,
        details={},
        metrics=tuple(MetricRow(name, value, None, None) for name, value in metrics.items()),
    )


def test_per_paper_means_and_recommendation() -> None:
    samples = [
        _sample(0, "a", {"x": 0.9, "y": None}, composite=0.9, coverage=0.5),
        _sample(1, "a", {"x": 0.5, "y": 0.4}, composite=0.5, coverage=1.0),
        _sample(2, "b", {"x": None}, composite=None, coverage=0.0),
    ]
    a, b = per_paper(samples)
    # a: x (0.9 + 0.5)/2 = 0.7; y only 0.4; composite 0.7 → weak_accept (≥ 0.6), weight 0.7.
    assert a["n_samples"] == 2
    assert a["metrics"] == {"x": pytest.approx(0.7), "y": 0.4}
    assert a["composite"] == pytest.approx(0.7)
    assert a["coverage"] == pytest.approx(0.75)
    assert (a["recommendation"], a["recommendation_weight"]) == ("weak_accept", 0.7)
    assert b["composite"] is None and b["recommendation"] is None


def test_review_composite_with_a_missing_tier() -> None:
    from agentgauge.config import BUILTIN_SUITES

    weights = BUILTIN_SUITES["review"]["weights"]
    # time 0.5, task_success 1, coordination 0.6, tool 0.8, output 0.75; no judge (Tier 2).
    values = {
        "time_taken": 0.5,
        "task_success": 1.0,
        "coordination_quality": 0.6,
        "tool_efficiency": 0.8,
        "planning_judge": None,
        "output_similarity": 0.75,
    }
    result = composite(values, weights)
    assert result.value == pytest.approx((0.5 + 1.0 + 0.6 + 0.8 + 0.75) / 5)
    assert result.coverage == pytest.approx(5 / 6)
    assert result.missing == ("planning_judge",)


def test_human_comparison_means_per_metric_and_composite() -> None:
    generated = [
        _sample(1, "p", {"task_success": 1.0, "time_taken": 0.5}, composite=0.75, coverage=1.0),
        _sample(2, "q", {"task_success": 0.0, "time_taken": None}, composite=0.0, coverage=0.5),
    ]
    human = [
        _sample(3, "p", {"task_success": 0.0, "time_taken": None}, composite=0.2, coverage=0.5),
        _sample(4, "p", {"task_success": 0.0, "time_taken": None}, composite=0.4, coverage=0.5),
        _sample(5, "q", {"task_success": 1.0, "time_taken": None}, composite=0.9, coverage=0.5),
    ]
    rows = human_comparison(generated, human, ["task_success", "time_taken"])
    assert rows == [
        {"metric": "task_success", "generated": 0.5, "human": pytest.approx(1 / 3),
         "n_generated": 2, "n_human": 3},
        {"metric": "time_taken", "generated": 0.5, "human": None, "n_generated": 1, "n_human": 0},
        {"metric": "composite", "generated": 0.375, "human": pytest.approx(0.5),
         "n_generated": 2, "n_human": 3},
    ]  # fmt: skip


def test_human_thresholds_median_and_quartiles() -> None:
    # median of 0.2, 0.4, 0.6 is 0.4; quartiles of 0.1, 0.2, 0.3, 0.5 at positions 0.75,
    # 1.5 and 2.25: 0.1 + 0.75·0.1, (0.2 + 0.3)/2, 0.3 + 0.25·0.2
    derived = human_thresholds([0.6, 0.2, 0.4], [0.5, 0.1, 0.3, 0.2])
    assert derived["confidence_threshold"] == pytest.approx(0.4)
    assert derived["recommendation"] == pytest.approx(
        {"accept": 0.35, "weak_accept": 0.25, "weak_reject": 0.175}
    )
    assert human_thresholds([0.3, 0.5], []) == {"confidence_threshold": pytest.approx(0.4)}
    one = human_thresholds([0.3], [0.6])
    assert one["recommendation"] == {"accept": 0.6, "weak_accept": 0.6, "weak_reject": 0.6}
    with pytest.raises(ValueError, match="no human review"):
        human_thresholds([], [0.5])
