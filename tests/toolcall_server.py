"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for the runner and CLI tests.

Each request's last user message names a script (``script:<name>``); the server answers
according to that script and the number of times it has seen it, and records every request
(headers and body) so tests can check what reached the wire. A ``responder`` set on the state
answers every request instead (conversations, whose answer depends on the whole request).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentgauge import http

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def record_retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Make the HTTP layer record its retry waits instead of sleeping through them."""
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def record(delay: float) -> None:
        waits.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(http, "_sleep", record)
    return waits


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ServerState:
    requests: list[Recorded] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    slow_s: float = 3.0  # well past the tests' 1 s deadline, on a loaded machine too
    pace: threading.Barrier = field(default_factory=lambda: threading.Barrier(2, timeout=5.0))
    lock: threading.Lock = field(default_factory=threading.Lock)
    by_query: dict[str, str | dict[str, Any]] = field(default_factory=dict)
    """last user message -> the assistant message to return, or the name of a script."""
    responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """request body -> the assistant message to return (overrides the scripts)."""


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def tool_message(name: str, arguments: dict[str, Any], call_id: str = "call_0") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def _script(body: dict[str, Any], state: ServerState) -> str:
    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, str):
            continue
        if content in state.by_query:
            scripted = state.by_query[content]
            return scripted if isinstance(scripted, str) else f"answer:{content}"
        if "script:" in content:
            return content.split("script:", 1)[1].split()[0]
    return "echo_tool"


class _Handler(BaseHTTPRequestHandler):
    state: ServerState
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        return

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def do_POST(self) -> None:
        state = self.state
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        if state.responder is not None:
            with state.lock:
                state.requests.append(Recorded(self.path, dict(self.headers.items()), body))
            message = state.responder(body)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            self._json(200, completion(message, finish))
            return
        name = _script(body, state)
        with state.lock:
            state.requests.append(Recorded(self.path, dict(self.headers.items()), body))
            state.seen[name] += 1
            attempt = state.seen[name]
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            self._answer(name, attempt, body)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _answer(self, name: str, attempt: int, body: dict[str, Any]) -> None:
        state = self.state
        if name == "echo_tool":
            # Calls the first offered tool with the user's text, so tests can see the names.
            tools = body.get("tools") or []
            if not tools:
                self._json(200, completion({"role": "assistant", "content": "no tool needed"}))
                return
            tool_name = tools[0]["function"]["name"]
            self._json(200, completion(tool_message(tool_name, {"q": "x"}), "tool_calls"))
        elif name.startswith("answer:"):
            message = state.by_query[name.split(":", 1)[1]]
            self._json(200, completion(message, "tool_calls"))  # type: ignore[arg-type]
        elif name == "weather":
            message = tool_message("get_weather", {"city": "Paris", "unit": "celsius"})
            self._json(200, completion(message, "tool_calls"))
        elif name == "rate_limited":
            if attempt <= 2:
                self._json(429, {"error": {"message": "slow down"}}, {"Retry-After": "7"})
            else:
                self._json(200, completion(tool_message("get_weather", {"city": "Rome"})))
        elif name == "flaky":
            if attempt <= 2:
                self._json(500, {"error": {"message": "internal"}})
            else:
                self._json(200, completion(tool_message("get_weather", {"city": "Lima"})))
        elif name == "always_503":
            self._json(503, {"error": {"message": "overloaded"}})
        elif name == "malformed":
            self._send(200, b'{"choices": [{"message": ')
        elif name == "no_choices":
            self._json(200, {"object": "chat.completion", "data": []})
        elif name == "unauthorized":
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            self._json(401, {"error": {"message": f"Incorrect API key provided: {key}"}})
        elif name == "slow":
            time.sleep(state.slow_s)
            self._json(200, completion({"role": "assistant", "content": "late"}))
        elif name == "paced":
            # answers only when `paced_together` requests are in flight at once: a client that
            # never overlaps its requests gets a 503 here instead of an answer
            try:
                state.pace.wait()
            except threading.BrokenBarrierError:
                self._json(503, {"error": {"message": "paced requests did not overlap"}})
                return
            self._json(200, completion({"role": "assistant", "content": "done"}))
        else:
            self._json(404, {"error": {"message": f"unknown script {name}"}})


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog of 5 resets bursts of connections

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (the timeout tests) breaks the pipe; that is expected."""


@contextmanager
def scripted_server(state: ServerState | None = None) -> Iterator[tuple[str, ServerState]]:
    """Serve on an ephemeral 127.0.0.1 port; yields ``(base_url, state)``."""
    state = state or ServerState()
    handler = type("Handler", (_Handler,), {"state": state})
    server = _QuietServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
