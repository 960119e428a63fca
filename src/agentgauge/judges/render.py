"""The trace as a judge sees it, within a budget of tokens.

:func:`render_trace` turns a trace into the text of a judge's prompt: the parts the judge is
meant to see (:data:`JUDGE_INPUTS`: the task, the steps, the tool calls with their results, the
final output, the expected output, the reference), each in its own tagged section
(:func:`section`). Steps are one line each — the agent and its recipient, the kind and message
type, tool calls with their arguments, results and errors, hand-offs.

The budget is counted in estimated tokens (:data:`CHARS_PER_TOKEN` characters a token, the
usual figure for English text with GPT-style tokenizers). When everything does not fit, the
sections share the budget (a small section keeps all of its text, the large ones split the
rest) and each is shortened **in the middle**, with a marker saying what was left out: the
first and last steps stay, the middle steps are replaced by ``... [N steps omitted to fit the
budget] ...``; a long text keeps its beginning and end around ``… [N chars omitted] …``.
Nothing is ever cut silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from agentgauge.judges.views import (
    FindingsView,
    OverviewView,
    ShortenedView,
    WindowView,
    current_view,
    overview,
)
from agentgauge.model import Step, StepKind, Trace

__all__ = [
    "CHARS_PER_TOKEN",
    "JUDGE_INPUTS",
    "TraceView",
    "clip",
    "estimate_tokens",
    "json_text",
    "missing_inputs",
    "render_steps",
    "render_trace",
    "section",
    "shorten_middle",
    "step_line",
    "trajectory_reference",
]

CHARS_PER_TOKEN = 4
"""Characters a token, for budgets and estimates (no tokenizer is loaded)."""

JUDGE_INPUTS = ("input", "steps", "tool_calls", "output", "expected_output", "reference")
"""The parts of a trace a judge may see, in the order they are shown: the task (description and
input), every step, only the tool calls and their results, the agent's final output, the task's
expected output, and the reference (the task's reference texts, reference trajectory and
expected calls)."""

_TOOL_KINDS = frozenset({StepKind.tool_call, StepKind.tool_result})
_MIN_SECTION_CHARS = 200


def estimate_tokens(text: str) -> int:
    """The estimated number of tokens of ``text`` (:data:`CHARS_PER_TOKEN` characters each).

    Args:
        text: the text.
    """
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def section(tag: str, body: str, **attrs: object) -> str:
    """``body`` as one tagged section of a judge's prompt, its closing tags defused.

    Args:
        tag: the section's tag name.
        body: the text inside.
        attrs: attributes written in the opening tag.
    """
    attr_text = "".join(f' {k}="{v}"' for k, v in attrs.items())
    defused = body.replace(f"</{tag}", f"</ {tag}")
    return f"<{tag}{attr_text}>\n{defused}\n</{tag}>"


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, saying how many were cut.

    Args:
        text: the text.
        limit: the most characters kept, the note included.
    """
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 15)] + f"… [{len(text) - limit + 15} chars cut]"


def shorten_middle(text: str, limit: int) -> str:
    """``text`` within about ``limit`` characters: its beginning and end around a marker that
    says how many characters were left out.

    Args:
        text: the text.
        limit: the most characters kept, the marker included.
    """
    if len(text) <= limit:
        return text
    keep = max(0, limit - 40)
    head, tail = keep - keep // 2, keep // 2
    omitted = len(text) - head - tail
    return text[:head] + f" … [{omitted} chars omitted] … " + text[len(text) - tail :]


def json_text(value: object) -> str:
    """A string as it is, anything else as compact sorted JSON.

    Args:
        value: a JSON value.
    """
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def step_line(step: Step, field_chars: int) -> str:
    """One step as one line: ``[index] kind agent -> recipient (type): call content result
    error``, each field cut to ``field_chars``.

    Args:
        step: the step.
        field_chars: the most characters of each field.
    """
    who = step.agent or "?"
    if step.recipient:
        who += f" -> {step.recipient}"
    head = f"[{step.index}] {step.kind.value} {who}"
    if step.message_type is not None:
        head += f" ({step.message_type.value})"
    parts = [head + ":"]
    if step.tool_call is not None:
        args = clip(json_text(step.tool_call.arguments), field_chars)
        parts.append(f"{step.tool_call.name}({args})")
    if step.content:
        parts.append(clip(step.content, field_chars))
    if step.result is not None:
        parts.append("result=" + clip(json_text(step.result), field_chars))
    if step.error:
        parts.append("ERROR=" + clip(step.error, field_chars))
    return " ".join(parts).replace("\n", " ")


def render_steps(
    trace: Trace, budget_chars: int, *, steps: Sequence[Step] | None = None
) -> tuple[str, int]:
    """The trace's steps, one line each, kept within ``budget_chars``.

    Each text field is cut to a tenth of the budget; when the lines still exceed the budget,
    the first and last steps are kept (half the budget each) and the middle is replaced by a
    line saying how many steps were left out.

    Args:
        trace: the trace.
        budget_chars: the most characters the rendered steps may take.
        steps: the steps to render (default: all of the trace's).

    Returns:
        The rendered steps and how many of them are shown.

    A :class:`~agentgauge.judges.explore.StepsView` in force (a long trace judged with tools
    or in windows) decides instead: an overview (none shown), one window, or the windows'
    findings.
    """
    chosen = trace.steps if steps is None else steps
    view = current_view()
    if isinstance(view, OverviewView):
        return overview(chosen, view.max_tool_calls), 0
    if isinstance(view, FindingsView):
        return view.findings, 0
    if isinstance(view, WindowView):
        chosen = [s for s in chosen if view.start <= s.index < view.end]
    field_chars = max(80, budget_chars // 10)
    lines = [step_line(s, field_chars) for s in chosen]
    if sum(len(line) + 1 for line in lines) <= budget_chars:
        return "\n".join(lines), len(lines)
    half = budget_chars // 2
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > half:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    used = 0
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > half:
            break
        tail.append(line)
        used += len(line) + 1
    tail.reverse()
    omitted = len(lines) - len(head) - len(tail)
    if isinstance(view, ShortenedView):
        view.shortened = True
    middle = [f"... [{omitted} steps omitted to fit the budget] ..."]
    return "\n".join(head + middle + tail), len(head) + len(tail)


def trajectory_reference(trace: Trace) -> str | None:
    """The task's reference path as text: its reference trajectory and its expected tool calls
    (with the acceptable values of each argument); None when it has neither.

    Args:
        trace: the trace.
    """
    task = trace.task
    parts = []
    if task.reference_trajectory:
        parts.append("reference trajectory: " + json_text(task.reference_trajectory))
    if task.expected_calls:
        calls = [c.model_dump() for c in task.expected_calls]
        parts.append("expected tool calls (acceptable values per argument): " + json_text(calls))
    return "\n".join(parts) or None


def _reference_text(trace: Trace) -> str | None:
    texts = "\n\n".join(trace.task.references)
    return "\n".join(p for p in (texts, trajectory_reference(trace)) if p) or None


def missing_inputs(trace: Trace, inputs: Sequence[str]) -> list[str]:
    """The inputs a judge cannot be shown because the trace does not have them.

    The expected output and the reference are needed to compare against; a missing final
    output, task or steps are shown as such (the judge may score their absence).

    Args:
        trace: the trace.
        inputs: names from :data:`JUDGE_INPUTS`.
    """
    missing = []
    if "expected_output" in inputs and trace.task.expected_output is None:
        missing.append("expected_output")
    if "reference" in inputs and _reference_text(trace) is None:
        missing.append("reference")
    return missing


@dataclass(frozen=True)
class TraceView:
    """A trace rendered for a judge.

    Args:
        text: the tagged sections, in the order of :data:`JUDGE_INPUTS`.
        estimated_tokens: the text's estimated tokens.
        steps_total: the steps the shown step sections hold in the trace.
        steps_shown: how many of them are shown (the rest were omitted in the middle).
        shortened: True when anything was shortened to fit the budget.
    """

    text: str
    estimated_tokens: int
    steps_total: int
    steps_shown: int
    shortened: bool


def _share(sizes: dict[str, int], budget: int) -> dict[str, int]:
    """Split ``budget`` among sections: the smallest keep their size, the rest split evenly."""
    limits: dict[str, int] = {}
    remaining = budget
    order = sorted(sizes, key=lambda name: sizes[name])
    for i, name in enumerate(order):
        fair = remaining // (len(order) - i)
        limits[name] = max(_MIN_SECTION_CHARS, min(sizes[name], fair))
        remaining -= limits[name]
    return limits


def render_trace(trace: Trace, inputs: Sequence[str], *, budget_tokens: int) -> TraceView:
    """The judge's view of ``trace``: the chosen inputs as tagged sections within the budget.

    Args:
        trace: the trace.
        inputs: names from :data:`JUDGE_INPUTS` (any order; shown in that order).
        budget_tokens: the most estimated tokens the view may take; sections are shortened in
            the middle, with a marker, to fit.

    Raises:
        ValueError: for a name that is not one of :data:`JUDGE_INPUTS`.
    """
    unknown = [name for name in inputs if name not in JUDGE_INPUTS]
    if unknown:
        raise ValueError(f"unknown judge input {unknown[0]!r}; choose from {list(JUDGE_INPUTS)}")
    task = trace.task
    texts: dict[str, str] = {}
    step_lists: dict[str, Sequence[Step]] = {}
    for name in JUDGE_INPUTS:
        if name not in inputs:
            continue
        if name == "input":
            goal = "\n\n".join(
                p for p in (task.description, json_text(task.input) if task.input else "") if p
            )
            texts["task"] = goal or "(no task text recorded)"
        elif name == "expected_output":
            texts["expected_output"] = json_text(task.expected_output)
        elif name == "output":
            texts["output"] = (
                "(no final output)" if trace.output is None else json_text(trace.output)
            )
        elif name == "reference":
            texts["reference"] = _reference_text(trace) or "(no reference)"
        else:
            chosen = (
                trace.steps
                if name == "steps"
                else [s for s in trace.steps if s.kind in _TOOL_KINDS or s.tool_call is not None]
            )
            step_lists[name] = chosen
    budget = budget_tokens * CHARS_PER_TOKEN
    full_steps = {name: render_steps(trace, 10**12, steps=s)[0] for name, s in step_lists.items()}
    sizes = {name: len(text) for name, text in {**texts, **full_steps}.items()}
    # the tags and attributes around each section are part of the budget
    overhead = 60 * len(sizes)
    limits = _share(sizes, max(_MIN_SECTION_CHARS * len(sizes), budget - overhead))
    parts: list[str] = []
    shortened = False
    total = shown = 0
    for name in [n for n in ("task", *JUDGE_INPUTS) if n in sizes]:
        if name in step_lists:
            body, n_shown = render_steps(trace, limits[name], steps=step_lists[name])
            n_total = len(step_lists[name])
            total, shown = total + n_total, shown + n_shown
            shortened = shortened or n_shown < n_total or body != full_steps[name]
            parts.append(section(name, body or "(no steps recorded)", total=n_total, shown=n_shown))
        else:
            body = shorten_middle(texts[name], limits[name])
            shortened = shortened or body != texts[name]
            parts.append(section(name, body))
    text = "\n\n".join(parts)
    return TraceView(
        text=text,
        estimated_tokens=estimate_tokens(text),
        steps_total=total,
        steps_shown=shown,
        shortened=shortened,
    )
