"""Checks of the simulated user: did it stay inside its instructions, and whose fault is a
failed conversation?

A failed conversation is the agent's fault only if the user played its part. tau2-bench's own
tracker found up to 30% of failed trajectories to be the user simulator's doing, so every
conversation is checked for the simulator's known failures, deterministically (each finding
names the user turn, 1-based):

- ``unsupported_fact``: the user stated a fact — a token holding a digit (an order id, an
  amount, a zip code, a date, a phone number) or an e-mail address — that neither its
  instructions (the task's description and input) nor an earlier message of the agent gave it.
  Amounts are compared by value (``$49.00`` is ``49``); other numbers as written (a zip code
  keeps its leading zero); ``two`` in the instructions allows ``2``; a bare one-digit number is
  not a fact.
- ``withheld_fact``: the user stated a value its scenario lists as not known to it
  (``withheld``) before the agent said it.
- ``ended_early``: the user said ``###STOP###`` while the expected end state was not reached
  and the agent's last message waited for an answer (it ends with a question that is not a
  closing one such as "anything else I can help you with?").
- ``went_on``: once the expected end state was reached and every required piece of
  information communicated, the user sent more than ``patience`` further messages (besides its
  stop), or the conversation ran into its turn limit.
- ``broke_character``: the user spoke as an assistant or about its script (``phrases``: "as an
  AI", "how can I help you", "my instructions"...), sent a ``###...###`` token that is not a
  stop signal, or copied ``copy_words`` consecutive words of its instructions.
- ``user_error``: the user simulator failed (its model did not answer).

``user_fidelity`` is 1.0 when none of these is found, else 0.0. ``simulator_fault`` attributes a
failed conversation (reward below 1): 1.0 (the simulator's) when a finding exists, 0.0 (the
agent's) otherwise, None for a conversation that succeeded; its mean over a run is the share of
failed conversations attributed to the simulator. ``user_simulator_quality`` asks an LLM judge
the same question in its own words (a 1–5 score).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import Field

from agentgauge.conversation import STOP_SIGNALS, Termination, stop_signal
from agentgauge.judges.prompts import DATA_ONLY, JudgeSpec, Verdict
from agentgauge.judges.render import json_text, render_trace, section
from agentgauge.metrics.base import MetricResult, metric, shared_per_trace
from agentgauge.metrics.judge import JudgeMetric, score_with_issues
from agentgauge.metrics.simulation import (
    Conversation,
    communicated_check,
    conversation_of,
    reward_check,
)
from agentgauge.model import JSON, Step, Trace

__all__ = [
    "DEFAULT_OUT_OF_CHARACTER",
    "Finding",
    "UserSimulatorQuality",
    "facts_in",
    "simulator_findings",
]

DEFAULT_OUT_OF_CHARACTER: tuple[str, ...] = (
    "as an ai",
    "language model",
    "i am an ai",
    "i'm an ai",
    "i am an assistant",
    "i'm an assistant",
    "how can i help you",
    "how may i help you",
    "how can i assist you",
    "how may i assist you",
    "is there anything else i can help",
    "my instructions",
    "my scenario",
    "the scenario says",
    "simulated user",
    "user simulator",
)
"""Phrases a customer does not say: an assistant's words or talk about the script."""

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_TOKEN = re.compile(r"[#$€£]?\w(?:[\w./:-]|,(?=\d{3}))*")
_SIGNAL_TOKEN = re.compile(r"###[A-Z_-]+###")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"\w+")
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}


def _fact(token: str) -> str | None:
    """A token's normal form when it is a fact, else None."""
    money = token[:1] in "$€£"
    text = token.lower().lstrip("#$€£").rstrip(".,:;/-")
    if not any(c.isdigit() for c in text):
        return None
    plain = text.replace(",", "")
    if _NUMBER.fullmatch(plain):
        if money or "." in plain or "," in text:  # an amount: compared by value
            return format(Decimal(plain).normalize(), "f")
        if len(plain) == 1:  # a bare digit: a count, not a fact
            return None
    return text


def facts_in(text: str) -> set[str]:
    """The facts a text states: e-mail addresses and tokens holding a digit, normalised.

    Args:
        text: the text.
    """
    found = {m.group(0).lower() for m in _EMAIL.finditer(text)}
    rest = _EMAIL.sub(" ", text)
    for m in _TOKEN.finditer(rest):
        fact = _fact(m.group(0))
        if fact is not None:
            found.add(fact)
    return found


def _given_facts(text: str) -> set[str]:
    facts = facts_in(text)
    facts.update(_NUMBER_WORDS[w] for w in _WORD.findall(text.lower()) if w in _NUMBER_WORDS)
    return facts


def _strings(value: JSON) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)


def _instructions(trace: Trace) -> str:
    """Everything the simulated user was given: the task's description and input."""
    return "\n".join([trace.task.description, *_strings(trace.task.input)])


@dataclass(frozen=True)
class Finding:
    """One failure of the simulated user.

    Args:
        check: which check found it.
        turn: the user turn (1-based) it happened in, None for the whole conversation.
        message: what happened.
    """

    check: str
    turn: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "turn": self.turn, "message": self.message}


def _turn_of(step: Step, users: Sequence[Step]) -> int:
    """The user turn a step belongs to: the number of user messages before it."""
    return sum(1 for u in users if u.index < step.index)


def _fact_findings(trace: Trace, conv: Conversation) -> list[Finding]:
    given = _given_facts(_instructions(trace))
    withheld = [w for w in conv.expectations.withheld if w.strip()]
    findings = []
    reported: set[str] = set()
    for turn, message in enumerate(conv.user_messages, start=1):
        said_before = [a.content or "" for a in conv.agent_messages if a.index < message.index]
        heard = set().union(*(facts_in(text) for text in said_before)) if said_before else set()
        text = message.content or ""
        for fact in sorted(facts_in(text) - given - heard - reported):
            reported.add(fact)
            findings.append(
                Finding(
                    "unsupported_fact",
                    turn,
                    f"stated {fact!r}, which its instructions do not give and the agent had "
                    "not said",
                )
            )
        lowered = text.lower()
        for value in withheld:
            known = value.lower()
            if known in lowered and not any(known in s.lower() for s in said_before):
                findings.append(
                    Finding("withheld_fact", turn, f"stated {value!r}, which it does not know")
                )
    return findings


_CLOSING = re.compile(
    r"\b(anything else|something else|help you with|can i help|can i do for you)\b", re.I
)


def _asks(text: str) -> bool:
    """Whether a message waits for an answer: it ends with a question that is not a closing
    one ("Is there anything else I can help you with?")."""
    stripped = text.rstrip().rstrip("\"')]")
    if not stripped.endswith("?"):
        return False
    last = re.split(r"(?<=[.!?])\s+", stripped)[-1]
    return not _CLOSING.search(last)


def _turn_findings(conv: Conversation, patience: int) -> list[Finding]:
    exp, out = conv.expectations, conv.outcome
    findings = []
    users = conv.user_messages
    expects_state = out.changes is not None and (
        exp.expected_changes is not None or exp.expected_values or exp.assertions
    )
    if out.user_signal == "stop" and expects_state and out.goal_turn is None and users:
        last_user = users[-1]
        before = [a for a in conv.agent_messages if a.index < last_user.index]
        if before and _asks(before[-1].content or ""):
            findings.append(
                Finding(
                    "ended_early",
                    len(users),
                    "ended the conversation before the goal was reached, while the agent was "
                    "waiting for its answer",
                )
            )
    something_to_do = bool(exp.expected_changes) or bool(exp.expected_values)
    if out.goal_turn is None or not something_to_do:
        return findings
    done = out.goal_turn
    said = communicated_check(conv).details.get("said_in_step", {})
    if len(said) < len(exp.communicate):
        return findings  # never fully communicated: the user had reason to go on
    for step_index in said.values():
        step = next(a for a in conv.agent_messages if a.index == step_index)
        done = max(done, _turn_of(step, users))
    after = [u for u in users[done:] if stop_signal(u.content or "") is None]
    if out.termination is Termination.max_turns:
        findings.append(
            Finding(
                "went_on",
                None,
                f"went on to the turn limit after the goal was reached at turn {done}",
            )
        )
    elif len(after) > patience:
        findings.append(
            Finding(
                "went_on",
                done + 1,
                f"sent {len(after)} more messages after the goal was reached at turn {done}",
            )
        )
    return findings


def _grams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _character_findings(
    trace: Trace, conv: Conversation, phrases: Sequence[str], copy_words: int
) -> list[Finding]:
    patterns = [
        (p, re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, p.split())) + r"(?!\w)", re.I))
        for p in phrases
    ]
    script = _grams(_WORD.findall(_instructions(trace).lower()), copy_words)
    findings = []
    for turn, message in enumerate(conv.user_messages, start=1):
        text = message.content or ""
        for phrase, pattern in patterns:
            if pattern.search(text):
                findings.append(Finding("broke_character", turn, f"said {phrase!r}"))
        for token in _SIGNAL_TOKEN.findall(text):
            if token not in STOP_SIGNALS:
                findings.append(
                    Finding("broke_character", turn, f"sent {token}, which is not a stop signal")
                )
        if script and _grams(_WORD.findall(text.lower()), copy_words) & script:
            findings.append(
                Finding(
                    "broke_character",
                    turn,
                    f"copied {copy_words} or more consecutive words of its instructions",
                )
            )
    return findings


def _findings(
    trace: Trace, patience: int, phrases: tuple[str, ...], copy_words: int
) -> list[Finding] | None:
    conv = conversation_of(trace)
    if conv is None:
        return None
    findings = _fact_findings(trace, conv)
    findings += _turn_findings(conv, patience)
    findings += _character_findings(trace, conv, phrases, copy_words)
    if conv.outcome.termination is Termination.user_error:
        findings.append(
            Finding("user_error", None, f"the user simulator failed: {conv.outcome.error or '?'}")
        )
    return sorted(findings, key=lambda f: (f.turn is None, f.turn or 0))


def simulator_findings(
    trace: Trace,
    *,
    patience: int = 2,
    phrases: Sequence[str] = DEFAULT_OUT_OF_CHARACTER,
    copy_words: int = 12,
) -> list[Finding] | None:
    """The simulated user's failures in a conversation (see the module docstring), in turn
    order; None for a trace that is not a simulated conversation.

    Args:
        trace: the conversation.
        patience: user messages allowed after the goal was reached (besides the stop).
        phrases: phrases the user must not say (whole words, any case).
        copy_words: this many consecutive words of the instructions is a copy.
    """
    _check_options(patience, phrases, copy_words)
    return shared_per_trace(trace, _findings, patience, tuple(phrases), copy_words)


def _check_options(patience: int, phrases: Sequence[str], copy_words: int) -> None:
    if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
        raise ValueError(f"patience must be an integer >= 0, got {patience!r}")
    if isinstance(copy_words, bool) or not isinstance(copy_words, int) or copy_words < 3:
        raise ValueError(f"copy_words must be an integer >= 3, got {copy_words!r}")
    if isinstance(phrases, str) or not all(isinstance(p, str) and p.strip() for p in phrases):
        raise ValueError("phrases: expected a list of non-empty phrases")


_NOT_A_CONVERSATION = "not a simulated conversation (no simulation record in the trace)"


@metric(
    "user_fidelity",
    description="Simulation: the simulated user stayed inside its instructions (1 or 0)",
)
def user_fidelity(
    trace: Trace,
    *,
    patience: int = 2,
    phrases: Sequence[str] = DEFAULT_OUT_OF_CHARACTER,
    copy_words: int = 12,
) -> MetricResult:
    """1 when no check of the simulated user found a failure, 0 otherwise (see the module
    docstring for the checks and the options)."""
    findings = simulator_findings(trace, patience=patience, phrases=phrases, copy_words=copy_words)
    if findings is None:
        return MetricResult(None, {}, _NOT_A_CONVERSATION)
    details = {"findings": [f.as_dict() for f in findings]}
    if findings:
        first = findings[0]
        where = f"turn {first.turn}: " if first.turn else ""
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        return MetricResult(0.0, details, f"the simulated user {where}{first.message}{more}")
    return MetricResult(1.0, details, None)


@metric(
    "simulator_fault",
    description="Simulation: a failed conversation attributed to the simulated user (1) or to "
    "the agent (0); its mean is the simulator's share of the failures",
    higher_is_better=False,
)
def simulator_fault(
    trace: Trace,
    *,
    patience: int = 2,
    phrases: Sequence[str] = DEFAULT_OUT_OF_CHARACTER,
    copy_words: int = 12,
) -> MetricResult:
    """Who failed a conversation whose reward is below 1: the simulator when one of its checks
    found a failure, else the agent; None for a conversation that succeeded."""
    conv = conversation_of(trace)
    if conv is None:
        return MetricResult(None, {}, _NOT_A_CONVERSATION)
    scored = reward_check(trace, conv)
    if scored.value is None:
        return MetricResult(None, {}, f"no reward: {scored.reason}")
    if scored.value >= 1.0:
        return MetricResult(None, {"reward": scored.value}, "the conversation succeeded")
    findings = simulator_findings(trace, patience=patience, phrases=phrases, copy_words=copy_words)
    assert findings is not None
    details: dict[str, Any] = {
        "reward": scored.value,
        "findings": [f.as_dict() for f in findings],
        "attributed_to": "simulator" if findings else "agent",
    }
    if findings:
        checks = ", ".join(dict.fromkeys(f.check for f in findings))
        return MetricResult(1.0, details, f"attributed to the simulated user ({checks})")
    return MetricResult(
        0.0,
        details,
        f"attributed to the agent (the simulated user passed every check): "
        f"{scored.reason or 'reward below 1'}",
    )


class SimulatorVerdict(Verdict):
    """The user-simulator judge's answer."""

    reasoning: str = Field(
        description="Two to four sentences on how the simulated user played its part, written "
        "before the score."
    )
    issues: list[str] = Field(
        description="Each departure from the instructions as a short phrase naming the user "
        "turn: a fact it was not given, information volunteered before it was asked, an early "
        "or late end, words a customer would not say. Empty when there is none."
    )
    score: int = Field(
        ge=1,
        le=5,
        description="1 (ignored its instructions) to 5 (followed them exactly, like a real "
        "customer)",
    )


USER_SIMULATOR_QUALITY = JudgeSpec(
    name="user_simulator_quality",
    verdict_type=SimulatorVerdict,
    weights={},
    instructions=(
        "You check a simulated user, not the agent. A language model played a customer with "
        "the instructions in <user_instructions> and talked with a customer-service agent; the "
        "conversation is in <conversation>. Decide how faithfully the simulated user played its "
        "part:\n"
        "- it states only facts its instructions give it, or that the agent told it;\n"
        "- it discloses information when the agent asks for it, not all at once;\n"
        "- it pursues the goal of its instructions and nothing else;\n"
        "- it ends with ###STOP### once the goal is reached, not before and not long after "
        "(###TRANSFER### when transferred, ###OUT-OF-SCOPE### when its instructions do not "
        "cover what it is asked);\n"
        "- it speaks as the customer throughout, never as an assistant or about its script.\n"
        "Whether the agent did its job does not matter here. List the issues, then score.\n"
        + DATA_ONLY
    ),
    prompt_version="user_simulator_quality/1",
)
"""``(score − 1) / 4`` for the judge's 1–5 score."""


@metric(
    "user_simulator_quality",
    description="LLM judge: how faithfully the simulated user followed its instructions (1-5)",
)
class UserSimulatorQuality(JudgeMetric):
    """How faithfully the simulated user played its part, in an LLM judge's eyes."""

    spec = USER_SIMULATOR_QUALITY

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        conv = conversation_of(trace)
        if conv is None:
            return _NOT_A_CONVERSATION
        if not conv.user_messages:
            return "the simulated user sent no message"
        instructions = "\n\n".join(
            p for p in (trace.task.description, json_text(trace.task.input)) if p
        )
        view = render_trace(
            trace.model_copy(update={"task": trace.task.model_copy(update={"input": None})}),
            ["steps"],
            budget_tokens=self.settings.trace_budget_tokens,
        )
        prompt = (
            section("user_instructions", instructions or "(none recorded)")
            + "\n\n"
            + section("conversation", view.text)
        )
        return prompt, {"user_turns": len(conv.user_messages)}

    def _score(self, output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
        return score_with_issues(output)
