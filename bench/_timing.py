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


def alternating_rates(
    n: int, runs: int, ours: Callable[[], Any], theirs: Callable[[], Any]
) -> tuple[tuple[float, Any], tuple[float, Any]]:
    """Items per second of two sides timed in alternation (each first in turn, so that a change
    in the machine's load hits both alike), over the median of ``runs`` calls each, with each
    side's last result.

    Args:
        n: items one call of either side handles.
        runs: timed calls of each side.
        ours: one side's work.
        theirs: the other side's work, on the same items.
    """
    sides = (ours, theirs)
    times: tuple[list[float], list[float]] = ([], [])
    out: list[Any] = [None, None]
    for k in range(runs):
        for i in (0, 1) if k % 2 == 0 else (1, 0):
            start = time.perf_counter()
            out[i] = sides[i]()
            times[i].append(time.perf_counter() - start)
    return (n / statistics.median(times[0]), out[0]), (n / statistics.median(times[1]), out[1])
