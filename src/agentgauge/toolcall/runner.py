"""Run a tool-calling model over a dataset and record its raw answers as predictions.

The runner sends each sample's messages and tools to a model and writes one predictions line
per sample: ``{"id", "result", "latency_s", "usage", "attempts", "finish_reason"?, "calls",
"parse_error"?, "error"?}``, where ``result`` is the OpenAI message dict (text and
``tool_calls``) or the raw text a Python callable returned, and ``calls`` the tool calls read
from it. Scoring reads ``result`` again from that file, so a run can be scored in another mode
without calling the model again.

Two backends go through the same loop (concurrency limit, and per sample the deadline and
retries of :func:`agentgauge.http.with_retries` and error recording):

* :class:`HttpChatBackend` — any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM,
  Ollama, llama.cpp server, OpenAI) through :class:`agentgauge.http.ChatEndpoint`;
* :class:`CallableBackend` — a Python callable ``(messages, tools) -> response``, sync or async.

The API key is read from an environment variable when the backend is built and only ever put
in the ``Authorization`` header; it is redacted from every error message the runner records.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import random
import re
import shutil
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentgauge._atomic import atomic_path
from agentgauge._redact import might_hold_secret, redact_secrets
from agentgauge._safe import DECODE_ERRORS, describe, storable_text
from agentgauge.errors import AgentgaugeError
from agentgauge.http import (
    ChatEndpoint,
    ConnectFailed,
    EndpointRejected,
    RequestFailed,
    ResponseError,
    RetryPolicy,
    parse_usage,
    with_retries,
)
from agentgauge.model import Task, ToolSpec
from agentgauge.toolcall.parsers import parse_tool_calls
from agentgauge.toolcall.schema import openai_tools

__all__ = [
    "CallableBackend",
    "ChatBackend",
    "ChatRequest",
    "Completion",
    "EndpointConfig",
    "EndpointError",
    "HttpChatBackend",
    "Prediction",
    "RunSettings",
    "completion_from_response",
    "keep_answered",
    "request_from_task",
    "run_chat",
    "run_to_jsonl",
]

_OPENAI_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ChatRequest:
    """One sample to send.

    Args:
        id: the dataset sample id.
        messages: the prompt messages.
        tools: the tools as sent (OpenAI format, JSON Schema types).
        specs: the task's own tools, to read the answer's calls (positional arguments of
            Python-style calls are named by them).
    """

    id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    specs: tuple[ToolSpec, ...] = ()


@dataclass(frozen=True)
class Completion:
    """What a backend got back for one request.

    Args:
        result: the assistant message dict, the raw text, or a decoded call list.
        usage: ``{"input_tokens", "output_tokens"}`` when the server reported them.
        finish_reason: the server's finish reason, when it gave one.
    """

    result: JsonValue
    usage: dict[str, int] | None = None
    finish_reason: str | None = None


class Prediction(BaseModel):
    """One line of a predictions file.

    Args:
        id: the dataset sample id.
        result: the model's answer (OpenAI message dict or raw text); None when it failed.
        latency_s: seconds taken by the successful attempt; None when every attempt failed.
        usage: token usage as reported by the server (``input_tokens``, ``output_tokens``).
        attempts: how many requests were made for this sample.
        finish_reason: the server's finish reason.
        calls: the tool calls read from ``result`` (``{"id"?, "name", "arguments"}``), for a
            look at the file; scoring reads ``result`` again in the mode it is asked for.
        parse_error: why (part of) ``result`` could not be read as calls.
        error: why the sample has no result, after the last attempt.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    result: JsonValue = None
    latency_s: float | None = Field(default=None, ge=0)
    usage: dict[str, int] | None = None
    attempts: int = Field(default=1, ge=1)
    finish_reason: str | None = None
    calls: list[dict[str, JsonValue]] | None = None
    parse_error: str | None = None
    error: str | None = None

    def to_line(self) -> str:
        """The JSONL line, without the keys that are unset, its secrets redacted (a model that
        echoes a credential it was shown)."""
        data = self.model_dump(exclude_none=True)
        text = json.dumps(data, ensure_ascii=False)
        if might_hold_secret(text):
            text = json.dumps(redact_secrets(data, hide_text=True), ensure_ascii=False)
        # a lone surrogate in a model's answer is written as its JSON escape, not refused
        return storable_text(text)


class RunSettings(RetryPolicy):
    """How requests are scheduled and retried (the same for every backend).

    The deadline and retry fields (``timeout_s``, ``max_retries``, ``backoff_base_s``,
    ``backoff_max_s``, ``max_retry_after_s``) are those of :class:`~agentgauge.http.RetryPolicy`.

    Args:
        concurrency: requests in flight at once.
        jitter_seed: seed of the backoff's jitter, so that a run's delays are reproducible.
    """

    concurrency: int = Field(default=8, ge=1)
    jitter_seed: int = 0


class EndpointConfig(BaseModel):
    """An OpenAI-compatible chat-completions endpoint and the sampling settings sent to it.

    Args:
        base_url: the server's base URL, with or without ``/v1`` (``http://host:8000``,
            ``http://host:8000/v1``, or the full ``.../chat/completions`` URL).
        model: the model name the server knows.
        api_key_env: the environment variable holding the API key; unset means no key is sent.
        temperature: sampling temperature (0 by default, for reproducible runs); None sends
            none (models that refuse the field, such as OpenAI's reasoning models).
        seed: sampling seed sent as ``seed``; None sends none.
        max_tokens: completion token limit; None leaves the server's default.
        tool_choice: sent with the tools (``auto`` by default); None sends none.
        sanitize_tool_names: rename tools whose names OpenAI refuses (e.g. BFCL's
            ``math.factorial`` -> ``math_factorial``) on the wire, and map the names in the
            answer back, so that predictions carry the dataset's own names.
        extra_body: further request fields (``top_p``, ``chat_template_kwargs`` ...).
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = Field(default=0.0, ge=0)
    seed: int | None = 0
    max_tokens: int | None = Field(default=None, ge=1)
    tool_choice: str | None = "auto"
    sanitize_tool_names: bool = True
    extra_body: dict[str, JsonValue] = Field(default_factory=dict)


class ChatBackend(Protocol):
    """Something that answers one chat request. Raise :class:`agentgauge.http.TransientError`
    to be retried and :class:`agentgauge.http.ResponseError` (or anything else) to fail the
    sample."""

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion: ...


def request_from_task(task: Task) -> ChatRequest:
    """The request for one task: its prompt messages (``Task.input``) and its tools in OpenAI
    format (:func:`~agentgauge.toolcall.schema.openai_tools`: BFCL type names become JSON Schema).

    ``Task.input`` may be a list of chat messages, a dict with ``messages``, or a plain string
    (sent as one user message).

    Args:
        task: a task built by one of the dataset readers.

    Raises:
        ValueError: naming the task when its input holds no messages.
    """
    value = task.input
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, str):
        messages: list[dict[str, Any]] = [{"role": "user", "content": value}]
    elif isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        messages = [dict(m) for m in value if isinstance(m, dict)]
    else:
        raise ValueError(f"task {task.id!r}: input holds no chat messages to send")
    return ChatRequest(
        id=task.id, messages=messages, tools=openai_tools(task.tools), specs=tuple(task.tools)
    )


def completion_from_response(body: Any) -> Completion:
    """Normalise what a backend returned into a :class:`Completion`.

    Accepts a full chat-completions body (``choices[0].message`` is kept whole), a bare
    assistant message dict, raw text, a decoded call list, or an object with ``model_dump()``
    (an ``openai`` SDK response).

    Args:
        body: the response.

    Raises:
        ResponseError: for a body of another shape (the message says which part is missing).
    """
    if hasattr(body, "model_dump") and callable(body.model_dump):
        body = body.model_dump()
    if isinstance(body, str | list):
        return Completion(result=body)
    if not isinstance(body, dict):
        raise ResponseError(f"unsupported response type {type(body).__name__}")
    if "choices" in body:
        choices = body["choices"]
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ResponseError("response has no choices[0]")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise ResponseError("response has no choices[0].message object")
        reason = choices[0].get("finish_reason")
        tokens = parse_usage(body.get("usage"))
        # a predictions line holds the trace's Usage fields only: its reader checks them
        usage = tokens.to_usage().model_dump(exclude_none=True) if tokens is not None else None
        return Completion(
            result=message,
            usage=usage or None,
            finish_reason=reason if isinstance(reason, str) else None,
        )
    if any(key in body for key in ("role", "content", "tool_calls")):
        return Completion(result=body)
    raise ResponseError(
        "response is neither a chat completion (choices) nor a message (role/content/tool_calls)"
    )


def _wire_names(tools: list[dict[str, Any]]) -> dict[str, str]:
    """Original tool name -> a name OpenAI accepts, unique among the request's tools."""
    names = [str(t.get("function", {}).get("name", "")) for t in tools]
    taken = {n for n in names if _OPENAI_NAME.match(n)}
    mapping: dict[str, str] = {}
    for name in names:
        if _OPENAI_NAME.match(name) or name in mapping:
            continue
        base = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60] or "tool"
        wire, suffix = base, 2
        while wire in taken:
            wire, suffix = f"{base}_{suffix}", suffix + 1
        taken.add(wire)
        mapping[name] = wire
    return mapping


class HttpChatBackend(ChatEndpoint):
    """An OpenAI-compatible ``chat/completions`` endpoint, used as an async context manager.

    Args:
        config: the endpoint, model, key variable and sampling settings.
        concurrency: connection-pool size (the runner's concurrency).

    Example::

        async with HttpChatBackend(EndpointConfig(base_url="http://localhost:8000/v1",
                                                  model="Qwen/Qwen2.5-7B-Instruct")) as backend:
            predictions = await run_chat(requests, backend, RunSettings(concurrency=4))
    """

    def __init__(
        self,
        config: EndpointConfig,
        *,
        concurrency: int = 8,
    ) -> None:
        super().__init__(config.base_url, api_key_env=config.api_key_env, concurrency=concurrency)
        self.config = config

    def __repr__(self) -> str:
        return f"HttpChatBackend(url={self.url!r}, model={self.config.model!r})"

    def _body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": messages}
        if cfg.temperature is not None:
            body["temperature"] = cfg.temperature
        if cfg.seed is not None:
            body["seed"] = cfg.seed
        if cfg.max_tokens is not None:
            body["max_tokens"] = cfg.max_tokens
        if tools:  # OpenAI refuses an empty tools list
            body["tools"] = tools
            if cfg.tool_choice is not None:
                body["tool_choice"] = cfg.tool_choice
        body.update(cfg.extra_body)
        return body

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """Send one request and return its completion.

        Args:
            messages: the prompt messages.
            tools: the tools in OpenAI format, with the dataset's own names.

        Raises:
            agentgauge.http.TransientError: 429, 408, 409, 5xx, a transport failure.
            agentgauge.http.ResponseError: any other status, a body that is not JSON or not a
                completion.
        """
        renamed = _wire_names(tools) if self.config.sanitize_tool_names else {}
        if renamed:
            tools = copy.deepcopy(tools)
            for tool in tools:
                fn = tool["function"]
                fn["name"] = renamed.get(fn["name"], fn["name"])
        response = await self.post(self._body(messages, tools))
        try:
            payload = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            excerpt = self.excerpt(response)
            raise ResponseError(f"response body is not JSON: {excerpt!r}") from None
        except DECODE_ERRORS as exc:  # an integer too long, nesting too deep
            raise ResponseError(f"response body cannot be read: {describe(exc)}") from None
        try:
            completion = completion_from_response(payload)
        except ResponseError as exc:
            raise ResponseError(f"{exc}: {self.excerpt(response)}") from None
        if renamed:
            _restore_names(completion.result, {wire: name for name, wire in renamed.items()})
        return completion


def _restore_names(message: JsonValue, original: dict[str, str]) -> None:
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list):
        return
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(fn, dict) and isinstance(name, str):
            fn["name"] = original.get(name, name)


ResponseFunction = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Any]
"""``(messages, tools) -> response``, or an async function returning the response."""


class CallableBackend:
    """A Python function as the model: ``(messages, tools) -> response`` (sync or async).

    The response may be anything :func:`completion_from_response` accepts. A sync function runs
    in a worker thread so that it does not block the other requests; when its deadline passes
    its result is discarded (a thread cannot be interrupted).

    Args:
        fn: the function.
    """

    def __init__(self, fn: ResponseFunction) -> None:
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - callable objects with an async __call__
        )

    def __repr__(self) -> str:
        return f"CallableBackend({getattr(self._fn, '__qualname__', repr(self._fn))})"

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """Call the function and normalise its answer (see :func:`completion_from_response`)."""
        if self._is_async:
            response = await self._fn(messages, tools)
        else:
            response = await asyncio.to_thread(self._fn, messages, tools)
            if inspect.isawaitable(response):
                response = await response
        return completion_from_response(response)


class EndpointError(AgentgaugeError):
    """A model endpoint that cannot serve the run: its first request found nothing listening,
    or an answer that the URL, the model or the key is wrong."""


_DEAD_ENDPOINT = (ConnectFailed, EndpointRejected)


async def _attempt_all(
    request: ChatRequest,
    backend: ChatBackend,
    settings: RunSettings,
    rng: random.Random,
    redact: Callable[[str], str],
    fatal: tuple[type[Exception], ...] = (),
) -> Prediction:
    try:
        done = await with_retries(
            lambda: backend.complete(request.messages, request.tools), settings, rng, fatal=fatal
        )
    except RequestFailed as exc:
        return Prediction(id=request.id, attempts=exc.attempts, error=redact(str(exc)))
    completion = done.value
    parsed = parse_tool_calls(completion.result, request.specs)
    return Prediction(
        id=request.id,
        result=completion.result,
        latency_s=done.latency_s,
        usage=completion.usage,
        attempts=done.attempts,
        finish_reason=completion.finish_reason,
        calls=[call.model_dump(exclude_none=True) for call in parsed.calls],
        parse_error=parsed.error,
    )


async def run_chat(
    requests: Sequence[ChatRequest],
    backend: ChatBackend,
    settings: RunSettings | None = None,
    *,
    on_prediction: Callable[[Prediction], None] | None = None,
    progress: bool = True,
    console: Console | None = None,
) -> list[Prediction]:
    """Send every request through ``backend`` and collect one prediction per request.

    A request that still fails after its retries gives a prediction with ``error`` set; the
    other requests go on. The first request is sent alone: when nothing accepts its
    connection, or the server answers that the URL, the model or the key is wrong (HTTP 401,
    403, 404, 405), the run stops there with :class:`EndpointError`, instead of every sample
    failing after its retries.

    Args:
        requests: the samples to send.
        backend: the model (:class:`HttpChatBackend`, :class:`CallableBackend`, or another).
        settings: concurrency, deadline and retry policy.
        on_prediction: called with each prediction as soon as it is known (to stream it out).
        progress: show a progress bar.
        console: where the progress bar goes (stderr by default).

    Returns:
        The predictions in the order of ``requests``.

    Raises:
        EndpointError: the first request found the endpoint dead or wrong.
    """
    settings = settings or RunSettings()
    gate = asyncio.Semaphore(settings.concurrency)
    rng = random.Random(settings.jitter_seed)
    redact_fn = getattr(backend, "redact", None)
    redact: Callable[[str], str] = redact_fn if callable(redact_fn) else (lambda text: text)
    bar = Progress(
        TextColumn("[bold]toolcall run"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors: {task.fields[errors]}"),
        TimeElapsedColumn(),
        console=console or Console(stderr=True),
        disable=not progress,
    )
    task_id = bar.add_task("run", total=len(requests), errors=0)
    errors = 0

    async def one(request: ChatRequest, fatal: tuple[type[Exception], ...] = ()) -> Prediction:
        nonlocal errors
        async with gate:
            prediction = await _attempt_all(request, backend, settings, rng, redact, fatal)
        if prediction.error is not None:
            errors += 1
        if on_prediction is not None:
            on_prediction(prediction)
        bar.update(task_id, advance=1, errors=errors)
        return prediction

    with bar:
        if not requests:
            return []
        try:
            first = await one(requests[0], _DEAD_ENDPOINT)
        except _DEAD_ENDPOINT as exc:
            url = getattr(backend, "url", None)
            where = f" to {redact(url)}" if isinstance(url, str) else ""
            raise EndpointError(
                f"the first request{where} failed: {redact(str(exc))}: start the server, or fix "
                "the endpoint URL, the model name or the API key"
            ) from None
        return [first, *await asyncio.gather(*(one(r) for r in requests[1:]))]


def run_to_jsonl(
    requests: Sequence[ChatRequest],
    backend: ChatBackend,
    out: str | Path,
    settings: RunSettings | None = None,
    *,
    resume: bool = False,
    progress: bool = True,
    console: Console | None = None,
) -> list[Prediction]:
    """Run ``requests`` and write each prediction to ``out`` (JSONL) as soon as it is known.

    Lines are written in completion order and flushed one by one, so an interrupted run keeps
    what it had; readers align predictions with the dataset by ``id``.

    Args:
        requests: the samples to send.
        backend: a backend; an :class:`HttpChatBackend` is opened and closed here.
        out: the predictions file (overwritten unless ``resume``).
        settings: concurrency, deadline and retry policy.
        resume: keep the answered lines of an existing ``out`` (see :func:`keep_answered`),
            send only the other requests and append their lines.
        progress: show a progress bar.
        console: where the progress bar goes.

    Returns:
        The predictions of the requests sent by this call.
    """
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if resume:
        answered = keep_answered(path)
        requests = [r for r in requests if r.id not in answered]

    async def main() -> list[Prediction]:
        opened: AbstractAsyncContextManager[Any] = (
            backend if isinstance(backend, HttpChatBackend) else nullcontext()
        )
        # an interrupted run keeps its lines in place, for --resume
        with (
            atomic_path(path, keep_partial=True) as temporary,
            temporary.open("w", encoding="utf-8") as fh,
        ):
            if resume and path.exists():
                with path.open(encoding="utf-8") as kept:
                    shutil.copyfileobj(kept, fh)

            def write(prediction: Prediction) -> None:
                fh.write(prediction.to_line() + "\n")
                fh.flush()

            async with opened:
                return await run_chat(
                    requests,
                    backend,
                    settings,
                    on_prediction=write,
                    progress=progress,
                    console=console,
                )

    return asyncio.run(main())


def keep_answered(path: str | Path) -> set[str]:
    """Drop the failed and unreadable lines of a predictions file; return the answered ids.

    A line counts as answered when it is a JSON object with an ``id`` and a ``result`` and no
    ``error``; the file is rewritten (atomically) with those lines only, the first one per id.

    Args:
        path: the predictions file; a missing file is an empty one.
    """
    source = Path(path)
    if not source.exists():
        return set()
    kept: list[str] = []
    answered: set[str] = set()
    with source.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                data = json.loads(line)
            except DECODE_ERRORS:
                continue
            if not isinstance(data, dict) or "result" not in data or data.get("error"):
                continue
            key = str(data.get("id"))
            if "id" in data and key not in answered:
                answered.add(key)
                kept.append(line if line.endswith("\n") else line + "\n")
    with atomic_path(source) as temporary:
        temporary.write_text("".join(kept), encoding="utf-8")
    return answered
