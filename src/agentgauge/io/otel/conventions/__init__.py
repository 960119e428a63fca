"""Instrumentation conventions: each reads what a span means in its own terms and gives the
fields of one :class:`~agentgauge.io.otel.observation.Observation`.

A convention is a class of readers, one per field it knows, each ``reader(span) -> value or
None``, registered with :func:`convention`::

    @convention("myframework", rank=30)
    class MyFramework(Convention):
        '''MyFramework's spans (myframework.* attributes).'''

        def operation(self, span: Span) -> str | None:
            return {"llm": "chat", "tool": "execute_tool"}.get(span.attributes.get("mf.kind"))

        def tool_name(self, span: Span) -> str | None:
            return text(span, "mf.tool")

An observation's field is the first value the conventions give, in the order of their rank
(lower first; a span may carry several conventions at once); ``tool_specs`` are collected
from all of them and ``request_params`` merged, the lower rank winning. A module of this
package registers itself when the registry is first used; other packages add theirs through
the ``agentgauge.conventions`` entry-point group.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agentgauge.io.otel.observation import Message, Observation
from agentgauge.io.otel.wire.span import Span, first
from agentgauge.model import ToolSpec
from agentgauge.registry import Registry

__all__ = [
    "CONVENTIONS",
    "FIELDS",
    "Convention",
    "ConventionInfo",
    "convention",
    "observe",
    "resolve",
    "text",
    "tool_error",
]

C = TypeVar("C", bound=type["Convention"])


class Convention:
    """The readers of one convention; each returns None for what the convention does not
    record (the default for every field).

    ``tool_error_texts`` are the texts a framework gives the model in place of a tool's result
    when the tool failed, as regular expressions matched at the start of the result; the
    group ``error``, when there is one, is the error's message. They mark the failures of a
    run recorded only in its model calls' messages.
    """

    tool_error_texts: tuple[str, ...] = ()

    def operation(self, span: Span) -> str | None:
        """The GenAI operation name (``chat``, ``execute_tool``, ``invoke_agent``,
        ``handoff``, ``plan``), or another name for a span that makes no step."""
        return None

    def agent_name(self, span: Span) -> str | None:
        """The name of the agent the span runs (or hands off from)."""
        return None

    def tool_name(self, span: Span) -> str | None:
        """The name of the tool the span executes."""
        return None

    def tool_call_id(self, span: Span) -> str | None:
        """The id of the tool call the span executes."""
        return None

    def arguments(self, span: Span) -> Any:
        """The tool call's arguments, a JSON object (or what was recorded instead)."""
        return None

    def result(self, span: Span) -> Any:
        """The tool's result."""
        return None

    def error(self, span: Span) -> str | None:
        """Why the span failed, when its status does not say."""
        return None

    def model(self, span: Span) -> str | None:
        """The model asked for (else the one that answered)."""
        return None

    def response_id(self, span: Span) -> str | None:
        """The provider's id of the response."""
        return None

    def input_messages(self, span: Span) -> list[Message] | None:
        """The messages given to the model (or the agent)."""
        return None

    def output_messages(self, span: Span) -> list[Message] | None:
        """The messages the model (or the agent) gave."""
        return None

    def input_text(self, span: Span) -> str | None:
        """The input as plain text, when the span records no messages."""
        return None

    def output_text(self, span: Span) -> str | None:
        """The output as plain text, when the span records no messages."""
        return None

    def input_tokens(self, span: Span) -> int | None:
        """Input tokens, as the provider reported them."""
        return None

    def output_tokens(self, span: Span) -> int | None:
        """Output tokens, as the provider reported them."""
        return None

    def tool_specs(self, span: Span) -> list[ToolSpec] | None:
        """The tools whose schemas the span records."""
        return None

    def request_params(self, span: Span) -> dict[str, Any] | None:
        """The request's parameters (temperature, top_p, ...)."""
        return None

    def conversation_id(self, span: Span) -> str | None:
        """The conversation, session or thread the span belongs to."""
        return None

    def run_id(self, span: Span) -> str | None:
        """The run (a team's, a group chat's, a workflow's execution) the span belongs to,
        for a framework that records one run over several traces: traces with the same run
        id make one Trace."""
        return None

    def responded(self, span: Span) -> bool | None:
        """True when the span records what only a model's response gives (a finish reason,
        the response's model), beside the answer, usage and response id that tell it too."""
        return None

    def handoff_source(self, span: Span) -> str | None:
        """For a handoff span: the agent handing off."""
        return None

    def handoff_target(self, span: Span) -> str | None:
        """For a handoff span: the agent taking over."""
        return None


FIELDS: tuple[str, ...] = tuple(
    name
    for name in vars(Convention)
    if not name.startswith("_") and callable(vars(Convention)[name])
)
"""The fields a convention may read, the names of :class:`Convention`'s readers."""


@dataclass(frozen=True)
class ConventionInfo:
    """A registered convention.

    Args:
        name: its name.
        readers: an instance of its class.
        rank: its place in the order (lower first).
    """

    name: str
    readers: Convention
    rank: int


def convention(name: str, *, rank: int = 50, description: str = "") -> Callable[[C], C]:
    """Register a :class:`Convention` subclass.

    Args:
        name: the convention's name.
        rank: where its readers come in the order (lower first): 10 for the GenAI
            conventions' attributes, 50 for OpenInference, 90 for what span names tell.
        description: one line for ``agentgauge plugins`` (default: the class docstring's
            first line).
    """

    def info(cls: C) -> ConventionInfo:
        if not (isinstance(cls, type) and issubclass(cls, Convention)):
            raise TypeError(f"@convention({name!r}) decorates a Convention subclass, not {cls!r}")
        return ConventionInfo(name, cls(), rank)

    return CONVENTIONS.decorator(name, info, description=description)


CONVENTIONS: Registry[ConventionInfo] = Registry(
    "span convention",
    "agentgauge.conventions",
    builtins=("agentgauge.io.otel.conventions",),
    adopt=lambda name, obj: convention(name)(obj),
)
"""Every convention by name."""

_Reader = Callable[[Span], Any]
_readers_cache: tuple[int, dict[str, list[_Reader]]] | None = None
_tool_errors_cache: tuple[int, list[re.Pattern[str]]] | None = None


def _readers() -> dict[str, list[_Reader]]:
    """Each field's readers, in rank order: only the conventions that read the field."""
    global _readers_cache
    CONVENTIONS.load()
    if _readers_cache is None or _readers_cache[0] != CONVENTIONS.version:
        ordered = sorted((e.value for e in CONVENTIONS.entries()), key=lambda i: i.rank)
        by_field = {
            name: [
                getattr(info.readers, name)
                for info in ordered
                if getattr(type(info.readers), name) is not getattr(Convention, name)
            ]
            for name in FIELDS
        }
        _readers_cache = (CONVENTIONS.version, by_field)
    return _readers_cache[1]


def resolve(span: Span, name: str) -> Any:
    """One observation field of a span: the first value the conventions give (``tool_specs``
    from all of them, ``request_params`` merged, the lower rank winning).

    Args:
        span: the span.
        name: one of :data:`FIELDS`.
    """
    readers = _readers()[name]
    if name == "tool_specs":
        return [spec for read in readers for spec in read(span) or []]
    if name == "request_params":
        params: dict[str, Any] = {}
        for read in reversed(readers):
            params.update(read(span) or {})
        return params
    for read in readers:
        value = read(span)
        if value is not None and not (isinstance(value, str | list | dict) and not value):
            return value
    return None


def tool_error(result: Any) -> str | None:
    """The error a tool's result reports in a framework's words (see
    :attr:`Convention.tool_error_texts`), else None.

    Args:
        result: the result the model was given.
    """
    global _tool_errors_cache
    if not isinstance(result, str):
        return None
    CONVENTIONS.load()
    if _tool_errors_cache is None or _tool_errors_cache[0] != CONVENTIONS.version:
        patterns = [
            re.compile(pattern, re.DOTALL)
            for entry in CONVENTIONS.entries()
            for pattern in entry.value.readers.tool_error_texts
        ]
        _tool_errors_cache = (CONVENTIONS.version, patterns)
    text = result.strip()
    for pattern in _tool_errors_cache[1]:
        found = pattern.match(text)
        if found is not None:
            message = found.groupdict().get("error")
            return message.strip() if message and message.strip() else text
    return None


def observe(span: Span) -> Observation:
    """A span as an observation, its fields read by the registered conventions.

    Args:
        span: the span.
    """
    return Observation(span, resolve)


def text(span: Span, *keys: str) -> str | None:
    """The first of the span's attributes ``keys`` that has a value, as text.

    Args:
        span: the span.
        keys: attribute names, in order of preference.
    """
    _, value = first(span.attributes, *keys)
    return str(value) if value is not None else None
