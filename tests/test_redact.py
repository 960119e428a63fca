"""Redaction: every kind of credential an agent's trace holds is hidden, every value keeps its
type and shape, and the quick screen in front of the rules lets through only text that has
nothing to hide."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentgauge._redact import (
    HIDDEN,
    HIDDEN_CREDENTIAL,
    hide_credentials,
    might_hold_secret,
    redact_error,
    redact_json,
    redact_secrets,
)
from agentgauge._secrets import (
    agentgauge_rules,
    credential_rules,
    gitleaks_rules,
    needle_table,
    python_regex,
)

# one credential of each kind a hostile trace plants (made-up values in the real formats)
PLANTED = {
    "openai project key": "sk-proj-Q3m8Zx1Lk9Pw2Vt7Rb4Nc6Yh0Jd5Fs8Ga2",
    "anthropic key": "sk-ant-api03-Xk29Lm4Qp8Rt2Vw6Yz1Bc5Df9Gh3Jk7",
    "stripe key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "aws key id": "AKIAIOSFODNN7EXAMPLE",
    "aws session key id": "ASIAY34FZKBOKMUTVV7A",
    "aws secret": "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github token": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "github fine-grained": "github_pat_11ABCDEFG0abcdefghijklmn_OPQRSTUVWXYZ0123456789abcdef",
    "gitlab token": "glpat-Xk29Lm4Qp8Rt2Vw6Yz1B",
    "slack bot token": "xoxb-2848203651-2848203652-Q3m8Zx1Lk9Pw2Vt7Rb4Nc6Yh",
    "google api key": "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    "hugging face": "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",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer with slash": "Authorization: Bearer ya29.a0Af/H6Sm+Xk29Lm4Qp8Rt2Vw6",
    "basic auth header": "Authorization: Basic YWxpY2U6czNjcjN0UGFzcw==",
    "pem body": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75mPlanTeDbOdY\n"
    "q2Lk9Pw2Vt7Rb4Nc6Yh0Jd5Fs8Ga2Qm\n-----END RSA PRIVATE KEY-----",
    "password assignment": "password=Tr0ub4dor&3",
    "sas signature": "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sig=Qm8Zx1Lk9Pw2Vt7Rb4%2BNc6Yh%3D",
    "cookie header": "Cookie: session=Q3m8Zx1Lk9Pw2Vt7Rb4Nc6Yh0",
    "url user password": "https://alice:Xk29Lm4Qp8Rt@db.example.com/",
    "url fragment token": "https://app.example.com/cb#access_token=Q3m8Zx1Lk9Pw2Vt7&state=1",
    "url query key": "https://api.example.com/v1?api-key=Q3m8Zx1Lk9Pw2Vt7",
    "sendgrid key": "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",
}
# the part of each that must not be written
SECRET_PART = {
    "aws secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer with slash": "ya29.a0Af/H6Sm+Xk29Lm4Qp8Rt2Vw6",
    "basic auth header": "YWxpY2U6czNjcjN0UGFzcw==",
    "pem body": "q2Lk9Pw2Vt7Rb4Nc6Yh0Jd5Fs8Ga2Qm",
    "password assignment": "Tr0ub4dor&3",
    "sas signature": "Qm8Zx1Lk9Pw2Vt7Rb4",
    "cookie header": "Q3m8Zx1Lk9Pw2Vt7Rb4Nc6Yh0",
    "url user password": "Xk29Lm4Qp8Rt",
    "url fragment token": "Q3m8Zx1Lk9Pw2Vt7",
    "url query key": "Q3m8Zx1Lk9Pw2Vt7",
}


def _secret(kind: str) -> str:
    return SECRET_PART.get(kind, PLANTED[kind])


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_kind_of_credential_is_hidden_in_text_keys_and_json_strings(kind: str) -> None:
    text = PLANTED[kind]
    secret = _secret(kind)
    assert secret not in hide_credentials(f"the agent said: {text} (done)")
    value = {
        "note": f"use {text}",
        text: 1,  # as a key
        "args": json.dumps({"q": text}),  # inside a JSON string argument
        "deep": [[{"x": [text]}]],
    }
    assert might_hold_secret(json.dumps(value))
    assert might_hold_secret(json.dumps(value, ensure_ascii=True, indent=2))
    assert secret not in json.dumps(redact_secrets(value, hide_text=True), ensure_ascii=False)


def test_values_keep_their_type_and_shape() -> None:
    value = {
        # BFCL's possible answers: lists of acceptable values under secret-looking names
        "expected": {"password": ["123123", ""], "nextToken": ["", None], "api_key": [12345]},
        # a JSON Schema property named like a secret stays a schema
        "schema": {"properties": {"password": {"type": "string", "description": "the pw"}}},
        "params": {"token": 42, "secret": True, "access_key": None, "api_key_env": "MY_KEY"},
        "headers": [{"name": "Authorization", "value": "abc123"}, {"name": "Accept", "value": "x"}],
    }
    assert redact_secrets(value, hide_text=True) == {
        "expected": {"password": [HIDDEN, ""], "nextToken": ["", None], "api_key": [12345]},
        "schema": {"properties": {"password": {"type": "string", "description": "the pw"}}},
        "params": {"token": 42, "secret": True, "access_key": None, "api_key_env": "MY_KEY"},
        "headers": [{"name": "Authorization", "value": HIDDEN}, {"name": "Accept", "value": "x"}],
    }


def test_a_credential_in_a_key_is_hidden_and_keys_stay_distinct() -> None:
    a, b = PLANTED["openai project key"], PLANTED["hugging face"]
    out = redact_secrets({"expected_output": {a: 1, b: 2, "plain": 3}}, hide_text=True)
    assert out == {
        "expected_output": {HIDDEN_CREDENTIAL: 1, f"{HIDDEN_CREDENTIAL} (2)": 2, "plain": 3}
    }
    # a key holding a credential is hidden even where strings are not screened (configuration)
    assert redact_secrets({a: "x"}) == {HIDDEN_CREDENTIAL: "x"}


def test_a_password_inside_a_json_string_argument_is_hidden() -> None:
    arguments = json.dumps({"user": "bob", "password": "hunter2", "n": [1, 2]})
    out = redact_secrets({"arguments": arguments}, hide_text=True)
    assert json.loads(out["arguments"]) == {"user": "bob", "password": HIDDEN, "n": [1, 2]}


def test_nested_credential_keys_in_params_are_hidden() -> None:
    params = {"llm.invocation_parameters": {"extra_headers": {"Authorization": "Bearer abc"}}}
    out = redact_secrets(params, hide_text=True)
    assert out["llm.invocation_parameters"]["extra_headers"]["Authorization"] == HIDDEN


def test_a_one_character_key_is_not_hidden_inside_words() -> None:
    assert redact_error("Rate limit Exceeded for E", "E") == "Rate limit Exceeded for ***"
    long_key = "Q3m8Zx1Lk9Pw2Vt7Rb4N"
    assert redact_error(f"bad key{long_key}.", long_key) == "bad key***."


def test_ordinary_text_is_kept() -> None:
    for text in (
        "The input_tokens were 334; max_tokens: 1024 and the tokenizer is cl100k_base",
        "Rate limit Exceeded; the monkey pressed a key on the keyboard",
        "Basic understanding of passwords matters; see https://example.com/docs?page=2#intro",
        '{"id": "live_multiple_13-4-5", "usage": {"input_tokens": 3, "output_tokens": 4}}',
    ):
        assert hide_credentials(text) == text
        assert not might_hold_secret(json.dumps({"t": text}))


def test_a_credential_beside_usage_counts_is_screened() -> None:
    # usage counts are quiet places of the needle "token": a text holding them is searched
    # without it, unless a place of it is not a count, and then as any text
    usage = {"input_tokens": 412, "output_tokens": 20, "cache_read_tokens": 256}
    assert not might_hold_secret(json.dumps({"usage": usage, "note": "ok"}))
    assert not might_hold_secret(json.dumps({"usage": usage, "note": "café"}))
    for extra in (
        {"auth_token": "Q3m8Zx1Lk9Pw2Vt7Rb4N"},
        {"note": "token=Q3m8Zx1Lk9Pw2Vt7Rb4N"},
        {"note": "Bearer Q3m8Zx1Lk9Pw2Vt7Rb4N"},
        {"note": "café Bearer Q3m8Zx1Lk9Pw2Vt7Rb4N"},
    ):
        value = {"usage": usage, **extra}
        text = json.dumps(value)
        assert might_hold_secret(text), extra
        assert "Q3m8Zx1Lk9Pw2Vt7Rb4N" not in redact_json(text)


def test_a_key_holding_a_number_is_quiet_in_plain_json_and_a_credential_beside_it_is_not() -> None:
    # "token" that ends a key holding a number: any number, any writer's spacing
    usage = {
        "input_tokens": -1,
        "output_tokens": 1.5e10,
        "max_tokens": 12345678901234567890,
        "token": 3,
        "reasoning_tokens": 0.25,
    }
    for text in (
        json.dumps({"usage": usage}),
        json.dumps({"usage": usage}, indent=2),
        json.dumps({"usage": usage}, separators=(",", ":")),
        json.dumps({"usage": usage, "note": "a\nb"}),  # escapes, but no escaped quote
    ):
        assert not might_hold_secret(text), text
    secret = "Q3m8Zx1Lk9Pw2Vt7Rb4N"
    # a string where counts go is searched (the rules see a value after "tokens")
    assert might_hold_secret(json.dumps({"usage": usage, "input_tokens": secret}))
    for value in (
        {"usage": usage, "note": f"token: {secret}"},
        {"usage": usage, "note": f"tokens={secret}"},
        # quotes inside a string: its text is screened as JSON of its own
        {"usage": usage, "note": json.dumps({"input_tokens": secret})},
        {"usage": usage, "note": f'the "access_token": {secret}'},
        {"usage": usage, "note": f"auth token: {secret}"},
        {"tokens": usage, "auth_token": secret},
        [1, f"ends with a token: {secret} token"],
    ):
        for text in (json.dumps(value), json.dumps(value, indent=2)):
            assert might_hold_secret(text), text
            assert secret not in redact_json(text)


def test_a_key_holding_an_object_or_a_list_is_quiet_in_plain_json_and_a_credential_is_not() -> None:
    # a metric's details: "per_key" and "coherence" hold an object or a list, where the rules
    # owning "key" and "cohere" need a value of word characters after the colon
    details = {
        "accuracy": {"per_key": {"answer": 1.0, "unit": 0.5}},
        "coherence": {"words": 111, "connectors": ["because", "thus"]},
        "lookup": {"per_key": [1, 2], "coherence": ["a", "b"]},
    }
    for text in (
        json.dumps(details),
        json.dumps(details, indent=2),
        json.dumps(details, separators=(",", ":")),
    ):
        assert not might_hold_secret(text), text
    secret = "Q3m8Zx1Lk9Pw2Vt7Rb4N"
    cohere = "Q3m8Zx1Lk9Pw2Vt7Rb4NQ3m8Zx1Lk9Pw2Vt7Rb4N"  # 40 characters, as cohere's keys
    for value in (
        {**details, "note": f"key: {secret}"},
        {**details, "api_key": [secret]},  # a list under a secret key: its strings hidden
        {**details, "note": f"cohere_api_key={cohere}"},
        {"per_key": {"x": 1}, "lookup": {"note": f"key={secret}"}},
        # quotes inside a string: its text is screened as JSON of its own
        {**details, "note": json.dumps({"per_key": {"key": secret}})},
    ):
        for text in (json.dumps(value), json.dumps(value, indent=2)):
            assert might_hold_secret(text), text
            assert secret not in redact_json(text), text
    # a string where an object goes is searched as before (gitleaks' own checks then judge it)
    assert might_hold_secret(json.dumps({**details, "per_key": secret}))
    assert might_hold_secret(json.dumps({**details, "coherence": cohere}))


def test_a_tool_call_name_is_passed_over_and_a_header_pair_is_not() -> None:
    call = {"tool_call": {"name": "calculator", "arguments": {"q": "1+1"}}}
    assert not might_hold_secret(json.dumps(call))
    assert not might_hold_secret(json.dumps({"args": json.dumps(call)}))
    for header in (
        {"name": "X-Api-Key", "value": "v1"},
        {"name": "Authorization", "value": "abc"},
        {"key": "Cookie", "value": "abc"},
        {"header": "pass", "value": "abc"},
    ):
        for value in ([call, header], {"args": json.dumps([call, header])}):
            text = json.dumps(value)
            assert might_hold_secret(text), text
            assert "abc" not in redact_json(text).replace("calculator", "")


def test_a_url_credential_is_found_and_a_plain_url_is_passed_over() -> None:
    assert not might_hold_secret(json.dumps({"u": "https://example.com/a?page=2#top"}))
    for url in ("https://alice:Xk29Lm4Qp8Rt@db.example.com/", "https://h/x?api-key=Q3m8Zx1L"):
        for value in ({"u": url}, {"args": json.dumps({"u": url})}):
            text = json.dumps(value)
            assert might_hold_secret(text), text
            assert "Xk29Lm4Qp8Rt" not in redact_json(text)
            assert "Q3m8Zx1L" not in redact_json(text)


def test_a_gitleaks_rule_is_searched_where_one_of_its_keywords_is() -> None:
    # a rule's needles may be longer than its keywords or start a word (jwt's "ey" is not
    # searched in "they"), but each holds a keyword: the rule finds what gitleaks finds
    from importlib import resources

    spec = json.loads(
        resources.files("agentgauge").joinpath("data", "gitleaks_rules.json").read_text()
    )
    keywords = {rule["id"]: [k.lower() for k in rule["keywords"]] for rule in spec["rules"]}
    for rule in gitleaks_rules():
        for needle in rule.needles:
            assert any(k in needle.text for k in keywords[rule.id]), (rule.id, needle)
    jwt = next(rule for rule in gitleaks_rules() if rule.id == "jwt")
    assert all(n.text != "ey" or n.word_start for n in jwt.needles)
    assert not might_hold_secret(json.dumps({"t": "they keep the key, hey"}))
    assert might_hold_secret(json.dumps({"t": f"they sent {PLANTED['jwt']}"}))


def test_the_kept_needles_are_those_the_rules_tell() -> None:
    # the package keeps every built-in rule's needles (telling them parses each regex, most
    # of the time the rules take to make); the rules take them from there only while they
    # are what the regexes tell. After changing a rule or gitleaks' data, write the table:
    # python -c "import json; from agentgauge._secrets import needle_table;
    #   print(json.dumps(needle_table(), indent=1, sort_keys=True))"
    #   > src/agentgauge/data/credential_needles.json
    from importlib import resources

    kept = json.loads(
        resources.files("agentgauge").joinpath("data", "credential_needles.json").read_text()
    )
    told = needle_table()
    assert kept == told
    for source, rules in (("agentgauge", agentgauge_rules()), ("gitleaks", gitleaks_rules())):
        assert len(rules) == len(told[source])
        for rule in rules:
            assert [[n.text, n.word_start] for n in rule.needles] == told[source][rule.id][3]


def test_every_gitleaks_rule_compiles_in_python() -> None:
    rules = gitleaks_rules()
    assert len(rules) > 200
    for rule in rules:
        assert rule.pattern.pattern and rule.needles, rule.id
        assert rule.reach[0] >= 0
    assert python_regex(r"(?i)abc\z[[:alnum:]]") == (r"abc\Z[a-zA-Z0-9]", 2)
    assert credential_rules().rules[: len(rules)] == rules


# fragments of credentials, of secret-looking keys and of their near misses, in both cases
FRAGMENTS = (
    "api", "API", "_", "-", "key", "Key", "private", "ACCESS", "secret", "Token", "tokens",
    "token_", "pass", "PASSW", "word", "ord", "d", "pw", "Pwd", "auth", "header", "credential",
    "bearer", "Bearer", "Basic ", "sk", "rk", "pk", "live", "test", "proj", "gh", "p", "o", "u",
    "s", "r", "AKIA", "akia", "ASIA", "task", "x" * 16, "A1" * 10, "0" * 16, ":", "=", '"', "'",
    " ", "\t", "\n", ".", "/", "://", "http", "@", "?", "&", "#", "sig", "hf_", "AIza", "xoxb-",
    "github_pat_", "eyJ", "cookie", "Cookie", "-----BEGIN ", "RSA ", "PRIVATE KEY-----", "é", "ſ",
    "{", "}", "[", "]", ",", "name", "value", "Authorization", "Q3m8Zx1Lk9Pw2Vt7",
)  # fmt: skip
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)
values: st.SearchStrategy[Any] = st.recursive(
    texts | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=1500, deadline=None)
@given(values, st.booleans())
# a secret-looking key longer than the screen's window, and a header whose long name ends so
@example({"Authorization" + "api" * 8 + "x" * 16 + "-----BEGIN Q3m8Zx1Lk9Pw2Vt7": "api"}, True)
@example({"name": "x" * 80 + "Authorization", "value": "v"}, False)
# a key that is a whole secret key and a newline is not one (as the screen tells it)
@example({"pass\n": "api"}, False)
@example({'Authorization"' + "x" * 80: "v"}, True)
# a credential after an earlier needle of its rule in the same window
@example(["cookie", "cookie://api"], False)
def test_json_the_screen_passes_has_nothing_to_redact(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    if not might_hold_secret(text):
        assert redact_secrets(value, hide_text=True) == value


@settings(max_examples=1500, deadline=None)
@given(values)
@example("secret://apiapiapiPRIVATE KEY----------BEGIN PRIVATE KEY-----")
@example("Set-Cookie: header:sig=Bearer ")  # a cookie's hidden value is not hidden again
@example("Authorization:bearer apiapi")  # the scheme is not taken for the hidden value
# a token that wants a word start before it has one once the key before it is hidden
@example("AKIA0000000000000000hf_apiprivateA1A1A1A1A1A1A1A1A1A1")
def test_redaction_is_stable(value: Any) -> None:
    once = redact_secrets(value, hide_text=True)
    assert redact_secrets(once, hide_text=True) == once
    assert type(once) is type(value)
