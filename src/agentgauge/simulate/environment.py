"""The stateful tool environment a simulated conversation runs in.

An environment is any object with:

- ``policy`` (str): the domain's rules, given to the agent as its policy;
- ``tools()``: the functions the agent may call, acting on this environment's state (bound
  methods or ``@tool`` functions with type-hinted parameters: their JSON Schemas are built from
  the hints, and a model's arguments are validated against them, never evaluated);
- ``reset(state)``: start from ``state`` (JSON), or from the domain's default when None;
- ``state()``: the current state as JSON (compared leaf by leaf at the end of a conversation:
  it must follow from the calls made, so ids a tool creates are counted, never random);
- optionally ``violations()``: the breaches of the policy noticed so far, each a string or a
  ``{"message", "tool"}`` object (the ``policy_compliance`` metric reads them).

``--env MODULE:FACTORY`` names a class or a function that makes one; every conversation gets
its own (so concurrent conversations never share a state), and so does the replay of each
scenario's expected actions that gives its expected end state.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from agentgauge.agents.protocol import Tool, import_reference, tool
from agentgauge.conversation import ExpectedAction, Violation
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import error_message
from agentgauge.model import JSON

__all__ = [
    "Environment",
    "EnvironmentFactory",
    "SimulationError",
    "environment_tools",
    "load_environment",
    "replay",
    "violations_of",
]


class SimulationError(AgentgaugeError, ValueError):
    """A simulation that cannot be set up or go on (an environment, scenario or option that
    cannot be used)."""


@runtime_checkable
class Environment(Protocol):
    """A stateful tool environment (see the module docstring)."""

    policy: str

    def tools(self) -> Sequence[Callable[..., Any]]: ...

    def reset(self, state: JSON | None) -> None: ...

    def state(self) -> JSON: ...


EnvironmentFactory = Callable[[], Environment]
"""Makes a fresh environment."""

_REQUIRED = ("policy", "tools", "reset", "state")


def _check(env: Any, ref: str) -> Environment:
    missing = [name for name in _REQUIRED if not hasattr(env, name)]
    if missing:
        raise SimulationError(
            f"--env {ref!r}: the environment has no {', '.join(missing)} (an environment has "
            "policy, tools(), reset(state) and state())"
        )
    if not isinstance(env.policy, str):
        raise SimulationError(f"--env {ref!r}: policy must be a string")
    return env  # type: ignore[no-any-return]


def load_environment(ref: str) -> EnvironmentFactory:
    """The factory ``--env module:attribute`` names, checked by making one environment.

    Args:
        ref: ``package.module:Class`` or ``package.module:factory``.

    Raises:
        SimulationError: naming what is wrong.
    """
    obj = import_reference(ref, "--env", SimulationError)
    if not callable(obj) or (not inspect.isclass(obj) and hasattr(obj, "state")):
        raise SimulationError(
            f"--env {ref!r}: give the class or the function that makes the environment "
            "(each conversation gets its own)"
        )

    def make() -> Environment:
        try:
            env = obj()
        except TypeError as exc:
            raise SimulationError(
                f"--env {ref!r}: cannot be called without arguments: {exc}"
            ) from None
        return _check(env, ref)

    make()
    return make


def environment_tools(env: Environment) -> dict[str, Tool]:
    """The environment's tools by name, as recorded tools.

    Args:
        env: the environment.

    Raises:
        SimulationError: two tools with one name.
    """
    tools: dict[str, Tool] = {}
    for item in env.tools():
        wrapped = item if isinstance(item, Tool) else tool(item)
        if wrapped.name in tools:
            raise SimulationError(f"the environment has two tools named {wrapped.name!r}")
        tools[wrapped.name] = wrapped
    return tools


def replay(env: Environment, actions: Sequence[ExpectedAction]) -> None:
    """Apply actions to an environment by calling its tools (the expected end state of a
    scenario is its expected actions replayed on a fresh environment).

    Args:
        env: the environment, reset to the scenario's initial state.
        actions: the actions, in order.

    Raises:
        SimulationError: an action naming no tool, with arguments its tool refuses, or that
            fails; the message names the action's index.
    """
    tools = environment_tools(env)
    for i, action in enumerate(actions):
        chosen = tools.get(action.name)
        if chosen is None:
            raise SimulationError(
                f"expected_actions[{i}]: no tool {action.name!r}; tools: {', '.join(tools)}"
            )
        try:
            chosen.fn(**chosen.validate(action.arguments))
        except ValidationError as exc:
            raise SimulationError(
                f"expected_actions[{i}]: {action.describe()}: {error_message(exc.errors()[0])}"
            ) from None
        except Exception as exc:
            raise SimulationError(
                f"expected_actions[{i}]: {action.describe()} fails on the initial state: "
                f"{type(exc).__name__}: {exc}"
            ) from None


def violations_of(env: Environment) -> list[Violation] | None:
    """The policy breaches an environment reports, None when it reports none.

    Args:
        env: the environment.

    Raises:
        SimulationError: a report that is not a list of strings or ``{message, tool}`` objects.
    """
    report = getattr(env, "violations", None)
    if not callable(report):
        return None
    out = []
    for item in report():
        if isinstance(item, str):
            out.append(Violation(message=item))
        elif isinstance(item, Mapping) and isinstance(item.get("message"), str):
            name = item.get("tool")
            out.append(Violation(message=item["message"], tool=str(name) if name else None))
        else:
            raise SimulationError(
                f"violations(): {item!r} is neither a string nor a {{message, tool}} object"
            )
    return out
