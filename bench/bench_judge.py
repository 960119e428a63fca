"""Judge plumbing: calls/s against a local OpenAI-compatible server with a simulated latency.

Runs the constructiveness judge over the real ACL 2017 human reviews (each review judged as
the generated one) through pydantic-ai's OpenAIChatModel and the real HTTP stack, one call at a
time and with several concurrent calls, then reruns the batch from the SQLite cache (a fresh
process memo, the same file). Prints a table; the latency is the server's sleep per request.

    python bench/bench_judge.py [--latency 0.2] [--concurrency 8]
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


def _traces() -> list[Trace]:
    corpus = load_peerread(SHARED, venues=["acl_2017"])
    traces = []
    for paper in corpus.papers:
        task = paper.to_task()
        for i, review in enumerate(task.references):
            traces.append(Trace(id=f"{task.id}#{i}", task=Task(id=task.id), output=review))
    return traces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--n", type=int, default=120, help="reviews judged per configuration")
    args = parser.parse_args()
    traces = _traces()[: args.n]
    rows = []
    with judge_server() as server, tempfile.TemporaryDirectory() as tmp:
        server.delay_s = args.latency
        for concurrency in (1, args.concurrency):
            judge_client._MEMO.clear()
            options = {
                "model": "judge-model",
                "base_url": server.base_url,
                "concurrency": concurrency,
                "cache_path": str(Path(tmp) / f"c{concurrency}.db"),
            }
            before = len(server.requests)
            start = time.perf_counter()
            results = create_metric("constructiveness", options).score_batch(traces)
            elapsed = time.perf_counter() - start
            assert all(r.value is not None for r in results)
            calls = len(server.requests) - before
            rows.append((f"live, concurrency {concurrency}", calls, elapsed))
        judge_client._MEMO.clear()
        before = len(server.requests)
        start = time.perf_counter()
        results = create_metric("constructiveness", options).score_batch(traces)
        elapsed = time.perf_counter() - start
        assert all(r.details["cached"] for r in results)
        rows.append(("rerun from the SQLite cache", len(server.requests) - before, elapsed))
    print(f"{len(traces)} ACL 2017 reviews, server latency {args.latency:.2f} s per request")
    print(f"{'configuration':32} {'requests':>8} {'seconds':>8} {'reviews/s':>10}")
    for name, requests, elapsed in rows:
        print(f"{name:32} {requests:8d} {elapsed:8.2f} {len(traces) / elapsed:10.1f}")


if __name__ == "__main__":
    main()
