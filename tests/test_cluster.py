"""Distributed runs on a real two-node Ray cluster started by the test (``ray start``, one CPU
per node, stopped by PID): input read by the workers where it lies (JSONL cut into byte ranges,
gzip, Parquet), results written by them as Parquet shards, identical value for value to
``--jobs 1``; every reading command on the run; a killed run resumed shard by shard; the
cluster found through ``RAY_ADDRESS``."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")
pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from typer.testing import CliRunner

from agentgauge.cli import app
from ray_cluster import cluster_env, local_cluster

runner = CliRunner()

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo_traces.jsonl"


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    # a short folder: Ray's socket paths must fit in a Unix socket name
    folder = Path(tempfile.mkdtemp(prefix="ag-ray-", dir="/tmp"))
    with local_cluster(folder) as address:
        yield address


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        env=env or cluster_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _demo_lines(copies: int = 1) -> list[str]:
    lines = DEMO.read_text(encoding="utf-8").splitlines()
    out = []
    for k in range(copies):
        for line in lines:
            trace = json.loads(line)
            trace["id"] = f"{trace['id']}-{k}"
            out.append(json.dumps(trace))
    return out


def _inputs(folder: Path) -> tuple[list[Path], list[Path]]:
    """What the cluster reads: a JSONL file big enough to be cut into several byte ranges,
    with bad lines among good ones; a gzip file (one shard); a Parquet file of traces (one a
    row, three row groups). And the same traces for ``--jobs 1``, the Parquet file's as JSONL.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = _demo_lines()
    lines.insert(5, "{not json")
    lines.insert(20, json.dumps({"id": "no-task", "output": 1}))
    lines.insert(30, "")
    plain = folder / "traces.jsonl"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    packed = folder / "more.jsonl.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(_demo_lines(2)[72:100]) + "\n")
    rows = _demo_lines(3)[150:190]
    parquet = folder / "rows.parquet"
    pq.write_table(pa.table({"trace": rows}), parquet, row_group_size=15)
    same = folder / "rows.parquet.txt"
    same.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return [plain, packed, parquet], [plain, packed, same]


def _document(path: Path, parquet: Path | None = None) -> dict[str, Any]:
    """A run's JSON document without what names the run; a Parquet file's rows named as the
    JSONL file that holds the same traces."""
    text = path.read_text(encoding="utf-8")
    if parquet is not None:
        text = text.replace(json.dumps(str(parquet))[1:-1], json.dumps(f"{parquet}.txt")[1:-1])
    doc = json.loads(text)
    return {k: doc[k] for k in ("samples", "errors", "aggregate", "usage")}


def test_a_cluster_run_is_the_local_run_and_every_command_reads_it(
    cluster: str, tmp_path: Path
) -> None:
    inputs, same = _inputs(tmp_path)
    parquet = inputs[2]
    db = tmp_path / "runs.db"
    local = runner.invoke(
        app,
        ["evaluate", *map(str, same), "--jobs", "1", "--db", str(db), "--no-progress",
         "--json", str(tmp_path / "local.json")],
    )  # fmt: skip
    assert local.exit_code == 0, local.output
    # 160 kB of JSONL cut into 50 kB ranges: four shards; one for the gzip file; three for the
    # Parquet file's row groups
    distributed = _cli(
        "evaluate", str(tmp_path / "*.jsonl"), str(tmp_path / "*.gz"), str(parquet),
        "--executor", "ray", "--ray-address", cluster, "--shard-mb", "0.05", "--db", str(db),
        "--no-progress", "--json", str(tmp_path / "ray.json"),
    )  # fmt: skip
    assert distributed.returncode == 0, distributed.stderr
    ray_doc = _document(tmp_path / "ray.json", parquet)
    local_doc = _document(tmp_path / "local.json")
    assert len(ray_doc["samples"]) == 72 + 28 + 40 and len(ray_doc["errors"]) == 2
    assert ray_doc == local_doc  # value for value: samples, read errors, aggregate, usage

    con = sqlite3.connect(db)
    (local_id,), (ray_id,) = con.execute("SELECT id FROM runs ORDER BY rowid").fetchall()
    place, summary = con.execute(
        "SELECT place, summary FROM runs WHERE id = ?", (ray_id,)
    ).fetchone()
    n_stored = con.execute("SELECT COUNT(*) FROM samples WHERE run_id = ?", (ray_id,)).fetchone()
    con.close()
    assert n_stored == (0,)  # the samples are in the results dataset, not in the store
    assert place == str(tmp_path / "runs-results")
    shards = sorted((tmp_path / "runs-results" / "samples" / f"run={ray_id}").iterdir())
    assert len(shards) == 8 and all(p.name.startswith("part-") for p in shards)
    assert json.loads(summary)["counts"] == {
        "shards": 8, "shards_done": 8, "samples": 140, "read_errors": 2
    }  # fmt: skip

    listed = runner.invoke(app, ["runs", "--db", str(db)])
    assert listed.exit_code == 0 and ray_id in listed.output
    shown = runner.invoke(app, ["show", ray_id, "--db", str(db), "--csv", str(tmp_path / "r.csv")])
    assert shown.exit_code == 0 and "140 samples" in shown.output
    runner.invoke(app, ["show", local_id, "--db", str(db), "--csv", str(tmp_path / "l.csv")])
    csv = (tmp_path / "r.csv").read_text().replace(str(parquet), f"{parquet}.txt")
    assert csv == (tmp_path / "l.csv").read_text()
    compared = runner.invoke(
        app, ["compare", local_id, ray_id, "--db", str(db), "--json", str(tmp_path / "c.json")]
    )
    assert compared.exit_code == 0, compared.output
    comparison = json.loads((tmp_path / "c.json").read_text())
    assert comparison["metrics"]["composite"]["diff"] == 0.0
    for run_id in (local_id, ray_id):
        passk = runner.invoke(app, ["passk", run_id, "--k", "1", "--db", str(db)])
        assert passk.exit_code == 0 and "k=1: pass@k" in passk.output
        out = str(tmp_path / f"{run_id}.otlp")
        exported = runner.invoke(app, ["export-otel", run_id, "--db", str(db), "--out", out])
        assert exported.exit_code == 0, exported.output
    events = [
        re.sub(r'"\w*[tT]imeUnixNano": ?"?\d+"?', "", (tmp_path / f"{r}.otlp").read_text())
        .replace(r, "RUN")
        .replace(str(parquet), f"{parquet}.txt")
        for r in (local_id, ray_id)
    ]
    assert events[0] == events[1] and events[0].count("gen_ai.evaluation.result") > 140

    # the viewer's documents of the run, as its pages ask for them
    from agentgauge.documents.pages import run_document, sample_document, samples_document
    from agentgauge.store import SampleQuery, Store

    def same_names(doc: Any) -> Any:
        text = json.dumps(doc).replace(json.dumps(str(parquet))[1:-1], f"{parquet}.txt")
        return json.loads(text)

    with Store(db) as store:
        pages = []
        for run_id in (local_id, ray_id):
            run = run_document(store, run_id)
            query = SampleQuery(sort="accuracy", descending=True, band="fair")
            page = samples_document(store, run_id, query, offset=2, limit=5)
            sample = sample_document(store, run_id, page["rows"][0]["key"])
            for row in [*page["rows"], sample]:
                del row["seq"]  # a position: the cluster's count per shard
            del sample["run_id"], sample["prev"], sample["next"]
            pages.append(
                same_names([run["metrics"], run["composite"], run["facets"], page, sample])
            )
    assert pages[0] == pages[1] and pages[0][3]["total"] > 5


def test_a_stream_of_traces_is_scored_by_ray_tasks_as_locally(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python API's stream (no files): batches scored by Ray tasks, into the store."""
    for name, value in cluster_env().items():
        if name.startswith("RAY_"):
            monkeypatch.setenv(name, value)
    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, evaluate, iter_sources
    from agentgauge.report.export import result_document
    from agentgauge.store import Store

    suite = load_suite("behavior")
    docs = []
    for executor in ("local", "ray"):
        with Store(tmp_path / f"{executor}.db") as store:
            rid = evaluate(
                iter_sources([DEMO]),
                suite,
                store=store,
                options=EvaluateOptions(
                    jobs=2, progress=False, batch_size=16, executor=executor, ray_address=cluster
                ),
            )
            docs.append(result_document(store, rid))
    assert len(docs[0]["samples"]) == len(docs[1]["samples"]) == 72
    assert docs[0]["samples"] == docs[1]["samples"]
    assert docs[0]["aggregate"] == docs[1]["aggregate"]


def test_a_killed_run_resumes_without_repeating_or_losing_a_shard(
    cluster: str, tmp_path: Path
) -> None:
    for k in range(10):
        lines = _demo_lines(2)[k * 4 : k * 4 + 100]  # enough work a shard to stop it midway
        (tmp_path / f"day{k:02d}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "k.db"
    env = {**cluster_env(), "RAY_ADDRESS": cluster}  # found through the environment
    pattern = str(tmp_path / "day*.jsonl")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "evaluate",
            pattern,
            "--executor",
            "ray",
            "--db",
            str(db),
            "--no-progress",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    folder = tmp_path / "k-results" / "samples"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(folder.glob("run=*/part-*.parquet"))) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    ((run_id, status),) = sqlite3.connect(db).execute("SELECT id, status FROM runs").fetchall()
    assert status == "running"
    time.sleep(3)  # the killed driver's actors end with its job
    before = {p.name: p.stat() for p in folder.glob(f"run={run_id}/part-*.parquet")}
    assert 2 <= len(before) < 10

    resumed = _cli(
        "evaluate",
        "--resume",
        run_id,
        "--db",
        str(db),
        "--no-progress",
        "--json",
        str(tmp_path / "resumed.json"),
        env=env,
    )
    assert resumed.returncode == 0, resumed.stderr
    after = {p.name: p.stat() for p in folder.glob(f"run={run_id}/part-*.parquet")}
    assert len(after) == 10 and not list(folder.glob(f"run={run_id}/.tmp-*"))
    for name, stat in before.items():  # no shard done before the kill was scored again
        assert (after[name].st_ino, after[name].st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    whole = runner.invoke(
        app,
        ["evaluate", *sorted(str(p) for p in tmp_path.glob("day*.jsonl")), "--jobs", "1",
         "--db", str(db), "--no-progress", "--json", str(tmp_path / "whole.json")],
    )  # fmt: skip
    assert whole.exit_code == 0, whole.output
    resumed_doc, whole_doc = (
        _document(tmp_path / "resumed.json"),
        _document(tmp_path / "whole.json"),
    )
    assert len(resumed_doc["samples"]) == 1000
    assert resumed_doc == whole_doc


def test_a_cluster_that_cannot_be_reached_is_one_line_and_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens at
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = tmp_path / "none.db"
    said = (
        f"error: cannot connect to the Ray cluster at 127.0.0.1:{port}: connection refused "
        "(is it started? check --ray-address or RAY_ADDRESS)"
    )
    # RAY_ADDRESS alone, in a process of its own: one line on stderr, nothing on stdout
    env = {**cluster_env(), "RAY_ADDRESS": f"127.0.0.1:{port}"}
    ran = _cli("evaluate", str(DEMO), "--executor", "ray", "--db", str(db), env=env)
    assert (ran.returncode, ran.stderr.splitlines(), ran.stdout) == (2, [said], "")
    # --ray-address, which wins over RAY_ADDRESS
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    given = runner.invoke(
        app,
        ["evaluate", str(DEMO), "--executor", "ray", "--db", str(db),
         "--ray-address", f"127.0.0.1:{port}"],
    )  # fmt: skip
    assert given.exit_code == 2 and given.stderr.splitlines() == [said], given.output
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
