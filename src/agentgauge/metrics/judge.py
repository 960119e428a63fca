"""LLM-judge metrics (pydantic-ai, structured output) and the Tier 2 judges of review quality
and planning.

:class:`JudgeMetric` is what every judge metric shares: the calls go through
:class:`~agentgauge.judges.client.JudgeSession` (concurrent, retried, cached in the results
store's file, within a budget), a judge that cannot answer leaves the metric None with the
reason, and ``details`` hold the model, the prompt version, the token usage and cost of the
call and whether the verdict came from the cache. The agent judges (``rubric``,
``goal_accuracy``, ``trajectory_judge``) are in :mod:`agentgauge.metrics.agent_judges`.

The Tier 2 judges:

- ``technical_accuracy`` (sees the paper excerpt and the review):
  ``(.5·factual_correctness + .3·methodology_understanding + .2·domain_knowledge) / 5``;
- ``constructiveness`` (sees the review):
  ``(actionable_feedback + balanced_critique + improvement_guidance) / 15``;
- ``planning_judge`` (sees the trace's steps), the review composite's planning component:
  ``(.3·logical_flow + .5·decision_quality + .2·resource_efficiency) / 5``. Its former names
  ``planning_rationality`` and ``planning_rational`` are still accepted (with a deprecation
  warning in suite files and ``--weights``), and runs stored under them still display.

Each criterion is an integer 1–5 returned by the judge model as structured output; the value is
``Σ wᵢ·cᵢ / (5·Σ wᵢ)`` (the formulas above with their default weights; ``criteria_weights``
changes them), so it lies in [0.2, 1]. ``details`` also hold the criteria, the weights and the
judge's rationale.

No judge configured (``model`` unset) → None with the reason "no judge configured"; a judge
that fails (timeout, HTTP error after retries, invalid output after retries, budget
exhausted) → None with the reason. Only with ``fallback="heuristic"`` is a heuristic computed
instead, and it is labelled so in ``details["method"]`` and in the reason — never presented as
a judge's score.

Options are the fields of :class:`~agentgauge.judges.settings.JudgeSettings` (a suite's
``[judge]`` table sets them for every judge metric at once) plus each judge's own
(``criteria_weights`` here).
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Sequence
from typing import Any

from agentgauge._stop_words import english_stop_words
from agentgauge.judges.budget import JudgeSpend
from agentgauge.judges.client import (
    TRAIL,
    JudgeFailure,
    JudgeRequest,
    JudgeSession,
    JudgeVerdict,
    run_sync,
)
from agentgauge.judges.explore import (
    EXPLORE_NOTE,
    WINDOW_NOTE,
    TraceExplorer,
    WindowFindings,
    explored_verdict,
    findings_note,
    trace_fingerprint,
    windows,
)
from agentgauge.judges.noise import Aggregate, combine
from agentgauge.judges.preflight import check_judge
from agentgauge.judges.prompts import PLANNING_RATIONALITY, JudgeSpec, planning_prompt
from agentgauge.judges.render import CHARS_PER_TOKEN
from agentgauge.judges.settings import JudgeSettings
from agentgauge.judges.views import (
    FindingsView,
    OverviewView,
    ShortenedView,
    WindowView,
    steps_view,
)
from agentgauge.metrics._catalog import JUDGE_METRICS
from agentgauge.metrics.base import METRICS, MetricResult, metric
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
    "JudgeMetric",
    "PlanningRationality",
    "TechnicalAccuracy",
    "judge_score",
    "score_with_issues",
]


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


def score_with_issues(output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
    """A verdict of a 1–5 ``score`` with its ``issues`` and ``reasoning``: the value
    ``(score − 1) / 4``, the details and the reason.

    Args:
        output: the verdict.
    """
    score = int(output["score"])
    details = {"score": score, "scale": "1-5", "issues": list(output.get("issues", []))}
    return (score - 1) / 4, details, str(output.get("reasoning", "")) or None


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


class JudgeMetric:
    """A metric answered by an LLM judge: pydantic-ai structured output, cached, budgeted,
    retried, its cost recorded.

    A subclass sets ``spec`` (its verdict model, instructions and prompt version), takes its
    own options as the keyword-only parameters of ``_configure`` (the registry reads them, with
    :class:`JudgeSettings`' fields, from the constructor's signature), and implements
    ``_prepare`` (the prompt for a trace and what it shows, or why the trace cannot be judged)
    and ``_score`` (the value of a verdict, its details and an optional reason).
    """

    name: str
    spec: JudgeSpec
    aggregate: Aggregate = "mean"
    """How repeated answers combine: their mean (ordinal judges) or majority (pass/fail)."""

    def __init__(self, **options: Any) -> None:
        own = {name: options.pop(name) for name in _own_options(type(self)) if name in options}
        self.settings = JudgeSettings(**options)
        self._spend = JudgeSpend()
        self._configure(**own)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

        def init(self: JudgeMetric, **options: Any) -> None:
            JudgeMetric.__init__(self, **options)

        # The registry reads a metric's options from its constructor's signature: the judge's
        # settings and the subclass's own options, derived here instead of repeated.
        setattr(init, "__signature__", _judge_signature(cls))  # noqa: B010
        setattr(cls, "__init__", init)  # noqa: B010

    def _configure(self) -> None:
        """Take the subclass's own options (keyword-only parameters with defaults)."""

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        """The prompt for ``trace`` and what it shows, or the reason it cannot be judged."""
        raise NotImplementedError

    def _score(self, output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
        """The value of a verdict, its details and the reason shown with it."""
        raise NotImplementedError

    def _heuristic(self, trace: Trace) -> MetricResult | None:
        """A labelled heuristic for ``fallback="heuristic"``; None when the judge has none."""
        return None

    async def _setup(self, session: JudgeSession) -> str | None:
        """Work done once before the batch's calls; the reason it failed, or None."""
        return None

    def _setup_details(self) -> dict[str, Any]:
        """Details of the set-up work not yet reported, for the batch's first sample."""
        return {}

    def instructions(self) -> str:
        """The system instructions of this judge's calls."""
        return self.spec.instructions

    def prepare(self) -> list[dict[str, Any]]:
        """Find the endpoint's output mode now, once for the run (``output_mode = "auto"``),
        so that every worker process reads it from the cache; the record says which mode the
        run uses (none when the mode is configured or no judge is).
        """
        if self.settings.model is None or self.settings.output_mode != "auto":
            return []

        async def probe() -> str | JudgeFailure:
            async with JudgeSession(self.settings, self._spend) as session:
                return await session.output_mode()

        found = run_sync(probe())
        failed = isinstance(found, JudgeFailure)
        return [
            {
                "metric": self.name,
                "purpose": "output mode",
                "model": self.settings.model_id,
                "mode": None if failed else found,
                "error": found.reason if isinstance(found, JudgeFailure) else None,
            }
        ]

    @property
    def unjudged(self) -> bool:
        """Whether this metric can give no value at all: no judge model and no fallback."""
        return self.settings.model is None and self.settings.fallback is None

    def preflight(self) -> None:
        """Check the judge's set-up before a run, without calling it.

        Raises:
            JudgeSetupError: naming the environment variable or option to set.
        """
        check_judge(self.settings)

    def view(self, trace: Trace) -> tuple[str, str] | str:
        """What the judge is sent for ``trace`` — ``(instructions, prompt)`` — or why the trace
        cannot be judged; no call is made.

        Args:
            trace: the trace.
        """
        prepared = self._prepare(trace)
        return prepared if isinstance(prepared, str) else (self.instructions(), prepared[0])

    def _request(self, prompt: str, sample: int = 0) -> JudgeRequest:
        return JudgeRequest(
            judge=self.spec.name,
            prompt_version=self.spec.prompt_version,
            instructions=self.instructions(),
            prompt=prompt,
            verdict_type=self.spec.verdict_type,
            sample=sample,
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

    def _prepare_long(self, trace: Trace) -> tuple[tuple[str, dict[str, Any]] | str, bool]:
        """The prompt for ``trace`` and whether its steps had to be shortened to fit."""
        with steps_view(ShortenedView()) as view:
            prepared = self._prepare(trace)
        assert isinstance(view, ShortenedView)
        return prepared, view.shortened

    async def _score_all(self, traces: Sequence[Trace]) -> list[MetricResult]:
        prepared = [self._prepare_long(t) for t in traces]
        if self.settings.model is None and self.settings.fallback is None:
            # the first reason is the one that would remain with the inputs fixed
            return [
                MetricResult.missing(
                    "no judge configured" + (f" (and {item})" if isinstance(item, str) else ""),
                    method="llm_judge",
                )
                for item, _ in prepared
            ]
        jobs = [
            (trace, item[0], long and self.settings.long_traces != "truncate")
            for trace, (item, long) in zip(traces, prepared, strict=True)
            if not isinstance(item, str)
        ]
        answers, mode = await self._judge_all(jobs)
        outcomes = iter(answers)
        results = [
            MetricResult.missing(item, method="llm_judge")
            if isinstance(item, str)
            else self._result(trace, item[1], next(outcomes), mode)
            for trace, (item, _) in zip(traces, prepared, strict=True)
        ]
        if results and (extra := self._setup_details()):
            results[0].details.update(extra)
        return results

    async def _judge_all(
        self, jobs: list[tuple[Trace, str, bool]]
    ) -> tuple[list[list[JudgeVerdict | JudgeFailure]], str | None]:
        """Each job's answers (``samples`` of them) and the output mode they came in; a job is
        a trace, its prompt, and whether its steps are too long to show whole."""
        k = self.settings.samples
        if self.settings.model is None:
            return [[JudgeFailure("no judge configured")] for _ in jobs], None
        async with JudgeSession(self.settings, self._spend) as session:
            if jobs and (problem := await self._setup(session)) is not None:
                return [[JudgeFailure(problem)] for _ in jobs], session.mode
            calls = [
                self._judge_one(session, trace, prompt, long, i)
                for trace, prompt, long in jobs
                for i in range(k)
            ]
            flat = list(await asyncio.gather(*calls))
            return [flat[j : j + k] for j in range(0, len(flat), k)], session.mode

    async def _judge_one(
        self, session: JudgeSession, trace: Trace, prompt: str, long: bool, sample: int
    ) -> JudgeVerdict | JudgeFailure:
        if not long:
            return await session.judge(self._request(prompt, sample))
        mode = await session.output_mode()
        if isinstance(mode, JudgeFailure):
            return mode
        if self.settings.long_traces == "tools" and mode != "prompted":
            return await session.judge(self._explore_request(trace, sample))
        # in windows: asked for, or the endpoint cannot call the exploring tools
        return await self._judge_in_windows(session, trace, sample)

    def _explore_request(self, trace: Trace, sample: int) -> JudgeRequest:
        cap = self.settings.max_tool_calls
        with steps_view(OverviewView(cap)):
            prepared = self._prepare(trace)
        assert not isinstance(prepared, str)
        return JudgeRequest(
            judge=self.spec.name,
            prompt_version=self.spec.prompt_version + "+explore/1",
            instructions=self.instructions() + "\n" + EXPLORE_NOTE,
            prompt=prepared[0],
            verdict_type=explored_verdict(self.spec.verdict_type),
            sample=sample,
            toolset=TraceExplorer(trace, cap).toolset(),
            context=trace_fingerprint(trace),
            # each tool call is a request; the answer and its repairs come on top
            max_requests=cap + 2 + self.settings.output_retries,
        )

    async def _judge_in_windows(
        self, session: JudgeSession, trace: Trace, sample: int
    ) -> JudgeVerdict | JudgeFailure:
        budget = CHARS_PER_TOKEN * self.settings.trace_budget_tokens * 3 // 5
        spans = windows(trace.steps, budget)
        requests = []
        for start, end in spans:
            with steps_view(WindowView(start, end, len(trace.steps))):
                prepared = self._prepare(trace)
            assert not isinstance(prepared, str)
            requests.append(
                JudgeRequest(
                    judge=self.spec.name + "_window",
                    prompt_version=self.spec.prompt_version + "+window/1",
                    instructions=self.instructions() + "\n" + WINDOW_NOTE,
                    prompt=prepared[0],
                    verdict_type=WindowFindings,
                    sample=sample,
                )
            )
        found = await asyncio.gather(*(session.judge(r) for r in requests))
        for (start, end), outcome in zip(spans, found, strict=True):
            if isinstance(outcome, JudgeFailure):
                return JudgeFailure(
                    f"the judge could not read steps {start}-{end - 1} of the long trace: "
                    f"{outcome.reason}"
                )
        results = [o for o in found if isinstance(o, JudgeVerdict)]
        notes = findings_note([(w, r.output) for w, r in zip(spans, results, strict=True)])
        with steps_view(FindingsView(notes)):
            prepared = self._prepare(trace)
        assert not isinstance(prepared, str)
        final = await session.judge(self._request(prepared[0], sample))
        if isinstance(final, JudgeFailure):
            return final
        calls = [*results, final]
        live = [c.usage for c in calls if not c.cached]
        usage = {
            key: sum(u.get(key) or 0 for u in live)
            for key in ("input_tokens", "output_tokens", "cache_read_tokens", "requests")
        }
        costs = [u.get("cost_usd") for u in live]
        usage["cost_usd"] = None if None in costs else sum(c or 0.0 for c in costs)
        usage["cost_source"] = next((u.get("cost_source") for u in live), None)
        trail = {"strategy": "chunks", "windows": [list(w) for w in spans]}
        return JudgeVerdict({**final.output, TRAIL: trail}, usage, cached=not live)

    def _combined(
        self, details: dict[str, Any], value: float, interval: tuple[float, float]
    ) -> None:
        """Adjust the details of a repeated judgment to its combined value (in place)."""

    def _result(
        self,
        trace: Trace,
        shown: dict[str, Any],
        answers: list[JudgeVerdict | JudgeFailure],
        mode: str | None = None,
    ) -> MetricResult:
        answers = [_seen(a) for a in answers]
        verdicts = [a for a in answers if isinstance(a, JudgeVerdict)]
        if not verdicts:
            failure = next(a for a in answers if isinstance(a, JudgeFailure))
            return self._failed(trace, failure)
        scored = [self._score(v.output) for v in verdicts]
        value, details, reason = scored[0]
        explored = verdicts[0].output.get(TRAIL)
        common = {"method": "llm_judge", "model": self.settings.model_id}
        if mode is not None:
            common["output_mode"] = mode
        if explored is not None:
            common["explored"] = explored
        if len(answers) == 1:
            return MetricResult(
                value=value,
                details={
                    **common,
                    "prompt_version": self.spec.prompt_version,
                    **details,
                    "usage": verdicts[0].usage,
                    "cached": verdicts[0].cached,
                    **shown,
                },
                reason=reason,
            )
        values = [v for v, _, _ in scored]
        combined = combine(values, self.aggregate)
        failed = [a.reason for a in answers if isinstance(a, JudgeFailure)]
        details = {
            **common,
            "prompt_version": self.spec.prompt_version,
            **details,
            "judge_samples": {
                "k": len(answers),
                "aggregate": self.aggregate,
                "values": values,
                "sd": combined.sd,
                "interval": list(combined.interval),
                "answers": [
                    {k: v for k, v in verdict.output.items() if k != TRAIL} for verdict in verdicts
                ],
                "failed": failed,
                "calls": [{"usage": v.usage, "cached": v.cached} for v in verdicts],
            },
            "cached": all(v.cached for v in verdicts),
            **shown,
        }
        self._combined(details, combined.value, combined.interval)
        return MetricResult(value=combined.value, details=details, reason=reason)

    def _failed(self, trace: Trace, outcome: JudgeFailure) -> MetricResult:
        fallback = self._heuristic(trace) if self.settings.fallback == "heuristic" else None
        if fallback is not None:
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


def _seen(answer: JudgeVerdict | JudgeFailure) -> JudgeVerdict | JudgeFailure:
    """A verdict whose judge said it could not see what it needed, as the failure it is."""
    if isinstance(answer, JudgeVerdict) and answer.output.get("saw_enough") is False:
        said = answer.output.get("reasoning") or answer.output.get("rationale") or ""
        return JudgeFailure(
            "the judge could not see what it needed in the long trace"
            + (f" (it said: {said})" if said else "")
        )
    return answer


def _own_options(cls: type[JudgeMetric]) -> tuple[str, ...]:
    params = list(inspect.signature(cls._configure).parameters.values())[1:]
    return tuple(p.name for p in params)


def _judge_signature(cls: type[JudgeMetric]) -> inspect.Signature:
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(name, kw, default=field.default, annotation=field.annotation)
        for name, field in JudgeSettings.model_fields.items()
    ]
    params += list(inspect.signature(cls._configure).parameters.values())[1:]
    return inspect.Signature(params)


class _CriteriaJudge(JudgeMetric):
    """A judge scored on several 1–5 criteria, weighted (the Tier 2 judges)."""

    def _configure(self, *, criteria_weights: dict[str, float] | None = None) -> None:
        self.weights = _checked_weights(self.spec, criteria_weights)

    def _score(self, output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
        criteria = {name: int(output[name]) for name in self.spec.weights}
        details = {
            "criteria": criteria,
            "weights": self.weights,
            "rationale": output.get("rationale", ""),
        }
        return judge_score(criteria, self.weights), details, None


_WORD = re.compile(r"[a-z][a-z0-9\-]{3,}")


def _content_terms(text: str) -> set[str]:
    stop_words = english_stop_words()
    return {w for w in _WORD.findall(text.lower()) if w not in stop_words}


@metric(
    "technical_accuracy",
    description="Tier 2 LLM judge: factual correctness, methodology, domain knowledge (.5/.3/.2)",
)
class TechnicalAccuracy(_CriteriaJudge):
    """The review's technical accuracy against the paper, judged by an LLM."""

    spec = TECHNICAL_ACCURACY

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        review, paper = _review(trace), paper_text(trace)
        if review is None:
            return _NO_REVIEW
        if paper is None:
            return _NO_PAPER
        prompt = technical_accuracy_prompt(paper, review, excerpt_chars=self.settings.excerpt_chars)
        shown = min(len(paper), self.settings.excerpt_chars)
        return prompt, {"paper_chars": len(paper), "paper_chars_shown": shown}

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
class Constructiveness(_CriteriaJudge):
    """How constructive the review is, judged by an LLM."""

    spec = CONSTRUCTIVENESS

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        review = _review(trace)
        if review is None:
            return _NO_REVIEW
        return constructiveness_prompt(review), {"review_chars": len(review)}

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
    "planning_judge",
    description="Tier 2 LLM judge of the trace's steps: flow, decisions, efficiency (.3/.5/.2)",
)
class PlanningRationality(_CriteriaJudge):
    """The rationality of the agent's plan, judged by an LLM from the trace's actual steps."""

    spec = PLANNING_RATIONALITY

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        if not trace.steps:
            return "the trace has no steps to judge"
        budget = CHARS_PER_TOKEN * self.settings.trace_budget_tokens
        return planning_prompt(trace, budget_chars=budget), {"steps": len(trace.steps)}

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


# its former names: the review composite's and the judge's, which were one metric
METRICS.alias("planning_rationality", "planning_judge")
METRICS.alias("planning_rational", "planning_judge")
