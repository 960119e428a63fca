"""The one client for OpenAI-compatible chat-completions endpoints (vLLM, Ollama, llama.cpp
server, OpenAI and any compatible server), on ``httpx2``.

- :func:`chat_completions_url` turns a base URL into the endpoint's URL;
- :class:`ChatEndpoint` sends one request and sorts its failures: :class:`TransientError` for
  those worth retrying (408, 409, 429, 5xx, a dropped connection, as the ``openai`` SDK
  decides), :class:`ResponseError` for the others;
- :func:`with_retries` runs attempts under a per-attempt deadline, waiting the server's
  ``Retry-After`` (capped) or an exponential backoff with seeded jitter between them;
- :func:`parse_usage` reads a response's ``usage``.

The API key is read from an environment variable when the endpoint is opened and only ever put
in the ``Authorization`` header; every error message is cleaned of it and of anything else that
looks like a credential (:func:`agentgauge._redact.redact_error`).
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Generic, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx2
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agentgauge._redact import redact_error
from agentgauge._safe import DECODE_ERRORS, describe, size_limit
from agentgauge.errors import AgentgaugeError
from agentgauge.model import Usage

__all__ = [
    "MAX_RESPONSE_BYTES",
    "ChatEndpoint",
    "ConnectFailed",
    "EndpointRejected",
    "RequestFailed",
    "ResponseError",
    "Retried",
    "RetryPolicy",
    "TokenUsage",
    "TransientError",
    "assistant_message",
    "chat_completions_url",
    "parse_usage",
    "retry_after_s",
    "with_retries",
]

_T = TypeVar("_T")

_VERSIONED_PATH = re.compile(r"/v\d+[a-z0-9]*$")
_RETRYABLE_STATUS = frozenset({408, 409, 429})  # as the openai SDK retries
# what a server answers to every request when its URL, the model or the key is wrong
_ENDPOINT_REJECTS = frozenset({401, 403, 404, 405})
_BODY_EXCERPT = 300
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The largest response body read (``AGENTGAUGE_MAX_RESPONSE_BYTES`` sets another); a larger
one is an error of its request."""
# a response that is not JSON, too large or deep to decode, or not a chat completion
_UNREADABLE: tuple[type[Exception], ...] = (*DECODE_ERRORS, KeyError, IndexError, TypeError)
_sleep = asyncio.sleep  # module-level so that tests can record the waits instead of waiting


class TransientError(AgentgaugeError):
    """A failure worth retrying (429, 5xx, a dropped connection).

    A Python-callable model raises it to ask for a retry.

    Args:
        message: what happened.
        retry_after_s: how long the server asked to wait, when it said so.
    """

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ResponseError(AgentgaugeError):
    """A response that cannot be used and that retrying will not fix (4xx, malformed body)."""


class ConnectFailed(TransientError):
    """No connection to the server (refused, unknown host, no answer to connect): retried
    during a run, while a run's first request takes it to mean a dead or mistyped endpoint."""


class EndpointRejected(ResponseError):
    """The server answered that it serves no such request: a wrong URL, model or key (HTTP
    401, 403, 404, 405)."""


class RequestFailed(AgentgaugeError):
    """A request that failed on its last attempt.

    Args:
        message: why the last attempt failed, with the number of attempts when more than one.
        attempts: how many attempts were made.
    """

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class RetryPolicy(BaseModel):
    """How a request is timed and retried.

    Args:
        timeout_s: deadline of one attempt, from sending to the whole body read.
        max_retries: retries after the first attempt (so ``max_retries + 1`` attempts at most).
        backoff_base_s: first retry delay; it doubles with each retry.
        backoff_max_s: cap of the exponential delay.
        max_retry_after_s: cap of a server's ``Retry-After`` (a huge value is not waited out).
    """

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    max_retry_after_s: float = Field(default=120.0, ge=0)


@dataclass(frozen=True)
class Retried(Generic[_T]):
    """The value of the attempt that succeeded.

    Args:
        value: what the attempt returned.
        attempts: how many attempts were made, the successful one included.
        latency_s: seconds taken by the successful attempt.
    """

    value: _T
    attempts: int
    latency_s: float


@dataclass(frozen=True)
class TokenUsage:
    """A response's token counts (None where the server did not report one).

    Reasoning tokens are part of the output tokens and cached tokens part of the input tokens,
    as OpenAI counts them.

    Args:
        input_tokens: ``prompt_tokens`` (or ``input_tokens``).
        output_tokens: ``completion_tokens`` (or ``output_tokens``).
        total_tokens: ``total_tokens``.
        reasoning_tokens: ``completion_tokens_details.reasoning_tokens``.
        cached_tokens: ``prompt_tokens_details.cached_tokens``.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None

    def to_usage(self) -> Usage:
        """The input, output and cached tokens as a trace's :class:`~agentgauge.model.Usage`."""
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cached_tokens,
        )


def _count(raw: Any, *names: str) -> int | None:
    if not isinstance(raw, dict):
        return None
    for name in names:
        value = raw.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def parse_usage(raw: Any) -> TokenUsage | None:
    """The token counts of a response's ``usage`` object; None when it reports none.

    Both the chat-completions names (``prompt_tokens``, ``completion_tokens``,
    ``*_tokens_details``) and the responses-API names (``input_tokens``, ``output_tokens``,
    ``*_tokens_details``) are read; a count that is not a non-negative integer is ignored.

    Args:
        raw: the ``usage`` value of a response body.
    """
    if not isinstance(raw, dict):
        return None
    output_details = raw.get("completion_tokens_details", raw.get("output_tokens_details"))
    input_details = raw.get("prompt_tokens_details", raw.get("input_tokens_details"))
    usage = TokenUsage(
        input_tokens=_count(raw, "prompt_tokens", "input_tokens"),
        output_tokens=_count(raw, "completion_tokens", "output_tokens"),
        total_tokens=_count(raw, "total_tokens"),
        reasoning_tokens=_count(output_details, "reasoning_tokens"),
        cached_tokens=_count(input_details, "cached_tokens"),
    )
    return None if usage == TokenUsage() else usage


def chat_completions_url(base_url: str) -> str:
    """The chat-completions URL of an OpenAI-compatible server.

    ``http://h:8000`` and ``http://h:8000/v1`` both give ``http://h:8000/v1/chat/completions``;
    a path ending in another version (``/v1beta``, ``/v4``) keeps it; a URL that already ends in
    ``/chat/completions`` is used as it is. A query string (Azure OpenAI's
    ``?api-version=...``) is kept after the path.

    Args:
        base_url: the server's base URL.

    Raises:
        ValueError: for a URL that is not http(s).
    """
    url = base_url.strip()
    if not re.match(r"^https?://[^/]", url):
        raise ValueError(f"endpoint {base_url!r} is not an http(s) URL")
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions" if _VERSIONED_PATH.search(path) else "/v1/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def retry_after_s(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date).

    Args:
        value: the header's value, or None when the response had none.
    """
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _backoff(policy: RetryPolicy, retry: int, rng: random.Random) -> float:
    """Equal-jitter exponential backoff: half the capped delay fixed, half drawn at random."""
    ceiling = min(policy.backoff_max_s, policy.backoff_base_s * 2.0**retry)
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


async def with_retries(
    attempt: Callable[[], Awaitable[_T]],
    policy: RetryPolicy,
    rng: random.Random,
    *,
    fatal: tuple[type[Exception], ...] = (),
) -> Retried[_T]:
    """Await ``attempt()`` until it succeeds, retrying what is worth retrying.

    A :class:`TransientError` or an attempt past ``policy.timeout_s`` is retried up to
    ``policy.max_retries`` times; the wait is the error's ``retry_after_s`` (capped at
    ``max_retry_after_s``) or else the exponential backoff, its jitter drawn from ``rng``. A
    :class:`ResponseError` or any other exception ends the request at once.

    Args:
        attempt: makes one attempt (a fresh awaitable each call).
        policy: deadline and retry policy.
        rng: the source of the backoff's jitter (seeded, for reproducible waits).
        fatal: errors raised as they are, at once: not retried, not made a RequestFailed.

    Raises:
        RequestFailed: with the last attempt's reason, after the last attempt.
    """
    attempts = 0
    while True:
        attempts += 1
        started = time.perf_counter()
        retry_after: float | None = None
        try:
            async with asyncio.timeout(policy.timeout_s):
                value = await attempt()
        except fatal:
            raise
        except TimeoutError:
            error = f"timeout: no complete response within {policy.timeout_s:g} s"
            retryable = True
        except TransientError as exc:
            error, retryable, retry_after = str(exc), True, exc.retry_after_s
        except ResponseError as exc:
            error, retryable = str(exc), False
        except Exception as exc:  # a failing request must not stop its caller's other work
            error, retryable = f"{type(exc).__name__}: {exc}", False
        else:
            return Retried(value, attempts, time.perf_counter() - started)
        if not retryable or attempts > policy.max_retries:
            suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
            raise RequestFailed(error + suffix, attempts)
        if retry_after is not None:
            delay = min(retry_after, policy.max_retry_after_s)
        else:
            delay = _backoff(policy, attempts - 1, rng)
        await _sleep(delay)


class ChatEndpoint:
    """An OpenAI-compatible ``chat/completions`` endpoint, used as an async context manager.

    Args:
        base_url: the server's base URL (see :func:`chat_completions_url`).
        api_key_env: the environment variable holding the API key; None, or a variable that
            is unset, sends no key.
        concurrency: connection-pool size (the most requests in flight at once).
        transport: an httpx2 transport (tests, proxies); the default opens real connections.

    Raises:
        ValueError: for a URL that is not http(s).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None,
        concurrency: int = 8,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = chat_completions_url(base_url)
        self.max_response_bytes = size_limit("AGENTGAUGE_MAX_RESPONSE_BYTES", MAX_RESPONSE_BYTES)
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        self._secret = SecretStr(key) if key else None
        headers = {"Content-Type": "application/json"}
        if self._secret is not None:
            headers["Authorization"] = f"Bearer {self._secret.get_secret_value()}"
        limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        # with_retries enforces each attempt's deadline; httpx2 waits as long as it is allowed to.
        self._client = httpx2.AsyncClient(
            headers=headers, timeout=None, limits=limits, transport=transport
        )

    def __repr__(self) -> str:
        return f"ChatEndpoint(url={self.redact(self.url)!r})"

    @property
    def has_api_key(self) -> bool:
        """Whether a key was found in the configured environment variable."""
        return self._secret is not None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._client.aclose()

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***`` and other credentials hidden.

        Args:
            text: an error message.
        """
        secret = self._secret.get_secret_value() if self._secret is not None else None
        return redact_error(text, secret)

    async def post(self, body: dict[str, Any]) -> httpx2.Response:
        """Send one request; return the response when its status is a success.

        Args:
            body: the JSON request body.

        Raises:
            TransientError: 408, 409, 429, 5xx (with the server's ``Retry-After``), a transport
                failure (:class:`ConnectFailed` when no connection was made).
            ResponseError: any other error status (:class:`EndpointRejected` for 401, 403,
                404, 405).
        """
        try:
            response = await self._bounded_post(body)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            raise ConnectFailed(self.redact(f"{type(exc).__name__}: {exc}")) from None
        except httpx2.TransportError as exc:
            raise TransientError(self.redact(f"{type(exc).__name__}: {exc}")) from None
        status = response.status_code
        if status in _RETRYABLE_STATUS or status >= 500:
            raise TransientError(
                f"HTTP {status}: {self.excerpt(response)}",
                retry_after_s(response.headers.get("Retry-After")),
            )
        if status in _ENDPOINT_REJECTS:
            raise EndpointRejected(f"HTTP {status}: {self.excerpt(response)}")
        if status >= 400:
            raise ResponseError(f"HTTP {status}: {self.excerpt(response)}")
        return response

    async def _bounded_post(self, body: dict[str, Any]) -> httpx2.Response:
        """The response, its body read up to :attr:`max_response_bytes`: a larger one (a
        hostile or broken server) is an error of that request, never held in memory."""
        async with self._client.stream("POST", self.url, json=body) as streamed:
            declared = streamed.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_response_bytes:
                raise ResponseError(self._too_large(f"{declared} bytes declared"))
            chunks: list[bytes] = []
            size = 0
            async for chunk in streamed.aiter_bytes():
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise ResponseError(self._too_large("more sent"))
                chunks.append(chunk)
        # the body is decoded already: the new response must not decode it again
        headers = [
            (k, v)
            for k, v in streamed.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx2.Response(
            streamed.status_code,
            headers=headers,
            content=b"".join(chunks),
            request=streamed.request,
        )

    def _too_large(self, what: str) -> str:
        return (
            f"the response is larger than {self.max_response_bytes} bytes ({what}; the limit is "
            "set with AGENTGAUGE_MAX_RESPONSE_BYTES)"
        )

    def excerpt(self, response: httpx2.Response) -> str:
        """The start of a response's body on one line, for an error message (redacted).

        Args:
            response: the response.
        """
        text = response.text.strip().replace("\n", " ")
        if len(text) > _BODY_EXCERPT:
            text = text[:_BODY_EXCERPT] + "..."
        return self.redact(text)


async def assistant_message(
    endpoint: ChatEndpoint, body: dict[str, Any]
) -> tuple[dict[str, Any], Usage | None]:
    """One attempt at a chat completion: the assistant message of its first choice and the
    request's usage, with the model asked for named (so that the tokens can be priced).

    Args:
        endpoint: the endpoint.
        body: the request body (its ``model`` names the usage's model).

    Raises:
        TransientError, ResponseError: as :meth:`ChatEndpoint.post`; ResponseError also for a
            response that is not a chat completion.
    """
    response = await endpoint.post(body)
    try:
        data = response.json()
        message = data["choices"][0]["message"]
    except _UNREADABLE as exc:
        raise ResponseError(f"unreadable response ({describe(exc)})") from None
    if not isinstance(message, dict):
        raise ResponseError("unreadable response (the choice's message is not an object)")
    tokens = parse_usage(data.get("usage"))
    if tokens is None:
        return message, None
    return message, tokens.to_usage().model_copy(update={"model": body.get("model")})
