"""The one boundary between untrusted text and agentgauge: decoding that fails with one error.

Whatever a reader is given (a trace line, a dataset, a model's answer, a suite file), decoding
it can fail in more ways than "not JSON": an integer longer than Python converts
(``ValueError``), nesting deeper than the stack (``RecursionError``), a number too large for a
float or a date (``OverflowError``), text that is not Unicode (``UnicodeError``). Every reader
decodes through this module, so each of these becomes a :class:`DecodeError` with a message for
a user, which the reader records against the line, sample, span or paper, and goes on.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "DECODE_ERRORS",
    "NESTED_TOO_DEEPLY",
    "READ_ERRORS",
    "DecodeError",
    "describe",
    "dumps",
    "guarded",
    "loads",
    "may_hold_surrogate",
    "replace_surrogates",
    "size_limit",
    "storable_text",
    "unexpected",
    "without_surrogates",
]

T = TypeVar("T")

DECODE_ERRORS: tuple[type[Exception], ...] = (
    ValueError,  # json.JSONDecodeError, tomllib.TOMLDecodeError, the int-digits limit
    RecursionError,
    OverflowError,
    UnicodeError,
)
"""Every way decoding untrusted data can fail."""

READ_ERRORS: tuple[type[Exception], ...] = (OSError, *DECODE_ERRORS)
"""Every way reading a file of untrusted data can fail."""

NESTED_TOO_DEEPLY = "invalid JSON: nested too deeply to read"


class DecodeError(ValueError):
    """Data that could not be decoded; the message says why, in words for a user."""


def describe(exc: BaseException) -> str:
    """What a decoding failure means, for a user (no traceback, no Python jargon).

    Args:
        exc: one of :data:`DECODE_ERRORS` (or a :class:`DecodeError`).
    """
    if isinstance(exc, DecodeError):
        return str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at column {exc.colno}"
    if isinstance(exc, RecursionError):
        return NESTED_TOO_DEEPLY
    if isinstance(exc, OverflowError):
        return f"a number too large to use ({exc})"
    if isinstance(exc, UnicodeError):
        return "text that is not valid Unicode (a lone surrogate or a byte that is not UTF-8)"
    text = str(exc)
    if "integer string conversion" in text:
        return f"an integer with more than {sys.get_int_max_str_digits()} digits"
    return text


def unexpected(exc: BaseException) -> str:
    """What a reader's own failure on a record was, for a user: the error's kind and message,
    and that it is agentgauge's to fix (a reader keeps the record apart and goes on).

    Args:
        exc: an exception the reader did not expect.
    """
    detail = str(exc)
    detail = detail if len(detail) <= 200 else detail[:200] + "..."
    return (
        f"agentgauge could not read it ({type(exc).__name__}: {detail}); please report this "
        "with the record"
    )


def loads(text: str | bytes) -> Any:
    """``json.loads`` that fails only with :class:`DecodeError`.

    Args:
        text: JSON text from anywhere.

    Raises:
        DecodeError: the text cannot be decoded (its message says why).
    """
    return guarded(json.loads, text)


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that fails only with :class:`DecodeError` (a huge integer, a deep
    nesting or a circular value cannot be written as JSON).

    Args:
        value: the value.
        kwargs: passed on to :func:`json.dumps`.

    Raises:
        DecodeError: the value cannot be written (its message says why).
    """
    return guarded(json.dumps, value, **kwargs)


def guarded(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)`` with every decoding failure turned into a
    :class:`DecodeError`.

    Args:
        function: a decoder or converter of untrusted data.
        args: its arguments.
        kwargs: its keyword arguments.

    Raises:
        DecodeError: the call failed with one of :data:`DECODE_ERRORS`.
    """
    try:
        return function(*args, **kwargs)
    except DecodeError:
        raise
    except DECODE_ERRORS as exc:
        raise DecodeError(describe(exc)) from None


def size_limit(variable: str, default: int) -> int:
    """A cap in bytes on what agentgauge reads: the environment variable's value when it is
    set, else ``default``.

    Args:
        variable: e.g. ``AGENTGAUGE_MAX_LINE_BYTES``.
        default: the cap when the variable is unset.

    Raises:
        AgentgaugeError: the variable does not hold a positive integer.
    """
    from agentgauge.errors import AgentgaugeError

    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise AgentgaugeError(f"{variable} must be a positive number of bytes, not {text!r}")
    return int(text)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def may_hold_surrogate(json_text: str) -> bool:
    """Whether JSON text may decode to a lone surrogate (it escapes one: text read as UTF-8
    holds none otherwise).

    Args:
        json_text: the JSON text.
    """
    # a backslash first: CPython finds one character with memchr, two by a loop over the text
    # (~2 ns a character where neither is, ~50 times as long)
    return (
        "\\" in json_text and "\\u" in json_text and _SURROGATE_ESCAPE.search(json_text) is not None
    )


def without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings and keys replaced by U+FFFD (UTF-8,
    and so a file or the store, cannot hold one); a pair of surrogates is one character
    already, once decoded.

    Args:
        value: decoded JSON.
    """
    return replace_surrogates(value)[0]


def replace_surrogates(value: Any) -> tuple[Any, list[tuple[str | int, ...]]]:
    """``value`` with every lone surrogate in its strings and keys replaced by U+FFFD, and
    where each was: the path of every string or key replaced (a key is named as it is after
    the replacement), in document order.

    Args:
        value: decoded JSON (or a model's dump).
    """
    where: list[tuple[str | int, ...]] = []
    return _replaced(value, (), where), where


def _replaced(value: Any, at: tuple[str | int, ...], where: list[tuple[str | int, ...]]) -> Any:
    if isinstance(value, str):
        if _LONE_SURROGATE.search(value) is None:
            return value
        where.append(at)
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replaced(v, (*at, i), where) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = k
            if isinstance(k, str) and _LONE_SURROGATE.search(k) is not None:
                key = clean = _LONE_SURROGATE.sub("\ufffd", k)
                n = 1
                while key in value or key in out:  # keys that differ only there stay apart
                    n += 1
                    key = f"{clean} ({n})"
                where.append((*at, key))
            out[key] = _replaced(v, (*at, key), where)
        return out
    return value


def storable_text(text: str) -> str:
    """``text`` as something a file or SQLite can hold: a lone surrogate (which UTF-8 cannot
    encode) is written as its escape, the rest is unchanged.

    Args:
        text: any text.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
