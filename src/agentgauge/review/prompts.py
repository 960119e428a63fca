"""What the review-quality judges are asked, and what they must answer.

- ``technical_accuracy`` sees the paper (title, abstract and parsed text from
  ``trace.task.input``, cut to ``excerpt_chars``) and the generated review;
- ``constructiveness`` sees the review only.

Both follow the shape every judge shares (:mod:`agentgauge.judges.prompts`): integer criteria
on a 1–5 scale plus a rationale written before the scores, inputs in tagged sections declared
as data.
"""

from __future__ import annotations

from pydantic import Field

from agentgauge.judges.prompts import DATA_NOTE, RATIONALE, SCALE, JudgeSpec, Verdict
from agentgauge.judges.render import section
from agentgauge.model import Trace

__all__ = [
    "CONSTRUCTIVENESS",
    "TECHNICAL_ACCURACY",
    "ConstructivenessVerdict",
    "TechnicalAccuracyVerdict",
    "constructiveness_prompt",
    "paper_text",
    "technical_accuracy_prompt",
]


class TechnicalAccuracyVerdict(Verdict):
    """The technical-accuracy judge's answer."""

    rationale: str = Field(description=RATIONALE)
    factual_correctness: int = Field(
        ge=1, le=5, description=f"Claims supported by the paper's content; {SCALE}."
    )
    methodology_understanding: int = Field(
        ge=1, le=5, description=f"Proper grasp of the experimental approach; {SCALE}."
    )
    domain_knowledge: int = Field(
        ge=1, le=5, description=f"Appropriate use of technical terminology; {SCALE}."
    )


class ConstructivenessVerdict(Verdict):
    """The constructiveness judge's answer."""

    rationale: str = Field(description=RATIONALE)
    actionable_feedback: int = Field(
        ge=1, le=5, description=f"Specific, implementable improvement suggestions; {SCALE}."
    )
    balanced_critique: int = Field(
        ge=1, le=5, description=f"Both strengths and weaknesses addressed; {SCALE}."
    )
    improvement_guidance: int = Field(
        ge=1, le=5, description=f"Clear next steps for the authors; {SCALE}."
    )


TECHNICAL_ACCURACY = JudgeSpec(
    name="technical_accuracy",
    verdict_type=TechnicalAccuracyVerdict,
    weights={
        "factual_correctness": 0.5,
        "methodology_understanding": 0.3,
        "domain_knowledge": 0.2,
    },
    instructions=(
        "You assess the technical accuracy of a peer review of a scientific paper.\n"
        "- factual_correctness: are the review's claims supported by the paper's content?\n"
        "- methodology_understanding: does the reviewer grasp the experimental approach?\n"
        "- domain_knowledge: is the technical terminology used appropriately?\n"
        "The paper may be an excerpt (its attributes say so): do not penalise the review for "
        "discussing parts that are not shown, only for claims the shown text contradicts.\n"
        + DATA_NOTE
    ),
    prompt_version="technical_accuracy/1",
)
"""``(.5·factual_correctness + .3·methodology_understanding + .2·domain_knowledge) / 5``."""

CONSTRUCTIVENESS = JudgeSpec(
    name="constructiveness",
    verdict_type=ConstructivenessVerdict,
    weights={"actionable_feedback": 1.0, "balanced_critique": 1.0, "improvement_guidance": 1.0},
    instructions=(
        "You assess how constructive a peer review of a scientific paper is.\n"
        "- actionable_feedback: does it give specific, implementable suggestions?\n"
        "- balanced_critique: does it address both strengths and weaknesses?\n"
        "- improvement_guidance: does it give the authors clear next steps?\n" + DATA_NOTE
    ),
    prompt_version="constructiveness/1",
)
"""``(actionable_feedback + balanced_critique + improvement_guidance) / 15``."""


def paper_text(trace: Trace) -> str | None:
    """The paper as the task carries it: title, abstract and parsed text, or a plain string.

    Args:
        trace: a trace whose ``task.input`` is ``{"title", "abstract", "excerpt", ...}`` (the
            PeerRead task) or the paper as one string.
    """
    source = trace.task.input
    if isinstance(source, str):
        return source if source.strip() else None
    if not isinstance(source, dict):
        return None
    parts = []
    for key, label in (("title", "Title: "), ("abstract", "Abstract: "), ("excerpt", "")):
        value = source.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(label + value.strip())
    return "\n\n".join(parts) or None


def technical_accuracy_prompt(paper: str, review: str, *, excerpt_chars: int) -> str:
    """The user prompt of the technical-accuracy judge.

    Args:
        paper: the paper's text.
        review: the review to judge.
        excerpt_chars: how many characters of the paper are shown.
    """
    shown = paper[:excerpt_chars]
    paper_attrs = {"shown_chars": len(shown), "total_chars": len(paper)}
    return (
        section("paper", shown, excerpt=str(len(shown) < len(paper)).lower(), **paper_attrs)
        + "\n\n"
        + section("review", review)
    )


def constructiveness_prompt(review: str) -> str:
    """The user prompt of the constructiveness judge.

    Args:
        review: the review to judge.
    """
    return section("review", review)
