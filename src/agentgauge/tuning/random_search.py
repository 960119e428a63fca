"""Random search, the control: uniform points of the unit cube (after the start point)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from agentgauge.tuning.tuner import tuner

__all__ = ["RandomSearch", "random_search"]


class RandomSearch:
    """Proposes the start point, then independent uniform points of ``[0, 1]^dim``.

    Args:
        start: the first point (the space's defaults in unit coordinates).
        seed: seeds the draws.
    """

    name = "random"

    def __init__(self, start: NDArray[np.float64], *, seed: int = 0) -> None:
        self._start: NDArray[np.float64] | None = np.asarray(start, dtype=np.float64)
        self._dim = len(start)
        self._rng = np.random.default_rng([seed, 1])

    def ask(self) -> NDArray[np.float64]:
        """The next point to evaluate."""
        if self._start is not None:
            point, self._start = self._start, None
            return point
        return self._rng.uniform(0.0, 1.0, size=self._dim)

    def tell(self, point: NDArray[np.float64], objective: float | None) -> None:
        """Random search learns nothing."""


@tuner("random", description="random search, the control: uniform points after the start")
def random_search(
    start: NDArray[np.float64], names: Sequence[str], *, seed: int = 0
) -> RandomSearch:
    """Random search, the control: uniform points after the start point.

    Args:
        start: the first point (unit coordinates).
        names: the parameters' names (unused).
        seed: seeds the draws.
    """
    return RandomSearch(start, seed=seed)
