"""The model runner against a real scripted HTTP server on 127.0.0.1 and Python callables."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentgauge.http import ConnectFailed, ResponseError, TransientError
from agentgauge.model import Task, ToolSpec
from agentgauge.toolcall.runner import (
    CallableBackend,
    ChatRequest,
    EndpointConfig,
    EndpointError,
    HttpChatBackend,
    Prediction,
    RunSettings,
    completion_from_response,
    request_from_task,
    run_chat,
    run_to_jsonl,
)
from agentgauge.toolcall.schema import openai_tools
from toolcall_server import WEATHER_TOOL, record_retry_waits, scripted_server

SECRET = "sk-test-SECRET-0123456789"


def _request(sample_id: str, script: str, tools: list[dict[str, Any]] | None = None) -> ChatRequest:
    return ChatRequest(
        id=sample_id,
        messages=[{"role": "user", "content": f"please script:{script}"}],
        tools=[WEATHER_TOOL] if tools is None else tools,
    )


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    return record_retry_waits(monkeypatch)


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AG_RUNNER_TEST_KEY", SECRET)
    return "AG_RUNNER_TEST_KEY"


def _run(
    base_url: str,
    requests: list[ChatRequest],
    settings: RunSettings,
    key_env: str = "AG_RUNNER_TEST_KEY_UNSET",
    **endpoint: Any,
) -> list[Prediction]:
    config = EndpointConfig(base_url=base_url, model="scripted", api_key_env=key_env, **endpoint)

    async def main() -> list[Prediction]:
        async with HttpChatBackend(config, concurrency=settings.concurrency) as backend:
            return await run_chat(requests, backend, settings, progress=False)

    return asyncio.run(main())


def test_request_from_task_sends_messages_and_openai_tools() -> None:
    task = Task(
        id="simple_python_1",
        input=[{"role": "user", "content": "Factorial of 5?"}],
        tools=[
            ToolSpec(
                name="math.factorial",
                description="Factorial",
                parameters={
                    "type": "dict",
                    "properties": {
                        "number": {"type": "integer"},
                        "point": {"type": "tuple", "items": {"type": "float"}},
                        "anything": {"type": "any"},
                    },
                },
            )
        ],
    )
    request = request_from_task(task)
    assert request.messages == [{"role": "user", "content": "Factorial of 5?"}]
    assert request.tools == [
        {
            "type": "function",
            "function": {
                "name": "math.factorial",
                "description": "Factorial",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "number": {"type": "integer"},
                        "point": {"type": "array", "items": {"type": "number"}},
                        "anything": {"type": "string"},
                    },
                },
            },
        }
    ]
    assert task.tools[0].parameters["type"] == "dict"  # kept as it was, for checking
    assert request_from_task(Task(id="t", input="hi")).messages == [
        {"role": "user", "content": "hi"}
    ]
    with pytest.raises(ValueError, match="task 'empty'"):
        request_from_task(Task(id="empty"))


def test_request_body_carries_defaults_tools_and_key(api_key: str, waits: list[float]) -> None:
    bfcl_tool = openai_tools(
        [
            ToolSpec(
                name="math.factorial",
                parameters={"type": "dict", "properties": {"number": {"type": "float"}}},
            )
        ]
    )
    with scripted_server() as (base, state):
        predictions = _run(
            base + "/v1",
            [_request("a", "echo_tool", bfcl_tool), _request("b", "echo_tool", [])],
            RunSettings(concurrency=1),
            key_env=api_key,
        )
    assert all(r.path == "/v1/chat/completions" for r in state.requests)
    with_tools = state.requests[0].body
    assert with_tools["model"] == "scripted"
    assert with_tools["temperature"] == 0.0
    assert with_tools["seed"] == 0
    assert with_tools["tool_choice"] == "auto"
    # OpenAI refuses dots in names: renamed on the wire, with JSON Schema types.
    assert with_tools["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "math_factorial",
                "description": "",
                "parameters": {"type": "object", "properties": {"number": {"type": "number"}}},
            },
        }
    ]
    assert "tools" not in state.requests[1].body and "tool_choice" not in state.requests[1].body
    assert all(r.headers["Authorization"] == f"Bearer {SECRET}" for r in state.requests)
    # ... and the answer carries the dataset's own name again.
    call = predictions[0].result["tool_calls"][0]  # type: ignore[index,call-overload]
    assert call["function"] == {"name": "math.factorial", "arguments": '{"q": "x"}'}
    assert predictions[0].calls == [
        {"id": "call_0", "name": "math.factorial", "arguments": {"q": "x"}}
    ]
    assert predictions[0].usage == {"input_tokens": 11, "output_tokens": 7}
    assert predictions[0].finish_reason == "tool_calls"
    assert predictions[1].result == {"role": "assistant", "content": "no tool needed"}
    assert waits == []


def test_base_url_without_v1_reaches_the_same_path(waits: list[float]) -> None:
    with scripted_server() as (base, state):
        (prediction,) = _run(base, [_request("w", "weather")], RunSettings())
    assert state.requests[0].path == "/v1/chat/completions"
    assert "Authorization" not in state.requests[0].headers  # no key set: none sent
    assert prediction.error is None and prediction.attempts == 1
    assert prediction.latency_s is not None and prediction.latency_s > 0
    assert prediction.calls == [
        {"id": "call_0", "name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
    ]
    assert prediction.parse_error is None
    assert prediction.result == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "arguments": '{"city": "Paris", "unit": "celsius"}',
                },
            }
        ],
    }


def test_sampling_settings_reach_the_body(waits: list[float]) -> None:
    with scripted_server() as (base, state):
        _run(
            base,
            [_request("w", "weather")],
            RunSettings(),
            temperature=0.7,
            seed=None,
            max_tokens=64,
            tool_choice=None,
            extra_body={"top_p": 0.9},
        )
    body = state.requests[0].body
    assert body["temperature"] == 0.7 and body["max_tokens"] == 64 and body["top_p"] == 0.9
    assert "seed" not in body and "tool_choice" not in body


def test_429_waits_retry_after_then_succeeds(waits: list[float]) -> None:
    with scripted_server() as (base, state):
        (prediction,) = _run(base, [_request("r", "rate_limited")], RunSettings(max_retries=3))
    assert state.seen["rate_limited"] == 3
    assert prediction.attempts == 3 and prediction.error is None
    assert waits == [7.0, 7.0]  # the server's Retry-After, not the exponential backoff
    call = prediction.result["tool_calls"][0]["function"]  # type: ignore[index,call-overload]
    assert json.loads(call["arguments"]) == {"city": "Rome"}


def test_retry_after_is_capped(waits: list[float]) -> None:
    with scripted_server() as (base, _):
        _run(base, [_request("r", "rate_limited")], RunSettings(max_retry_after_s=2.5))
    assert waits == [2.5, 2.5]


def test_500_retries_with_seeded_exponential_backoff(waits: list[float]) -> None:
    settings = RunSettings(max_retries=4, backoff_base_s=0.5, backoff_max_s=30, jitter_seed=42)
    with scripted_server() as (base, state):
        (prediction,) = _run(base, [_request("f", "flaky")], settings)
    assert state.seen["flaky"] == 3 and prediction.attempts == 3 and prediction.error is None
    rng = random.Random(42)
    expected = [c / 2 + rng.uniform(0, c / 2) for c in (0.5, 1.0)]
    assert waits == expected
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0


def test_persistent_503_records_error_and_run_goes_on(waits: list[float]) -> None:
    settings = RunSettings(max_retries=2, backoff_base_s=0.01)
    with scripted_server() as (base, state):
        failed, ok = _run(base, [_request("x", "always_503"), _request("y", "weather")], settings)
    assert state.seen["always_503"] == 3
    assert failed.result is None and failed.latency_s is None and failed.attempts == 3
    assert failed.error == 'HTTP 503: {"error": {"message": "overloaded"}} (after 3 attempts)'
    assert ok.error is None and ok.result is not None
    assert len(waits) == 2


def test_malformed_and_shapeless_bodies_fail_without_retry(waits: list[float]) -> None:
    with scripted_server() as (base, state):
        bad, empty = _run(
            base, [_request("m", "malformed"), _request("n", "no_choices")], RunSettings()
        )
    assert state.seen["malformed"] == 1 and state.seen["no_choices"] == 1
    assert bad.attempts == 1 and bad.error is not None
    assert bad.error.startswith("response body is not JSON")
    assert empty.error == (
        "response is neither a chat completion (choices) nor a message (role/content/tool_calls)"
        ': {"object": "chat.completion", "data": []}'
    )
    assert waits == []


def test_slow_response_times_out_per_sample(waits: list[float]) -> None:
    settings = RunSettings(timeout_s=1.0, max_retries=1, backoff_base_s=0.01)
    with scripted_server() as (base, state):
        slow, fast = _run(base, [_request("s", "slow"), _request("w", "weather")], settings)
    assert state.seen["slow"] == 2  # the timeout is retried like a dropped connection
    assert slow.result is None
    assert slow.error == "timeout: no complete response within 1 s (after 2 attempts)"
    assert fast.error is None


def test_a_dead_endpoint_stops_the_run_at_its_first_request(waits: list[float]) -> None:
    """Nothing listens: the first request, sent alone and not retried, ends the run, instead of
    every sample failing after its retries (minutes on a large dataset)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    requests = [_request(f"c{i}", "weather") for i in range(40)]
    started = time.perf_counter()
    with pytest.raises(EndpointError) as caught:
        _run(f"http://127.0.0.1:{port}", requests, RunSettings(max_retries=5))
    assert time.perf_counter() - started < 5
    assert waits == []  # not one retry
    message = str(caught.value)
    assert message.startswith(
        f"the first request to http://127.0.0.1:{port}/v1/chat/completions failed: ConnectError"
    )
    assert message.endswith(
        ": start the server, or fix the endpoint URL, the model name or the API key"
    )


@pytest.mark.parametrize(("script", "status"), [("unknown_model", 404), ("unauthorized", 401)])
def test_an_endpoint_that_rejects_the_first_request_stops_the_run(
    api_key: str, waits: list[float], script: str, status: int
) -> None:
    with scripted_server() as (base, state):
        requests = [_request("a", script), _request("b", "weather")]
        with pytest.raises(EndpointError) as caught:
            _run(base, requests, RunSettings(max_retries=3), key_env=api_key)
    assert state.seen[script] == 1 and "weather" not in state.seen  # one request, nothing after
    assert f"failed: HTTP {status}: " in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_connection_lost_during_the_run_is_retried_then_recorded(waits: list[float]) -> None:
    """After a first answer, a refused connection is a failure of its own sample: retried,
    then recorded, and the run goes on."""
    calls: Counter[str] = Counter()

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        query = messages[-1]["content"]
        calls[query] += 1
        if query.startswith("lost"):
            raise ConnectFailed("ConnectError: [Errno 111] Connection refused")
        return {"role": "assistant", "content": "ok"}

    requests = [
        ChatRequest(id=q, messages=[{"role": "user", "content": q}])
        for q in ("first", "lost", "last")
    ]
    first, lost, last = asyncio.run(
        run_chat(requests, CallableBackend(model), RunSettings(max_retries=2), progress=False)
    )
    assert first.error is None and last.error is None
    assert calls["lost"] == 3 and lost.attempts == 3 and lost.result is None
    assert lost.error == "ConnectError: [Errno 111] Connection refused (after 3 attempts)"
    assert len(waits) == 2


def test_concurrency_limit_is_respected(waits: list[float]) -> None:
    # the server answers a "paced" request only once two are in flight together; the first
    # request of a run is sent alone
    requests = [_request("w", "weather"), *(_request(f"p{i}", "paced") for i in range(8))]
    with scripted_server() as (base, state):
        predictions = _run(base, requests, RunSettings(concurrency=2))
    assert state.seen["paced"] == 8
    assert all(p.error is None for p in predictions)
    assert state.max_in_flight == 2
    assert [p.id for p in predictions] == ["w", *(f"p{i}" for i in range(8))]  # order kept


def test_api_key_never_leaves_the_header(
    api_key: str, waits: list[float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "preds.jsonl"
    config = EndpointConfig(base_url="http://127.0.0.1:1", model="scripted", api_key_env=api_key)
    with scripted_server() as (base, state):
        backend = HttpChatBackend(config.model_copy(update={"base_url": base}))
        assert backend.has_api_key
        assert SECRET not in repr(backend) and SECRET not in repr(backend.__dict__)
        predictions = run_to_jsonl(
            [_request("w", "weather"), _request("u", "unauthorized"), _request("m", "malformed")],
            backend,
            out,
            RunSettings(),
            progress=True,
        )
    assert state.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    unauthorized = next(p for p in predictions if p.id == "u")
    assert unauthorized.attempts == 1  # 401 is not retried
    assert unauthorized.error == (
        'HTTP 401: {"error": {"message": "Incorrect API key provided: ***"}}'
    )
    captured = capsys.readouterr()
    text = out.read_text(encoding="utf-8")
    for place in (text, captured.out, captured.err, repr(predictions), config.model_dump_json()):
        assert SECRET not in place
    lines = [json.loads(line) for line in text.splitlines()]
    assert sorted(line["id"] for line in lines) == ["m", "u", "w"]
    assert {line["id"]: set(line) for line in lines} == {
        "u": {"id", "attempts", "error"},
        "w": {"id", "result", "latency_s", "usage", "attempts", "finish_reason", "calls"},
        "m": {"id", "attempts", "error"},
    }


def test_callable_backend_sync_and_async_share_the_loop(waits: list[float]) -> None:
    seen: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    failures = {"n": 0}

    def sync_model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        seen.append((messages, tools))
        if messages[0]["content"].endswith("script:transient") and failures["n"] < 1:
            failures["n"] += 1
            raise TransientError("busy", retry_after_s=0.5)
        if messages[0]["content"].endswith("script:broken"):
            raise KeyError("boom")
        if messages[0]["content"].endswith("script:garbled"):
            return '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>'
        return '[get_weather(city="Oslo")]'

    async def async_model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if messages[0]["content"].endswith("script:slow"):
            await asyncio.sleep(5)
        return {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}

    requests = [
        _request("t", "transient"),
        _request("b", "broken"),
        _request("ok", "x"),
        _request("g", "garbled"),
    ]
    settings = RunSettings(timeout_s=1.0, max_retries=1)
    sync_preds = asyncio.run(
        run_chat(requests, CallableBackend(sync_model), settings, progress=False)
    )
    oslo = '[get_weather(city="Oslo")]'
    assert [(p.id, p.result, p.attempts, p.error) for p in sync_preds[:3]] == [
        ("t", oslo, 2, None),
        ("b", None, 1, "KeyError: 'boom'"),
        ("ok", oslo, 1, None),
    ]
    assert sync_preds[0].calls == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert sync_preds[1].calls is None
    garbled = sync_preds[3]
    assert garbled.error is None and garbled.calls == [] and garbled.parse_error is not None
    assert waits == [0.5]
    assert seen[0] == (requests[0].messages, [WEATHER_TOOL])

    async_reqs = [_request("s", "slow"), _request("f", "fast")]
    slow, fast = asyncio.run(
        run_chat(async_reqs, CallableBackend(async_model), settings, progress=False)
    )
    assert slow.error == "timeout: no complete response within 1 s (after 2 attempts)"
    assert fast.result == {"role": "assistant", "content": "hi"} and fast.usage is None


def test_completion_from_response_shapes() -> None:
    calls = [{"get_weather": {"city": "Oslo"}}]
    assert completion_from_response(calls).result == calls
    message = {"role": "assistant", "content": "x"}
    assert completion_from_response(message).result == message
    full = {
        "choices": [{"message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    done = completion_from_response(full)
    assert (done.result, done.usage, done.finish_reason) == (
        message,
        {"input_tokens": 3, "output_tokens": 2},
        "stop",
    )
    with pytest.raises(ResponseError, match=r"no choices\[0\]"):
        completion_from_response({"choices": []})
    with pytest.raises(ResponseError, match="unsupported response type int"):
        completion_from_response(3)
