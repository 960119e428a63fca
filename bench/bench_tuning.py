"""Tuners on the SIMULATED agent: rl (REINFORCE) and bayes (Optuna TPE) against random search.

1. The known optimum of the ``behavior`` composite on the simulated agent: an exhaustive search
   of :func:`agentgauge.agents.simulated.optimum_grid` (every distinct behaviour at temperature
   0.1, the optimal temperature; see the simulator's docstring for why the grid is exact).
2. Each strategy × 5 seeds × 40 episodes (tasks_per_episode = all 24 tasks, and 8), repeats 1;
   the best setting by level is re-measured on every task with 3 fresh seeds and compared with
   the optimum.

Run: ``PYTHONPATH=src python bench/bench_tuning.py [--quick]`` (``--quick``: 2 seeds, no K=8).
Prints markdown tables (pasted into docs/tuning.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from agentgauge.agents.simulated import SimulatedAgent, optimum_grid, simulated_tasks
from agentgauge.config import load_suite
from agentgauge.tuning.bayes import BayesSearch
from agentgauge.tuning.objective import Objective, grid_optimum, repeat_seeds
from agentgauge.tuning.random_search import RandomSearch
from agentgauge.tuning.rl import Reinforce
from agentgauge.tuning.space import ParameterSpace
from agentgauge.tuning.tuner import run_tuning

EPISODES = 40
LEARNING_RATE = 0.1


def _strategies(space: ParameterSpace) -> dict[str, Callable[[int], Any]]:
    start = space.to_unit(space.defaults())
    return {
        "rl": lambda seed: Reinforce(start, learning_rate=LEARNING_RATE, seed=seed),
        "bayes": lambda seed: BayesSearch(start, space.names, seed=seed),
        "random": lambda seed: RandomSearch(start, seed=seed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 seeds, all tasks per episode")
    args = parser.parse_args()
    seeds = range(2) if args.quick else range(5)
    per_episode = [24] if args.quick else [24, 8]

    suite = load_suite("behavior")
    tasks = simulated_tasks()
    space = ParameterSpace()
    objective = Objective(SimulatedAgent(), tasks, suite, space, cache_scores=True)

    t0 = time.perf_counter()
    grid = list(optimum_grid(tasks))
    best_params, optimum, count = grid_optimum(objective, grid)
    grid_s = time.perf_counter() - t0
    default = objective.evaluate(space.defaults()).objective
    hotter = objective.evaluate({**best_params, "temperature": 0.5}, seeds=[0, 1, 2]).objective
    print("## Known optimum (SIMULATED agent, behavior composite)\n")
    print(f"- grid: {count} settings, {len(tasks)} tasks, {grid_s:.0f} s")
    print(f"- optimum composite: {optimum:.4f} at {best_params}")
    print(f"- same point at temperature 0.5 (3 seeds): {hotter:.4f}")
    print(f"- defaults {space.defaults()}: {default:.4f}\n")

    print(
        f"## Tuners, {EPISODES} episodes, {len(seeds)} seeds "
        "(best by level re-measured on all tasks × 3 fresh seeds)\n"
    )
    print(
        "| strategy | tasks/episode | mean % of optimum | min % | "
        "seeds ≥ 95% | first episode ≥ 95% (median) | s/run |"
    )
    print("|---|---|---|---|---|---|---|")
    for k in per_episode:
        for name, make in _strategies(space).items():
            ratios, firsts, seconds = [], [], []
            for seed in seeds:
                t1 = time.perf_counter()
                result = run_tuning(
                    objective,
                    make(seed),
                    episodes=EPISODES,
                    tasks_per_episode=k,
                    repeats=1,
                    seed=seed,
                )
                seconds.append(time.perf_counter() - t1)
                assert result.best is not None
                level = objective.evaluate(
                    result.best.params, seeds=repeat_seeds(seed + 100, 3)
                ).objective
                assert level is not None
                ratios.append(level / optimum)
                reached = [
                    r.episode
                    for r in result.history
                    if r.best_objective is not None and r.best_objective >= 0.95 * optimum
                ]
                firsts.append(reached[0] if reached else np.inf)
            first = np.median(firsts)
            print(
                f"| {name} | {k} | {100 * np.mean(ratios):.1f} | {100 * min(ratios):.1f} | "
                f"{sum(r >= 0.95 for r in ratios)}/{len(ratios)} | "
                f"{int(first) if np.isfinite(first) else 'never'} | "
                f"{np.mean(seconds):.1f} |"
            )
    print("\n'first episode ≥ 95%' uses the in-tuning level of the best so far.")


if __name__ == "__main__":
    main()
