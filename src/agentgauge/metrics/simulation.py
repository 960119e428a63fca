"""The reward of a simulated conversation, as tau2-bench computes it, and its parts.

A conversation (:mod:`agentgauge.conversation`) is scored on what its scenario expects:

- ``end_state``: the final state equals the expected one. With expected changes (the expected
  actions replayed on a fresh environment), the final state must make exactly those changes to
  the initial state (tau2-bench's database check); with expected values or assertions, each
  must hold at its path. ``details["differences"]`` names every field that differs, with its
  expected and actual value. An imported tau2-bench file has no state to compare: its recorded
  database check and environment assertions are read (``details["source"]``).
- ``actions``: each expected action is matched by a tool call of the conversation (tau2-bench's
  rule: same name and equal compared arguments, in any order; ``details["missing"]``).
- ``communicated``: each required text appears in one of the agent's messages (tau2-bench's
  rule: lower-cased, commas removed from the message, substring).
- ``reward``: the product of the components of the scenario's reward basis (by default every
  component it defines); 0 when the conversation did not end by the user's or the agent's stop
  (max turns, an error), as tau2-bench decides. A component in the basis that the scenario
  leaves empty counts 1 (nothing was required).
- ``policy_compliance``: 1 when the environment reported no breach of its policy, else 0
  (None when the environment reports none).

Each is 1.0 or 0.0 (None for a trace that is not a conversation, or a component the scenario
does not define); the conversation's turn counts and end are in ``reward``'s details.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgauge.conversation import (
    Expectations,
    Outcome,
    difference_text,
    end_state_problems,
    expectations_of,
    outcome_of,
)
from agentgauge.metrics.base import MetricResult, metric, shared_per_trace
from agentgauge.model import Step, StepKind, Trace

__all__ = [
    "Check",
    "Conversation",
    "actions_check",
    "communicated_check",
    "conversation_of",
    "end_state_check",
    "reward_check",
]

USER = "user"
_ENVIRONMENT = frozenset({"user", "environment", "system", "tool"})
_NOT_A_CONVERSATION = "not a simulated conversation (no simulation record in the trace)"


@dataclass(frozen=True)
class Conversation:
    """A conversation's records and messages, read once per trace.

    Args:
        expectations: what the scenario expects.
        outcome: what happened.
        user_messages: the user's messages, each with its step.
        agent_messages: the agent's messages (its model turns with text), each with its step.
    """

    expectations: Expectations
    outcome: Outcome
    user_messages: list[Step]
    agent_messages: list[Step]


def _read(trace: Trace) -> Conversation | None:
    expectations, outcome = expectations_of(trace), outcome_of(trace)
    if expectations is None or outcome is None:
        return None
    users, agents = [], []
    for step in trace.steps:
        if not step.content or not step.content.strip():
            continue
        if step.agent == USER and step.kind is StepKind.message:
            users.append(step)
        elif step.kind in (StepKind.llm, StepKind.message) and (
            step.agent is None or step.agent.lower() not in _ENVIRONMENT
        ):
            agents.append(step)
    return Conversation(expectations, outcome, users, agents)


def conversation_of(trace: Trace) -> Conversation | None:
    """The conversation a trace records (shared by the metrics scoring it in one batch), None
    for a trace that is not a simulated conversation.

    Args:
        trace: the trace.

    Raises:
        ValueError: a simulation record that is malformed.
    """
    return shared_per_trace(trace, _read)


@dataclass(frozen=True)
class Check:
    """One component's verdict: its value (None: not applicable), why, and what it found."""

    value: float | None
    reason: str | None
    details: dict[str, Any]

    def result(self) -> MetricResult:
        """The verdict as a metric's result."""
        return MetricResult(self.value, self.details, self.reason)


def _listing(texts: list[str], limit: int = 3) -> str:
    shown = "; ".join(texts[:limit])
    return shown + (f"; and {len(texts) - limit} more" if len(texts) > limit else "")


def end_state_check(conv: Conversation) -> Check:
    """The ``end_state`` component (see the module docstring).

    Args:
        conv: the conversation.
    """
    exp, out = conv.expectations, conv.outcome
    recorded = out.recorded
    if exp.expected_changes is None and recorded is not None and recorded.db_match is not None:
        return _recorded_end_state(out)
    if not exp.defines("end_state"):
        return Check(None, "the scenario expects no end state", {})
    if exp.expected_changes is not None and out.changes is None:
        return Check(None, "the conversation's state changes were not recorded", {})
    differences, failed = end_state_problems(exp, out.changes or [], out.observed)
    details: dict[str, Any] = {"differences": differences, "failed_assertions": failed}
    if out.changes is not None:
        details["changed_fields"] = [c.path for c in out.changes]
    problems = [difference_text(d) for d in differences] + [
        f"{a['assertion']} does not hold ("
        + ("absent" if a.get("note") else f"value {a['actual']!r}")
        + ")"
        for a in failed
    ]
    if problems:
        return Check(0.0, "the final state differs: " + _listing(problems), details)
    return Check(1.0, None, details)


def _recorded_end_state(out: Outcome) -> Check:
    recorded = out.recorded
    assert recorded is not None
    basis = recorded.reward_basis
    use_db = basis is None or "DB" in basis
    use_assertions = basis is not None and "ENV_ASSERTION" in basis
    failed = [a for a in recorded.env_assertions if a.get("met") is not True]
    details: dict[str, Any] = {
        "source": recorded.source,
        "db_match": recorded.db_match,
        "env_assertions": recorded.env_assertions,
        "counted": [p for p, used in (("DB", use_db), ("ENV_ASSERTION", use_assertions)) if used],
    }
    problems = []
    if use_db and recorded.db_match is False:
        problems.append(f"the final database differs from the expected one ({recorded.source})")
    if use_assertions and failed:
        problems.append(f"{len(failed)} environment assertion(s) failed ({recorded.source})")
    if problems:
        return Check(0.0, "; ".join(problems), details)
    return Check(1.0, None, details)


def actions_check(trace: Trace, conv: Conversation) -> Check:
    """The ``actions`` component: every expected action matched by a tool call.

    Args:
        trace: the trace (its tool calls).
        conv: the conversation.
    """
    expected = conv.expectations.actions
    if not expected:
        return Check(None, "the scenario expects no action", {})
    calls = trace.tool_calls
    matched = [(a.describe(), any(a.matches(c) for c in calls)) for a in expected]
    checks = [{"action": action, "matched": ok} for action, ok in matched]
    missing = [action for action, ok in matched if not ok]
    details = {"checks": checks, "missing": missing}
    if missing:
        return Check(0.0, "expected action(s) not taken: " + _listing(missing), details)
    return Check(1.0, None, details)


def _said(info: str, messages: list[Step]) -> int | None:
    """The index of the first agent message that says ``info``, as tau2-bench compares."""
    wanted = info.lower()
    for i, step in enumerate(messages):
        if wanted in (step.content or "").lower().replace(",", ""):
            return i
    return None


def communicated_check(conv: Conversation) -> Check:
    """The ``communicated`` component: every required text in one of the agent's messages.

    Args:
        conv: the conversation.
    """
    required = conv.expectations.communicate
    if not required:
        return Check(None, "the scenario requires no information to be communicated", {})
    found = {info: _said(info, conv.agent_messages) for info in required}
    missing = [info for info, at in found.items() if at is None]
    details = {
        "required": required,
        "missing": missing,
        "said_in_step": {
            info: conv.agent_messages[at].index for info, at in found.items() if at is not None
        },
    }
    if missing:
        return Check(0.0, "not communicated: " + _listing([repr(m) for m in missing]), details)
    return Check(1.0, None, details)


def _nl_check(conv: Conversation) -> Check:
    recorded = conv.outcome.recorded
    if recorded is None or not recorded.nl_assertions:
        if not conv.expectations.nl_assertions:
            return Check(None, "the scenario has no natural-language assertion", {})
        return Check(
            None, "natural-language assertions need a recorded verdict (tau2-bench's judge)", {}
        )
    failed = [
        str(a.get("nl_assertion")) for a in recorded.nl_assertions if a.get("met") is not True
    ]
    details = {"source": recorded.source, "nl_assertions": recorded.nl_assertions}
    if failed:
        return Check(0.0, "assertion(s) judged not met: " + _listing(failed), details)
    return Check(1.0, None, details)


def reward_check(trace: Trace, conv: Conversation) -> Check:
    """The ``reward``: the product of the basis's components (see the module docstring).

    Args:
        trace: the trace.
        conv: the conversation.
    """
    exp, out = conv.expectations, conv.outcome
    basis = exp.basis()
    details: dict[str, Any] = {
        "basis": basis,
        "termination": out.termination.value,
        "user_signal": out.user_signal,
        "user_turns": len(conv.user_messages),
        "agent_messages": len(conv.agent_messages),
        "tool_calls": len(trace.tool_calls),
    }
    if out.recorded is not None and out.recorded.reward is not None:
        details["recorded_reward"] = out.recorded.reward
    if not out.ended_normally:
        why = out.termination.value.replace("_", " ")
        error = f": {out.error}" if out.error else ""
        return Check(0.0, f"the conversation ended by {why}{error}", details)
    if not basis:
        if exp.reward_basis is None:
            return Check(None, "the scenario defines nothing to check", details)
        return Check(1.0, None, details)
    checks = {
        "end_state": lambda: end_state_check(conv),
        "actions": lambda: actions_check(trace, conv),
        "communicated": lambda: communicated_check(conv),
        "nl_assertions": lambda: _nl_check(conv),
    }
    components: dict[str, float] = {}
    failed: list[str] = []
    for name in basis:
        check = checks[name]()
        if check.value is None and exp.defines(name):
            return Check(None, f"{name}: {check.reason}", {**details, "components": components})
        value = 1.0 if check.value is None else check.value
        components[name] = value
        if value < 1.0:
            failed.append(f"{name}: {check.reason}")
    details["components"] = components
    reward = 1.0
    for value in components.values():
        reward *= value
    return Check(reward, "; ".join(failed) or None, details)


def _scored(trace: Trace, compute: Any) -> MetricResult:
    conv = conversation_of(trace)
    if conv is None:
        return MetricResult(None, {}, _NOT_A_CONVERSATION)
    check: Check = compute(conv)
    return check.result()


@metric("end_state", description="Simulation: the final state equals the expected one (1 or 0)")
def end_state(trace: Trace) -> MetricResult:
    """Whether the environment's final state is the expected one; names the differing fields."""
    return _scored(trace, end_state_check)


@metric("actions", description="Simulation: every expected action was taken (1 or 0)")
def actions(trace: Trace) -> MetricResult:
    """Whether every expected action (tool and compared arguments) was taken."""
    return _scored(trace, lambda conv: actions_check(trace, conv))


@metric(
    "communicated",
    description="Simulation: the agent told the user every required piece of information",
)
def communicated(trace: Trace) -> MetricResult:
    """Whether every required text appears in one of the agent's messages."""
    return _scored(trace, communicated_check)


@metric(
    "reward",
    description="Simulation: tau2-bench's reward, end_state x actions x communicated (1 or 0)",
)
def reward(trace: Trace) -> MetricResult:
    """The product of the reward basis's components; 0 for a conversation that did not end
    by a stop signal."""
    return _scored(trace, lambda conv: reward_check(trace, conv))


@metric(
    "policy_compliance",
    description="Simulation: no breach of the domain's policy reported by the environment",
)
def policy_compliance(trace: Trace) -> MetricResult:
    """1 when the environment reported no policy breach, 0 otherwise."""

    def check(conv: Conversation) -> Check:
        violations = conv.outcome.violations
        if violations is None:
            return Check(None, "the environment reports no policy checks", {})
        details = {"violations": [v.model_dump(exclude_none=True) for v in violations]}
        if violations:
            texts = [(f"turn {v.turn}: " if v.turn else "") + v.message for v in violations]
            return Check(0.0, "policy breached: " + _listing(texts), details)
        return Check(1.0, None, details)

    return _scored(trace, check)
