"""The chat agent against a real OpenAI-compatible HTTP server on 127.0.0.1, scripted to call
tools: the parameters reach the requests as documented and max_steps stops the loop."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.chat import ChatAgent, from_env
from agentgauge.agents.protocol import run_agent, tool
from agentgauge.model import StepKind, Task, Usage
from toolcall_server import record_retry_waits


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class _Script:
    """The server's behaviour: call ``add`` whenever tools are offered (unless ``answer_after``
    tool results are already in the conversation), answer otherwise. Request ``n`` reports
    ``11 + n`` prompt and ``3 + n`` completion tokens. ``refusals`` are answered first, in
    order, each with its status and headers, and are not counted as requests."""

    def __init__(self, answer_after: int | None = None, bad_arguments: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.answer_after = answer_after
        self.bad_arguments = bad_arguments
        self.status = 200
        self.raw_body: bytes | None = None
        self.refusals: list[tuple[int, dict[str, str]]] = []
        self.refused = 0

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        n = len(self.requests)
        tool_results = sum(1 for m in body["messages"] if m["role"] == "tool")
        wants_tool = "tools" in body and (
            self.answer_after is None or tool_results < self.answer_after
        )
        if wants_tool:
            arguments = (
                "{not json" if self.bad_arguments and n == 0 else json.dumps({"a": 2, "b": n})
            )
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"srv_{n}",
                        "type": "function",
                        "function": {"name": "add", "arguments": arguments},
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": f"thinking or answering, request {n}"}
        return {
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11 + n, "completion_tokens": 3 + n},
        }


@pytest.fixture
def server() -> Iterator[tuple[str, _Script]]:
    script = _Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            body = json.loads(self.rfile.read(length))
            assert self.path == "/v1/chat/completions"
            if script.refusals:
                status, headers = script.refusals.pop(0)
                script.refused += 1
                data = b'{"error": {"message": "try again"}}'
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            reply = script.reply(body)
            script.requests.append(body)
            script.headers.append(dict(self.headers))
            data = script.raw_body if script.raw_body is not None else json.dumps(reply).encode()
            self.send_response(script.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    return record_retry_waits(monkeypatch)


TASK = Task(id="t1", description="Add numbers.", input={"numbers": [2, 3], "note": "x" * 400})


def _params(**overrides: Any) -> dict[str, Any]:
    base = {
        "temperature": 0.3,
        "context_length": 5000,
        "max_steps": 10,
        "tool_usage_threshold": 0.0,
        "reasoning_depth": 1,
    }
    return {**base, **overrides}


def test_max_steps_stops_a_loop_that_always_calls_tools(server: tuple[str, _Script]) -> None:
    url, script = server
    agent = ChatAgent(url, "scripted", [add])
    trace = run_agent(agent, TASK, _params(max_steps=3), seed=5)
    assert len(script.requests) == 3
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert [c.tool_call.arguments for c in calls if c.tool_call] == [
        {"a": 2, "b": 0},
        {"a": 2, "b": 1},
        {"a": 2, "b": 2},
    ]
    assert [r.result for r in results] == [2, 3, 4]
    # the model's call ids are kept, and each result points at its call
    assert [c.id for c in calls] == ["srv_0", "srv_1", "srv_2"]
    assert [r.parent_id for r in results] == ["srv_0", "srv_1", "srv_2"]
    assert trace.steps[-1].kind is StepKind.error
    assert "max_steps=3" in (trace.steps[-1].error or "")
    # parameters reach every request
    assert {r["temperature"] for r in script.requests} == {0.3}
    assert {r["seed"] for r in script.requests} == {5}
    assert trace.metadata["model"] == "scripted"
    llm = [s for s in trace.steps if s.kind is StepKind.llm]
    assert llm[0].usage is not None and llm[0].usage.input_tokens == 11


def test_tool_results_go_back_to_the_model_and_the_answer_ends_the_run(
    server: tuple[str, _Script],
) -> None:
    url, script = server
    script.answer_after = 1
    trace = run_agent(ChatAgent(url, "scripted", [add]), TASK, _params())
    assert len(script.requests) == 2
    second = script.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "srv_0"
    assert second[-1] == {"role": "tool", "tool_call_id": "srv_0", "content": "2"}
    assert trace.output == "thinking or answering, request 1"


def test_threshold_limits_the_requests_that_offer_tools(server: tuple[str, _Script]) -> None:
    url, script = server
    # floor((1 - 0.7) * 10) = 3 requests may offer tools; the 4th has none and gets the answer
    trace = run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(tool_usage_threshold=0.7))
    offered = ["tools" in r for r in script.requests]
    assert offered == [True, True, True, False]
    assert trace.output == "thinking or answering, request 3"
    assert sum(1 for s in trace.steps if s.kind is StepKind.tool_call) == 3
    assert script.requests[0]["tools"][0]["function"]["name"] == "add"
    assert script.requests[0]["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]


def test_threshold_one_never_offers_tools(server: tuple[str, _Script]) -> None:
    url, script = server
    run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(tool_usage_threshold=1.0))
    assert len(script.requests) == 1 and "tools" not in script.requests[0]


def test_reasoning_depth_adds_reasoning_turns_without_tools(server: tuple[str, _Script]) -> None:
    url, script = server
    script.answer_after = 1
    trace = run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(reasoning_depth=3))
    # 2 reasoning turns (no tools), then a tool call, then the answer
    assert ["tools" in r for r in script.requests] == [False, False, True, True]
    assert "Reasoning turn 1 of 2" in script.requests[0]["messages"][-1]["content"]
    kinds = [s.kind for s in trace.steps]
    assert kinds[:2] == [StepKind.reasoning, StepKind.reasoning]
    # the reasoning turns stay in the history sent afterwards
    assert "Reasoning turn 2 of 2" in json.dumps(script.requests[2]["messages"])


def test_reasoning_turns_leave_one_request_for_the_loop(server: tuple[str, _Script]) -> None:
    url, script = server
    run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(reasoning_depth=10, max_steps=2))
    assert ["tools" in r for r in script.requests] == [False, True]


def test_context_length_truncates_task_and_history_in_characters(
    server: tuple[str, _Script],
) -> None:
    url, script = server
    run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(context_length=120, max_steps=4))
    for request in script.requests:
        user = request["messages"][1]
        assert user["role"] == "user" and len(user["content"]) == 120
        assert user["content"].startswith("Add numbers.")
    # the task text fills the budget: only the newest turn of history is sent
    last = script.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool"]
    assert last[2]["tool_calls"][0]["id"] == "srv_2"


def test_large_context_sends_the_whole_history(server: tuple[str, _Script]) -> None:
    url, script = server
    run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(context_length=5000, max_steps=4))
    roles = [m["role"] for m in script.requests[-1]["messages"]]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 3


def test_bad_arguments_are_reported_not_executed(server: tuple[str, _Script]) -> None:
    url, script = server
    script.bad_arguments = True
    script.answer_after = 1
    trace = run_agent(ChatAgent(url, "scripted", [add]), TASK, _params())
    result = next(s for s in trace.steps if s.kind is StepKind.tool_result)
    assert result.error is not None and result.error.startswith("invalid arguments")
    assert script.requests[1]["messages"][-1]["content"].startswith("error: invalid arguments")


def test_api_key_is_sent_but_never_recorded(
    server: tuple[str, _Script], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, script = server
    monkeypatch.setenv("AG_TEST_KEY", "sk-secret-value")
    script.answer_after = 0
    trace = run_agent(ChatAgent(url, "scripted", [add], api_key_env="AG_TEST_KEY"), TASK, _params())
    assert script.headers[0]["Authorization"] == "Bearer sk-secret-value"
    assert "sk-secret-value" not in trace.model_dump_json()


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, b'{"error": "overloaded"}', 'HTTP 500: {"error": "overloaded"}'),
        (200, b"<html>not json</html>", "unreadable response"),
        (200, b'{"choices": []}', "unreadable response"),
    ],
)
def test_a_failing_endpoint_ends_the_run_with_the_reason(
    server: tuple[str, _Script], status: int, body: bytes, message: str, waits: list[float]
) -> None:
    url, script = server
    script.status, script.raw_body = status, body
    trace = run_agent(ChatAgent(url, "scripted", [add]), TASK, _params())
    # a 5xx is retried (4 retries by default), an unreadable answer is not
    assert len(script.requests) == (5 if status == 500 else 1)
    assert len(waits) == len(script.requests) - 1
    assert trace.output is None
    assert message in str(trace.metadata["error"])
    assert trace.steps[-1].kind is StepKind.error and message in (trace.steps[-1].error or "")


def test_from_env_builds_the_agent_and_names_what_is_missing(
    server: tuple[str, _Script], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url, script = server
    for name in ("AGENTGAUGE_CHAT_BASE_URL", "AGENTGAUGE_CHAT_MODEL", "AGENTGAUGE_CHAT_TOOLS"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="set AGENTGAUGE_CHAT_BASE_URL and AGENTGAUGE_CHAT_MODEL"):
        from_env()
    (tmp_path / "env_tools.py").write_text(
        'def double(x: int) -> int:\n    """Twice x."""\n    return 2 * x\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AGENTGAUGE_CHAT_BASE_URL", url)
    monkeypatch.setenv("AGENTGAUGE_CHAT_MODEL", "env-model")
    monkeypatch.setenv("AGENTGAUGE_CHAT_TOOLS", "env_tools:nope")
    with pytest.raises(ValueError, match="AGENTGAUGE_CHAT_TOOLS: cannot load 'env_tools:nope'"):
        from_env()
    monkeypatch.setenv("AGENTGAUGE_CHAT_TOOLS", "env_tools:double")
    script.answer_after = 0
    run_agent(from_env(), TASK, _params())
    (request,) = script.requests
    assert request["model"] == "env-model"
    assert [t["function"]["name"] for t in request["tools"]] == ["double"]


def test_429_and_503_are_retried_waiting_retry_after_then_backoff(
    server: tuple[str, _Script], waits: list[float]
) -> None:
    url, script = server
    script.answer_after = 0
    script.refusals = [(429, {"Retry-After": "3"}), (503, {})]
    trace = run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(), seed=5)
    assert script.refused == 2 and len(script.requests) == 1
    assert trace.output == "thinking or answering, request 0"
    assert "error" not in trace.metadata
    # the server's Retry-After, then equal-jitter backoff min(30, 0.5·2^1) drawn from the seed
    rng = random.Random(5)
    assert waits == [3.0, 0.5 + rng.uniform(0, 0.5)]


def test_retry_after_is_capped_and_retries_are_bounded(
    server: tuple[str, _Script], waits: list[float]
) -> None:
    url, script = server
    script.refusals = [(429, {"Retry-After": "5000"})] * 3
    agent = ChatAgent(url, "scripted", [add], max_retries=2)
    trace = run_agent(agent, TASK, _params())
    assert script.refused == 3 and script.requests == []
    assert waits == [120.0, 120.0]
    assert "HTTP 429" in str(trace.metadata["error"])
    assert "(after 3 attempts)" in str(trace.metadata["error"])


def test_usage_of_every_request_is_recorded_and_summed(
    server: tuple[str, _Script], waits: list[float]
) -> None:
    url, script = server
    script.answer_after = 1
    script.refusals = [(500, {})]  # a failed attempt reports no usage
    trace = run_agent(ChatAgent(url, "scripted", [add]), TASK, _params(reasoning_depth=3))
    # requests 0 and 1 are reasoning turns, 2 calls the tool, 3 answers: 11 + n and 3 + n tokens
    assert len(script.requests) == 4
    model_steps = [s for s in trace.steps if s.kind in (StepKind.reasoning, StepKind.llm)]
    assert [s.kind for s in model_steps] == [StepKind.reasoning] * 2 + [StepKind.llm] * 2
    assert [s.usage for s in model_steps] == [
        Usage(input_tokens=11 + n, output_tokens=3 + n, model="scripted") for n in range(4)
    ]
    assert trace.usage == Usage(
        input_tokens=11 + 12 + 13 + 14, output_tokens=3 + 4 + 5 + 6, model="scripted"
    )


def _turn(context_length: int | None = None) -> tuple[Task, dict[str, Any]]:
    """A conversation's turn: an earlier exchange with a tool call, then the user's new
    message."""
    conversation = [
        {"role": "assistant", "content": "Hi! How can I help you today?"},
        {"role": "user", "content": "Add 2 and 40 please. " + "x" * 200},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "old_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 40}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "old_1", "content": "42"},
        {"role": "assistant", "content": "It is 42."},
        {"role": "user", "content": "And 2 and 1?"},
    ]
    task = Task(id="c1", description="Only add numbers.", input={"messages": conversation})
    params = _params(max_steps=2)
    del params["context_length"]
    if context_length is not None:
        params["context_length"] = context_length
    return task, params


def test_a_conversation_turn_sends_the_policy_and_the_whole_conversation(
    server: tuple[str, _Script],
) -> None:
    url, script = server
    script.answer_after = 2  # one call in this turn (the conversation holds one already)
    task, params = _turn()
    trace = run_agent(ChatAgent(url, "scripted", [add]), task, params)
    first = script.requests[0]["messages"]
    assert first[0]["role"] == "system"
    assert first[0]["content"].endswith("<policy>\nOnly add numbers.\n</policy>")
    assert first[1:] == task.input["messages"]  # type: ignore[index]
    assert trace.output == "thinking or answering, request 1"  # the reply, as text
    assert [s.kind for s in trace.steps] == [
        StepKind.llm,
        StepKind.tool_call,
        StepKind.tool_result,
        StepKind.llm,
    ]


def test_a_conversation_turn_keeps_the_last_user_message_within_context_length(
    server: tuple[str, _Script],
) -> None:
    url, script = server
    script.answer_after = 2
    task, params = _turn(context_length=15)
    run_agent(ChatAgent(url, "scripted", [add]), task, params)
    # no older message fits: the policy, the last user message and this turn's steps remain
    assert [m["role"] for m in script.requests[0]["messages"]] == ["system", "user"]
    assert [m["role"] for m in script.requests[1]["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    # older messages go newest first while they fit; a tool result stays with its call
    sent = []
    for context_length in (100, 1000):
        task, params = _turn(context_length=context_length)
        script.requests.clear()
        run_agent(ChatAgent(url, "scripted", [add]), task, params)
        sent.append([m["role"] for m in script.requests[0]["messages"]])
    assert sent == [
        ["system", "assistant", "user"],
        ["system", "assistant", "user", "assistant", "tool", "assistant", "user"],
    ]
