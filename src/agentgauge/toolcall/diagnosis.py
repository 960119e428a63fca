"""One sample's diagnosis: expected and predicted calls paired, checked, and its errors named.

Every tool-calling metric reads a :class:`Diagnosis`. Expected calls are paired with predicted
calls by optimal assignment whose cost orders, lexicographically: the tool name differs, the
pair has any error, the share of the call's arguments in error. The arguments of a paired call
are checked against the **expected** tool's schema; with a value mode they are also compared
with the expected values.

The error taxonomy, in this order: ``parse_error``, ``no_call``, ``wrong_count``,
``spurious_call``, ``wrong_tool``, ``missing_required:<p>``, ``type_error:<p>``,
``unexpected_param:<p>``, ``value_mismatch:<p>``.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgauge.model import ExpectedCall, ToolCall, ToolSpec, Trace
from agentgauge.toolcall.matching import (
    DEFAULT_TOLERANCE,
    Tolerance,
    ValueMode,
    argument_errors,
    assign,
)
from agentgauge.toolcall.schema import check_arguments, find_tool, parameter_names

__all__ = ["CallPair", "Diagnosis", "call_dicts", "diagnose"]

# read by the verdicts of every sample: attribute getters, without a generator each time
_NAME_OK = operator.attrgetter("name_ok")
_SCHEMA_ERRORS = operator.attrgetter("schema_errors")
_SCHEMA_ORDER = ("missing_required", "type_error", "unexpected_param", "value_mismatch")


@dataclass(frozen=True)
class CallPair:
    """An expected call and the predicted call it was paired with.

    Args:
        expected: index into the expected calls.
        predicted: index into the predicted calls.
        name_ok: the predicted call names the expected tool.
        schema_errors: the predicted arguments' errors against the expected tool's schema.
        value_errors: the predicted arguments' errors against the expected values.
    """

    expected: int
    predicted: int
    name_ok: bool
    schema_errors: tuple[str, ...] = ()
    value_errors: tuple[str, ...] = ()


@dataclass(slots=True)  # not frozen: a frozen __init__ sets each field by object.__setattr__
class Diagnosis:
    """What was expected, what was predicted, how they pair up and what went wrong.

    The metrics of one trace read the same diagnosis: read it, never change it.
    """

    expected: list[ExpectedCall]
    predicted: list[ToolCall]
    pairs: list[CallPair]
    unmatched_expected: list[int]
    unmatched_predicted: list[int]
    parse_error: str | None
    unknown_tools: list[str]
    errors: list[str]

    @property
    def selection_ok(self) -> bool:
        """Output readable, every expected tool called, nothing else called (no call when none
        expected). Unreadable output is never a correct selection: a malformed call is not an
        abstention (BFCL's irrelevance checker counts it as one; its ``bfcl`` mode does too)."""
        return (
            self.parse_error is None
            and not self.unmatched_expected
            and not self.unmatched_predicted
            and all(map(_NAME_OK, self.pairs))
        )

    @property
    def parameters_ok(self) -> bool:
        """Every expected call has a same-name predicted call whose arguments fit the schema."""
        return (
            not self.unmatched_expected
            and all(map(_NAME_OK, self.pairs))
            and not any(map(_SCHEMA_ERRORS, self.pairs))
        )

    @property
    def values_ok(self) -> bool:
        """Output readable, tools right and every value acceptable."""
        return self.selection_ok and not any(p.value_errors for p in self.pairs)

    @property
    def error_type(self) -> str | None:
        """The primary error (the first of :attr:`errors`)."""
        return self.errors[0] if self.errors else None


def call_dicts(calls: list[ToolCall] | list[ExpectedCall]) -> list[dict[str, Any]]:
    """Calls as ``{"name", "arguments"}`` dicts for details and reports.

    Args:
        calls: predicted or expected calls.
    """
    return [{"name": c.name, "arguments": c.arguments} for c in calls]


# CallPair is frozen: equal pairs (the same indices and errors, most often none) are one
# instance, built once
_call_pair = functools.lru_cache(maxsize=4096)(CallPair)


def _pair(
    i: int,
    j: int,
    expected: ExpectedCall,
    call: ToolCall,
    tool: ToolSpec | None,
    values: ValueMode | None,
    tol: Tolerance,
    allow_unexpected: bool,
) -> CallPair:
    if call.name != expected.name:
        return _call_pair(i, j, False)
    schema_errors = (
        check_arguments(call.arguments, tool.parameters, allow_unexpected=allow_unexpected)
        if tool is not None
        else []
    )
    value_errors = (
        argument_errors(expected, call, values, tol, parameter_names(tool) if tool else ())
        if values is not None
        else []
    )
    return _call_pair(i, j, True, tuple(schema_errors), tuple(value_errors))


def _cost(pair: CallPair, n_params: int, big: float, mid: float) -> float:
    if not pair.name_ok:
        return big + mid
    faults = len(pair.schema_errors) + len(pair.value_errors)
    return (mid if faults else 0.0) + faults / (faults + n_params + 1)


def diagnose(
    trace: Trace,
    *,
    values: ValueMode | None = None,
    tol: Tolerance = DEFAULT_TOLERANCE,
    allow_unexpected: bool = False,
) -> Diagnosis:
    """Pair, check and name the errors of one sample.

    Args:
        trace: the sample; its task's ``expected_calls`` must not be None.
        values: compare argument values in this mode; None checks only names and schemas.
        tol: numeric tolerance of ``lenient``.
        allow_unexpected: accept arguments the expected tool's schema does not list.
    """
    task = trace.task
    expected = list(task.expected_calls or [])
    predicted = trace.tool_calls
    if len(expected) == 1 and len(predicted) == 1:  # the common case: one way to pair
        e = expected[0]
        tool = find_tool(task.tools, e.name)
        pairs = [_pair(0, 0, e, predicted[0], tool, values, tol, allow_unexpected)]
        unmatched_expected: list[int] = []
        unmatched_predicted: list[int] = []
        unknown_tools = [] if tool is not None else [e.name]
    else:
        tools = {e.name: find_tool(task.tools, e.name) for e in expected}
        unknown_tools = sorted(name for name, tool in tools.items() if tool is None)
        candidates = [
            [
                _pair(i, j, e, c, tools[e.name], values, tol, allow_unexpected)
                for j, c in enumerate(predicted)
            ]
            for i, e in enumerate(expected)
        ]
        n = max(len(expected), len(predicted))
        mid = float(n + 1)
        big = mid * (n + 1)
        cost = np.array(
            [
                [_cost(p, len(expected[p.expected].arguments), big, mid) for p in row]
                for row in candidates
            ],
            dtype=np.float64,
        ).reshape(len(expected), len(predicted))
        pairs = [candidates[i][j] for i, j in assign(cost)]
        paired_e = {p.expected for p in pairs}
        paired_p = {p.predicted for p in pairs}
        unmatched_expected = [i for i in range(len(expected)) if i not in paired_e]
        unmatched_predicted = [j for j in range(len(predicted)) if j not in paired_p]
    parse_error = trace.metadata.get("parse_error")
    diagnosis = Diagnosis(  # in field order (keywords cost more)
        expected,
        predicted,
        pairs,
        unmatched_expected,
        unmatched_predicted,
        str(parse_error) if parse_error else None,
        unknown_tools,
        [],
    )
    diagnosis.errors.extend(_taxonomy(diagnosis))  # named from the other fields
    return diagnosis


def _taxonomy(d: Diagnosis) -> list[str]:
    errors: list[str] = []
    if d.parse_error is not None:
        errors.append("parse_error")
    if d.expected and not d.predicted:
        errors.append("no_call")
    elif d.expected and len(d.expected) != len(d.predicted):
        errors.append("wrong_count")
    if d.unmatched_predicted:
        errors.append("spurious_call")
    detailed: list[str] = []
    wrong_tool = False
    for pair in d.pairs:
        wrong_tool = wrong_tool or not pair.name_ok
        detailed += pair.schema_errors
        detailed += pair.value_errors
    if wrong_tool:
        errors.append("wrong_tool")
    if not detailed:  # the common case: nothing to order or to merge
        return errors
    detailed.sort(key=lambda e: _SCHEMA_ORDER.index(e.split(":", 1)[0]))
    errors.extend(detailed)
    return list(dict.fromkeys(errors))
