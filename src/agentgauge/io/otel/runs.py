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

A trace that is only tool executions (a framework that runs a model's parallel calls in
threads without handing them its context: each call becomes a root span of a trace of its
own) is the call of the run whose model asked for it: held until a run comes whose model call
asked for that tool with the same call id, or the same name and arguments, it joins that run
under the span that holds the model's call. Held traces that no run claims stand alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentgauge.io.otel.observation import Kind, Observation
from agentgauge.io.otel.toolcalls import resolve_arguments

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


def _tops(observations: list[Observation]) -> list[Observation]:
    ids = {o.span.span_id for o in observations}
    return [o for o in observations if o.span.parent_id not in ids]


def _is_stray_tools(observations: list[Observation]) -> bool:
    """Whether a trace is tool executions alone (no model call, no agent in it)."""
    kinds = {o.kind for o in observations if o.kind is not None}
    return kinds == {Kind.tool} and all(o.kind is Kind.tool for o in _tops(observations))


def _same_call(tool: Observation, call: Any) -> bool:
    """Whether a tool execution is the model's call ``call`` (by id, else name and arguments)."""
    if tool.tool_call_id is not None and call.id is not None:
        return bool(tool.tool_call_id == call.id)
    if tool.tool != call.name:
        return False
    arguments, _ = resolve_arguments(tool.recorded_arguments, None, None)
    return bool(arguments) and arguments == call.arguments


def _adopt(strays: list[list[Observation]], observations: list[Observation]) -> list[Observation]:
    """The held tool traces that calls of this run's model asked for, put under the span that
    holds the asking model call (taken out of ``strays``)."""
    by_id = {o.span.span_id: o for o in observations}
    adopted: list[Observation] = []
    for caller in [o for o in observations if o.kind is Kind.model_call]:
        calls = [c for m in caller.output_messages for c in m.tool_calls]
        for call in calls:
            for held in strays:
                top = _tops(held)[0]
                if top.span.trace_id == caller.span.trace_id or not _same_call(top, call):
                    continue
                holder = by_id.get(caller.span.parent_id or "")
                while holder is not None and holder.kind is Kind.model_call:
                    holder = by_id.get(holder.span.parent_id or "")
                for obs in held:
                    obs.span.trace_id = caller.span.trace_id
                top.span.parent_id = holder.span.span_id if holder is not None else None
                adopted += held
                strays.remove(held)
                break
    return adopted


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
        self._strays: list[tuple[str, list[Observation], dict[str, Any]]] = []

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
        if _is_stray_tools(observations):
            self._strays.append((trace_id, observations, notes))
            return
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
            yield self._with_strays(trace_id, observations, notes)
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
            yield self._with_strays(run.group_id, run.observations, run.notes)

    def _with_strays(
        self, group_id: str, observations: list[Observation], notes: dict[str, Any]
    ) -> RunItems:
        """A run with the held tool traces its model asked for."""
        if not self._strays:
            return group_id, observations, notes
        held = [obs for _, obs, _ in self._strays]
        adopted = _adopt(held, observations)
        if adopted:
            kept = {id(h) for h in held}
            self._strays = [s for s in self._strays if id(s[1]) in kept]
        return group_id, observations + adopted, notes

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
        """The runs still held at the end of the file, and the tool traces no run claimed."""
        yield from self._strays
        self._strays.clear()
        for run in self._held.values():
            yield self._with_strays(run.group_id, run.observations, run.notes)
        self._held.clear()
