"""BFCL's AST checker, reproduced verdict for verdict (``value_accuracy`` mode ``bfcl``).

This reimplements the rules of ``bfcl_eval/eval_checker/ast_eval/ast_checker.py``
(bfcl-eval 2026.3.23) for Python categories, defects included, so that our verdicts and
BFCL's agree on every call (see ``shared/research/toolcall_anchors.md``, B4-B11):

- dispatch by category name: ``"parallel" in category`` -> greedy order-free matching,
  ``"multiple" in category`` -> exactly as many calls as expected and the first checked,
  otherwise exactly one call checked against the first function;
- per call, stopping at the first failure: exact function name (``.``->``_`` only with
  ``underscore_to_dot``); every schema-required parameter present; each given parameter must be
  in the schema *and* in the possible answer; exact ``type()`` per BFCL's Python type map, with
  int accepted (and converted) for ``float``, the "variable" escape when the possible answers
  have another type, one level of nested element types; then strings compared after
  ``standardize_string`` (removes `` ,./-_*^``, lowercases, ``'``->``"``), lists order-sensitive
  with standardized string elements, dicts one level deep, lists of dicts position by position,
  everything else by Python ``==`` membership; finally a possible-answer parameter left out
  passes only when ``""`` is among its values;
- parallel matching is greedy: for each expected call in order, the first unmatched model
  call that passes is taken, so some correct outputs fail depending on their order.

Where BFCL's checker raises (an unknown type name, a missing function description, an
``array`` without ``items``), :class:`BfclUnsupported` is raised and the metric reports no
value. JSON Schema's ``number`` and ``object`` (which BFCL's Python data never uses and its
checker would crash on) are read as ``float`` and ``dict``, so OpenAI-format datasets can be
checked with BFCL's rules.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agentgauge.errors import AgentgaugeError
from agentgauge.model import ExpectedCall, ToolCall, ToolSpec

__all__ = [
    "BfclUnsupported",
    "BfclVerdict",
    "check_bfcl",
    "reference_calls",
    "standardize_string",
]

_PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_JSON_SCHEMA_NAMES = {"number": "float", "object": "dict"}
_NESTED_TYPES = ("array", "tuple")
# the characters BFCL's standardize_string removes (its regex ``[ ,./\-_*^]``)
_STANDARDIZE = str.maketrans("", "", " ,./-_*^")


class BfclUnsupported(AgentgaugeError, ValueError):
    """Input on which BFCL's own checker raises instead of giving a verdict."""


@dataclass(frozen=True)
class BfclVerdict:
    """BFCL's verdict on one sample.

    Args:
        valid: whether BFCL counts the sample correct.
        error_type: BFCL's label, e.g. ``simple_function_checker:missing_required``.
        error: what failed, in words.
        param: the parameter at fault, when the failure is about one.
        cause: for ``cannot_find_match``, the label of the failure that stopped the first
            candidate call.
    """

    valid: bool
    error_type: str | None = None
    error: str | None = None
    param: str | None = None
    cause: str | None = None


_VALID = BfclVerdict(True)


@functools.lru_cache(maxsize=1 << 16)  # the same answers and values come back, sample after sample
def standardize_string(text: str) -> str:
    """BFCL's string normalisation: drop `` ,./-_*^``, lowercase, ``'`` -> ``"``.

    Args:
        text: a string value.
    """
    return text.translate(_STANDARDIZE).lower().replace("'", '"')


def _fail(error_type: str, error: str, param: str | None = None) -> BfclVerdict:
    return BfclVerdict(False, error_type, error, param)


def _type_check(
    param: str, value: Any, answers: Any, expected: type, nested: type | None
) -> tuple[BfclVerdict, bool]:
    """BFCL's ``type_checker``: the verdict and whether the value counts as a "variable"."""
    answer_type = None  # the type of the first possible answer other than "" (omitted)
    for answer in answers:
        if answer != "":
            answer_type = type(answer)
            break
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return _VALID, is_variable
        elements = cast("list[Any]", value)
        for candidate in answers:
            # A candidate that is not a list (e.g. "") is not inspected and passes.
            if type(candidate) is not list or all(
                _type_check(param, item, candidate, nested, None)[0].valid for item in elements
            ):
                return _VALID, is_variable
        if type(value) is answer_type:
            return _fail(
                "type_error:nested", f"nested type of {param!r} is not {nested.__name__}", param
            ), True
    elif answer_type is not None and type(value) is answer_type:
        return _VALID, True
    return _fail(
        "type_error:simple",
        f"{param!r} is {type(value).__name__}, expected {expected.__name__}",
        param,
    ), is_variable


def _standardized(values: Sequence[Any]) -> list[Any]:
    return [standardize_string(v) if type(v) is str else v for v in values]


def _string_check(param: str, value: str, answers: Sequence[Any]) -> BfclVerdict:
    given = standardize_string(value)
    for answer in answers:  # BFCL standardizes them all first; the first match decides alike
        if type(answer) is str and standardize_string(answer) == given:
            return _VALID
    return _fail("value_error:string", f"{param!r}: {value!r} not in {list(answers)!r}", param)


def _list_check(param: str, value: list[Any], answers: Sequence[Any]) -> BfclVerdict:
    if _standardized(value) not in [_standardized(a) for a in answers]:
        return _fail(
            "value_error:list/tuple", f"{param!r}: {value!r} not in {list(answers)!r}", param
        )
    return _VALID


def _dict_check(param: str, value: Mapping[str, Any], answers: Sequence[Any]) -> BfclVerdict:
    verdict = _fail("dict_checker:unclear", f"{param!r}: no possible dict", param)
    for candidate in answers:
        if candidate == "":
            continue
        verdict = _fail("dict_checker:unclear", f"{param!r}: no possible dict", param)
        ok = True
        for key, item in value.items():
            if key not in candidate:
                verdict = _fail("value_error:dict_key", f"{param!r}: unexpected key {key!r}", param)
                ok = False
                break
            got = standardize_string(item) if type(item) is str else item
            if got not in _standardized(candidate[key]):
                verdict = _fail(
                    "value_error:dict_value", f"{param!r}: {key!r}={item!r} not allowed", param
                )
                ok = False
                break
        # BFCL runs this pass even after a failure above, and its label then wins.
        for key, allowed in candidate.items():
            if key not in value and "" not in allowed:
                verdict = _fail("value_error:dict_key", f"{param!r}: missing key {key!r}", param)
                ok = False
                break
        if ok:
            return _VALID
    return verdict


def _list_dict_check(param: str, value: list[Any], answers: Sequence[Any]) -> BfclVerdict:
    verdict = _fail("list_dict_checker:unclear", f"{param!r}: no possible list", param)
    for candidate in answers:
        if len(value) != len(candidate):
            verdict = _fail(
                "value_error:list_dict_count", f"{param!r}: wrong number of dicts", param
            )
            continue
        verdict = _VALID
        for item, expected in zip(value, candidate, strict=True):
            verdict = _dict_check(param, item, [expected])
            if not verdict.valid:
                break
        if verdict.valid:
            return _VALID
    return verdict


def _type_name(schema: Mapping[str, Any]) -> str:
    name = schema["type"]
    return _JSON_SCHEMA_NAMES.get(name, name)  # type: ignore[no-any-return]


def _check_call(
    tool: ToolSpec, call: ToolCall, expected: ExpectedCall, underscore_to_dot: bool
) -> BfclVerdict:
    """BFCL's ``simple_function_checker``."""
    answers: Mapping[str, Any] = expected.arguments
    parameters = tool.parameters
    properties: Mapping[str, Any] = parameters["properties"]  # type: ignore[assignment]
    required: Sequence[str] = parameters.get("required", [])  # type: ignore[assignment]
    name = tool.name.replace(".", "_") if underscore_to_dot else tool.name
    if call.name != name:
        return _fail("simple_function_checker:wrong_func_name", f"function {name!r} not called")
    params = call.arguments
    for param in required:
        if param not in params:
            return _fail("simple_function_checker:missing_required", f"missing {param!r}", param)
    for param, given in params.items():
        if param not in properties or param not in answers:
            return _fail("simple_function_checker:unexpected_param", f"unexpected {param!r}", param)
        schema = properties[param]
        possible = answers[param]
        type_name = _type_name(schema)
        expected_type = _PYTHON_TYPES[type_name]
        nested = _PYTHON_TYPES[_type_name(schema["items"])] if type_name in _NESTED_TYPES else None
        value: Any = given
        if type_name == "float" and type(value) is int:
            value = float(value)
        verdict, is_variable = _type_check(param, value, possible, expected_type, nested)
        if not verdict.valid:
            return verdict
        if is_variable:
            verdict = _others_check(param, value, possible)
        elif expected_type is str:
            verdict = _string_check(param, value, possible)
        elif expected_type is dict:
            verdict = _dict_check(param, value, possible)
        elif expected_type is list:
            checker = _list_dict_check if nested is dict else _list_check
            verdict = checker(param, value, possible)
        else:
            verdict = _others_check(param, value, possible)
        if not verdict.valid:
            return verdict
    for param, allowed in answers.items():
        if param not in params and "" not in allowed:
            return _fail("simple_function_checker:missing_optional", f"{param!r} not given", param)
    return _VALID


def _others_check(param: str, value: Any, answers: Any) -> BfclVerdict:
    if value not in answers:
        return _fail("value_error:others", f"{param!r}: {value!r} not in {answers!r}", param)
    return _VALID


def _description(tools: Sequence[ToolSpec], name: str) -> ToolSpec:
    for tool in tools:
        if tool.name == name:
            return tool
    raise BfclUnsupported(f"no function description for expected function {name!r}")


def _parallel(
    tools: Sequence[ToolSpec],
    calls: Sequence[ToolCall],
    expected: Sequence[ExpectedCall],
    underscore_to_dot: bool,
) -> BfclVerdict:
    if len(calls) != len(expected):
        return _fail("parallel_function_checker_no_order:wrong_count", "wrong number of functions")
    matched: set[int] = set()
    for i, answer in enumerate(expected):
        tool = _description(tools, answer.name)
        first_failure: BfclVerdict | None = None
        for index, call in enumerate(calls):
            if index in matched:
                continue
            verdict = _check_call(tool, call, answer, underscore_to_dot)
            if verdict.valid:
                matched.add(index)
                break
            first_failure = first_failure or verdict
        else:
            sub = first_failure or _fail("", "")
            return BfclVerdict(
                False,
                "parallel_function_checker_no_order:cannot_find_match",
                f"no model call matches expected call {i} ({answer.name}): {sub.error_type}: "
                f"{sub.error}",
                sub.param,
                sub.error_type,
            )
    return _VALID


def check_bfcl(
    category: str | None,
    tools: Sequence[ToolSpec],
    expected: Sequence[ExpectedCall],
    calls: Sequence[ToolCall],
    *,
    underscore_to_dot: bool = False,
) -> BfclVerdict:
    """BFCL's verdict on the decoded calls of one sample.

    Args:
        category: the BFCL category (``simple_python``, ``live_multiple``...), which selects
            the checker as BFCL does; None outside BFCL: several expected calls use the
            parallel checker, one uses the multiple-function checker.
        tools: the functions offered (BFCL's function descriptions).
        expected: the possible answers, one per expected call.
        calls: the model's decoded calls.
        underscore_to_dot: compare against names with ``.`` replaced by ``_`` (BFCL does so
            for API models whose function names cannot contain dots).

    Raises:
        BfclUnsupported: where BFCL's checker would raise (unknown type name, function
            description missing, Java/JavaScript categories).
    """
    cat = category or ""
    if "java" in cat:
        raise BfclUnsupported(f"category {cat!r}: only Python categories are reproduced")
    if not expected or "irrelevance" in cat:
        if calls:
            return _fail(
                "irrelevance_error:decoder_success", "a call was made where none is expected"
            )
        return _VALID
    try:
        if "parallel" in cat or (not cat and len(expected) > 1):
            return _parallel(tools, calls, expected, underscore_to_dot)
        if "multiple" in cat or not cat:
            if len(calls) != len(expected):
                return _fail("multiple_function_checker:wrong_count", "wrong number of functions")
            tool = _description(tools, expected[0].name)
            return _check_call(tool, calls[0], expected[0], underscore_to_dot)
        if len(calls) != 1:
            return _fail("simple_function_checker:wrong_count", "wrong number of functions")
        if not tools:
            raise BfclUnsupported("no function description")
        return _check_call(tools[0], calls[0], expected[0], underscore_to_dot)
    except (KeyError, TypeError, AttributeError) as exc:
        raise BfclUnsupported(f"BFCL's checker raises {type(exc).__name__}: {exc}") from None


def _first_of_possible_dict(possible: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v[0] for k, v in possible.items() if v and v[0] != ""}


def _reference_value(value: Any, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "dict" and isinstance(value, dict):
        return _first_of_possible_dict(value)
    items = schema.get("items")
    if kind in _NESTED_TYPES and isinstance(items, Mapping) and items.get("type") == "dict":
        return [_first_of_possible_dict(v) if isinstance(v, dict) else v for v in value]
    return value


def reference_calls(tools: Sequence[ToolSpec], expected: Sequence[ExpectedCall]) -> list[ToolCall]:
    """The possible answers as a model would send them, to check a checker against its own
    ground truth: each parameter's first acceptable value (possible dicts one level deep, as
    BFCL checks them), ``""`` meaning "left out", except that a schema-required parameter takes
    its first other value, or ``""`` when it has none (BFCL marks some required parameters
    omittable, and ``live_multiple_507-149-4`` passes only with ``""``); parameters the
    function does not have are left out.

    Args:
        tools: the functions offered.
        expected: the expected calls (BFCL possible answers).
    """
    calls = []
    for answer in expected:
        tool = next((t for t in tools if t.name == answer.name), None)
        schema = tool.parameters if tool is not None else {}
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        required = required if isinstance(required, list) else []
        arguments: dict[str, Any] = {}
        for param, values in answer.arguments.items():
            prop = properties.get(param)
            if not isinstance(prop, dict) or not values:
                continue
            if values[0] != "":
                arguments[param] = _reference_value(values[0], prop)
            elif param in required:
                others = [v for v in values if v != ""]
                arguments[param] = _reference_value(others[0], prop) if others else ""
        calls.append(ToolCall(name=answer.name, arguments=arguments))
    return calls
