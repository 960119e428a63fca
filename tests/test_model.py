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


def _call_step(index: int, name: str, **arguments: object) -> Step:
    return Step(index=index, kind="tool_call", tool_call=ToolCall(name=name, arguments=arguments))


def test_calls_made_are_listed_once_and_again_after_any_change() -> None:
    trace = _full_trace()
    listed = trace.calls_made()
    assert listed == (("calc", {"x": 1}),)
    assert listed[0].name == "calc" and listed[0].arguments is trace.steps[1].tool_call.arguments
    assert trace.calls_made() is listed  # read once
    # the record is no field: dumps, equality and copies are those of the fields
    assert trace == _full_trace() and _full_trace() == trace
    assert trace.model_dump() == _full_trace().model_dump()
    assert Trace.model_validate_json(trace.model_dump_json()) == trace

    trace.steps.append(_call_step(3, "search", q="a"))
    assert [c.name for c in trace.calls_made()] == ["calc", "search"]
    trace.steps[3] = _call_step(3, "fetch", url="u")
    assert [c.name for c in trace.calls_made()] == ["calc", "fetch"]
    trace.steps[3].tool_call = ToolCall(name="open")
    assert [c.name for c in trace.calls_made()] == ["calc", "open"]
    trace.steps[1].tool_call.name = "add"  # type: ignore[union-attr]
    assert [c.name for c in trace.calls_made()] == ["add", "open"]
    trace.steps.pop(1)
    assert [c.name for c in trace.calls_made()] == ["open"]
    trace.steps[-1].tool_call.arguments["mode"] = "fast"  # type: ignore[union-attr]
    assert trace.calls_made() == (("open", {"mode": "fast"}),)  # the call's own arguments
    copy = trace.model_copy(update={"steps": [_call_step(0, "calc", x=2)]})
    assert copy.calls_made() == (("calc", {"x": 2}),)
    assert trace.calls_made() == (("open", {"mode": "fast"}),)
    trace.steps = []
    assert trace.calls_made() == ()


def test_reference_calls_are_listed_once_and_again_after_a_change() -> None:
    from agentgauge.model import ReferenceStep

    def reference(*names: str) -> ReferenceStep:
        return ReferenceStep(role="assistant", tool_calls=[ToolCall(name=n) for n in names])

    task = Task(id="t", reference_trajectory=[reference("a", "b"), reference(), reference("c")])
    listed = task.reference_calls()
    assert listed == (("a", {}), ("b", {}), ("c", {}))
    assert task.reference_calls() is listed
    task.reference_trajectory.append(reference("d"))  # type: ignore[union-attr, arg-type]
    assert [c.name for c in task.reference_calls() or ()] == ["a", "b", "c", "d"]
    task.reference_trajectory[0].tool_calls = []  # type: ignore[union-attr, index]
    assert [c.name for c in task.reference_calls() or ()] == ["c", "d"]
    task.reference_trajectory = [reference("e")]
    assert [c.name for c in task.reference_calls() or ()] == ["e"]
    # no reference steps: no reference calls
    assert Task(id="t", reference_trajectory=["a", "b"]).reference_calls() is None
    assert Task(id="t", reference_trajectory=[]).reference_calls() is None
    assert Task(id="t").reference_calls() is None
