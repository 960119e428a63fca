"""trajectory_match, tool_correctness and tool_call_accuracy: the peers' own test cases with the
peers' verdicts (``trajectory_cases``), read through the openai-chat importer, then the
reference forms, the details and the options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import trajectory_cases as cases
from agentgauge.io.openai_chat import read_openai_chat
from agentgauge.metrics.base import MetricOptionError, create_metric
from agentgauge.metrics.trajectory import ToolCorrectness, TrajectoryMatch
from agentgauge.model import ExpectedCall, ReferenceStep, Step, Task, ToolCall, Trace
from trajectory_cases import assistant, call, tool, user


def _chat(tmp_path: Path, messages: list[Any], expected: list[Any] | None) -> Trace:
    line: dict[str, Any] = {"id": "chat", "messages": messages}
    if expected is not None:
        line["expected_messages"] = expected
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    [trace] = list(read_openai_chat(path))
    assert isinstance(trace, Trace), trace
    return trace


def _score(name: str, trace: Trace, **options: Any) -> Any:
    return create_metric(name, options).score(trace)


# --- agentevals: python/tests/test_trajectory.py ------------------------------------------------

AGENTEVALS = [
    pytest.param(case, key, score, id=f"agentevals::{case['test']}[{key}]")
    for case in cases.AGENTEVALS
    for key, score in case["scores"].items()
]


def test_every_agentevals_evaluation_is_ported() -> None:
    assert len(AGENTEVALS) == 64


@pytest.mark.parametrize(("case", "key", "expected"), AGENTEVALS)
def test_agentevals_trajectory_match(
    tmp_path: Path, case: dict[str, Any], key: str, expected: float
) -> None:
    trace = _chat(tmp_path, case["outputs"], case["reference"])
    overrides = {
        tool_name: cases.CALLABLES.get(value, value) if isinstance(value, str) else value
        for tool_name, value in case.get("options", {}).get("overrides", {}).items()
    }
    options: dict[str, Any] = {case["vary"]: key, "overrides": overrides}
    result = TrajectoryMatch(**options).score(trace)
    assert result.value == expected, result.reason


# --- DeepEval: tests/test_tool_correctness.py and test_tool_correctness_metric.py ---------------


def _deepeval_messages(calls: list[dict[str, Any]]) -> list[Any]:
    messages: list[Any] = [user("q")]
    if calls:
        ids = [f"c{i}" for i in range(len(calls))]
        made = [call(c["name"], c["input"], i) for c, i in zip(calls, ids, strict=True)]
        messages.append(assistant("", *made))
        messages += [
            tool(c["output"], i) for c, i in zip(calls, ids, strict=True) if c["output"] is not None
        ]
    return messages


DEEPEVAL = [
    pytest.param(
        called,
        expected,
        options,
        cases.DEEPEVAL_SCORES[name][k],
        id=f"deepeval::test_tool_correctness.py::{name}[{json.dumps(options, sort_keys=True)}]",
    )
    for name, called, expected in cases.DEEPEVAL_CASES
    for k, options in enumerate(cases.DEEPEVAL_OPTIONS)
] + [
    pytest.param(
        called, expected, {}, score, id=f"deepeval::test_tool_correctness_metric.py::{test}"
    )
    for test, called, expected, score in cases.DEEPEVAL_TYPED
]


@pytest.mark.parametrize(("called", "expected", "options", "score"), DEEPEVAL)
def test_deepeval_tool_correctness(
    tmp_path: Path,
    called: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    options: dict[str, Any],
    score: float,
) -> None:
    trace = _chat(tmp_path, _deepeval_messages(called), _deepeval_messages(expected))
    result = _score("tool_correctness", trace, **options)
    assert result.value == pytest.approx(score)


# --- Ragas: tests/unit/test_tool_call_accuracy.py ------------------------------------------------


def _ragas_calls(calls: list[dict[str, Any]]) -> list[Any]:
    return [call(c["name"], c["args"]) for c in calls]


RAGAS = [
    pytest.param(groups, reference, strict, score, id=f"ragas::{test}")
    for test, groups, reference, strict, score in cases.RAGAS
]


@pytest.mark.parametrize(("groups", "reference", "strict_order", "score"), RAGAS)
def test_ragas_tool_call_accuracy(
    tmp_path: Path,
    groups: list[list[dict[str, Any]]],
    reference: list[dict[str, Any]],
    strict_order: bool,
    score: float,
) -> None:
    messages = [user("q")] + [assistant("x", *_ragas_calls(g)) for g in groups]
    expected = [assistant("", *_ragas_calls(reference))] if reference else []
    trace = _chat(tmp_path, messages, expected)
    result = _score("tool_call_accuracy", trace, strict_order=strict_order)
    assert result.value == pytest.approx(score)


# --- what the details say ------------------------------------------------------------------------

WEATHER_OUT = [
    user("weather in SF and London?"),
    assistant(None, call("get_weather", {"city": "SF"}, "a")),
    tool("80F", "a"),
    assistant("SF is 80F."),
]
WEATHER_REF = [
    user("weather in SF and London?"),
    assistant(None, call("get_weather", {"city": "SF"}), call("get_weather", {"city": "London"})),
    tool("80F"),
    tool("60F"),
    assistant("SF is 80F, London 60F."),
]


def test_trajectory_match_names_the_reference_step_that_failed(tmp_path: Path) -> None:
    trace = _chat(tmp_path, WEATHER_OUT, WEATHER_REF)
    # strict: 4 messages against 5.
    strict = _score("trajectory_match", trace)
    assert strict.value == 0.0
    assert strict.details["failed"]["why"] == "the trace has 4 messages and the reference 5"
    # superset: London's call, made at reference step 1, is missing from the trace.
    superset = _score("trajectory_match", trace, mode="superset")
    assert superset.value == 0.0
    assert superset.details["failed"]["reference_step"] == 1
    assert 'get_weather({"city": "London"})' in superset.reason
    # subset: every call the trace made is in the reference.
    assert _score("trajectory_match", trace, mode="subset").value == 1.0
    # strict, 4 messages each, but the assistant message at trace step 1 makes one call where
    # reference step 1 makes two.
    other = _chat(tmp_path, WEATHER_OUT, [*WEATHER_REF[:2], WEATHER_REF[2], WEATHER_REF[4]])
    failed = _score("trajectory_match", other).details["failed"]
    assert failed["reference_step"] == 1 and failed["trace_step"] == 1
    assert failed["why"] == "reference step 1 makes 2 tool calls and trace step 1 makes 1"
    # a role that differs: the trace answers where the reference calls a tool
    answered = _chat(tmp_path, [user("q"), assistant("no idea")], [user("q"), tool("x")])
    failed = _score("trajectory_match", answered).details["failed"]
    assert failed["why"] == "reference step 1 has role tool, trace step 1 role assistant"


def test_a_reference_of_tool_names_compares_names_when_args_are_ignored(tmp_path: Path) -> None:
    steps = [
        Step(index=0, kind="llm", content="let me look"),
        Step(index=1, kind="tool_call", tool_call=ToolCall(name="search", arguments={"q": 1})),
        Step(index=2, kind="tool_result", result="hits"),
        Step(index=3, kind="tool_call", tool_call=ToolCall(name="save")),
    ]
    trace = Trace(id="t", task=Task(id="t", reference_trajectory=["search", "save"]), steps=steps)
    missing = _score("trajectory_match", trace)
    assert missing.value is None and 'args = "ignore"' in (missing.reason or "")
    assert _score("trajectory_match", trace, args="ignore").value == 1.0
    swapped = trace.model_copy(
        update={"task": Task(id="t", reference_trajectory=["save", "search"])}
    )
    assert _score("trajectory_match", swapped, args="ignore").value == 0.0
    assert _score("trajectory_match", swapped, args="ignore", mode="unordered").value == 1.0
    # names only: tool_correctness compares names, and cannot compare inputs
    assert _score("tool_correctness", swapped).value == 1.0
    assert _score("tool_correctness", swapped, compare=["input"]).value is None
    assert _score("tool_call_accuracy", swapped).value is None


def test_expected_calls_stand_in_for_a_missing_trajectory() -> None:
    steps = [
        Step(index=0, kind="tool_call", tool_call=ToolCall(name="f", arguments={"a": 1, "b": 2}))
    ]
    task = Task(id="t", expected_calls=[ExpectedCall(name="f", arguments={"a": [1], "b": [3]})])
    trace = Trace(id="t", task=task, steps=steps)
    # Ragas: one of the two reference arguments given with the same value → 1/2.
    assert _score("tool_call_accuracy", trace).value == pytest.approx(0.5)
    assert _score("trajectory_match", trace).value == 0.0
    assert _score("trajectory_match", trace, args="superset", overrides={"f": ["a"]}).value == 1.0
    assert _score("tool_correctness", trace, compare=["name", "input"]).value == pytest.approx(0.5)
    assert _score("tool_correctness", trace, compare=["output"]).value is None
    # several acceptable values cannot be one reference value
    several = Task(id="t", expected_calls=[ExpectedCall(name="f", arguments={"a": [1, 2]})])
    result = _score("tool_call_accuracy", trace.model_copy(update={"task": several}))
    assert result.value is None and "several values" in (result.reason or "")
    nothing = _score("trajectory_match", trace.model_copy(update={"task": Task(id="t")}))
    assert nothing.value is None and "no reference trajectory" in (nothing.reason or "")


def test_tool_call_accuracy_in_any_order_pairs_repeated_tools_by_arguments() -> None:
    # Ragas sorts both sides by (name, each argument and str(value)): the two searches pair
    # as search(k=1, q=a) / search(k=2, q=a) (1 of 2 arguments) and search(q=b) / search(q=b);
    # (1/2 + 1 + 1) / 3, as Ragas 0.4.3's collections.ToolCallAccuracy(strict_order=False) gives.
    made = [
        ToolCall(name="search", arguments={"q": "a", "k": 1}),
        ToolCall(name="search", arguments={"q": "b"}),
        ToolCall(name="weather", arguments={"city": "Paris"}),
    ]
    steps = [Step(index=i, kind="tool_call", tool_call=c) for i, c in enumerate(made)]

    def task(*calls: ToolCall) -> Task:
        return Task(
            id="t", reference_trajectory=[ReferenceStep(role="assistant", tool_calls=list(calls))]
        )

    reference = task(made[2], made[1], ToolCall(name="search", arguments={"q": "a", "k": 2}))
    result = _score(
        "tool_call_accuracy", Trace(id="t", task=reference, steps=steps), strict_order=False
    )
    assert result.value == pytest.approx(2.5 / 3)
    assert [(p["reference"], p["made"], p["score"]) for p in result.details["pairs"]] == [
        ('search({"k": 2, "q": "a"})', 'search({"k": 1, "q": "a"})', 0.5),
        ('search({"q": "b"})', 'search({"q": "b"})', 1.0),
        ('weather({"city": "Paris"})', 'weather({"city": "Paris"})', 1.0),
    ]
    # the same number of calls, not of each tool: no alignment (Ragas: 0.0); the reason
    # names the tools as sorted
    other = task(made[1], made[2], ToolCall(name="weather", arguments={"city": "Oslo"}))
    result = _score(
        "tool_call_accuracy", Trace(id="t", task=other, steps=steps), strict_order=False
    )
    assert result.value == 0.0
    assert result.reason == (
        "tool sequence ['search', 'search', 'weather'] does not align with the reference's "
        "['search', 'weather', 'weather']"
    )
    assert [p["score"] for p in result.details["pairs"]] == [0.0, 0.0, 1.0]

    # numbers and strings compare as text, as Ragas compares them: 1 and "1" agree, 1 and
    # 1.0 or True do not; a changed trace (its calls are listed once) is scored anew
    one = task(ToolCall(name="f", arguments={"a": 1, "b": "x", "c": 1, "d": 0.0}))
    trace = Trace(id="t", task=one, steps=[Step(index=0, kind="tool_call", tool_call=made[0])])
    for arguments, value in [
        ({"a": "1", "b": "x", "c": 1.0, "d": -0.0}, 0.5),
        ({"a": 1, "b": "x", "c": True, "d": 0.0}, 0.75),
        ({"a": 1, "b": "x", "c": 1, "d": 0.0}, 1.0),
    ]:
        trace.steps[0] = Step(index=0, kind="tool_call", tool_call=ToolCall(name="f"))
        trace.steps[0].tool_call.arguments.update(arguments)  # type: ignore[union-attr]
        for order in (True, False):
            assert _score("tool_call_accuracy", trace, strict_order=order).value == value


def test_native_steps_read_as_a_chat() -> None:
    # A recorded agent run: the model's text, its two calls (no parent links), their results
    # linked by parent_id, a reasoning step (not a chat message) and the final answer.
    steps = [
        Step(index=0, kind="message", agent="user", content="q"),
        Step(index=1, kind="reasoning", content="plan"),
        Step(index=2, kind="llm", content="looking"),
        Step(index=3, kind="tool_call", id="c1", tool_call=ToolCall(id="c1", name="a")),
        Step(index=4, kind="tool_call", id="c2", tool_call=ToolCall(id="c2", name="b")),
        Step(index=5, kind="tool_result", parent_id="c2", result="B"),
        Step(index=6, kind="tool_result", parent_id="c1", result="A"),
        Step(index=7, kind="llm", content="done"),
    ]
    reference = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [{"name": "b"}, {"name": "a"}]},
        {"role": "tool", "content": "B"},
        {"role": "tool", "content": "A"},
        {"role": "assistant", "content": "the answer"},
    ]
    trace = Trace(id="t", task=Task(id="t", reference_trajectory=reference), steps=steps)
    assert _score("trajectory_match", trace).value == 1.0
    # outputs: the reference links them by position (b → "B", a → "A"), the trace by parent_id
    assert _score("tool_correctness", trace, compare=["output"]).value == 1.0
    assert _score("tool_correctness", trace, compare=["output"], exact=True).value == 0.0
    # a failed request scores 0, whatever the reference
    failed = trace.model_copy(update={"metadata": {"run_error": "HTTP 500"}})
    assert _score("trajectory_match", failed).value == 0.0


def test_identical_calls_each_answer_one_reference_call(tmp_path: Path) -> None:
    # Two identical expected calls, made twice: each made call answers one expected call → 1.0
    # (DeepEval counts the two equal calls as one and gives 0.5).
    twice = [user("q"), assistant("", call("f", {"x": 1}), call("f", {"x": 1}))]
    trace = _chat(tmp_path, twice, twice)
    assert _score("tool_correctness", trace, compare=["input"]).value == 1.0


def test_tool_correctness_ordering_and_strict_details(tmp_path: Path) -> None:
    made = [user("q"), assistant("", call("b", {}), call("a", {}), call("c", {}))]
    reference = [user("q"), assistant("", call("a", {}), call("b", {}), call("c", {}))]
    trace = _chat(tmp_path, made, reference)
    # LCS of a b c and b a c: 2 of 3 in order
    ordered = _score("tool_correctness", trace, ordering=True)
    assert ordered.value == pytest.approx(2 / 3)
    assert len(ordered.details["in_order"]) == 2
    assert _score("tool_correctness", trace, ordering=True, strict=True).value == 0.0
    assert _score("tool_correctness", trace).value == 1.0


def test_options_are_checked() -> None:
    for name, options in [
        ("trajectory_match", {"mode": "loose"}),
        ("trajectory_match", {"args": "fuzzy"}),
        ("trajectory_match", {"overrides": {"f": "fuzzy"}}),
        ("trajectory_match", {"overrides": {"f": []}}),
        ("trajectory_match", {"overrides": {"f": 3}}),
        ("trajectory_match", {"overrides": ["f"]}),
        ("tool_correctness", {"compare": ["name", "args"]}),
        ("tool_correctness", {"compare": "input"}),
        ("tool_call_accuracy", {"strict_order": "yes"}),
    ]:
        with pytest.raises(MetricOptionError):
            create_metric(name, options)
    assert ToolCorrectness(compare=["input"]).compare == {"name", "input"}


def test_args_modes_swap_sides_in_subset_mode(tmp_path: Path) -> None:
    # The trace calls f(a=1, b=2), the reference f(a=1). In subset mode (and in the second half
    # of unordered) the reference's calls are matched against the trace's, so the two sides of
    # the args mode swap, as in agentevals (values from agentevals 0.0.9 on this pair).
    made = [user("q"), assistant("", call("f", {"a": 1, "b": 2}))]
    reference = [user("q"), assistant("", call("f", {"a": 1}))]
    trace = _chat(tmp_path, made, reference)
    grid = {
        "strict": {"exact": 0.0, "ignore": 1.0, "subset": 0.0, "superset": 1.0},
        "unordered": {"exact": 0.0, "ignore": 1.0, "subset": 0.0, "superset": 0.0},
        "subset": {"exact": 0.0, "ignore": 1.0, "subset": 1.0, "superset": 0.0},
        "superset": {"exact": 0.0, "ignore": 1.0, "subset": 0.0, "superset": 1.0},
    }
    for mode, by_args in grid.items():
        for args, value in by_args.items():
            assert _score("trajectory_match", trace, mode=mode, args=args).value == value, (
                mode,
                args,
            )
