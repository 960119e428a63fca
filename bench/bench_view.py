"""The viewer and the HTML report on large runs.

Scores ``--n`` generated 10-step traces (behaviour suite) into a store, serves the viewer on
127.0.0.1 and times its API as the page calls it: the runs list, a run's page (the first read,
then the kept document), a page of samples filtered (category, composite range, band) and
sorted by a metric, and one sample's page (p50/p95 over repeated requests). Then writes the
HTML report of a ``--report-n``-sample run and prints its size and generation time.

    python bench/bench_view.py [--n 100000] [--report-n 10000] [--repeats 30]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

WORDS = (
    "the result is therefore clear because the data shows growth however costs rose "
    "thus we recommend the plan since it is safe"
).split()
TOOLS = ("search", "calculator", "weather", "lookup")
CATEGORIES = ("knowledge", "reasoning", "tool_use", "planning")


def _trace(i: int, rng: random.Random) -> dict[str, object]:
    steps: list[dict[str, object]] = []
    for j in range(10):
        if j % 3 == 1:
            call = {"name": rng.choice(TOOLS), "arguments": {"q": f"query {i}", "k": j}}
            steps.append(
                {"index": j, "kind": "tool_call", "agent": "agent", "tool_call": call}
                | {"duration_s": round(rng.uniform(0.05, 0.5), 3)}
            )
        elif j % 3 == 2:
            steps.append({"index": j, "kind": "tool_result", "result": {"value": rng.random()}})
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(20))
            steps.append(
                {"index": j, "kind": "llm", "agent": "agent", "content": text}
                | {"duration_s": round(rng.uniform(0.1, 2.0), 3)}
            )
    return {
        "id": f"bench-{i}",
        "task": {
            "id": f"task-{i % 2000}",
            "input": {"question": f"question {i} about growth"},
            "expected_output": {"answer": i % 7, "unit": "m"},
            "category": CATEGORIES[i % len(CATEGORIES)],
        },
        "output": {"answer": i % 7 if rng.random() < 0.7 else -1, "unit": "m"},
        "steps": steps[: rng.randint(3, 10)],
    }


def _store(folder: Path, n: int) -> tuple[Path, str]:
    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, evaluate, iter_sources
    from agentgauge.store import Store

    path = folder / f"traces-{n}.jsonl"
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(_trace(i, rng)) + "\n")
    db = folder / f"view-{n}.db"
    start = time.perf_counter()
    with Store(db) as store:
        run_id = evaluate(
            iter_sources([path]),
            load_suite("behavior"),
            store=store,
            options=EvaluateOptions(jobs=2, progress=False, batch_size=512),
        )
    print(f"scored {n:,} traces into {db.name} in {time.perf_counter() - start:.0f} s")
    return db, run_id


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=600) as response:
        return bytes(response.read())


def _timed(fetch: Callable[[], bytes], repeats: int) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        size = len(fetch())
        times.append((time.perf_counter() - start) * 1000)
    return times, size


def _row(label: str, times: list[float], size: int) -> None:
    p50 = statistics.median(times)
    p95 = sorted(times)[max(0, round(0.95 * len(times)) - 1)]
    print(f"{label:<52}{p50:>9.1f}{p95:>9.1f}{size / 1e3:>10.1f}")


def _bench_viewer(db: Path, run_id: str, n: int, repeats: int) -> None:
    from agentgauge.web.app import serving

    with serving(db) as url:
        api = f"{url}api/"
        first_start = time.perf_counter()
        _get(f"{api}run?id={run_id}")
        first = (time.perf_counter() - first_start) * 1000
        filtered = urllib.parse.urlencode(
            {
                "run": run_id,
                "category": "reasoning",
                "band": "fair",
                "range": "composite:0.5:0.8",
                "sort": "efficiency",
                "desc": "1",
                "offset": 100,
                "limit": 50,
            }
        )
        key = json.loads(_get(f"{api}samples?run={run_id}&limit=1"))["rows"][0]["key"]
        cases = [
            ("runs list", f"{api}runs"),
            ("run page (summary kept after the first read)", f"{api}run?id={run_id}"),
            ("samples page, no filter (page 1 of 50)", f"{api}samples?run={run_id}"),
            ("samples page, filtered and sorted by a metric", f"{api}samples?{filtered}"),
            ("samples page, search by id", f"{api}samples?run={run_id}&search=bench-4242"),
            ("one sample's page (trace, metrics)", f"{api}sample?run={run_id}&key={quote(key)}"),
        ]
        print(f"\nviewer on a {n:,}-sample run, {repeats} requests each (127.0.0.1, one client)")
        print(f"{'request':<52}{'p50 ms':>9}{'p95 ms':>9}{'kB':>10}")
        print(f"{'run page, first read (summary computed)':<52}{first:>9.0f}{'—':>9}{'':>10}")
        for label, target in cases:
            times, size = _timed(lambda target=target: _get(target), repeats)
            _row(label, times, size)


def _bench_report(db: Path, run_id: str, n: int) -> None:
    from agentgauge.report.html import write_html
    from agentgauge.store import Store

    out = db.with_suffix(".html")
    start = time.perf_counter()
    with Store(db) as store:
        write_html(store, run_id, out)
    seconds = time.perf_counter() - start
    print(
        f"\nHTML report of a {n:,}-sample run: {out.stat().st_size / 1e6:.1f} MB in {seconds:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--report-n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db, run_id = _store(folder, args.n)
        _bench_viewer(db, run_id, args.n, args.repeats)
        small_db, small_id = _store(folder, args.report_n)
        _bench_report(small_db, small_id, args.report_n)


if __name__ == "__main__":
    main()
