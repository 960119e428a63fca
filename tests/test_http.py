"""The HTTP layer for OpenAI-compatible endpoints: URLs, usage, Retry-After, and one request
against the scripted server on 127.0.0.1 (``toolcall_server.py``)."""

from __future__ import annotations

import asyncio
import email.utils
import random
from datetime import UTC, datetime, timedelta

import pytest

from agentgauge._redact import redact_error
from agentgauge.http import (
    ChatEndpoint,
    RequestFailed,
    ResponseError,
    RetryPolicy,
    TokenUsage,
    TransientError,
    chat_completions_url,
    parse_usage,
    retry_after_s,
    with_retries,
)
from agentgauge.model import Usage
from toolcall_server import record_retry_waits, scripted_server

SECRET = "sk-test-HTTP-0123456789abcdef"


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/chat/completions"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1/chat/completions"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/chat/completions"),
        ("http://localhost:11434/v1/", "http://localhost:11434/v1/chat/completions"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
        ("https://h/api/v1beta", "https://h/api/v1beta/chat/completions"),
        ("http://h:8080/v1/chat/completions", "http://h:8080/v1/chat/completions"),
        (
            "https://r.openai.azure.com/openai/v1?api-version=preview",
            "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview",
        ),
        (
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
        ),
        ("http://h:8000/?x=1", "http://h:8000/v1/chat/completions?x=1"),
    ],
)
def test_chat_completions_url_accepts_base_with_or_without_v1(base: str, url: str) -> None:
    assert chat_completions_url(base) == url


def test_chat_completions_url_rejects_non_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        chat_completions_url("localhost:8000")


def test_parse_usage_reads_both_naming_schemes_and_the_details() -> None:
    chat = {
        "prompt_tokens": 120,
        "completion_tokens": 80,
        "total_tokens": 200,
        "completion_tokens_details": {"reasoning_tokens": 64},
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    assert parse_usage(chat) == TokenUsage(120, 80, 200, 64, 100)
    responses = {
        "input_tokens": 5,
        "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 4},
        "input_tokens_details": {"cached_tokens": 0},
    }
    assert parse_usage(responses) == TokenUsage(5, 9, None, 4, 0)
    # counts that are not non-negative integers are not counts
    assert parse_usage({"prompt_tokens": -1, "completion_tokens": True}) is None
    assert parse_usage({"prompt_tokens": "12", "completion_tokens": 2.5}) is None
    assert parse_usage(None) is None and parse_usage([1, 2]) is None
    assert parse_usage({"prompt_tokens": 7}) == TokenUsage(input_tokens=7)
    assert TokenUsage(3, 4, 7, 1, 2).to_usage() == Usage(
        input_tokens=3, output_tokens=4, cache_read_tokens=2
    )


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_s("7") == 7.0
    assert retry_after_s("1.5") == 1.5
    assert retry_after_s("-3") == 0.0
    assert retry_after_s(None) is None and retry_after_s("") is None
    assert retry_after_s("soon") is None
    past = email.utils.format_datetime(datetime(2001, 1, 1, tzinfo=UTC), usegmt=True)
    assert retry_after_s(past) == 0.0
    future = datetime.now(UTC) + timedelta(hours=1)
    wait = retry_after_s(email.utils.format_datetime(future, usegmt=True))
    assert wait is not None and 3000 < wait <= 3600


def test_redact_error_hides_the_key_sent_and_other_credentials() -> None:
    text = (
        f"Incorrect API key provided: {SECRET}; see https://user:pw@h/x?api_key=abc "
        "or use password=hunter2"
    )
    assert redact_error(text, SECRET) == (
        "Incorrect API key provided: ***; see https://***@h/x?api_key=*** "
        "or use password=[credential hidden]"
    )
    assert redact_error("HTTP 503: overloaded", None) == "HTTP 503: overloaded"


def test_endpoint_sorts_failures_and_keeps_the_query_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AG_HTTP_TEST_KEY", SECRET)

    def body(script: str) -> dict[str, object]:
        return {"model": "m", "messages": [{"role": "user", "content": f"script:{script}"}]}

    async def main(base: str) -> list[object]:
        outcomes: list[object] = []
        async with ChatEndpoint(base, api_key_env="AG_HTTP_TEST_KEY") as endpoint:
            assert SECRET not in repr(endpoint)
            for script in ("weather", "rate_limited", "unauthorized", "always_503"):
                try:
                    outcomes.append((await endpoint.post(body(script))).json())
                except (TransientError, ResponseError) as exc:
                    outcomes.append(exc)
        return outcomes

    with scripted_server() as (base, state):
        ok, limited, refused, overloaded = asyncio.run(main(base + "/v1?api-version=2024-10-21"))
    assert {r.path for r in state.requests} == {"/v1/chat/completions?api-version=2024-10-21"}
    assert {r.headers["Authorization"] for r in state.requests} == {f"Bearer {SECRET}"}
    assert isinstance(ok, dict) and ok["usage"]["total_tokens"] == 18
    assert isinstance(limited, TransientError) and limited.retry_after_s == 7.0
    assert str(limited) == 'HTTP 429: {"error": {"message": "slow down"}}'
    assert isinstance(refused, ResponseError)
    assert str(refused) == 'HTTP 401: {"error": {"message": "Incorrect API key provided: ***"}}'
    assert isinstance(overloaded, TransientError) and overloaded.retry_after_s is None


def test_with_retries_counts_attempts_and_stops_on_what_retrying_cannot_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = record_retry_waits(monkeypatch)
    calls: list[str] = []

    async def flaky() -> str:
        calls.append("flaky")
        if len(calls) < 3:
            raise TransientError("busy")
        return "done"

    async def broken() -> str:
        calls.append("broken")
        raise ResponseError("HTTP 400: bad request")

    policy = RetryPolicy(max_retries=3, backoff_base_s=1.0)
    done = asyncio.run(with_retries(flaky, policy, random.Random(0)))
    assert (done.value, done.attempts) == ("done", 3)
    rng = random.Random(0)
    assert waits == [0.5 + rng.uniform(0, 0.5), 1.0 + rng.uniform(0, 1.0)]
    with pytest.raises(RequestFailed, match=r"^HTTP 400: bad request$") as failed:
        asyncio.run(with_retries(broken, policy, random.Random(0)))
    assert failed.value.attempts == 1 and calls.count("broken") == 1
