"""The tuning loop shared by every strategy, its history and its result.

A strategy is an ask/tell pair over the unit cube (:class:`Strategy`): ``ask()`` proposes a
point, ``tell(point, objective)`` reports its level. The loop runs ``episodes`` episodes; in
each, the proposed setting is evaluated on ``tasks_per_episode`` tasks drawn without
replacement (the same draws for every strategy with the same seed) × the run's repeat seeds.
Every strategy proposes its start point (the space's defaults unless told otherwise) first,
so every history starts from the same baseline. The best setting is the one with the highest
*level* (never the largest improvement).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from agentgauge.model import JSON
from agentgauge.registry import Registry, keyword_options
from agentgauge.tuning.objective import Evaluation, Objective, repeat_seeds

__all__ = [
    "TUNERS",
    "EpisodeRecord",
    "Strategy",
    "TunerFactory",
    "TunerInfo",
    "TuningResult",
    "run_tuning",
    "tuner",
]


class Strategy(Protocol):
    """A search strategy over the unit cube."""

    name: str

    def ask(self) -> NDArray[np.float64]: ...

    def tell(self, point: NDArray[np.float64], objective: float | None) -> None: ...


TunerFactory = Callable[..., Strategy]
"""``factory(start, names, *, seed, **options) -> Strategy``: ``start`` is the first point (unit
coordinates), ``names`` the parameters' names, ``seed`` seeds everything random; its other
keyword parameters are the tuner's options."""


@dataclass(frozen=True)
class TunerInfo:
    """What the registry knows about a tuner.

    Args:
        name: the tuner's name (``tune --strategy``).
        factory: makes the strategy.
        options: its keyword options (besides ``seed``) and their defaults.
    """

    name: str
    factory: TunerFactory
    options: dict[str, Any]


def tuner(name: str, *, description: str = "") -> Callable[[TunerFactory], TunerFactory]:
    """Register a tuner factory (see :class:`TunerFactory`) under ``name``.

    Args:
        name: the tuner's name.
        description: one line for ``agentgauge plugins`` (default: the factory's docstring's
            first line).
    """

    def info(factory: TunerFactory) -> TunerInfo:
        options = keyword_options(factory, skip=2)
        options.pop("seed", None)
        return TunerInfo(name, factory, options)

    return TUNERS.decorator(name, info, description=description)


TUNERS: Registry[TunerInfo] = Registry(
    "tuner",
    "agentgauge.tuners",
    builtins=("agentgauge.tuning.rl", "agentgauge.tuning.bayes", "agentgauge.tuning.random_search"),
    adopt=lambda name, obj: tuner(name)(obj),
)
"""Every tuner by name: ``rl``, ``bayes``, ``random`` and those of the ``agentgauge.tuners``
entry points."""


@dataclass
class EpisodeRecord:
    """One episode of a tuning run (one record of the store's ``tuning`` stream).

    Args:
        episode: 0-based episode number.
        strategy: the tuner's name.
        params: the parameters as applied (integers rounded).
        unit: the point in the unit cube (unrounded).
        metrics: metric -> mean over the episode's samples.
        objective: the episode's level (None when not measured).
        best_objective: the best level so far.
        tasks: the task ids of the episode.
        seeds: the repeat seeds.
        n_agent_errors: runs where the agent raised.
    """

    episode: int
    strategy: str
    params: dict[str, JSON]
    unit: list[float]
    metrics: dict[str, float | None]
    objective: float | None
    best_objective: float | None
    tasks: list[str]
    seeds: list[int]
    n_agent_errors: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TuningResult:
    """What a tuning run found.

    Args:
        strategy: the strategy's name.
        objective: what was optimised (``composite(suite)`` or a metric).
        history: one record per episode.
        best: the episode with the highest level.
        policy_params: for rl, the policy's final mean as applied parameters.
    """

    strategy: str
    objective: str
    history: list[EpisodeRecord]
    best: EpisodeRecord | None
    policy_params: dict[str, JSON] | None = None


def run_tuning(
    objective: Objective,
    strategy: Strategy,
    *,
    episodes: int,
    tasks_per_episode: int | None = None,
    repeats: int = 1,
    seed: int = 0,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
) -> TuningResult:
    """Run ``episodes`` episodes of ``strategy`` on ``objective``.

    Args:
        objective: the agent, tasks, suite and space.
        strategy: the tuner (already seeded).
        episodes: evaluations to make (each one parameter setting).
        tasks_per_episode: tasks per episode (all when None or larger than the task set).
        repeats: seeded repeats of each task per episode.
        seed: seeds the task draws and the repeats.
        on_episode: called with each episode's record as soon as it is done (store, progress).
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    n_tasks = len(objective.tasks)
    per_episode = n_tasks if tasks_per_episode is None else min(tasks_per_episode, n_tasks)
    if per_episode < 1:
        raise ValueError(f"tasks_per_episode must be >= 1, got {tasks_per_episode}")
    draws = np.random.default_rng([seed, 7919])
    seeds = repeat_seeds(seed, repeats)
    space = objective.space
    history: list[EpisodeRecord] = []
    best: EpisodeRecord | None = None
    for episode in range(episodes):
        point = strategy.ask()
        indices = sorted(draws.choice(n_tasks, size=per_episode, replace=False).tolist())
        result: Evaluation = objective.evaluate(
            space.from_unit(point), seeds=seeds, task_indices=indices
        )
        strategy.tell(point, result.objective)
        if result.objective is not None and (
            best is None or best.objective is None or result.objective > best.objective
        ):
            best_level: float | None = result.objective
        else:
            best_level = best.objective if best is not None else None
        record = EpisodeRecord(
            episode=episode,
            strategy=strategy.name,
            params=result.params,
            unit=[float(x) for x in point],
            metrics=result.metric_means,
            objective=result.objective,
            best_objective=best_level,
            tasks=result.task_ids,
            seeds=seeds,
            n_agent_errors=result.n_agent_errors,
        )
        history.append(record)
        if record.objective is not None and record.objective == best_level:
            best = record
        if on_episode is not None:
            on_episode(record)
    policy = getattr(strategy, "policy_mean", None)
    return TuningResult(
        strategy=strategy.name,
        objective=objective.label,
        history=history,
        best=best,
        policy_params=space.apply(space.from_unit(policy)) if policy is not None else None,
    )
