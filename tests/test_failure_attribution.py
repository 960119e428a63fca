"""failure_attribution: the first responsible step, its agent and the category, from
deterministic evidence first (reference divergence, tool errors, loops, lost hand-offs) and the
judge only where the evidence is silent (a fake judge on 127.0.0.1 through pydantic-ai's
OpenAI provider); the viewer's sample document names the step to mark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.config import Suite
from agentgauge.documents.pages import sample_document
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.metrics.base import create_metric
from agentgauge.model import ExpectedCall, Step, StepKind, Task, ToolCall, Trace
from agentgauge.store import Store
from judge_server import JudgeServer, judge_options


@pytest.fixture(autouse=True)
def _fresh(fresh_judges: None) -> None:
    """Each test starts with no remembered verdict."""


def _call(i: int, name: str, agent: str = "planner", **args: Any) -> Step:
    return Step(
        index=i, kind=StepKind.tool_call, agent=agent, tool_call=ToolCall(name=name, arguments=args)
    )


def _result(i: int, error: str | None = None) -> Step:
    return Step(index=i, kind=StepKind.tool_result, result=None if error else "ok", error=error)


def _trace(steps: list[Step], **task: Any) -> Trace:
    return Trace(id="t", task=Task(id="q", input="book a trip", **task), output="done", steps=steps)


BOOK = [
    ExpectedCall(name="search", arguments={"city": ["Paris"]}),
    ExpectedCall(name="book", arguments={"city": ["Paris"], "nights": [2]}),
]


def _attribute(trace: Trace) -> Any:
    return create_metric("failure_attribution", {}).score(trace)


def test_wrong_tool_against_the_reference() -> None:
    trace = _trace(
        [_call(0, "search", city="Paris"), _result(1), _call(2, "cancel", agent="booker")],
        expected_calls=BOOK,
    )
    result = _attribute(trace)
    assert result.details["step"] == 2 and result.details["agent"] == "booker"
    assert result.details["category"] == "wrong tool"
    assert result.details["evidence"] == "reference"
    assert result.value == pytest.approx(2 / 3)  # two of three steps before it


def test_wrong_arguments_against_the_expected_calls() -> None:
    trace = _trace(
        [_call(0, "search", city="Paris"), _result(1), _call(2, "book", city="Rome", nights=2)],
        expected_calls=BOOK,
    )
    result = _attribute(trace)
    assert (result.details["step"], result.details["category"]) == (2, "wrong arguments")
    assert "city=Rome" in result.details["note"]


def test_premature_answer() -> None:
    steps = [_call(0, "search", city="Paris"), _result(1), Step(index=2, kind=StepKind.llm)]
    result = _attribute(_trace(steps, expected_calls=BOOK))
    assert (result.details["step"], result.details["category"]) == (2, "premature answer")


def test_an_ignored_tool_error() -> None:
    steps = [
        _call(0, "search", city="Paris"),
        _result(1, error="HTTP 503"),
        _call(2, "search", agent="retrier", city="Paris"),
        _result(3),
    ]
    result = _attribute(_trace(steps))
    assert (result.details["step"], result.details["category"]) == (
        2,
        "ignored tool result or error",
    )
    assert result.details["agent"] == "retrier"
    # an error answered with another call is a reaction, not an ignored error
    reacted = [*steps[:2], _call(2, "search", city="Paris, France"), _result(3)]
    assert _attribute(_trace(reacted)).value is None


def test_a_loop_and_a_lost_handoff() -> None:
    loop = [_call(i, "poll", job=7) for i in range(4)]
    result = _attribute(_trace(loop))
    assert (result.details["step"], result.details["category"]) == (2, "loop")
    handoff = [
        _call(0, "search", city="Paris"),
        Step(index=1, kind=StepKind.handoff, agent="planner", recipient="billing"),
        Step(index=2, kind=StepKind.llm, agent="planner", content="done"),
    ]
    result = _attribute(_trace(handoff))
    assert (result.details["step"], result.details["category"]) == (1, "lost hand-off")
    assert result.details["agent"] == "planner"


def test_no_failure_is_none() -> None:
    steps = [_call(0, "search", city="Paris"), _result(1)]
    result = _attribute(_trace(steps, expected_output="done"))
    assert result.value is None and "no failure" in (result.reason or "")


def test_the_judge_only_where_the_evidence_is_silent(server: JudgeServer, tmp_path: Path) -> None:
    def judge(body: dict[str, Any]) -> dict[str, Any] | None:
        fields = str(body.get("tools"))
        if "category" not in fields:
            return None
        return {
            "reasoning": "The writer answered early.",
            "step": 2,
            "agent": "writer",
            "category": "premature answer",
        }

    server.answer = judge
    silent = Trace(
        id="silent",
        task=Task(id="q", input="sum 2 and 2", expected_output="4"),
        output="5",
        steps=[
            _call(0, "add", agent="calc", a=2, b=2),
            _result(1),
            Step(index=2, kind=StepKind.llm, agent="writer", content="5"),
        ],
    )
    loud = _trace([_call(i, "poll", job=7) for i in range(3)], expected_output="x")
    metric = create_metric("failure_attribution", judge_options(server, tmp_path))
    judged, ruled = metric.score_batch([silent, loud])
    assert judged.details["evidence"] == "judge"
    assert (judged.details["step"], judged.details["agent"]) == (2, "writer")
    assert judged.value == pytest.approx(2 / 3)
    assert ruled.details["evidence"] == "loop"
    # one judge call: for the silent trace only
    asked = [r for r in server.requests if "category" in str(r["body"].get("tools"))]
    assert len(asked) == 1 and "<expected_output>" in str(asked[0]["body"]["messages"])
    # without a judge the silent trace is None with the reason, never a guess
    alone = create_metric("failure_attribution", {}).score(silent)
    assert alone.value is None and "no judge configured" in (alone.reason or "")


def test_the_viewer_marks_the_step(tmp_path: Path) -> None:
    trace = _trace(
        [_call(0, "search", city="Paris"), _result(1), _call(2, "cancel", agent="booker")],
        expected_calls=BOOK,
    )
    suite = Suite(name="why", metrics=["failure_attribution"])
    with Store(tmp_path / "a.db") as store:
        run_id = evaluate([trace], suite, store=store, options=EvaluateOptions(progress=False))
        key = next(store.iter_samples(run_id)).key
        doc = sample_document(store, run_id, key)
    assert doc["attribution"]["step"] == 2
    assert doc["attribution"]["category"] == "wrong tool"
    assert doc["attribution"]["agent"] == "booker"
