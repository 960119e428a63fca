"""Bayesian optimisation with Optuna's TPE sampler over the unit cube.

Each parameter is one float coordinate ``u_i`` in [0, 1] (integers are rounded only when the
setting is applied, categorical parameters take the bin of their coordinate), so TPE sees the
same continuous space as the other strategies. The start point is enqueued as the first trial.
An unmeasurable setting (objective None) is told to Optuna as a failed trial.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from agentgauge.tuning.agent_run import TuningError
from agentgauge.tuning.tuner import tuner

__all__ = ["BayesSearch", "bayes_search"]


class BayesSearch:
    """Optuna TPE (seeded), maximising the objective.

    Args:
        start: the first point (unit coordinates).
        names: the parameters' names (the Optuna distribution names).
        seed: seeds the sampler.
        n_startup_trials: random trials before TPE models the objective (Optuna's default 10;
            we use 8 so that TPE has most of a 40-episode budget).
        multivariate: model the coordinates jointly (Optuna's multivariate TPE).
    """

    name = "bayes"

    def __init__(
        self,
        start: NDArray[np.float64],
        names: Sequence[str],
        *,
        seed: int = 0,
        n_startup_trials: int = 8,
        multivariate: bool = True,
    ) -> None:
        try:
            import optuna
        except ImportError:
            raise TuningError(
                "the bayes strategy needs optuna, in the 'tune' extra: "
                "pip install 'agentgauge[tune]'"
            ) from None

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._names = list(names)
        if len(self._names) != len(start):
            raise ValueError(f"{len(start)} start coordinates for {len(self._names)} parameters")
        sampler = optuna.samplers.TPESampler(
            seed=seed,
            n_startup_trials=n_startup_trials,
            multivariate=multivariate,
        )
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self.study.enqueue_trial({n: float(u) for n, u in zip(self._names, start, strict=True)})
        self._open: optuna.trial.Trial | None = None

    def ask(self) -> NDArray[np.float64]:
        """The next point to evaluate."""
        trial = self.study.ask()
        self._open = trial
        return np.array([trial.suggest_float(n, 0.0, 1.0) for n in self._names])

    def tell(self, point: NDArray[np.float64], objective: float | None) -> None:
        """Report the level of the point of the last :meth:`ask`."""
        if self._open is None:
            raise RuntimeError("tell() without a pending ask()")
        trial, self._open = self._open, None
        if objective is None:
            self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, objective)


@tuner("bayes", description="Bayesian optimisation: Optuna's TPE sampler (the 'tune' extra)")
def bayes_search(start: NDArray[np.float64], names: Sequence[str], *, seed: int = 0) -> BayesSearch:
    """Bayesian optimisation: Optuna's TPE sampler (the 'tune' extra).

    Args:
        start: the first point (unit coordinates).
        names: the parameters' names.
        seed: seeds the sampler.
    """
    return BayesSearch(start, names, seed=seed)
