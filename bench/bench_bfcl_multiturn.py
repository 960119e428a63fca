"""Throughput of BFCL multi-turn checking: ours beside BFCL's own ``multi_turn_checker``.

Usage: PYTHONPATH=src:.bench-deps python bench/bench_bfcl_multiturn.py [--runs 3]

Reads the four multi-turn categories (``base``, ``miss_func``, ``miss_param``,
``long_context``: 800 questions) and checks two answers per question: the ground truth, and a
seeded perturbation of it (a call dropped, an argument changed, a call added, two turns
swapped). Prints samples/s (median of ``--runs``) for our checker, for ``value_accuracy`` mode
``bfcl`` on the answers' traces, and for BFCL's ``multi_turn_checker`` (bfcl-eval 2026.3.23, which
evaluates the calls) on the same answers in the same run, with how many verdicts agree. BFCL
keeps the instances of a model name for the whole process, so each of its checks gets a new one.
Both need bfcl-eval installed without its dependencies (``make bench`` puts it in
``.bench-deps``).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import random
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from _timing import items_per_second
from agentgauge.metrics.toolcall import ValueAccuracy
from agentgauge.model import Task
from agentgauge.toolcall.bfcl_multiturn import (
    MultiTurnQuestion,
    SimulatorError,
    check_multi_turn,
    require_simulators,
)
from agentgauge.toolcall.datasets import prediction_to_trace
from agentgauge.toolcall.formats.bfcl import read_bfcl

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bfcl"
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
Answer = list[list[list[str]]]


def _changed_call(call: str, rng: random.Random) -> str:
    """The call with one argument changed (a string suffixed, a number incremented...)."""
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    keys: list[int | str] = [*range(len(args)), *kwargs]
    if not keys:
        return call
    key = rng.choice(keys)
    value = args[key] if isinstance(key, int) else kwargs[key]
    if isinstance(value, bool):
        value = not value
    elif isinstance(value, int | float):
        value += 1
    elif isinstance(value, str):
        value += "_x"
    else:
        value = "x"
    if isinstance(key, int):
        args[key] = value
    else:
        kwargs[key] = value
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{node.func.id}({', '.join(parts)})"


def _perturbed(truth: list[list[str]], rng: random.Random) -> list[list[str]]:
    turns = copy.deepcopy(truth)
    busy = [t for t, turn in enumerate(turns) if turn]
    t = rng.choice(busy)
    j = rng.randrange(len(turns[t]))
    kind = rng.randrange(4)
    if kind == 0:
        del turns[t][j]
    elif kind == 1:
        turns[t][j] = _changed_call(turns[t][j], rng)
    elif kind == 2:
        turns[rng.randrange(len(turns))].append(turns[t][j])
    elif len(turns) > 1:
        s = rng.randrange(len(turns) - 1)
        turns[s], turns[s + 1] = turns[s + 1], turns[s]
    return turns


def _as_answer(turns: list[list[str]]) -> Answer:
    return [[turn] if turn else [] for turn in turns]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs (median reported)")
    args = parser.parse_args()
    try:
        require_simulators()
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    except (SimulatorError, ImportError) as exc:
        raise SystemExit(str(exc)) from None

    rng = random.Random(0)
    samples: list[tuple[str, Task, dict[str, Any], Answer]] = []
    for category in CATEGORIES:
        name = f"BFCL_v4_multi_turn_{category}.json"
        raw = {q["id"]: q for q in map(json.loads, (DATA / name).read_text().splitlines()) if q}
        for task in read_bfcl(DATA / name, DATA / "possible_answer" / name):
            if not isinstance(task, Task):
                raise SystemExit(f"{name}: {task}")
            truth = [list(turn) for turn in MultiTurnQuestion.from_task(task).ground_truth]
            samples.append(("ground truth", task, raw[task.id], _as_answer(truth)))
            samples.append(("perturbed", task, raw[task.id], _as_answer(_perturbed(truth, rng))))

    def ours() -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for _, task, _, answer in samples:
            v = check_multi_turn(MultiTurnQuestion.from_task(task), answer)
            out.append((v.valid, v.error_type))
        return out

    traces = [prediction_to_trace(task, answer) for _, task, _, answer in samples]
    metric = ValueAccuracy(mode="bfcl")

    def theirs() -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for _, task, question, answer in samples:
            truth = MultiTurnQuestion.from_task(task).ground_truth
            if len(answer) != len(truth):  # BFCL's runner, before the checker
                out.append((False, "multi_turn:force_terminated"))
                continue
            r = multi_turn_checker(
                [[step for step in turn if step] for turn in answer],  # as BFCL's runner does
                truth,
                copy.deepcopy(question),
                task.category,
                f"bench_{uuid.uuid4().hex}",
            )
            out.append((r["valid"], r.get("error_type")))
        return out

    n = len(samples)
    ours()  # untimed: imports BFCL's API modules, for both checkers
    rate_ours, mine = items_per_second(n, args.runs, ours)
    rate_metric, results = items_per_second(n, args.runs, lambda: [metric.score(t) for t in traces])
    rate_theirs, ref = items_per_second(n, args.runs, theirs)
    agreement, valid = [], []
    for label in ("ground truth", "perturbed"):
        index = [i for i, s in enumerate(samples) if s[0] == label]
        agreement.append(f"{label} {sum(mine[i] == ref[i] for i in index)}/{len(index)}")
        valid.append(f"{label} {sum(ref[i][0] is True for i in index)}/{len(index)}")
    agree_metric = sum(
        (r.value == 1.0, r.details.get("error_type")) == m
        for r, m in zip(results, mine, strict=True)
    )
    table = Table(title=f"BFCL multi-turn, 4 categories: {n} answers (ground truth + perturbed)")
    table.add_column("what")
    table.add_column("samples/s", justify="right")
    table.add_column("result")
    table.add_row(
        "check_multi_turn (ours)",
        f"{rate_ours:,.0f}",
        "verdicts as BFCL's: " + ", ".join(agreement),
    )
    table.add_row(
        "value_accuracy mode=bfcl (ours, on traces)",
        f"{rate_metric:,.0f}",
        f"{agree_metric}/{n} as check_multi_turn",
    )
    table.add_row("BFCL multi_turn_checker", f"{rate_theirs:,.0f}", "valid: " + ", ".join(valid))
    console = Console()
    console.print(table)
    console.print("BFCL's checker: bfcl-eval 2026.3.23 from PyPI, imported as is")


if __name__ == "__main__":
    main()
