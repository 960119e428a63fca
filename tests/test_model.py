import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agentgauge.model import Step, StepKind, Task, ToolCall, Trace, trace_json_schema


def _full_trace() -> Trace:
    return Trace(
        id="r1",
        task=Task(
            id="t1",
            input={"question": "2+2?", "nested": [1, 2.5, None, True]},
            description="add",
            expected_output={"answer": 4},
            references=["four"],
            category="reasoning",
            difficulty="easy",
            tools=[{"name": "calc", "parameters": {"type": "object", "properties": {}}}],
            expected_calls=[{"name": "calc", "arguments": {"x": [1, ""]}}],
            reference_trajectory=["calc"],
            optimal_tools={"math": "calc"},
        ),
        output={"answer": 4},
        steps=[
            Step(index=0, kind="reasoning", agent="a", content="think"),
            Step(
                index=1,
                kind="tool_call",
                agent="a",
                tool_call=ToolCall(id="c0", name="calc", arguments={"x": 1}),
                started_at=datetime(2026, 1, 1, tzinfo=UTC),
                duration_s=0.25,
                usage={"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.001},
            ),
            Step(index=2, kind="message", agent="a", recipient="b", message_type="handoff"),
        ],
        params={"temperature": 0.2},
        duration_s=1.5,
    )


def test_json_round_trip_is_exact() -> None:
    trace = _full_trace()
    text = trace.model_dump_json()
    again = Trace.model_validate_json(text)
    assert again == trace
    assert again.model_dump_json() == text
    assert json.loads(text)["steps"][1]["tool_call"]["arguments"] == {"x": 1}


def test_unknown_field_and_bad_kind_are_rejected() -> None:
    with pytest.raises(ValidationError, match="outptu"):
        Trace.model_validate({"id": "x", "task": {"id": "t"}, "outptu": 1})
    with pytest.raises(ValidationError, match="kind"):
        Step.model_validate({"index": 0, "kind": "dance"})
    with pytest.raises(ValidationError, match="tool_call"):
        Step(index=0, kind=StepKind.tool_call)


def test_wall_time_falls_back_to_timestamps_then_step_durations() -> None:
    trace = _full_trace()
    assert trace.wall_time_s() == 1.5
    trace.duration_s = None
    trace.started_at = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)
    trace.ended_at = datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC)
    assert trace.wall_time_s() == 3.0
    # contradicting timestamps are no duration: an end before the start, naive vs aware
    trace.ended_at = datetime(2025, 1, 1, tzinfo=UTC)
    assert trace.wall_time_s() is None
    trace.ended_at = datetime(2026, 1, 1, 0, 0, 3)
    assert trace.wall_time_s() is None
    trace.started_at = trace.ended_at = None
    assert trace.wall_time_s() is None  # two steps have no duration
    for s in trace.steps:
        s.duration_s = 0.5
    assert trace.wall_time_s() == 1.5
    assert [c.name for c in trace.tool_calls] == ["calc"]


def test_schema_describes_a_trace_line() -> None:
    schema = trace_json_schema()
    assert schema["title"] == "Trace"
    assert set(schema["required"]) == {"id", "task"}
    assert "Step" in schema["$defs"]
