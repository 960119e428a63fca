"""Tool-calling metrics on hand-built samples: values and error taxonomy computed by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.config import BUILTIN_SUITES, SuiteError, load_suite
from agentgauge.engine import score_traces
from agentgauge.metrics.base import MetricOptionError, create_metric
from agentgauge.metrics.toolcall import (
    ValueAccuracy,
    abstention,
    execution_success,
    parameter_accuracy,
    response_quality,
    token_f1,
    tool_selection,
)
from agentgauge.model import ExpectedCall, Task, ToolSpec, Trace
from agentgauge.scoring import composite
from agentgauge.toolcall.bfcl import reference_calls
from agentgauge.toolcall.datasets import prediction_to_trace
from agentgauge.toolcall.formats.bfcl import read_bfcl

READ_FILE = ToolSpec(
    name="read_file",
    parameters={
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "encoding": {"type": "string"}},
        "required": ["file_path"],
    },
)
WRITE_FILE = ToolSpec(
    name="write_file",
    parameters={
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    },
)
WEATHER = ToolSpec(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "lat": {"type": "number"},
            "fields": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city"],
    },
)


def _task(expected: list[ExpectedCall] | None, **kw: Any) -> Task:
    return Task(id="t1", tools=[READ_FILE, WRITE_FILE, WEATHER], expected_calls=expected, **kw)


def _trace(expected: list[ExpectedCall] | None, result: Any, **kw: Any) -> Trace:
    return prediction_to_trace(_task(expected, **kw), result)


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "arguments": args}


READ_CONFIG = [ExpectedCall(name="read_file", arguments={"file_path": ["config.json"]})]


def _scores(trace: Trace) -> dict[str, float | None]:
    return {
        "tool_selection": tool_selection(trace).value,
        "parameter_accuracy": parameter_accuracy(trace).value,
        "execution_success": execution_success(trace).value,
        "strict": ValueAccuracy(mode="strict").score(trace).value,
    }


def test_correct_call() -> None:
    trace = _trace(READ_CONFIG, [_call("read_file", file_path="config.json")])
    assert _scores(trace) == {
        "tool_selection": 1.0,
        "parameter_accuracy": 1.0,
        "execution_success": 1.0,
        "strict": 1.0,
    }
    details = tool_selection(trace).details
    assert details["errors"] == [] and details["error_type"] is None
    assert details["expected"] == [
        {"name": "read_file", "arguments": {"file_path": ["config.json"]}}
    ]
    assert details["predicted"] == [
        {"name": "read_file", "arguments": {"file_path": "config.json"}}
    ]
    assert details["raw_output"] == [_call("read_file", file_path="config.json")]


def test_wrong_value_right_type_passes_the_spec_metrics_but_not_values() -> None:
    # The spec checks types only (DeepFabric weakness A13.2 is that nothing else checks values).
    trace = _trace(READ_CONFIG, [_call("read_file", file_path="WRONG.txt")])
    assert _scores(trace) == {
        "tool_selection": 1.0,
        "parameter_accuracy": 1.0,
        "execution_success": 1.0,
        "strict": 0.0,
    }
    assert ValueAccuracy(mode="strict").score(trace).details["errors"] == [
        "value_mismatch:file_path"
    ]


def test_wrong_tool_scores_zero_parameters_against_the_expected_schema() -> None:
    # write_file's arguments are valid for write_file, but the expected tool is read_file
    # (DeepFabric checks the predicted tool's schema, weakness A13.3).
    trace = _trace(READ_CONFIG, [_call("write_file", file_path="config.json", content="x")])
    assert _scores(trace) == {
        "tool_selection": 0.0,
        "parameter_accuracy": 0.0,
        "execution_success": 0.0,
        "strict": 0.0,
    }
    assert tool_selection(trace).details["errors"] == ["wrong_tool"]


def test_missing_required_and_type_errors() -> None:
    expected = [ExpectedCall(name="get_weather", arguments={"city": ["Oslo"], "days": [3]})]
    trace = _trace(expected, [_call("get_weather", days="3")])
    result = parameter_accuracy(trace)
    assert result.value == 0.0
    assert result.details["errors"] == ["missing_required:city", "type_error:days"]
    assert result.details["error_type"] == "missing_required:city"
    assert tool_selection(trace).value == 1.0
    assert execution_success(trace).value == 0.0
    # bool is not an integer; an integer is a number
    assert (
        parameter_accuracy(_trace(expected, [_call("get_weather", city="Oslo", days=True)])).value
        == 0.0
    )
    assert (
        parameter_accuracy(_trace(expected, [_call("get_weather", city="Oslo", lat=59)])).value
        == 1.0
    )


def test_unexpected_parameter_passes_the_spec_metrics_unless_strict() -> None:
    # the spec checks required parameters and types only; the values modes flag the extra one
    trace = _trace(READ_CONFIG, [_call("read_file", file_path="config.json", mode="rb")])
    assert parameter_accuracy(trace).value == 1.0
    assert execution_success(trace).value == 1.0
    strict = parameter_accuracy(trace, allow_unexpected=False)
    assert strict.value == 0.0 and strict.details["errors"] == ["unexpected_param:mode"]
    assert execution_success(trace, allow_unexpected=False).value == 0.0
    values = ValueAccuracy(mode="strict").score(trace)
    assert values.value == 0.0 and "unexpected_param:mode" in values.details["errors"]


def test_no_call_when_one_is_expected() -> None:
    trace = _trace(READ_CONFIG, "I think the file says debug is true.")
    assert _scores(trace) == {
        "tool_selection": 0.0,
        "parameter_accuracy": 0.0,
        "execution_success": 0.0,
        "strict": 0.0,
    }
    assert tool_selection(trace).details["errors"] == ["no_call"]


def test_sample_expecting_no_call() -> None:
    abstains = _trace([], "Paris is the capital of France.")
    assert tool_selection(abstains).value == 1.0
    assert execution_success(abstains).value == 1.0
    assert parameter_accuracy(abstains).value is None  # nothing to check
    assert ValueAccuracy(mode="strict").score(abstains).value == 1.0
    calls = _trace([], [_call("get_weather", city="Paris")])
    assert tool_selection(calls).value == 0.0
    assert tool_selection(calls).details["errors"] == ["spurious_call"]
    assert execution_success(calls).value == 0.0


def test_a_malformed_call_is_not_an_abstention() -> None:
    refusal = _trace([], "I cannot check the weather with these tools.")
    assert abstention(refusal).value == 1.0 and tool_selection(refusal).value == 1.0
    broken = _trace([], '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>')
    assert broken.metadata["parse_error"]
    assert abstention(broken).value == 0.0 and tool_selection(broken).value == 0.0
    assert execution_success(broken).value == 0.0
    assert abstention(broken).details["errors"] == ["parse_error"]
    calls = _trace([], [_call("get_weather", city="Paris")])
    assert abstention(calls).value == 0.0
    # abstention is measured only where no call is due
    due = _trace(READ_CONFIG, "no call")
    assert abstention(due).value is None and "a call is expected" in (abstention(due).reason or "")
    assert abstention(_trace(None, "x")).value is None


def test_no_expectation_is_not_measured() -> None:
    trace = _trace(None, [_call("read_file", file_path="x")])
    for fn in (tool_selection, parameter_accuracy, execution_success):
        result = fn(trace)
        assert result.value is None and result.reason == "the task has no expected calls"


def test_extra_and_missing_calls() -> None:
    two = [
        ExpectedCall(name="get_weather", arguments={"city": ["Oslo"]}),
        ExpectedCall(name="get_weather", arguments={"city": ["Rome"]}),
    ]
    dropped = _trace(two, [_call("get_weather", city="Rome")])
    assert tool_selection(dropped).value == 0.0
    assert parameter_accuracy(dropped).value == 0.0
    assert tool_selection(dropped).details["errors"] == ["wrong_count"]
    extra = _trace(
        READ_CONFIG,
        [_call("read_file", file_path="config.json"), _call("get_weather", city="x")],
    )
    assert tool_selection(extra).value == 0.0
    assert parameter_accuracy(extra).value == 1.0  # the expected call's parameters are fine
    assert tool_selection(extra).details["errors"] == ["wrong_count", "spurious_call"]


def test_parse_error_is_recorded_and_fails_values() -> None:
    trace = _trace(
        READ_CONFIG, '<tool_call>{"name": "read_file", "arguments": {"file_path": </tool_call>'
    )
    assert trace.metadata["parse_error"]
    result = ValueAccuracy(mode="lenient").score(trace)
    assert result.value == 0.0
    assert result.details["errors"] == ["parse_error", "no_call"]
    assert result.details["error_type"] == "parse_error"


def test_calls_are_paired_by_optimal_assignment() -> None:
    # BFCL's greedy example (notes B5): the first expected call accepts 1 or 2.
    expected = [
        ExpectedCall(name="get_weather", arguments={"city": ["Oslo"], "days": [1, 2]}),
        ExpectedCall(name="get_weather", arguments={"city": ["Oslo"], "days": [1]}),
    ]
    output = [_call("get_weather", city="Oslo", days=1), _call("get_weather", city="Oslo", days=2)]
    trace = _trace(expected, output)
    assert ValueAccuracy(mode="strict").score(trace).value == 1.0
    assert ValueAccuracy(mode="lenient").score(trace).value == 1.0
    assert ValueAccuracy(mode="bfcl").score(trace).value == 0.0
    assert (
        ValueAccuracy(mode="bfcl").score(prediction_to_trace(trace.task, output[::-1])).value == 1.0
    )


@pytest.mark.parametrize(
    ("expected", "given", "strict", "lenient"),
    [
        ({"lat": [59.91]}, {"lat": 59.9100000001}, 0.0, 1.0),  # numeric tolerance
        ({"lat": [59.91]}, {"lat": 59.92}, 0.0, 0.0),
        ({"days": [3]}, {"days": 3.0}, 1.0, 1.0),  # JSON numbers compare by value
        ({"fields": [["temp", "wind"]]}, {"fields": ["wind", "temp"]}, 0.0, 1.0),  # order-free
        ({"fields": [["temp", "wind"]]}, {"fields": ["temp"]}, 0.0, 0.0),
        ({"city": ["New York"]}, {"city": "new  york "}, 0.0, 1.0),  # case and spaces
        ({"city": ["New York"]}, {"city": "NewYork"}, 0.0, 0.0),  # not BFCL's lossy rule
        ({"days": ["", 3]}, {}, 1.0, 1.0),  # "" = may be left out
        ({"days": [3]}, {}, 0.0, 0.0),
        ({}, {"days": 3}, 0.0, 1.0),  # an optional schema parameter given explicitly
        ({}, {"colour": "red"}, 0.0, 0.0),  # not in the schema at all
    ],
)
def test_value_modes(
    expected: dict[str, Any], given: dict[str, Any], strict: float, lenient: float
) -> None:
    trace = _trace(
        [ExpectedCall(name="get_weather", arguments={"city": ["Oslo"], **expected})],
        [_call("get_weather", **{"city": "Oslo", **given})],
    )
    assert ValueAccuracy(mode="strict").score(trace).value == strict
    assert ValueAccuracy(mode="lenient").score(trace).value == lenient


def test_right_values_have_no_primary_error_even_with_a_schema_error() -> None:
    # 3.0 for the integer `days`: equal as JSON values, a type error for the schema
    trace = _trace(
        [ExpectedCall(name="get_weather", arguments={"city": ["Oslo"], "days": [3]})],
        [_call("get_weather", city="Oslo", days=3.0)],
    )
    strict = ValueAccuracy(mode="strict").score(trace)
    assert strict.value == 1.0 and strict.details["error_type"] is None
    assert strict.details["errors"] == ["type_error:days"]
    assert parameter_accuracy(trace).value == 0.0


def test_lenient_tolerance_is_an_option() -> None:
    trace = _trace(
        [ExpectedCall(name="get_weather", arguments={"city": ["Oslo"], "lat": [60.0]})],
        [_call("get_weather", city="Oslo", lat=60.4)],
    )
    assert ValueAccuracy(mode="lenient").score(trace).value == 0.0
    assert ValueAccuracy(mode="lenient", abs_tol=0.5).score(trace).value == 1.0


def test_bfcl_possible_dicts_in_own_modes() -> None:
    expected = [
        ExpectedCall(
            name="get_weather",
            arguments={"city": ["Oslo"], "fields": [[{"name": ["temp"], "unit": ["C", ""]}]]},
        )
    ]
    trace = _trace(expected, [_call("get_weather", city="Oslo", fields=[{"name": "temp"}])])
    assert ValueAccuracy(mode="strict").score(trace).value == 1.0


def test_value_accuracy_rejects_an_unknown_mode() -> None:
    with pytest.raises(MetricOptionError, match="mode"):
        create_metric("value_accuracy", {"mode": "fuzzy"})


def test_run_error_scores_zero_everywhere() -> None:
    task = _task(READ_CONFIG, expected_output="debug is true")
    trace = prediction_to_trace(task, None, run_error="timeout: no response within 30 s")
    for result in (
        tool_selection(trace),
        parameter_accuracy(trace),
        execution_success(trace),
        response_quality(trace),
        ValueAccuracy(mode="bfcl").score(trace),
    ):
        assert result.value == 0.0
        assert result.details["errors"] == ["run_error"]
        assert result.details["error_type"] == "run_error"
    # even a sample where no call is expected: the model never answered
    assert tool_selection(prediction_to_trace(_task([]), None, run_error="x")).value == 0.0


def test_token_f1_and_response_quality() -> None:
    # pred tokens: the weather in paris is sunny (6); ref: it is sunny in paris (5);
    # common: in paris is sunny (4) -> P = 4/6, R = 4/5, F1 = 16/22
    assert token_f1("The weather in Paris is sunny.", "It is sunny in Paris") == pytest.approx(
        16 / 22
    )
    assert token_f1("a b", "c d") == 0.0
    trace = _trace([], "The weather in Paris is sunny.", expected_output="It is sunny in Paris")
    assert response_quality(trace).value == pytest.approx(16 / 22)
    assert response_quality(_trace([], "hello")).value is None  # no reference
    assert response_quality(_trace([], [_call("x")], expected_output="y")).value is None


def test_overall_is_the_toolcall_suite_composite_with_default_and_custom_weights() -> None:
    values = {
        "tool_selection": 1.0,
        "parameter_accuracy": 0.5,
        "execution_success": 0.0,
        "response_quality": None,
    }
    suite = load_suite("toolcall")
    # 0.40·1 + 0.35·0.5 + 0.25·0 = 0.575
    assert composite(values, suite.weights).value == pytest.approx(0.575)

    def custom(weights: dict[str, float]) -> dict[str, float]:
        chosen = suite.model_copy(update={"weights": weights})
        chosen.validate_names("--weights")
        return chosen.weights

    mine = {"tool_selection": 0.5, "parameter_accuracy": 0.3, "execution_success": 0.2}
    assert composite(values, custom(mine)).value == pytest.approx(0.5 + 0.15)
    with pytest.raises(SuiteError, match="accuracy"):
        custom({"accuracy": 1.0})
    with pytest.raises(SuiteError, match="must be a finite number >= 0"):
        custom({"tool_selection": -1.0})


def test_suite_weights_match_the_spec_and_engine_scores_the_suite() -> None:
    # tool-calling-metrics.md: 40% / 35% / 25%, response quality 0
    spec = {
        "tool_selection": 0.40,
        "parameter_accuracy": 0.35,
        "execution_success": 0.25,
        "response_quality": 0.0,
    }
    assert BUILTIN_SUITES["toolcall"]["weights"] == spec
    suite = load_suite("toolcall")
    suite = suite.model_copy(update={"options": {"value_accuracy": {"mode": "lenient"}}})
    traces = [
        _trace(READ_CONFIG, [_call("read_file", file_path="config.json")]),
        _trace(READ_CONFIG, [_call("write_file", file_path="config.json", content="")]),
        _trace(READ_CONFIG, [_call("read_file", file_path="Config.json ")]),
    ]
    samples = score_traces(traces, suite)
    assert [s.values["value_accuracy"] for s in samples] == [1.0, 0.0, 1.0]
    assert [s.composite for s in samples] == [
        pytest.approx(1.0),
        pytest.approx(0.0),
        pytest.approx(1.0),
    ]
    assert samples[1].details["tool_selection"]["error_type"] == "wrong_tool"


def test_expected_tool_without_schema() -> None:
    task = Task(
        id="t",
        tools=[READ_FILE],
        expected_calls=[ExpectedCall(name="ghost", arguments={"a": [1]})],
    )
    right = prediction_to_trace(task, [_call("ghost", a=1)])
    result = parameter_accuracy(right)
    assert result.value is None and result.reason is not None and "ghost" in result.reason
    assert tool_selection(right).value == 1.0
    # a wrong tool is wrong whether or not the expected tool has a schema
    assert (
        parameter_accuracy(prediction_to_trace(task, [_call("read_file", file_path="x")])).value
        == 0.0
    )


def test_a_huge_integer_is_a_wrong_value_in_every_mode() -> None:
    trace = _trace(
        [ExpectedCall(name="get_weather", arguments={"city": ["Oslo"], "lat": [59.9]})],
        [_call("get_weather", city="Oslo", lat=10**400)],
    )
    for mode in ("strict", "lenient"):
        assert ValueAccuracy(mode=mode).score(trace).value == 0.0


def test_metrics_of_one_trace_share_a_diagnosis_only_where_it_is_the_same() -> None:
    # "extra" is not in read_file's schema: tool_selection (unexpected parameters named)
    # and parameter_accuracy (unexpected parameters allowed) need different diagnoses
    extra = _trace(READ_CONFIG, [_call("read_file", file_path="config.json", extra=1)])
    listed = _trace(READ_CONFIG, [_call("read_file", file_path="config.json", encoding="x")])
    samples = score_traces([extra, listed], load_suite("toolcall"))
    assert samples[0].details["tool_selection"]["errors"] == ["unexpected_param:extra"]
    assert samples[0].details["parameter_accuracy"]["errors"] == []
    assert samples[0].values["parameter_accuracy"] == 1.0
    assert samples[1].details["tool_selection"]["errors"] == []
    strict = create_metric("parameter_accuracy", {"allow_unexpected": False})
    assert strict.score(extra).value == 0.0
    assert parameter_accuracy(extra).value == 1.0  # each asks for its own diagnosis


def test_engine_scores_real_samples_as_each_metric_alone(shared_data: Path) -> None:
    # The engine gives the metrics a few traces at a time and the metrics share diagnoses:
    # every value and detail must be what each metric gives a fresh copy of the trace alone.
    root = shared_data / "bfcl"
    traces = []
    for name in ("BFCL_v4_live_multiple.json", "BFCL_v4_parallel_multiple.json"):
        tasks = [t for t in read_bfcl(root / name, root / "possible_answer" / name)]
        for task in tasks[:120]:
            assert isinstance(task, Task)
            calls = [
                {c.name: c.arguments}
                for c in reference_calls(task.tools, task.expected_calls or [])
            ]
            traces.append(prediction_to_trace(task, calls))
            renamed = [{f"{n}_x": a for n, a in c.items()} for c in calls]
            traces.append(prediction_to_trace(task, renamed[:1] + calls[1:]))
            extra = [{n: {**a, "unlisted": 1} for n, a in c.items()} for c in calls]
            traces.append(prediction_to_trace(task, extra))
            traces.append(prediction_to_trace(task, calls[::-1]))
    for options in ({}, {"parameter_accuracy": {"allow_unexpected": False}}):
        suite = load_suite("toolcall").model_copy(update={"options": options})
        samples = score_traces(traces, suite)
        metrics = suite.build_metrics()
        for trace, sample in zip(traces, samples, strict=True):
            for m in metrics:
                alone = m.score(trace.model_copy(deep=True))
                assert sample.values[m.name] == alone.value, (trace.id, m.name)
                assert sample.details[m.name] == alone.details, (trace.id, m.name)
    # the samples are not all alike: the copies with wrong names and extra arguments fail
    assert {s.values["tool_selection"] for s in samples} == {0.0, 1.0}
    assert any(
        "unexpected_param:unlisted" in s.details["tool_selection"]["errors"] for s in samples
    )


def test_a_trace_changed_between_two_scorings_is_scored_anew() -> None:
    # the call metrics share a diagnosis per trace only while the engine scores a batch
    from agentgauge.model import Step, ToolCall

    trace = Trace(
        id="t",
        task=Task(
            id="t",
            tools=[ToolSpec(name="f", parameters={"type": "object", "properties": {"a": {}}})],
            expected_calls=[ExpectedCall(name="f", arguments={"a": [1]})],
        ),
        steps=[Step(index=0, kind="tool_call", tool_call=ToolCall(name="f", arguments={"a": 1}))],
    )
    suite = load_suite("toolcall")
    metric = create_metric("value_accuracy")
    assert metric.score(trace).value == 1.0
    assert score_traces([trace], suite)[0].values["value_accuracy"] == 1.0
    trace.steps[0].tool_call.arguments["a"] = 2  # type: ignore[union-attr]
    assert metric.score(trace).value == 0.0
    assert score_traces([trace], suite)[0].values["value_accuracy"] == 0.0
