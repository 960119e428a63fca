"""Judge throughput: requests/s against a local OpenAI-compatible server with a simulated
latency, at several concurrency limits, and the rate of a rerun served from the cache.

A rubric judge (given evaluation steps, so that every call is a verdict) scores the real ACL
2017 human reviews (each review as the output to judge) through pydantic-ai's OpenAIChatModel
and the real HTTP stack. Each concurrency limit starts from an empty cache; the last run is
then repeated in a fresh process memo over the same SQLite file, which makes no request. One
call made first, untimed, loads pydantic-ai and opens the first connection.

    python bench/bench_judge.py [--latency 0.2] [--concurrency 1 8 32] [--n 120]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from agentgauge.judges import client as judge_client  # noqa: E402
from agentgauge.metrics.base import create_metric  # noqa: E402
from agentgauge.model import Task, Trace  # noqa: E402
from agentgauge.review.loader import load_peerread  # noqa: E402
from judge_server import judge_server  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "peerread"
RUBRIC = {
    "criteria": "The review gives the authors specific, actionable feedback.",
    "steps": ["List the review's concrete suggestions.", "Judge how actionable they are."],
    "inputs": ["output"],
}


def _traces() -> list[Trace]:
    corpus = load_peerread(SHARED, venues=["acl_2017"])
    traces = []
    for paper in corpus.papers:
        task = paper.to_task()
        for i, review in enumerate(task.references):
            traces.append(Trace(id=f"{task.id}#{i}", task=Task(id=task.id), output=review))
    return traces


def _judge(traces: list[Trace], base_url: str, concurrency: int, cache: Path) -> tuple[int, float]:
    """Score the traces (every one must get a value): the calls made and the seconds taken."""
    options = {
        **RUBRIC,
        "model": "judge-model",
        "base_url": base_url,
        "concurrency": concurrency,
        "cache_path": str(cache),
    }
    start = time.perf_counter()
    results = create_metric("rubric", options).score_batch(traces)
    elapsed = time.perf_counter() - start
    assert all(r.value is not None for r in results)
    return sum(not r.details["cached"] for r in results), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--n", type=int, default=120, help="reviews judged per configuration")
    args = parser.parse_args()
    traces = _traces()[: args.n]
    rows = []
    with judge_server() as server, tempfile.TemporaryDirectory() as tmp:
        server.delay_s = args.latency
        _judge(traces[:1], server.base_url, 1, Path(tmp) / "warm-up")  # imports, first connection
        for concurrency in args.concurrency:
            judge_client._MEMO.clear()
            before = len(server.requests)
            live, elapsed = _judge(
                traces, server.base_url, concurrency, Path(tmp) / f"c{concurrency}"
            )
            requests = len(server.requests) - before
            assert requests == live
            rows.append((f"live, concurrency {concurrency}", requests, elapsed))
        judge_client._MEMO.clear()  # a new process: only the SQLite file remains
        before = len(server.requests)
        last = args.concurrency[-1]
        live, elapsed = _judge(traces, server.base_url, last, Path(tmp) / f"c{last}")
        assert live == 0 and len(server.requests) == before
        rows.append(("rerun from the SQLite cache", 0, elapsed))
    print(f"{len(traces)} ACL 2017 reviews, server latency {args.latency:.2f} s per request")
    print(
        f"{'configuration':32} {'requests':>8} {'seconds':>8} {'requests/s':>11} {'reviews/s':>10}"
    )
    for name, requests, elapsed in rows:
        print(
            f"{name:32} {requests:8d} {elapsed:8.2f} {requests / elapsed:11.1f} "
            f"{len(traces) / elapsed:10.1f}"
        )


if __name__ == "__main__":
    main()
