"""``failure_attribution``: where a failed run went wrong — the first responsible step, its
agent, and a category — from deterministic evidence first, the judge only where it is silent.

**Did the run fail?** Any of: its output does not match the task's expected output
(:func:`~agentgauge.metrics.behavior.compare_json` below 1, strings compared case- and
space-insensitively); a step has an error; its tool calls diverge from the task's reference
trajectory or expected calls; a call is repeated in a loop; a hand-off is lost. A run with none
of these is not a failure: the metric is None with the reason "no failure".

**The evidence, in this order** (the first that finds a step decides):

1. *reference divergence* — the agent's tool calls against the reference's, in order (the
   reference trajectory's tool names, else the expected calls): the first call whose tool
   differs is ``wrong tool``; the first with the expected tool but an argument outside the
   expected calls' acceptable values is ``wrong arguments``; a run that stops before the
   reference's calls are made is ``premature answer`` (at its last step);
2. *a tool error* — the first step with an error: when the agent's next step calls the same
   tool with the same arguments again, or the run ends on an answer without another call, the
   agent ``ignored tool result or error`` (at that next step, or the error's step);
3. *a loop* — the same tool called with the same arguments a third time (``loop``, at the
   third call);
4. *a lost hand-off* — a hand-off to an agent that never acts afterwards (``lost hand-off``);
5. *a wrong output with no other evidence* — when the run fails only by its output and no
   rule above finds a step, the **judge** reads the steps and names the first responsible
   step, its agent and the category (with ``[judge]`` configured; otherwise None with the
   reason).

**Value**: the share of the run's steps before the responsible step (how far it got before it
went wrong), in [0, 1). ``details`` hold ``step`` (the step's index), ``agent``, ``category``,
``evidence`` (``reference``, ``tool_error``, ``loop``, ``handoff`` or ``judge``) and a
``note``; the viewer marks the step in the trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import Field

from agentgauge.judges.prompts import DATA_ONLY, JudgeSpec, Verdict
from agentgauge.judges.render import json_text, render_steps, section
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.metrics.behavior import compare_json
from agentgauge.metrics.judge import JudgeMetric
from agentgauge.model import Step, StepKind, Trace

__all__ = ["CATEGORIES", "FailureAttribution", "attribute"]

Category = Literal[
    "wrong tool",
    "wrong arguments",
    "ignored tool result or error",
    "premature answer",
    "lost hand-off",
    "loop",
]
CATEGORIES: tuple[str, ...] = get_args(Category)
_LOOP = 3


class AttributionVerdict(Verdict):
    """The judge's attribution of a failed run."""

    reasoning: str = Field(
        description="Two to four sentences tracing where the run went wrong, before the answer."
    )
    step: int = Field(ge=0, description="The index of the first step responsible.")
    agent: str = Field(description="The agent responsible for that step ('' if none is named).")
    category: Category = Field(description="What went wrong at that step.")


ATTRIBUTION = JudgeSpec(
    name="failure_attribution",
    verdict_type=AttributionVerdict,
    weights={},
    instructions=(
        "An AI agent's run failed: its final output is not the expected one. Find the first "
        "step responsible for the failure, the agent that took it, and what went wrong there: "
        "a wrong tool, wrong arguments, an ignored tool result or error, a premature answer, "
        "a lost hand-off, or a loop. You see the task, the expected output, the steps (with "
        "their indices) and the final output.\n"
        "Long traces are shortened in the middle; a marker says what was left out.\n" + DATA_ONLY
    ),
    prompt_version="failure_attribution/1",
)


def _calls(trace: Trace) -> list[Step]:
    return [s for s in trace.steps if s.tool_call is not None]


def _key(step: Step) -> tuple[str, str]:
    assert step.tool_call is not None
    return step.tool_call.name, json_text(step.tool_call.arguments)


def _found(step: Step, category: str, evidence: str, note: str) -> dict[str, Any]:
    return {
        "step": step.index,
        "agent": step.agent,
        "category": category,
        "evidence": evidence,
        "note": note,
    }


def _acceptable(expected: Sequence[Any], value: Any) -> bool:
    return any(compare_json(option, value, normalize_strings=True) == 1.0 for option in expected)


def _reference(trace: Trace, calls: list[Step]) -> dict[str, Any] | None:
    task = trace.task
    names = task.reference_tool_names()
    expected = task.expected_calls
    if names is None and expected:
        names = [c.name for c in expected]
    if not names:
        return None
    for position, step in enumerate(calls):
        assert step.tool_call is not None
        if position >= len(names):
            break
        if step.tool_call.name != names[position]:
            return _found(
                step,
                "wrong tool",
                "reference",
                f"call {position + 1} is {step.tool_call.name}, the reference calls "
                f"{names[position]}",
            )
        if expected and position < len(expected) and expected[position].name == names[position]:
            for param, options in expected[position].arguments.items():
                given = step.tool_call.arguments.get(param, "")
                if options and not _acceptable(options, given):
                    return _found(
                        step,
                        "wrong arguments",
                        "reference",
                        f"{step.tool_call.name}: {param}={json_text(given)} is not one of "
                        f"{json_text(options)}",
                    )
    if len(calls) < len(names) and trace.steps:
        last = trace.steps[-1]
        return _found(
            last,
            "premature answer",
            "reference",
            f"the run made {len(calls)} of the reference's {len(names)} calls, then stopped",
        )
    return None


def _tool_error(trace: Trace) -> dict[str, Any] | None:
    steps = trace.steps
    for k, step in enumerate(steps):
        if not (step.error or step.kind is StepKind.error):
            continue
        failed_call = next((s for s in reversed(steps[: k + 1]) if s.tool_call is not None), None)
        after = [s for s in steps[k + 1 :] if s.kind is not StepKind.tool_result]
        nxt = after[0] if after else None
        if nxt is not None and nxt.tool_call is not None and failed_call is not None:
            if _key(nxt) == _key(failed_call):
                return _found(
                    nxt,
                    "ignored tool result or error",
                    "tool_error",
                    f"step {step.index} failed ({step.error or step.content}); step "
                    f"{nxt.index} repeats the same call",
                )
            continue  # the agent reacted with another call
        where = nxt or step
        return _found(
            where,
            "ignored tool result or error",
            "tool_error",
            f"step {step.index} failed ({step.error or step.content}) and the run "
            + ("answered without another call" if nxt is not None else "ended there"),
        )
    return None


def _loop(calls: list[Step]) -> dict[str, Any] | None:
    seen: dict[tuple[str, str], int] = {}
    for step in calls:
        key = _key(step)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == _LOOP:
            return _found(step, "loop", "loop", f"{key[0]} called {_LOOP} times with {key[1]}")
    return None


def _lost_handoff(trace: Trace) -> dict[str, Any] | None:
    steps = trace.steps
    for k, step in enumerate(steps):
        if (
            step.kind is StepKind.handoff
            and step.recipient
            and not any(s.agent == step.recipient for s in steps[k + 1 :])
        ):
            return _found(
                step,
                "lost hand-off",
                "handoff",
                f"{step.agent or '?'} handed off to {step.recipient}, who never acted",
            )
    return None


def _output_wrong(trace: Trace) -> bool:
    expected = trace.task.expected_output
    if expected is None:
        return False
    return compare_json(expected, trace.output, normalize_strings=True) < 1.0


def attribute(trace: Trace) -> dict[str, Any] | None:
    """The deterministic attribution of a run's failure, or None when no rule finds a step.

    Args:
        trace: the trace.
    """
    calls = _calls(trace)
    return _reference(trace, calls) or _tool_error(trace) or _loop(calls) or _lost_handoff(trace)


def _value(trace: Trace, step: int) -> float:
    before = sum(1 for s in trace.steps if s.index < step)
    return before / len(trace.steps) if trace.steps else 0.0


@metric(
    "failure_attribution",
    description="Where a failed run went wrong: first responsible step, agent, category",
)
class FailureAttribution(JudgeMetric):
    """The first step responsible for a failed run, its agent and what went wrong."""

    spec = ATTRIBUTION

    @property
    def unjudged(self) -> bool:
        """Never: the rules attribute a failure without a judge, which only speaks where they
        are silent (None with the reason when no judge is configured)."""
        return False

    def score_batch(self, traces: Sequence[Trace]) -> list[MetricResult]:
        """Attribute each trace's failure: by the rules, else by the judge (see the module).

        Args:
            traces: the traces.
        """
        results: list[MetricResult | None] = []
        silent: list[Trace] = []
        for trace in traces:
            found = attribute(trace)
            if found is not None:
                results.append(
                    MetricResult(
                        value=_value(trace, found["step"]),
                        details={"method": "rules", **found},
                        reason=f"{found['category']} at step {found['step']}: {found['note']}",
                    )
                )
            elif not _output_wrong(trace):
                results.append(MetricResult.missing("no failure: the run shows no evidence of one"))
            elif not trace.steps:
                results.append(MetricResult.missing("the output is wrong, and no step recorded"))
            else:
                results.append(None)
                silent.append(trace)
        judged = iter(super().score_batch(silent) if silent else [])
        out = []
        for trace, result in zip(traces, results, strict=True):
            if result is None:
                result = next(judged)
                if result.value is not None:
                    step = int(result.details["step"])
                    result = MetricResult(_value(trace, step), result.details, result.reason)
            out.append(result)
        return out

    def _prepare(self, trace: Trace) -> tuple[str, dict[str, Any]] | str:
        steps, shown = render_steps(trace, 4 * self.settings.trace_budget_tokens)
        parts = [
            section("task", trace.task.description or json_text(trace.task.input)),
            section("expected_output", json_text(trace.task.expected_output)),
            section("steps", steps, total=len(trace.steps), shown=shown),
            section("output", json_text(trace.output)),
        ]
        return "\n\n".join(parts), {"steps": len(trace.steps)}

    def _score(self, output: dict[str, Any]) -> tuple[float, dict[str, Any], str | None]:
        # the value (the share of steps before the step named) is set once the trace is known
        step = int(output["step"])
        found = {
            "step": step,
            "agent": output.get("agent") or None,
            "category": output["category"],
            "evidence": "judge",
            "note": str(output.get("reasoning", "")),
        }
        return 0.0, found, f"{found['category']} at step {step} (judge)"
