"""The tuning objective: run an agent with some parameters over tasks and seeded repeats, score
the traces with a suite, and take the *level* reached.

``objective = mean over (task, repeat) samples of the suite's composite`` (or of one metric's
value with ``metric=``), over the samples where it was measured. Every evaluation keeps the
applied parameters, the mean of every metric of the suite and the traces' ids, so a tuner's
history says what each setting did, not only its objective.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from agentgauge.agents.protocol import RunSpec, run_agents
from agentgauge.config import Suite
from agentgauge.engine import SampleScore, score_traces
from agentgauge.metrics.base import Metric
from agentgauge.model import JSON, Task, Trace
from agentgauge.tuning.space import ParameterError, ParameterSpace

__all__ = ["Evaluation", "Objective", "grid_optimum", "repeat_seeds"]


def repeat_seeds(seed: int, repeats: int) -> list[int]:
    """The seeds of ``repeats`` repeats for a run seeded ``seed`` (the same at every setting, so
    settings are compared on common random numbers)."""
    return [seed * 1000 + r for r in range(repeats)]


@dataclass
class Evaluation:
    """What one parameter setting did.

    Args:
        params: the parameters as applied (integers rounded).
        metric_means: metric -> mean value over the samples where it was measured (None when
            it never was).
        objective: the level being optimised; None when no sample measured it.
        n_samples: traces scored.
        n_agent_errors: runs where the agent raised.
        task_ids: the tasks run.
        samples: the per-trace scores (not stored in the history).
    """

    params: dict[str, JSON]
    metric_means: dict[str, float | None]
    objective: float | None
    n_samples: int
    n_agent_errors: int
    task_ids: list[str]
    samples: list[SampleScore] = field(default_factory=list, repr=False)


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


class Objective:
    """Evaluates parameter settings of one agent on fixed tasks with one suite.

    Args:
        agent: the agent (see :class:`agentgauge.agents.protocol.Agent`).
        tasks: every task; a tuner may evaluate a subset per episode.
        suite: the metrics and weights.
        space: the parameter space (validates and rounds the values).
        metric: optimise this metric's mean instead of the composite (``1 − mean`` for a
            lower-is-better metric, so that the tuners always maximise).
        jobs: concurrent runs of the agent.
        cache_scores: reuse the scores of a trace already seen (same task, steps and output);
            metrics are pure, so this only saves time on deterministic agents.
    """

    def __init__(
        self,
        agent: Any,
        tasks: Sequence[Task],
        suite: Suite,
        space: ParameterSpace,
        *,
        metric: str | None = None,
        jobs: int = 1,
        cache_scores: bool = False,
    ) -> None:
        if not tasks:
            raise ValueError("the objective needs at least one task")
        if metric is not None and metric not in suite.metrics:
            raise ValueError(
                f"objective metric {metric!r} is not in suite {suite.name!r} "
                f"({', '.join(suite.metrics)})"
            )
        if metric is None and not any(w > 0 for w in suite.weights.values()):
            raise ValueError(f"suite {suite.name!r} has no positive weight: choose a metric")
        self.agent = agent
        self.tasks = list(tasks)
        self.suite = suite
        self.space = space
        self.metric = metric
        self.jobs = jobs
        self._built: list[Metric] = suite.build_metrics()
        self._cache: dict[str, SampleScore] | None = {} if cache_scores else None

    @property
    def label(self) -> str:
        """What is optimised: ``composite(<suite>)`` or the metric's name."""
        if self.metric is None:
            return f"composite({self.suite.name})"
        return f"1 − {self.metric}" if self.metric in self.suite.lower_is_better else self.metric

    def _score(self, traces: Sequence[Trace]) -> list[SampleScore]:
        if self._cache is None:
            return score_traces(traces, self.suite, self._built)
        keys = [_content_key(t) for t in traces]
        todo = {k: t for k, t in zip(keys, traces, strict=True) if k not in self._cache}
        if todo:
            fresh = score_traces(list(todo.values()), self.suite, self._built)
            self._cache.update(zip(todo, fresh, strict=True))
        return [replace(self._cache[k], trace_id=t.id) for k, t in zip(keys, traces, strict=True)]

    def evaluate(
        self,
        values: Mapping[str, Any],
        *,
        seeds: Sequence[int] = (0,),
        task_indices: Sequence[int] | None = None,
    ) -> Evaluation:
        """Run the agent with ``values`` on the tasks × ``seeds`` and score the traces.

        Args:
            values: parameter values (unrounded; completed with defaults, then applied).
            seeds: one repeat per seed.
            task_indices: which tasks (all by default).

        Raises:
            ParameterError: for an unknown parameter or an invalid value.
        """
        if not seeds:
            raise ValueError("at least one seed is needed")
        params = self.space.apply(values)
        chosen = [self.tasks[i] for i in task_indices] if task_indices is not None else self.tasks
        runs = [RunSpec(task=t, seed=s, trace_id=f"{t.id}#s{s}") for t in chosen for s in seeds]
        traces = run_agents(self.agent, runs, params, jobs=self.jobs)
        samples = self._score(traces)
        means = {m: _mean(s.values.get(m) for s in samples) for m in self.suite.metrics}
        if self.metric is not None:
            level = means[self.metric]
            if level is not None and self.metric in self.suite.lower_is_better:
                level = 1.0 - level
        else:
            level = _mean(s.composite for s in samples)
        return Evaluation(
            params=params,
            metric_means=means,
            objective=level,
            n_samples=len(samples),
            n_agent_errors=sum(1 for t in traces if "error" in t.metadata),
            task_ids=[t.id for t in chosen],
            samples=samples,
        )


def _content_key(trace: Trace) -> str:
    body = {
        "task": trace.task.id,
        "output": trace.output,
        "steps": [s.model_dump(mode="json", exclude={"started_at"}) for s in trace.steps],
        "duration_s": trace.duration_s,
    }
    return json.dumps(body, sort_keys=True, default=str)


def grid_optimum(
    objective: Objective,
    grid: Iterable[Mapping[str, Any]],
    *,
    seeds: Sequence[int] = (0,),
    on_point: Callable[[], None] | None = None,
) -> tuple[dict[str, JSON], float, int]:
    """The best point of ``grid`` by level over all tasks (exhaustive search).

    Args:
        objective: what to evaluate (use ``cache_scores=True`` for deterministic agents).
        grid: the parameter settings to try.
        seeds: the repeats at each setting.
        on_point: called after each setting (progress).

    Returns:
        (best applied parameters, their objective, number of settings evaluated).

    Raises:
        ParameterError: when no setting could be measured.
    """
    best: tuple[dict[str, JSON], float] | None = None
    count = 0
    for values in grid:
        result = objective.evaluate(values, seeds=seeds)
        count += 1
        if result.objective is not None and (best is None or result.objective > best[1]):
            best = (result.params, result.objective)
        if on_point is not None:
            on_point()
    if best is None:
        raise ParameterError("no grid point could be measured")
    return best[0], best[1], count
