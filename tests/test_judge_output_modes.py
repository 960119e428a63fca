"""Local and non-OpenAI models that answer: a fake server on 127.0.0.1 behaving like each kind of
local endpoint (no tool calling; neither tools nor response_format, answering plain JSON, JSON
in fences, JSON between sentences, a wrong field), reached through pydantic-ai's OpenAI
provider. The output mode is probed once per run, and every behaviour yields valid verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentgauge.judges import client as judge_client
from agentgauge.judges.output import read_verdict
from agentgauge.judges.prompts import TrajectoryVerdict
from agentgauge.metrics.base import create_metric
from agentgauge.model import Step, StepKind, Task, ToolCall, Trace
from judge_server import (
    RUBRIC_VALUE,
    JudgeServer,
    judge_options,
)


@pytest.fixture(autouse=True)
def _fresh(fresh_judges: None) -> None:
    """Each test starts with no remembered verdict."""


def _trace(i: int) -> Trace:
    return Trace(
        id=f"t{i}",
        task=Task(id="q", input=f"question {i}"),
        output=f"answer {i}",
        steps=[
            Step(index=0, kind=StepKind.tool_call, tool_call=ToolCall(name="f", arguments={})),
            Step(index=1, kind=StepKind.llm, content=f"answer {i}"),
        ],
    )


def _uses(request: dict[str, Any]) -> str:
    body = request["body"]
    if body.get("tools"):
        return "tool"
    if body.get("response_format"):
        return "native"
    return "prompted"


@pytest.mark.parametrize(
    ("behaviour", "mode"),
    [
        ("tools", "tool"),
        ("no_tools", "native"),
        ("text", "prompted"),
        ("fenced", "prompted"),
        ("prose", "prompted"),
        ("wrong_field", "prompted"),
    ],
)
def test_every_local_behaviour_yields_valid_verdicts(
    server: JudgeServer, tmp_path: Path, behaviour: str, mode: str
) -> None:
    server.behaviour = behaviour
    options = judge_options(
        server, tmp_path, output_mode="auto", criteria="Helpful.", steps=["Decide."]
    )
    rubric = create_metric("rubric", options)
    results = rubric.score_batch([_trace(i) for i in range(3)])
    for result in results:
        assert result.value == pytest.approx(RUBRIC_VALUE), result.reason
        assert result.details["output_mode"] == mode
        assert result.details["score"] == 4
    # the probe: tried once per run, in order, until a mode works
    probes = [r for r in server.requests if "connectivity check" in json.dumps(r["body"])]
    order = ["tool", "native"]
    assert [_uses(r) for r in probes] == order[: order.index(mode) + 1 if mode in order else 2]
    judged = [r for r in server.requests if r not in probes]
    assert {_uses(r) for r in judged} == {mode}
    # one repair request per prompt where the first answer had a wrong field
    assert len(judged) == (6 if behaviour == "wrong_field" else 3)
    if behaviour == "wrong_field":
        repairs = [r for r in judged if "does not validate" in json.dumps(r["body"]["messages"])]
        assert len(repairs) == 3
        # the repair request names the error: the renamed field is missing
        assert "reasoning: Field required" in json.dumps(repairs[0]["body"]["messages"][-1])
    # a second batch of the same run reuses the mode without probing again
    server.requests.clear()
    judge_client._MEMO.clear()
    rubric.score_batch([_trace(9)])
    assert [_uses(r) for r in server.requests] == [mode] * (2 if behaviour == "wrong_field" else 1)


def test_the_probe_is_kept_for_the_run_in_the_cache(server: JudgeServer, tmp_path: Path) -> None:
    server.behaviour = "text"
    options = judge_options(server, tmp_path, output_mode="auto", criteria="Helpful.", steps=["x"])
    rubric = create_metric("rubric", options)
    # the engine asks before the run: the probe, and the record that says which mode
    (record,) = rubric.prepare()
    assert (record["purpose"], record["mode"], record["error"]) == ("output mode", "prompted", None)
    rubric.score(_trace(0))
    assert sum("connectivity check" in json.dumps(r["body"]) for r in server.requests) == 2
    # another process of the run (the memo gone, the cache file kept): no probe
    judge_client._MODES_SEEN.clear()
    judge_client._MEMO.clear()
    server.requests.clear()
    result = create_metric("rubric", options).score(_trace(1))
    assert result.details["output_mode"] == "prompted"
    assert [_uses(r) for r in server.requests] == ["prompted"]


def test_a_configured_mode_is_used_without_probing(server: JudgeServer, tmp_path: Path) -> None:
    server.behaviour = "prose"
    options = judge_options(
        server, tmp_path, output_mode="prompted", criteria="Helpful.", steps=["x"]
    )
    result = create_metric("rubric", options).score(_trace(0))
    assert result.value == pytest.approx(RUBRIC_VALUE)
    assert [_uses(r) for r in server.requests] == ["prompted"]
    system = server.requests[0]["body"]["messages"][0]["content"]
    assert "Answer with one JSON object and nothing else" in system
    assert '"score"' in system  # the verdict's schema


def test_a_refused_key_is_not_taken_for_a_missing_feature(
    server: JudgeServer, tmp_path: Path
) -> None:
    server.script = ["401"]
    options = judge_options(server, tmp_path, output_mode="auto", criteria="Helpful.", steps=["x"])
    result = create_metric("rubric", options).score(_trace(0))
    assert result.value is None
    assert "output modes could not be probed" in (result.reason or "")
    assert "401" in (result.reason or "")


def test_read_verdict_is_strict() -> None:
    good = {"reasoning": "r", "issues": [], "score": 3}
    text = "Sure!\n```json\n" + json.dumps(good) + "\n```\nAnything else?"
    assert read_verdict(text, TrajectoryVerdict).model_dump() == good
    # prose first, a stray brace, then the object; trailing text ignored
    assert read_verdict("I think {so}: " + json.dumps(good) + " done", TrajectoryVerdict)
    with pytest.raises(ValueError, match="holds no JSON object"):
        read_verdict("score: 3", TrajectoryVerdict)
    with pytest.raises(ValueError, match="score"):
        read_verdict(json.dumps({**good, "score": "3"}), TrajectoryVerdict)  # no coercion
    with pytest.raises(ValueError, match="score"):
        read_verdict(json.dumps({**good, "score": 9}), TrajectoryVerdict)  # off the scale
    with pytest.raises(ValueError, match="score"):
        read_verdict(json.dumps({"reasoning": "r", "issues": [], "scor": 3}), TrajectoryVerdict)
