"""REINFORCE over the unit cube with a Gaussian policy and a running baseline.

Policy: ``x ~ N(μ, diag(σ²))`` in the unit cube; the agent is run at ``clip(x, 0, 1)``. μ starts
at the start point (the space's defaults), σ at ``init_std`` in every coordinate. The first
episode evaluates μ itself (the baseline measurement); every later episode samples one ``x``.

Reward: the episode's objective level ``R``. Baseline ``b``: exponential moving average of the
rewards (``b ← b + (1 − decay)·(R − b)``, started at the first reward); advantage
``A = (R − b) / s`` with ``s`` the moving root-mean-square of ``R − b`` (so that
``learning_rate`` does not depend on the scale of the objective).

Gradient of the log-likelihood (ε = (x − μ)/σ): ``∂/∂μ = ε/σ``, ``∂/∂log σ = ε² − 1``; the
ascent step ``A·∇`` is applied with Adam (β₁ 0.9, β₂ 0.999) at ``learning_rate``, which makes
one step move each coordinate by about ``learning_rate`` at most; log σ stays within
``[log min_std, log max_std]`` and μ within [0, 1]. An unmeasured episode (objective None)
teaches nothing.

The spec's ``learning_rate`` range 0.001–0.1 is enforced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from agentgauge.tuning.tuner import tuner

__all__ = ["LEARNING_RATE_RANGE", "Reinforce", "reinforce"]

LEARNING_RATE_RANGE = (0.001, 0.1)
_LEARNING_RATE = 0.05


class _Adam:
    """Adam ascent on one parameter vector (Kingma & Ba 2015, bias-corrected)."""

    def __init__(self, size: int, lr: float, beta1: float = 0.9, beta2: float = 0.999) -> None:
        self.lr, self.beta1, self.beta2 = lr, beta1, beta2
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0

    def step(self, grad: NDArray[np.float64]) -> NDArray[np.float64]:
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad**2
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        update: NDArray[np.float64] = self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        return update


class Reinforce:
    """The REINFORCE tuner.

    Args:
        start: the policy's initial mean (unit coordinates).
        learning_rate: Adam step size, in the spec's range 0.001–0.1.
        seed: seeds the policy's samples.
        init_std: initial σ of every coordinate.
        min_std: floor of σ.
        max_std: ceiling of σ.
        baseline_decay: decay of the running baseline.
    """

    name = "rl"

    def __init__(
        self,
        start: NDArray[np.float64],
        *,
        learning_rate: float = _LEARNING_RATE,
        seed: int = 0,
        init_std: float = 0.2,
        min_std: float = 0.02,
        max_std: float = 0.5,
        baseline_decay: float = 0.8,
    ) -> None:
        low, high = LEARNING_RATE_RANGE
        if not low <= learning_rate <= high:
            raise ValueError(f"learning_rate {learning_rate} is outside [{low}, {high}]")
        if not 0 < min_std <= init_std <= max_std:
            raise ValueError("need 0 < min_std <= init_std <= max_std")
        if not 0 <= baseline_decay < 1:
            raise ValueError("baseline_decay must be in [0, 1)")
        self.mean = np.clip(np.asarray(start, dtype=np.float64), 0.0, 1.0)
        dim = len(self.mean)
        self.log_std = np.full(dim, math.log(init_std))
        self._log_std_bounds = (math.log(min_std), math.log(max_std))
        self._rng = np.random.default_rng([seed, 2])
        self._adam = _Adam(2 * dim, learning_rate)
        self._decay = baseline_decay
        self.baseline: float | None = None
        self._sq_adv: float | None = None
        self._pending: NDArray[np.float64] | None = None
        self._first = True

    @property
    def policy_mean(self) -> NDArray[np.float64]:
        """The policy's current mean (the parameters it has learned)."""
        return self.mean.copy()

    def ask(self) -> NDArray[np.float64]:
        """The next point: μ at the first episode, then a sample of the policy."""
        if self._first:
            self._pending = self.mean.copy()
            return self._pending.copy()
        sample = self.mean + np.exp(self.log_std) * self._rng.standard_normal(len(self.mean))
        self._pending = sample
        clipped: NDArray[np.float64] = np.clip(sample, 0.0, 1.0)
        return clipped

    def tell(self, point: NDArray[np.float64], objective: float | None) -> None:
        """Update the policy with the reward of the last sample."""
        sample, self._pending = self._pending, None
        if sample is None:
            raise RuntimeError("tell() without a pending ask()")
        first, self._first = self._first, False
        if objective is None:
            return
        if self.baseline is None:
            self.baseline = objective
            return
        advantage = objective - self.baseline
        self._sq_adv = (
            advantage**2
            if self._sq_adv is None
            else self._decay * self._sq_adv + (1 - self._decay) * advantage**2
        )
        self.baseline += (1 - self._decay) * advantage
        if first or self._sq_adv <= 0:
            return
        scaled = advantage / math.sqrt(self._sq_adv)
        std = np.exp(self.log_std)
        eps = (sample - self.mean) / std
        grad = np.concatenate([scaled * eps / std, scaled * (eps**2 - 1)])
        step = self._adam.step(grad)
        dim = len(self.mean)
        self.mean = np.clip(self.mean + step[:dim], 0.0, 1.0)
        self.log_std = np.clip(self.log_std + step[dim:], *self._log_std_bounds)


@tuner("rl", description="REINFORCE: a Gaussian policy learns from each episode's level")
def reinforce(
    start: NDArray[np.float64],
    names: Sequence[str],
    *,
    seed: int = 0,
    learning_rate: float = _LEARNING_RATE,
) -> Reinforce:
    """REINFORCE: a Gaussian policy that learns from each episode's level.

    Args:
        start: the policy's initial mean (unit coordinates).
        names: the parameters' names (unused: the policy is over coordinates).
        seed: seeds the policy's samples.
        learning_rate: Adam step size, within LEARNING_RATE_RANGE (0.001–0.1).
    """
    return Reinforce(start, learning_rate=learning_rate, seed=seed)
