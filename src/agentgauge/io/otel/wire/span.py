"""The span every wire format is read into: ids, times, attributes, events and status, with
nothing interpreted yet (what a span means is the conventions' business)."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "EPOCH",
    "BadField",
    "Event",
    "Span",
    "first",
    "hex_id",
    "nanos",
    "time_or_none",
    "to_datetime",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HEX = re.compile(r"[0-9a-fA-F]+")


class BadField(ValueError):
    """A field of a span that cannot be read; ``field`` is its dotted path. A ``warning`` is
    a value left out or replaced, the span it belongs to read without it."""

    def __init__(self, field: str, message: str, *, warning: bool = False) -> None:
        super().__init__(message)
        self.field = field
        self.warning = warning


@dataclass
class Event:
    """A span event, or a log record joined to its span."""

    name: str
    attributes: dict[str, Any]


@dataclass
class Span:
    """One span of any wire format.

    Args:
        trace_id: lowercase hex.
        span_id: lowercase hex.
        parent_id: the parent's span id; None for a root.
        name: the span name.
        start_ns: Unix nanoseconds.
        end_ns: Unix nanoseconds.
        attributes: plain JSON values.
        events: its events (and the GenAI log records naming it).
        status_error: whether its status is ERROR.
        status_message: the status description.
        resource: the resource attributes.
        scope: the instrumentation scope's name.
        line: where its document starts in the file.
        source_format: the wire format it was read from.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    events: list[Event]
    status_error: bool
    status_message: str | None
    resource: dict[str, Any]
    scope: str | None
    line: int
    source_format: str = "otlp-json"

    @property
    def duration_s(self) -> float | None:
        """Seconds from start to end; None when either is unknown."""
        if self.start_ns is None or self.end_ns is None:
            return None
        return max(0, self.end_ns - self.start_ns) / 1e9

    @property
    def error(self) -> str | None:
        """Why the span failed: the status message, else the message of its ``exception``
        event (pydantic-ai records a failed tool that way), else ``error.type``; None when it
        did not fail."""
        error_type = self.attributes.get("error.type")
        if self.status_error:
            if self.status_message:
                return self.status_message
            for ev in self.events:
                if ev.name == "exception":
                    _, text = first(ev.attributes, "exception.message", "exception.type")
                    if text is not None:
                        return str(text)
            return str(error_type) if error_type else "error"
        return str(error_type) if error_type else None


def first(d: dict[str, Any], *keys: str) -> tuple[str, Any]:
    """The first of ``keys`` with a value in ``d`` (not None, not empty text) and that value;
    ``(keys[0], None)`` when none has one.

    Args:
        d: a mapping.
        keys: the keys, in order of preference.
    """
    for key in keys:
        if d.get(key) not in (None, ""):
            return key, d[key]
    return keys[0], None


def hex_id(value: Any) -> str | None:
    """An id as lowercase hex: a ``0x`` prefix is dropped, and the base64 of protobuf's JSON
    mapping (Tempo, ``MessageToJson``: 24 characters for a trace id, 12 for a span id) is
    decoded.

    Args:
        value: the id as the export gives it.
    """
    if value is None or value == "":
        return None
    text = str(value)
    if text.startswith("0x") and _HEX.fullmatch(text[2:]):
        return text[2:]  # not the base64 of an id that happens to begin with "0x"
    if len(text) in (12, 24) and not _HEX.fullmatch(text):
        try:
            return base64.b64decode(text, validate=True).hex()
        except binascii.Error:
            return text
    return text


def nanos(value: Any, where: str) -> int | None:
    """Unix nanoseconds from an integer, a numeric string or an ISO 8601 time.

    Args:
        value: the time as the export gives it.
        where: the field's path, for the error.

    Raises:
        BadField: for a value that is no time.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise BadField(where, f"expected a time, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            message = f"expected Unix nanoseconds or ISO 8601, got {value!r}"
            raise BadField(where, message) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return (moment - EPOCH) // timedelta(microseconds=1) * 1000
    raise BadField(where, f"expected a time, got {type(value).__name__}")


_EARLIEST_NS = (datetime(1, 1, 2, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1) * 1000
_LATEST_NS = (datetime(9999, 12, 31, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1) * 1000


def time_or_none(value: Any, where: str, problems: list[BadField]) -> int | None:
    """:func:`nanos` of a time that a span can do without: one that is no time, or outside
    the years 1 to 9999 (which no date holds), is left out with a warning in ``problems``.

    Args:
        value: the time as the export gives it.
        where: the field's path.
        problems: where the warning goes.
    """
    try:
        ns = nanos(value, where)
    except BadField as exc:
        problems.append(BadField(where, f"{exc}: the time is left out", warning=True))
        return None
    except (OverflowError, ValueError) as exc:  # an ISO time a date cannot hold
        problems.append(BadField(where, f"not a time ({exc}): the time is left out", warning=True))
        return None
    if ns is not None and not _EARLIEST_NS <= ns <= _LATEST_NS:
        message = f"a time of {str(ns)[:30]} ns is outside the years 1 to 9999: it is left out"
        problems.append(BadField(where, message, warning=True))
        return None
    return ns


def to_datetime(ns: int | None) -> datetime | None:
    """Unix nanoseconds as an aware datetime (microsecond precision).

    Args:
        ns: Unix nanoseconds, or None.
    """
    if ns is None:
        return None
    return EPOCH + timedelta(microseconds=ns // 1000)
