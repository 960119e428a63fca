"""``tool_call_accuracy`` side by side with Ragas' ``collections.ToolCallAccuracy``.

Generated OpenAI chats (seeded): a question, assistant messages that call one to four tools
(search, calculator, weather, lookup) with arguments, the tools' answers and a final answer;
each chat gives the reference calls as ``expected_messages``, which agree with the calls made
in most chats and differ in a name, an argument value, the order or the number of calls in the
others. Both sides score the same chats, in strict and in any order: ours reads them with the
``openai-chat`` importer (not timed) and scores the Traces with ``ToolCallAccuracy.score``;
Ragas (0.4.3, in a throwaway virtual environment this script creates, never a dependency)
gets the same chats as its own ``HumanMessage`` / ``AIMessage`` / ``ToolMessage`` and
``ToolCall`` objects (built before the clock starts) and scores them with ``ascore`` in one
event loop. Each side runs three times, in alternation, in its own process; the best run
counts. Every value must agree.

    PYTHONPATH=src python bench/bench_trajectory.py [--n 20000]

The peers' environment is kept in ``$AGENTGAUGE_BENCH_PEERS`` (default: a folder under the
system's temporary directory) so that a second run does not install it again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RAGAS = "ragas==0.4.3"
# Ragas 0.4.3 imports a chat model that langchain-community 0.4.2 no longer has
PEER_PINS = ("langchain-community==0.4.1",)
TOOLS = ("search", "calculator", "weather", "lookup")
CITIES = ("Paris", "Lyon", "Oslo", "Lima", "Pune")
RUNS = 3

PEER = r"""
import asyncio, json, sys, time, warnings
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from ragas.metrics.collections import ToolCallAccuracy

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


async def score(metric, samples):
    return [(await metric.ascore(user_input=m, reference_tool_calls=r)).value for m, r in samples]


path, strict = sys.argv[1], sys.argv[2] == "strict"
with open(path) as fh:
    samples = [sample(json.loads(line)) for line in fh]
metric = ToolCallAccuracy(strict_order=strict)
start = time.perf_counter()
values = asyncio.run(score(metric, samples))
print(json.dumps({"seconds": time.perf_counter() - start, "values": values}))
"""


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


def _peer_python() -> Path:
    """The Python of a virtual environment that holds Ragas, created on first use."""
    home = Path(os.environ.get("AGENTGAUGE_BENCH_PEERS", Path(tempfile.gettempdir())))
    venv = home / "agentgauge-bench-peers" / RAGAS.replace("==", "-")
    python = venv / "bin" / "python"
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", RAGAS, *PEER_PINS], check=True)
        (venv / ".installed").touch()
    return python


def _ours(path: Path, strict: bool) -> tuple[float, list[float | None]]:
    from agentgauge.io.openai_chat import read_openai_chat
    from agentgauge.metrics.trajectory import ToolCallAccuracy
    from agentgauge.model import Trace

    traces = [t for t in read_openai_chat(path) if isinstance(t, Trace)]
    metric = ToolCallAccuracy(strict_order=strict)
    start = time.perf_counter()
    values = [metric.score(t).value for t in traces]
    return time.perf_counter() - start, values


def _theirs(python: Path, script: Path, path: Path, strict: bool) -> tuple[float, list[float]]:
    out = subprocess.run(
        [str(python), str(script), str(path), "strict" if strict else "any"],
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(out.stdout)
    return float(result["seconds"]), [float(v) for v in result["values"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    python = _peer_python()
    load = os.getloadavg()[0]
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chats.jsonl"
        path.write_text("".join(json.dumps(_chat(i, rng)) + "\n" for i in range(args.n)))
        script = Path(tmp) / "peer.py"
        script.write_text(PEER)
        print(
            f"tool_call_accuracy vs Ragas' collections.ToolCallAccuracy ({RAGAS}), "
            f"{args.n:,} chats; load average {load:.1f} -> ",
            end="",
        )
        rows = []
        for strict in (True, False):
            ours, theirs = float("inf"), float("inf")
            values: tuple[list[float | None], list[float]] = ([], [])
            for _ in range(RUNS):  # in alternation: a change of load hits both sides
                seconds, mine = _ours(path, strict)
                ours = min(ours, seconds)
                seconds, peer = _theirs(python, script, path, strict)
                theirs = min(theirs, seconds)
                values = (mine, peer)
            agree = sum(a is not None and abs(a - b) <= 1e-12 for a, b in zip(*values, strict=True))
            rows.append((strict, args.n / ours, args.n / theirs, agree, len(values[1])))
        print(f"{os.getloadavg()[0]:.1f}")
    print(f"{'order':<10}{'ours/s':>10}{'Ragas/s':>10}{'ratio':>8}  values equal")
    for strict, a, b, agree, n in rows:
        order = "strict" if strict else "any"
        print(f"{order:<10}{a:>10,.0f}{b:>10,.0f}{a / b:>8.2f}  {agree}/{n}")


if __name__ == "__main__":
    main()
