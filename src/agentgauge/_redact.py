"""Keeping secrets out of what agentgauge writes: the store, results and reports.

What is hidden, and how a value keeps its type and shape:

- a **string** held by a secret-looking key (``api_key``, ``token``, ``password``...), directly
  or in a list, becomes ``"***"`` (an empty string stays empty); numbers, booleans and ``null``
  under such a key are kept, and an object under it is screened by its own keys, so that a
  list stays a list of strings and a JSON Schema property named ``password`` stays a schema;
- the ``value`` of a header written as ``{"name": "Authorization", "value": ...}``;
- in every string and every key, text that looks like a credential (the rules of
  :mod:`agentgauge._secrets`: gitleaks' and agentgauge's) becomes ``[credential hidden]``,
  URLs lose their ``user:password@`` and the values of secret-looking query and fragment
  parameters, and a string that holds a JSON object or list is screened as JSON;
- in error messages about a request, the API key that was sent with it.
"""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agentgauge._safe import DECODE_ERRORS, dumps, loads
from agentgauge._screen import Needle
from agentgauge._secrets import Rule, RuleSet, credential_rules

__all__ = [
    "HIDDEN",
    "HIDDEN_CREDENTIAL",
    "hide_credentials",
    "might_hold_secret",
    "redact_error",
    "redact_json",
    "redact_secrets",
    "redact_url",
]

HIDDEN = "***"
"""What stands for a string held by a secret-looking key."""

HIDDEN_CREDENTIAL = "[credential hidden]"
"""What stands for credential-looking text inside a string or a key."""

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
    "cookie",
)
_WHOLE_KEYS = ("pass", "pwd?")
# a whole key ends the key (\Z: "$" also matches before a final newline, as in "pass\n")
_SECRET_KEY = re.compile(
    "|".join((*_KEY_PARTS, *(f"^{key}\\Z" for key in _WHOLE_KEYS))), re.IGNORECASE
)
_ENV_NAME_KEY = re.compile(r"_env$|_env_var$", re.IGNORECASE)
# URL parameters that carry a credential though their names are not secret-looking
_SECRET_PARAMS = frozenset({"key", "sig", "signature", "auth"})
_HEADER_NAME_KEYS = frozenset({"name", "key", "header"})
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.IGNORECASE)
# the password of a URL that documents a format ("http://user:password@host") is no secret
_PLACEHOLDER = re.compile(
    r"password|passwd|pass|pwd|secret|\*+|x+|<[^>]*>|\{[^}]*\}|\$\{[^}]*\}|%[A-Z_]+%", re.IGNORECASE
)
_JSON_ESCAPE = re.compile(r'\\(?:u[0-9a-fA-F]{4}|["\\/bfnrt])')
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\n", "f": "\n", "n": "\n", "r": "\n", "t": "\n"}
# the escapes of one character after the backslash, other than the backslash itself
_SHORT_ESCAPES = tuple(("\\" + k, v) for k, v in _ESCAPED.items() if k != "\\")
_LONGEST_JSON_IN_STRING = 1 << 20
# What follows "token" in a key ending in "token" or "tokens" that holds a short integer (a usage
# count: "input_tokens": 412): redaction keeps numbers, and no rule that owns the needle "token"
# matches from there (a secret-looking value needs a string or a longer run), so the needle is
# not searched there and a trace's usage blocks cost no regex search.
_COUNT_KEY_END = r's?"\s*:\s*\d{1,15}[,}\]]'
# In plain JSON text (no escaped quote: every quote is one of the JSON's own), "token" followed
# by one of these ends a key that holds a number: redaction keeps numbers, and nothing follows
# "token" in the key for a rule that owns the needle to match, whatever number it is.
_NUMBER_KEY_END = tuple(
    f'{plural}"{colon}{first}'
    for plural in ("", "s")
    for colon in (":", ": ")
    for first in "-0123456789"
)
# In plain JSON text, a needle of a key-value rule (gitleaks' generic-api-key owns "key", its
# cohere rule "cohere") followed by one of these ends a key that holds an object or a list (a
# metric's "per_key" details, a "coherence" object): such a rule needs a value of word
# characters after the colon, never a bracket, so none matches from there.
_CONTAINER_KEY_END = tuple(f'"{colon}{bracket}' for colon in (":", ": ") for bracket in "{[")


def redact_url(text: str) -> str:
    """``text`` with the credentials of every URL in it hidden: the user and password before
    ``@``, and the values of secret-looking query and fragment parameters
    (``?api-key=``, ``&sig=``, ``#access_token=``).

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
        user, host = netloc.rsplit("@", 1)
        if not _PLACEHOLDER.fullmatch(user.partition(":")[2]):
            netloc = f"{HIDDEN}@{host}"
    query, fragment = _clean_params(parts.query), _clean_params(parts.fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _clean_params(params: str) -> str:
    """A query (or a fragment written like one) with its secret values hidden."""
    if "=" not in params:
        return params
    pairs = parse_qsl(params, keep_blank_values=True)
    if not any(_is_secret_param(k) for k, _ in pairs):
        return params
    return urlencode([(k, HIDDEN if _is_secret_param(k) else v) for k, v in pairs], safe="*")


def _is_secret_param(name: str) -> bool:
    return _is_secret_key(name) or name.lower() in _SECRET_PARAMS


def redact_secrets(value: Any, *, hide_text: bool = False) -> Any:
    """A copy of ``value`` with its secrets hidden, every value keeping its type and shape:
    strings held by secret-looking keys become ``"***"``, keys and (with ``hide_text``)
    strings lose credential-looking text, URLs lose their credentials.

    Keys naming an environment variable (``api_key_env``) are kept: they hold a name, not
    the secret.

    Args:
        value: JSON-like data.
        hide_text: also hide, in every string, text that looks like a leaked credential
            (:func:`hide_credentials`): for traces and results, whose strings come from models
            and tools.
    """
    return _redact(value, hide_text, False)


def _redact(value: Any, hide_text: bool, secret: bool) -> Any:
    if isinstance(value, str):
        if secret and value:
            return HIDDEN
        return _clean_string(value) if hide_text else redact_url(value)
    if isinstance(value, list):
        return [_redact(v, hide_text, secret) for v in value]
    if isinstance(value, dict):
        header = _is_secret_header(value)
        out: dict[Any, Any] = {}
        for key, item in value.items():
            name = _clean_key(key, out)
            hidden = _is_secret_key(str(key)) or (header and key == "value")
            out[name] = _redact(item, hide_text, hidden)
        return out
    return value


def _is_secret_header(value: dict[Any, Any]) -> bool:
    """``{"name": "Authorization", "value": ...}``: a header, cookie or parameter written as
    a name and a value."""
    if "value" not in value:
        return False
    return any(
        isinstance(value.get(k), str) and _is_secret_key(value[k]) for k in _HEADER_NAME_KEYS
    )


def _clean_key(key: Any, taken: dict[Any, Any]) -> Any:
    """A key with its credential-looking text hidden, made unique among ``taken``."""
    if not isinstance(key, str):
        return key
    clean = hide_credentials(key)
    if clean == key:
        return key
    name, n = clean, 1
    while name in taken:
        n += 1
        name = f"{clean} ({n})"
    return name


def _clean_string(text: str) -> str:
    """A string from a trace or a result with its credentials hidden; a string holding a JSON
    object or list (tool arguments, a tool's answer) is screened as that JSON."""
    head = text.lstrip()[:1]
    if head in ("{", "[") and len(text) <= _LONGEST_JSON_IN_STRING and might_hold_secret(text):
        try:
            data = json.loads(text)
        except DECODE_ERRORS:
            data = None
        if isinstance(data, dict | list):
            clean = _redact(data, True, False)
            if clean != data:
                return json.dumps(clean, ensure_ascii=False)
    return hide_credentials(text)


@lru_cache(maxsize=4096)
def _is_secret_key(key: str) -> bool:
    # the same few keys recur in every trace and result
    if HIDDEN_CREDENTIAL in key:  # a key whose credential was hidden names no secret
        key = key.replace(HIDDEN_CREDENTIAL, " ")
    return bool(_SECRET_KEY.search(key)) and not _ENV_NAME_KEY.search(key)


@cache
def _json_screen() -> RuleSet:
    """What :func:`redact_secrets` hides, as it shows in JSON text: credential-looking text,
    a secret-looking key before its colon, a whole key ``"pass"``/``"pw"``, a header written
    as a name and a value (one pass finds the needles of all)."""
    parts = "|".join(_KEY_PARTS)
    names = "|".join(sorted(_HEADER_NAME_KEYS))
    # a needle of each key part
    key_parts = (
        "api",
        "secret",
        "token",
        "passw",
        "auth",
        "credential",
        "private",
        "access",
        "cookie",
    )
    whole_keys = ('"pass"', '"pw"', '"pwd"')
    rules: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = [
        (
            "secret-key",
            # a key ends within 64 characters; or cannot be told in the window: a key part
            # followed by 64 characters without a quote, or by a quote that ends no JSON
            # string (an escaped one) may be inside a long key
            rf'(?:{parts})(?:[\s\S]{{0,64}}?"\s*:|[^"]{{64}}|[^"]{{0,64}}"(?!\s*[,:}}\]]))',
            key_parts,
            (),
        ),
        ("whole-secret-key", r'"(?:pass|pwd?)"\s*:', whole_keys, ()),
        (
            "header-pair",
            # the name holds a key part, is a whole secret key ("pass"), or is cut by an
            # escaped quote; in plain JSON (no escaped quote) a string is followed by a
            # separator, so the name holds a needle of the first two (every tool call's
            # "name" is passed over without one)
            rf'"(?:{names})"\s*:\s*"(?:[^"]*?(?:{parts})|(?:pass|pwd?)"|[^"]*"(?!\s*[,:}}\]]))',
            ('"name"', '"key"', '"header"'),
            (*key_parts, *whole_keys),
        ),
    ]
    return RuleSet(
        [
            *credential_rules().rules,
            *(
                Rule(
                    id,
                    regex,
                    0,
                    tuple(Needle(k) for k in keywords),
                    lowered=True,
                    plain_needs=plain_needs,
                )
                for id, regex, keywords, plain_needs in rules
            ),
        ],
        quiet={"token": _COUNT_KEY_END},
        plain_quiet={
            "token": _NUMBER_KEY_END,
            "key": _CONTAINER_KEY_END,
            "cohere": tuple(f"nce{end}" for end in _CONTAINER_KEY_END),
        },
        checks={"://": _has_url_credential},
    )


def _has_url_credential(text: str) -> bool:
    """Whether a URL in ``text`` has a credential that :func:`redact_url` hides."""
    return any(_clean_url(m.group(0)) != m.group(0) for m in _URL.finditer(text))


def _unescaped(text: str) -> str:
    """JSON text with its escapes undone (a line break or tab as a line break), so that what
    a string holds is screened as it is."""
    if "\\" not in text:
        return text
    if "\\\\" not in text and "\\u" not in text:
        # every backslash starts an escape of one character (details quote their labels):
        # each kind undone on its own is the same text, and no callback runs per escape
        for escape, char in _SHORT_ESCAPES:
            if escape in text:
                text = text.replace(escape, char)
        return text

    def one(match: re.Match[str]) -> str:
        escape = match.group(0)[1:]
        if escape[0] == "u":
            return chr(int(escape[1:], 16))
        return _ESCAPED[escape]

    return _JSON_ESCAPE.sub(one, text)


def might_hold_secret(text: str) -> bool:
    """Whether JSON text may have anything :func:`redact_secrets` with ``hide_text`` would hide
    (a secret-looking key, a credential-looking string or a URL credential); False only when it
    certainly has none, so that such text is written as it is.

    Args:
        text: JSON text.
    """
    if "\\" not in text:  # no escape: every quote in the text is one of the JSON's own
        return _json_screen().may_match(text, plain=True)
    # without an escaped quote, every quote in the text is one of the JSON's own
    plain = '\\"' not in text and "\\u0022" not in text
    return _json_screen().may_match(_unescaped(text), plain=plain)


def redact_json(text: str) -> str:
    """JSON text (a trace, a record) with its secrets hidden as :func:`redact_secrets` with
    ``hide_text`` hides them; text that certainly holds none is returned as it is.

    Args:
        text: JSON text.

    Raises:
        DecodeError: the text cannot be decoded or written again.
    """
    if not might_hold_secret(text):
        return text
    data = redact_secrets(loads(text), hide_text=True)
    return dumps(data, ensure_ascii=False, separators=(",", ":"))


def hide_credentials(text: str) -> str:
    """``text`` with anything that looks like a leaked credential replaced, for showing trace
    content (the rules of :mod:`agentgauge._secrets`, and URL credentials).

    Args:
        text: text to show.
    """
    rules = credential_rules()
    shown = rules.hide(redact_url(text), HIDDEN_CREDENTIAL)
    # hiding a secret can make its neighbour one: a rule that wants a word start before its
    # match ("AKIA…hf_…") finds the neighbour after the marker. Hidden again until nothing
    # more is found, so that hiding shown text changes nothing (bounded: a marker is never a
    # secret, each round hides text that was shown)
    for _ in range(_MOST_HIDING_ROUNDS):
        if shown == text:
            break
        text, shown = shown, rules.hide(redact_url(shown), HIDDEN_CREDENTIAL)
    return shown


_MOST_HIDING_ROUNDS = 16


# a short key is hidden only where it stands alone: "x" is not hidden inside "Exceeded"
_SHORT_SECRET = 12


def redact_error(text: str, secret: str | None) -> str:
    """An error message about a request, safe to record: ``secret`` (the API key that was sent,
    which a server may echo) replaced by ``***``, and anything else that looks like a
    credential hidden (:func:`hide_credentials`).

    Args:
        text: the error message.
        secret: the API key sent with the request; None when none was sent.
    """
    if secret:
        if len(secret) >= _SHORT_SECRET:
            text = text.replace(secret, HIDDEN)
        else:
            alone = rf"(?<![A-Za-z0-9_\-.]){re.escape(secret)}(?![A-Za-z0-9_\-])"
            text = re.sub(alone, HIDDEN, text)
    return hide_credentials(text)
