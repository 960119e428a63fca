"""The record that flows through agentgauge: a Trace of what an agent did on a Task.

Everything that produces data produces Traces; everything that scores reads them. The
models are pydantic v2, JSON round-trips exactly, and unknown fields are rejected so that a
typo in a trace file is reported instead of silently ignored (free-form data goes in
``metadata``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

__all__ = [
    "JSON",
    "Called",
    "Difficulty",
    "ExpectedCall",
    "MessageType",
    "ReferenceStep",
    "Role",
    "Step",
    "StepKind",
    "Task",
    "ToolCall",
    "ToolSpec",
    "Trace",
    "Usage",
]

JSON = JsonValue
"""Any JSON value: dict, list, str, int, float, bool or None."""


_assignments = 0
"""How many times a field of a record was assigned: the calls that a trace or a task lists
once (:meth:`Trace.calls_made`, :meth:`Task.reference_calls`) are listed again after one."""


_Found = tuple[list["ToolCall"], list[tuple[int, Any]]]
"""Calls found in a list, and the position and item of each item that holds some."""


def _calls_listed(
    record: dict[str, Any], key: str, items: list[Any], find: Callable[[list[Any]], _Found | None]
) -> tuple[Called, ...] | None:
    """The calls of ``items`` (``find(items)``; None when it finds None), listed once in
    ``record`` under ``key`` and listed again after a change: the items are not the same in
    the same order (equal ones, and the very objects that hold calls: an equal step may hold
    other values, as ``1 == True``), or a field of any record was assigned."""
    listed = record.get(key)
    if listed is not None and listed[0] == _assignments and listed[1] == items:
        for position, item in listed[2]:
            if items[position] is not item:
                break
        else:
            return listed[3]  # type: ignore[no-any-return]
    found = find(items)
    if found is None:
        return None
    calls, given = found
    made = tuple([_called((call.name, call.arguments)) for call in calls])
    record[key] = (_assignments, list(items), given, made)
    return made


class _Record(BaseModel):
    # each record builds its validator on first use: a Trace's holds its parts' schemas, so
    # a command that validates only traces builds none of the parts' own
    model_config = ConfigDict(extra="forbid", validate_assignment=False, defer_build=True)

    def __setattr__(self, name: str, value: Any) -> None:
        global _assignments
        _assignments += 1
        super().__setattr__(name, value)


class Difficulty(StrEnum):
    easy = "easy"
    medium = "medium"
    hard = "hard"


class StepKind(StrEnum):
    llm = "llm"
    reasoning = "reasoning"
    tool_call = "tool_call"
    tool_result = "tool_result"
    message = "message"
    handoff = "handoff"
    error = "error"


class MessageType(StrEnum):
    coordination = "coordination"
    status_update = "status_update"
    handoff = "handoff"
    task_request = "task_request"
    result_delivery = "result_delivery"
    data_transfer = "data_transfer"


MOST_TOKENS = 10**15
"""The largest token count taken (a thousand times a year of a large provider's traffic): a
larger one is a corrupt value, which sums and means could not hold as numbers."""
MOST_COST_USD = 1e12
"""The largest cost taken, in US dollars."""


class Usage(_Record):
    """Token usage and cost of a step or a whole run.

    ``input_tokens`` include the ``cache_read_tokens`` (prompt tokens served from the
    provider's cache), as OpenAI and genai-prices count them. ``model`` names the model that
    served the tokens (``gpt-4o-mini``, ``anthropic:claude-sonnet-4-5``...), so that a cost can
    be computed when none is recorded.
    """

    input_tokens: int | None = Field(default=None, ge=0, le=MOST_TOKENS)
    output_tokens: int | None = Field(default=None, ge=0, le=MOST_TOKENS)
    cache_read_tokens: int | None = Field(default=None, ge=0, le=MOST_TOKENS)
    cost_usd: float | None = Field(default=None, ge=0, le=MOST_COST_USD, allow_inf_nan=False)
    model: str | None = None


class ToolCall(_Record):
    """One call of a tool: its name and its arguments (already decoded, never code)."""

    id: str | None = None
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class Called(NamedTuple):
    """A tool call as the comparisons read it: the tool's name and the call's arguments (the
    call's own dict: read it, never change it)."""

    name: str
    arguments: dict[str, JsonValue]


_called = partial(tuple.__new__, Called)  # Called(name, arguments), without a Python call


def _empty_object_schema() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class ToolSpec(_Record):
    """A tool offered to the model, in OpenAI function format.

    ``parameters`` is a JSON Schema object; BFCL's type names (``dict``, ``float``, ``tuple``,
    ``any``...) are accepted as they are and interpreted by the tool-calling checks.
    """

    name: str
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=_empty_object_schema)


class ExpectedCall(_Record):
    """A call the model should make: for each parameter, the list of acceptable values.

    An empty string ``""`` among the acceptable values means the parameter may be omitted
    (BFCL's convention).
    """

    name: str
    arguments: dict[str, list[JsonValue]] = Field(default_factory=dict)


Role = Literal["system", "user", "assistant", "tool"]
"""Who speaks in a chat message."""


class ReferenceStep(_Record):
    """One message of a reference trajectory: what the ideal run said or did at that point.

    An ``assistant`` step carries the tool calls it made (name and arguments); a ``tool`` step
    carries a tool's output in ``content`` and, in ``tool_call_id``, the id of the call it
    answers.
    """

    role: Role
    content: JsonValue = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class Task(_Record):
    """What the agent was asked to do, and what a good answer looks like.

    ``reference_trajectory`` is either the ordered steps of a reference run
    (:class:`ReferenceStep`) or, in its short form, the names of the tools a good run calls,
    in order.
    """

    id: str
    input: JsonValue = None
    description: str = ""
    expected_output: JsonValue = None
    references: list[str] = Field(default_factory=list)
    category: str | None = None
    difficulty: Difficulty | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    expected_calls: list[ExpectedCall] | None = None
    reference_trajectory: list[str] | list[ReferenceStep] | None = None
    optimal_tools: dict[str, str] | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def reference_calls(self) -> tuple[Called, ...] | None:
        """The tool calls of the reference steps, in order; None when the reference trajectory
        is not a list of reference steps (none, empty or tool names).

        Listed at the first call, and again after a change: another list, a step added, removed
        or replaced, a field of any record assigned. A step's list of calls changed in place is
        not seen: give the step a new list."""
        steps = self.reference_trajectory
        if not steps:
            return None
        return _calls_listed(self.__dict__, "_reference_calls", steps, _reference_calls_found)

    def _keep_reference_calls(self, found: _Found) -> None:
        """Lists the reference calls that a reader found as it made the reference steps (as
        :meth:`reference_calls` finds them), so that they are not looked for again."""
        steps = self.reference_trajectory
        assert steps, "a reference of steps"
        _calls_listed(self.__dict__, "_reference_calls", steps, lambda _: found)

    def reference_tool_names(self) -> list[str] | None:
        """The tool names of the reference trajectory, in call order; None without one."""
        reference = self.reference_trajectory
        if reference is None:
            return None
        names: list[str] = []
        for item in reference:
            if isinstance(item, str):
                names.append(item)
            else:
                names.extend(call.name for call in item.tool_calls)
        return names


class Step(_Record):
    """One thing the agent (or one of its agents) did.

    ``kind`` says what: an LLM call, a reasoning turn, a tool call or its result, a message
    between agents, a hand-off or an error. Tool results and the environment's replies are
    recorded but are not the agent's own words (see the behaviour metrics).
    """

    index: int = Field(ge=0)
    kind: StepKind
    id: str | None = None
    agent: str | None = None
    recipient: str | None = None
    message_type: MessageType | None = None
    content: str | None = None
    tool_call: ToolCall | None = None
    result: JsonValue = None
    error: str | None = None
    started_at: datetime | None = None
    duration_s: float | None = Field(default=None, ge=0)
    parent_id: str | None = None
    usage: Usage | None = None

    @model_validator(mode="after")
    def _tool_call_needs_call(self) -> Step:
        if self.kind is StepKind.tool_call and self.tool_call is None:
            raise ValueError("a step of kind 'tool_call' needs a 'tool_call'")
        return self


def _reference_calls_found(steps: list[ReferenceStep] | list[str]) -> _Found | None:
    calls: list[ToolCall] = []
    given: list[tuple[int, Any]] = []
    for position, step in enumerate(steps):
        if not isinstance(step, ReferenceStep):
            return None
        if step.tool_calls:
            calls += step.tool_calls
            given.append((position, step))
    return calls, given


def _calls_found(steps: list[Step]) -> _Found:
    calls: list[ToolCall] = []
    given: list[tuple[int, Any]] = []
    for position, step in enumerate(steps):
        if (call := step.tool_call) is not None:
            calls.append(call)
            given.append((position, step))
    return calls, given


class Trace(_Record):
    """What an agent did on one task: its steps, its final output and its cost."""

    id: str
    task: Task
    output: JsonValue = None
    steps: list[Step] = Field(default_factory=list)
    agent: str | None = None
    params: dict[str, JsonValue] = Field(default_factory=dict)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_s: float | None = Field(default=None, ge=0)
    usage: Usage | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the agent made, in order."""
        return [s.tool_call for s in self.steps if s.tool_call is not None]

    def calls_made(self) -> tuple[Called, ...]:
        """The tool calls the agent made, in order (:attr:`tool_calls`' names and arguments),
        listed at the first call and again after a change: another list of steps, a step
        added, removed or replaced, a field of any record assigned."""
        made = _calls_listed(self.__dict__, "_calls_made", self.steps, _calls_found)
        assert made is not None  # every step gives its calls
        return made

    def _keep_calls_made(self, found: _Found) -> None:
        """Lists the calls that a reader found as it made the steps (as :meth:`calls_made`
        finds them), so that they are not looked for again."""
        _calls_listed(self.__dict__, "_calls_made", self.steps, lambda _: found)

    def wall_time_s(self) -> float | None:
        """The run's duration: ``duration_s``, else ``ended_at - started_at``, else the sum of
        step durations when every step has one; None when none of these is known. Timestamps
        that contradict each other (an end before the start, one with a time zone and one
        without) are not a duration."""
        if self.duration_s is not None:
            return self.duration_s
        if self.started_at is not None and self.ended_at is not None:
            if (self.started_at.tzinfo is None) != (self.ended_at.tzinfo is None):
                return None
            elapsed = (self.ended_at - self.started_at).total_seconds()
            if elapsed >= 0:
                return elapsed
        durations = [s.duration_s for s in self.steps]
        if durations and all(d is not None for d in durations):
            return float(sum(d for d in durations if d is not None))
        return None


def trace_json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of the native JSONL format."""
    return Trace.model_json_schema()
