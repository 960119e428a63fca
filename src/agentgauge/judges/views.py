"""How a judge's prompt shows a trace's steps: the view in force while the prompt is built.

Every prompt builder renders steps with :func:`~agentgauge.judges.render.render_steps`, which
follows the view in force (:func:`steps_view`): the steps within the budget, shortened in the
middle (the default; :class:`ShortenedView` records whether it had to), an overview in their
place for a judge that reads them with tools (:class:`OverviewView`), one window of them
(:class:`WindowView`), or the windows' findings (:class:`FindingsView`). See
:mod:`agentgauge.judges.explore`.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from agentgauge.model import Step, StepKind

__all__ = [
    "FindingsView",
    "OverviewView",
    "ShortenedView",
    "StepsView",
    "WindowView",
    "current_view",
    "overview",
    "steps_view",
]


class StepsView:
    """How a prompt shows a trace's steps; the base shows them within the budget."""


@dataclass
class ShortenedView(StepsView):
    """The steps within the budget, shortened in the middle; records whether it had to."""

    shortened: bool = False


@dataclass
class OverviewView(StepsView):
    """An overview of the steps instead of the steps (the judge reads them with tools)."""

    max_tool_calls: int = 20


@dataclass
class WindowView(StepsView):
    """Only the steps with ``start <= index < end``."""

    start: int
    end: int
    total: int


@dataclass
class FindingsView(StepsView):
    """The windows' findings instead of the steps."""

    findings: str


_VIEW: ContextVar[StepsView | None] = ContextVar("agentgauge_steps_view", default=None)


@contextlib.contextmanager
def steps_view(view: StepsView) -> Iterator[StepsView]:
    """Build prompts with ``view`` deciding how steps are shown, for the duration of the block.

    Args:
        view: the view.
    """
    token = _VIEW.set(view)
    try:
        yield view
    finally:
        _VIEW.reset(token)


def current_view() -> StepsView | None:
    """The view in force (None: the budget's shortened view, nothing recorded)."""
    return _VIEW.get()


def overview(steps: Sequence[Step], max_tool_calls: int) -> str:
    """A summary of the steps the judge can explore: counts by kind and agent, the tools
    called, the errors, and how to read them.

    Args:
        steps: the steps.
        max_tool_calls: the judge's tool-call budget.
    """
    if not steps:
        return "(no steps recorded)"
    kinds = Counter(s.kind.value for s in steps)
    agents = Counter(s.agent for s in steps if s.agent)
    tools = Counter(s.tool_call.name for s in steps if s.tool_call is not None)
    errors = [s.index for s in steps if s.error or s.kind is StepKind.error]
    lines = [
        f"{len(steps)} steps, indices {steps[0].index} to {steps[-1].index}: too many to show "
        f"here. Read them with the tools (at most {max_tool_calls} tool calls).",
        "kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()),
    ]
    if agents:
        lines.append("agents: " + ", ".join(f"{a} {n}" for a, n in agents.most_common(20)))
    if tools:
        lines.append("tools called: " + ", ".join(f"{t} {n}" for t, n in tools.most_common(20)))
    lines.append(f"steps with an error: {len(errors)}")
    return "\n".join(lines)
