"""Engine throughput: the behaviour suite over generated 10-step traces, store writes included.

Each configuration runs in a fresh process so that its peak memory is its own. Prints a
table: traces/s and peak resident memory (the main process, and with its workers), and the
time to report the stored run (the terminal summary and the JSON document), which reads every
sample back from the store.

    python bench/bench_engine.py [--n 100000]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = (
    "the result is therefore clear because the data shows growth however costs rose "
    "thus we recommend the plan since it is safe"
).split()
TOOLS = ("search", "calculator", "weather", "lookup")


def _trace(i: int, rng: random.Random) -> dict[str, object]:
    steps: list[dict[str, object]] = []
    for j in range(10):
        if j % 3 == 1:
            steps.append(
                {
                    "index": j,
                    "kind": "tool_call",
                    "agent": "agent",
                    "duration_s": 0.2,
                    "tool_call": {
                        "name": rng.choice(TOOLS),
                        "arguments": {"q": f"query {i}", "k": j},
                    },
                }
            )
        elif j % 3 == 2:
            steps.append(
                {
                    "index": j,
                    "kind": "tool_result",
                    "result": {"value": rng.random()},
                    "duration_s": 0.05,
                }
            )
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(20))
            steps.append(
                {"index": j, "kind": "llm", "agent": "agent", "content": text, "duration_s": 0.4}
            )
    expected = {"answer": i % 7, "unit": "m"}
    output = {
        "answer": i % 7 if rng.random() < 0.7 else -1,
        "unit": "m",
        "explanation": " ".join(rng.choice(WORDS) for _ in range(30)),
    }
    return {
        "id": f"bench-{i}",
        "task": {
            "id": f"task-{i % 500}",
            "input": {"question": f"question {i} about growth"},
            "description": "answer the question about growth",
            "expected_output": expected,
            "category": ("knowledge", "reasoning", "tool_use")[i % 3],
            "difficulty": ("easy", "medium", "hard")[i % 3],
        },
        "output": output,
        "steps": steps,
    }


def _generate(path: Path, n: int) -> None:
    rng = random.Random(0)
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps(_trace(i, rng)) + "\n")


def _worker(path: Path, jobs: int) -> None:
    from rich.console import Console

    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, evaluate, iter_sources
    from agentgauge.report.export import write_result_json
    from agentgauge.report.terminal import print_summary
    from agentgauge.store import Store

    db = path.with_suffix(f".{jobs}.db")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    start = time.perf_counter()
    with Store(db) as store:
        run_id = evaluate(
            iter_sources([path]),
            load_suite("behavior"),
            store=store,
            options=EvaluateOptions(jobs=jobs, progress=False, batch_size=256),
        )
        n = store.get_run(run_id).n_samples
        elapsed = time.perf_counter() - start
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        report_start = time.perf_counter()
        print_summary(store, run_id, Console(file=io.StringIO()))
        write_result_json(store, run_id, db.with_suffix(".json"))
        report_s = time.perf_counter() - report_start
    report_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "n": n,
                "seconds": elapsed,
                "report_seconds": report_s,
                "report_rss_mb": report_rss,
                "rss_mb": own,
                "child_rss_mb": children,
            }
        )
    )


def _in_memory(path: Path, limit: int) -> dict[str, float]:
    """Reference point: the metrics alone on already-parsed traces, no store, no pool."""
    from agentgauge.config import load_suite
    from agentgauge.engine import score_traces
    from agentgauge.model import Trace

    with path.open() as fh:
        traces = [
            Trace.model_validate_json(line) for _, line in zip(range(limit), fh, strict=False)
        ]
    suite = load_suite("behavior")
    metrics = suite.build_metrics()
    start = time.perf_counter()
    score_traces(traces, suite, metrics)
    return {"n": len(traces), "seconds": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--worker", type=Path)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.jobs)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        _generate(path, args.n)
        size_mb = path.stat().st_size / 1e6
        rows = []
        for jobs in (1, 2):
            out = subprocess.run(
                [sys.executable, __file__, "--worker", str(path), "--jobs", str(jobs)],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append((jobs, json.loads(out.stdout.strip().splitlines()[-1])))
        ref = _in_memory(path, min(args.n, 20_000))
    print(
        f"behaviour suite, {args.n:,} traces x 10 steps ({size_mb:.0f} MB JSONL), "
        "SQLite store writes included"
    )
    print(f"{'configuration':<44}{'traces/s':>10}{'seconds':>9}{'peak RSS MB':>13}")
    for jobs, r in rows:
        peak = r["rss_mb"] + (r["child_rss_mb"] * jobs if jobs > 1 else 0)
        print(
            f"{'evaluate --jobs ' + str(jobs):<44}{r['n'] / r['seconds']:>10,.0f}"
            f"{r['seconds']:>9.1f}{peak:>13.0f}"
        )
    print(
        f"{'metrics only, parsed traces in memory':<44}{ref['n'] / ref['seconds']:>10,.0f}"
        f"{ref['seconds']:>9.1f}{'—':>13}"
    )
    report = rows[0][1]
    print(
        f"{'report the stored run (summary + JSON)':<44}"
        f"{report['n'] / report['report_seconds']:>10,.0f}{report['report_seconds']:>9.1f}"
        f"{report['report_rss_mb']:>13.0f}"
    )


if __name__ == "__main__":
    main()
