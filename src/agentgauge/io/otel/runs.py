"""Which traces make one run.

A trace with a span around its model calls is a run of its own. Traces whose spans name the
run they belong to (a framework that records one run as a trace per message, see
:attr:`~agentgauge.io.otel.observation.Observation.run_id`) are joined by that id until the
end of the file. Bare model calls (an app that opens no span of its own: one trace per call)
are joined by their conversation id until the end of the file, else by message continuity: a
call whose input answers tool calls an earlier call asked for continues that call's run, which
is complete once its last call asks for no tool. With ``by_conversation``, every trace with a
conversation id joins its conversation. A trace that only defines agents (``create_agent``)
is no run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentgauge.io.otel.observation import Kind, Observation

__all__ = ["Runs"]

RunItems = tuple[str, list[Observation], dict[str, Any]]


def _conversation_of(observations: list[Observation]) -> str | None:
    return next((o.conversation_id for o in observations if o.conversation_id), None)


def _is_bare(observations: list[Observation]) -> bool:
    """Whether a trace is model calls without a span around them (an app that opens no span
    of its own): every observation without a parent in the trace is a model call."""
    ids = {o.span.span_id for o in observations}
    tops = [o for o in observations if o.span.parent_id not in ids]
    return bool(tops) and all(o.kind is Kind.model_call for o in tops)


@dataclass
class _Run:
    """The traces that make one run, while it may still grow."""

    group_id: str
    observations: list[Observation]
    notes: dict[str, Any]
    open_calls: set[str] = field(default_factory=set)


class Runs:
    """Puts the traces of one run together (see the module's docs).

    Args:
        by_conversation: every trace with a conversation id joins its conversation.
    """

    def __init__(self, by_conversation: bool) -> None:
        self._by_conversation = by_conversation
        self._held: dict[tuple[str, str], _Run] = {}

    def add(
        self, trace_id: str, observations: list[Observation], notes: dict[str, Any]
    ) -> Iterator[RunItems]:
        """The runs this trace completes: itself, or one it continues.

        Args:
            trace_id: the trace's id.
            observations: its observations.
            notes: its counts for the metadata.
        """
        if all(o.kind is Kind.definition for o in observations):
            return  # agents defined, none run: the runs that use them say what they did
        run_id = next((o.run_id for o in observations if o.run_id), None)
        if run_id is not None:
            self._join(("run", run_id), trace_id, observations, notes)
            return
        bare = _is_bare(observations)
        conversation = _conversation_of(observations) if self._by_conversation or bare else None
        if conversation is not None:
            self._join(("conversation", conversation), trace_id, observations, notes)
            return
        if not bare:
            yield trace_id, observations, notes
            return
        answers = {
            call_id for o in observations for m in o.input_messages for call_id, _ in m.responses
        }
        asked = {
            c.id for o in observations for m in o.output_messages for c in m.tool_calls if c.id
        }
        key = next(
            (k for k, run in self._held.items() if k[0] == "calls" and run.open_calls & answers),
            ("calls", trace_id),
        )
        run = self._join(key, trace_id, observations, notes)
        run.open_calls = (run.open_calls - answers) | asked
        if not run.open_calls:
            del self._held[key]
            yield run.group_id, run.observations, run.notes

    def _join(
        self,
        key: tuple[str, str],
        trace_id: str,
        observations: list[Observation],
        notes: dict[str, Any],
    ) -> _Run:
        run = self._held.get(key)
        if run is None:
            group_id = key[1] if key[0] in ("conversation", "run") else trace_id
            run = self._held[key] = _Run(group_id, [], {})
        run.observations += observations
        for note, n in notes.items():
            run.notes[note] = run.notes.get(note, 0) + n
        return run

    def rest(self) -> Iterator[RunItems]:
        """The runs still held at the end of the file."""
        for run in self._held.values():
            yield run.group_id, run.observations, run.notes
        self._held.clear()
