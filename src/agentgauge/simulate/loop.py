"""One conversation: the simulated user and the agent take turns over a fresh environment.

The agent opens with tau2-bench's greeting (:data:`GREETING`); then, turn by turn, the user
answers (:mod:`agentgauge.simulate.users`) and the agent takes a turn: one run of the agent
protocol on a task whose input is the conversation so far (``{"messages": [...]}``, OpenAI chat
messages: the user's messages, the agent's own messages with their tool calls, the tool
results), whose description is the domain's policy and whose tools are the environment's. The
environment's tools are in ``recorder.tools`` and act on this conversation's state; the agent's
reply is its run's output (text). The conversation ends when the user sends a stop signal, when
the agent's reply holds ``###STOP###``, when the user has sent ``max_turns`` messages, or when
the agent or the user fails.

Everything is recorded on one :class:`~agentgauge.agents.protocol.Recorder`: the user's
messages are ``message`` steps of the agent ``"user"``, the agent's steps are as it records them
(a reply it did not record itself is added as a ``message`` step), and the trace carries the
scenario's expectations (on its task) and the :class:`~agentgauge.conversation.Outcome` (its
metadata): the state changes, the final values the expectations read, the turn after which the
expected end state was first reached, the environment's policy violations.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter
from typing import Any, Literal

from agentgauge.agents.protocol import Recorder, agent_name, recording
from agentgauge.conversation import (
    Expectations,
    Outcome,
    Termination,
    Violation,
    end_state_problems,
    flatten_state,
    observed_paths,
    state_changes,
    stop_signal,
)
from agentgauge.model import JSON, Step, StepKind, Task, Trace
from agentgauge.simulate.environment import (
    Environment,
    EnvironmentFactory,
    environment_tools,
    violations_of,
)
from agentgauge.simulate.scenario import Scenario
from agentgauge.simulate.users import UserSimulator, Utterance
from agentgauge.usage import sum_usage

__all__ = ["AGENT_STOP", "GREETING", "Cast", "Trial", "agent_messages", "converse", "transcript"]

GREETING = "Hi! How can I help you today?"
"""The agent's first message (tau2-bench's), sent without asking the agent."""

AGENT_STOP = "###STOP###"
"""A reply of the agent that holds this ends the conversation."""

USER = "user"


@dataclass(frozen=True)
class Trial:
    """One conversation to have: a scenario, its trial number and seed.

    Args:
        scenario: the scenario.
        trial: the trial number (0-based).
        seed: the trial's seed (the agent's and the user model's requests carry it).
        task: the scenario's task (with its expectations).
        expectations: what the scenario expects.
    """

    scenario: Scenario
    trial: int
    seed: int
    task: Task
    expectations: Expectations

    @property
    def trace_id(self) -> str:
        """``<scenario id>#t<trial>``."""
        return f"{self.scenario.id}#t{self.trial}"


@dataclass(frozen=True)
class Cast:
    """Who takes part: the agent (with its parameters), the user and the environment.

    Args:
        agent: an agent of the agent protocol.
        params: its parameters.
        user: the simulated user.
        make_env: makes a fresh environment.
    """

    agent: Any
    params: Mapping[str, JSON]
    user: UserSimulator
    make_env: EnvironmentFactory


def agent_messages(steps: list[Step]) -> list[dict[str, Any]]:
    """The conversation so far as the agent sees it: OpenAI chat messages (the user's, the
    agent's with its tool calls, the tool results).

    Args:
        steps: the conversation's steps.
    """
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None  # the assistant message that calls belong to
    for step in steps:
        if step.kind is StepKind.message and step.agent == USER:
            out.append({"role": "user", "content": step.content or ""})
            current = None
        elif step.kind in (StepKind.llm, StepKind.message):
            current = {"role": "assistant", "content": step.content}
            out.append(current)
        elif step.kind is StepKind.tool_call and step.tool_call is not None:
            if current is None:
                current = {"role": "assistant", "content": None}
                out.append(current)
            call = step.tool_call
            current.setdefault("tool_calls", []).append(
                {
                    "id": call.id or step.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
            )
        elif step.kind is StepKind.tool_result:
            content = f"error: {step.error}" if step.error else json.dumps(step.result)
            out.append({"role": "tool", "tool_call_id": step.parent_id, "content": content})
            current = None
    return [m for m in out if m.get("content") is not None or m.get("tool_calls")]


def transcript(steps: list[Step]) -> list[Utterance]:
    """The conversation so far as the user sees it: the messages with text, no tool calls.

    Args:
        steps: the conversation's steps.
    """
    out = []
    for step in steps:
        if not step.content or step.kind not in (StepKind.llm, StepKind.message):
            continue
        out.append(Utterance("user" if step.agent == USER else "agent", step.content))
    return out


def _error_text(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({Path(frame.filename).name}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


async def _agent_turn(agent: Any, task: Task, params: Mapping[str, JSON], rec: Recorder) -> Any:
    if inspect.iscoroutinefunction(agent.run):
        return await agent.run(task, params, rec)
    output = await asyncio.to_thread(agent.run, task, params, rec)  # copies the context
    if inspect.isawaitable(output):
        output = await output
    return output


def _reply_text(output: Any) -> str | None:
    if output is None:
        return None
    text = output if isinstance(output, str) else json.dumps(output)
    return text if text.strip() else None


@dataclass
class _State:
    """What the loop keeps while the conversation runs."""

    termination: Termination | None = None
    signal: Literal["stop", "transfer", "out_of_scope"] | None = None
    error: str | None = None
    goal_turn: int | None = None
    violations: list[Violation] | None = None
    output: str | None = None


class _Watch:
    """Reads the environment after each turn: the goal reached, the new violations."""

    def __init__(self, env: Environment, expectations: Expectations) -> None:
        self.env = env
        self.expectations = expectations
        self.initial = env.state()
        self.paths = observed_paths(expectations)
        self.checks_goal = expectations.defines("end_state")

    def final(self) -> tuple[list[Any], dict[str, JSON]]:
        """The state changes so far and the values at the observed paths."""
        state = self.env.state()
        changes = state_changes(self.initial, state)
        flat = flatten_state(state) if self.paths else {}
        return changes, {p: flat[p] for p in self.paths if p in flat}

    def after_turn(self, turn: int, state: _State) -> None:
        if self.checks_goal and state.goal_turn is None:
            changes, observed = self.final()
            differences, failed = end_state_problems(self.expectations, changes, observed)
            if not differences and not failed:
                state.goal_turn = turn
        reported = violations_of(self.env)
        if reported is not None:
            known = state.violations or []
            fresh = [v.model_copy(update={"turn": turn}) for v in reported[len(known) :]]
            state.violations = known + fresh


async def converse(trial: Trial, cast: Cast) -> Trace:
    """Have one conversation and return its trace (see the module docstring).

    An agent or a user that fails ends the conversation (``agent_error`` / ``user_error``,
    with the error in the outcome); an environment that fails raises.

    Args:
        trial: the conversation to have.
        cast: the agent, the user and the environment's factory.
    """
    scenario, agent = trial.scenario, cast.agent
    env = cast.make_env()
    env.reset(scenario.initial_state)
    tools = environment_tools(env)
    simulated = getattr(agent, "simulated_time", False) is True
    name = agent_name(agent)
    rec = Recorder(seed=trial.seed, agent=name, timestamps=not simulated, tools=tools)
    watch = _Watch(env, trial.expectations)
    state = _State()
    started, t0 = datetime.now(UTC), perf_counter()
    session = cast.user.session(scenario, trial.seed)
    user_usage = []
    with recording(rec):
        rec.add(StepKind.message, content=GREETING, recipient=USER)
        watch.after_turn(0, state)
        try:
            turn = 0
            while state.termination is None:
                if turn >= scenario.max_turns:
                    state.termination = Termination.max_turns
                    break
                turn += 1
                try:
                    reply = await session.reply(transcript(rec.steps))
                except Exception as exc:  # UserError, or a user that crashed
                    state.termination, state.error = Termination.user_error, _error_text(exc)
                    break
                if reply.usage is not None:
                    user_usage.append(reply.usage)
                rec.add(
                    StepKind.message,
                    agent=USER,
                    recipient=name,
                    content=reply.text,
                    duration_s=reply.duration_s if not simulated else None,
                )
                signal = stop_signal(reply.text)
                if signal is not None:
                    state.termination, state.signal = Termination.user_stop, signal
                    break
                await _take_turn(trial, cast, rec, env, state)
                watch.after_turn(turn, state)
                if state.output is not None and AGENT_STOP in state.output:
                    state.termination = state.termination or Termination.agent_stop
        finally:
            await session.aclose()
    changes, observed = watch.final()
    outcome = Outcome(
        trial=trial.trial,
        termination=state.termination or Termination.other,
        user_signal=state.signal,
        error=state.error,
        changes=changes,
        observed=observed,
        goal_turn=state.goal_turn,
        user_turns=sum(1 for s in rec.steps if s.agent == USER),
        violations=state.violations,
        tool_errors=sum(1 for s in rec.steps if s.kind is StepKind.tool_result and s.error),
        user=cast.user.describe(),
        user_usage=sum_usage(user_usage),
    )
    return _trace(trial, cast, rec, outcome, state.output, started, t0, simulated)


async def _take_turn(
    trial: Trial, cast: Cast, rec: Recorder, env: Environment, state: _State
) -> None:
    """One turn of the agent: its run on the conversation so far; its reply recorded."""
    steps_before = len(rec.steps)
    # what the agent may know: never the user's instructions or the expectations
    task = Task(
        id=trial.task.id,
        input={"messages": agent_messages(rec.steps)},
        description=env.policy,
        tools=trial.task.tools,
        category=trial.task.category,
        difficulty=trial.task.difficulty,
    )
    try:
        output = await _agent_turn(cast.agent, task, cast.params, rec)
    except Exception as exc:
        message = _error_text(exc)
        rec.error(message)
        state.termination, state.error = Termination.agent_error, message
        return
    text = _reply_text(output)
    if text is None:
        rec.error("the agent gave no reply")
        state.termination, state.error = Termination.agent_error, "the agent gave no reply"
        return
    said = any(
        s.kind in (StepKind.llm, StepKind.message) and (s.content or "").strip() == text.strip()
        for s in rec.steps[steps_before:]
    )
    if not said:
        rec.add(StepKind.message, content=text, recipient=USER)
    state.output = text


def _trace(
    trial: Trial,
    cast: Cast,
    rec: Recorder,
    outcome: Outcome,
    output: str | None,
    started: datetime,
    t0: float,
    simulated: bool,
) -> Trace:
    steps = rec.steps
    metadata: dict[str, JSON] = dict(getattr(cast.agent, "trace_metadata", {}) or {})
    metadata["seed"] = trial.seed
    metadata["simulation"] = outcome.model_dump(mode="json", exclude_defaults=True)
    timing: dict[str, Any]
    if simulated:
        timing = {"duration_s": sum(s.duration_s or 0.0 for s in steps)}
    else:
        timing = {
            "started_at": started,
            "ended_at": datetime.now(UTC),
            "duration_s": perf_counter() - t0,
        }
    return Trace(
        id=trial.trace_id,
        task=trial.task,
        output=output,
        steps=steps,
        agent=agent_name(cast.agent),
        params=dict(cast.params),
        # the agent's spending only: the simulated user's is in the outcome
        usage=sum_usage(s.usage for s in steps if s.usage is not None and s.agent != USER),
        metadata=metadata,
        **timing,
    )
