"""Pairwise judging with position bias controlled: one comparison asked in both orders.

The judge sees the task and two answers under anonymous labels, ``Response 1`` and
``Response 2`` (never the runs' names), and says which one meets the criteria better, or that
they are equally good. Each pair is asked twice, once with A's answer first and once with B's
first (:func:`judge_pair`). Read back in terms of A and B:

- both orders name the same answer: that answer wins the pair;
- both orders say tie: a tie;
- the orders disagree (the judge preferred a position, not an answer): ``inconsistent``, which
  is never a win.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from agentgauge.judges.client import JudgeFailure, JudgeRequest, JudgeSession, JudgeVerdict
from agentgauge.judges.prompts import DATA_ONLY, Verdict
from agentgauge.judges.render import json_text, section, shorten_middle
from agentgauge.model import Trace

__all__ = [
    "PAIRWISE_PROMPT_VERSION",
    "PairOutcome",
    "PairwiseVerdict",
    "judge_pair",
    "pairwise_instructions",
    "pairwise_prompt",
]

PAIRWISE_PROMPT_VERSION = "pairwise/1"
_ANSWER_CHARS = 8000

Outcome = Literal["A", "B", "tie", "inconsistent"]


class PairwiseVerdict(Verdict):
    """The pairwise judge's answer."""

    reasoning: str = Field(
        description="Two to four sentences comparing the two responses against the criteria, "
        "written before the decision."
    )
    better: Literal["1", "2", "tie"] = Field(
        description='"1" when Response 1 meets the criteria better, "2" when Response 2 does, '
        '"tie" when they are equally good.'
    )


def pairwise_instructions(criteria: str) -> str:
    """The instructions of the pairwise judge.

    Args:
        criteria: what a better response is, in the user's words.
    """
    return (
        "You compare two responses of AI agents to the same task, against the criteria below. "
        "The message holds the task and the two responses, labelled Response 1 and Response "
        "2. Their order is arbitrary: judge what they say, not where they stand, nor their "
        "length.\n\n"
        f"Criteria:\n{criteria}\n\n"
        "Write your reasoning first, then say which response is better, or tie.\n" + DATA_ONLY
    )


def _task_text(trace: Trace) -> str:
    task = trace.task
    parts = [task.description or "", json_text(task.input) if task.input else ""]
    return "\n\n".join(p for p in parts if p) or "(no task text recorded)"


def _answer(trace: Trace) -> str:
    text = "(no final output)" if trace.output is None else json_text(trace.output)
    return shorten_middle(text, _ANSWER_CHARS)


def pairwise_prompt(first: Trace, second: Trace) -> str:
    """The user prompt comparing two traces' outputs on the same task (the first's task).

    Args:
        first: the trace shown as Response 1.
        second: the trace shown as Response 2.
    """
    return "\n\n".join(
        [
            section("task", _task_text(first)),
            section("response_1", _answer(first)),
            section("response_2", _answer(second)),
        ]
    )


@dataclass(frozen=True)
class PairOutcome:
    """One pair judged in both orders.

    Args:
        outcome: ``A``, ``B``, ``tie``, ``inconsistent``, or None when a call failed.
        a_first: the judge's choice with A's answer as Response 1 (``1``, ``2``, ``tie``).
        b_first: its choice with B's answer as Response 1.
        reasons: the two reasonings, A first then B first.
        error: why the pair has no outcome.
        calls: the calls' usage and whether each came from the cache.
    """

    outcome: Outcome | None
    a_first: str | None = None
    b_first: str | None = None
    reasons: tuple[str, str] | None = None
    error: str | None = None
    calls: tuple[dict[str, object], ...] = ()


def _outcome(a_first: str, b_first: str) -> Outcome:
    # read back as A/B: in the first order "1" is A; in the second "1" is B
    first = {"1": "A", "2": "B", "tie": "tie"}[a_first]
    second = {"1": "B", "2": "A", "tie": "tie"}[b_first]
    return first if first == second else "inconsistent"  # type: ignore[return-value]


async def judge_pair(
    session: JudgeSession, criteria: str, a: Trace, b: Trace, *, sample: int = 0
) -> PairOutcome:
    """Judge A's and B's answers to one task in both orders.

    Args:
        session: the judge session.
        criteria: what a better response is.
        a: the baseline's trace.
        b: the candidate's trace.
        sample: the sample index (a repeated comparison).
    """
    instructions = pairwise_instructions(criteria)
    requests = [
        JudgeRequest(
            judge="pairwise",
            prompt_version=PAIRWISE_PROMPT_VERSION,
            instructions=instructions,
            prompt=pairwise_prompt(first, second),
            verdict_type=PairwiseVerdict,
            sample=sample,
        )
        for first, second in ((a, b), (b, a))
    ]
    answers = await asyncio.gather(*(session.judge(r) for r in requests))
    failed = [x for x in answers if isinstance(x, JudgeFailure)]
    if failed:
        return PairOutcome(None, error=failed[0].reason)
    got = [x for x in answers if isinstance(x, JudgeVerdict)]
    a_first, b_first = (str(v.output["better"]) for v in got)
    return PairOutcome(
        _outcome(a_first, b_first),
        a_first=a_first,
        b_first=b_first,
        reasons=(str(got[0].output["reasoning"]), str(got[1].output["reasoning"])),
        calls=tuple({"usage": v.usage, "cached": v.cached} for v in got),
    )
