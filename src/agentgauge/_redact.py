"""Keeping secrets out of what agentgauge writes: the store, results and reports.

Four things are hidden: the values of secret-looking keys (``api_key``, ``token``,
``password``...), credentials inside URLs (``https://user:pass@host``, ``?api_key=...``),
where trace content is shown, text that looks like a leaked credential, and in error messages
about a request, the API key that was sent with it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
_SECRET_KEY = re.compile(
    r"(api[_-]?key|secret|token(?![a-z])|passw(?:or)?d|^pass$|authorization|auth[_-]?header"
    r"|credential|private[_-]?key|access[_-]?key|^pwd?$)",
    re.IGNORECASE,
)
# the keys _SECRET_KEY only matches whole, as they appear in JSON text
_SHORT_SECRET_KEY = re.compile(r'"(?:pass|pwd?)"\s*:', re.IGNORECASE)
_ENV_NAME_KEY = re.compile(r"_env$|_env_var$", re.IGNORECASE)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.IGNORECASE)
_HIDDEN = "***"

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


def redact_url(text: str) -> str:
    """``text`` with the credentials of every URL in it hidden: the user and password before
    ``@``, and the values of secret-looking query parameters.

    Args:
        text: any text (a URL, or prose holding some).
    """
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
            k: (
                _HIDDEN
                if _SECRET_KEY.search(str(k)) and not _ENV_NAME_KEY.search(str(k)) and v
                else redact_secrets(v, hide_text=hide_text)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_secrets(v, hide_text=hide_text) for v in value]
    if isinstance(value, str):
        return hide_credentials(value) if hide_text else redact_url(value)
    return value


def might_hold_secret(text: str) -> bool:
    """Whether JSON text has anything :func:`redact_secrets` would hide (a secret-looking key,
    a credential-looking string or a URL): text without any is written as it is.

    Args:
        text: JSON text.
    """
    return bool(
        _SECRET_KEY.search(text)
        or _SHORT_SECRET_KEY.search(text)
        or _CREDENTIAL.search(text)
        or "://" in text
    )


def hide_credentials(text: str) -> str:
    """``text`` with anything that looks like a leaked credential replaced, for showing trace
    content (:data:`CREDENTIAL_PATTERNS`, and URL credentials).

    Args:
        text: text to show.
    """
    return _CREDENTIAL.sub("[credential hidden]", redact_url(text))


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
