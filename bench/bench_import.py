"""Importer throughput: OTLP/JSON span files (the Collector's file exporter shape) to Traces.

Two exports, each repeated with its own trace (and conversation) ids per run:
- the hand-written single-agent fixture (6 spans over 3 export lines), --n runs;
- the layered export written by the real instrumentations (a tool loop recorded by
  OpenInference, OpenLLMetry and the official OpenAI instrumentation at once under an HTTP
  span: 7 spans, 9 GenAI log records, 2 model calls to merge), --layered runs.

Each file is read by the OpenTelemetry importer and, for scale, by ``json.loads`` alone on
every line (the floor of any JSON reader); the single-agent runs are also read back from
native JSONL. Each reader runs in a fresh process so that its peak memory is its own. Prints
a table.

    python bench/bench_import.py [--n 20000] [--layered 10000]
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

TESTS = Path(__file__).resolve().parents[1] / "tests"
FIXTURE = TESTS / "data" / "otel" / "single_agent.json"
TRACE_ID = "5b8aa5a2d2c872e8321cf37308d69df2"
LAYERED = TESTS / "fixtures" / "otel" / "layered.jsonl"
LAYERED_TRACE_ID = "ba8feaab6506d164e11ec1dbbc9a8a20"


def _generate(path: Path, n: int, fixture: Path = FIXTURE, trace_id: str = TRACE_ID) -> None:
    """``n`` copies of a fixture's lines, each run with its own trace and conversation ids."""
    lines = fixture.read_text().splitlines()
    with path.open("w") as fh:
        for i in range(n):
            for line in lines:
                line = line.replace(trace_id, f"{i:032x}").replace("conv-42", f"conv-{i}")
                fh.write(line + "\n")


def _measure(fmt: str, path: str) -> None:
    from agentgauge.io.importers import get_importer
    from agentgauge.model import Trace

    start = time.perf_counter()
    traces = steps = errors = 0
    if fmt == "json.loads":
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                json.loads(line)
        traces = -1  # no traces: the parse alone
    else:
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


def _row(label: str, fmt: str, path: Path, n: int, spans_per_run: int | None) -> None:
    """Read ``path`` in a fresh process and print one line of the table."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", fmt, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    r = json.loads(out.stdout)
    assert r["traces"] in (n, -1) and r["errors"] == 0, r
    size = path.stat().st_size / 1e6
    spans = f"{n * spans_per_run / r['s']:,.0f}" if spans_per_run else "—"
    print(f"{label:<22}{size:>9.1f}{n / r['s']:>11,.0f}{spans:>11}{r['s']:>8.2f}{r['mb']:>9.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--layered", type=int, default=10000)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        _measure(*args.measure)
        return
    from agentgauge.io.jsonl import write_traces
    from agentgauge.io.otel import read_otel

    header = f"{'reader':<22}{'file MB':>9}{'traces/s':>11}{'spans/s':>11}{'s':>8}{'peak MB':>9}"
    with tempfile.TemporaryDirectory() as tmp:
        otel = Path(tmp) / "spans.json"
        native = Path(tmp) / "traces.jsonl"
        _generate(otel, args.n)
        write_traces((t for t in read_otel(otel) if not hasattr(t, "message")), native)  # type: ignore[misc]
        print(f"single agent: {args.n} runs, {args.n * 6} spans in {args.n * 3} OTLP lines")
        print(header)
        _row("otel", "otel", otel, args.n, 6)
        _row("json.loads alone", "json.loads", otel, args.n, 6)
        _row("native", "native", native, args.n, None)
        otel.unlink()
        layered = Path(tmp) / "layered.json"
        _generate(layered, args.layered, LAYERED, LAYERED_TRACE_ID)
        print()
        print(
            f"layered: {args.layered} runs, {args.layered * 7} spans (2 model calls recorded "
            f"3 times each) and {args.layered * 9} log records in {args.layered * 8} OTLP lines"
        )
        print(header)
        _row("otel", "otel", layered, args.layered, 7)
        _row("json.loads alone", "json.loads", layered, args.layered, 7)


if __name__ == "__main__":
    main()
