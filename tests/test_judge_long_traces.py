"""Long traces read whole: a 2,000-step trace with one wrong step at step 1,700, judged by a fake
tool-using judge on 127.0.0.1 through pydantic-ai's OpenAI provider. The truncated view cannot
see the wrong step; the judge exploring with tools reads it (its requests show the read_step
call) and scores the trace as wrong; judged in windows, the window holding it reports it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from agentgauge.judges import client as judge_client
from agentgauge.judges.explore import TraceExplorer, windows
from agentgauge.metrics.base import create_metric
from agentgauge.model import Step, StepKind, Task, ToolCall, Trace
from judge_server import JudgeServer, judge_options

N_STEPS = 2000
WRONG = 1700


@pytest.fixture(autouse=True)
def _judge(server: JudgeServer, fresh_judges: None) -> None:
    server.answer = _judge_answer


def _long_trace() -> Trace:
    steps = []
    for i in range(N_STEPS):
        if i % 2 == 0:
            account = "ACME-7" if i != WRONG else "OTHER-9"
            steps.append(
                Step(
                    index=i,
                    kind=StepKind.tool_call,
                    agent="clerk",
                    tool_call=ToolCall(name="post_entry", arguments={"account": account, "n": i}),
                )
            )
        else:
            error = "ERROR: posted to the wrong account OTHER-9" if i == WRONG + 1 else None
            steps.append(
                Step(index=i, kind=StepKind.tool_result, result={"ok": error is None}, error=error)
            )
    return Trace(
        id="ledger",
        task=Task(id="post", description="Post the 1,000 entries to account ACME-7."),
        output="All 1,000 entries posted.",
        steps=steps,
    )


def _seen(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


def _judge_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A judge that fails the path when it has seen the error, and passes it otherwise."""
    system = body["messages"][0]["content"]  # holds the schema in prompted mode
    fields = json.dumps(body.get("tools") or body.get("response_format") or system)
    seen_error = "ERROR" in _seen(body)
    if "problems" in fields:  # one window's findings
        problems = [{"step": WRONG + 1, "issue": "ERROR: wrong account"}] if seen_error else []
        return {"problems": problems, "achieved": "entries posted"}
    if seen_error:
        return {
            "reasoning": "Step 1700 posted to the wrong account.",
            "issues": ["1700"],
            "score": 1,
        }
    return {"reasoning": "Every call as expected.", "issues": [], "score": 5}


def _options(server: JudgeServer, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return judge_options(server, tmp_path, use_reference=False, **extra)


def test_truncation_cannot_see_the_wrong_step(server: JudgeServer, tmp_path: Path) -> None:
    metric = create_metric("trajectory_judge", _options(server, tmp_path, long_traces="truncate"))
    result = metric.score(_long_trace())
    prompt = _seen(server.requests[0]["body"])
    assert f"[{WRONG}]" not in prompt and "steps omitted to fit the budget" in prompt
    assert result.value == 1.0  # the middle was cut out: the judge saw nothing wrong


def test_the_tool_using_judge_reads_the_wrong_step(server: JudgeServer, tmp_path: Path) -> None:
    metric = create_metric("trajectory_judge", _options(server, tmp_path))
    result = metric.score(_long_trace())
    assert result.value == 0.0, result.reason
    # three requests: search, read_step(1700's result), the verdict
    assert len(server.requests) == 3
    first = server.requests[0]["body"]
    tools = {t["function"]["name"] for t in first["tools"]}
    assert {"list_steps", "read_step", "search", "tool_calls"} <= tools
    assert "too many to show here" in _seen(first) and f"[{WRONG}]" not in _seen(first)
    called = [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in server.requests[-1]["body"]["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]
    assert called == [("search", {"text": "ERROR"}), ("read_step", {"index": WRONG + 1})]
    explored = result.details["explored"]
    assert explored["read_steps"] == [WRONG + 1]
    assert [c["tool"] for c in explored["tool_calls"]] == ["search", "read_step"]
    # cached: the same trace again costs nothing
    server.requests.clear()
    judge_client._MEMO.clear()
    assert metric.score(_long_trace()).value == 0.0
    assert server.requests == []


def test_judged_in_windows(server: JudgeServer, tmp_path: Path) -> None:
    metric = create_metric("trajectory_judge", _options(server, tmp_path, long_traces="chunks"))
    result = metric.score(_long_trace())
    assert result.value == 0.0, result.reason
    spans = result.details["explored"]["windows"]
    assert len(spans) > 2 and spans[0][0] == 0 and spans[-1][1] == N_STEPS
    assert len(server.requests) == len(spans) + 1
    final = _seen(server.requests[-1]["body"])
    assert f"step {WRONG + 1}: ERROR: wrong account" in final


def test_prompted_endpoint_falls_back_to_windows(server: JudgeServer, tmp_path: Path) -> None:
    server.behaviour = "text"
    metric = create_metric("trajectory_judge", _options(server, tmp_path, output_mode="prompted"))
    result = metric.score(_long_trace())
    assert result.value == 0.0
    assert result.details["explored"]["strategy"] == "chunks"


def test_a_judge_that_could_not_see_gives_none(server: JudgeServer, tmp_path: Path) -> None:
    server.answer = lambda body: {
        "reasoning": "Could not find it.",
        "issues": [],
        "score": 3,
        "saw_enough": False,
    }
    metric = create_metric("trajectory_judge", _options(server, tmp_path))
    result = metric.score(_long_trace())
    assert result.value is None
    assert "could not see what it needed" in (result.reason or "")


def test_the_tool_budget_is_enforced() -> None:
    explorer = TraceExplorer(_long_trace(), max_calls=1)
    assert f"[{WRONG + 1}]" in explorer.search("wrong account")
    assert "budget spent" in explorer.read_step(WRONG + 1)
    assert explorer.trail()["budget_spent"] is True
    assert explorer.trail()["read_steps"] == []
    listed = TraceExplorer(_long_trace(), max_calls=5).list_steps(kind="tool_result", start=1690)
    assert listed.splitlines()[0].startswith("[1691] tool_result")
    assert "more (page with start)" in listed


def test_windows_cover_every_step_within_the_budget() -> None:
    trace = _long_trace()
    spans = windows(trace.steps, 4000)
    assert spans[0][0] == 0 and spans[-1][1] == N_STEPS
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
