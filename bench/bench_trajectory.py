"""The trajectory metrics side by side with the peers they reproduce, on the same chats.

Generated OpenAI chats (seeded): a question, assistant messages that call one to four tools
(search, calculator, weather, lookup) with arguments, the tools' answers and a final answer;
each chat gives the reference run as ``expected_messages``, whose calls agree with the calls
made in most chats and differ in a name, an argument value, the order or the number of calls
in the others. The peers run in throwaway virtual environments this script creates (never a
dependency of agentgauge), each in its own process; every time is processor time (the other
jobs on a shared machine inflate it less than wall time), and every value is compared.

1. ``tool_call_accuracy`` against Ragas' ``collections.ToolCallAccuracy`` (0.4.3), in strict
   and in any order: ours reads the chats with the ``openai-chat`` importer (not timed; it
   lists each trace's calls and its reference's calls as it reads) and scores the Traces with
   ``ToolCallAccuracy.score``; Ragas gets the same chats as its own
   ``HumanMessage`` / ``AIMessage`` / ``ToolMessage`` and ``ToolCall`` objects (built before
   the clock starts) and scores them with ``ascore`` in one event loop. Each side runs three
   times, in alternation; the best run counts.
2. The trajectory suite end to end: ``agentgauge evaluate --format openai-chat`` with
   ``trajectory_match``, ``tool_correctness`` and ``tool_call_accuracy`` (their defaults: the
   peers' defaults), start-up, reading, scoring and the SQLite store included, against each
   peer's metric calls alone on the same chats, their inputs built before the clock starts:
   agentevals' strict trajectory match evaluator (0.0.9), DeepEval's ``ToolCorrectnessMetric``
   (4.3.1, ``measure`` without its event loop) and Ragas' ``ToolCallAccuracy``
   (``multi_turn_ascore`` on a ``MultiTurnSample``). The stored values are compared with each
   peer's.

    PYTHONPATH=src python bench/bench_trajectory.py [--n 20000] [--jobs 1]

The peers' environments are kept in ``$AGENTGAUGE_BENCH_PEERS`` (``make bench``: the
checkout's ``.bench-deps``; default: a folder under the system's temporary directory) so that a
second run does not install them again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# each peer: its package and the pins its environment needs
PEERS: dict[str, tuple[str, tuple[str, ...]]] = {
    # Ragas 0.4.3 imports a chat model that langchain-community 0.4.2 no longer has
    "ragas": ("ragas==0.4.3", ("langchain-community==0.4.1",)),
    "agentevals": ("agentevals==0.0.9", ()),
    "deepeval": ("deepeval==4.3.1", ()),
}
TOOLS = ("search", "calculator", "weather", "lookup")
CITIES = ("Paris", "Lyon", "Oslo", "Lima", "Pune")
RUNS = 3
SUITE = """name = "trajectories"
metrics = ["trajectory_match", "tool_correctness", "tool_call_accuracy"]
"""

# each peer script reads the chats, builds its inputs, then times its metric calls alone and
# prints {"seconds": processor seconds, "values": [one per chat, in order]}
READ_CHATS = """
import json, sys, time

with open(sys.argv[1]) as fh:
    chats = [json.loads(line) for line in fh]
"""

RAGAS_INPUTS = """
import asyncio, warnings
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

warnings.simplefilter("ignore")  # Ragas warns on every length mismatch


def sample(chat):
    messages = []
    for m in chat["messages"]:
        if m["role"] == "user":
            messages.append(HumanMessage(content=m["content"]))
        elif m["role"] == "tool":
            messages.append(ToolMessage(content=m["content"]))
        else:
            calls = [
                ToolCall(name=c["function"]["name"], args=json.loads(c["function"]["arguments"]))
                for c in m.get("tool_calls") or []
            ]
            messages.append(AIMessage(content=m["content"] or "", tool_calls=calls or None))
    reference = [
        ToolCall(name=c["function"]["name"], args=json.loads(c["function"]["arguments"]))
        for m in chat["expected_messages"]
        for c in m.get("tool_calls") or []
    ]
    return messages, reference
"""

RAGAS_COLLECTIONS = (
    READ_CHATS
    + RAGAS_INPUTS
    + """
from ragas.metrics.collections import ToolCallAccuracy


async def score(metric, samples):
    return [(await metric.ascore(user_input=m, reference_tool_calls=r)).value for m, r in samples]


samples = [sample(chat) for chat in chats]
metric = ToolCallAccuracy(strict_order=sys.argv[2] == "strict")
start = time.process_time()
values = asyncio.run(score(metric, samples))
print(json.dumps({"seconds": time.process_time() - start, "values": values}))
"""
)

RAGAS_LEGACY = (
    READ_CHATS
    + RAGAS_INPUTS
    + """
from ragas.dataset_schema import MultiTurnSample
from ragas.metrics import ToolCallAccuracy


async def score(metric, samples):
    return [await metric.multi_turn_ascore(s) for s in samples]


samples = [
    MultiTurnSample(user_input=m, reference_tool_calls=r) for m, r in map(sample, chats)
]
metric = ToolCallAccuracy()
start = time.process_time()
values = asyncio.run(score(metric, samples))
print(json.dumps({"seconds": time.process_time() - start, "values": values}))
"""
)

AGENTEVALS = (
    READ_CHATS
    + """
from agentevals.trajectory.match import create_trajectory_match_evaluator

evaluator = create_trajectory_match_evaluator(
    trajectory_match_mode="strict", tool_args_match_mode="exact"
)
start = time.process_time()
values = [
    float(evaluator(outputs=c["messages"], reference_outputs=c["expected_messages"])["score"])
    for c in chats
]
print(json.dumps({"seconds": time.process_time() - start, "values": values}))
"""
)

DEEPEVAL = (
    READ_CHATS
    + """
from deepeval.metrics import ToolCorrectnessMetric
from deepeval.test_case import LLMTestCase, ToolCall


def calls(messages):
    return [
        ToolCall(
            name=c["function"]["name"], input_parameters=json.loads(c["function"]["arguments"])
        )
        for m in messages
        for c in m.get("tool_calls") or []
    ]


cases = [
    LLMTestCase(
        input=c["messages"][0]["content"],
        actual_output=c["messages"][-1]["content"],
        tools_called=calls(c["messages"]),
        expected_tools=calls(c["expected_messages"]),
    )
    for c in chats
]
metric = ToolCorrectnessMetric(async_mode=False)
start = time.process_time()
values = [metric.measure(case, _show_indicator=False) for case in cases]
print(json.dumps({"seconds": time.process_time() - start, "values": values}))
"""
)
# DeepEval makes its default judge model when the metric is built, though this metric asks it
# nothing without available tools: the model wants a key to exist, never used (no request)
PEER_ENV = {"OPENAI_API_KEY": "unused", "DEEPEVAL_TELEMETRY_OPT_OUT": "YES"}


def _call(rng: random.Random, k: int) -> dict[str, Any]:
    tool = rng.choice(TOOLS)
    args: dict[str, Any] = {"q": f"query {k}", "city": rng.choice(CITIES)}
    if rng.random() < 0.5:
        args["k"] = rng.randint(1, 5)
    return {"name": tool, "args": args}


def _function(call: dict[str, Any]) -> dict[str, Any]:
    return {"name": call["name"], "arguments": json.dumps(call["args"])}


def _chat(i: int, rng: random.Random) -> dict[str, Any]:
    """One chat and its reference: the calls made, perturbed in a third of the chats."""
    made = [_call(rng, k) for k in range(rng.randint(1, 4))]
    expected = [dict(c, args=dict(c["args"])) for c in made]
    change = rng.random()
    if change < 0.1:
        expected[0]["name"] = rng.choice(TOOLS)
    elif change < 0.2:
        expected[-1]["args"]["city"] = rng.choice(CITIES)
    elif change < 0.27:
        expected.reverse()
    elif change < 0.33:
        expected.append(_call(rng, 9))
    question = {"role": "user", "content": f"question {i}"}
    messages: list[dict[str, Any]] = [question]
    reference: list[dict[str, Any]] = [question]
    for calls, out in ((made, messages), (expected, reference)):
        ids = [f"c{i}-{k}" for k in range(len(calls))]
        out.append(
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {"id": ident, "type": "function", "function": _function(c)}
                    for ident, c in zip(ids, calls, strict=True)
                ],
            }
        )
        out.extend({"role": "tool", "tool_call_id": ident, "content": "ok"} for ident in ids)
        out.append({"role": "assistant", "content": f"answer {i}"})
    return {"id": f"chat-{i}", "messages": messages, "expected_messages": reference}


def _peer_python(peer: str) -> Path:
    """The Python of a virtual environment that holds ``peer``, created on first use."""
    package, pins = PEERS[peer]
    home = Path(os.environ.get("AGENTGAUGE_BENCH_PEERS", Path(tempfile.gettempdir())))
    venv = home / "agentgauge-bench-peers" / package.replace("==", "-")
    python = venv / "bin" / "python"
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", package, *pins], check=True)
        (venv / ".installed").touch()
    return python


def _ours(path: Path, strict: bool) -> tuple[float, list[float | None]]:
    from agentgauge.io.openai_chat import read_openai_chat
    from agentgauge.metrics.trajectory import ToolCallAccuracy
    from agentgauge.model import Trace

    traces = [t for t in read_openai_chat(path) if isinstance(t, Trace)]
    metric = ToolCallAccuracy(strict_order=strict)
    start = time.process_time()
    values = [metric.score(t).value for t in traces]
    return time.process_time() - start, values


def _theirs(peer: str, script: str, *args: str) -> tuple[float, list[float]]:
    """A peer's processor seconds and values: ``script`` run with ``args`` in its venv."""
    python = _peer_python(peer)
    with tempfile.TemporaryDirectory() as tmp:  # the peers write their caches where they run
        code = Path(tmp) / "peer.py"
        code.write_text(script)
        out = subprocess.run(
            [str(python), str(code), *args],
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp,
            env={**os.environ, **PEER_ENV, "PYTHONPATH": ""},
        )
    result = json.loads(out.stdout)
    return float(result["seconds"]), [float(v) for v in result["values"]]


def _suite(path: Path, jobs: int, tmp: Path) -> tuple[float, float, dict[str, list[float | None]]]:
    """``agentgauge evaluate`` of the trajectory suite: processor and wall seconds of the
    whole command (its workers included), and the stored values of each metric by chat."""
    suite = tmp / "trajectories.toml"
    suite.write_text(SUITE)
    db = tmp / "suite.db"
    db.unlink(missing_ok=True)
    command = [sys.executable, "-m", "agentgauge", "evaluate", "--format", "openai-chat"]
    command += [str(path), "--suite", str(suite), "--db", str(db), "--jobs", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*command, "--no-progress"], check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    from agentgauge.store import Store

    stored: dict[str, dict[str, float | None]] = {}
    with sqlite3.connect(db) as con:
        (run_id,) = con.execute("SELECT id FROM runs").fetchone()
    with Store(db) as store:
        for sample in store.iter_samples(run_id):
            for metric, value, _, _ in sample.metrics:
                stored.setdefault(metric, {})[sample.trace_id] = value
    order = [f"chat-{i}" for i in range(sum(1 for _ in path.open()))]
    return cpu, wall, {m: [by_chat.get(c) for c in order] for m, by_chat in stored.items()}


def _agree(ours: list[float | None], theirs: list[float]) -> int:
    return sum(a is not None and abs(a - b) <= 1e-12 for a, b in zip(ours, theirs, strict=True))


def _metric_rows(path: Path) -> list[tuple[str, float, float, int]]:
    rows = []
    for strict in (True, False):
        ours, theirs = float("inf"), float("inf")
        values: tuple[list[float | None], list[float]] = ([], [])
        for _ in range(RUNS):  # in alternation: a change of load hits both sides
            seconds, mine = _ours(path, strict)
            ours = min(ours, seconds)
            order = "strict" if strict else "any"
            seconds, peer = _theirs("ragas", RAGAS_COLLECTIONS, str(path), order)
            theirs = min(theirs, seconds)
            values = (mine, peer)
        rows.append(("strict" if strict else "any", ours, theirs, _agree(*values)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--jobs", type=int, default=1, help="evaluate's --jobs (part 2)")
    parser.add_argument("--part", type=int, choices=(1, 2), help="run this part alone")
    args = parser.parse_args()
    for peer in PEERS:
        _peer_python(peer)
    rng = random.Random(0)
    n = args.n
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        path = tmp / "chats.jsonl"
        path.write_text("".join(json.dumps(_chat(i, rng)) + "\n" for i in range(n)))

        if args.part in (None, 1):
            _part_one(path, n)
        if args.part in (None, 2):
            _part_two(path, n, args.jobs, tmp)


def _part_one(path: Path, n: int) -> None:
    load = os.getloadavg()[0]
    rows = _metric_rows(path)
    print(
        f"1. tool_call_accuracy vs Ragas' collections.ToolCallAccuracy ({PEERS['ragas'][0]}), "
        f"{n:,} chats, processor time, best of {RUNS}; load average {load:.1f} -> "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(f"{'order':<10}{'ours/s':>10}{'Ragas/s':>10}{'ratio':>8}  values equal")
    for order, ours, theirs, agree in rows:
        rates = f"{n / ours:>10,.0f}{n / theirs:>10,.0f}{theirs / ours:>8.2f}"
        print(f"{order:<10}{rates}  {agree}/{n}")


def _part_two(path: Path, n: int, jobs: int, tmp: Path) -> None:
    load = os.getloadavg()[0]
    cpu, wall, stored = _suite(path, jobs, tmp)
    peers = [
        ("agentevals strict trajectory match", "trajectory_match", "agentevals", AGENTEVALS),
        ("DeepEval ToolCorrectnessMetric", "tool_correctness", "deepeval", DEEPEVAL),
        ("Ragas ToolCallAccuracy", "tool_call_accuracy", "ragas", RAGAS_LEGACY),
    ]
    measured = [
        (label, metric, *_theirs(peer, script, str(path))) for label, metric, peer, script in peers
    ]
    print(
        f"\n2. the trajectory suite end to end (evaluate --jobs {jobs}, stored) vs each "
        f"peer's metric calls, {n:,} chats, processor time; load average {load:.1f} -> "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(f"{'side':<40}{'chats/s':>10}{'suite ratio':>13}  values equal")
    side = "agentgauge evaluate, 3 metrics"
    print(f"{side:<40}{n / cpu:>10,.0f}{'':>13}  (wall {n / wall:,.0f}/s)")
    total = 0.0
    for label, metric, seconds, values in measured:
        total += seconds
        agree = _agree(stored[metric], values)
        print(f"{label:<40}{n / seconds:>10,.0f}{seconds / cpu:>12.2f}x  {agree}/{n} {metric}")
    print(f"{'the three peers together':<40}{n / total:>10,.0f}{total / cpu:>12.2f}x")


if __name__ == "__main__":
    main()
