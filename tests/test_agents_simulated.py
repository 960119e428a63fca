"""The SIMULATED agent: labelled, deterministic, and each parameter does what is documented."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from agentgauge.agents.protocol import run_agent
from agentgauge.agents.simulated import (
    AGENT_NAME,
    LONGEST_RUN,
    SimulatedAgent,
    optimum_grid,
    simulated_tasks,
    slip_probability,
)
from agentgauge.model import StepKind, Task, Trace

TASKS = simulated_tasks()
HARD = next(t for t in TASKS if t.difficulty == "hard")  # three readings


def _reading_ends(task: Task) -> list[int]:
    from agentgauge.agents.simulated import _READING

    assert isinstance(task.input, dict)
    return [m.end() for m in _READING.finditer(str(task.input["document"]))]


def _run(task: Task = HARD, seed: int = 0, **overrides: Any) -> Trace:
    params = {
        "context_length": 5000,
        "temperature": 0.1,
        "max_steps": 50,
        "tool_usage_threshold": 0.0,
        "reasoning_depth": 1,
        **overrides,
    }
    return run_agent(SimulatedAgent(), task, params, seed=seed)


def _kinds(trace: Trace) -> list[StepKind]:
    return [s.kind for s in trace.steps]


def test_tasks_are_generated_deterministically_and_labelled() -> None:
    again = simulated_tasks()
    assert [t.model_dump() for t in again] == [t.model_dump() for t in TASKS]
    assert len(TASKS) == 24
    for task in TASKS:
        assert task.id.startswith("sim-")
        assert task.description.startswith("SIMULATION task")
        assert task.metadata["simulation"] is True
        assert task.category == "tool_use"
        assert isinstance(task.expected_output, dict)
        assert len(_reading_ends(task)) == len(task.expected_output)
    assert {t.difficulty for t in TASKS} == {"easy", "medium", "hard"}


def test_trace_is_labelled_as_a_simulation() -> None:
    trace = _run()
    assert trace.agent == AGENT_NAME and "SIMULATION" in AGENT_NAME
    assert trace.metadata["simulation"] is True
    assert "SIMULATION" in str(trace.metadata["note"])
    # simulated time: no wall-clock stamps, duration = sum of the simulated step durations
    assert trace.started_at is None and all(s.started_at is None for s in trace.steps)
    assert trace.duration_s == pytest.approx(sum(s.duration_s or 0 for s in trace.steps))


def test_deterministic_given_a_seed() -> None:
    a = _run(seed=3, temperature=1.5)
    b = _run(seed=3, temperature=1.5)
    assert a.model_dump_json() == b.model_dump_json()
    outputs = {str(_run(seed=s, temperature=2.0).output) for s in range(12)}
    assert len(outputs) > 1  # the seed matters when temperature adds noise


def test_full_budget_low_temperature_and_tools_solves_the_task() -> None:
    trace = _run()
    assert trace.output == HARD.expected_output
    # read, 3 × (tool call, result), 1 reasoning turn, answer
    assert _kinds(trace) == [
        StepKind.llm,
        *[StepKind.tool_call, StepKind.tool_result] * 3,
        StepKind.reasoning,
        StepKind.llm,
    ]


def test_context_length_truncates_what_it_reads() -> None:
    ends = _reading_ends(HARD)
    for i, end in enumerate(ends):
        found_below = _run(context_length=end - 1).output
        found_at = _run(context_length=end).output
        assert isinstance(found_below, dict) and isinstance(found_at, dict)
        assert len(found_below) == i and len(found_at) == i + 1
    read = _run(context_length=777).steps[0]
    assert read.content is not None and read.content.startswith("Read 777 characters")
    assert read.duration_s == pytest.approx(777 / 2500)


def test_max_steps_caps_the_loop() -> None:
    for cap in range(1, LONGEST_RUN + 2):
        trace = _run(max_steps=cap, reasoning_depth=10)
        assert len(trace.steps) <= cap
        assert trace.steps[-1].kind is StepKind.llm  # the answer is always given
    assert _kinds(_run(max_steps=1)) == [StepKind.llm]
    assert _run(max_steps=1).output == {}
    full = _run(max_steps=LONGEST_RUN, reasoning_depth=10)
    assert len(full.steps) == LONGEST_RUN
    assert _run(max_steps=50, reasoning_depth=10).steps == full.steps


def test_tool_usage_threshold_gates_tool_use() -> None:
    everything = _run(tool_usage_threshold=0.0)
    nothing = _run(tool_usage_threshold=1.0)
    assert len(everything.tool_calls) == 3
    assert nothing.tool_calls == []
    assert all(c.name == "calculate" for c in everything.tool_calls)
    middle = _run(tool_usage_threshold=0.5)
    # complexities in the document decide which readings use the tool
    assert isinstance(HARD.input, dict)
    doc = str(HARD.input["document"])
    complexities = [float(x) for x in re.findall(r"complexity ([0-9.]+)", doc)]
    assert len(middle.tool_calls) == sum(u >= 0.5 for u in complexities)


def test_mental_answers_need_reasoning_depth() -> None:
    # without tools, a reading of complexity u is right iff 0.1 × reasoning turns >= u
    assert isinstance(HARD.expected_output, dict)
    deep = _run(tool_usage_threshold=1.0, reasoning_depth=10)
    assert deep.output == HARD.expected_output
    shallow = _run(tool_usage_threshold=1.0, reasoning_depth=1)
    assert isinstance(shallow.output, dict)
    assert shallow.output != HARD.expected_output
    reasoning = [s for s in deep.steps if s.kind is StepKind.reasoning]
    assert len(reasoning) == 10
    assert [s.content.split(",")[0] for s in reasoning if s.content][:4] == [
        "First",
        "Then",
        "Next",
        "Therefore",
    ]


def test_temperature_slips_are_seeded_and_nested() -> None:
    assert slip_probability(0.1) == 0.0 and slip_probability(2.0) == pytest.approx(0.5)
    for seed in range(20):
        cold = _run(seed=seed, temperature=0.1).output
        assert cold == HARD.expected_output
        assert isinstance(HARD.expected_output, dict)
        wrong = []
        for temperature in (0.5, 1.0, 1.5, 2.0):
            out = _run(seed=seed, temperature=temperature).output
            assert isinstance(out, dict)
            wrong.append({k for k, v in out.items() if v != HARD.expected_output[k]})
        # common random numbers: a hotter run slips on a superset of the values
        assert all(a <= b for a, b in itertools.pairwise(wrong))
        # temperature never changes the steps' kinds or durations
        hot = _run(seed=seed, temperature=2.0)
        cold_trace = _run(seed=seed, temperature=0.1)
        assert _kinds(hot) == _kinds(cold_trace)
        assert [s.duration_s for s in hot.steps] == [s.duration_s for s in cold_trace.steps]


def test_optimum_grid_covers_every_breakpoint() -> None:
    grid = list(optimum_grid(TASKS))
    contexts = sorted({g["context_length"] for g in grid})
    ends = sorted({e for t in TASKS for e in _reading_ends(t)})
    assert contexts == [100, *ends]
    assert sorted({g["tool_usage_threshold"] for g in grid}) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert {g["temperature"] for g in grid} == {0.1}
    assert len(grid) == len(contexts) * LONGEST_RUN * 6 * 10
