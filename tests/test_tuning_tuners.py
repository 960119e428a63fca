"""Objective and tuners: the objective is the mean composite; rl and bayes beat random on the
SIMULATED agent at equal budget; seeding, history and best-by-level."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentgauge.agents.protocol import Recorder
from agentgauge.agents.simulated import SimulatedAgent, simulated_tasks
from agentgauge.config import Suite, load_suite
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.model import JSON, Task, Trace
from agentgauge.scoring import composite
from agentgauge.tuning.bayes import BayesSearch
from agentgauge.tuning.objective import Objective, grid_optimum, repeat_seeds
from agentgauge.tuning.random_search import RandomSearch
from agentgauge.tuning.rl import Reinforce
from agentgauge.tuning.space import ParameterSpace, ParamSpec
from agentgauge.tuning.tuner import run_tuning


@metric("tuning_test_closeness")
def tuning_test_closeness(trace: Trace, *, target: float = 0.3) -> MetricResult:
    """1 − |x − target| for the output x of the test agent (a known optimum at x = target)."""
    x = trace.output
    if not isinstance(x, float):
        return MetricResult.missing("no numeric output")
    return MetricResult(value=max(0.0, 1.0 - abs(x - target)))


@metric("tuning_test_distance", higher_is_better=False)
def tuning_test_distance(trace: Trace) -> MetricResult:
    """|x − 0.3| for the output x of the test agent: lower is better."""
    assert isinstance(trace.output, float)
    return MetricResult(value=abs(trace.output - 0.3))


class EchoAgent:
    """Outputs its parameter x (plus nothing else): the objective is 1 − |x − 0.3|."""

    name = "echo"

    def run(self, task: Task, params: dict[str, JSON], recorder: Recorder) -> float:
        recorder.reasoning("echo")
        x = params["x"]
        assert isinstance(x, float)
        return x


def _echo_objective() -> Objective:
    suite = Suite(
        name="closeness",
        metrics=["tuning_test_closeness"],
        weights={"tuning_test_closeness": 1.0},
    )
    space = ParameterSpace(params=[ParamSpec(name="x", low=0.0, high=1.0, default=0.9)])
    return Objective(EchoAgent(), [Task(id="only")], suite, space)


def test_objective_is_the_mean_composite_over_tasks_and_repeats() -> None:
    suite = load_suite("behavior")
    tasks = simulated_tasks()[:6]
    objective = Objective(SimulatedAgent(), tasks, suite, ParameterSpace())
    params = {"temperature": 1.2, "context_length": 2500}
    result = objective.evaluate(params, seeds=[0, 1])
    assert result.n_samples == 12 and result.task_ids == [t.id for t in tasks]
    by_hand = [composite(s.values, suite.weights).value for s in result.samples]
    assert result.objective == pytest.approx(float(np.mean(by_hand)))
    accuracy = [s.values["accuracy"] for s in result.samples]
    assert result.metric_means["accuracy"] == pytest.approx(float(np.mean(accuracy)))
    assert result.params["context_length"] == 2500 and result.params["max_steps"] == 10
    on_metric = Objective(SimulatedAgent(), tasks, suite, ParameterSpace(), metric="accuracy")
    assert on_metric.evaluate(params, seeds=[0, 1]).objective == pytest.approx(
        result.metric_means["accuracy"]
    )
    with pytest.raises(ValueError, match="'nope' is not in suite 'behavior'"):
        Objective(SimulatedAgent(), tasks, suite, ParameterSpace(), metric="nope")


def test_grid_optimum_is_the_best_point_by_level() -> None:
    objective = _echo_objective()  # level 1 − |x − 0.3|
    grid = [{"x": x} for x in (0.0, 0.2, 0.35, 0.9)]
    calls: list[int] = []
    params, level, count = grid_optimum(objective, grid, on_point=lambda: calls.append(1))
    assert params == {"x": 0.35} and level == pytest.approx(0.95)
    assert count == 4 and len(calls) == 4


def test_score_cache_gives_the_same_result() -> None:
    suite = load_suite("behavior")
    tasks = simulated_tasks()[:6]
    plain = Objective(SimulatedAgent(), tasks, suite, ParameterSpace())
    cached = Objective(SimulatedAgent(), tasks, suite, ParameterSpace(), cache_scores=True)
    for params in ({}, {"temperature": 1.5}, {}):
        a = plain.evaluate(params, seeds=[3])
        b = cached.evaluate(params, seeds=[3])
        assert a.objective == b.objective and a.metric_means == b.metric_means
        assert [s.trace_id for s in a.samples] == [s.trace_id for s in b.samples]


def test_a_lower_is_better_objective_is_maximised_as_its_complement() -> None:
    suite = Suite(name="distance", metrics=["tuning_test_distance"])
    space = ParameterSpace(params=[ParamSpec(name="x", low=0.0, high=1.0, default=0.9)])
    objective = Objective(
        EchoAgent(), [Task(id="only")], suite, space, metric="tuning_test_distance"
    )
    assert objective.label == "1 − tuning_test_distance"
    result = objective.evaluate({"x": 0.8})
    assert result.metric_means["tuning_test_distance"] == pytest.approx(0.5)
    assert result.objective == pytest.approx(0.5)
    assert objective.evaluate({"x": 0.4}).objective == pytest.approx(0.9)
    start = space.to_unit(space.defaults())
    best = run_tuning(objective, RandomSearch(start, seed=0), episodes=20, seed=0).best
    assert best is not None and abs(float(best.params["x"]) - 0.3) < 0.15


@pytest.mark.parametrize("strategy", ["rl", "bayes", "random"])
def test_each_strategy_on_a_known_one_dimensional_optimum(strategy: str) -> None:
    objective = _echo_objective()
    start = objective.space.to_unit(objective.space.defaults())
    tuner: Any = {
        "rl": Reinforce(start, learning_rate=0.1, seed=1),
        "bayes": BayesSearch(start, ["x"], seed=1),
        "random": RandomSearch(start, seed=1),
    }[strategy]
    result = run_tuning(objective, tuner, episodes=30, seed=1)
    first = result.history[0]
    assert first.params == {"x": 0.9} and first.objective == pytest.approx(0.4)
    assert result.best is not None and result.best.objective is not None
    assert result.best.objective == max(r.objective for r in result.history if r.objective)
    assert result.best.objective > 0.9
    bests = [r.best_objective for r in result.history]
    assert bests == sorted(bests)  # the best level so far never decreases
    if strategy == "rl":
        assert result.policy_params is not None
        assert abs(float(result.policy_params["x"]) - 0.3) < 0.15  # type: ignore[arg-type]


def test_learning_rate_range_is_enforced() -> None:
    with pytest.raises(ValueError, match=r"learning_rate 0.5 is outside \[0.001, 0.1\]"):
        Reinforce(np.zeros(2), learning_rate=0.5)


def test_seeded_runs_repeat_exactly() -> None:
    objective = _echo_objective()
    start = objective.space.to_unit(objective.space.defaults())
    for make in (
        lambda: Reinforce(start, seed=4),
        lambda: BayesSearch(start, ["x"], seed=4),
        lambda: RandomSearch(start, seed=4),
    ):
        a = run_tuning(objective, make(), episodes=12, seed=4)
        b = run_tuning(objective, make(), episodes=12, seed=4)
        assert [r.unit for r in a.history] == [r.unit for r in b.history]


def test_rl_and_bayes_beat_random_on_the_simulated_agent() -> None:
    """The acceptance claim at test scale: 3 seeds × 30 episodes on 12 tasks; the best setting
    of each run is re-measured on the same 12 tasks with fresh seeds. (Over seed triples 0-2,
    3-5 and 6-8 the margins over random were 0.04-0.14.)"""
    suite = load_suite("behavior")
    space = ParameterSpace()
    objective = Objective(SimulatedAgent(), simulated_tasks()[:12], suite, space, cache_scores=True)
    start = space.to_unit(space.defaults())
    levels: dict[str, list[float]] = {"rl": [], "bayes": [], "random": []}
    for seed in (0, 1, 2):
        tuners: dict[str, Any] = {
            "rl": Reinforce(start, learning_rate=0.1, seed=seed),
            "bayes": BayesSearch(start, space.names, seed=seed),
            "random": RandomSearch(start, seed=seed),
        }
        for name, tuner in tuners.items():
            result = run_tuning(objective, tuner, episodes=30, seed=seed)
            assert result.best is not None
            level = objective.evaluate(result.best.params, seeds=repeat_seeds(seed + 50, 2))
            assert level.objective is not None
            levels[name].append(level.objective)
    default = objective.evaluate(space.defaults()).objective
    assert default is not None
    rl, bayes, rand = (float(np.mean(levels[k])) for k in ("rl", "bayes", "random"))
    assert rl > rand and bayes > rand, levels
    assert min(rl, bayes) > default + 0.2, (levels, default)
