"""Value comparison of calls (modes ``strict`` and ``lenient``) and optimal call assignment.

An expected argument lists its acceptable values; ``""`` among them means the parameter may be
left out. Acceptable values that are objects whose every value is a list are read as BFCL
"possible dicts" (each key lists its acceptable values) when they do not match literally.

- ``strict``: JSON equality (numbers by value, a bool is not a number), lists in order, strings
  exactly; an argument the expected call does not list is an error.
- ``lenient``: numbers within ``rel_tol``/``abs_tol`` (:func:`math.isclose`), strings compared
  case-folded with whitespace collapsed, lists in any order (a perfect matching of their
  elements), and arguments the expected call does not list are accepted when the tool's schema
  has them (optional parameters given explicitly).

Several expected calls are paired with predicted calls by :func:`assign`, an optimal assignment
(``scipy.optimize.linear_sum_assignment``), not by position or greedily.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

from agentgauge.model import ExpectedCall, ToolCall
from agentgauge.toolcall.schema import json_equal

__all__ = [
    "DEFAULT_TOLERANCE",
    "VALUE_ACCURACY_MODES",
    "Tolerance",
    "ValueAccuracyMode",
    "ValueMode",
    "acceptable",
    "argument_errors",
    "assign",
    "value_matches",
]

ValueMode = Literal["strict", "lenient"]
"""How this module compares argument values."""

ValueAccuracyMode = Literal["bfcl", "strict", "lenient"]
"""The modes of the ``value_accuracy`` metric: BFCL's own checker
(:mod:`agentgauge.toolcall.bfcl`), or one of this module's :data:`ValueMode`."""

VALUE_ACCURACY_MODES: tuple[ValueAccuracyMode, ...] = get_args(ValueAccuracyMode)


@dataclass(frozen=True)
class Tolerance:
    """Numeric tolerance of the ``lenient`` mode (see :func:`math.isclose`)."""

    rel_tol: float = 1e-6
    abs_tol: float = 1e-9


DEFAULT_TOLERANCE = Tolerance()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _normal_text(text: str) -> str:
    return " ".join(text.split()).casefold()


def _lists_match(expected: list[Any], got: list[Any], mode: ValueMode, tol: Tolerance) -> bool:
    if len(expected) != len(got):
        return False
    if mode == "strict":
        return all(value_matches(e, g, mode, tol) for e, g in zip(expected, got, strict=True))
    if not expected:
        return True
    hits = np.array([[value_matches(e, g, mode, tol) for g in got] for e in expected])
    from scipy.optimize import linear_sum_assignment  # imported late: it costs the CLI 0.5 s

    rows, cols = linear_sum_assignment(hits, maximize=True)
    return bool(hits[rows, cols].all())


def _dicts_match(
    expected: dict[str, Any], got: dict[str, Any], mode: ValueMode, tol: Tolerance
) -> bool:
    if expected.keys() == got.keys() and all(
        value_matches(expected[k], got[k], mode, tol) for k in expected
    ):
        return True
    if not expected or not all(isinstance(v, list) for v in expected.values()):
        return False
    # A BFCL possible dict: every key lists its acceptable values, "" = may be left out.
    return all(
        k in expected and acceptable(expected[k], v, mode, tol) for k, v in got.items()
    ) and all(k in got or "" in values for k, values in expected.items())


def value_matches(
    expected: Any, got: Any, mode: ValueMode, tol: Tolerance = DEFAULT_TOLERANCE
) -> bool:
    """Whether a predicted value matches one expected value.

    Args:
        expected: one acceptable value.
        got: the predicted value.
        mode: ``strict`` or ``lenient`` (see the module docstring).
        tol: numeric tolerance of ``lenient``.
    """
    if isinstance(expected, dict) and isinstance(got, dict):
        return _dicts_match(expected, got, mode, tol)
    if isinstance(expected, list) and isinstance(got, list):
        return _lists_match(expected, got, mode, tol)
    if mode == "lenient":
        if _is_number(expected) and _is_number(got):
            try:
                return math.isclose(expected, got, rel_tol=tol.rel_tol, abs_tol=tol.abs_tol)
            except OverflowError:  # an int too large for a float cannot be close to a float
                return bool(expected == got)
        if isinstance(expected, str) and isinstance(got, str):
            return _normal_text(expected) == _normal_text(got)
    return json_equal(expected, got)


def acceptable(
    values: Sequence[Any], got: Any, mode: ValueMode, tol: Tolerance = DEFAULT_TOLERANCE
) -> bool:
    """Whether ``got`` matches any of the acceptable ``values``.

    Args:
        values: the acceptable values of one argument.
        got: the predicted value.
        mode: ``strict`` or ``lenient``.
        tol: numeric tolerance of ``lenient``.
    """
    return any(value_matches(v, got, mode, tol) for v in values)


def argument_errors(
    expected: ExpectedCall,
    call: ToolCall,
    mode: ValueMode,
    tol: Tolerance = DEFAULT_TOLERANCE,
    schema_params: Collection[str] = (),
) -> list[str]:
    """Value errors of a call against the expected call (names are not compared here).

    Args:
        expected: the expected call (acceptable values per parameter).
        call: the predicted call.
        mode: ``strict`` or ``lenient``.
        tol: numeric tolerance of ``lenient``.
        schema_params: the tool's parameter names; ``lenient`` accepts extra arguments that
            are among them.

    Returns:
        ``value_mismatch:<p>`` for a wrong or missing value, ``unexpected_param:<p>`` for an
        argument neither expected nor (in ``lenient``) in the schema; in parameter order.
    """
    errors = []
    for param, values in expected.arguments.items():
        if param not in call.arguments:
            if "" not in values:
                errors.append(f"value_mismatch:{param}")
        elif not acceptable(values, call.arguments[param], mode, tol):
            errors.append(f"value_mismatch:{param}")
    for param in call.arguments:
        if param in expected.arguments:
            continue
        if param not in schema_params:
            errors.append(f"unexpected_param:{param}")
        elif mode == "strict":
            errors.append(f"value_mismatch:{param}")
    return errors


def assign(cost: NDArray[np.float64]) -> list[tuple[int, int]]:
    """Optimal one-to-one pairing of rows (expected calls) and columns (predicted calls).

    Args:
        cost: ``cost[i, j]`` of pairing expected call ``i`` with predicted call ``j``;
            rectangular matrices leave the surplus rows or columns unpaired.

    Returns:
        The (row, column) pairs of a minimum-cost assignment, by row.
    """
    if cost.size == 0:
        return []
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost)
    return [(int(r), int(c)) for r, c in zip(rows, cols, strict=True)]
