"""A parameter-impact session: one-at-a-time sweeps around a base point, each parameter's
effect on each metric, and which of the expected parameter effects hold for the agent
(records ``impact`` and ``impact_claims``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from agentgauge.config import Suite
from agentgauge.store import Store
from agentgauge.tuning.agent_run import AgentOptions, AgentSession, AgentSetup, progress_bar
from agentgauge.tuning.impact import ClaimCheck, Effect, analyse, check_claims, sweep
from agentgauge.tuning.objective import Objective

__all__ = ["ImpactOptions", "ImpactOutcome", "ImpactSession"]


@dataclass(frozen=True, kw_only=True)
class ImpactOptions(AgentOptions):
    """An impact session's options.

    Args:
        sweep: the parameters to sweep (default: every numeric one).
        points: values per parameter (>= 3).
    """

    sweep: list[str] | None = None
    points: int = 7
    repeats: int = 3


@dataclass(frozen=True)
class ImpactOutcome:
    """A finished impact run.

    Args:
        run_id: the run in the store.
        config: its configuration, as stored.
        effects: per swept parameter × metric, the slope over the range and Spearman's rho.
        claims: the expected parameter effects, each with its verdict.
        simulation: whether the agent is a simulation.
    """

    run_id: str
    config: dict[str, Any]
    effects: list[Effect]
    claims: list[ClaimCheck]
    simulation: bool

    def as_dict(self) -> dict[str, Any]:
        """The run as JSON data (``--json``)."""
        return {
            "run_id": self.run_id,
            "config": self.config,
            "effects": [e.as_dict() for e in self.effects],
            "claims": [c.as_dict() for c in self.claims],
        }

    def plot(self, path: Path) -> None:
        """Write the heat map of the effects (PNG).

        Args:
            path: the file to write.
        """
        from agentgauge.tuning.plots import plot_impact

        title = "Parameter impact on the SIMULATED agent" if self.simulation else None
        plot_impact(self.effects, path, title=title)


@dataclass(frozen=True)
class ImpactSession(AgentSession[ImpactOptions, ImpactOutcome]):
    """A prepared impact session (:meth:`prepare`); :meth:`run` runs it.

    Args:
        options: its options.
        setup: the agent and what it runs on.
        objective: what is measured of a setting.
        swept: the parameters swept, in this order.
    """

    swept: list[str]

    @classmethod
    def _build(cls, options: ImpactOptions, setup: AgentSetup, suite: Suite) -> Self:
        space = setup.space
        for name in options.sweep or []:
            space.spec(name)
        objective = Objective(setup.agent, setup.tasks, suite, space, jobs=options.jobs)
        swept = options.sweep or [p.name for p in space.params if p.type != "categorical"]
        return cls(options, setup, objective, swept)

    def run(self, store: Store) -> ImpactOutcome:
        """Sweep, analyse, check the expected effects and store the run.

        Args:
            store: where the run goes.
        """
        o = self.options
        with progress_bar("sweeping", len(self.swept) * o.points, o.progress) as advance:
            observations = sweep(
                self.objective,
                self.setup.base,
                params=self.swept,
                points=o.points,
                repeats=o.repeats,
                seed=o.seed,
                on_point=advance,
            )
        suite = self.objective.suite
        effects = analyse(observations, suite.metrics)
        claims = check_claims(effects)
        config = {
            "agent": o.agent,
            "tasks": o.tasks,
            "base": self.setup.space.apply(self.setup.base),
            "points": o.points,
            "repeats": o.repeats,
            "seed": o.seed,
            "simulation": self.setup.simulation,
        }
        run_id = store.create_run(kind="impact", suite=suite.name, config=config)
        for effect in effects:
            store.append_record(run_id, "impact", effect.as_dict())
        for claim in claims:
            store.append_record(run_id, "impact_claims", claim.as_dict())
        store.finish_run(run_id)
        return ImpactOutcome(run_id, config, effects, claims, self.setup.simulation)
