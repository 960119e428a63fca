"""Importer throughput: OTLP/JSON span files (the Collector's file exporter shape) to Traces.

Generates N agent runs by repeating the single-agent fixture (6 spans over 3 export lines,
each run with its own trace and conversation ids), then reads them with the OpenTelemetry
importer and, for scale, reads the same Traces back from native JSONL. Each reader runs in a
fresh process so that its peak memory is its own. Prints a table.

    python bench/bench_import.py [--n 20000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "otel" / "single_agent.json"
TRACE_ID = "5b8aa5a2d2c872e8321cf37308d69df2"


def _generate(path: Path, n: int) -> None:
    lines = FIXTURE.read_text().splitlines()
    with path.open("w") as fh:
        for i in range(n):
            trace_id = f"{i:032x}"
            for line in lines:
                fh.write(line.replace(TRACE_ID, trace_id).replace("conv-42", f"conv-{i}") + "\n")


def _measure(fmt: str, path: str) -> None:
    from agentgauge.io.importers import get_importer
    from agentgauge.model import Trace

    start = time.perf_counter()
    traces = steps = errors = 0
    for item in get_importer(fmt)(path):
        if isinstance(item, Trace):
            traces += 1
            steps += len(item.steps)
        else:
            errors += 1
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {"traces": traces, "steps": steps, "errors": errors, "s": seconds, "mb": peak_mb}
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        _measure(*args.measure)
        return
    from agentgauge.io.jsonl import write_traces
    from agentgauge.io.otel import read_otel

    with tempfile.TemporaryDirectory() as tmp:
        otel = Path(tmp) / "spans.json"
        native = Path(tmp) / "traces.jsonl"
        _generate(otel, args.n)
        write_traces((t for t in read_otel(otel) if not hasattr(t, "message")), native)  # type: ignore[misc]
        print(f"{args.n} agent runs, {args.n * 6} spans in {args.n * 3} OTLP lines")
        print(f"{'reader':<22}{'file MB':>9}{'traces/s':>11}{'spans/s':>11}{'s':>8}{'peak MB':>9}")
        for fmt, path in (("otel", otel), ("native", native)):
            out = subprocess.run(
                [sys.executable, __file__, "--measure", fmt, str(path)],
                check=True,
                capture_output=True,
                text=True,
            )
            r = json.loads(out.stdout)
            assert r["traces"] == args.n and r["errors"] == 0, r
            size = path.stat().st_size / 1e6
            spans = f"{args.n * 6 / r['s']:,.0f}" if fmt == "otel" else "—"
            print(
                f"{fmt:<22}{size:>9.1f}{r['traces'] / r['s']:>11,.0f}{spans:>11}"
                f"{r['s']:>8.2f}{r['mb']:>9.0f}"
            )


if __name__ == "__main__":
    main()
