"""Engine throughput: the behaviour suite over generated 10-step traces, store writes included.

Each configuration runs in a fresh process so that its peak memory is its own. Prints a
table: traces/s and peak resident memory (the main process, and with its workers), and the
time to report the stored run (the terminal summary and the JSON document), which reads every
sample back from the store. Beside them, in the same run: reading the same file's lines with
``json.loads`` (the floor of any reader) and validating them into ``Trace``; then the ratios
``evaluate --jobs 1`` / ``json.loads``, ``--jobs N`` / ``--jobs 1`` and the peak memory of a run
ten times smaller (flat: the memory does not grow with the number of traces).

The traces carry usage blocks (per model call and in total), as real ones do. Also printed:
the secret screen's cost per stored trace beside ``json.loads`` of the same line (CPU time,
which the machine's other load does not inflate); the same traces as OpenAI chats and as
OTLP/JSON spans evaluated with ``--jobs 1`` and ``--jobs 2`` (every format is read where it
is scored); and the whole ``agentgauge evaluate`` process on a three-trace file (start-up).

    python bench/bench_engine.py [--n 100000] [--start-up-only | --formats-only]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = (
    "the result is therefore clear because the data shows growth however costs rose "
    "thus we recommend the plan since it is safe"
).split()
TOOLS = ("search", "calculator", "weather", "lookup")
MODEL = "gpt-4o-mini"


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
            usage = {
                "input_tokens": 400 + 37 * j + i % 50,
                "output_tokens": 20 + i % 13,
                "cache_read_tokens": 256 if j else 0,
                "model": MODEL,
            }
            steps.append(
                {
                    "index": j,
                    "kind": "llm",
                    "agent": "agent",
                    "content": text,
                    "duration_s": 0.4,
                    "usage": usage,
                }
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
        "params": {"model": MODEL, "temperature": 0.2},
        "usage": {
            key: sum(s["usage"][key] for s in steps if "usage" in s)  # type: ignore[index]
            for key in ("input_tokens", "output_tokens", "cache_read_tokens")
        },
    }


def _generate(path: Path, n: int) -> None:
    rng = random.Random(0)
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps(_trace(i, rng)) + "\n")


def _worker(path: Path, jobs: int, trace_format: str) -> None:
    from rich.console import Console

    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, FileRun, evaluate_files
    from agentgauge.report.export import write_result_json
    from agentgauge.report.terminal import print_summary
    from agentgauge.store import Store

    db = path.with_suffix(f".{jobs}.db")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    # the command's own processor time from its first batch written on: what it spends per
    # trace once its workers run (its start-up, the same at any --jobs, left out)
    steady: dict[str, float] = {}

    def written(_store: object, _run_id: str, outcome: Any) -> None:
        if not steady:
            steady.update(cpu=_own_cpu_seconds(), n=-outcome.size)
        steady["n"] += outcome.size

    start, cpu_start, own_start = time.perf_counter(), _cpu_seconds(), _own_cpu_seconds()
    with Store(db) as store:
        run_id = evaluate_files(
            FileRun(load_suite("behavior"), [path], trace_format),
            store=store,
            options=EvaluateOptions(jobs=jobs, progress=False, batch_size=256, on_written=written),
        )
        n = store.get_run(run_id).n_samples
        elapsed = time.perf_counter() - start
        cpu = _cpu_seconds() - cpu_start
        own_cpu = _own_cpu_seconds() - own_start
        steady_cpu = (_own_cpu_seconds() - steady["cpu"]) / max(1, steady["n"])
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
                "cpu_seconds": cpu,
                "own_cpu_seconds": own_cpu,
                "own_cpu_per_trace": steady_cpu,
                "report_seconds": report_s,
                "report_rss_mb": report_rss,
                "rss_mb": own,
                "child_rss_mb": children,
                "digest": _stored_digest(db, run_id),
            }
        )
    )


def _stored_digest(db: Path, run_id: str) -> str:
    """A digest of everything the run stored (samples with their traces, metric values, read
    errors), in sequence order: two runs of the same input store the same digest."""
    import hashlib
    import sqlite3

    queries = (
        "SELECT * FROM samples WHERE run_id = ? ORDER BY seq",
        "SELECT * FROM run_metrics WHERE run_id = ? ORDER BY metric",
        "SELECT * FROM sample_metrics WHERE run_id = ? ORDER BY sample_key, part",
        "SELECT * FROM read_errors WHERE run_id = ? ORDER BY source, line",
    )
    digest = hashlib.sha256()
    with sqlite3.connect(db) as conn:
        for sql in queries:
            for row in conn.execute(sql, (run_id,)):
                digest.update(repr(row[1:]).encode())
    return digest.hexdigest()


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


def _read_rates(path: Path, limit: int) -> dict[str, float]:
    """Seconds per line of ``json.loads`` on the file's lines, of validating them into
    ``Trace``, and of validating them and splitting the prose of each trace into its word sets
    once (the least that any metric reading text does; best of three each)."""
    from agentgauge.model import Trace

    with path.open("rb") as fh:
        lines = [line for _, line in zip(range(limit), fh, strict=False)]
    best = {"json_loads": float("inf"), "validate": float("inf"), "words": float("inf")}
    for _ in range(3):
        for key, parse in (
            ("json_loads", json.loads),
            ("validate", Trace.model_validate_json),
            ("words", _validated_words),
        ):
            start = time.perf_counter()
            for line in lines:
                parse(line)
            best[key] = min(best[key], (time.perf_counter() - start) / len(lines))
    return best


_WORD = re.compile(r"\w+")


def _validated_words(line: bytes) -> list[frozenset[str]]:
    """The line validated into ``Trace``, then the word set of each text that the agent wrote
    (its output's strings, its steps' content and tool-call arguments)."""
    from agentgauge.metrics.behavior import text_values
    from agentgauge.model import Trace

    trace = Trace.model_validate_json(line)
    texts = list(text_values(trace.output))
    for step in trace.steps:
        if step.content:
            texts.append(step.content)
        if step.tool_call is not None:
            texts.extend(text_values(step.tool_call.arguments))
    return [frozenset(_WORD.findall(text.lower())) for text in texts]


def _cpu_seconds() -> float:
    """Processor time of this process and of its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _own_cpu_seconds() -> float:
    """Processor time of this process alone (the command's own, without its workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _screen_rates(path: Path, limit: int) -> dict[str, float]:
    """Processor seconds per line of ``json.loads`` and of the secret screen that decides
    whether a stored trace is redacted (best of five each), and how many lines it flags."""
    from agentgauge._redact import might_hold_secret

    with path.open() as fh:
        lines = [line for _, line in zip(range(limit), fh, strict=False)]
    best = {"json_loads": float("inf"), "screen": float("inf")}
    for _ in range(5):
        for key, fn in (("json_loads", json.loads), ("screen", might_hold_secret)):
            start = time.process_time()
            for line in lines:
                fn(line)
            best[key] = min(best[key], (time.process_time() - start) / len(lines))
    return {**best, "flagged": sum(map(might_hold_secret, lines))}


def _generate_spans(path: Path, n: int) -> None:
    """``n`` runs of the single-agent OTLP/JSON fixture, each with its own trace ids (as the
    importer bench writes them)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_import import _generate as generate_runs

    generate_runs(path, n)


def _chat(trace: dict[str, Any]) -> dict[str, Any]:
    """One generated trace as an OpenAI chat: the question, the agent's messages and calls,
    the tools' answers and the final answer."""
    task = trace["task"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": task["input"]["question"]}]
    for step in trace["steps"]:
        if step["kind"] == "llm":
            messages.append({"role": "assistant", "content": step["content"]})
        elif step["kind"] == "tool_call":
            call = step["tool_call"]
            function = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": f"c{step['index']}", "function": function}],
                }
            )
        else:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": f"c{step['index'] - 1}",
                    "content": json.dumps(step["result"]),
                }
            )
    messages.append({"role": "assistant", "content": trace["output"]["explanation"]})
    return {"id": trace["id"], "messages": messages, "metadata": {"model": MODEL}}


def _generate_chats(path: Path, n: int) -> None:
    rng = random.Random(0)
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps(_chat(_trace(i, rng))) + "\n")


_FLOORS = {
    "libraries": "from pydantic import BaseModel; import typer, rich.progress, rich.table",
    "numpy": "import numpy",
    "pydantic": "from pydantic import BaseModel",
    "python": "pass",
}
"""What any ``evaluate`` process pays before agentgauge's own work: the libraries it cannot do
without (the traces' models need pydantic's ``BaseModel``, which ``import pydantic`` alone
does not load; the command line typer and rich), pydantic alone, and Python starting alone;
beside them numpy, which a summary of a few samples no longer imports."""


def _cli_start(tmp: Path, runs: int = 5) -> dict[str, float]:
    """Best wall time and best processor time (the process and its children: what the other
    load on the machine does not inflate) of whole ``agentgauge evaluate`` processes on a
    three-trace file (as a user types it: default workers, progress bar) whose tokens are
    priced: with the models' prices kept by an earlier run (agentgauge's cache folder) and with
    an empty cache folder (the first run after installing); of the same process's imports
    alone, and of the floors (:data:`_FLOORS`)."""
    small = tmp / "three.jsonl"
    _generate(small, 3)
    cli = [sys.executable, "-m", "agentgauge", "evaluate", str(small)]
    commands = {
        "cli": cli,
        "cli_first": cli,
        "imports": [sys.executable, "-c", "import agentgauge.cli"],
        **{key: [sys.executable, "-c", code] for key, code in _FLOORS.items()},
    }
    best = {f"{key}{kind}": float("inf") for key in commands for kind in ("", "_cpu")}
    # as an installed package starts: the modules' bytecode cached by the first run
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    kept = {**env, "AGENTGAUGE_CACHE_DIR": str(tmp / "cache")}
    for run in range(runs):
        for key, command in commands.items():
            run_env = env
            if key == "cli":
                command, run_env = [*cli, "--db", str(tmp / f"c{run}.db")], kept
            elif key == "cli_first":
                empty = {**env, "AGENTGAUGE_CACHE_DIR": str(tmp / f"empty{run}")}
                command, run_env = [*cli, "--db", str(tmp / f"f{run}.db")], empty
            start, cpu_start = time.perf_counter(), _children_cpu_seconds()
            subprocess.run(command, check=True, capture_output=True, env=run_env)
            best[key] = min(best[key], time.perf_counter() - start)
            best[f"{key}_cpu"] = min(best[f"{key}_cpu"], _children_cpu_seconds() - cpu_start)
    return best


def _children_cpu_seconds() -> float:
    """Processor time of this process's finished children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def _evaluate(path: Path, jobs: int, trace_format: str = "native") -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            str(path),
            "--jobs",
            str(jobs),
            "--format",
            trace_format,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _peak(r: dict[str, float], jobs: int) -> float:
    return r["rss_mb"] + (r["child_rss_mb"] * jobs if jobs > 1 else 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--worker", type=Path)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--format", default="native")
    parser.add_argument(
        "--start-up-only", action="store_true", help="only the start-up of the whole process"
    )
    parser.add_argument(
        "--formats-only",
        action="store_true",
        help="only the format table (--n traces per format, --jobs 1 and --jobs 2)",
    )
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.jobs, args.format)
        return
    if args.formats_only:
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as tmp:
            formats = _formats(Path(tmp), args.n)
        print(f"{args.n:,} traces per format; load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
        _print_formats(formats)
        return
    if args.start_up_only:
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as tmp:
            start_up = _cli_start(Path(tmp))
        print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
        _print_start_up(start_up)
        return
    cores = os.cpu_count() or 1
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        _generate(path, args.n)
        small = Path(tmp) / "small.jsonl"
        _generate(small, args.n // 10)
        size_mb = path.stat().st_size / 1e6
        # the readers right before and right after the runs, so that both see the same load
        reads = [_read_rates(path, min(args.n, 20_000))]
        rows = [(jobs, _evaluate(path, jobs)) for jobs in sorted({1, 2, cores})]
        flat = _evaluate(small, 1)
        reads.append(_read_rates(path, min(args.n, 20_000)))
        ref = _in_memory(path, min(args.n, 20_000))
        screen = _screen_rates(path, min(args.n, 5_000))
        # the same traces in the other formats, a fifth as many, each read where it is scored
        formats = _formats(Path(tmp), args.n // 5)
        start_up = _cli_start(Path(tmp))
    loads_s = min(r["json_loads"] for r in reads)
    validate_s = min(r["validate"] for r in reads)
    words_s = min(r["words"] for r in reads)
    print(
        f"behaviour suite, {args.n:,} traces x 10 steps ({size_mb:.0f} MB JSONL), SQLite store "
        f"writes included; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f} on "
        f"{cores} cores"
    )
    print(f"{'configuration':<44}{'traces/s':>10}{'seconds':>9}{'peak RSS MB':>13}")
    print(f"{'json.loads of the lines (reference)':<44}{1 / loads_s:>10,.0f}{'—':>9}{'—':>13}")
    print(f"{'validation into Trace (pydantic)':<44}{1 / validate_s:>10,.0f}{'—':>9}{'—':>13}")
    print(
        f"{'validation + word sets of the prose, once':<44}{1 / words_s:>10,.0f}{'—':>9}{'—':>13}"
    )
    print(
        f"{'metrics only, parsed traces in memory':<44}{ref['n'] / ref['seconds']:>10,.0f}"
        f"{ref['seconds']:>9.1f}{'—':>13}"
    )
    for jobs, r in rows:
        print(
            f"{'evaluate --jobs ' + str(jobs):<44}{r['n'] / r['seconds']:>10,.0f}"
            f"{r['seconds']:>9.1f}{_peak(r, jobs):>13.0f}"
        )
    label = f"evaluate --jobs 1, {flat['n']:,.0f} traces"
    print(
        f"{label:<44}{flat['n'] / flat['seconds']:>10,.0f}{flat['seconds']:>9.1f}"
        f"{_peak(flat, 1):>13.0f}"
    )
    report = rows[0][1]
    print(
        f"{'report the stored run (summary + JSON)':<44}"
        f"{report['n'] / report['report_seconds']:>10,.0f}{report['report_seconds']:>9.1f}"
        f"{report['report_rss_mb']:>13.0f}"
    )
    one = rows[0][1]["n"] / rows[0][1]["seconds"]
    print(
        f"evaluate --jobs 1 / json.loads: {one * loads_s:.3f} (validation alone: "
        f"{loads_s / validate_s:.3f}; validation + word sets once: {loads_s / words_s:.3f}); "
        f"peak RSS at {args.n:,} vs {flat['n']:,.0f} traces: "
        f"{_peak(rows[0][1], 1):.0f} vs {_peak(flat, 1):.0f} MB"
    )
    for jobs, r in rows[1:]:
        print(
            f"evaluate --jobs {jobs} / --jobs 1: {r['n'] / r['seconds'] / one:.2f} "
            f"(linear would be {jobs}; {cores} cores)"
        )
    cpu_one = rows[0][1]["cpu_seconds"] / rows[0][1]["n"]
    print(
        f"by processor time (what the other load on the machine does not inflate): evaluate "
        f"--jobs 1 {cpu_one * 1e6:,.0f} µs per trace, json.loads {screen['json_loads'] * 1e6:.1f} "
        f"µs: {screen['json_loads'] / cpu_one:.3f}"
    )
    print(
        f"secret screen of the stored trace: {screen['screen'] * 1e6:.1f} µs per trace "
        f"({screen['flagged']} of {min(args.n, 5_000):,} flagged; json.loads of the same line "
        f"{screen['json_loads'] * 1e6:.1f} µs)"
    )
    _print_formats(formats)
    _print_start_up(start_up)


FormatRows = list[tuple[str, list[dict[str, Any]]]]


def _formats(tmp: Path, n: int) -> FormatRows:
    """The same ``n`` traces as native JSONL, OpenAI chats and OTLP/JSON spans, each file
    evaluated with ``--jobs 1`` and ``--jobs 2`` (every format is read where it is scored)."""
    native = tmp / "native.jsonl"
    _generate(native, n)
    chats = tmp / "chats.jsonl"
    _generate_chats(chats, n)
    spans = tmp / "spans.jsonl"
    _generate_spans(spans, n)
    return [
        (label, [_evaluate(file, jobs, fmt) for jobs in (1, 2)])
        for label, file, fmt in (
            ("native", native, "native"),
            ("openai-chat", chats, "openai-chat"),
            ("otel (OTLP/JSON)", spans, "otel"),
        )
    ]


def _print_formats(formats: FormatRows) -> None:
    """Each format's rates and wall-time ratio; the processor time per trace of the whole run
    at ``--jobs 1`` and ``--jobs 2`` (all processes, start-up included) and the ratio that
    two otherwise idle cores would give at those costs (2 × the first / the second); the
    command's own processor time per trace at ``--jobs 2`` once its workers run (it would be
    the bottleneck past half the whole); and whether both runs stored the same results."""
    print(
        f"{'format (same traces)':<20}{'--jobs 1/s':>11}{'--jobs 2/s':>11}{'ratio':>7}"
        f"{'CPU µs/trace 1 | 2':>20}{'2 idle cores':>14}{'main µs/trace':>15}  stored results"
    )
    for label, (r1, r2) in formats:
        a, b = r1["n"] / r1["seconds"], r2["n"] / r2["seconds"]
        c1, c2 = r1["cpu_seconds"] / r1["n"], r2["cpu_seconds"] / r2["n"]
        cpu = f"{c1 * 1e6:,.0f} | {c2 * 1e6:,.0f}"
        agree = "equal" if r1["digest"] == r2["digest"] else "DIFFER"
        print(
            f"{label:<20}{a:>11,.0f}{b:>11,.0f}{b / a:>7.2f}{cpu:>20}{2 * c1 / c2:>14.2f}"
            f"{r2['own_cpu_per_trace'] * 1e6:>15,.0f}  {agree} ({r1['n']:,.0f} samples)"
        )


def _print_start_up(start_up: dict[str, float]) -> None:
    print(f"{'start-up, whole process (best of 5)':<52}{'wall s':>9}{'processor s':>13}")
    for key, label in (
        ("cli", "agentgauge evaluate, 3 traces (prices kept)"),
        ("cli_first", "agentgauge evaluate, 3 traces (empty cache folder)"),
        ("imports", "import agentgauge.cli alone"),
        ("libraries", "floor: pydantic's BaseModel, typer, rich"),
        ("pydantic", "floor: pydantic's BaseModel"),
        ("numpy", "import numpy (not imported by the command)"),
        ("python", "floor: python starting alone"),
    ):
        print(f"{label:<52}{start_up[key]:>9.2f}{start_up[key + '_cpu']:>13.2f}")


if __name__ == "__main__":
    main()
