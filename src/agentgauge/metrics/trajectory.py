"""Reference-trajectory metrics: ``trajectory_match``, ``tool_correctness`` and
``tool_call_accuracy``.

Each compares what the agent did with the task's reference and reproduces a peer's evaluator
on that peer's own test cases:

- ``trajectory_match``: LangChain agentevals' ``create_trajectory_match_evaluator``
  (1.0 or 0.0);
- ``tool_correctness``: DeepEval's ``ToolCorrectnessMetric`` (partial credit, optional ordering
  score);
- ``tool_call_accuracy``: Ragas' ``ToolCallAccuracy`` (per-argument partial credit, sequence
  alignment).

**The reference** is the task's ``reference_trajectory``: reference steps (messages with roles,
tool calls with arguments, tool outputs) or a list of tool names. Without one, the task's
``expected_calls`` serve as the reference calls when every argument has one acceptable value.
A list of tool names gives no arguments, so a comparison that needs them is None with a reason.

**The trace as a chat.** The trace's steps are read as the messages of a chat: an ``llm`` step is
an assistant message and the ``tool_call`` steps that directly follow it are its tool calls (a
``tool_call`` step after anything else is an assistant message of its own); a ``tool_result``
step is a tool message, whose output belongs to the call its ``parent_id`` names (else to the
oldest call not yet answered); a ``message`` or ``handoff`` step is a user message when its agent
is ``user`` or ``environment``, a system message for ``system``, a tool message for ``tool``,
else an assistant message. ``reasoning`` and ``error`` steps are no message of the chat.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from operator import itemgetter
from typing import Any, Literal, Protocol, get_args

from agentgauge.metrics.base import MetricResult, metric, shared_per_trace
from agentgauge.model import JSON, Called, ReferenceStep, StepKind, Task, Trace

__all__ = [
    "ARGS_MODES",
    "MATCH_MODES",
    "ArgsMatcher",
    "ToolCallAccuracy",
    "ToolCorrectness",
    "TrajectoryMatch",
]

ArgsMode = Literal["exact", "ignore", "subset", "superset"]
MatchMode = Literal["strict", "unordered", "subset", "superset"]
ARGS_MODES: tuple[str, ...] = get_args(ArgsMode)
"""How ``trajectory_match`` compares the arguments of two calls of the same tool."""
MATCH_MODES: tuple[str, ...] = get_args(MatchMode)
"""How ``trajectory_match`` compares the trajectories."""

ArgsMatcher = Callable[[dict[str, Any], dict[str, Any]], bool]
"""``matcher(trace_arguments, reference_arguments) -> bool``: do two calls' arguments match."""

_COMPARE_FIELDS = ("name", "input", "output")
_ENVIRONMENT_ROLES = {"user": "user", "environment": "user", "system": "system", "tool": "tool"}


# --------------------------------------------------------------------------- chat views


# one encoder for every label: json.dumps would build one per call, and JSONEncoder.encode
# its C encoder too (a third of a label's time); without the C encoder, the Python one
_LABEL_ENCODER = json.JSONEncoder(sort_keys=True, default=str)
_encode_label: Callable[[Any, int], Iterable[str]] | None = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        # no record of the containers met (a JSON value holds no cycle), as
        # JSONEncoder(check_circular=False) does; the rest as _LABEL_ENCODER encodes
        None,
        str,
        encode_basestring_ascii,
        None,
        ": ",
        ", ",
        True,
        False,
        True,
    )
)
# enum members read once: a member read through its class is a descriptor call each time
_LLM, _TOOL_RESULT = StepKind.llm, StepKind.tool_result
_SPOKEN = (StepKind.message, StepKind.handoff)


class _Called(Protocol):
    """A tool call as the comparisons read it: a recorded call or a reference's."""

    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, JSON]: ...


@dataclass(eq=False, slots=True)
class _Call:
    """A tool call; two calls are the same call only when they are one object (two equal
    calls in one message are answered one after the other)."""

    name: str
    arguments: dict[str, JSON]
    step: int
    output: JSON = None
    text: str | None = None  # the label, written once for every metric that shows it

    def label(self) -> str:
        text = self.text
        if text is None:
            text = self.text = _label(self)
        return text


def _label(call: _Called) -> str:
    """How details name a call: ``name({"argument": value, ...})``, the arguments sorted."""
    arguments = call.arguments
    if _encode_label is None or arguments.__class__ is not dict:
        return f"{call.name}({_LABEL_ENCODER.encode(arguments)})"
    return f"{call.name}({''.join(_encode_label(arguments, 0))})"


class _Message:
    __slots__ = ("calls", "role", "step")

    def __init__(self, role: str, step: int) -> None:
        self.role = role
        self.step = step
        self.calls: list[_Call] = []


class _Outputs:
    """Links tool outputs to the calls they answer: by id, else the oldest unanswered call."""

    __slots__ = ("_ids", "_pending")

    def __init__(self) -> None:
        self._ids: dict[str, _Call] = {}
        self._pending: list[_Call] = []

    def call(self, call: _Call, *ids: str | None) -> None:
        for key in ids:
            if key is not None:
                self._ids[key] = call
        self._pending.append(call)

    def result(self, link: str | None, value: JSON) -> None:
        call = self._ids.get(link) if link is not None else None
        if call is None and link is None and self._pending:
            call = self._pending[0]
        if call is None or call not in self._pending:
            return
        self._pending.remove(call)
        call.output = value


class _Chat:
    """The trace as a chat: its calls in order, read at once; its messages and the calls'
    outputs only when a comparison asks for them (see the module docstring)."""

    __slots__ = ("_linked", "_messages", "_trace", "calls")

    def __init__(self, trace: Trace) -> None:
        self._trace = trace
        self.calls = [
            _Call(made.name, made.arguments, step.index)
            for step in trace.steps
            if (made := step.tool_call) is not None
        ]
        self._messages: list[_Message] | None = None
        self._linked = False

    def messages(self) -> list[_Message]:
        """The chat's messages, each assistant message with its calls."""
        if self._messages is not None:
            return self._messages
        messages: list[_Message] = []
        calls = iter(self.calls)
        open_turn: _Message | None = None
        for step in self._trace.steps:
            if step.tool_call is not None:
                if open_turn is None:
                    open_turn = _Message("assistant", step.index)
                    messages.append(open_turn)
                open_turn.calls.append(next(calls))
                continue
            kind = step.kind
            if kind is _LLM:
                open_turn = _Message("assistant", step.index)
                messages.append(open_turn)
            elif kind is _TOOL_RESULT:
                open_turn = None
                messages.append(_Message("tool", step.index))
            elif kind in _SPOKEN:
                open_turn = None
                role = _ENVIRONMENT_ROLES.get((step.agent or "").lower(), "assistant")
                messages.append(_Message(role, step.index))
            # reasoning and error steps are no message: an open turn stays open
        self._messages = messages
        return messages

    def link_outputs(self) -> None:
        """Gives each call the output of the tool result that answers it."""
        if self._linked:
            return
        self._linked = True
        outputs = _Outputs()
        calls = iter(self.calls)
        for step in self._trace.steps:
            if (made := step.tool_call) is not None:
                outputs.call(next(calls), step.id, made.id)
            elif step.kind is _TOOL_RESULT:
                outputs.result(step.parent_id, step.result)


def _chat(trace: Trace) -> _Chat:
    """The trace as a chat, read once for all the metrics of this module (treat it as read
    only: the metrics share it)."""
    return shared_per_trace(trace, _Chat)


class _Reference:
    """The reference: its calls in order, whether it gives their arguments and outputs, where
    it came from, and the reference steps it was read from (None when it has no messages)."""

    __slots__ = ("_linked", "_messages", "_steps", "arguments", "calls", "outputs", "source")

    def __init__(
        self,
        calls: list[_Call],
        arguments: bool,
        outputs: bool,
        source: str,
        steps: Sequence[ReferenceStep] | None = None,
    ) -> None:
        self.calls = calls
        self.arguments = arguments
        self.outputs = outputs
        self.source = source
        self._steps = steps
        self._messages: list[_Message] | None = None
        self._linked = False

    def messages(self) -> list[_Message] | None:
        """The reference's messages, each with its calls; None for a reference of calls."""
        if self._messages is not None or self._steps is None:
            return self._messages
        calls = iter(self.calls)
        messages = []
        for index, step in enumerate(self._steps):
            message = _Message(step.role, index)
            message.calls = [next(calls) for _ in step.tool_calls]
            messages.append(message)
        self._messages = messages
        return messages

    def link_outputs(self) -> None:
        """Gives each reference call the content of the tool message that answers it."""
        if self._linked or self._steps is None:
            return
        self._linked = True
        outputs = _Outputs()
        calls = iter(self.calls)
        for step in self._steps:
            for made in step.tool_calls:
                outputs.call(next(calls), made.id)
            if step.role == "tool":
                outputs.result(step.tool_call_id, step.content)


def _read_reference(task: Task) -> _Reference | str:
    """The task's reference, or why there is none to compare with."""
    trajectory = task.reference_trajectory
    if trajectory is not None:
        steps = [s for s in trajectory if isinstance(s, ReferenceStep)]
        if trajectory and len(steps) == len(trajectory):
            calls = [
                _Call(made.name, made.arguments, index)
                for index, step in enumerate(steps)
                for made in step.tool_calls
            ]
            return _Reference(calls, True, True, "reference_trajectory", steps)
        names = [s for s in trajectory if isinstance(s, str)]
        calls = [_Call(name, {}, i) for i, name in enumerate(names)]
        return _Reference(calls, not calls, not calls, "reference_trajectory (tool names)")
    if task.expected_calls is None:
        return "the task has no reference trajectory and no expected calls"
    calls = []
    for i, expected in enumerate(task.expected_calls):
        arguments: dict[str, JSON] = {}
        for param, values in expected.arguments.items():
            if len(values) != 1 or values[0] == "":
                return (
                    f"expected call {i} ({expected.name}) accepts several values for {param!r}; "
                    "give a reference trajectory to compare with one value"
                )
            arguments[param] = values[0]
        calls.append(_Call(expected.name, arguments, i))
    return _Reference(calls, True, False, "expected_calls")


def _trace_reference(trace: Trace) -> _Reference | str:
    return _read_reference(trace.task)


def _reference(trace: Trace) -> _Reference | str:
    """The trace's task's reference, read once for all the metrics of this module (treat it
    as read only), or why there is none to compare with."""
    return shared_per_trace(trace, _trace_reference)


def _run_failure(trace: Trace) -> MetricResult | None:
    """A sample the model never answered (a failed request, no prediction) scores 0."""
    run_error = trace.metadata.get("run_error")
    if not run_error:
        return None
    return MetricResult(value=0.0, reason=f"the model gave no answer: {run_error}")


# --------------------------------------------------------------------------- trajectory_match


def _exact(output: dict[str, Any], reference: dict[str, Any]) -> bool:
    return output == reference


def _subset(output: dict[str, Any], reference: dict[str, Any]) -> bool:
    return all(key in reference and reference[key] == value for key, value in output.items())


def _superset(output: dict[str, Any], reference: dict[str, Any]) -> bool:
    return all(key in output and output[key] == value for key, value in reference.items())


def _ignore(output: dict[str, Any], reference: dict[str, Any]) -> bool:
    return True


_MATCHERS: dict[str, ArgsMatcher] = {
    "exact": _exact,
    "ignore": _ignore,
    "subset": _subset,
    "superset": _superset,
}


def _nested(arguments: Any, path: str) -> Any:
    """The value at a dotted key path, None where the path breaks off."""
    current = arguments
    for part in path.split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(part)
        if current is None:
            return None
    return current


def _keys_matcher(paths: Sequence[str]) -> ArgsMatcher:
    def matcher(output: dict[str, Any], reference: dict[str, Any]) -> bool:
        return all(_nested(output, p) == _nested(reference, p) for p in paths)

    return matcher


def _override(tool: str, value: Any) -> ArgsMatcher:
    if isinstance(value, str):
        if value not in _MATCHERS:
            raise ValueError(
                f"overrides.{tool}: unknown args mode {value!r}; use one of "
                f"{', '.join(ARGS_MODES)} or a list of dotted key paths"
            )
        return _MATCHERS[value]
    if isinstance(value, list | tuple):
        if not value or not all(isinstance(p, str) and p for p in value):
            raise ValueError(f"overrides.{tool}: expected a non-empty list of key paths")
        return _keys_matcher(list(value))
    if callable(value):
        return value  # type: ignore[no-any-return]
    raise ValueError(
        f"overrides.{tool}: expected an args mode, a list of key paths or a function, got {value!r}"
    )


@dataclass(frozen=True)
class _Mismatch:
    """Where two trajectories part: the reference step (or trace step) at fault, and why."""

    reason: str
    reference_step: int | None = None
    trace_step: int | None = None


def _strict_messages(
    actual: list[_Message], reference: list[_Message], matcher: Callable[[str], ArgsMatcher]
) -> _Mismatch | None:
    """agentevals' strict match: same messages in order, same roles, and in each assistant
    message the same tool calls in any order (each reference call used once)."""
    if len(actual) != len(reference):
        return _Mismatch(f"the trace has {len(actual)} messages and the reference {len(reference)}")
    for out, ref in zip(actual, reference, strict=True):
        if out.role == ref.role and not out.calls and not ref.calls:
            continue  # most messages: nothing more to compare
        where = {"reference_step": ref.step, "trace_step": out.step}
        if out.role != ref.role:
            return _Mismatch(
                f"reference step {ref.step} has role {ref.role}, trace step {out.step} "
                f"role {out.role}",
                **where,
            )
        if bool(out.calls) != bool(ref.calls):
            reason = (
                f"reference step {ref.step} makes tool calls and trace step {out.step} none"
                if ref.calls
                else f"trace step {out.step} makes tool calls and reference step {ref.step} none"
            )
            return _Mismatch(reason, **where)
        if len(out.calls) != len(ref.calls):
            return _Mismatch(
                f"reference step {ref.step} makes {len(ref.calls)} tool calls and trace step "
                f"{out.step} makes {len(out.calls)}",
                **where,
            )
        seen = [False] * len(ref.calls)
        for call in out.calls:
            found = next(
                (
                    i
                    for i, r in enumerate(ref.calls)
                    if not seen[i]
                    and call.name == r.name
                    and matcher(call.name)(call.arguments, r.arguments)
                ),
                None,
            )
            if found is None:
                return _Mismatch(
                    f"trace call {call.label()} at step {out.step} matches no call of "
                    f"reference step {ref.step}",
                    **where,
                )
            seen[found] = True
    return None


def _strict_calls(
    actual: list[_Call], reference: list[_Call], matcher: Callable[[str], ArgsMatcher]
) -> _Mismatch | None:
    """Strict match against a reference without messages: the same calls in the same order."""
    if len(actual) != len(reference):
        return _Mismatch(
            f"the trace makes {len(actual)} tool calls and the reference {len(reference)}"
        )
    for out, ref in zip(actual, reference, strict=True):
        if out.name != ref.name or not matcher(ref.name)(out.arguments, ref.arguments):
            return _Mismatch(
                f"reference call {ref.step} is {ref.label()}, trace call at step {out.step} "
                f"{out.label()}",
                reference_step=ref.step,
                trace_step=out.step,
            )
    return None


def _covers(
    outer: list[_Call],
    inner: list[_Call],
    matcher: Callable[[str], ArgsMatcher],
) -> _Call | None:
    """agentevals' superset test: each call of ``inner``, in order, takes the first unused call
    of ``outer`` with its name whose arguments match (``matcher(outer, inner)``). Returns the
    first ``inner`` call left without a match."""
    used: set[int] = set()
    for wanted in inner:
        found = next(
            (
                i
                for i, have in enumerate(outer)
                if have.name == wanted.name
                and i not in used
                and matcher(wanted.name)(have.arguments, wanted.arguments)
            ),
            None,
        )
        if found is None:
            return wanted
        used.add(found)
    return None


def _missing_from_trace(call: _Call) -> _Mismatch:
    return _Mismatch(
        f"reference call {call.label()} (reference step {call.step}) has no matching call "
        "in the trace",
        reference_step=call.step,
    )


def _not_in_reference(call: _Call) -> _Mismatch:
    return _Mismatch(
        f"trace call {call.label()} at step {call.step} has no matching call in the reference",
        trace_step=call.step,
    )


@metric(
    "trajectory_match",
    description="the run's messages and tool calls match the reference trajectory (1 or 0)",
)
class TrajectoryMatch:
    """1.0 when the trace's trajectory matches the task's reference, else 0.0 (LangChain
    agentevals' ``create_trajectory_match_evaluator``).

    Modes: ``strict`` — the same messages in the same order, with the same roles and, in each
    assistant message, the same tool calls (in any order within the message; message texts are
    not compared); against a reference without messages (tool names, expected calls), the same
    calls in the same order. ``unordered`` — the same tool calls in any order. ``superset`` —
    every reference call is made (other calls allowed). ``subset`` — every call made is in the
    reference. Calls are paired greedily in order, each used once.

    Arguments of two calls of the same tool match by ``args``: ``exact`` (equal),
    ``ignore``, ``subset`` (the trace's arguments are among the reference's) or ``superset``
    (the reference's arguments are among the trace's). ``overrides`` sets it per tool: an args
    mode, a list of dotted key paths to compare (``["time.start"]``), or, from Python, a
    function ``(trace_arguments, reference_arguments) -> bool``. In ``subset`` mode, and in
    the second half of ``unordered``, the two sides are swapped, as in agentevals.

    ``details["failed"]`` names the reference step (or trace step) where the trajectories part,
    and why.

    Args:
        mode: ``strict``, ``unordered``, ``subset`` or ``superset``.
        args: ``exact``, ``ignore``, ``subset`` or ``superset``.
        overrides: tool name -> args mode, list of key paths, or function.
    """

    name = "trajectory_match"

    def __init__(
        self,
        *,
        mode: str = "strict",
        args: str = "exact",
        overrides: Mapping[str, str | Sequence[str] | ArgsMatcher] | None = None,
    ) -> None:
        if mode not in MATCH_MODES:
            raise ValueError(f"mode must be one of {', '.join(MATCH_MODES)}, not {mode!r}")
        if args not in ARGS_MODES:
            raise ValueError(f"args must be one of {', '.join(ARGS_MODES)}, not {args!r}")
        if overrides is not None and not isinstance(overrides, Mapping):
            raise ValueError(f"overrides must be a table of tool name -> mode, not {overrides!r}")
        self.mode = mode
        self.args = args
        self._overrides = {tool: _override(tool, v) for tool, v in (overrides or {}).items()}

    def _matcher(self, tool: str) -> ArgsMatcher:
        return self._overrides.get(tool) or _MATCHERS[self.args]

    def _needs_arguments(self, calls: Iterable[_Call]) -> bool:
        return any(self._matcher(c.name) is not _ignore for c in calls)

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace; ``None`` without a reference, or when the reference names tools
        only and arguments are to be compared."""
        if (failed := _run_failure(trace)) is not None:
            return failed
        reference = _reference(trace)
        if isinstance(reference, str):
            return MetricResult.missing(reference)
        if not reference.arguments and self._needs_arguments(reference.calls):
            return MetricResult.missing(
                'the reference trajectory names tools only: set args = "ignore" to compare '
                "the tool names"
            )
        chat = _chat(trace)
        mismatch = self._compare(chat, reference)

        def explain() -> dict[str, Any]:
            details: dict[str, Any] = {
                "mode": self.mode,
                "args": self.args,
                "overrides": sorted(self._overrides),
                "reference": reference.source,
                "reference_calls": [c.label() for c in reference.calls],
                "trace_calls": [c.label() for c in chat.calls],
            }
            if mismatch is not None:
                details["failed"] = {
                    "reference_step": mismatch.reference_step,
                    "trace_step": mismatch.trace_step,
                    "why": mismatch.reason,
                }
            return details

        if mismatch is None:
            return MetricResult.explained(1.0, explain)
        return MetricResult.explained(0.0, explain, mismatch.reason)

    def _compare(self, chat: _Chat, reference: _Reference) -> _Mismatch | None:
        calls = chat.calls
        if self.mode == "strict":
            if (messages := reference.messages()) is not None:
                return _strict_messages(chat.messages(), messages, self._matcher)
            return _strict_calls(calls, reference.calls, self._matcher)
        if self.mode in ("superset", "unordered"):
            missing = _covers(calls, reference.calls, self._matcher)
            if missing is not None:
                return _missing_from_trace(missing)
        if self.mode in ("subset", "unordered"):
            extra = _covers(reference.calls, calls, self._matcher)
            if extra is not None:
                return _not_in_reference(extra)
        return None


# --------------------------------------------------------------------------- tool_correctness


def _dict_score(expected: Mapping[str, Any], called: Mapping[str, Any]) -> float:
    """DeepEval's partial credit for two argument dicts: equal → 1; else each key of the union
    counts 1/n when both have it with equal values (nested dicts recursively)."""
    if expected == called:
        return 1.0
    union = set(expected) | set(called)
    score = 0.0
    for key in sorted(set(expected) & set(called)):
        if expected[key] == called[key]:
            score += 1 / len(union)
        elif isinstance(expected[key], dict) and isinstance(called[key], dict):
            score += _dict_score(expected[key], called[key]) / len(union)
    return score


@metric("tool_correctness", description="expected tools called (DeepEval's ToolCorrectness)")
class ToolCorrectness:
    """DeepEval's ``ToolCorrectnessMetric`` over the trace's tool calls and the reference calls.

    Each reference call is compared by name, and by the fields ``compare`` adds: ``input``
    (the arguments: equal, or partial credit per key over the union of keys) and ``output``
    (the tool's output, equal or nothing).

    - default: each reference call takes its best-scoring unused call of the same tool;
      ``value = Σ best scores / reference calls``;
    - ``ordering``: the weighted longest common subsequence of the reference calls and the
      calls made, divided by the number of reference calls;
    - ``exact``: 1.0 iff the calls made are the reference calls, in order, field for field;
    - ``strict``: any value below 1.0 becomes 0.0.

    No reference call: 1.0 iff no call was made. Calls are matched by position, so two
    identical calls answer two identical reference calls (DeepEval counts them once).

    Args:
        compare: fields compared besides the tool name: any of ``name``, ``input``, ``output``.
        ordering: score the order of the calls (DeepEval's ``should_consider_ordering``).
        exact: all or nothing, in order (``should_exact_match``).
        strict: below 1.0 is 0.0 (``strict_mode``).
    """

    name = "tool_correctness"

    def __init__(
        self,
        *,
        compare: Sequence[str] = ("name",),
        ordering: bool = False,
        exact: bool = False,
        strict: bool = False,
    ) -> None:
        if isinstance(compare, str) or not all(f in _COMPARE_FIELDS for f in compare):
            raise ValueError(
                f"compare must be a list of {', '.join(_COMPARE_FIELDS)}, not {compare!r}"
            )
        self.compare = frozenset(compare) | {"name"}
        self.ordering = ordering
        self.exact = exact
        self.strict = strict

    def _pair_score(self, expected: _Call, called: _Call) -> float:
        if expected.name != called.name:
            return 0.0
        score = 1.0
        if "input" in self.compare:
            score *= _dict_score(expected.arguments, called.arguments)
        if "output" in self.compare and expected.output != called.output:
            score = 0.0
        return score

    def _exact_score(self, expected: list[_Call], called: list[_Call]) -> float:
        if len(called) != len(expected):
            return 0.0
        for e, c in zip(expected, called, strict=True):
            if e.name != c.name:
                return 0.0
            if "input" in self.compare and e.arguments != c.arguments:
                return 0.0
            if "output" in self.compare and e.output != c.output:
                return 0.0
        return 1.0

    def _best_match_score(
        self, expected: list[_Call], called: list[_Call]
    ) -> tuple[float, list[int | None]]:
        total = 0.0
        used: set[int] = set()
        pairs: list[int | None] = []
        for e in expected:
            best, best_j = 0.0, None
            for j, c in enumerate(called):
                if j in used:
                    continue
                score = self._pair_score(e, c)
                if score > best:
                    best, best_j = score, j
            if best_j is not None:
                total += best
                used.add(best_j)
            pairs.append(best_j)
        return total, pairs

    def _weighted_lcs(self, expected: list[_Call], called: list[_Call]) -> tuple[float, list[int]]:
        """DeepEval's weighted LCS: the dynamic programme and its backtrack, step for step."""
        m, n = len(expected), len(called)
        dp = [[0.0] * (n + 1) for _ in range(m + 1)]
        for i in range(1, m + 1):
            for j in range(1, n + 1):
                score = self._pair_score(expected[i - 1], called[j - 1])
                if expected[i - 1].name != called[j - 1].name:
                    dp[i][j] = max(dp[i - 1][j], dp[i][j - 1])
                    continue
                diagonal = dp[i - 1][j - 1] + score if score > 0 else 0
                dp[i][j] = max(dp[i - 1][j], dp[i][j - 1], diagonal)
        i, j, total = m, n, 0.0
        matched: list[int] = []
        while i > 0 and j > 0:
            if dp[i][j] == dp[i - 1][j]:
                i -= 1
            elif dp[i][j] == dp[i][j - 1]:
                j -= 1
            else:
                matched.append(i - 1)
                total += dp[i][j] - dp[i - 1][j - 1]
                i, j = i - 1, j - 1
        return total, matched[::-1]

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace; ``None`` without reference calls, or when the reference lacks the
        arguments or outputs that ``compare`` asks for."""
        if (failed := _run_failure(trace)) is not None:
            return failed
        reference = _reference(trace)
        if isinstance(reference, str):
            return MetricResult.missing(reference)
        if reference.calls and "input" in self.compare and not reference.arguments:
            return MetricResult.missing(
                "the reference trajectory names tools only: it has no input to compare"
            )
        if reference.calls and "output" in self.compare and not reference.outputs:
            return MetricResult.missing(
                f"the reference ({reference.source}) has no tool outputs to compare"
            )
        chat = _chat(trace)
        if "output" in self.compare:
            reference.link_outputs()
            chat.link_outputs()
        expected = reference.calls
        called = chat.calls
        compared = sorted(self.compare)
        matched: list[int] | None = None
        pairs: list[int | None] | None = None
        if self.exact:
            score = 1.0 if not expected and not called else self._exact_score(expected, called)
        elif not expected:
            score = 1.0 if not called else 0.0
        elif self.ordering:
            score, matched = self._weighted_lcs(expected, called)
            score /= len(expected)
        else:
            score, pairs = self._best_match_score(expected, called)
            score /= len(expected)

        def explain() -> dict[str, Any]:
            details: dict[str, Any] = {
                "compare": compared,
                "expected": [c.label() for c in expected],
                "called": [c.label() for c in called],
            }
            if matched is not None:
                details["in_order"] = [expected[i].label() for i in matched]
            elif pairs is not None:
                details["unmatched"] = [
                    e.label() for e, p in zip(expected, pairs, strict=True) if p is None
                ]
            details["score"] = score
            return details

        if self.strict and score < 1.0:
            return MetricResult.explained(0.0, explain, "strict: below 1.0")
        return MetricResult.explained(score, explain)


# --------------------------------------------------------------------------- tool_call_accuracy


def _argument_score(predicted: Mapping[str, Any], reference: Mapping[str, Any]) -> float:
    """Ragas' argument accuracy: the share of the reference's arguments given with the same
    value, compared as ``str(value)`` (Ragas' ExactMatch)."""
    if not reference and not predicted:
        return 1.0
    if not reference:
        return 0.0
    hits = 0
    for key, value in reference.items():
        if key in predicted and str(predicted[key]) == str(value):
            hits += 1
    return hits / len(reference)


def _sort_key(call: _Called) -> tuple[str, ...]:
    """Ragas' order-free sort key: the name, then each argument name and ``str(value)``."""
    arguments = call.arguments
    key = [call.name]
    for arg in sorted(arguments):
        key.append(arg)
        key.append(str(arguments[arg]))
    return tuple(key)


def _arguments_key(call: Called) -> list[str]:
    """:func:`_sort_key` without the name (a list compares as a tuple does)."""
    arguments = call[1]
    key: list[str] = []
    for arg in sorted(arguments):
        key += (arg, str(arguments[arg]))
    return key


def _pair_scores(expected: Sequence[_Called], predicted: Sequence[_Called]) -> list[float]:
    """Each pair's argument score, the calls paired in order (0 for two tools)."""
    return [
        _argument_score(p.arguments, e.arguments) if p.name == e.name else 0.0
        for e, p in zip(expected, predicted, strict=False)
    ]


_name = itemgetter(0)  # a Called's name


def _unordered_pairs(
    predicted: Sequence[Called], expected: Sequence[Called]
) -> tuple[Iterable[tuple[Called, Called]], bool]:
    """The pairs Ragas scores in any order, and whether the calls may align (the same tools as
    many times each): both sides sorted by :func:`_sort_key` and paired by position.

    The key's first item is the name: sorted by name (a stable sort), only the calls of a tool
    called more than once need the whole key to be paired. Lists that never align (other
    lengths or tools) are not paired (the details sort them when read)."""
    count = len(expected)
    if len(predicted) != count:
        return (), False
    if count == 1:
        return ((expected[0], predicted[0]),), True
    wanted, made = sorted(expected, key=_name), sorted(predicted, key=_name)
    names = [call[0] for call in wanted]
    if names != [call[0] for call in made]:
        return (), False
    start = 0
    while start < count:  # each tool's calls in turn
        name = names[start]
        end = start + 1
        while end < count and names[end] == name:
            end += 1
        if end - start > 1:  # the name is the same: the arguments order them
            wanted[start:end] = sorted(wanted[start:end], key=_arguments_key)
            made[start:end] = sorted(made[start:end], key=_arguments_key)
        start = end
    return zip(wanted, made, strict=True), True


def _accuracy(pairs: list[float], expected: int) -> float:
    """Ragas' argument accuracy of the pairs: their mean over the reference calls, times
    ``pairs / expected`` when fewer calls were made."""
    score = sum(pairs) / expected
    if len(pairs) < expected:
        score *= len(pairs) / expected
    return score


@metric(
    "tool_call_accuracy",
    description="tool calls and argument values match the reference (Ragas' ToolCallAccuracy)",
)
class ToolCallAccuracy:
    """Ragas' ``ToolCallAccuracy``: argument accuracy of the calls, times sequence alignment.

    The calls made and the reference calls are paired by position (``strict_order``) or after
    sorting both by name and arguments (order-free). They are *aligned* when the two name
    sequences are equal (as sorted lists, order-free); otherwise the value is 0. A pair of the
    same tool scores the share of the reference's arguments given with the same value
    (compared as text, ``str(value)``); ``value = Σ pair scores / reference calls``, times
    ``min(made, reference) / reference`` when fewer calls were made. No call expected and none
    made: 1.0; none made, or none expected: 0.0.

    Args:
        strict_order: pair the calls in the order they were made (False: in any order).
    """

    name = "tool_call_accuracy"

    def __init__(self, *, strict_order: bool = True) -> None:
        self.strict_order = strict_order

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace; ``None`` without reference calls or when the reference names
        tools only."""
        if trace.metadata and (failed := _run_failure(trace)) is not None:
            return failed
        task = trace.task
        expected = task.reference_calls()
        if expected is None:  # no reference steps: tool names, expected calls or nothing
            reference = _read_reference(task)
            if isinstance(reference, str):
                return MetricResult.missing(reference)
            if reference.calls and not reference.arguments:
                return MetricResult.missing(
                    "the reference trajectory names tools only: it has no arguments to compare"
                )
            expected = tuple(Called(call.name, call.arguments) for call in reference.calls)
        predicted = trace.calls_made()
        if not predicted:
            if expected:
                return MetricResult(0.0, None, "no tool call made")
            return MetricResult(1.0, None, "no call expected and none made")
        if not expected:
            return MetricResult(0.0, None, "the reference expects no tool call")
        strict_order = self.strict_order
        if strict_order:
            aligned = len(predicted) == len(expected)
            pairs: Iterable[tuple[Called, Called]] = zip(expected, predicted, strict=False)
        else:
            pairs, aligned = _unordered_pairs(predicted, expected)
        # aligned: the same tools in the same order (sorted by name first, order-free), so
        # that the value is the argument accuracy, summed as the pairs come (the pair's
        # score is _argument_score's, written out: this loop is the metric's whole work)
        total = 0.0
        if aligned:
            for (name, wanted), (called, given) in pairs:
                if called != name:
                    aligned = False
                    break
                if wanted:
                    hits = 0
                    for key, value in wanted.items():
                        if key in given:
                            made = given[key]
                            # two strings are their own text: compared without str()
                            if made.__class__ is str and value.__class__ is str:
                                hits += made == value
                            elif str(made) == str(value):
                                hits += 1
                    total += hits / len(wanted)
                elif not given:
                    total += 1.0
        explain = partial(_accuracy_details, expected, predicted, strict_order, aligned)
        if not aligned:
            names = list(map(_name, predicted))
            reference_names = list(map(_name, expected))
            if not strict_order:  # the names as Ragas' sort orders them: by name first
                names.sort()
                reference_names.sort()
            return MetricResult.explained(
                0.0,
                explain,
                f"tool sequence {names} does not align with the reference's {reference_names}",
            )
        return MetricResult.explained(total / len(expected), explain)


def _accuracy_details(
    expected: Sequence[_Called], predicted: Sequence[_Called], strict_order: bool, aligned: bool
) -> dict[str, Any]:
    """``tool_call_accuracy``'s details: each pair's score, the pairs as Ragas makes them."""
    if not strict_order:  # the details show the pairs as Ragas sorts them
        expected, predicted = sorted(expected, key=_sort_key), sorted(predicted, key=_sort_key)
    pairs = _pair_scores(expected, predicted)
    return {
        "strict_order": strict_order,
        "aligned": aligned,
        "pairs": [
            {"reference": _label(e), "made": _label(p), "score": s}
            for e, p, s in zip(expected, predicted, pairs, strict=False)
        ],
        "argument_score": _accuracy(pairs, len(expected)),
    }
