"""What a simulated conversation adds to a Trace: what its scenario expects and what happened.

A conversation between a simulated user and an agent (``agentgauge simulate``, or a tau2-bench
simulation imported with ``--format tau2``) is a multi-turn :class:`~agentgauge.model.Trace`:
the user's messages are ``message`` steps of the agent ``"user"``, the agent's replies ``llm``
steps, its tool calls and their results ``tool_call`` and ``tool_result`` steps. Two records
ride along, both JSON in ``metadata["simulation"]``:

- on the task, the scenario's :class:`Expectations`: the expected end state (as the changes it
  makes to the initial state, and as values or assertions at named paths), the expected
  actions, the information the agent must communicate, what the user does not know;
- on the trace, the :class:`Outcome`: how the conversation ended, the environment's state
  changes, the final values at the paths the expectations name, the policy violations the
  environment reported, and verdicts recorded by another tool (an imported file's).

A state is any JSON document; it is compared as the set of its leaves, each at a path such as
``orders.W1003.items[0].status`` (:func:`flatten_state`). Two leaves are equal when they are the
same JSON value: ``1`` equals ``1.0``, ``true`` does not equal ``1``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from agentgauge.model import JSON, ToolCall, Trace, Usage

__all__ = [
    "ABSENT",
    "REWARD_COMPONENTS",
    "STOP_SIGNALS",
    "Expectations",
    "ExpectedAction",
    "Outcome",
    "RecordedVerdicts",
    "StateAssertion",
    "StateChange",
    "Termination",
    "Violation",
    "change_differences",
    "difference_text",
    "end_state_problems",
    "expectations_of",
    "flatten_state",
    "observed_paths",
    "outcome_of",
    "same_json",
    "state_changes",
    "stop_signal",
]

SIMULATION_KEY = "simulation"

_R = TypeVar("_R", bound=BaseModel)

STOP_SIGNALS: dict[str, Literal["stop", "transfer", "out_of_scope"]] = {
    "###STOP###": "stop",
    "###TRANSFER###": "transfer",
    "###OUT-OF-SCOPE###": "out_of_scope",
}
"""The simulated user's end-of-conversation tokens (tau2-bench's) and the signal each gives."""

REWARD_COMPONENTS: tuple[str, ...] = ("end_state", "actions", "communicated", "nl_assertions")
"""The parts a conversation's reward can be the product of (tau2-bench's DB and
ENV_ASSERTION are ``end_state``; ACTION ``actions``; COMMUNICATE ``communicated``;
NL_ASSERTION ``nl_assertions``, only as recorded by tau2-bench's judge)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Termination(StrEnum):
    """How a conversation ended. Only ``user_stop`` and ``agent_stop`` are normal ends: any
    other ends the conversation with reward 0, as tau2-bench decides."""

    user_stop = "user_stop"
    agent_stop = "agent_stop"
    max_turns = "max_turns"
    too_many_errors = "too_many_errors"
    agent_error = "agent_error"
    user_error = "user_error"
    timeout = "timeout"
    infrastructure_error = "infrastructure_error"
    other = "other"


class StateChange(_Record):
    """One leaf of the state that differs between two states.

    ``before`` is absent (``added``) for a leaf the first state lacks, ``after`` is absent
    (``removed``) for a leaf the second state lacks.
    """

    path: str
    before: JsonValue = None
    after: JsonValue = None
    kind: Literal["changed", "added", "removed"] = "changed"


class _Absent:
    """The value of a path a state does not have."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()
"""Stands for a path that a state does not have (never equal to a JSON value)."""


class StateAssertion(_Record):
    """A check of the final state's value at ``path``.

    ``op``: ``eq``, ``ne``, ``gt``, ``ge``, ``lt``, ``le`` (numbers), ``in`` / ``not_in`` (the
    value is one of ``value``, a list), ``contains`` (the list or text at ``path`` holds
    ``value``), ``exists``, ``absent``.
    """

    path: str
    op: Literal["eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "contains", "exists", "absent"]
    value: JsonValue = None
    message: str | None = None

    def holds(self, actual: Any) -> bool:
        """Whether the assertion holds for the final value ``actual`` (:data:`ABSENT` when the
        state has no such path).

        Args:
            actual: the value at ``path``.
        """
        op = self.op
        if op == "exists":
            return actual is not ABSENT
        if op == "absent":
            return actual is ABSENT
        if actual is ABSENT:
            return op == "ne" or op == "not_in"
        if op == "eq":
            return same_json(actual, self.value)
        if op == "ne":
            return not same_json(actual, self.value)
        if op in ("in", "not_in"):
            options = self.value if isinstance(self.value, list) else [self.value]
            found = any(same_json(actual, option) for option in options)
            return found if op == "in" else not found
        if op == "contains":
            if isinstance(actual, str) and isinstance(self.value, str):
                return self.value in actual
            return isinstance(actual, list) and any(same_json(a, self.value) for a in actual)
        if not _number(actual) or not _number(self.value):
            return False
        a, b = float(actual), float(self.value)  # type: ignore[arg-type]
        return {"gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b}[op]

    def describe(self) -> str:
        """The assertion as one line (``orders.W1.status eq 'cancelled'``)."""
        if self.op in ("exists", "absent"):
            return f"{self.path} {self.op}"
        return f"{self.path} {self.op} {json.dumps(self.value)}"


class ExpectedAction(_Record):
    """A tool call the conversation should contain, compared as tau2-bench compares an action
    with a call: same name, and equal values of ``compare_args`` (when None: of the arguments
    the call has, each compared with the action's value of it)."""

    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    compare_args: list[str] | None = None
    requestor: Literal["assistant", "user"] = "assistant"

    def matches(self, call: ToolCall) -> bool:
        """Whether ``call`` performs this action.

        Args:
            call: a tool call of the conversation.
        """
        if call.name != self.name:
            return False
        keys = list(call.arguments) if self.compare_args is None else self.compare_args
        made = {k: call.arguments[k] for k in keys if k in call.arguments}
        wanted = {k: self.arguments[k] for k in keys if k in self.arguments}
        return same_json(made, wanted)

    def describe(self) -> str:
        """The action as a call: ``cancel_order(order_id='W1003')``."""
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in self.arguments.items())
        return f"{self.name}({args})"


class Expectations(_Record):
    """What a scenario expects of the conversation (``task.metadata["simulation"]``).

    Args:
        expected_changes: the changes the expected end state makes to the initial state
            (derived by replaying the expected actions on a fresh environment, as tau2-bench
            derives its expected database); the final state must make exactly these.
        expected_values: final values at named paths (a partial expected state).
        assertions: checks of the final state.
        actions: tool calls that must be made.
        communicate: texts that must appear in the agent's messages.
        nl_assertions: statements about the conversation that an LLM judge decided (only
            recorded verdicts of an imported file are read).
        reward_basis: the components the reward is the product of; None: every component the
            scenario defines.
        withheld: values the user does not know (it must not state them before the agent does).
        max_turns: the most user turns of the conversation.
    """

    expected_changes: list[StateChange] | None = None
    expected_values: dict[str, JsonValue] = Field(default_factory=dict)
    assertions: list[StateAssertion] = Field(default_factory=list)
    actions: list[ExpectedAction] = Field(default_factory=list)
    communicate: list[str] = Field(default_factory=list)
    nl_assertions: list[str] = Field(default_factory=list)
    reward_basis: list[Literal["end_state", "actions", "communicated", "nl_assertions"]] | None = (
        None
    )
    withheld: list[str] = Field(default_factory=list)
    max_turns: int | None = Field(default=None, ge=1)

    def defines(self, component: str) -> bool:
        """Whether the scenario states anything for a reward component.

        Args:
            component: one of :data:`REWARD_COMPONENTS`.
        """
        if component == "end_state":
            return bool(
                self.expected_changes is not None or self.expected_values or self.assertions
            )
        if component == "actions":
            return bool(self.actions)
        if component == "communicated":
            return bool(self.communicate)
        return bool(self.nl_assertions)

    def basis(self) -> list[str]:
        """The components the reward multiplies: ``reward_basis``, else those defined."""
        if self.reward_basis is not None:
            return list(self.reward_basis)
        return [c for c in REWARD_COMPONENTS if self.defines(c)]


class Violation(_Record):
    """A breach of the domain's policy that the environment noticed.

    Args:
        message: what was breached.
        tool: the tool call that breached it, when one did.
        turn: the user turn during which it happened (1-based).
    """

    message: str
    tool: str | None = None
    turn: int | None = None


class RecordedVerdicts(_Record):
    """Verdicts another tool recorded and agentgauge cannot recompute (tau2-bench's database
    hash comparison, its environment assertions, its LLM judge), and its reward.

    Args:
        source: the tool (``tau2-bench``).
        db_match: whether the final database equalled the expected one; None when unchecked.
        env_assertions: each environment assertion: its description and whether it held.
        nl_assertions: each natural-language assertion: the statement and the judge's verdict.
        reward: the reward the tool gave.
        reward_basis: the components the tool's reward multiplied.
    """

    source: str
    db_match: bool | None = None
    env_assertions: list[dict[str, JsonValue]] = Field(default_factory=list)
    nl_assertions: list[dict[str, JsonValue]] = Field(default_factory=list)
    reward: float | None = None
    reward_basis: list[str] | None = None


class Outcome(_Record):
    """What happened in a conversation (``trace.metadata["simulation"]``).

    Args:
        trial: the trial number (0-based) of the scenario.
        termination: how the conversation ended.
        user_signal: the user's stop signal: ``stop``, ``transfer`` or ``out_of_scope``.
        error: what failed, when the agent, the user or the infrastructure did.
        changes: the environment's state changes from the initial to the final state; None
            when the state was not observed (an imported file).
        observed: the final values at the paths the expectations name (a path the final state
            lacks is left out).
        goal_turn: the user turn (1-based) after which the state first matched the expected
            end state; None when it never did or none is expected.
        user_turns: the user's messages sent.
        violations: the policy breaches the environment reported; None when the environment
            reports none.
        tool_errors: tool calls that failed.
        recorded: verdicts recorded by another tool.
        user: who played the user (``kind``: scripted or llm, and ``model``).
        user_usage: the user simulator's own tokens and cost (not the agent's).
    """

    trial: int | None = None
    termination: Termination
    user_signal: Literal["stop", "transfer", "out_of_scope"] | None = None
    error: str | None = None
    changes: list[StateChange] | None = None
    observed: dict[str, JsonValue] = Field(default_factory=dict)
    goal_turn: int | None = None
    user_turns: int = 0
    violations: list[Violation] | None = None
    tool_errors: int = 0
    recorded: RecordedVerdicts | None = None
    user: dict[str, JsonValue] = Field(default_factory=dict)
    user_usage: Usage | None = None

    @property
    def ended_normally(self) -> bool:
        """Whether the user or the agent ended the conversation (tau2-bench scores only such
        conversations; any other end is reward 0)."""
        return self.termination in (Termination.user_stop, Termination.agent_stop)


def expectations_of(trace: Trace) -> Expectations | None:
    """The scenario's expectations a trace's task carries, None for a trace of another kind.

    Args:
        trace: the trace.

    Raises:
        ValueError: when the record is there but malformed (naming the field).
    """
    return _record(trace.task.metadata, Expectations, "task.metadata.simulation")


def outcome_of(trace: Trace) -> Outcome | None:
    """What happened in a conversation, None for a trace of another kind.

    Args:
        trace: the trace.

    Raises:
        ValueError: when the record is there but malformed (naming the field).
    """
    return _record(trace.metadata, Outcome, "metadata.simulation")


def _record(metadata: Mapping[str, JSON], model: type[_R], where: str) -> _R | None:
    raw = metadata.get(SIMULATION_KEY)
    if raw is None:
        return None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}.{field}: {first['msg']}") from None


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal: numbers by value (``1 == 1.0``), booleans only to
    booleans, containers element by element.

    Args:
        a: a JSON value.
        b: another.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
    )


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")


def _key_path(prefix: str, key: str) -> str:
    part = key if _PLAIN_KEY.match(key) else f"[{json.dumps(key)}]"
    if not prefix:
        return part
    return f"{prefix}{part}" if part.startswith("[") else f"{prefix}.{part}"


def flatten_state(state: JSON) -> dict[str, JSON]:
    """The leaves of a JSON state, each under its path: object keys joined by ``.`` (a key
    that is not letters, digits, ``_`` or ``-`` is written ``["key"]``), list items as
    ``[i]``. An empty object or list is a leaf; the root scalar's path is ``""``.

    Args:
        state: the state.
    """
    leaves: dict[str, JSON] = {}

    def walk(value: JSON, path: str) -> None:
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(item, _key_path(path, str(key)))
        elif isinstance(value, list) and value:
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
        else:
            leaves[path] = value

    walk(state, "")
    return leaves


def state_changes(before: JSON, after: JSON) -> list[StateChange]:
    """The leaves that differ between two states, in path order.

    Args:
        before: the first state.
        after: the second.
    """
    old, new = flatten_state(before), flatten_state(after)
    changes = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            changes.append(StateChange(path=path, before=old[path], kind="removed"))
        elif path not in old:
            changes.append(StateChange(path=path, after=new[path], kind="added"))
        elif not same_json(old[path], new[path]):
            changes.append(StateChange(path=path, before=old[path], after=new[path]))
    return changes


def _final(change: StateChange | None, initial: Any) -> Any:
    if change is None:
        return initial
    return ABSENT if change.kind == "removed" else change.after


def _difference(path: str, expected: Any, actual: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": path,
        "expected": None if expected is ABSENT else expected,
        "actual": None if actual is ABSENT else actual,
    }
    if expected is ABSENT:
        entry["note"] = "not in the expected state"
    elif actual is ABSENT:
        entry["note"] = "not in the final state"
    return entry


def change_differences(
    expected: list[StateChange], actual: list[StateChange]
) -> list[dict[str, Any]]:
    """The fields whose final value differs between two change sets made to the same initial
    state (the expected one and the one made), each as ``{path, expected, actual}`` (with a
    ``note`` when the field is absent on one side).

    Args:
        expected: the expected changes.
        actual: the changes made.
    """
    wanted = {c.path: c for c in expected}
    made = {c.path: c for c in actual}
    out = []
    for path in sorted(wanted.keys() | made.keys()):
        w, m = wanted.get(path), made.get(path)
        # a path that only one side changed kept its initial value on the other side
        either = m if m is not None else w
        assert either is not None
        initial = ABSENT if either.kind == "added" else either.before
        exp, act = _final(w, initial), _final(m, initial)
        if exp is ABSENT and act is ABSENT:
            continue
        if exp is ABSENT or act is ABSENT or not same_json(exp, act):
            out.append(_difference(path, exp, act))
    return out


def end_state_problems(
    expectations: Expectations, changes: list[StateChange], observed: Mapping[str, JSON]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Where a final state misses what a scenario expects: the differing fields (against the
    expected changes, then the expected values) and the assertions that do not hold.

    Args:
        expectations: what the scenario expects.
        changes: the state changes made (ignored when no changes are expected).
        observed: the final values at the paths the expectations name.
    """
    differences = []
    if expectations.expected_changes is not None:
        differences = change_differences(expectations.expected_changes, changes)
    for path, value in expectations.expected_values.items():
        actual = observed.get(path, ABSENT)
        if actual is ABSENT or not same_json(actual, value):
            differences.append(_difference(path, value, actual))
    failed = []
    for assertion in expectations.assertions:
        actual = observed.get(assertion.path, ABSENT)
        if not assertion.holds(actual):
            entry: dict[str, Any] = {
                "assertion": assertion.describe(),
                "actual": None if actual is ABSENT else actual,
            }
            if actual is ABSENT:
                entry["note"] = "not in the final state"
            if assertion.message:
                entry["message"] = assertion.message
            failed.append(entry)
    return differences, failed


def difference_text(difference: Mapping[str, Any]) -> str:
    """One differing field in words: ``orders.W1.status is 'pending', expected 'cancelled'``.

    Args:
        difference: an entry of :func:`change_differences`.
    """
    path, note = difference["path"], difference.get("note")
    if note == "not in the expected state":
        return f"{path} is {difference['actual']!r}, expected absent"
    if note == "not in the final state":
        return f"{path} is absent, expected {difference['expected']!r}"
    return f"{path} is {difference['actual']!r}, expected {difference['expected']!r}"


def observed_paths(expectations: Expectations) -> set[str]:
    """The paths whose final values the expectations read (expected values, assertions).

    Args:
        expectations: what the scenario expects.
    """
    return set(expectations.expected_values) | {a.path for a in expectations.assertions}


def stop_signal(text: str) -> Literal["stop", "transfer", "out_of_scope"] | None:
    """The stop signal a user message gives (:data:`STOP_SIGNALS`), None for none.

    Args:
        text: the message.
    """
    for token, signal in STOP_SIGNALS.items():
        if token in text:
            return signal
    return None
