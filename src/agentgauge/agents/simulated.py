"""A SIMULATED agent over bundled synthetic tasks, for demos, tests and tuner benchmarks.

This is a simulation: no model is called. Every trace it writes says so (agent name
``simulated-agent [SIMULATION]``, ``metadata["simulation"] = true``) and so do its task ids
(``sim-NN``) and descriptions.

**Tasks** (:func:`simulated_tasks`, generated in code from a fixed seed): a document of filler
sentences in which one to three *readings* are stated, each as
``"Reading <name>: compute <a> <op> <b> (complexity <u>)."`` ending at a known character offset;
the task asks for every reading's value (``expected_output = {name: value}``), offers the tool
``calculate(a, b, op)``, and has category ``tool_use`` and a difficulty (easy / medium / hard for
one / two / three readings).

**Behaviour** (parameters as applied, integers already rounded; the run's seed comes from the
recorder; one step = one recorded step; every step has a *simulated* duration so timings are
deterministic):

1. ``max_steps`` caps the loop: an action is taken only while it leaves one step for the final
   answer (a tool use costs two steps: call and result).
2. Read (one llm step): the agent reads the first ``context_length`` *characters* of the document
   and finds the readings whose sentence ends within them (simulated time: chars read / 2500 s);
   the step's text notes the first 40 words read.
3. Tools: for each reading found, in document order, whose complexity
   ``u >= tool_usage_threshold``, the agent calls ``calculate`` (call 0.05 s + result 0.2 s)
   and gets the exact value; a reading it cannot afford is left out.
4. Reason: up to ``reasoning_depth`` reasoning steps (0.3 s each; each a short sentence about
   the readings found that opens with a new connector: first, then, next, therefore...);
   skill = 0.1 × reasoning steps taken. The other readings (``u < tool_usage_threshold``) are
   computed mentally: exactly when ``u <= skill``, off by a seeded error otherwise.
5. ``temperature`` slips: each value is perturbed when a seeded uniform draw is below
   ``q(T) = 0.5·(T − 0.1)/1.9`` (0 at T = 0.1), and the answer adds an off-topic aside when
   another draw is below ``q(T)``. Draws are fixed by (seed, task), so a larger temperature
   perturbs a superset of what a smaller one does (common random numbers).
6. Answer (one llm step, 0.2 s): the values found; readings not reached are omitted.

**Known effects** (by construction, for the ``behavior`` metrics): temperature changes only
values and answer text — never the number, kind or duration of steps — so it has **no effect on
efficiency, tool_usage, adaptability or safety**; nothing ever writes unsafe text, so safety is
1.0 for every parameter. **Known optimum**: for a suite whose composite does not weigh coherence,
temperature = 0.1 is optimal (at fixed other parameters a higher temperature perturbs a superset
of values and changes nothing else), and the composite is piecewise constant or decreasing in
context_length between the readings' end offsets and constant in tool_usage_threshold between
complexities; :func:`optimum_grid` enumerates exactly those breakpoints, so the best point of
that grid is the global optimum (see ``docs/tuning.md`` for its value on the ``behavior`` suite).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agentgauge.agents.protocol import Recorder, tool
from agentgauge.model import JSON, Difficulty, Task

__all__ = [
    "AGENT_NAME",
    "COMPLEXITIES",
    "LONGEST_RUN",
    "SimulatedAgent",
    "optimum_grid",
    "simulated_tasks",
    "slip_probability",
]

AGENT_NAME = "simulated-agent [SIMULATION]"
COMPLEXITIES: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
_READ_ENDS = (450, 1200, 2100, 3200, 4500)
_OPS = ("+", "-", "*")
_TOPICS = (
    ("warehouse", "pallets shelves forklift inventory shipment crates aisle loading dock"),
    ("orchard", "apples pears harvest baskets trees ladders rows pickers season"),
    ("library", "books shelves catalogue readers loans archive volumes reading room"),
    ("railway", "trains platforms timetable carriages signals depot passengers route"),
    ("bakery", "loaves ovens flour dough batches trays morning customers pastries"),
    ("observatory", "telescopes stars nights lenses charts domes astronomers clouds"),
)
_CONNECTORS = (
    "First",
    "Then",
    "Next",
    "Therefore",
    "Thus",
    "Hence",
    "Consequently",
    "As a result",
    "It follows",
    "Finally",
)
_READING = re.compile(
    r"Reading (?P<name>[a-z_]+): compute (?P<a>\d+) (?P<op>[-+*]) (?P<b>\d+) "
    r"\(complexity (?P<u>[0-9.]+)\)\."
)
_CHARS_PER_SECOND = 2500.0
_SUMMARY_WORDS = 40
_MAX_READINGS = 3
LONGEST_RUN = 1 + 2 * _MAX_READINGS + 10 + 1
"""The most steps a run can take: read, a tool call and result per reading, ten reasoning
turns, answer."""
_REASON_S, _CALL_S, _RESULT_S, _ANSWER_S = 0.3, 0.05, 0.2, 0.2


def _apply_op(a: int, op: str, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    raise ValueError(f"unknown operator {op!r}; expected one of {', '.join(_OPS)}")


@tool
def calculate(a: int, b: int, op: str) -> int:
    """Apply the arithmetic operator ``op`` (+, - or *) to the integers a and b."""
    return _apply_op(a, op, b)


def simulated_tasks(n: int = 24, seed: int = 7) -> list[Task]:
    """The bundled SIMULATION tasks (generated, deterministic for a given ``n`` and ``seed``).

    Args:
        n: how many tasks.
        seed: the generator's seed.
    """
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        topic, vocab = _TOPICS[i % len(_TOPICS)]
        words = vocab.split()
        k = 1 + i % _MAX_READINGS
        ends = sorted(rng.sample(_READ_ENDS, k))
        names = [f"{topic}_{w}" for w in rng.sample(words, k)]
        text = ""
        expected: dict[str, JSON] = {}
        for name, end in zip(names, ends, strict=True):
            a, b, op = rng.randint(12, 99), rng.randint(2, 19), rng.choice(_OPS)
            u = rng.choice(COMPLEXITIES)
            sentence = f"Reading {name}: compute {a} {op} {b} (complexity {u})."
            while True:
                filler = f"The {topic} {rng.choice(words)} and {rng.choice(words)} stay as listed. "
                if len(text) + len(filler) + len(sentence) > end:
                    break
                text += filler
            # pad so that the reading's sentence ends exactly at its offset
            text += " " * (end - len(text) - len(sentence)) + sentence + " "
            expected[name] = _apply_op(a, op, b)
        while len(text) < ends[-1] + 300:
            text += f"The {topic} {rng.choice(words)} and {rng.choice(words)} stay as listed. "
        tasks.append(
            Task(
                id=f"sim-{i:02d}",
                input={"document": text.rstrip(), "question": "Report: " + ", ".join(names)},
                description=f"SIMULATION task: report the {topic} readings stated in the document",
                expected_output=expected,
                category="tool_use",
                difficulty=(Difficulty.easy, Difficulty.medium, Difficulty.hard)[k - 1],
                tools=[calculate.spec],
                metadata={"simulation": True},
            )
        )
    return tasks


def slip_probability(temperature: float) -> float:
    """The chance that a value (or the answer's text) slips at ``temperature``: 0 at 0.1."""
    return max(0.0, min(1.0, 0.5 * (temperature - 0.1) / 1.9))


@dataclass(frozen=True)
class _Reading:
    name: str
    a: int
    op: str
    b: int
    complexity: float


def _readings(visible: str) -> list[_Reading]:
    return [
        _Reading(m["name"], int(m["a"]), m["op"], int(m["b"]), float(m["u"]))
        for m in _READING.finditer(visible)
    ]


@dataclass
class _Budget:
    """The steps of one run: an action is taken only while it leaves one for the answer."""

    max_steps: int
    used: int = 0

    def take(self, cost: int) -> bool:
        """Spend ``cost`` steps when they are affordable; whether they were."""
        if self.used + cost > self.max_steps - 1:
            return False
        self.used += cost
        return True


@dataclass(frozen=True)
class _Slips:
    """The seeded draws of one run (fixed by seed and task: common random numbers)."""

    value_draws: list[float]
    errors: list[int]
    aside_draw: float
    q: float

    @classmethod
    def draw(cls, seed: int | None, task_id: str, temperature: float) -> _Slips:
        rng = random.Random(f"{seed or 0}:{task_id}")
        value_draws = [rng.random() for _ in range(8)]
        errors = [rng.randint(1, 9) for _ in range(8)]
        return cls(value_draws, errors, rng.random(), slip_probability(temperature))


def _read(
    document: str, context_length: int, budget: _Budget, recorder: Recorder
) -> list[_Reading]:
    """Behaviour 2: the readings stated within the first ``context_length`` characters."""
    if not budget.take(1):
        return []
    visible = document[:context_length]
    found = _readings(visible)
    names = ", ".join(r.name for r in found) or "none"
    summary = " ".join(visible.split()[:_SUMMARY_WORDS])
    recorder.llm(
        f"Read {len(visible)} characters of the document. Readings found: {names}. "
        f"Notes: {summary}",
        duration_s=len(visible) / _CHARS_PER_SECOND,
    )
    return found


def _use_tools(
    found: list[_Reading], threshold: float, budget: _Budget, recorder: Recorder
) -> dict[str, int]:
    """Behaviour 3: the exact values of the complex readings the budget affords a call for."""
    values: dict[str, int] = {}
    for reading in found:
        if reading.complexity < threshold or not budget.take(2):
            continue
        call_id = recorder.tool_call(
            calculate.name,
            {"a": reading.a, "b": reading.b, "op": reading.op},
            duration_s=_CALL_S,
        )
        values[reading.name] = _apply_op(reading.a, reading.op, reading.b)
        recorder.tool_result(call_id, values[reading.name], duration_s=_RESULT_S)
    return values


def _reason(found: list[_Reading], depth: int, budget: _Budget, recorder: Recorder) -> float:
    """Behaviour 4: up to ``depth`` reasoning steps; the skill they give."""
    steps_reasoned = 0
    for i in range(depth):
        if not budget.take(1):
            break
        subject = " and ".join(r.name.replace("_", " ") for r in found) or "the document"
        recorder.reasoning(
            f"{_CONNECTORS[i % len(_CONNECTORS)]}, compute reading {subject}.",
            duration_s=_REASON_S,
        )
        steps_reasoned += 1
    return 0.1 * steps_reasoned + 1e-9


def _answers(
    found: list[_Reading],
    values: dict[str, int],
    threshold: float,
    skill: float,
    slips: _Slips,
) -> dict[str, JSON]:
    """Behaviours 4 and 5: the tools' values, the mental ones, and the temperature's slips."""
    answers: dict[str, JSON] = {}
    errors, draws = slips.errors, slips.value_draws
    for j, reading in enumerate(found):
        if reading.name in values:
            value = values[reading.name]
        elif reading.complexity < threshold:
            value = _apply_op(reading.a, reading.op, reading.b)
            if reading.complexity > skill:
                value += errors[j % len(errors)]
        else:
            continue  # needed the tool, but the step budget ran out
        if draws[j % len(draws)] < slips.q:
            value += errors[(j + 3) % len(errors)]
        answers[reading.name] = value
    return answers


class SimulatedAgent:
    """The SIMULATED agent (see the module docstring for its exact behaviour)."""

    name = AGENT_NAME
    trace_metadata: Mapping[str, JSON] = {
        "simulation": True,
        "simulator": "agentgauge.agents.simulated",
        "note": "SIMULATION: synthetic agent, no model was called",
    }
    simulated_time = True
    """Its traces carry simulated step durations, not wall-clock times."""

    def run(self, task: Task, params: Mapping[str, JSON], recorder: Recorder) -> JSON:
        """Do ``task`` with ``params`` (the spec's five, applied) and record the steps.

        Args:
            task: a task from :func:`simulated_tasks` (or any task whose input has a
                ``document`` stating readings in the same format).
            params: context_length, temperature, max_steps, tool_usage_threshold,
                reasoning_depth.
            recorder: where the steps go; ``recorder.seed`` seeds the slips (0 when None).
        """
        context_length = int(_number(params, "context_length"))
        temperature = _number(params, "temperature")
        budget = _Budget(int(_number(params, "max_steps")))
        threshold = _number(params, "tool_usage_threshold")
        depth = int(_number(params, "reasoning_depth"))
        document = str(task.input.get("document", "")) if isinstance(task.input, dict) else ""
        slips = _Slips.draw(recorder.seed, task.id, temperature)

        found = _read(document, context_length, budget, recorder)
        values = _use_tools(found, threshold, budget, recorder)
        skill = _reason(found, depth, budget, recorder)
        answers = _answers(found, values, threshold, skill, slips)
        parts = [f"{name.replace('_', ' ')} is {value}" for name, value in answers.items()]
        text = ("The readings: " + "; ".join(parts) + ".") if parts else "No reading was found."
        if slips.aside_draw < slips.q:
            text += " However, the weather was lovely, although nobody asked."
        recorder.llm(text, duration_s=_ANSWER_S)
        return answers


def _number(params: Mapping[str, JSON], name: str) -> float:
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"SimulatedAgent needs a numeric parameter {name!r}, got {value!r}")
    return float(value)


def optimum_grid(tasks: list[Task]) -> Iterator[dict[str, Any]]:
    """Every distinct behaviour of the agent on ``tasks`` at temperature 0.1.

    context_length takes 100 and each reading's end offset (between them the agent finds the
    same readings and only reads more, which is slower), tool_usage_threshold takes 0, 1 and
    the midpoints between complexities (between them every decision is the same),
    reasoning_depth takes every integer and max_steps every integer up to
    :data:`LONGEST_RUN` (a run never has more steps, so a larger cap behaves the same).

    Args:
        tasks: the tasks (their documents give the offsets).
    """
    ends = {100}
    for task in tasks:
        document = task.input.get("document", "") if isinstance(task.input, dict) else ""
        for m in _READING.finditer(str(document)):
            ends.add(m.end())
    levels = sorted(COMPLEXITIES)
    thresholds = [0.0, *((a + b) / 2 for a, b in itertools.pairwise(levels)), 1.0]
    for context_length in sorted(ends):
        for max_steps in range(1, LONGEST_RUN + 1):
            for threshold in thresholds:
                for depth in range(1, 11):
                    yield {
                        "context_length": context_length,
                        "temperature": 0.1,
                        "max_steps": max_steps,
                        "tool_usage_threshold": threshold,
                        "reasoning_depth": depth,
                    }
