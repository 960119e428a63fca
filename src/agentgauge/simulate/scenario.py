"""Scenarios: what the simulated user wants and knows, and what a good conversation leaves.

A scenario file is JSONL, one scenario a line (``docs/simulate.md`` has the full format)::

    {"id": "cancel-1", "difficulty": "easy",
     "instructions": "Cancel your order W1003: you no longer need it.",
     "persona": "Brief and polite.",
     "known_info": {"email": "ada@example.com", "order": "W1003"},
     "expected_actions": [{"name": "cancel_order",
                           "arguments": {"order_id": "W1003", "reason": "no longer needed"}}],
     "communicate": ["49.50"],
     "max_turns": 10}

The expected end state is the scenario's ``expected_actions`` replayed on a fresh environment
(tau2-bench's rule: any path to the same end state passes; an empty list expects no change),
and/or ``expected_state`` (values the final state must hold, as a nested partial state), and/or
``assertions`` over it. A bad line is reported with its number and field and the others run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from agentgauge.conversation import (
    Expectations,
    ExpectedAction,
    StateAssertion,
    StateChange,
    flatten_state,
)
from agentgauge.io.jsonl import ReadError, iter_raw_lines, validate_line
from agentgauge.model import Difficulty, Task, ToolSpec

__all__ = ["Scenario", "read_scenarios", "scenario_task"]


class Scenario(BaseModel):
    """One scenario (see the module docstring; unknown fields are refused).

    Args:
        id: the scenario's id (a trial's trace is ``<id>#t<trial>``).
        instructions: the user's situation and what it wants, told to the simulated user.
        persona: how the user speaks and behaves.
        known_info: what the user knows (text, or named facts).
        unknown_info: what the user does not know, in words (told to the simulated user).
        withheld: values the user does not know (the simulator checks flag them when said).
        goal: the scenario's goal in one line (the task's description; default the
            instructions).
        initial_state: the environment's state at the start; None: the domain's default.
        expected_actions: the calls that solve the scenario, replayed to give the expected
            end state; ``[]`` expects no change; None sets no end state by replay.
        expected_state: values the final state must hold (a nested partial state).
        assertions: checks of the final state.
        communicate: texts the agent must say.
        reward_basis: the components the reward multiplies; default: those defined.
        max_turns: the most user messages.
        user_turns: the scripted user's messages, in order (``--user scripted``); after the
            last one the user ends the conversation.
        difficulty: easy, medium or hard.
        category: free-form grouping.
        metadata: anything else, kept with the task.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    instructions: str = Field(min_length=1)
    persona: str | None = None
    known_info: str | dict[str, JsonValue] | None = None
    unknown_info: str | None = None
    withheld: list[str] = Field(default_factory=list)
    goal: str | None = None
    initial_state: JsonValue = None
    expected_actions: list[ExpectedAction] | None = None
    expected_state: dict[str, JsonValue] | None = None
    assertions: list[StateAssertion] = Field(default_factory=list)
    communicate: list[str] = Field(default_factory=list)
    reward_basis: list[Literal["end_state", "actions", "communicated"]] | None = None
    max_turns: int = Field(default=20, ge=1)
    user_turns: list[str] | None = None
    difficulty: Difficulty | None = None
    category: str | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _turns_fit(self) -> Scenario:
        if self.user_turns is not None and not self.user_turns:
            raise ValueError("user_turns: give at least one message, or leave the field out")
        return self

    def expectations(self, expected_changes: Sequence[StateChange] | None) -> Expectations:
        """What the scenario expects, given the changes its expected actions make.

        Args:
            expected_changes: the expected actions' changes to the initial state (None when
                the scenario has no expected actions).
        """
        values = flatten_state(self.expected_state) if self.expected_state else {}
        return Expectations(
            expected_changes=None if expected_changes is None else list(expected_changes),
            expected_values=values,
            assertions=self.assertions,
            actions=self.expected_actions or [],
            communicate=self.communicate,
            reward_basis=list(self.reward_basis) if self.reward_basis is not None else None,
            withheld=self.withheld,
            max_turns=self.max_turns,
        )

    def user_view(self) -> dict[str, Any]:
        """What the simulated user is told: instructions, persona, known and unknown info."""
        view: dict[str, Any] = {"instructions": self.instructions}
        for key in ("persona", "known_info", "unknown_info"):
            value = getattr(self, key)
            if value:
                view[key] = value
        return view


def scenario_task(
    scenario: Scenario, tools: Sequence[ToolSpec], expectations: Expectations
) -> Task:
    """The task of a scenario's conversations: the user's view as input, the goal as
    description, the environment's tools, and the expectations in its metadata.

    Args:
        scenario: the scenario.
        tools: the environment's tools.
        expectations: what the scenario expects (:meth:`Scenario.expectations`).
    """
    metadata: dict[str, Any] = dict(scenario.metadata)
    metadata["simulation"] = expectations.model_dump(mode="json", exclude_defaults=True)
    return Task(
        id=scenario.id,
        input=scenario.user_view(),
        description=scenario.goal or scenario.instructions,
        category=scenario.category,
        difficulty=scenario.difficulty,
        tools=list(tools),
        metadata=metadata,
    )


def read_scenarios(path: str | Path) -> Iterator[tuple[int, Scenario] | ReadError]:
    """Stream the scenarios of a JSONL file, each with its line number; a bad line comes out
    as a ReadError naming its line and field, and reading goes on. A repeated id is an error of
    its line.

    Args:
        path: the file (``.gz`` accepted).
    """
    seen: dict[str, int] = {}
    for raw in iter_raw_lines(path):
        item = validate_line(Scenario, raw)
        if isinstance(item, ReadError):
            yield item
            continue
        assert not isinstance(raw, ReadError)
        if item.id in seen:
            yield ReadError(
                str(path),
                raw.line,
                "id",
                f"duplicate scenario id {item.id!r} (line {seen[item.id]})",
            )
            continue
        seen[item.id] = raw.line
        yield raw.line, item
