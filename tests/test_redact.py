"""The quick screen in front of the redaction regexes: text it lets through untouched is text
the regexes find nothing in."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge._redact import (
    _CREDENTIAL,
    _SECRET_KEY,
    hide_credentials,
    might_hold_secret,
    redact_secrets,
    redact_url,
)

# fragments of credentials, of secret-looking keys and of their near misses, in both cases
FRAGMENTS = (
    "api", "API", "_", "-", "key", "Key", "private", "ACCESS", "secret", "Token", "tokens",
    "token_", "pass", "PASSW", "word", "ord", "d", "pw", "Pwd", "auth", "header", "credential",
    "bearer", "Bearer", "sk", "rk", "pk", "live", "test", "proj", "gh", "p", "o", "u", "s", "r",
    "AKIA", "akia", "task", "x" * 16, "A1" * 10, "0" * 16, ":", "=", '"', "'", " ", "\t", ".",
    "://", "http", "@", "?", "&", "-----BEGIN ", "RSA ", "PRIVATE KEY-----", "é", "ſ",
)  # fmt: skip
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)
values: st.SearchStrategy[Any] = st.recursive(
    texts | st.integers(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=2000, deadline=None)
@given(texts)
def test_screened_text_is_hidden_as_the_regexes_hide_it(text: str) -> None:
    assert hide_credentials(text) == _CREDENTIAL.sub("[credential hidden]", redact_url(text))


@settings(max_examples=2000, deadline=None)
@given(values)
def test_json_the_screen_passes_has_nothing_to_redact(value: Any) -> None:
    text = json.dumps(value)
    if not might_hold_secret(text):
        assert redact_secrets(value, hide_text=True) == value
        assert not _SECRET_KEY.search(text)
        assert not _CREDENTIAL.search(text)
        assert not re.search(r'"(?:pass|pwd?)"\s*:', text, re.IGNORECASE)


def test_the_screen_looks_past_near_misses() -> None:
    assert not might_hold_secret('{"id": "task-0", "usage": {"input_tokens": 3}}')
    assert might_hold_secret('{"note": "use sk-abcdefghijklmnopqrstu"}')
    assert might_hold_secret('{"access_token": "x"}')
    assert might_hold_secret('{"pass": "x"}')
    assert might_hold_secret('{"u": "https://a:b@h"}')
    assert might_hold_secret('{"u": "https:\\/\\/a:b@h"}')
    assert might_hold_secret('{"n": "\\u0070assword: x"}')
    # a tab or a line break before a key id is a word start, though JSON spells it \t or \n
    assert might_hold_secret(json.dumps({"n": "\tAKIA" + "x" * 16}))
    assert might_hold_secret(json.dumps({"n": "line\nsk-" + "a" * 24}))
