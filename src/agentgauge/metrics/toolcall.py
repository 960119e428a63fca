"""Tool-calling metrics: tool_selection, parameter_accuracy, execution_success,
response_quality, value_accuracy, abstention. Their weighted overall is the composite of the
built-in ``toolcall`` suite (weights 0.40 / 0.35 / 0.25 / 0.0 on the first four).

Per sample (``tool-calling-metrics.md`` and the DESIGN rulings):

- ``tool_selection`` = 1 iff the predicted calls name exactly the expected tools (paired by
  optimal assignment, none missing, none extra); when no call is expected, 1 iff no call.
- ``parameter_accuracy`` = 1 iff every expected call is paired with a call of the same tool
  whose arguments have the required parameters and valid types under the **expected** tool's
  schema (values are not compared); a wrong tool scores 0; None when no call is expected.
- ``execution_success`` = tool_selection and parameter_accuracy (no call expected: the
  tool_selection verdict).
- ``response_quality`` = token F1 between the final answer and the reference answer
  (``task.expected_output``, else ``task.references[0]``); None unless both exist.
- ``value_accuracy`` (beyond the spec) = 1 iff the argument values are the expected ones, in
  mode ``bfcl`` (BFCL's AST checker, verdict for verdict; for a BFCL multi-turn question, BFCL's
  multi-turn checker on BFCL's simulated APIs, its label in ``error_type``), ``strict`` or
  ``lenient``.
- ``abstention`` (beyond the spec) = on the samples where no call is expected only (BFCL's
  irrelevance sets), 1 iff the model made no call and its output was readable; None elsewhere,
  so its run mean is the abstention rate. A malformed call is not an abstention (BFCL's own
  irrelevance checker counts one as correct; only ``value_accuracy`` mode ``bfcl`` does too).

Every result's details carry the error taxonomy (``errors``), ``error_type`` (the primary
error), the ``expected`` and ``predicted`` calls and the ``raw_output``. A sample the model never
answered (``trace.metadata["run_error"]``: a failed request, a missing prediction) scores 0.0
on every metric (response_quality too, when there is a reference) with errors ``["run_error"]``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from agentgauge.metrics.base import MetricResult, metric, shared_per_trace
from agentgauge.model import JSON, ExpectedCall, Task, ToolCall, Trace
from agentgauge.toolcall.bfcl import BfclUnsupported, BfclVerdict, check_bfcl
from agentgauge.toolcall.bfcl_multiturn import (
    MultiTurnQuestion,
    SimulatorError,
    check_multi_turn,
    is_multi_turn,
)
from agentgauge.toolcall.diagnosis import Diagnosis, call_dicts, diagnose
from agentgauge.toolcall.matching import (
    DEFAULT_TOLERANCE,
    VALUE_ACCURACY_MODES,
    Tolerance,
    ValueMode,
)
from agentgauge.toolcall.schema import find_tool

__all__ = [
    "ValueAccuracy",
    "abstention",
    "execution_success",
    "parameter_accuracy",
    "response_quality",
    "token_f1",
    "tool_selection",
]

_NO_EXPECTATION = "the task has no expected calls"
_TOKEN = re.compile(r"\w+")


class _Shared:
    """What the metrics of one trace share: its diagnoses (by mode, tolerance and
    ``allow_unexpected``), its expected and predicted calls as details list them and its raw
    output."""

    __slots__ = ("_calls", "_diagnoses", "_tool_calls", "raw_output", "trace")

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.raw_output = trace.metadata.get("raw_output")
        self._diagnoses: dict[tuple[ValueMode | None, float, float, bool], Diagnosis] = {}
        self._calls: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._tool_calls: list[ToolCall] | None = None

    def tool_calls(self) -> list[ToolCall]:
        """The trace's tool calls (``Trace.tool_calls``, a new list each time), listed once."""
        if self._tool_calls is None:
            self._tool_calls = self.trace.tool_calls
        return self._tool_calls

    def diagnosis(
        self,
        values: ValueMode | None = None,
        tol: Tolerance = DEFAULT_TOLERANCE,
        allow_unexpected: bool = False,
    ) -> Diagnosis:
        """:func:`diagnose`, made once for the metrics of the trace (tool_selection,
        parameter_accuracy, execution_success and abstention read the same diagnosis)."""
        key = (values, tol.rel_tol, tol.abs_tol, allow_unexpected)
        d = self._diagnoses.get(key)
        if d is None:
            other = self._diagnoses.get((values, tol.rel_tol, tol.abs_tol, not allow_unexpected))
            if other is not None and _flag_changes_nothing(self.trace, other, allow_unexpected):
                d = other
            else:
                d = diagnose(self.trace, values=values, tol=tol, allow_unexpected=allow_unexpected)
                if self._tool_calls is None:
                    self._tool_calls = d.predicted
            self._diagnoses[key] = d
        return d

    def calls(
        self, expected: list[ExpectedCall], predicted: list[ToolCall]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The expected and the predicted calls of the trace as details list them, made once
        for the metrics of the trace (their details share these lists)."""
        if self._calls is None:
            self._calls = (call_dicts(expected), call_dicts(predicted))
        return self._calls

    def details(self, d: Diagnosis, **extra: Any) -> dict[str, Any]:
        """A call metric's details: the errors of ``d``, the calls and the raw output."""
        expected, predicted = self._calls or self.calls(d.expected, d.predicted)
        errors = d.errors
        return {
            "errors": list(errors),
            "error_type": errors[0] if errors else None,  # Diagnosis.error_type
            "expected": expected,
            "predicted": predicted,
            "raw_output": self.raw_output,
            **extra,
        }


def _shared(trace: Trace) -> _Shared:
    """What the call metrics share about ``trace`` (:func:`shared_per_trace`)."""
    return shared_per_trace(trace, _Shared)


def _flag_changes_nothing(trace: Trace, other: Diagnosis, allow_unexpected: bool) -> bool:
    """Whether the diagnosis with ``allow_unexpected`` is ``other``, made without it, or the
    other way round.

    The flag only adds ``unexpected_param`` errors to the schema check of an argument that the
    schema does not list: where no argument is unlisted it changes nothing. Where one call was
    expected and one made, their pair is the only one, and a diagnosis made without the flag
    and naming no unexpected parameter shows that it would change nothing.
    """
    if allow_unexpected and len(other.expected) == 1 and len(other.predicted) == 1:
        errors = other.errors
        return not errors or not any(e.startswith("unexpected_param:") for e in errors)
    return _all_arguments_listed(trace.task, other.predicted)


def _all_arguments_listed(task: Task, calls: list[ToolCall]) -> bool:
    """Every argument of every call that names an expected tool is a property of that tool's
    schema (then the schema check never meets an unexpected parameter)."""
    expected = {e.name for e in task.expected_calls or []}
    for call in calls:
        if call.name in expected and (tool := find_tool(task.tools, call.name)) is not None:
            properties = tool.parameters.get("properties")
            if not isinstance(properties, dict):
                return False
            for argument in call.arguments:
                if argument not in properties:
                    return False
    return True


def _unanswered(trace: Trace, run_error: JSON) -> MetricResult:
    """A sample the model never answered (``trace.metadata["run_error"]``: a failed request,
    no prediction) scores 0."""
    expected = trace.task.expected_calls or []
    return MetricResult(
        value=0.0,
        reason=f"the model gave no answer: {run_error}",
        details={
            "errors": ["run_error"],
            "error_type": "run_error",
            "run_error": run_error,
            "expected": call_dicts(expected),
            "predicted": [],
            "raw_output": None,
        },
    )


@metric("tool_selection", description="the expected tools were called, and nothing else")
def tool_selection(trace: Trace) -> MetricResult:
    """1.0 iff the predicted calls name exactly the expected tools (a no-call sample: iff no
    call was made).

    Args:
        trace: the sample.
    """
    if run_error := trace.metadata.get("run_error"):
        return _unanswered(trace, run_error)
    if trace.task.expected_calls is None:
        return MetricResult.missing(_NO_EXPECTATION)
    shared = _shared(trace)
    d = shared.diagnosis()
    return MetricResult(1.0 if d.selection_ok else 0.0, shared.details(d))


@metric("parameter_accuracy", description="required parameters present, types valid")
def parameter_accuracy(trace: Trace, *, allow_unexpected: bool = True) -> MetricResult:
    """1.0 iff each expected call has a same-tool call whose arguments fit the expected
    tool's schema (required present, types valid; values not compared).

    Args:
        trace: the sample.
        allow_unexpected: accept arguments the schema does not list (the spec checks required
            parameters and types only, as DeepFabric does, and JSON Schema allows them unless
            ``additionalProperties`` is false). False makes them ``unexpected_param:<p>``
            errors, as strict APIs do; ``value_accuracy`` reports them in its own modes.
    """
    if run_error := trace.metadata.get("run_error"):
        return _unanswered(trace, run_error)
    expected = trace.task.expected_calls
    if expected is None:
        return MetricResult.missing(_NO_EXPECTATION)
    if not expected:
        return MetricResult.missing("no call is expected: no parameters to check")
    shared = _shared(trace)
    d = shared.diagnosis(allow_unexpected=allow_unexpected)
    if d.unknown_tools and not d.unmatched_expected and all(p.name_ok for p in d.pairs):
        return MetricResult.missing(
            f"no schema for expected tool(s) {', '.join(d.unknown_tools)} in task.tools",
            **shared.details(d),
        )
    return MetricResult(1.0 if d.parameters_ok else 0.0, shared.details(d))


@metric("execution_success", description="correct tool and valid parameters")
def execution_success(trace: Trace, *, allow_unexpected: bool = True) -> MetricResult:
    """1.0 iff tool selection is right and the parameters are valid (a no-call sample: iff no
    call was made).

    Args:
        trace: the sample.
        allow_unexpected: accept arguments the schema does not list (see
            :func:`parameter_accuracy`).
    """
    if run_error := trace.metadata.get("run_error"):
        return _unanswered(trace, run_error)
    if trace.task.expected_calls is None:
        return MetricResult.missing(_NO_EXPECTATION)
    shared = _shared(trace)
    d = shared.diagnosis(allow_unexpected=allow_unexpected)
    if d.unknown_tools and d.selection_ok:
        return MetricResult.missing(
            f"no schema for expected tool(s) {', '.join(d.unknown_tools)} in task.tools",
            **shared.details(d),
        )
    ok = d.selection_ok and (not d.expected or d.parameters_ok)
    return MetricResult(1.0 if ok else 0.0, shared.details(d))


@metric("abstention", description="no call made where none is due (no-call samples only)")
def abstention(trace: Trace) -> MetricResult:
    """1.0 iff the model made no call and its output was readable, on a sample where no call is
    expected; None on every other sample.

    Args:
        trace: the sample.
    """
    expected = trace.task.expected_calls
    if expected is None:
        return MetricResult.missing(_NO_EXPECTATION)
    if expected:
        return MetricResult.missing("a call is expected: abstention does not apply")
    if run_error := trace.metadata.get("run_error"):
        return _unanswered(trace, run_error)
    shared = _shared(trace)
    d = shared.diagnosis()
    return MetricResult(1.0 if d.selection_ok else 0.0, shared.details(d))


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD-style token F1: harmonic mean of token precision and recall (lower-cased word
    tokens, counted with multiplicity).

    Args:
        prediction: the answer given.
        reference: the reference answer.
    """
    pred = Counter(_TOKEN.findall(prediction.lower()))
    ref = Counter(_TOKEN.findall(reference.lower()))
    common = sum((pred & ref).values())
    if common == 0:
        return 1.0 if not pred and not ref else 0.0
    precision = common / sum(pred.values())
    recall = common / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def _as_text(value: JSON) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    return None


@metric("response_quality", description="token F1 of the final answer against the reference")
def response_quality(trace: Trace) -> MetricResult:
    """Token F1 between the final answer and the reference answer; None unless both exist.

    Args:
        trace: the sample.
    """
    task = trace.task
    reference = _as_text(task.expected_output)
    if reference is None and task.references:
        reference = next((r for r in task.references if r.strip()), None)
    if reference is None:
        return MetricResult.missing("the task has no reference answer")
    answer = _as_text(trace.output)
    if run_error := trace.metadata.get("run_error"):
        return _unanswered(trace, run_error)
    if answer is None:
        return MetricResult.missing("the model gave no text answer")
    return MetricResult(value=token_f1(answer, reference), details={"similarity": "token_f1"})


_BFCL_LABELS = {
    "wrong_count": "wrong_count",
    "wrong_func_name": "wrong_tool",
    "decoder_success": "spurious_call",
    "decoder_failed": "parse_error",
}
_BFCL_PARAM_LABELS = {
    "missing_required": "missing_required",
    "unexpected_param": "unexpected_param",
    "type_error": "type_error",
}


def _bfcl_errors(verdict: BfclVerdict, n_calls: int) -> list[str]:
    """BFCL's failure in our taxonomy (BFCL reports only its first failure)."""
    if verdict.valid or verdict.error_type is None:
        return []
    label = verdict.cause or verdict.error_type
    head, _, tail = label.partition(":")
    if tail in _BFCL_LABELS:
        simple = _BFCL_LABELS[tail]
        return ["no_call"] if simple == "wrong_count" and n_calls == 0 else [simple]
    for key, name in _BFCL_PARAM_LABELS.items():
        if key in (head, tail):
            return [f"{name}:{verdict.param}"]
    return [f"value_mismatch:{verdict.param}"]


@metric(
    "value_accuracy",
    description=f"argument values match the expected ones ({'|'.join(VALUE_ACCURACY_MODES)})",
)
class ValueAccuracy:
    """1.0 iff the calls and their argument values are the expected ones.

    Args:
        mode: ``bfcl`` (BFCL's AST checker verdicts exactly), ``strict`` or ``lenient``
            (numeric tolerance, order-free lists, optional parameters given explicitly).
        rel_tol: relative numeric tolerance of ``lenient``.
        abs_tol: absolute numeric tolerance of ``lenient``.
        underscore_to_dot: ``bfcl`` only: compare function names with ``.`` replaced by ``_``
            (BFCL does so for API models whose tool names cannot contain dots).
        allow_unexpected: ``strict``/``lenient``: accept arguments the schema does not list.
    """

    name = "value_accuracy"

    def __init__(
        self,
        *,
        mode: str = "strict",
        rel_tol: float = 1e-6,
        abs_tol: float = 1e-9,
        underscore_to_dot: bool = False,
        allow_unexpected: bool = False,
    ) -> None:
        if mode not in VALUE_ACCURACY_MODES:
            raise ValueError(f"mode must be one of {', '.join(VALUE_ACCURACY_MODES)}, not {mode!r}")
        if rel_tol < 0 or abs_tol < 0:
            raise ValueError("rel_tol and abs_tol must be non-negative")
        self.mode = mode
        self.tol = Tolerance(rel_tol=rel_tol, abs_tol=abs_tol)
        self.underscore_to_dot = underscore_to_dot
        self.allow_unexpected = allow_unexpected

    def score(self, trace: Trace) -> MetricResult:
        metadata = trace.metadata
        if run_error := metadata.get("run_error"):
            return _unanswered(trace, run_error)
        task = trace.task
        expected = task.expected_calls
        if expected is None:
            return MetricResult.missing(_NO_EXPECTATION)
        if self.mode == "bfcl":
            return self._score_bfcl(trace, task, expected, metadata)
        shared = _shared(trace)
        d = shared.diagnosis(self.mode, self.tol, self.allow_unexpected)
        details = shared.details(d, mode=self.mode)
        if d.values_ok:
            # the values are right (JSON equality: 10.0 == 10); a schema error still listed in
            # `errors` is parameter_accuracy's verdict, not this one's primary error
            details["error_type"] = None
        return MetricResult(1.0 if d.values_ok else 0.0, details)

    def _score_bfcl(
        self, trace: Trace, task: Task, expected: list[ExpectedCall], metadata: dict[str, JSON]
    ) -> MetricResult:
        shared = _shared(trace)
        calls = shared.tool_calls()
        parse_error = metadata.get("parse_error")
        expected_dicts, predicted_dicts = shared.calls(expected, calls)
        details: dict[str, Any] = {
            "mode": "bfcl",
            "expected": expected_dicts,
            "predicted": predicted_dicts,
            "raw_output": shared.raw_output,
        }
        if is_multi_turn(task):
            return _score_multi_turn(trace, details)
        if parse_error and expected:
            verdict = BfclVerdict(False, "ast_decoder:decoder_failed", str(parse_error))
        else:
            # For irrelevance BFCL counts an unreadable output as no call, hence a pass.
            try:
                verdict = check_bfcl(
                    task.category,
                    task.tools,
                    expected,
                    [] if parse_error else calls,
                    underscore_to_dot=self.underscore_to_dot,
                )
            except BfclUnsupported as exc:
                return MetricResult.missing(f"BFCL's checker gives no verdict: {exc}", **details)
        errors = _bfcl_errors(verdict, len(calls))
        if parse_error:
            errors = ["parse_error", *(e for e in errors if e != "parse_error")]
        details["errors"] = errors
        details["error_type"] = errors[0] if errors else None
        details["bfcl_error_type"] = verdict.error_type
        details["bfcl_error"] = verdict.error
        return MetricResult(1.0 if verdict.valid else 0.0, details)


def _score_multi_turn(trace: Trace, base: dict[str, Any]) -> MetricResult:
    """BFCL's multi-turn checker on BFCL's simulated APIs."""
    try:
        verdict = check_multi_turn(
            MultiTurnQuestion.from_task(trace.task), trace.metadata.get("raw_output")
        )
    except SimulatorError as exc:
        return MetricResult.missing(str(exc), **base)
    errors = [verdict.error_type] if verdict.error_type else []
    return MetricResult(
        value=1.0 if verdict.valid else 0.0,
        details={
            **base,
            "errors": errors,
            "error_type": verdict.error_type,
            "bfcl_error_type": None if verdict.input_error else verdict.error_type,
            "bfcl_error": None if verdict.input_error else verdict.error,
            "input_error": verdict.error if verdict.input_error else None,
            "turn": verdict.turn,
            **verdict.details,
        },
    )
