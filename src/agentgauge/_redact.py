"""Keeping secrets out of what agentgauge writes: the store, results and reports.

Four things are hidden: the values of secret-looking keys (``api_key``, ``token``,
``password``...), credentials inside URLs (``https://user:pass@host``, ``?api_key=...``),
where trace content is shown, text that looks like a leaked credential, and in error messages
about a request, the API key that was sent with it.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agentgauge._screen import Screen

__all__ = [
    "CREDENTIAL_PATTERNS",
    "hide_credentials",
    "might_hold_secret",
    "redact_error",
    "redact_secrets",
    "redact_url",
]

# "token" but not "max_tokens" / "input_tokens" (counts) nor "tokenizer"; "pass" alone, not
# "passage" or "bypass_cache"
_KEY_PARTS = (
    r"api[_-]?key",
    "secret",
    r"token(?![a-z])",
    r"passw(?:or)?d",
    "authorization",
    r"auth[_-]?header",
    "credential",
    r"private[_-]?key",
    r"access[_-]?key",
)
_WHOLE_KEYS = ("pass", "pwd?")
_SECRET_KEY = re.compile(
    "|".join((*_KEY_PARTS, *(f"^{key}$" for key in _WHOLE_KEYS))), re.IGNORECASE
)
_ENV_NAME_KEY = re.compile(r"_env$|_env_var$", re.IGNORECASE)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.IGNORECASE)
_HIDDEN = "***"
_LETTER_ESCAPE = re.compile(r"\\[bfnrt]")

CREDENTIAL_PATTERNS: tuple[str, ...] = (
    r"""(?:password|\bpwd?)["']?\s*[:=]\s*(?:"[^"]*"|'[^']*'|\S+)""",
    r"""api[_-]?key["']?\s*[:=]\s*["']?[^\s"',}]+""",
    r"""(?:secret|token)["']?\s*[:=]\s*["']?[A-Za-z0-9_\-.]{20,}""",
    r"\bbearer\s+[A-Za-z0-9_\-.=]{16,}",
    r"\b(?:sk|rk|pk)-(?:live-|test-|proj-)?[A-Za-z0-9_\-]{16,}",
    r"\bsk_(?:live|test)_[A-Za-z0-9]{16,}",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----",
)
"""Text that looks like a leaked credential (regexes, case-insensitive)."""

_CREDENTIAL = re.compile("|".join(f"(?:{p})" for p in CREDENTIAL_PATTERNS), re.IGNORECASE)


@cache
def _credential_screen() -> Screen:
    # built on first use: reading the patterns' needles is work an import should not do
    return Screen([re.compile(p, re.IGNORECASE) for p in CREDENTIAL_PATTERNS])


@cache
def _secret_in_json() -> Screen:
    """What redact_secrets hides, as it shows in JSON text: a whole-key pattern is a quoted
    string."""
    return Screen(
        [
            *(re.compile(part, re.IGNORECASE) for part in _KEY_PARTS),
            *(re.compile(f'"{key}"', re.IGNORECASE) for key in _WHOLE_KEYS),
            *_credential_screen().patterns,
        ]
    )


def redact_url(text: str) -> str:
    """``text`` with the credentials of every URL in it hidden: the user and password before
    ``@``, and the values of secret-looking query parameters.

    Args:
        text: any text (a URL, or prose holding some).
    """
    if "://" not in text:
        return text
    return _URL.sub(lambda m: _clean_url(m.group(0)), text)


def _clean_url(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{_HIDDEN}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_KEY.search(k) for k, _ in pairs):
            query = urlencode(
                [(k, _HIDDEN if _SECRET_KEY.search(k) else v) for k, v in pairs], safe="*"
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_secrets(value: Any, *, hide_text: bool = False) -> Any:
    """A copy of ``value`` with the values of secret-looking keys replaced by ``"***"`` and
    the credentials of URLs in strings hidden (:func:`redact_url`).

    Keys naming an environment variable (``api_key_env``) are kept: they hold a name, not
    the secret.

    Args:
        value: JSON-like data.
        hide_text: also hide, in every string, text that looks like a leaked credential
            (:func:`hide_credentials`): for traces and results, whose strings come from models
            and tools.
    """
    if isinstance(value, dict):
        return {
            k: (_HIDDEN if v and _is_secret_key(str(k)) else redact_secrets(v, hide_text=hide_text))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_secrets(v, hide_text=hide_text) for v in value]
    if isinstance(value, str):
        return hide_credentials(value) if hide_text else redact_url(value)
    return value


@lru_cache(maxsize=4096)
def _is_secret_key(key: str) -> bool:
    # the same few keys recur in every trace and result
    return bool(_SECRET_KEY.search(key)) and not _ENV_NAME_KEY.search(key)


def might_hold_secret(text: str) -> bool:
    """Whether JSON text may have anything :func:`redact_secrets` with ``hide_text`` would hide
    (a secret-looking key, a credential-looking string or a URL); False only when it certainly
    has none, so that such text is written as it is.

    Args:
        text: JSON text.
    """
    if not text.isascii() or "\\u" in text or "\\/" in text:
        return True  # JSON can spell any letter or slash as an escape
    if "\\" in text:
        # the letter of an escape (\t, \n, ...) stands where the string has a tab or a line
        # break: a credential that must start a word can follow it
        text = _LETTER_ESCAPE.sub(" ", text)
    return "://" in text or _secret_in_json().search(text)


def hide_credentials(text: str) -> str:
    """``text`` with anything that looks like a leaked credential replaced, for showing trace
    content (:data:`CREDENTIAL_PATTERNS`, and URL credentials).

    Args:
        text: text to show.
    """
    text = redact_url(text)
    if not _credential_screen().may_match(text):
        return text
    return _CREDENTIAL.sub("[credential hidden]", text)


def redact_error(text: str, secret: str | None) -> str:
    """An error message about a request, safe to record: ``secret`` (the API key that was sent,
    which a server may echo) replaced by ``***``, and anything else that looks like a
    credential hidden (:func:`hide_credentials`).

    Args:
        text: the error message.
        secret: the API key sent with the request; None when none was sent.
    """
    if secret:
        text = text.replace(secret, _HIDDEN)
    return hide_credentials(text)
