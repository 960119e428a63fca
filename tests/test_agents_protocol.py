"""The agent protocol: recorder, @tool bound to the current run (asyncio and threads), runners,
agent loading, task files and --params parsing."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.protocol import (
    AgentLoadError,
    Recorder,
    RunSpec,
    current_recorder,
    load_agent,
    parse_params,
    read_tasks,
    run_agent,
    run_agents,
    tool,
)
from agentgauge.io.jsonl import ReadError
from agentgauge.model import StepKind, Task


@tool
def multiply(a: int, b: int = 2) -> int:
    """Multiply a by b.

    More text that is not part of the description.
    """
    return a * b


@tool
async def slow_echo(text: str, delay: float) -> str:
    """Echo text after a delay."""
    await asyncio.sleep(delay)
    return text


@tool(name="fail")
def failing(reason: str) -> None:
    """Always fails."""
    raise RuntimeError(reason)


def _task(i: int) -> Task:
    return Task(id=f"t{i}", input={"n": i})


def test_tool_outside_a_run_is_a_plain_call() -> None:
    assert current_recorder() is None
    assert multiply(3) == 6


def test_tool_spec_comes_from_the_signature() -> None:
    spec = multiply.spec
    assert spec.name == "multiply"
    assert spec.description == "Multiply a by b."
    assert spec.parameters["properties"] == {
        "a": {"type": "integer"},
        "b": {"default": 2, "type": "integer"},
    }
    assert spec.parameters["required"] == ["a"]
    assert failing.name == "fail"


class SyncAgent:
    name = "sync-agent"

    def run(self, task: Task, params: dict[str, Any], recorder: Recorder) -> dict[str, Any]:
        recorder.reasoning(f"multiplying {task.input}")
        n = task.input["n"]  # type: ignore[index]
        return {"product": multiply(n, b=int(params["factor"]))}


def test_sync_agent_trace_records_tool_call_and_result() -> None:
    trace = run_agent(SyncAgent(), _task(4), {"factor": 3}, seed=9)
    assert trace.output == {"product": 12}
    assert [s.kind for s in trace.steps] == [
        StepKind.reasoning,
        StepKind.tool_call,
        StepKind.tool_result,
    ]
    call, result = trace.steps[1], trace.steps[2]
    assert call.tool_call is not None
    assert call.tool_call.name == "multiply"
    assert call.tool_call.arguments == {"a": 4, "b": 3}
    assert result.result == 12 and result.parent_id == call.id
    assert [s.index for s in trace.steps] == [0, 1, 2]
    assert trace.agent == "sync-agent" and trace.params == {"factor": 3}
    assert trace.id == "t4#s9" and trace.metadata["seed"] == 9


class AsyncAgent:
    async def run(self, task: Task, params: dict[str, Any], recorder: Recorder) -> str:
        n = task.input["n"]  # type: ignore[index]
        # interleave with the other runs: later tasks finish their first tool first
        first = await slow_echo(f"a{n}", delay=0.01 * (10 - n))
        await asyncio.sleep(0)
        second = await slow_echo(f"b{n}", delay=0.005 * n)
        return first + second


async def test_concurrent_asyncio_runs_keep_their_own_steps() -> None:
    from agentgauge.agents.protocol import run_agent_async

    traces = await asyncio.gather(*(run_agent_async(AsyncAgent(), _task(i), {}) for i in range(8)))
    for i, trace in enumerate(traces):
        assert trace.output == f"a{i}b{i}"
        calls = [s.tool_call.arguments["text"] for s in trace.steps if s.tool_call]
        assert calls == [f"a{i}", f"b{i}"]
        results = [s.result for s in trace.steps if s.kind is StepKind.tool_result]
        assert results == [f"a{i}", f"b{i}"]


def test_run_agents_with_threads_keeps_runs_apart() -> None:
    barrier = threading.Barrier(4)

    class Threaded:
        def run(self, task: Task, params: dict[str, Any], recorder: Recorder) -> int:
            n = task.input["n"]  # type: ignore[index]
            barrier.wait(timeout=10)  # four runs are inside their run at the same time
            total = 0
            for k in range(5):
                total += multiply(n, b=k)
            return total

    runs = [RunSpec(_task(i), None, f"r{i}") for i in range(4)]
    traces = run_agents(Threaded(), runs, {}, jobs=4)
    for i, trace in enumerate(traces):
        assert trace.id == f"r{i}"
        assert trace.output == i * 10
        args = [s.tool_call.arguments for s in trace.steps if s.tool_call]
        assert args == [{"a": i, "b": k} for k in range(5)]


def test_run_agents_async_agent_in_order() -> None:
    runs = [RunSpec(_task(i), 1, f"x{i}") for i in range(5)]
    traces = run_agents(AsyncAgent(), runs, {}, jobs=3)
    assert [t.output for t in traces] == [f"a{i}b{i}" for i in range(5)]


def test_to_thread_inside_an_async_agent_records_on_the_run() -> None:
    class Offloading:
        async def run(self, task: Task, params: dict[str, Any], recorder: Recorder) -> int:
            return await asyncio.to_thread(multiply, 7, 6)

    trace = run_agent(Offloading(), _task(0), {})
    assert trace.output == 42
    assert [s.kind for s in trace.steps] == [StepKind.tool_call, StepKind.tool_result]


def test_agent_error_is_recorded_and_does_not_propagate() -> None:
    class Failing:
        def run(self, task: Task, params: dict[str, Any], recorder: Recorder) -> None:
            failing("broken tool")

    trace = run_agent(Failing(), _task(1), {})
    assert trace.output is None
    assert trace.metadata["error"].startswith("RuntimeError: broken tool")
    kinds = [s.kind for s in trace.steps]
    assert kinds == [StepKind.tool_call, StepKind.tool_result, StepKind.error]
    assert trace.steps[1].error == "RuntimeError: broken tool"


def test_load_agent_variants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_agents.py").write_text(
        "class A:\n"
        "    def run(self, task, params, recorder):\n"
        "        return 1\n"
        "def make():\n"
        "    return A()\n"
        "instance = A()\n"
        "not_an_agent = 3\n"
        "def needs_args(x):\n"
        "    return A()\n"
        "def gives_nothing():\n"
        "    return 3\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        task = Task(id="t")
        for ref in ("my_agents:A", "my_agents:make", "my_agents:instance"):
            agent = load_agent(ref)
            assert not isinstance(agent, type) and agent.run(task, {}, None) == 1
        with pytest.raises(AgentLoadError, match=r"'not_an_agent' \(of type int\) is not an agent"):
            load_agent("my_agents:not_an_agent")
        with pytest.raises(AgentLoadError, match="cannot be called without arguments"):
            load_agent("my_agents:needs_args")
        with pytest.raises(AgentLoadError, match="gives no object with a run"):
            load_agent("my_agents:gives_nothing")
        with pytest.raises(AgentLoadError, match="expected 'module:factory'"):
            load_agent("my_agents")
        with pytest.raises(AgentLoadError, match="has no 'missing'"):
            load_agent("my_agents:missing")
        with pytest.raises(AgentLoadError, match="cannot import"):
            load_agent("no_such_module_xyz:A")
    finally:
        sys.modules.pop("my_agents", None)


def test_read_tasks_reports_bad_lines_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    lines = [
        json.dumps({"id": "a", "input": "x"}),
        "{not json",
        json.dumps({"id": "b", "difficulty": "impossible"}),
        json.dumps({"id": "c", "expected_output": {"k": 1}}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    items = list(read_tasks(path))
    assert [i.id for i in items if isinstance(i, Task)] == ["a", "c"]
    errors = [i for i in items if isinstance(i, ReadError)]
    assert [(e.line, e.field) for e in errors] == [(2, None), (3, "difficulty")]
    assert errors[0].source == str(path)


def test_parse_params() -> None:
    assert parse_params("temperature=0.2, max_steps=5,style=terse,flag=true") == {
        "temperature": 0.2,
        "max_steps": 5,
        "style": "terse",
        "flag": True,
    }
    assert parse_params(None) == {}
    with pytest.raises(ValueError, match="'oops' is not 'name=value'"):
        parse_params("a=1,oops")


def test_recorder_is_thread_safe() -> None:
    recorder = Recorder()

    def add_many(k: int) -> None:
        for j in range(200):
            recorder.reasoning(f"{k}-{j}")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(add_many, range(4)))
    steps = recorder.steps
    assert len(steps) == 800
    assert [s.index for s in steps] == list(range(800))
