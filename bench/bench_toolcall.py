"""Throughput of tool-call scoring: all BFCL live_multiple ground truth ×10, in each mode.

Usage: PYTHONPATH=src python bench/bench_toolcall.py [--repeat 10] [--runs 3]

Prints samples/s (median of ``--runs``) for value_accuracy in ``bfcl``, ``strict`` and
``lenient`` mode, for the three spec metrics together, for the whole ``toolcall`` suite through
the engine, and for turning predictions into traces (decoded lists, Python-call text, Hermes
text), with each mode's valid rate on the ground truth.

When BFCL's own package is importable (``pip install --no-deps bfcl-eval==2026.3.23``, or its
``--target`` folder on ``PYTHONPATH``), its AST checker runs side by side on the same samples and
on seeded perturbations of them, and the table reports how many verdicts (valid and error label)
agree with ours; last, the whole suite through the engine and BFCL's checker alone are timed in
alternation on the same samples. BFCL's ``constants.model_config`` imports every provider SDK,
so a stand-in that answers ``underscore_to_dot=False`` replaces it.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import random
import statistics
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from _timing import items_per_second
from agentgauge.config import load_suite
from agentgauge.engine import score_traces
from agentgauge.metrics.toolcall import (
    ValueAccuracy,
    execution_success,
    parameter_accuracy,
    tool_selection,
)
from agentgauge.model import Task, ToolCall, Trace
from agentgauge.toolcall.bfcl import BfclUnsupported, check_bfcl, reference_calls
from agentgauge.toolcall.datasets import prediction_to_trace
from agentgauge.toolcall.formats.bfcl import read_bfcl

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bfcl"


def _python_text(calls: Sequence[ToolCall]) -> str:
    return (
        "["
        + ", ".join(
            f"{c.name}(" + ", ".join(f"{k}={v!r}" for k, v in c.arguments.items()) + ")"
            for c in calls
        )
        + "]"
    )


def _hermes_text(calls: Sequence[ToolCall]) -> str:
    return "".join(
        "<tool_call>" + json.dumps({"name": c.name, "arguments": c.arguments}) + "</tool_call>"
        for c in calls
    )


def _bfcl_checker() -> Callable[..., dict[str, Any]] | None:
    """BFCL's ``ast_checker`` for Python categories, or None when bfcl-eval is not installed."""
    stand_in = types.ModuleType("bfcl_eval.constants.model_config")
    stand_in.MODEL_CONFIG_MAPPING = collections.defaultdict(  # type: ignore[attr-defined]
        lambda: types.SimpleNamespace(underscore_to_dot=False)
    )
    sys.modules.setdefault("bfcl_eval.constants.model_config", stand_in)
    try:
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    except ImportError:
        return None

    def check(functions: Any, output: Any, answers: Any, category: str) -> dict[str, Any]:
        return ast_checker(functions, output, answers, Language.PYTHON, category, "bench")  # type: ignore[no-any-return]

    return check


def _perturbed(decoded: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """One seeded change of a decoded call list: a call dropped or reordered, a parameter
    dropped, or a value changed in type, case, punctuation, order or precision."""
    out = copy.deepcopy(decoded)
    [args] = out[0].values()
    kind = rng.randrange(6)
    if kind == 0 or not args:
        return out[1:] if len(out) > 1 or rng.random() < 0.5 else out[::-1]
    param = rng.choice(list(args))
    value = args[param]
    if kind == 1:
        del args[param]
    elif isinstance(value, bool):
        args[param] = [int(value), str(value).lower(), not value][kind % 3]
    elif isinstance(value, int | float):
        args[param] = [str(value), float(value), int(value), value + 1e-7][kind % 4]
    elif isinstance(value, str):
        args[param] = [value.upper() + " ", value.replace(" ", "-"), value + "x", 1][kind % 4]
    elif isinstance(value, list):
        args[param] = [value[::-1], value[:-1], [str(v) for v in value], {}][kind % 4]
    elif isinstance(value, dict) and value:
        args[param] = {k: v for k, v in list(value.items())[1:]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=10, help="copies of the category")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (median reported)")
    parser.add_argument("--category", default="live_multiple")
    args = parser.parse_args()

    name = f"BFCL_v4_{args.category}.json"
    tasks = [
        t for t in read_bfcl(DATA / name, DATA / "possible_answer" / name) if isinstance(t, Task)
    ]
    calls = [reference_calls(t.tools, t.expected_calls or []) for t in tasks]
    decoded = [[{c.name: c.arguments} for c in cs] for cs in calls]
    # distinct objects for every copy: nothing the engine keeps about a trace object serves
    # another copy
    traces: list[Trace] = [
        prediction_to_trace(t, d)
        for _ in range(args.repeat)
        for t, d in zip(tasks, decoded, strict=True)
    ]
    n = len(traces)

    rows: list[tuple[str, float, str]] = []
    for mode in ("bfcl", "strict", "lenient"):
        metric = ValueAccuracy(mode=mode)
        rate, results = items_per_second(
            n, args.runs, lambda m=metric: [m.score(t) for t in traces]
        )
        valid = sum(r.value == 1.0 for r in results) / n
        rows.append((f"value_accuracy mode={mode}", rate, f"{valid:.2%} valid"))

    def spec_metrics() -> list[float | None]:
        out = []
        for t in traces:
            out += [
                tool_selection(t).value,
                parameter_accuracy(t).value,
                execution_success(t).value,
            ]
        return out

    rate, values = items_per_second(n, args.runs, spec_metrics)
    es = values[2::3]
    rows.append(
        (
            "tool_selection + parameter_accuracy + execution_success",
            rate,
            f"execution_success {sum(v == 1.0 for v in es) / n:.2%}",
        )
    )
    for mode in ("bfcl", "lenient"):
        suite = load_suite("toolcall").model_copy(
            update={"options": {"value_accuracy": {"mode": mode}}}
        )
        rate, samples = items_per_second(n, args.runs, lambda s=suite: score_traces(traces, s))
        mean = statistics.fmean(s.composite or 0.0 for s in samples)
        rows.append(
            (
                f"engine.score_traces, toolcall suite, mode={mode}",
                rate,
                f"mean composite {mean:.4f}",
            )
        )

    sources = {
        "decoded list": decoded,
        "Python-call text": [_python_text(cs) for cs in calls],
        "Hermes <tool_call> text": [_hermes_text(cs) for cs in calls],
    }
    for label, outputs in sources.items():
        rate, made = items_per_second(
            len(tasks) * args.repeat,
            args.runs,
            lambda o=outputs: [
                prediction_to_trace(t, r)
                for _ in range(args.repeat)
                for t, r in zip(tasks, o, strict=True)
            ],
        )
        errors = sum(1 for t in made if t.metadata.get("parse_error"))
        rows.append((f"prediction_to_trace ({label})", rate, f"{errors} parse errors"))

    reference = _bfcl_checker()
    if reference is None:
        note = "bfcl-eval not installed: no side-by-side run"
    else:
        rows += _side_by_side(reference, tasks, decoded, args)
        note = "BFCL's checker: bfcl-eval 2026.3.23 from PyPI, imported as is\n" + _suite_vs_bfcl(
            reference, tasks, decoded, traces, args
        )

    table = Table(title=f"BFCL {args.category} ground truth ×{args.repeat} = {n} samples")
    table.add_column("what")
    table.add_column("samples/s", justify="right")
    table.add_column("result")
    for what, rate, result in rows:
        table.add_row(what, f"{rate:,.0f}", result)
    console = Console()
    console.print(table)
    console.print(note)


def _raw_bfcl(tasks: list[Task]) -> dict[str, tuple[list[dict[str, Any]], list[Any]]]:
    """Each task's functions and possible answers as BFCL's checker takes them."""
    return {
        t.id: (
            [
                {"name": s.name, "description": s.description, "parameters": s.parameters}
                for s in t.tools
            ],
            [{e.name: e.arguments} for e in t.expected_calls or []],
        )
        for t in tasks
    }


def _suite_vs_bfcl(
    reference: Callable[..., dict[str, Any]],
    tasks: list[Task],
    decoded: list[list[dict[str, Any]]],
    traces: list[Trace],
    args: argparse.Namespace,
) -> str:
    """The whole toolcall suite through the engine against BFCL's ast_checker alone on the same
    samples, timed in alternation (best of ``--runs`` each), with their verdicts compared."""
    raw = _raw_bfcl(tasks)
    samples = [(t, d) for _ in range(args.repeat) for t, d in zip(tasks, decoded, strict=True)]
    suite = load_suite("toolcall").model_copy(
        update={"options": {"value_accuracy": {"mode": "bfcl"}}}
    )
    metrics = suite.build_metrics()
    best_ours = best_theirs = float("inf")
    for _ in range(args.runs):
        start = time.perf_counter()
        scored = score_traces(traces, suite, metrics)
        best_ours = min(best_ours, time.perf_counter() - start)
        start = time.perf_counter()
        verdicts = [
            reference(raw[t.id][0], copy.deepcopy(d), raw[t.id][1], t.category or "")["valid"]
            for t, d in samples
        ]
        best_theirs = min(best_theirs, time.perf_counter() - start)
    agree = sum(
        (s.values["value_accuracy"] == 1.0) == v for s, v in zip(scored, verdicts, strict=True)
    )
    n = len(traces)
    return (
        f"whole toolcall suite through the engine (6 metrics, composite) {n / best_ours:,.0f} "
        f"samples/s vs BFCL ast_checker alone {n / best_theirs:,.0f}/s: "
        f"{best_theirs / best_ours:.2f}x; value_accuracy and BFCL agree on {agree}/{n}"
    )


def _side_by_side(
    reference: Callable[..., dict[str, Any]],
    tasks: list[Task],
    decoded: list[list[dict[str, Any]]],
    args: argparse.Namespace,
) -> list[tuple[str, float, str]]:
    rows: list[tuple[str, float, str]] = []
    raw = _raw_bfcl(tasks)
    rng = random.Random(0)
    variants = [(t, d) for t, d in zip(tasks, decoded, strict=True)] * args.repeat
    perturbed = [(t, _perturbed(d, rng)) for t, d in variants]

    def ours(samples: list[tuple[Task, list[dict[str, Any]]]]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for task, output in samples:
            calls = [ToolCall(name=n, arguments=a) for c in output for n, a in c.items()]
            try:
                v = check_bfcl(task.category, task.tools, task.expected_calls or [], calls)
                out.append((v.valid, v.error_type))
            except BfclUnsupported:
                out.append(("raises",))
        return out

    def theirs(samples: list[tuple[Task, list[dict[str, Any]]]]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for task, output in samples:
            functions, answers = raw[task.id]
            try:
                r = reference(functions, copy.deepcopy(output), answers, task.category or "")
                out.append((r["valid"], None if r["valid"] else r["error_type"]))
            except Exception:  # BFCL's checker raises on some inputs
                out.append(("raises",))
        return out

    for label, samples in (("ground truth", variants), ("perturbed", perturbed)):
        rate_ours, mine = items_per_second(len(samples), args.runs, lambda s=samples: ours(s))
        rate_theirs, ref = items_per_second(len(samples), args.runs, lambda s=samples: theirs(s))
        agree = sum(a == b for a, b in zip(mine, ref, strict=True))
        valid = sum(r[0] is True for r in ref) / len(ref)
        rows.append(
            (f"check_bfcl (ours), {label}", rate_ours, f"{agree}/{len(ref)} verdicts agree")
        )
        rows.append((f"BFCL ast_checker, {label}", rate_theirs, f"{valid:.2%} valid"))
    return rows


if __name__ == "__main__":
    main()
