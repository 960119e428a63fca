"""Tier 2: LLM judges of review quality and planning (pydantic-ai, structured output).

- ``technical_accuracy`` (sees the paper excerpt and the review):
  ``(.5·factual_correctness + .3·methodology_understanding + .2·domain_knowledge) / 5``;
- ``constructiveness`` (sees the review):
  ``(actionable_feedback + balanced_critique + improvement_guidance) / 15``;
- ``planning_rationality`` (sees the trace's steps):
  ``(.3·logical_flow + .5·decision_quality + .2·resource_efficiency) / 5``;
- ``planning_rational``: the review composite's name for ``planning_rationality`` — the same
  judge and the same verdict (a second metric instance reuses it, it is not a second call).

Each criterion is an integer 1–5 returned by the judge model as structured output; the value is
``Σ wᵢ·cᵢ / (5·Σ wᵢ)`` (the formulas above with their default weights; ``criteria_weights``
changes them), so it lies in [0.2, 1]. ``details`` holds the criteria, the weights, the
judge's rationale, the model, the prompt version, the token usage and cost of the call, and
whether the verdict came from the cache.

No judge configured (``model`` unset) → None with the reason "no judge configured"; a judge
that fails (timeout, HTTP error after retries, invalid output after retries, budget
exhausted) → None with the reason. Only with ``fallback="heuristic"`` is a heuristic computed
instead, and it is labelled so in ``details["method"]`` and in the reason — never presented as
a judge's score.

Options are the fields of :class:`~agentgauge.judges.settings.JudgeSettings` (a suite's
``[judge]`` table sets them for every judge metric at once) plus ``criteria_weights``.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from agentgauge.judges.budget import JudgeSpend
from agentgauge.judges.client import (
    JudgeFailure,
    JudgeRequest,
    JudgeSession,
    JudgeVerdict,
    run_sync,
)
from agentgauge.judges.prompts import PLANNING_RATIONALITY, JudgeSpec, planning_prompt
from agentgauge.judges.settings import JudgeSettings
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.metrics.text import review_text
from agentgauge.model import StepKind, Trace
from agentgauge.review.prompts import (
    CONSTRUCTIVENESS,
    TECHNICAL_ACCURACY,
    constructiveness_prompt,
    paper_text,
    technical_accuracy_prompt,
)

__all__ = [
    "JUDGE_METRICS",
    "Constructiveness",
    "PlanningRationality",
    "TechnicalAccuracy",
    "judge_score",
]

JUDGE_METRICS = frozenset(
    {"technical_accuracy", "constructiveness", "planning_rationality", "planning_rational"}
)
"""The metrics that take :class:`JudgeSettings` options (a suite's ``[judge]`` table)."""

_NO_REVIEW = "no generated review in trace.output (a string, or a dict with a 'review' string)"
_NO_PAPER = (
    "no paper text in trace.task.input (title, abstract, excerpt) to check the review against"
)


def _review(trace: Trace) -> str | None:
    """The generated review (``metrics.text``'s convention); a blank one counts as none."""
    review = review_text(trace)
    return review if review and review.strip() else None


def judge_score(criteria: dict[str, int], weights: dict[str, float]) -> float:
    """The weighted criteria on the unit scale: ``Σ wᵢ·cᵢ / (5·Σ wᵢ)``.

    Args:
        criteria: criterion -> score on 1–5.
        weights: criterion -> non-negative weight, at least one positive.
    """
    total = sum(weights.values())
    return sum(weights[name] * criteria[name] for name in weights) / (5.0 * total)


def _checked_weights(spec: JudgeSpec, weights: dict[str, float] | None) -> dict[str, float]:
    if weights is None:
        return dict(spec.weights)
    if set(weights) != set(spec.weights):
        raise ValueError(
            f"criteria_weights must name exactly {sorted(spec.weights)}, got {sorted(weights)}"
        )
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError("criteria_weights must be non-negative with a positive sum")
    return {name: float(weights[name]) for name in spec.weights}


class _JudgeMetric:
    """A Tier 2 judge; subclasses name their :class:`JudgeSpec`."""

    name: str
    spec: ClassVar[JudgeSpec]

    def __init__(self, **options: Any) -> None:
        weights = options.pop("criteria_weights", None)
        self.settings = JudgeSettings(**options)
        self.weights = _checked_weights(self.spec, weights)
        self._spend = JudgeSpend()

    def _prepare(self, trace: Trace) -> tuple[JudgeRequest, dict[str, Any]] | str:
        """The judge call for ``trace`` and what it shows, or the reason it cannot be made."""
        raise NotImplementedError

    def _heuristic(self, trace: Trace) -> MetricResult:
        raise NotImplementedError

    def _request(self, prompt: str) -> JudgeRequest:
        return JudgeRequest(
            judge=self.spec.name,
            prompt_version=self.spec.prompt_version,
            instructions=self.spec.instructions,
            prompt=prompt,
            verdict_type=self.spec.verdict_type,
        )

    def score(self, trace: Trace) -> MetricResult:
        """Judge one trace (see :meth:`score_batch`).

        Args:
            trace: the trace.
        """
        return self.score_batch([trace])[0]

    def score_batch(self, traces: Sequence[Trace]) -> list[MetricResult]:
        """Judge every trace, with up to ``concurrency`` calls at once.

        Args:
            traces: the traces.
        """
        return run_sync(self._score_all(traces))

    async def _score_all(self, traces: Sequence[Trace]) -> list[MetricResult]:
        prepared = [self._prepare(t) for t in traces]
        if self.settings.model is None and self.settings.fallback is None:
            # the first reason is the one that would remain with the inputs fixed
            return [
                MetricResult.missing(
                    "no judge configured" + (f" (and {item})" if isinstance(item, str) else ""),
                    method="llm_judge",
                )
                for item in prepared
            ]
        outcomes = iter(await self._judge_all([p[0] for p in prepared if not isinstance(p, str)]))
        return [
            MetricResult.missing(item, method="llm_judge")
            if isinstance(item, str)
            else self._result(trace, item[1], next(outcomes))
            for trace, item in zip(traces, prepared, strict=True)
        ]

    async def _judge_all(self, requests: list[JudgeRequest]) -> list[JudgeVerdict | JudgeFailure]:
        if self.settings.model is None:
            return [JudgeFailure("no judge configured") for _ in requests]
        async with JudgeSession(self.settings, self._spend) as session:
            return list(await asyncio.gather(*(session.judge(r) for r in requests)))

    def _result(
        self, trace: Trace, shown: dict[str, Any], outcome: JudgeVerdict | JudgeFailure
    ) -> MetricResult:
        if isinstance(outcome, JudgeFailure):
            if self.settings.fallback == "heuristic":
                fallback = self._heuristic(trace)
                return MetricResult(
                    value=fallback.value,
                    details={
                        **fallback.details,
                        "method": "heuristic",
                        "judge_unavailable": outcome.reason,
                    },
                    reason=f"heuristic fallback, not an LLM judgement ({outcome.reason})"
                    + (f"; {fallback.reason}" if fallback.reason else ""),
                )
            return MetricResult.missing(
                outcome.reason, method="llm_judge", model=self.settings.model_id
            )
        criteria = {name: int(outcome.output[name]) for name in self.spec.weights}
        return MetricResult(
            value=judge_score(criteria, self.weights),
            details={
                "method": "llm_judge",
                "model": self.settings.model_id,
                "prompt_version": self.spec.prompt_version,
                "criteria": criteria,
                "weights": self.weights,
                "rationale": outcome.output.get("rationale", ""),
                "usage": outcome.usage,
                "cached": outcome.cached,
                **shown,
            },
        )


def _judge_signature() -> inspect.Signature:
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(name, kw, default=field.default, annotation=field.annotation)
        for name, field in JudgeSettings.model_fields.items()
    ]
    params.append(
        inspect.Parameter("criteria_weights", kw, default=None, annotation=dict[str, float] | None)
    )
    return inspect.Signature(params)


# The registry reads a metric's options from its constructor's signature; the judges' options
# are JudgeSettings' fields, so the signature is derived from them instead of repeated.
setattr(_JudgeMetric.__init__, "__signature__", _judge_signature())  # noqa: B010


_WORD = re.compile(r"[a-z][a-z0-9\-]{3,}")


def _content_terms(text: str) -> set[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOP_WORDS}


@metric(
    "technical_accuracy",
    description="Tier 2 LLM judge: factual correctness, methodology, domain knowledge (.5/.3/.2)",
)
class TechnicalAccuracy(_JudgeMetric):
    """The review's technical accuracy against the paper, judged by an LLM."""

    spec = TECHNICAL_ACCURACY

    def _prepare(self, trace: Trace) -> tuple[JudgeRequest, dict[str, Any]] | str:
        review, paper = _review(trace), paper_text(trace)
        if review is None:
            return _NO_REVIEW
        if paper is None:
            return _NO_PAPER
        prompt = technical_accuracy_prompt(paper, review, excerpt_chars=self.settings.excerpt_chars)
        shown = min(len(paper), self.settings.excerpt_chars)
        return self._request(prompt), {"paper_chars": len(paper), "paper_chars_shown": shown}

    def _heuristic(self, trace: Trace) -> MetricResult:
        """Term grounding: the share of the review's content words found in the paper text."""
        review, paper = _review(trace), paper_text(trace)
        if review is None or paper is None:
            return MetricResult.missing(_NO_REVIEW if review is None else _NO_PAPER)
        terms = _content_terms(review)
        if not terms:
            return MetricResult.missing("the review has no content words")
        grounded = terms & _content_terms(paper)
        return MetricResult(
            value=len(grounded) / len(terms),
            details={"heuristic": "term_grounding", "terms": len(terms), "grounded": len(grounded)},
        )


_SUGGESTION = re.compile(
    r"\b(should|could|suggest\w*|recommend\w*|consider\w*|would benefit|would be better|"
    r"it would be|please)\b",
    re.IGNORECASE,
)
_STRENGTH = re.compile(
    r"\b(strengths?|strong|well[- ]written|clear|novel|interesting|convincing|solid)\b",
    re.IGNORECASE,
)
_WEAKNESS = re.compile(
    r"\b(weakness\w*|weak|unclear|missing|lacks?|lacking|limited|concerns?|not convincing)\b",
    re.IGNORECASE,
)
_POINTER = re.compile(
    r"\b(section|table|figure|fig\.|equation|experiment\w*|baseline\w*|ablation\w*|"
    r"compare|comparison|clarify|add|include|report)\b",
    re.IGNORECASE,
)
_MARKERS_FOR_FULL_CREDIT = 3


@metric(
    "constructiveness",
    description="Tier 2 LLM judge: actionable, balanced, guiding feedback (sum / 15)",
)
class Constructiveness(_JudgeMetric):
    """How constructive the review is, judged by an LLM."""

    spec = CONSTRUCTIVENESS

    def _prepare(self, trace: Trace) -> tuple[JudgeRequest, dict[str, Any]] | str:
        review = _review(trace)
        if review is None:
            return _NO_REVIEW
        return self._request(constructiveness_prompt(review)), {"review_chars": len(review)}

    def _heuristic(self, trace: Trace) -> MetricResult:
        """Marker counts: suggestions, strengths and weaknesses both named, concrete pointers.

        actionable = min(1, suggestion phrases / 3); balanced = 1 when both strength and
        weakness words occur, 0.5 when one kind does, else 0; guidance = min(1, pointers to
        sections, tables, experiments, baselines... / 3); value = their mean.
        """
        review = _review(trace)
        if review is None:
            return MetricResult.missing(_NO_REVIEW)
        suggestions = len(_SUGGESTION.findall(review))
        pointers = len(_POINTER.findall(review))
        sides = bool(_STRENGTH.search(review)) + bool(_WEAKNESS.search(review))
        parts = {
            "actionable": min(1.0, suggestions / _MARKERS_FOR_FULL_CREDIT),
            "balanced": sides / 2,
            "guidance": min(1.0, pointers / _MARKERS_FOR_FULL_CREDIT),
        }
        return MetricResult(
            value=sum(parts.values()) / 3,
            details={"heuristic": "review_markers", "parts": parts},
        )


@metric(
    "planning_rationality",
    description="Tier 2 LLM judge of the trace's steps: flow, decisions, efficiency (.3/.5/.2)",
)
class PlanningRationality(_JudgeMetric):
    """The rationality of the agent's plan, judged by an LLM from the trace's actual steps."""

    spec = PLANNING_RATIONALITY

    def _prepare(self, trace: Trace) -> tuple[JudgeRequest, dict[str, Any]] | str:
        if not trace.steps:
            return "the trace has no steps to judge"
        prompt = planning_prompt(trace, budget_chars=self.settings.trace_budget_chars)
        return self._request(prompt), {"steps": len(trace.steps)}

    def _heuristic(self, trace: Trace) -> MetricResult:
        """Error-free and non-redundant execution.

        error_free = 1 − (steps with an error or of kind ``error``) / steps; non_redundant =
        distinct (tool, arguments) calls / tool calls (1.0 without tool calls); value = mean.
        """
        if not trace.steps:
            return MetricResult.missing("the trace has no steps")
        errors = sum(1 for s in trace.steps if s.error or s.kind is StepKind.error)
        calls = [(c.name, repr(sorted(c.arguments.items()))) for c in trace.tool_calls]
        parts = {
            "error_free": 1.0 - errors / len(trace.steps),
            "non_redundant": len(set(calls)) / len(calls) if calls else 1.0,
        }
        return MetricResult(
            value=sum(parts.values()) / 2,
            details={"heuristic": "execution_hygiene", "parts": parts},
        )


metric(
    "planning_rational",
    description="The review composite's planning score: the planning_rationality judge",
)(PlanningRationality)
