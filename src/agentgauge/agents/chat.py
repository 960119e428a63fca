"""A tool-using chat agent over any OpenAI-compatible ``/chat/completions`` endpoint.

Its tools are Python functions decorated with :func:`agentgauge.agents.protocol.tool`; the
model's tool-call arguments are parsed as JSON and validated against each tool's schema (never
evaluated). The spec's parameters map onto the agent as follows:

``temperature``
    sent as the request's ``temperature``.
``context_length`` (unit: **characters**)
    the task text (description, input and the tools' names) is cut to its first
    ``context_length`` characters; the conversation history after it (the model's messages and
    tool results) is sent newest turn first while the characters sent stay within
    ``context_length`` — older turns are dropped, but the newest turn (the last assistant
    message with its tool results) is always sent, so the loop can go on.
``max_steps``
    the cap on model requests per task (reasoning turns included). When the cap is reached
    without a final answer the run stops: the output is the last assistant text (or None) and
    ``metadata["stopped"] = "max_steps"``.
``tool_usage_threshold`` (rule)
    tools are offered on at most ``floor((1 − tool_usage_threshold) × max_steps)`` requests of
    the action loop; after that the request carries no tools and the model must answer.
    0 lets every request use tools, 1 forbids tools (higher = more conservative, as the spec
    says). A tool call the model makes when no tool was offered is recorded as an error and
    not executed.
``reasoning_depth``
    the number of reasoning turns before the action loop: ``reasoning_depth − 1`` requests
    (no tools) asking the model to think about the task without answering, recorded as
    reasoning steps and kept in the history; depth 1 answers directly. Reasoning turns always
    leave one request for the action loop.

**Conversations.** A task whose input is ``{"messages": [...]}`` (OpenAI chat messages: a
simulated conversation so far, ``agentgauge simulate``) is one turn of a conversation: the
system message is the agent's instructions with the task's description as the ``<policy>``,
the messages follow, and the run returns the agent's reply as text. Without
``context_length`` the whole conversation is sent; with it, the messages from the last user
message on are always sent and older ones (an assistant message with its tool results kept
together) go newest first while the characters stay within ``context_length``. The tools
offered are the agent's own and those of the run (``recorder.tools``: the environment's).

The request also carries ``seed`` (the run's seed). Requests go through
:mod:`agentgauge.http`: each attempt has a deadline of ``timeout_s``; 408, 409, 429, 5xx, dropped
connections and timeouts are retried up to ``max_retries`` times (waiting the server's
``Retry-After``, capped, or an exponential backoff whose jitter is drawn from the run's seed).
Every request's token usage (with the model's name, for pricing) is recorded on its step
(reasoning turns included) and their sum is the trace's usage. The API key is read from the
environment variable named by ``api_key_env`` and never written to traces, the store or reports.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx2
from pydantic import ValidationError

from agentgauge.agents.protocol import Recorder, Tool, agent_name, tool
from agentgauge.errors import AgentgaugeError
from agentgauge.http import (
    ChatEndpoint,
    RequestFailed,
    RetryPolicy,
    assistant_message,
    chat_completions_url,
    with_retries,
)
from agentgauge.io.jsonl import error_message
from agentgauge.model import JSON, Task, Usage

__all__ = ["ChatAgent", "ChatError", "from_env"]

_SYSTEM = (
    "You are an agent. Use the tools when they help, then give the final answer as plain text "
    "(or JSON when the task asks for structured output)."
)
_CONVERSATION_SYSTEM = (
    "You are a customer service agent who helps the user according to the policy below. In "
    "each turn, use the tools you need, then reply to the user: your reply ends your turn."
)
_REASON_PROMPT = (
    "Reasoning turn {i} of {n}: think about the task step by step. Do not give the final "
    "answer yet."
)


class ChatError(AgentgaugeError, RuntimeError):
    """The endpoint answered with an error or an unreadable response."""


def _task_text(task: Task) -> str:
    parts = []
    if task.description:
        parts.append(task.description)
    if task.input is not None:
        parts.append(
            task.input if isinstance(task.input, str) else json.dumps(task.input, sort_keys=True)
        )
    return "\n\n".join(parts) or task.id


def _conversation(task: Task) -> list[dict[str, Any]] | None:
    """The chat messages of a conversation turn's task, None for a plain task."""
    data = task.input
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        return None
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in (
            "user",
            "assistant",
            "tool",
        ):
            raise ChatError(
                f"task {task.id}: input.messages[{i}] is not a user, assistant or tool message"
            )
        out.append(dict(message))
    return out


def _groups(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Messages grouped so that a tool result stays with the assistant message that called."""
    groups: list[list[dict[str, Any]]] = []
    for message in messages:
        if message.get("role") == "tool" and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


def _chars(message: Mapping[str, Any]) -> int:
    size = len(str(message.get("content") or ""))
    for call in message.get("tool_calls") or []:
        size += len(json.dumps(call))
    return size


def _newest_first(
    turns: list[list[dict[str, Any]]], budget: int, *, keep_first: bool
) -> list[list[dict[str, Any]]]:
    """The turns (newest first) that fit in ``budget`` characters, stopping at the first that
    does not; the newest one is kept whatever its size when ``keep_first``."""
    kept: list[list[dict[str, Any]]] = []
    for index, turn in enumerate(turns):
        size = sum(_chars(m) for m in turn)
        if (index > 0 or not keep_first) and size > budget:
            break
        kept.append(turn)
        budget -= size
    return kept


def _as_output(text: str | None) -> JSON:
    if text is None:
        return None
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            parsed: JSON = json.loads(stripped)
            return parsed
        except json.JSONDecodeError:
            pass
    return text


class ChatAgent:
    """A tool-using agent over an OpenAI-compatible endpoint (see the module docstring).

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1`` (without a version,
            ``/v1`` is added; see :func:`agentgauge.http.chat_completions_url`).
        model: the model name sent with every request.
        tools: the tools (functions decorated with ``@tool``, or plain functions).
        api_key_env: the environment variable holding the API key (optional for local
            servers).
        system_prompt: the system message.
        timeout_s: the deadline of each attempt of a request.
        max_retries: how many times a failed request (429, 5xx, timeout, dropped connection)
            is retried.
        name: the agent's name in traces (``chat:<model>`` by default).
        transport: an httpx2 transport (tests, proxies); the default opens real connections.

    Raises:
        ValueError: for a ``base_url`` that is not http(s).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        *,
        api_key_env: str = "OPENAI_API_KEY",
        system_prompt: str = _SYSTEM,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        name: str | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        chat_completions_url(base_url)  # a bad URL fails here, not in the middle of a run
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.tools: dict[str, Tool] = {}
        for item in tools:
            wrapped = item if isinstance(item, Tool) else tool(item)
            self.tools[wrapped.name] = wrapped
        self.api_key_env = api_key_env
        self.system_prompt = system_prompt
        self.retry = RetryPolicy(timeout_s=timeout_s, max_retries=max_retries)
        self.name = name or f"chat:{model}"
        self._transport = transport

    def _messages(
        self, task_text: str, history: list[list[dict[str, Any]]], context_length: int
    ) -> list[dict[str, Any]]:
        user = {"role": "user", "content": task_text[:context_length]}
        budget = context_length - len(user["content"])
        kept = _newest_first(list(reversed(history)), budget, keep_first=True)
        messages = [{"role": "system", "content": self.system_prompt}, user]
        for turn in reversed(kept):
            messages.extend(turn)
        return messages

    def _conversation_messages(
        self,
        policy: str,
        conversation: list[dict[str, Any]],
        history: list[list[dict[str, Any]]],
        context_length: int | None,
    ) -> list[dict[str, Any]]:
        instructions = _CONVERSATION_SYSTEM if self.system_prompt == _SYSTEM else self.system_prompt
        if policy:
            instructions += f"\n\n<policy>\n{policy}\n</policy>"
        last_user = max(
            (i for i, m in enumerate(conversation) if m.get("role") == "user"), default=0
        )
        fixed = conversation[last_user:] + [m for turn in history for m in turn]
        older = _groups(conversation[:last_user])
        if context_length is not None:
            budget = context_length - sum(_chars(m) for m in fixed)
            older = list(reversed(_newest_first(list(reversed(older)), budget, keep_first=False)))
        return [
            {"role": "system", "content": instructions},
            *(m for group in older for m in group),
            *fixed,
        ]

    async def _request(
        self,
        endpoint: ChatEndpoint,
        recorder: Recorder,
        rng: random.Random,
        messages: list[dict[str, Any]],
        temperature: float,
        tools: Mapping[str, Tool],
    ) -> tuple[dict[str, Any], float, Usage | None]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
        }
        if recorder.seed is not None:
            body["seed"] = recorder.seed
        if tools:
            body["tools"] = [
                {"type": "function", "function": t.spec.model_dump()} for t in tools.values()
            ]
            body["tool_choice"] = "auto"
        try:
            done = await with_retries(lambda: assistant_message(endpoint, body), self.retry, rng)
        except RequestFailed as exc:
            raise ChatError(endpoint.redact(f"{self.base_url}: {exc}")) from None
        message, usage = done.value
        return message, done.latency_s, usage

    async def _run_tool(
        self, recorder: Recorder, call: Mapping[str, Any], tools: Mapping[str, Tool]
    ) -> str:
        """Execute one model tool call; returns the tool message content."""
        call_id = str(call.get("id") or recorder.next_call_id())
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        raw = function.get("arguments") or "{}"
        chosen = tools.get(name)
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
            if not isinstance(arguments, dict):
                raise ValueError("arguments are not a JSON object")
        except (json.JSONDecodeError, ValueError) as exc:
            recorder.tool_call(name or "?", {"_raw": str(raw)}, call_id=call_id)
            recorder.tool_result(call_id, error=f"invalid arguments: {exc}")
            return f"error: invalid arguments: {exc}"
        if chosen is None:
            recorder.tool_call(name or "?", arguments, call_id=call_id)
            recorder.tool_result(call_id, error=f"unknown tool {name!r}")
            return f"error: unknown tool {name!r}; tools: {', '.join(tools)}"
        try:
            result = await chosen.ainvoke(arguments, call_id=call_id)
        except ValidationError as exc:
            message = f"invalid arguments: {error_message(exc.errors()[0])}"
            recorder.tool_call(name, arguments, call_id=call_id)
            recorder.tool_result(call_id, error=message)
            return f"error: {message}"
        except Exception as exc:
            return f"error: {type(exc).__name__}: {exc}"
        return json.dumps(result, default=str)

    async def run(self, task: Task, params: Mapping[str, JSON], recorder: Recorder) -> JSON:
        """Do ``task`` (or take one turn of a conversation): reasoning turns, then the tool
        loop, within the step cap.

        Args:
            task: the task (description and input are sent to the model), or a conversation's
                turn (input ``{"messages": [...]}``, description the policy).
            params: temperature, context_length, max_steps, tool_usage_threshold,
                reasoning_depth (see the module docstring for their meaning).
            recorder: where the steps go; its ``tools`` are offered besides the agent's own.
        """
        conversation = _conversation(task)
        temperature = float(_number(params, "temperature", 0.7))
        max_steps = int(_number(params, "max_steps", 10))
        threshold = float(_number(params, "tool_usage_threshold", 0.5))
        depth = int(_number(params, "reasoning_depth", 1))
        context_length: int | None = None
        if conversation is None or "context_length" in params:
            context_length = int(_number(params, "context_length", 1000))
        if max_steps < 1 or (context_length is not None and context_length < 1):
            raise ValueError("max_steps and context_length must be >= 1")
        tools = {**self.tools, **recorder.tools}
        task_text = _task_text(task)

        def prompt_of(history: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
            if conversation is not None:
                return self._conversation_messages(
                    task.description, conversation, history, context_length
                )
            assert context_length is not None
            return self._messages(task_text, history, context_length)

        reasoning_turns = max(0, min(depth - 1, max_steps - 1))
        tool_turns = math.floor((1.0 - threshold) * max_steps + 1e-9)
        history: list[list[dict[str, Any]]] = []
        requests = 0
        last_text: str | None = None
        rng = random.Random(recorder.seed)
        endpoint = ChatEndpoint(
            self.base_url, api_key_env=self.api_key_env, concurrency=1, transport=self._transport
        )
        async with endpoint:
            for i in range(reasoning_turns):
                prompt = {
                    "role": "user",
                    "content": _REASON_PROMPT.format(i=i + 1, n=reasoning_turns),
                }
                message, elapsed, usage = await self._request(
                    endpoint, recorder, rng, prompt_of([*history, [prompt]]), temperature, {}
                )
                requests += 1
                text = message.get("content") or ""
                recorder.reasoning(text, usage=usage, duration_s=elapsed)
                history.append([prompt, {"role": "assistant", "content": text}])
            tool_requests = 0
            while requests < max_steps:
                offer = tool_requests < tool_turns
                message, elapsed, usage = await self._request(
                    endpoint, recorder, rng, prompt_of(history), temperature, tools if offer else {}
                )
                requests += 1
                text = message.get("content")
                calls = message.get("tool_calls") or []
                recorder.llm(text, usage=usage, duration_s=elapsed)
                last_text = text if text else last_text
                if not calls:
                    return text if conversation is not None else _as_output(text)
                turn: list[dict[str, Any]] = [
                    {"role": "assistant", "content": text, "tool_calls": calls}
                ]
                if offer:
                    tool_requests += 1
                    for call in calls:
                        content = await self._run_tool(recorder, call, tools)
                        turn.append(
                            {"role": "tool", "tool_call_id": call.get("id"), "content": content}
                        )
                else:
                    recorder.error("the model called a tool although none was offered")
                    for call in calls:
                        turn.append(
                            {
                                "role": "tool",
                                "tool_call_id": call.get("id"),
                                "content": "error: no tool may be used now; answer.",
                            }
                        )
                history.append(turn)
        recorder.error(f"stopped after max_steps={max_steps} requests without a final answer")
        return last_text if conversation is not None else _as_output(last_text)

    @property
    def trace_metadata(self) -> dict[str, JSON]:
        """Put in every trace: the endpoint and the model (never the key)."""
        return {"endpoint": self.base_url, "model": self.model, "agent_kind": agent_name(self)}


def _number(params: Mapping[str, JSON], name: str, default: float) -> float:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"parameter {name!r} must be a number, got {value!r}")
    return float(value)


def from_env() -> ChatAgent:
    """A ChatAgent configured from the environment (``--agent agentgauge.agents.chat:from_env``).

    ``AGENTGAUGE_CHAT_BASE_URL`` (required), ``AGENTGAUGE_CHAT_MODEL`` (required),
    ``AGENTGAUGE_CHAT_TOOLS`` (optional: comma-separated ``module:function`` references),
    ``AGENTGAUGE_CHAT_API_KEY_ENV`` (the variable holding the key; ``OPENAI_API_KEY``).

    Raises:
        ValueError: naming the missing or invalid variable.
    """
    import importlib

    base_url = os.environ.get("AGENTGAUGE_CHAT_BASE_URL")
    model = os.environ.get("AGENTGAUGE_CHAT_MODEL")
    if not base_url or not model:
        raise ValueError("set AGENTGAUGE_CHAT_BASE_URL and AGENTGAUGE_CHAT_MODEL")
    tools: list[Tool | Callable[..., Any]] = []
    for ref in filter(None, os.environ.get("AGENTGAUGE_CHAT_TOOLS", "").split(",")):
        module_name, _, attr = ref.strip().partition(":")
        try:
            tools.append(getattr(importlib.import_module(module_name), attr))
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"AGENTGAUGE_CHAT_TOOLS: cannot load {ref!r}: {exc}") from None
    return ChatAgent(
        base_url,
        model,
        tools,
        api_key_env=os.environ.get("AGENTGAUGE_CHAT_API_KEY_ENV", "OPENAI_API_KEY"),
    )
