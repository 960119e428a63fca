"""``agentgauge compare`` on two large stored runs, by task and by trace id.

Scores two runs of ``--n`` traces (``--tasks`` tasks, the behaviour suite's accuracy and
efficiency) into a store, then times :func:`compare_runs` pairing by task and by id, and, on
the pairs by id, the p-value of one metric: agentgauge's sign-flip test beside
``scipy.stats.permutation_test(permutation_type="samples")``, the same test, with their
p-values side by side.

    python bench/bench_compare.py [--n 12000] [--tasks 200]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import permutation_test

from agentgauge.config import Suite
from agentgauge.documents.compare import compare_runs
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.model import Task, Trace
from agentgauge.stats import sign_flip_p_value
from agentgauge.store import Store


def _traces(n: int, tasks: int, miss: float, rng: random.Random) -> list[Trace]:
    out = []
    for i in range(n):
        expected = {"answer": i % 7, "unit": "x"}
        got = {"answer": i % 7 if rng.random() > miss else -1, "unit": "x"}
        task = Task(id=f"task{i % tasks}", expected_output=expected)
        out.append(Trace(id=f"t{i}", task=task, output=got))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=12_000)
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    suite = Suite(
        name="bench", metrics=["accuracy", "efficiency"], weights={"accuracy": 1, "efficiency": 1}
    )
    rng = random.Random(7)
    quiet = EvaluateOptions(jobs=1, progress=False)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        a = evaluate(_traces(args.n, args.tasks, 0.30, rng), suite, store=store, options=quiet)
        b = evaluate(_traces(args.n, args.tasks, 0.33, rng), suite, store=store, options=quiet)
        print(f"{'compare_runs':<28} {'pairs':>7} {'seconds':>8}")
        for by in ("task", "id"):
            start = time.perf_counter()
            result = compare_runs(store, a, b, by=by)  # type: ignore[arg-type]
            pairs = result["metrics"]["composite"]["n"]
            print(f"{'by ' + by:<28} {pairs:>7} {time.perf_counter() - start:>8.2f}")
        values_a, values_b = (
            np.array([v for c in store.iter_metric(r, "accuracy", ordered=True) for v in c])
            for r in (a, b)
        )
    print(f"\n{'p-value of accuracy by id':<28} {'p':>7} {'seconds':>8}")
    start = time.perf_counter()
    ours = sign_flip_p_value(values_b - values_a, n_resamples=5000, seed=0)
    print(f"{'agentgauge sign flips':<28} {ours:>7.4f} {time.perf_counter() - start:>8.2f}")
    start = time.perf_counter()
    theirs = permutation_test(
        (values_a, values_b),
        lambda u, v, axis: np.mean(v - u, axis=axis),
        permutation_type="samples",
        n_resamples=5000,
        vectorized=True,
        random_state=np.random.default_rng(0),
    ).pvalue
    print(f"{'scipy permutation_test':<28} {theirs:>7.4f} {time.perf_counter() - start:>8.2f}")


if __name__ == "__main__":
    main()
