"""Trace content made safe to show, once, before any page gets it: values under
secret-looking keys hidden, text that looks like a credential hidden, long text clipped.
(The page itself renders every string as text, never as markup.)"""

from __future__ import annotations

import json
from typing import Any

from agentgauge._redact import hide_credentials, redact_secrets

__all__ = ["MAX_CONTENT", "as_text", "clean", "clip"]

MAX_CONTENT = 20_000
"""Characters of one piece of content shown before it is clipped."""


def clip(text: str, max_content: int = MAX_CONTENT) -> str:
    """Text with credentials hidden, clipped to ``max_content`` characters.

    Args:
        text: the text.
        max_content: characters kept.
    """
    text = hide_credentials(text)
    if len(text) <= max_content:
        return text
    return text[:max_content] + f"… ({len(text)} chars)"


def clean(value: Any, max_content: int = MAX_CONTENT) -> Any:
    """JSON-like data made safe to show: the values of secret-looking keys hidden, and every
    string in it passed through :func:`clip`.

    Args:
        value: data from a trace, a metric's details or a record.
        max_content: characters kept of one string.
    """
    return _clip_strings(redact_secrets(value), max_content)


def _clip_strings(value: Any, max_content: int) -> Any:
    if isinstance(value, str):
        return clip(value, max_content)
    if isinstance(value, dict):
        return {str(k): _clip_strings(v, max_content) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_strings(v, max_content) for v in value]
    return value


def as_text(value: Any, max_content: int = MAX_CONTENT) -> str | None:
    """A value as text to show (strings as they are, anything else as indented JSON), made
    safe; None stays None.

    Args:
        value: the value.
        max_content: characters kept.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(redact_secrets(value), ensure_ascii=False, default=str, indent=1)
    return clip(value, max_content)
