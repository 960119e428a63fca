"""A judge written in one sentence: the ``rubric`` metric's scale, prompts and verdict.

A rubric has **criteria** (what a good result is, in the user's words), **evaluation steps**
(how to check them; when none are given, the judge writes them once from the criteria, as
G-Eval does, and they are cached), a **scale** (``LOW-HIGH`` integers such as ``1-5``, or
``pass/fail``) and the **inputs** it sees (:data:`~agentgauge.judges.render.JUDGE_INPUTS`).

Its verdict is the judge's reasoning followed by its score (an integer on the scale) or its
pass/fail decision. The value is the score on the unit scale, ``(score − LOW) / (HIGH − LOW)``,
or 1.0 for pass and 0.0 for fail.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, create_model

from agentgauge.judges.prompts import DATA_ONLY, SHORTENED_NOTE, Verdict
from agentgauge.judges.render import JUDGE_INPUTS, section

__all__ = [
    "INPUT_NAMES",
    "RUBRIC_PROMPT_VERSION",
    "STEPS_PROMPT_VERSION",
    "EvaluationSteps",
    "RubricScale",
    "check_inputs",
    "rubric_instructions",
    "steps_instructions",
    "steps_prompt",
]

RUBRIC_PROMPT_VERSION = "rubric/1"
STEPS_PROMPT_VERSION = "rubric_steps/1"

INPUT_NAMES = {
    "input": "the task",
    "steps": "the agent's steps",
    "tool_calls": "the agent's tool calls and their results",
    "output": "the agent's final output",
    "expected_output": "the expected output",
    "reference": "the reference",
}
"""How the instructions name each input the judge sees."""

_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
_MAX_POINTS = 100
REASONING = "Two to four sentences following the evaluation steps, written before the verdict."


@dataclass(frozen=True)
class RubricScale:
    """A rubric's scale: integers from ``low`` to ``high``, or pass/fail (both None).

    Args:
        low: the lowest score.
        high: the highest score.
    """

    low: int | None = None
    high: int | None = None

    @classmethod
    def parse(cls, text: str) -> RubricScale:
        """The scale written as ``"LOW-HIGH"`` (``"1-5"``, ``"0-10"``) or ``"pass/fail"``.

        Args:
            text: the scale option.

        Raises:
            ValueError: naming the accepted forms.
        """
        if text.strip().lower() == "pass/fail":
            return cls()
        match = _RANGE.match(text)
        if match is None or not int(match[1]) < int(match[2]) <= int(match[1]) + _MAX_POINTS:
            raise ValueError(
                f"scale must be 'LOW-HIGH' with LOW < HIGH (e.g. '1-5', '0-10') or 'pass/fail', "
                f"got {text!r}"
            )
        return cls(int(match[1]), int(match[2]))

    @property
    def label(self) -> str:
        """The scale as written in results: ``"1-5"`` or ``"pass/fail"``."""
        return "pass/fail" if self.low is None else f"{self.low}-{self.high}"

    @property
    def verdict_type(self) -> type[BaseModel]:
        """The structured output the judge must return on this scale."""
        return _verdict_type(self.low, self.high)

    def value(self, output: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """The unit-scale value of a verdict and what it said.

        Args:
            output: the verdict's fields.
        """
        if self.low is None or self.high is None:
            passed = bool(output["passed"])
            return (1.0 if passed else 0.0), {"verdict": "pass" if passed else "fail"}
        score = int(output["score"])
        return (score - self.low) / (self.high - self.low), {"score": score}

    def asks(self) -> str:
        """The sentence of the instructions that says how to answer."""
        if self.low is None:
            return "Then decide: passed is true when the criteria are met, false when they are not."
        return (
            f"Then give the score: an integer from {self.low} (the criteria are not met at all) "
            f"to {self.high} (fully met)."
        )


@functools.cache
def _verdict_type(low: int | None, high: int | None) -> type[BaseModel]:
    reasoning: Any = (str, Field(description=REASONING))
    if low is None or high is None:
        passed: Any = (bool, Field(description="True when the criteria are met."))
        return create_model("RubricPassFail", __base__=Verdict, reasoning=reasoning, passed=passed)
    described = f"An integer from {low} (not met) to {high} (fully met)."
    score: Any = (int, Field(ge=low, le=high, description=described))
    return create_model("RubricScore", __base__=Verdict, reasoning=reasoning, score=score)


class EvaluationSteps(BaseModel):
    """The evaluation steps a judge writes from a rubric's criteria."""

    steps: list[str] = Field(
        min_length=1,
        max_length=12,
        description="Three to six concise, checkable evaluation steps, one sentence each.",
    )


def check_inputs(inputs: Sequence[str]) -> list[str]:
    """The inputs, checked: at least one, each a name from ``JUDGE_INPUTS``, no repeats.

    Args:
        inputs: the rubric's ``inputs`` option.

    Raises:
        ValueError: naming the offending input and the accepted names.
    """
    names = list(inputs)
    if not names:
        raise ValueError(f"inputs must name at least one of {list(JUDGE_INPUTS)}")
    for name in names:
        if name not in JUDGE_INPUTS:
            raise ValueError(f"unknown input {name!r}; choose from {list(JUDGE_INPUTS)}")
    if len(set(names)) < len(names):
        raise ValueError(f"inputs name an input twice: {names}")
    return names


def _seen(inputs: Sequence[str]) -> str:
    names = [INPUT_NAMES[name] for name in JUDGE_INPUTS if name in inputs]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def steps_instructions() -> str:
    """The instructions of the call that writes a rubric's evaluation steps."""
    return (
        "You write the evaluation steps an evaluator will follow to judge an AI agent's work "
        "against the criteria given in the <criteria> section. Write three to six concise steps, "
        "one sentence each, that say what to look at in the material the evaluator sees and how "
        "to decide. Do not score anything yourself.\n" + DATA_ONLY
    )


def steps_prompt(criteria: str, scale: RubricScale, inputs: Sequence[str]) -> str:
    """The user prompt of the call that writes a rubric's evaluation steps.

    Args:
        criteria: the rubric's criteria.
        scale: its scale.
        inputs: what the evaluator will see.
    """
    return "\n\n".join(
        [
            section("criteria", criteria),
            section("scale", scale.label),
            section("evaluator_sees", _seen(inputs)),
        ]
    )


def rubric_instructions(
    criteria: str, steps: Sequence[str], scale: RubricScale, inputs: Sequence[str]
) -> str:
    """The instructions of a rubric's judge.

    Args:
        criteria: the criteria.
        steps: the evaluation steps.
        scale: the scale.
        inputs: what the judge sees.
    """
    numbered = "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))
    return (
        "You evaluate an AI agent's work against the criteria below. The message holds "
        f"{_seen(inputs)}, each in its own tagged section.\n\n"
        f"Criteria:\n{criteria}\n\n"
        f"Evaluation steps:\n{numbered}\n\n"
        "Follow the evaluation steps and write your reasoning first. "
        + scale.asks()
        + "\n"
        + SHORTENED_NOTE
        + "\n"
        + DATA_ONLY
    )
