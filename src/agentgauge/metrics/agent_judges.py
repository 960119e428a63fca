"""LLM judges for any agent: ``rubric`` (your own criteria), ``goal_accuracy`` and
``trajectory_judge``.

- ``rubric``: a judge written in one sentence (G-Eval's idea). Options: ``criteria``; ``steps``
  (evaluation steps; when absent the judge writes them once from the criteria and they are
  cached); ``scale`` (``"1-5"``, ``"0-10"``... or ``"pass/fail"``); ``inputs`` (which parts of
  the trace the judge sees: ``input``, ``expected_output``, ``output``, ``steps``,
  ``tool_calls``, ``reference``); ``threshold`` (``details["passed"]`` is value ≥ threshold).
  Value: ``(score − LOW) / (HIGH − LOW)``, or 1/0 for pass/fail. A suite may hold several
  rubrics under their own names (``[metrics.helpfulness] kind = "rubric"``).
- ``goal_accuracy``: did the agent achieve the goal? With a reference (the task's expected
  output, else its reference texts) the judge compares the outcome with it; without one it
  infers the user's goal from the task. Value 1.0 (achieved) or 0.0.
- ``trajectory_judge``: the path, not the answer — needless calls, loops, a wrong order —
  against the task's reference trajectory or expected calls when there are some. Value
  ``(score − 1) / 4`` for a score of 1–5.

The judge's reasoning is the result's reason; ``details`` hold the verdict's other fields, the
model, the prompt version, the call's usage and cost and whether it came from the cache. The
prompts are in :mod:`agentgauge.judges.prompts` and :mod:`agentgauge.judges.rubric`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgauge.judges.client import (
    JudgeFailure,
    JudgeRequest,
    JudgeSession,
    cached_verdict,
    run_sync,
)
from agentgauge.judges.noise import straddles
from agentgauge.judges.prompts import (
    GOAL_ACCURACY,
    TRAJECTORY_JUDGE,
    JudgeSpec,
    goal_prompt,
    goal_reference,
    trajectory_prompt,
)
from agentgauge.judges.render import missing_inputs, render_trace, trajectory_reference
from agentgauge.judges.rubric import (
    RUBRIC_PROMPT_VERSION,
    STEPS_PROMPT_VERSION,
    EvaluationSteps,
    RubricScale,
    check_inputs,
    rubric_instructions,
    steps_instructions,
    steps_prompt,
)
from agentgauge.metrics.base import metric
from agentgauge.metrics.judge import JudgeMetric, score_with_issues
from agentgauge.model import Trace
from agentgauge.scoring import reaches

__all__ = ["GoalAccuracy", "Rubric", "TrajectoryJudge"]

_STEPS_PENDING = "(written by the judge from the criteria on the first run, then cached)"


@metric(
    "rubric",
    description="LLM judge of your own criteria (G-Eval style): a score on a scale, with reasons",
)
class Rubric(JudgeMetric):
    """A judge of the user's criteria, on the user's scale, seeing the chosen inputs."""

    def _configure(
        self,
        *,
        criteria: str = "",
        steps: Sequence[str] | None = None,
        scale: str = "1-5",
        inputs: Sequence[str] = ("input", "output"),
        threshold: float = 0.5,
    ) -> None:
        if not criteria.strip():
            raise ValueError("criteria: say what the judge checks (e.g. 'The answer is correct')")
        if steps is not None and (not steps or not all(str(s).strip() for s in steps)):
            raise ValueError("steps: give non-empty evaluation steps, or leave the option out")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {threshold}")
        self.criteria = criteria.strip()
        self.scale = RubricScale.parse(scale)
        self.inputs = check_inputs(inputs)
        self.threshold = float(threshold)
        self.steps: list[str] | None = [str(s).strip() for s in steps] if steps else None
        self.aggregate = "majority" if self.scale.low is None else "mean"
        self._steps_source = "given" if steps else "generated"
        self._steps_report: dict[str, Any] = {}
        self.spec = JudgeSpec(
            name="rubric",
            verdict_type=self.scale.verdict_type,
            weights={},
            instructions="",
            prompt_version=RUBRIC_PROMPT_VERSION,
        )

    def _steps_request(self) -> JudgeRequest:
        return JudgeRequest(
            judge="rubric_steps",
            prompt_version=STEPS_PROMPT_VERSION,
            instructions=steps_instructions(),
            prompt=steps_prompt(self.criteria, self.scale, self.inputs),
            verdict_type=EvaluationSteps,
        )

    def instructions(self) -> str:
        """The judge's instructions: the criteria, the evaluation steps and the scale. Before
        the steps are written, a placeholder stands for them (only a preview shows it)."""
        steps = self.steps
        if steps is None and self.settings.model is not None:
            known = cached_verdict(self.settings, self._steps_request())
            steps = known.output["steps"] if known is not None else None
        return rubric_instructions(
            self.criteria, steps or [_STEPS_PENDING], self.scale, self.inputs
        )

    async def _setup(self, session: JudgeSession) -> str | None:
        if self.steps is not None:
            return None
        outcome = await session.judge(self._steps_request())
        if isinstance(outcome, JudgeFailure):
            return f"the evaluation steps could not be written: {outcome.reason}"
        self.steps = [str(step) for step in outcome.output["steps"]]
        self._steps_report = {
            "steps_generation": {"usage": outcome.usage, "cached": outcome.cached}
        }
        return None

    def _setup_details(self) -> dict[str, Any]:
        report, self._steps_report = self._steps_report, {}
        return report

    def prepare(self) -> list[dict[str, Any]]:
        """Write the evaluation steps now, once for the run, and say what that cost.

        The engine calls this before the samples are scored, so that every worker process
        reads the same steps from the cache. Returns the output mode's record
        (:meth:`JudgeMetric.prepare`) and one record of the steps (the steps, the model, the
        call's usage and whether it came from the cache), none when the steps are given or no
        judge is configured.
        """
        modes = super().prepare()
        if self.steps is not None or self.settings.model is None:
            return modes

        async def write_steps() -> str | None:
            async with JudgeSession(self.settings, self._spend) as session:
                return await self._setup(session)

        problem = run_sync(write_steps())
        report = self._setup_details().get("steps_generation", {})
        return [
            *modes,
            {
                "metric": self.name,
                "purpose": "evaluation steps",
                "model": self.settings.model_id,
                "steps": self.steps,
                "error": problem,
                "usage": report.get("usage"),
                "cached": report.get("cached"),
            },
        ]

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        missing = missing_inputs(trace, self.inputs)
        if missing:
            return f"the rubric needs the trace's {' and '.join(missing)}, which it does not have"
        view = render_trace(trace, self.inputs, budget_tokens=self.settings.trace_budget_tokens)
        shown = {
            "inputs": self.inputs,
            "trace_tokens": view.estimated_tokens,
            "trace_shortened": view.shortened,
        }
        return view.text, shown

    def _combined(
        self, details: dict[str, Any], value: float, interval: tuple[float, float]
    ) -> None:
        """The threshold applied to the combined value; ``uncertain`` when the judge's noise
        interval straddles it (``passed`` is then the combined value's side)."""
        details["passed"] = reaches(value, self.threshold)
        details["uncertain"] = straddles(interval, self.threshold)
        if self.scale.low is not None and self.scale.high is not None:
            span = self.scale.high - self.scale.low
            details["score"] = self.scale.low + value * span
        else:
            details["verdict"] = "pass" if value == 1.0 else "fail" if value == 0.0 else "tie"

    def _score(self, output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
        value, said = self.scale.value(output)
        details = {
            **said,
            "scale": self.scale.label,
            "threshold": self.threshold,
            "passed": reaches(value, self.threshold),
            "criteria": self.criteria,
            "steps": self.steps,
            "steps_source": self._steps_source,
        }
        return value, details, str(output.get("reasoning", "")) or None


@metric(
    "goal_accuracy",
    description="LLM judge: did the agent achieve the (reference or inferred) goal? 1 or 0",
)
class GoalAccuracy(JudgeMetric):
    """Whether the agent achieved its user's goal, judged from the task, steps and output."""

    spec = GOAL_ACCURACY
    aggregate = "majority"

    def _configure(self, *, use_reference: bool = True) -> None:
        self.use_reference = use_reference

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        reference = goal_reference(trace) if self.use_reference else None
        prompt = goal_prompt(
            trace, reference=reference, budget_tokens=self.settings.trace_budget_tokens
        )
        return prompt, {"with_reference": reference is not None}

    def _score(self, output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
        achieved = bool(output["achieved"])
        details = {
            "achieved": achieved,
            "scale": "pass/fail",
            "goal": output.get("goal", ""),
            "outcome": output.get("outcome", ""),
        }
        return (1.0 if achieved else 0.0), details, str(output.get("reasoning", "")) or None


@metric(
    "trajectory_judge",
    description="LLM judge of the agent's path: needless calls, loops, order (score 1-5)",
)
class TrajectoryJudge(JudgeMetric):
    """The quality of the path the agent took, judged from its steps."""

    spec = TRAJECTORY_JUDGE

    def _configure(self, *, use_reference: bool = True) -> None:
        self.use_reference = use_reference

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        if not trace.steps:
            return "the trace has no steps to judge"
        reference = trajectory_reference(trace) if self.use_reference else None
        prompt = trajectory_prompt(
            trace, reference=reference, budget_tokens=self.settings.trace_budget_tokens
        )
        return prompt, {"with_reference": reference is not None, "steps": len(trace.steps)}

    def _score(self, output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
        return score_with_issues(output)
