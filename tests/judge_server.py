"""A chat-completions endpoint on 127.0.0.1 that answers like an OpenAI model judging.

It speaks the protocol as pydantic-ai's ``OpenAIChatModel`` uses it for structured output: the
request offers one ``final_result`` function tool whose JSON Schema is the verdict model, and
the answer is an assistant message calling that tool with JSON arguments. A script of actions
("ok", "500", "401", "sleep", "bad") shapes the next answers; every request (headers and body)
is recorded. Used by ``tests/test_judge.py``, ``tests/test_agent_judges.py`` and
``bench/bench_judge.py``.

``behaviour`` makes it a local model server that lacks structured output:

- ``"tools"`` (default): tool calling and ``response_format`` both work;
- ``"no_tools"``: a request offering tools is refused (HTTP 400, as Ollama answers for a model
  without tool support); ``response_format`` with a JSON Schema is honoured;
- ``"text"``, ``"fenced"``, ``"prose"``: neither tools nor ``response_format`` (HTTP 400, as a
  llama.cpp server without ``--jinja`` and grammar support); the verdict comes as plain JSON
  text, as JSON in Markdown fences, or as JSON between sentences;
- ``"wrong_field"``: as ``"text"``, but the first answer to each prompt renames a field; a
  repair request (one that carries the validation error) gets the right answer.

A request that offers the trace-exploring tools (``read_step`` among them) is answered like a
judge that uses them: it first calls ``search`` for ``explore_search``, then ``read_step`` on
the first step found, then gives its verdict.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Scripted verdicts, chosen by the criteria the request's tool schema asks for.
VERDICTS: dict[str, dict[str, Any]] = {
    "factual_correctness": {
        "rationale": "Claims match the paper.",
        "factual_correctness": 4,
        "methodology_understanding": 3,
        "domain_knowledge": 5,
    },
    "actionable_feedback": {
        "rationale": "Some concrete suggestions.",
        "actionable_feedback": 4,
        "balanced_critique": 2,
        "improvement_guidance": 5,
    },
    "logical_flow": {
        "rationale": "Sensible order, one redundant search.",
        "logical_flow": 5,
        "decision_quality": 2,
        "resource_efficiency": 4,
    },
    # the agent judges; "issues" comes before "score" (the trajectory verdict has both)
    "steps": {"steps": ["Read the task.", "Check the output against the criteria.", "Decide."]},
    "achieved": {
        "goal": "Answer the question.",
        "outcome": "The answer was given.",
        "reasoning": "The output answers the question.",
        "achieved": True,
    },
    "issues": {
        "reasoning": "One repeated call.",
        "issues": ["step 3 repeats step 1"],
        "score": 4,
    },
    "passed": {"reasoning": "Short and to the point.", "passed": True},
    "score": {"reasoning": "Mostly helpful.", "score": 4},
    "ok": {"ok": True},  # the probe of the endpoint's output modes
}
# (.5·4 + .3·3 + .2·5) / 5 ; (4 + 2 + 5) / 15 ; (.3·5 + .5·2 + .2·4) / 5
TECHNICAL_VALUE = 3.9 / 5
CONSTRUCTIVE_VALUE = 11 / 15
PLANNING_VALUE = 3.3 / 5
# a rubric's 4 on 1-5: (4 - 1) / (5 - 1); the trajectory judge's 4: (4 - 1) / 4
RUBRIC_VALUE = 3 / 4
TRAJECTORY_VALUE = 3 / 4
PROMPT_TOKENS, COMPLETION_TOKENS = 1000, 50
KEY_ENV = "AGENTGAUGE_TEST_JUDGE_KEY"
"""The variable the tests put the judge's API key in."""


@dataclass
class JudgeServer:
    """A chat-completions endpoint with a script of behaviours ("ok", "500", "sleep", "bad")."""

    script: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    delay_s: float = 0.0
    pace: threading.Barrier | None = None
    """When set, each request waits until the barrier's number of requests are in flight."""
    error_body: str = '{"error": {"message": "internal error", "type": "server_error"}}'
    answer: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    """When set, the verdict for a request body (None: the scripted one)."""
    behaviour: str = "tools"
    """What the endpoint supports and how it answers (see the module's docstring)."""
    explore_search: str = "ERROR"
    """What an exploring judge searches the trace for first."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_action(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else "ok"


def _handler(server: JudgeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: str, headers: dict[str, str] | None = None) -> None:
            data = payload.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # the client gave up (timeout test)
                self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with server.lock:
                server.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": body,
                    }
                )
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                self._answer(body)
            finally:
                with server.lock:
                    server.in_flight -= 1

        def _answer(self, body: dict[str, Any]) -> None:
            action = server.next_action()
            if server.pace is not None:
                server.pace.wait()  # a timeout breaks it, and the request then fails
            if server.delay_s:
                time.sleep(server.delay_s)
            if action == "500":
                self._send(500, server.error_body, {"retry-after-ms": "1"})
                return
            if action == "401":
                self._send(401, server.error_body)
                return
            if action == "sleep":
                time.sleep(1.0)
            refused = _refusal(server.behaviour, body)
            if refused is not None:
                self._send(400, json.dumps({"error": {"message": refused, "type": "invalid"}}))
                return
            exploring = _exploring_call(server, body)
            if exploring is not None:
                self._send(200, _completion(body, exploring, len(server.requests)))
                return
            criteria, tool_name = _asked_fields(body)
            custom = server.answer(body) if server.answer is not None else None
            verdict = custom or next(v for k, v in VERDICTS.items() if k in criteria)
            if action == "bad":
                verdict = {**verdict, next(iter(k for k in verdict if k != "rationale")): 9}
            if tool_name is not None:
                message: dict[str, Any] = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{len(server.requests)}",
                            "type": "function",
                            "function": {"name": tool_name, "arguments": json.dumps(verdict)},
                        }
                    ],
                }
                finish = "tool_calls"
            else:
                content = _styled(server.behaviour, verdict, _is_repair(body))
                message, finish = {"role": "assistant", "content": content}, "stop"
            self._send(
                200,
                json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                        "usage": {
                            "prompt_tokens": PROMPT_TOKENS,
                            "completion_tokens": COMPLETION_TOKENS,
                            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                        },
                    }
                ),
            )

    return Handler


_TEXT_ONLY = ("text", "fenced", "prose", "wrong_field")


def _exploring_call(server: JudgeServer, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The next tool call of a judge exploring a trace: search, then read the first step found;
    None when it is time for the verdict (or no exploring tools are offered)."""
    names = {t["function"]["name"] for t in body.get("tools") or []}
    if "read_step" not in names:
        return None
    called = [
        call["function"]["name"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    ]
    if not called:
        return "search", {"text": server.explore_search}
    if called == ["search"]:
        found = re.search(r"\[(\d+)\]", str(body["messages"][-1].get("content")))
        if found:
            return "read_step", {"index": int(found[1])}
    return None


def _completion(body: dict[str, Any], call: tuple[str, dict[str, Any]], n: int) -> str:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": call[0], "arguments": json.dumps(call[1])},
            }
        ],
    }
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
            "usage": {
                "prompt_tokens": PROMPT_TOKENS,
                "completion_tokens": COMPLETION_TOKENS,
                "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
            },
        }
    )


def _refusal(behaviour: str, body: dict[str, Any]) -> str | None:
    """The error a server lacking a feature answers a request that uses it with."""
    if body.get("tools") and behaviour in ("no_tools", *_TEXT_ONLY):
        return "this model does not support tools"
    if body.get("response_format") and behaviour in _TEXT_ONLY:
        return "response_format is not supported"
    return None


def _asked_fields(body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The verdict's fields the request asks for, and the output tool's name when the answer
    must call it: from the output tool, the response format, or the schema in the
    instructions (prompted JSON)."""
    tools = [t["function"] for t in body.get("tools") or []]
    output_tools = [t for t in tools if t["name"].startswith("final_result")]
    if output_tools:
        return output_tools[0]["parameters"]["properties"], output_tools[0]["name"]
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return response_format["json_schema"]["schema"]["properties"], None
    system = "\n".join(
        m["content"] for m in body["messages"] if m["role"] == "system" and m.get("content")
    )
    at = system.rfind("JSON Schema")
    schema, _ = json.JSONDecoder().raw_decode(system, system.index("{", at))
    return schema["properties"], None


def _is_repair(body: dict[str, Any]) -> bool:
    """Whether the request asks again after an answer that did not validate."""
    return any(
        m["role"] in ("user", "tool") and "does not validate" in json.dumps(m.get("content"))
        for m in body["messages"]
    )


def _styled(behaviour: str, verdict: dict[str, Any], repair: bool) -> str:
    if behaviour == "wrong_field" and not repair:
        first = next(iter(verdict))
        verdict = {(first + "_x" if k == first else k): v for k, v in verdict.items()}
    text = json.dumps(verdict)
    if behaviour == "fenced":
        return f"```json\n{text}\n```"
    if behaviour == "prose":
        return f"Here is my assessment.\n{text}\nI hope this helps; ask if anything is unclear."
    return text


def judge_options(server: JudgeServer, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """Judge settings that reach ``server``, with the key in :data:`KEY_ENV` and the cache in
    ``tmp_path``; ``extra`` adds or replaces options."""
    return {
        "model": "judge-model",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "timeout_s": 5.0,
        "retries": 1,
        "cache_path": str(tmp_path / "agentgauge.db"),
        # the tests that count requests count the judge's own; the probe has its own tests
        "output_mode": "tool",
        **extra,
    }


@contextlib.contextmanager
def judge_server() -> Iterator[JudgeServer]:
    """Serve on a free port of 127.0.0.1 for the duration of the block."""
    state = JudgeServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_port
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
