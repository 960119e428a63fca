"""tau2-bench's simulation results: each simulation a conversation Trace, scored here as tau2-bench
scores it.

A tau2-bench run saves its results as one JSON document (``Results.save``: ``info``, ``tasks``,
``simulations``) or, for large runs, as a ``results.json`` with the simulations in a
``simulations/`` folder beside it; both are read. Each simulation becomes a multi-turn trace
(:mod:`agentgauge.conversation`), ``<task id>#t<trial>``:

- messages: the assistant's a ``llm`` step of the agent (its tool calls ``tool_call`` steps),
  the user's a ``message`` step of the agent ``"user"`` (the user's own tool calls are steps of
  the agent ``"user"`` too), a tool's answer a ``tool_result`` step (its ``error`` flag kept);
  each message's usage and cost on its step, the user's apart from the agent's;
- the task: the user scenario (persona and instructions, a structured one written as tau2-bench
  writes it) and the evaluation criteria: the actions (tau2-bench's ``compare_args`` kept), the
  information to communicate, the natural-language assertions, the reward basis (``DB`` and
  ``ENV_ASSERTION`` are ``end_state``, ``ACTION`` ``actions``, ``COMMUNICATE`` ``communicated``,
  ``NL_ASSERTION`` ``nl_assertions``; a task without criteria has an empty basis: reward 1, as
  in tau2-bench);
- the outcome: how it ended, and what tau2-bench recorded and agentgauge cannot recompute
  without tau2-bench's environment — its database check, environment assertions and LLM
  judge's verdicts — with its reward.

The ``simulation`` suite then recomputes the reward: actions and communication from the
messages, the end state from the recorded database check. A simulation that ended by an
infrastructure error is not a trial (tau2-bench leaves it out of its metrics): it is reported,
not imported.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from agentgauge._safe import READ_ERRORS, describe, loads, unexpected
from agentgauge.conversation import (
    Expectations,
    ExpectedAction,
    Outcome,
    RecordedVerdicts,
    Termination,
    stop_signal,
)
from agentgauge.io.importers import importer
from agentgauge.io.jsonl import ReadError, open_text, storable_trace, surrogate_warning
from agentgauge.model import JSON, Step, StepKind, Task, ToolCall, Trace, Usage
from agentgauge.usage import sum_usage

__all__ = ["read_tau2"]

SOURCE = "tau2-bench"
_BASIS = {
    "DB": "end_state",
    "ENV_ASSERTION": "end_state",
    "ACTION": "actions",
    "COMMUNICATE": "communicated",
    "NL_ASSERTION": "nl_assertions",
}
_DEFAULT_BASIS = ["DB", "COMMUNICATE"]  # tau2-bench's EvaluationCriteria default
_TERMINATIONS = {
    "user_stop": Termination.user_stop,
    "agent_stop": Termination.agent_stop,
    "max_steps": Termination.max_turns,
    "too_many_errors": Termination.too_many_errors,
    "agent_error": Termination.agent_error,
    "user_error": Termination.user_error,
    "timeout": Termination.timeout,
    "infrastructure_error": Termination.infrastructure_error,
}


class _Bad(ValueError):
    """A field of a simulation that cannot be read."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _load(path: Path) -> Any:
    with open_text(path) as fh:
        return loads(fh.read())


def _simulations(path: Path, doc: Mapping[str, Any]) -> Iterator[tuple[str, Any] | ReadError]:
    """Each simulation with where it was read: inline (``simulations[i]``) or, for the
    folder format, from its own file."""
    inline = doc.get("simulations")
    if isinstance(inline, list) and inline:
        for i, sim in enumerate(inline):
            yield f"simulations[{i}]", sim
        return
    folder = path.parent / "simulations"
    if not folder.is_dir():
        if inline is None:
            yield ReadError(str(path), 1, "simulations", "no simulations in the file")
        return
    for file in sorted(folder.glob("*.json")):
        try:
            yield str(file), _load(file)
        except READ_ERRORS as exc:
            yield ReadError(str(file), 1, None, describe(exc))


def _instructions(value: Any) -> str:
    """A user scenario's instructions as tau2-bench writes them for its user simulator."""
    if not isinstance(value, Mapping):
        return str(value or "")
    lines = [f"Domain: {value.get('domain', '')}"]
    lines.append(
        f"Reason for call:\n{textwrap.indent(str(value.get('reason_for_call', '')), chr(9))}"
    )
    for key, title in (("known_info", "Known info"), ("unknown_info", "Unknown info")):
        if value.get(key) is not None:
            lines.append(f"{title}:\n{textwrap.indent(str(value[key]), chr(9))}")
    lines.append(
        f"Task instructions:\n{textwrap.indent(str(value.get('task_instructions', '')), chr(9))}"
    )
    return "\n".join(lines)


def _expectations(task: Mapping[str, Any]) -> Expectations:
    criteria = task.get("evaluation_criteria")
    if not isinstance(criteria, Mapping):
        return Expectations(reward_basis=[])
    actions = [
        ExpectedAction(
            name=str(a.get("name")),
            arguments=dict(a.get("arguments") or {}),
            compare_args=a.get("compare_args"),
            requestor=a.get("requestor") or "assistant",
        )
        for a in criteria.get("actions") or []
    ]
    basis: list[str] = []
    for item in criteria.get("reward_basis") or _DEFAULT_BASIS:
        component = _BASIS.get(str(item))
        if component is None:
            raise _Bad("evaluation_criteria.reward_basis", f"unknown reward type {item!r}")
        if component not in basis:
            basis.append(component)
    return Expectations(
        actions=actions,
        communicate=[str(c) for c in criteria.get("communicate_info") or []],
        nl_assertions=[str(n) for n in criteria.get("nl_assertions") or []],
        reward_basis=basis,
    )


def _task(raw: Mapping[str, Any]) -> Task:
    scenario = raw.get("user_scenario") or {}
    view: dict[str, JSON] = {"instructions": _instructions(scenario.get("instructions"))}
    if scenario.get("persona"):
        view["persona"] = str(scenario["persona"])
    description = raw.get("description") or {}
    purpose = description.get("purpose") if isinstance(description, Mapping) else None
    metadata: dict[str, JSON] = {
        "simulation": _expectations(raw).model_dump(mode="json", exclude_defaults=True)
    }
    if raw.get("ticket"):
        metadata["ticket"] = str(raw["ticket"])
    return Task(
        id=str(raw.get("id")),
        input=view,
        description=str(purpose or raw.get("ticket") or ""),
        metadata=metadata,
    )


def _usage(message: Mapping[str, Any], model: str | None) -> Usage | None:
    raw = message.get("usage")
    cost = message.get("cost")
    if not isinstance(raw, Mapping) and not isinstance(cost, int | float):
        return None
    raw = raw if isinstance(raw, Mapping) else {}

    def count(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    usage = Usage(
        input_tokens=count("prompt_tokens"),
        output_tokens=count("completion_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) and cost > 0 else None,
        model=model,
    )
    return usage if usage.model_dump(exclude={"model"}, exclude_none=True) else None


def _result(content: Any) -> JSON:
    if isinstance(content, str):
        try:
            parsed: JSON = loads(content)
            return parsed
        except READ_ERRORS:
            return content
    return content  # type: ignore[no-any-return]


def _steps(
    messages: list[Any], agent: str, agent_model: str | None, user_model: str | None
) -> tuple[list[Step], list[Usage]]:
    steps: list[Step] = []
    user_usage: list[Usage] = []

    def add(kind: StepKind, **fields: Any) -> None:
        steps.append(Step(index=len(steps), kind=kind, **fields))

    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise _Bad(f"messages[{i}]", "a message is not an object")
        role = message.get("role")
        if role == "tool":
            error = bool(message.get("error"))
            content = message.get("content")
            add(
                StepKind.tool_result,
                parent_id=str(message.get("id") or ""),
                agent="user" if message.get("requestor") == "user" else agent,
                result=None if error else _result(content),
                error=str(content) if error else None,
            )
            continue
        if role == "multi_tool" or "tool_messages" in message:
            nested = message.get("tool_messages") or []
            sub, _ = _steps(list(nested), agent, agent_model, user_model)
            for step in sub:
                steps.append(step.model_copy(update={"index": len(steps)}))
            continue
        if role not in ("assistant", "user"):
            continue  # a system message is not part of the conversation
        speaker = agent if role == "assistant" else "user"
        usage = _usage(message, agent_model if role == "assistant" else user_model)
        content = message.get("content")
        text = content if isinstance(content, str) else None
        if role == "assistant":
            add(StepKind.llm, agent=speaker, content=text, usage=usage)
        else:
            if usage is not None:
                user_usage.append(usage)
            add(StepKind.message, agent="user", recipient=agent, content=text)
        for k, call in enumerate(message.get("tool_calls") or []):
            if not isinstance(call, Mapping) or not call.get("name"):
                raise _Bad(f"messages[{i}].tool_calls[{k}]", "a tool call without a name")
            arguments = call.get("arguments") or {}
            if not isinstance(arguments, Mapping):
                raise _Bad(f"messages[{i}].tool_calls[{k}].arguments", "not an object")
            call_id = str(call.get("id") or f"message-{i}:call{k}")
            add(
                StepKind.tool_call,
                id=call_id,
                agent=speaker,
                tool_call=ToolCall(id=call_id, name=str(call["name"]), arguments=dict(arguments)),
            )
    return steps, user_usage


def _recorded(info: Any, basis: list[str] | None) -> RecordedVerdicts | None:
    if not isinstance(info, Mapping):
        return None
    db = info.get("db_check")
    env = [
        {
            "env_assertion": _assertion_text(a.get("env_assertion")),
            "met": bool(a.get("met")),
        }
        for a in info.get("env_assertions") or []
        if isinstance(a, Mapping)
    ]
    nl = [
        {
            "nl_assertion": str(a.get("nl_assertion")),
            "met": bool(a.get("met")),
            "justification": str(a.get("justification") or ""),
        }
        for a in info.get("nl_assertions") or []
        if isinstance(a, Mapping)
    ]
    reward = info.get("reward")
    recorded_basis = info.get("reward_basis")
    return RecordedVerdicts(
        source=SOURCE,
        db_match=bool(db.get("db_match")) if isinstance(db, Mapping) else None,
        env_assertions=env,
        nl_assertions=nl,
        reward=float(reward) if isinstance(reward, int | float) else None,
        reward_basis=[str(b) for b in recorded_basis]
        if isinstance(recorded_basis, list)
        else basis,
    )


def _assertion_text(raw: Any) -> str:
    if not isinstance(raw, Mapping):
        return str(raw)
    call = f"{raw.get('env_type')}.{raw.get('func_name')}({raw.get('arguments')})"
    return f"{call} == {raw.get('assert_value', True)}"


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _trace(sim: Mapping[str, Any], task: Task, info: Mapping[str, Any]) -> Trace:
    agent_info = info.get("agent_info") or {}
    user_info = info.get("user_info") or {}
    agent_model = agent_info.get("llm")
    user_model = user_info.get("llm")
    agent = str(agent_info.get("implementation") or "agent")
    messages = sim.get("messages")
    if not isinstance(messages, list):
        if sim.get("ticks") is not None:
            raise _Bad(
                "messages", "a full-duplex (voice) simulation: only text simulations are read"
            )
        raise _Bad("messages", "no messages")
    steps, user_usage = _steps(messages, agent, agent_model, user_model)
    termination = _TERMINATIONS.get(str(sim.get("termination_reason")), Termination.other)
    last_user = next((s for s in reversed(steps) if s.agent == "user" and s.content), None)
    signal = stop_signal(last_user.content or "") if last_user is not None else None
    tau2_basis = _original_basis(sim)
    outcome = Outcome(
        trial=sim.get("trial"),
        termination=termination,
        user_signal=signal if termination is Termination.user_stop else None,
        user_turns=sum(1 for s in steps if s.agent == "user" and s.kind is StepKind.message),
        tool_errors=sum(1 for s in steps if s.kind is StepKind.tool_result and s.error),
        recorded=_recorded(sim.get("reward_info"), tau2_basis),
        user={
            "kind": str(user_info.get("implementation") or "user"),
            **({"model": str(user_model)} if user_model else {}),
        },
        user_usage=sum_usage(user_usage),
    )
    trial = sim.get("trial")
    trace_id = f"{task.id}#t{trial}" if trial is not None else str(sim.get("id"))
    duration = sim.get("duration")
    metadata: dict[str, JSON] = {
        "simulation": outcome.model_dump(mode="json", exclude_defaults=True),
        "tau2": {
            "simulation_id": sim.get("id"),
            "seed": sim.get("seed"),
            "agent_cost": sim.get("agent_cost"),
            "user_cost": sim.get("user_cost"),
            "termination_reason": sim.get("termination_reason"),
        },
    }
    return Trace(
        id=trace_id,
        task=task,
        output=next(
            (s.content for s in reversed(steps) if s.kind is StepKind.llm and s.content), None
        ),
        steps=steps,
        agent=f"{agent}:{agent_model}" if agent_model else agent,
        started_at=_when(sim.get("start_time")),
        ended_at=_when(sim.get("end_time")),
        duration_s=float(duration) if isinstance(duration, int | float) and duration >= 0 else None,
        usage=sum_usage(s.usage for s in steps if s.usage is not None),
        metadata=metadata,
    )


def _original_basis(sim: Mapping[str, Any]) -> list[str] | None:
    info = sim.get("reward_info")
    if isinstance(info, Mapping) and isinstance(info.get("reward_basis"), list):
        return [str(b) for b in info["reward_basis"]]
    return None


@importer(
    "tau2",
    description="tau2-bench simulation results (results.json): conversations and reward info",
    no_trace_hint="give a tau2-bench results file (its 'tasks' and 'simulations')",
)
def read_tau2(path: str | Path) -> Iterator[Trace | ReadError]:
    """Stream the simulations of a tau2-bench results file as conversation Traces.

    Args:
        path: ``results.json`` (gzip accepted), monolithic or with its ``simulations/``
            folder beside it.
    """
    source = Path(path)
    try:
        doc = _load(source)
    except READ_ERRORS as exc:
        yield ReadError(str(source), 1, None, describe(exc))
        return
    if not isinstance(doc, Mapping) or not isinstance(doc.get("tasks"), list):
        yield ReadError(str(source), 1, "tasks", "not a tau2-bench results file (no 'tasks' list)")
        return
    tasks: dict[str, Mapping[str, Any]] = {}
    for raw in doc["tasks"]:
        if isinstance(raw, Mapping) and raw.get("id") is not None:
            tasks[str(raw["id"])] = raw
    info = doc.get("info") if isinstance(doc.get("info"), Mapping) else {}
    built: dict[str, Task] = {}
    for number, item in enumerate(_simulations(source, doc), start=1):
        if isinstance(item, ReadError):
            yield item
            continue
        where, sim = item
        where_source = str(source) if where.startswith("simulations[") else where
        prefix = f"{where}." if where.startswith("simulations[") else ""
        if not isinstance(sim, Mapping):
            yield ReadError(where_source, number, where, "a simulation is not an object")
            continue
        if sim.get("termination_reason") == "infrastructure_error":
            yield ReadError(
                where_source,
                number,
                f"{prefix}termination_reason",
                "ended by an infrastructure error: not a trial (tau2-bench leaves it out of its "
                "metrics)",
            )
            continue
        task_id = str(sim.get("task_id"))
        raw_task = tasks.get(task_id)
        if raw_task is None:
            yield ReadError(where_source, number, f"{prefix}task_id", f"no task {task_id!r}")
            continue
        try:
            if task_id not in built:
                built[task_id] = _task(raw_task)
            # a lone surrogate (JSON text's escape of half a UTF-16 pair) is read as U+FFFD
            made = _trace(sim, built[task_id], info)  # type: ignore[arg-type]
            trace, replaced = storable_trace(made)
        except _Bad as exc:
            yield ReadError(where_source, number, f"{prefix}{exc.field}", str(exc))
            continue
        except (ValueError, TypeError) as exc:
            yield ReadError(where_source, number, where, str(exc))
            continue
        except Exception as exc:  # the import boundary: a bug costs this simulation only
            yield ReadError(where_source, number, where, unexpected(exc))
            continue
        if replaced:
            yield surrogate_warning(where_source, number, replaced, prefix=f"trace {trace.id}")
        yield trace
