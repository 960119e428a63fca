"""The observation: what one span recorded, in terms common to every convention.

The conventions (:mod:`agentgauge.io.otel.conventions`) read a span's attributes and events;
the assembler (:mod:`agentgauge.io.otel.assemble`) reads observations only. An observation's
fields are resolved when first asked for, from the first convention that gives a value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentgauge._safe import DECODE_ERRORS, describe, unexpected
from agentgauge.io.otel.wire.span import BadField, Event, Span
from agentgauge.model import MOST_TOKENS, ToolCall, ToolSpec, Usage

__all__ = ["OPERATION_KINDS", "Kind", "Message", "Observation", "Resolver"]


class Kind(StrEnum):
    """What a span recorded, when it recorded something a Trace is made of."""

    model_call = "model_call"
    tool = "tool"
    agent = "agent"
    handoff = "handoff"
    plan = "plan"
    wrapper = "wrapper"
    definition = "definition"


OPERATION_KINDS: dict[str, Kind] = {
    "chat": Kind.model_call,
    "text_completion": Kind.model_call,
    "generate_content": Kind.model_call,
    "execute_tool": Kind.tool,
    "invoke_agent": Kind.agent,
    "handoff": Kind.handoff,
    "plan": Kind.plan,
    "invoke_workflow": Kind.wrapper,
    "wrapper": Kind.wrapper,
    "create_agent": Kind.definition,
    "definition": Kind.definition,
}
"""The GenAI operation names (the conventions' common vocabulary) and the kinds they are:
model calls, tool executions, agent runs, handoffs and plans make steps; a wrapper (a
workflow, a team, a graph around agents) and an agent's definition make none; any other
operation (``embeddings``, ``retrieval``, ``chain``, ...) makes none either."""


@dataclass
class Message:
    """A message a model call read or wrote.

    Args:
        role: ``system``, ``user``, ``assistant`` (or ``model``), ``tool``.
        text: its text; None for a tool's reply and for a message of calls only.
        tool_calls: the calls it asks for.
        responses: the tool results it carries, as ``(call id, result)``.
    """

    role: str
    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    responses: list[tuple[str, Any]] = field(default_factory=list)


Resolver = Callable[[Span, str], Any]
"""``resolve(span, field)``: the value of one observation field for a span."""


class Observation:
    """One span as the conventions read it.

    Every field is None (an empty list for messages and tool specs) when no convention found
    it. The span itself stays available for its place in the tree and its times.

    Args:
        span: the span.
        resolve: reads one field from the span (the conventions' resolver).
    """

    __slots__ = ("_resolve", "_values", "problems", "span")

    def __init__(self, span: Span, resolve: Resolver) -> None:
        self.span = span
        self._resolve = resolve
        self._values: dict[str, Any] = {}
        self.problems: list[BadField] = []
        """The values left out of the observation (a convention could not read them), as
        warnings naming the span and the field."""

    def packed(self) -> tuple[Any, ...]:
        """The observation as plain values, the span's fields in order (no field names, one
        object for the whole span), for :meth:`unpacked` in another process: a batch of runs
        sent to a worker holds thousands of spans."""
        s = self.span
        events = [(ev.name, ev.attributes) for ev in s.events] if s.events else None
        problems = [(p.field, str(p), p.warning) for p in self.problems] if self.problems else None
        return (
            self._resolve,
            self._values,
            problems,
            s.trace_id,
            s.span_id,
            s.parent_id,
            s.name,
            s.start_ns,
            s.end_ns,
            s.attributes,
            events,
            s.status_error,
            s.status_message,
            s.resource,
            s.scope,
            s.line,
            s.source_format,
        )

    @classmethod
    def unpacked(cls, packed: tuple[Any, ...]) -> Observation:
        """The observation :meth:`packed` gave, its values resolved so far and its problems
        with it.

        Args:
            packed: what :meth:`packed` returned.
        """
        resolve, values, problems, *fields = packed
        events = fields[7]
        fields[7] = [Event(name, attributes) for name, attributes in events] if events else []
        observation = cls.__new__(cls)
        observation.span = Span(*fields)
        observation._resolve = resolve
        observation._values = values
        observation.problems = [BadField(f, m, warning=w) for f, m, w in problems or ()]
        return observation

    def _get(self, name: str) -> Any:
        if name not in self._values:
            try:
                self._values[name] = self._resolve(self.span, name)
            except Exception as exc:  # a value no convention can read is left out
                why = describe(exc) if isinstance(exc, DECODE_ERRORS) else unexpected(exc)
                self._leave_out(name, f"{why}: the value is left out")
                self._values[name] = None
        return self._values[name]

    def _leave_out(self, name: str, message: str) -> None:
        field = f"span {self.span.span_id}: {name}"
        self.problems.append(BadField(field, message, warning=True))

    def _count(self, name: str) -> int | None:
        """A token count, left out (with a warning) when it is not a whole number from 0 to
        :data:`~agentgauge.model.MOST_TOKENS`: an infinite or 4,000-digit count is corrupt."""
        value = self._get(name)
        if value is None:
            return None
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and 0 <= value <= MOST_TOKENS
            and value == int(value)
        ):
            return int(value)
        try:
            shown = str(value)
        except ValueError:  # more digits than Python writes
            shown = "a number of thousands of digits"
        shown = shown if len(shown) <= 24 else shown[:20] + "..."
        self._leave_out(
            name, f"a token count of {shown} is not a whole number from 0 to 10^15: left out"
        )
        self._values[name] = None
        return None

    @property
    def operation(self) -> str | None:
        """The GenAI operation the span performed (``chat``, ``execute_tool``,
        ``invoke_agent``, ``handoff``, ...), or the convention's own name for another kind of
        span; None when no convention knows the span."""
        value: str | None = self._get("operation")
        return value

    @property
    def kind(self) -> Kind | None:
        """What the span makes: a model call, a tool execution, an agent run, a handoff, a
        plan; None for a span that makes no step."""
        return OPERATION_KINDS.get(self.operation or "")

    @property
    def agent_name(self) -> str | None:
        """The agent's name as the span records it (None when it records none)."""
        value: str | None = self._get("agent_name")
        return value

    @property
    def agent(self) -> str:
        """The agent's name, else the span's name."""
        return self.agent_name or self.span.name

    @property
    def tool(self) -> str:
        """The tool's name, else the span's name."""
        name: str | None = self._get("tool_name")
        return name or self.span.name

    @property
    def tool_call_id(self) -> str | None:
        """The id of the tool call the span executed."""
        value = self._get("tool_call_id")
        return str(value) if value is not None else None

    @property
    def recorded_arguments(self) -> Any:
        """The tool call's arguments as recorded: a JSON object, a bare value, or None."""
        return self._get("arguments")

    @property
    def arguments(self) -> dict[str, Any]:
        """The tool call's arguments; ``{}`` when none were recorded as a JSON object."""
        value = self._get("arguments")
        return value if isinstance(value, dict) else {}

    @property
    def raw_arguments(self) -> Any:
        """The recorded arguments when they are not a JSON object (else None)."""
        value = self._get("arguments")
        return None if isinstance(value, dict) else value

    @property
    def result(self) -> Any:
        """The tool's result."""
        return self._get("result")

    @property
    def error(self) -> str | None:
        """Why the span failed: its status, else what a convention records; None when it did
        not fail."""
        value: str | None = self.span.error or self._get("error")
        return value

    @property
    def model(self) -> str | None:
        """The model asked for, else the model that answered."""
        value: str | None = self._get("model")
        return value

    @property
    def response_id(self) -> str | None:
        """The provider's id of the model's response."""
        value: str | None = self._get("response_id")
        return value

    @property
    def input_messages(self) -> list[Message]:
        """The messages the model call (or the agent) was given."""
        messages: list[Message] | None = self._get("input_messages")
        if messages:
            return messages
        text: str | None = self._get("input_text")
        return [Message("user", text)] if text else []

    @property
    def output_messages(self) -> list[Message]:
        """The messages the model call (or the agent) gave."""
        messages: list[Message] | None = self._get("output_messages")
        if messages:
            return messages
        text: str | None = self._get("output_text")
        return [Message("assistant", text)] if text else []

    @property
    def usage(self) -> Usage | None:
        """The tokens the call used, as the provider reported them."""
        inp, out = self._count("input_tokens"), self._count("output_tokens")
        if inp is None and out is None:
            return None
        return Usage(input_tokens=inp, output_tokens=out)

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """Every tool whose schema the span records."""
        specs: list[ToolSpec] = self._get("tool_specs") or []
        return specs

    @property
    def request_params(self) -> dict[str, Any]:
        """The request's parameters (model, temperature, ...)."""
        params: dict[str, Any] = self._get("request_params") or {}
        return params

    @property
    def conversation_id(self) -> str | None:
        """The conversation (session, thread) the span belongs to."""
        value = self._get("conversation_id")
        return str(value) if value is not None else None

    @property
    def run_id(self) -> str | None:
        """The run (a team's, a group chat's, a workflow's execution) the span belongs to, when
        a framework records one run over several traces."""
        value = self._get("run_id")
        return str(value) if value is not None else None

    @property
    def responded(self) -> bool:
        """Whether a model answered: the span records an answer, usage, a response id, a
        finish reason or response model, or an error. A model-call span without any of it
        prepared a call rather than made one."""
        return bool(
            self.output_messages
            or self.usage is not None
            or self.response_id is not None
            or self.error is not None
            or self._get("responded")
        )

    @property
    def handoff_source(self) -> str | None:
        """For a handoff: the agent that hands off."""
        value: str | None = self._get("handoff_source")
        return value

    @property
    def handoff_target(self) -> str | None:
        """For a handoff: the agent that takes over."""
        value: str | None = self._get("handoff_target")
        return value
