"""value_accuracy mode ``bfcl`` on the real BFCL v4 data: the ground truth itself passes
(except the questions BFCL's own checker cannot pass), and perturbed predictions get the verdicts
BFCL's AST checker rules give (research notes ``toolcall_anchors.md`` B4-B11; each case names
its rule)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from agentgauge.io.jsonl import ReadError
from agentgauge.metrics.base import MetricResult
from agentgauge.metrics.toolcall import ValueAccuracy
from agentgauge.model import Task
from agentgauge.toolcall.bfcl import reference_calls, standardize_string
from agentgauge.toolcall.datasets import prediction_to_trace
from agentgauge.toolcall.formats.bfcl import read_bfcl

CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
# B11: questions no output can pass under BFCL's own rules, with the reason BFCL gives.
IMPOSSIBLE = {
    # a required parameter whose list of acceptable values is empty
    "live_simple_106-63-0": "simple_function_checker:missing_required",
    "live_simple_112-68-0": "simple_function_checker:missing_required",
    # the answer expects a parameter that is not in the function's schema
    "live_multiple_862-181-3": "simple_function_checker:missing_optional",
    # the schema requires a parameter that the answer lacks
    "live_multiple_964-207-0": "simple_function_checker:missing_required",
}
BFCL = ValueAccuracy(mode="bfcl")


@pytest.fixture(scope="module")
def tasks(shared_data: Path) -> dict[str, Task]:
    root = shared_data / "bfcl"
    out: dict[str, Task] = {}
    for category in CATEGORIES:
        name = f"BFCL_v4_{category}.json"
        for item in read_bfcl(root / name, root / "possible_answer" / name):
            assert not isinstance(item, ReadError), str(item)
            out[item.id] = item
    return out


def _ground_truth(task: Task) -> list[dict[str, Any]]:
    """The ground truth as a BFCL decoded list ``[{"func": {args}}]``: each parameter's first
    acceptable value ("" = left out), a required one never left out (B11)."""
    return [{c.name: c.arguments} for c in reference_calls(task.tools, task.expected_calls or [])]


def _score(task: Task, result: Any, metric: ValueAccuracy = BFCL, **kw: Any) -> MetricResult:
    return metric.score(prediction_to_trace(task, result, **kw))


def _verdict(task: Task, result: Any, **kw: Any) -> tuple[bool, str | None]:
    r = _score(task, result, **kw)
    assert r.value is not None, r.reason
    return r.value == 1.0, r.details["bfcl_error_type"]


def test_ground_truth_is_valid_except_where_bfcl_cannot_pass(tasks: dict[str, Task]) -> None:
    valid: dict[str, list[bool]] = {c: [] for c in CATEGORIES}
    failures = {}
    for task in tasks.values():
        result = _score(task, _ground_truth(task))
        valid[task.category or ""].append(result.value == 1.0)
        if result.value != 1.0:
            failures[task.id] = result.details["bfcl_error_type"]
    assert failures == IMPOSSIBLE
    counts = {c: (sum(v), len(v)) for c, v in valid.items()}
    assert counts == {
        "simple_python": (400, 400),
        "multiple": (200, 200),
        "parallel": (200, 200),
        "parallel_multiple": (200, 200),
        "live_simple": (256, 258),
        "live_multiple": (1051, 1053),
        "live_parallel": (16, 16),
        "live_parallel_multiple": (24, 24),
    }


def _with(task: Task, index: int = 0, drop: tuple[str, ...] = (), **changes: Any) -> Any:
    decoded = copy.deepcopy(_ground_truth(task))
    [args] = decoded[index].values()
    for key in drop:
        args.pop(key)
    args.update(changes)
    return decoded


# (id, how the ground truth is changed, BFCL's verdict, the rule)
PERTURBATIONS: list[tuple[str, dict[str, Any], tuple[bool, str | None]]] = [
    # B5.5 type_checker uses exact type(): "10" is not an integer
    ("simple_python_0", {"base": "10"}, (False, "type_error:simple")),
    # B5.5 bool is not accepted for an integer
    ("simple_python_0", {"base": True}, (False, "type_error:simple")),
    # B5.4 no leniency from float to integer
    ("simple_python_0", {"base": 10.0}, (False, "type_error:simple")),
    # B5.6 string_checker: standardize_string drops spaces and case before comparing
    ("simple_python_0", {"unit": " UNITS"}, (True, None)),
    # B5.6 a different string fails
    ("simple_python_0", {"unit": "meters"}, (False, "value_error:string")),
    # B5.3 a parameter outside the schema
    ("simple_python_0", {"precision": 2}, (False, "simple_function_checker:unexpected_param")),
    # B5.4 int -> float leniency: 9 for the float acceleration becomes 9.0 ... and 9.0 != 9.8
    ("simple_python_31", {"acceleration": 9}, (False, "value_error:others")),
    # ... while 5 for the integer time passes as it is
    ("simple_python_31", {"time": 5}, (True, None)),
    # B5.6 numbers compare by ==, no tolerance
    ("simple_python_31", {"acceleration": 9.8000001}, (False, "value_error:others")),
    # B5.6 list_checker is order-sensitive
    (
        "simple_python_79",
        {"data": [90, 85, 88, 92, 86, 89, 91]},
        (False, "value_error:list/tuple"),
    ),
    # B5.5 one level of nested types: a string element in an integer array
    (
        "simple_python_79",
        {"data": ["85", 90, 88, 92, 86, 89, 91]},
        (False, "type_error:nested"),
    ),
    # B5.6 dict_checker: string values standardized, alternative accepted
    (
        "simple_python_89",
        {"conditions": {"department": "science", "school": "Bluebird-HS"}},
        (True, None),
    ),
    # B5.6 dict_checker: a required key of the possible dict is missing
    (
        "simple_python_89",
        {"conditions": {"department": "Science"}},
        (False, "value_error:dict_key"),
    ),
    # B5.6 dict_checker: a value outside the possible ones
    (
        "simple_python_89",
        {"conditions": {"department": "Arts", "school": "Bluebird HS"}},
        (False, "value_error:dict_value"),
    ),
    # B5.6 list_dict_checker compares dicts position by position: swapped dicts fail
    (
        "simple_python_96",
        {
            "conditions": [
                {"field": "job", "operation": "=", "value": "engineer"},
                {"field": "age", "operation": ">", "value": "25"},
            ]
        },
        (False, "value_error:dict_value"),
    ),
    # B5.7 an optional parameter whose answers include "" may be left out
    ("simple_python_122", {}, (True, None)),
    # B5.3 an optional schema parameter the answer does not list fails even with a valid value
    (
        "live_multiple_198-90-0",
        {"contact_id": 1},
        (False, "simple_function_checker:unexpected_param"),
    ),
    # B5.5 "variable" escape: the schema says string but the answer holds 2, so the int passes
    ("live_multiple_595-158-1", {"number_of_rooms": 2}, (True, None)),
    # ... and the schema-correct string "2" fails the generic == check
    ("live_multiple_595-158-1", {"number_of_rooms": "2"}, (False, "value_error:others")),
    # B11 origin_airport is required and its only answer is "": sending "" passes
    ("live_multiple_507-149-4", {"origin_airport": ""}, (True, None)),
]


@pytest.mark.parametrize(("task_id", "changes", "verdict"), PERTURBATIONS)
def test_perturbed_ground_truth_gets_bfcl_verdicts(
    tasks: dict[str, Task], task_id: str, changes: dict[str, Any], verdict: tuple[bool, str | None]
) -> None:
    assert _verdict(tasks[task_id], _with(tasks[task_id], **changes)) == verdict


def test_missing_parameters(tasks: dict[str, Task]) -> None:
    # B5.2 a schema-required parameter left out
    t = tasks["simple_python_0"]
    assert _verdict(t, _with(t, drop=("height",))) == (
        False,
        "simple_function_checker:missing_required",
    )
    # B11 formatted is required but marked omittable by the answer: omitting it still fails
    t = tasks["simple_python_17"]
    assert _verdict(t, _with(t, drop=("formatted",))) == (
        False,
        "simple_function_checker:missing_required",
    )
    # B5.7 an optional parameter whose answers lack "" left out: missing_optional
    t = tasks["live_multiple_595-158-1"]
    assert _verdict(t, _with(t, drop=("star_rating",))) == (
        False,
        "simple_function_checker:missing_optional",
    )
    # B5.7 optional parameters whose answers include "" may all be left out
    t = tasks["multiple_0"]
    args = {"side1": 5, "side2": 4, "side3": 3}
    assert _verdict(t, [{"triangle_properties.get": args}]) == (True, None)
    # B11 live_multiple_507-149-4: leaving the required origin_airport out fails
    t = tasks["live_multiple_507-149-4"]
    assert _verdict(t, _with(t, drop=("origin_airport",))) == (
        False,
        "simple_function_checker:missing_required",
    )


def test_parallel_matching_is_order_free_but_greedy(tasks: dict[str, Task]) -> None:
    t = tasks["parallel_0"]
    truth = _ground_truth(t)
    # B5 parallel: order-free
    assert _verdict(t, truth[::-1]) == (True, None)
    # B5 parallel: a dropped call is a wrong count
    assert _verdict(t, truth[:1]) == (False, "parallel_function_checker_no_order:wrong_count")
    # B11 greedy matching: the first expected call accepts either company, takes the Apple
    # call offered first, and the later Apple-only expectation finds nothing left.
    t = tasks["parallel_178"]
    truth = _ground_truth(t)
    permuted = [truth[2], truth[0], truth[1], truth[3]]
    assert _verdict(t, permuted) == (False, "parallel_function_checker_no_order:cannot_find_match")
    # Our own modes pair calls by optimal assignment and accept it.
    assert _score(t, permuted, ValueAccuracy(mode="strict")).value == 1.0
    assert _score(t, permuted, ValueAccuracy(mode="lenient")).value == 1.0
    # parallel_multiple dispatches to the parallel checker ("parallel" in the name)
    t = tasks["parallel_multiple_12"]
    assert _verdict(t, _ground_truth(t)[::-1]) == (True, None)


def test_multiple_and_simple_call_counts_and_names(tasks: dict[str, Task]) -> None:
    t = tasks["multiple_0"]
    truth = _ground_truth(t)
    # B5 multiple: exactly as many calls as expected
    assert _verdict(t, truth * 2) == (False, "multiple_function_checker:wrong_count")
    # B5.1 another offered function instead of the expected one
    assert _verdict(t, [{"circle_properties.get": {"radius": 5.0}}]) == (
        False,
        "simple_function_checker:wrong_func_name",
    )
    t = tasks["simple_python_0"]
    assert _verdict(t, []) == (False, "simple_function_checker:wrong_count")
    # B11 names with dots compare exactly unless underscore_to_dot (some API models)
    t = tasks["parallel_0"]
    renamed = [{"spotify_play": args} for call in _ground_truth(t) for args in call.values()]
    assert _verdict(t, renamed) == (False, "parallel_function_checker_no_order:cannot_find_match")
    dots = ValueAccuracy(mode="bfcl", underscore_to_dot=True)
    assert _score(t, renamed, dots).value == 1.0


def test_raw_text_decoding(tasks: dict[str, Task]) -> None:
    t = tasks["simple_python_0"]
    assert _verdict(t, "[calculate_triangle_area(base=10, height=5)]") == (True, None)
    # B3 a decoder failure fails the sample
    assert _verdict(t, "[calculate_triangle_area(base=10, height=") == (
        False,
        "ast_decoder:decoder_failed",
    )
    # B4 BFCL's decoder drops positional arguments; positional="drop" reproduces it
    assert _verdict(t, "calculate_triangle_area(10, 5)", positional="drop") == (
        False,
        "simple_function_checker:missing_required",
    )
    # our default names them by the schema's order instead
    assert _verdict(t, "calculate_triangle_area(10, 5)") == (True, None)


def test_irrelevance_passes_iff_no_call(shared_data: Path) -> None:
    root = shared_data / "bfcl"
    task = next(iter(read_bfcl(root / "BFCL_v4_irrelevance.json")))
    assert isinstance(task, Task) and task.expected_calls == []
    name = task.tools[0].name
    # B6 no call, and (B9.9) even unreadable output, count as a correct abstention
    assert _verdict(task, "I cannot answer that with the tools I have.") == (True, None)
    assert _verdict(task, f"[{name}(x=") == (True, None)
    assert _verdict(task, [{name: {}}]) == (False, "irrelevance_error:decoder_success")


def test_standardize_string_examples_from_the_notes() -> None:
    assert standardize_string("New York, NY") == standardize_string("newyork ny")
    assert standardize_string("2024-01-05") == standardize_string("20240105")
    assert standardize_string("3X**2-+-2X---1.") == standardize_string("3x**2 + 2x - 1")
    assert standardize_string("it's") == 'it"s'


def test_bfcl_mode_details_and_unsupported_schema(tasks: dict[str, Task]) -> None:
    t = tasks["simple_python_0"]
    r = _score(t, _with(t, base="10"))
    assert r.details["errors"] == ["type_error:base"]
    assert r.details["error_type"] == "type_error:base"
    assert r.details["predicted"] == [
        {
            "name": "calculate_triangle_area",
            "arguments": {"base": "10", "height": 5, "unit": "units"},
        }
    ]
    # A type name BFCL's checker does not know makes it raise: no verdict, with the reason.
    weird = t.model_copy(deep=True)
    weird.tools[0].parameters["properties"]["base"] = {"type": "Widget"}  # type: ignore[index]
    r = _score(weird, _ground_truth(t))
    assert r.value is None and r.reason is not None and "KeyError" in r.reason
