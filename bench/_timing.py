"""Timing shared by the benches."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def items_per_second(n: int, runs: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Items per second over the median of ``runs`` timed calls, and the last call's result.

    Args:
        n: items one call handles.
        runs: timed calls.
        fn: the work.
    """
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return n / statistics.median(times), out
