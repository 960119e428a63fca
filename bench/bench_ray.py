"""Distributed runs on a real Ray cluster beside the local process pool, on the same cores.

The bench starts a two-node Ray cluster on this machine (a head and a second node, one CPU
each, with ``ray start``; stopped by PID at the end) and scores the same generated traces
(the behaviour suite, bench_engine's 10-step traces, split over several JSONL files) with:

- ``evaluate --jobs 2``: the local pool, results in the SQLite store;
- ``evaluate --executor ray``: the cluster's workers read the files, score them and write
  Parquet shards; the driver only counts shards and merges their summaries.

Each run is a fresh process; it prints its wall time, its own peak resident memory (the
driver's) and that of its children, and the time of the run's summary: from the store for the
pool; from the Parquet files for the cluster (the shards' footers merged, and a full scan of
every sample's columns). Then the cluster's driver again on ten times more traces: its memory
must not grow. The load average is printed beside every figure: the machine is shared.

    python bench/bench_ray.py [--n 100000] [--big 1000000] [--files 16]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _generate(folder: Path, n: int, files: int) -> list[Path]:
    """n traces of bench_engine's generator, dealt over ``files`` JSONL files."""
    import random

    from bench_engine import _trace

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"traces-{k:03d}.jsonl" for k in range(files)]
    handles = [p.open("w") for p in paths]
    rng = random.Random(0)
    per = -(-n // files)
    for i in range(n):
        handles[i // per].write(json.dumps(_trace(i, rng)) + "\n")
    for h in handles:
        h.close()
    return paths


def _worker(args: argparse.Namespace) -> None:
    """One run in this process; prints its figures as JSON."""
    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, FileRun, evaluate_files
    from agentgauge.results import ParquetSamples, ResultsFolder, compute_stats, summary_stats
    from agentgauge.store import Store

    paths = json.loads(args.paths)
    db = Path(args.db)
    options = EvaluateOptions(
        jobs=args.jobs,
        executor=args.executor,
        ray_address=args.address,
        progress=False,
        batch_size=256,
        shard_bytes=args.shard_mb << 20,
    )
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with Store(db) as store:
        run_id = evaluate_files(
            FileRun(load_suite("behavior"), paths), store=store, options=options
        )
        seconds = time.perf_counter() - start
        run = store.get_run(run_id)
        out: dict[str, float | int | str] = {"n": run.n_samples, "seconds": seconds}
        out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out["child_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if run.place is None:
            begin = time.perf_counter()
            summary_stats(store, run_id)  # the first summary of the run: computed, then kept
            out["summary_s"] = time.perf_counter() - begin
        else:
            source = ParquetSamples(ResultsFolder(run.place), run)
            begin = time.perf_counter()
            compute_stats(source, run_id, source.merged_stats())
            out["summary_s"] = time.perf_counter() - begin
            begin = time.perf_counter()
            compute_stats(source, run_id)
            out["scan_s"] = time.perf_counter() - begin
            out["results_mb"] = (
                sum(f.stat().st_size for f in Path(run.place).rglob("*.parquet")) / 1e6
            )
            out["shards"] = len(ResultsFolder(run.place).files("samples", run_id))
    out["load"] = (load + os.getloadavg()[0]) / 2
    print(json.dumps(out))


def _run(paths: list[Path], db: Path, **how: str | int) -> dict[str, float]:
    """A run in a fresh process (its peak memory its own)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(db.with_name(f"{db.stem}-results"), ignore_errors=True)
    cmd = [sys.executable, __file__, "--worker", "--db", str(db)]
    cmd += ["--paths", json.dumps([str(p) for p in paths])]
    for key, value in how.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    from ray_cluster import cluster_env

    done = subprocess.run(cmd, capture_output=True, text=True, env=cluster_env())
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--big", type=int, default=1_000_000, help="0 skips the large run")
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--shard-mb", type=int, default=16)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--db")
    parser.add_argument("--paths")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--executor", default="local")
    parser.add_argument("--address")
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    if args.worker:
        _worker(args)
        return
    from ray_cluster import local_cluster

    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="agb-", dir="/tmp") as tmp:
        folder = Path(tmp)
        paths = _generate(folder / "small", args.n, args.files)
        size_mb = sum(p.stat().st_size for p in paths) / 1e6
        with local_cluster(folder / "cluster") as address:
            ray = {"executor": "ray", "address": address, "shard_mb": args.shard_mb}
            # alternated, so that both see the same load
            for name, db, how in (
                ("pool", "pool.db", {"jobs": 2}),
                ("cluster", "ray.db", ray),
                ("pool_2", "pool.db", {"jobs": 2}),
                ("cluster_2", "ray.db", ray),
            ):
                figures[name] = _run(paths, folder / db, **how)
                print(name, json.dumps(figures[name]), file=sys.stderr, flush=True)
            if args.big:
                shutil.rmtree(folder / "small")
                big = _generate(folder / "big", args.big, args.files)
                figures["cluster_big"] = _run(big, folder / "big.db", **ray)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    _print(figures, args, size_mb)


def _print(figures: dict[str, dict[str, float]], args: argparse.Namespace, size_mb: float) -> None:
    print(
        f"behaviour suite, bench_engine's 10-step traces in {args.files} JSONL files "
        f"({args.n:,} traces: {size_mb:.0f} MB); a Ray cluster of two nodes of one CPU each "
        f"beside the local pool of two processes, on {os.cpu_count()} cores"
    )
    head = f"{'run':<34}{'traces':>10}{'traces/s':>10}{'driver MB':>11}{'summary s':>11}"
    print(head + f"{'load':>7}")
    for name, r in figures.items():
        label = {
            "pool": "evaluate --jobs 2 (SQLite)",
            "pool_2": "evaluate --jobs 2 (SQLite), again",
            "cluster": "evaluate --executor ray (Parquet)",
            "cluster_2": "evaluate --executor ray, again",
            "cluster_big": "evaluate --executor ray (Parquet)",
        }[name]
        print(
            f"{label:<34}{r['n']:>10,.0f}{r['n'] / r['seconds']:>10,.0f}{r['rss_mb']:>11.0f}"
            f"{r['summary_s']:>11.2f}{r['load']:>7.1f}"
        )
    pool = [figures[k] for k in ("pool", "pool_2")]
    cluster = [figures[k] for k in ("cluster", "cluster_2")]
    rate = lambda rs: sum(r["n"] for r in rs) / sum(r["seconds"] for r in rs)  # noqa: E731
    print(f"cluster / pool throughput on the same cores: {rate(cluster) / rate(pool):.2f}x")
    per_core = rate(cluster) / 2
    print(f"cluster throughput per core: {per_core:,.0f} traces/s")
    for r in cluster[:1] + ([figures["cluster_big"]] if "cluster_big" in figures else []):
        print(
            f"{r['n']:,.0f} traces on the cluster: summary from the shards' footers "
            f"{r['summary_s']:.2f} s, from a scan of every sample {r['scan_s']:.1f} s; "
            f"{r['shards']:.0f} shards, {r['results_mb']:.0f} MB of Parquet "
            f"({r['results_mb'] * 1e6 / r['n']:,.0f} bytes a trace)"
        )
    if "cluster_big" in figures:
        small, big = figures["cluster"], figures["cluster_big"]
        growth = big["rss_mb"] / small["rss_mb"] - 1
        print(
            f"driver peak memory: {small['rss_mb']:.0f} MB at {small['n']:,.0f} traces, "
            f"{big['rss_mb']:.0f} MB at {big['n']:,.0f} ({growth:+.0%})"
        )
        _capacity(small, big, size_mb * 1e6 / args.n)


def _capacity(small: dict[str, float], big: dict[str, float], input_bytes: float) -> None:
    """The plan for 10^9 traces from the two cluster runs: the rate beyond a run's fixed start
    (the difference of the two runs), per core, and the bytes a trace takes."""
    rate = (big["n"] - small["n"]) / (big["seconds"] - small["seconds"])
    fixed = max(0.0, small["seconds"] - small["n"] / rate)
    per_core = rate / 2
    core_hours = 1e9 / per_core / 3600
    stored = big["results_mb"] * 1e6 / big["n"]
    footer_s = big["summary_s"] / big["shards"]
    print(
        f"cluster beyond a run's start: {rate:,.0f} traces/s, {per_core:,.0f} a core; "
        f"a run's fixed start and finish: {fixed:.0f} s"
    )
    print(
        f"10^9 traces: {core_hours:,.0f} core-hours ({core_hours / 24:,.0f} cores for a day, "
        f"{core_hours:,.0f} for an hour); input {input_bytes * 1e9 / 1e12:.1f} TB of JSONL, "
        f"results {stored * 1e9 / 1e12:.2f} TB of Parquet; the summary merges "
        f"{footer_s * 1e3:.1f} ms of footer a shard"
    )


if __name__ == "__main__":
    main()
