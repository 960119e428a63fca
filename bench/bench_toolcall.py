"""Throughput of tool-call scoring: all BFCL live_multiple ground truth ×10, in each mode.

Usage: PYTHONPATH=src python bench/bench_toolcall.py [--repeat 10] [--runs 3]

Prints samples/s (median of ``--runs``) for value_accuracy in ``bfcl``, ``strict`` and
``lenient`` mode, for the three spec metrics together, for the whole ``toolcall`` suite through
the engine, and for turning predictions into traces (decoded lists, Python-call text, Hermes
text), with each mode's valid rate on the ground truth.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentgauge.config import load_suite
from agentgauge.engine import score_traces
from agentgauge.metrics.toolcall import (
    ValueAccuracy,
    execution_success,
    parameter_accuracy,
    tool_selection,
)
from agentgauge.model import Task, ToolCall, Trace
from agentgauge.toolcall.bfcl import reference_calls
from agentgauge.toolcall.datasets import prediction_to_trace, read_bfcl

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


def _rate(n: int, runs: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return n / statistics.median(times), out


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
    traces: list[Trace] = [
        prediction_to_trace(t, d) for t, d in zip(tasks, decoded, strict=True)
    ] * args.repeat
    n = len(traces)

    rows: list[tuple[str, float, str]] = []
    for mode in ("bfcl", "strict", "lenient"):
        metric = ValueAccuracy(mode=mode)
        rate, results = _rate(n, args.runs, lambda m=metric: [m.score(t) for t in traces])
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

    rate, values = _rate(n, args.runs, spec_metrics)
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
        rate, samples = _rate(n, args.runs, lambda s=suite: score_traces(traces, s))
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
        rate, made = _rate(
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

    table = Table(title=f"BFCL {args.category} ground truth ×{args.repeat} = {n} samples")
    table.add_column("what")
    table.add_column("samples/s", justify="right")
    table.add_column("result")
    for what, rate, result in rows:
        table.add_row(what, f"{rate:,.0f}", result)
    Console().print(table)


if __name__ == "__main__":
    main()
