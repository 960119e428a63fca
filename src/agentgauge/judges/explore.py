"""Long traces read whole: the judge explores a trace with tools, or judges it in windows.

A trace whose steps do not fit the judge's budget (``trace_budget_tokens``) is never judged
from a view with its middle cut out unless the user asks for it (``long_traces =
"truncate"``). Instead:

- ``"tools"`` (default): the prompt shows the task, the output and the other sections as
  usual, and an **overview** of the steps in place of the steps (how many, of which kinds, by
  which agents, which tools were called, how many errors); the judge then reads what it needs
  through four pydantic-ai tools over the trace (:class:`TraceExplorer`): ``list_steps``
  (filter by agent and kind, paged), ``read_step(index)``, ``search(text)`` and
  ``tool_calls(name)``. At most ``max_tool_calls`` tool calls are answered; after that each
  tool says the budget is spent and the judge must decide. The verdict carries
  ``saw_enough``: a judge that could not see what it needed says so, and the metric is None
  with the reason, never a low score. What the judge listed, read and searched is recorded
  with its verdict (``details["explored"]``).
- ``"chunks"``: the steps are split into windows that each fit the budget; each window is
  judged for its findings (:class:`WindowFindings`: problems by step), then the judge gives
  its verdict from the other sections and all the windows' findings. Also what ``"tools"``
  falls back to when the endpoint has no tool calling.

Which steps a prompt shows is decided by the :class:`~agentgauge.judges.views.StepsView` in
force while it is built: the budget's shortened view (the default), the overview, one window,
or the windows' findings (:mod:`agentgauge.judges.views`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, create_model

from agentgauge.judges.render import step_line
from agentgauge.model import Step, StepKind, Trace

__all__ = [
    "EXPLORE_NOTE",
    "WINDOW_NOTE",
    "TraceExplorer",
    "WindowFindings",
    "explored_verdict",
    "findings_note",
    "trace_fingerprint",
    "windows",
]

_READ_CHARS = 4000
_LINE_CHARS = 160
_PAGE = 50


def _step_text(step: Step, limit: int) -> str:
    return step_line(step, limit)


@dataclass
class TraceExplorer:
    """The trace-exploring tools of one judgment, with their budget and what they showed.

    Args:
        trace: the trace.
        max_calls: the most tool calls answered.
    """

    trace: Trace
    max_calls: int
    calls: list[dict[str, Any]] = field(default_factory=list)
    read: set[int] = field(default_factory=set)

    def _spent(self, tool: str, **args: Any) -> str | None:
        self.calls.append({"tool": tool, **{k: v for k, v in args.items() if v is not None}})
        if len(self.calls) > self.max_calls:
            return (
                f"tool-call budget spent ({self.max_calls} calls): give your verdict now from "
                "what you have read, and set saw_enough to false if that was not enough"
            )
        return None

    def _lines(self, steps: Sequence[Step], limit: int, what: str) -> str:
        shown = [_step_text(s, _LINE_CHARS) for s in steps[:limit]]
        more = len(steps) - len(shown)
        if not shown:
            return f"no {what}"
        return "\n".join(shown) + (f"\n... and {more} more (page with start)" if more > 0 else "")

    def list_steps(
        self,
        agent: str | None = None,
        kind: str | None = None,
        start: int = 0,
        limit: int = _PAGE,
    ) -> str:
        """List steps one line each (fields cut short), optionally only one agent's or kind's.

        Args:
            agent: only this agent's steps.
            kind: only steps of this kind (llm, reasoning, tool_call, tool_result, message,
                handoff, error).
            start: the first step index to list.
            limit: the most steps to list (at most 50).
        """
        if (spent := self._spent("list_steps", agent=agent, kind=kind, start=start)) is not None:
            return spent
        chosen = [
            s
            for s in self.trace.steps
            if s.index >= start
            and (agent is None or s.agent == agent)
            and (kind is None or s.kind.value == kind)
        ]
        return self._lines(chosen, min(max(limit, 1), _PAGE), "matching steps")

    def read_step(self, index: int) -> str:
        """Read one step whole: its agent, kind, content, tool call, result and error.

        Args:
            index: the step's index.
        """
        if (spent := self._spent("read_step", index=index)) is not None:
            return spent
        step = next((s for s in self.trace.steps if s.index == index), None)
        if step is None:
            return f"no step {index}"
        self.read.add(index)
        return _step_text(step, _READ_CHARS)

    def search(self, text: str, limit: int = 20) -> str:
        """Find the steps whose content, tool call, result or error contains a text (any case).

        Args:
            text: the text to look for.
            limit: the most steps to return (at most 50).
        """
        if (spent := self._spent("search", text=text)) is not None:
            return spent
        needle = text.lower()
        found = [s for s in self.trace.steps if needle in _step_text(s, 10**9).lower() and needle]
        return self._lines(found, min(max(limit, 1), _PAGE), f"step mentions {text!r}")

    def tool_calls(self, name: str | None = None, limit: int = _PAGE) -> str:
        """List the tool calls with their arguments, results and errors, optionally of one
        tool only.

        Args:
            name: only this tool's calls.
            limit: the most calls to list (at most 50).
        """
        if (spent := self._spent("tool_calls", name=name)) is not None:
            return spent
        chosen = [
            s
            for s in self.trace.steps
            if (s.tool_call is not None or s.kind is StepKind.tool_result)
            and (name is None or (s.tool_call is not None and s.tool_call.name == name))
        ]
        return self._lines(chosen, min(max(limit, 1), _PAGE), "tool calls")

    def toolset(self) -> Any:
        """The four tools as a pydantic-ai toolset, with :meth:`trail` for the record."""
        from pydantic_ai.toolsets import FunctionToolset

        toolset: Any = FunctionToolset(
            [self.list_steps, self.read_step, self.search, self.tool_calls], max_retries=1
        )
        toolset.trail = self.trail
        return toolset

    def trail(self) -> dict[str, Any]:
        """What the judge did: its tool calls in order and the steps it read whole."""
        return {
            "strategy": "tools",
            "tool_calls": list(self.calls),
            "read_steps": sorted(self.read),
            "budget_spent": len(self.calls) > self.max_calls,
        }


EXPLORE_NOTE = (
    "The trace is too long to show whole: its steps section is an overview. Before you judge, "
    "read what the judgment needs with the tools list_steps, read_step, search and "
    "tool_calls (an error, a wrong tool call or a wrong result may be anywhere, the middle "
    "included). Set saw_enough to false if the tools could not show you what you needed."
)
"""The paragraph added to a judge's instructions when it explores a long trace with tools."""

WINDOW_NOTE = (
    "The trace is too long to show whole: this message shows one window of its steps (the "
    "steps section says which). Do not give a verdict: report what in these steps matters "
    "for the judgment: each problem with its step index, and anything the steps achieved."
)
"""The instructions' paragraph of the calls that read one window of a long trace."""


@functools.cache
def explored_verdict(verdict_type: type[BaseModel]) -> type[BaseModel]:
    """The verdict model of a judge exploring with tools: its own, with ``saw_enough``.

    Args:
        verdict_type: the judge's verdict model.
    """
    saw: Any = (
        bool,
        Field(
            default=True,
            description="False when the tools could not show you what the judgment needs.",
        ),
    )
    return create_model(f"Explored{verdict_type.__name__}", __base__=verdict_type, saw_enough=saw)


class WindowProblem(BaseModel):
    """One problem seen in a window."""

    step: int = Field(description="The step's index.")
    issue: str = Field(description="The problem, in one short sentence.")


class WindowFindings(BaseModel):
    """What one window of a long trace shows."""

    problems: list[WindowProblem] = Field(
        description="Each problem in these steps (a wrong tool or argument, an ignored error "
        "or result, a needless or repeated call, a wrong hand-off). Empty when there is none."
    )
    achieved: str = Field(description="What these steps achieved, in one or two sentences.")


def windows(steps: Sequence[Step], budget_chars: int) -> list[tuple[int, int]]:
    """The steps split into consecutive windows that each fit ``budget_chars`` (one line a
    step, fields cut to a tenth of the budget): ``(first index, index after the last)``.

    Args:
        steps: the steps.
        budget_chars: the characters a window's steps may take.
    """
    field_chars = max(80, budget_chars // 10)
    out: list[tuple[int, int]] = []
    start = used = 0
    for i, step in enumerate(steps):
        size = len(_step_text(step, field_chars)) + 1
        if i > start and used + size > budget_chars:
            out.append((steps[start].index, step.index))
            start, used = i, 0
        used += size
    if steps:
        out.append((steps[start].index, steps[-1].index + 1))
    return out


def findings_note(found: Sequence[tuple[tuple[int, int], dict[str, Any]]]) -> str:
    """The windows' findings as the text that stands for the steps in the final prompt.

    Args:
        found: each window and its findings (:class:`WindowFindings`' fields).
    """
    lines = [
        "The steps were read in windows; these are each window's findings (the steps "
        "themselves are not shown)."
    ]
    for (start, end), result in found:
        lines.append(f"steps {start}-{end - 1}: {result.get('achieved', '')}")
        for problem in result.get("problems", []):
            lines.append(f"  step {problem.get('step')}: {problem.get('issue')}")
    return "\n".join(lines)


def trace_fingerprint(trace: Trace) -> str:
    """A hash of the trace's steps, for the cache key of a judgment that reads them through
    tools or windows.

    Args:
        trace: the trace.
    """
    payload = "\n".join(s.model_dump_json(exclude_none=True) for s in trace.steps)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
