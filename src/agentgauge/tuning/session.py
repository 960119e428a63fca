"""A tuning session: search an agent's parameters (with a registered tuner: rl, bayes, random
or a plugin's) for the level of a suite's score, keep every episode in the store, then
re-measure the best setting on every task with fresh seeds (records ``tuning`` and
``tuning_result``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

from agentgauge.config import Suite
from agentgauge.model import JSON
from agentgauge.store import Store
from agentgauge.tuning.agent_run import (
    AgentOptions,
    AgentSession,
    AgentSetup,
    TuningError,
    progress_bar,
)
from agentgauge.tuning.objective import Objective, repeat_seeds
from agentgauge.tuning.tuner import (
    TUNERS,
    EpisodeRecord,
    Strategy,
    TunerInfo,
    TuningResult,
    run_tuning,
)

__all__ = ["TuneOptions", "TuningOutcome", "TuningSession", "TuningSummary"]


@dataclass(frozen=True, kw_only=True)
class TuneOptions(AgentOptions):
    """A tuning session's options.

    Args:
        strategy: a registered tuner: ``rl``, ``bayes``, ``random`` or a plugin's.
        episodes: settings to evaluate.
        tasks_per_episode: tasks per episode (all when None).
        learning_rate: the step size of the tuners that take one (rl: 0.001-0.1).
        objective: optimise this metric instead of the suite's composite.
    """

    strategy: str = "rl"
    episodes: int = 40
    tasks_per_episode: int | None = None
    learning_rate: float = 0.1
    objective: str | None = None


def _tuner(options: TuneOptions) -> tuple[TunerInfo, dict[str, Any]]:
    """The tuner ``options.strategy`` names and the options it takes (the tuners that take a
    learning rate get ``options.learning_rate``)."""
    tuner = TUNERS.find(options.strategy)
    if tuner is None:
        known = ", ".join(TUNERS)
        raise TuningError(f"--strategy: {options.strategy!r} is not one of {known}")
    given = {"learning_rate": options.learning_rate}
    return tuner, {k: v for k, v in given.items() if k in tuner.options}


@dataclass(frozen=True)
class TuningSummary:
    """The result of a tuning run (its ``tuning_result`` record).

    Args:
        strategy: the strategy.
        objective: what was optimised.
        best_episode: the episode with the highest level.
        best_params: its setting.
        best_objective_in_tuning: its level on the episode's tasks.
        best_objective_all_tasks: its level re-measured on every task with fresh seeds (no
            selection bias).
        best_metrics_all_tasks: the metric means of that re-measure.
        policy_params: for rl, the policy's final mean as applied parameters.
        episodes: the episodes run.
    """

    strategy: str
    objective: str
    best_episode: int
    best_params: dict[str, JSON]
    best_objective_in_tuning: float | None
    best_objective_all_tasks: float | None
    best_metrics_all_tasks: dict[str, float | None]
    policy_params: dict[str, JSON] | None
    episodes: int


@dataclass(frozen=True)
class TuningOutcome:
    """A finished tuning run.

    Args:
        run_id: the run in the store.
        config: its configuration, as stored.
        summary: what it found.
        result: every episode and the best one.
        simulation: whether the agent is a simulation.
    """

    run_id: str
    config: dict[str, Any]
    summary: TuningSummary
    result: TuningResult
    simulation: bool

    def as_dict(self) -> dict[str, Any]:
        """The run as JSON data (``--json``)."""
        return {
            "run_id": self.run_id,
            "config": self.config,
            "result": asdict(self.summary),
            "history": [r.as_dict() for r in self.result.history],
        }

    def plot(self, path: Path) -> None:
        """Write the convergence plot (PNG).

        Args:
            path: the file to write.
        """
        from agentgauge.tuning.plots import plot_convergence

        title = None
        if self.simulation:
            title = f"Tuning convergence ({self.summary.strategy}) on the SIMULATED agent"
        plot_convergence([self.result], path, title=title)


@dataclass(frozen=True)
class TuningSession(AgentSession[TuneOptions, TuningOutcome]):
    """A prepared tuning session (:meth:`prepare`); :meth:`run` runs it.

    Args:
        options: its options.
        setup: the agent and what it runs on.
        objective: what is measured of a setting.
        strategy: the search strategy, at its start point.
        tuner_options: the options the tuner was given.
    """

    strategy: Strategy
    tuner_options: dict[str, Any]

    @classmethod
    def _check(cls, options: TuneOptions) -> None:
        _tuner(options)

    @classmethod
    def _build(cls, options: TuneOptions, setup: AgentSetup, suite: Suite) -> Self:
        tuner, tuner_options = _tuner(options)
        space = setup.space
        objective = Objective(
            setup.agent, setup.tasks, suite, space, metric=options.objective, jobs=options.jobs
        )
        strategy = tuner.factory(
            space.to_unit(setup.base), space.names, seed=options.seed, **tuner_options
        )
        return cls(options, setup, objective, strategy, tuner_options)

    def config(self) -> dict[str, Any]:
        """The run's configuration, as stored with it."""
        o = self.options
        return {
            "agent": o.agent,
            "tasks": o.tasks,
            "strategy": o.strategy,
            "episodes": o.episodes,
            "tasks_per_episode": o.tasks_per_episode,
            "repeats": o.repeats,
            "learning_rate": self.tuner_options.get("learning_rate"),
            "seed": o.seed,
            "objective": self.objective.label,
            "space": self.setup.space.model_dump(mode="json"),
            "simulation": self.setup.simulation,
        }

    def run(self, store: Store) -> TuningOutcome:
        """Tune, keeping each episode in the store as it ends, then re-measure the best
        setting on every task with fresh seeds.

        An interrupted session keeps its episodes (the run is marked ``interrupted``).

        Args:
            store: where the run goes.

        Raises:
            TuningError: no episode could be measured (the run is marked ``failed``).
        """
        o = self.options
        config = self.config()
        run_id = store.create_run(kind="tune", suite=self.objective.suite.name, config=config)
        with progress_bar(f"tuning ({o.strategy})", o.episodes, o.progress) as advance:

            def on_episode(record: EpisodeRecord) -> None:
                store.append_record(run_id, "tuning", record.as_dict())
                advance()

            try:
                result = run_tuning(
                    self.objective,
                    self.strategy,
                    episodes=o.episodes,
                    tasks_per_episode=o.tasks_per_episode,
                    repeats=o.repeats,
                    seed=o.seed,
                    on_episode=on_episode,
                )
            except BaseException:
                # the episodes done so far are already in the store
                store.finish_run(run_id, status="interrupted")
                raise
        if result.best is None:
            store.finish_run(run_id, status="failed")
            raise TuningError("no episode could be measured (every objective was None)")
        final = self.objective.evaluate(
            result.best.params, seeds=repeat_seeds(o.seed + 1, o.repeats)
        )
        summary = TuningSummary(
            strategy=o.strategy,
            objective=self.objective.label,
            best_episode=result.best.episode,
            best_params=result.best.params,
            best_objective_in_tuning=result.best.objective,
            best_objective_all_tasks=final.objective,
            best_metrics_all_tasks=final.metric_means,
            policy_params=result.policy_params,
            episodes=o.episodes,
        )
        store.append_record(run_id, "tuning_result", asdict(summary))
        store.finish_run(run_id)
        return TuningOutcome(run_id, config, summary, result, self.setup.simulation)
