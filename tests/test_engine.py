"""The engine on a real SQLite file: batches, process pool, failure isolation, resume."""

import gc
import json
import os
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from agentgauge.config import Suite, load_suite
from agentgauge.engine import EvaluateOptions, evaluate, iter_sources, score_traces
from agentgauge.judges.settings import JudgeSettings
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.metrics.behavior import NOTHING_RECORDED
from agentgauge.model import Step, Task, Trace
from agentgauge.report.export import result_document, write_result_json
from agentgauge.store import _MIGRATIONS, SCHEMA_VERSION, Store, StoreError, redact_secrets

CALLS: list[str] = []


@metric("test_step_share")
def _step_share(trace: Trace, *, cap: int = 10) -> MetricResult:
    CALLS.append(trace.id)
    if trace.task.id == "explode":
        raise RuntimeError("metric bug")
    return MetricResult(value=min(1.0, len(trace.steps) / cap), details={"n": len(trace.steps)})


@metric("test_has_output")
def _has_output(trace: Trace) -> MetricResult:
    if trace.output is None:
        return MetricResult.missing("no output")
    return MetricResult(value=1.0)


SUITE = Suite(
    name="t",
    metrics=["test_step_share", "test_has_output"],
    weights={"test_step_share": 0.75, "test_has_output": 0.25},
)


def _trace(i: int) -> dict[str, object]:
    return {
        "id": f"r{i}",
        "task": {"id": "explode" if i % 50 == 7 else f"t{i % 3}"},
        "output": None if i % 10 == 0 else "done",
        "steps": [{"index": j, "kind": "llm", "content": "x"} for j in range(i % 12)],
    }


def _write(path: Path, n: int, bad: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(_trace(i)) for i in range(n)]
    for idx, text in (bad or {}).items():
        lines[idx] = text
    path.write_text("\n".join(lines) + "\n")
    return path


def test_score_traces_composite_and_isolated_failure() -> None:
    traces = [Trace.model_validate(_trace(i)) for i in (7, 10, 11)]
    s_explode, s_no_output, s_ok = score_traces(traces, SUITE)
    # r7: step_share raised -> None with the error; has_output 1.0 -> composite 1.0, coverage .25
    assert s_explode.values == {"test_step_share": None, "test_has_output": 1.0}
    assert "RuntimeError: metric bug" in (s_explode.error or "")
    assert s_explode.composite == 1.0 and s_explode.coverage == pytest.approx(0.25)
    # r10: 10 steps -> 1.0; no output -> None; composite = 1.0, coverage .75
    assert s_no_output.values["test_has_output"] is None
    assert s_no_output.reasons["test_has_output"] == "no output"
    assert s_no_output.composite == 1.0 and s_no_output.coverage == pytest.approx(0.75)
    # r11: 11 steps -> min(1, 1.1) = 1.0, output -> 1.0
    assert s_ok.composite == 1.0 and s_ok.recommendation == "accept" and s_ok.band == "excellent"


@metric("test_collector_state")
def _collector_state(trace: Trace) -> MetricResult:
    return MetricResult(value=1.0 if gc.isenabled() else 0.0)


@pytest.mark.parametrize("enabled", [True, False])
def test_scoring_pauses_the_garbage_collector_and_restores_it(enabled: bool) -> None:
    suite = Suite(name="gc", metrics=["test_collector_state"])
    trace = Trace.model_validate(_trace(1))
    if not enabled:
        gc.disable()
    try:
        [sample] = score_traces([trace], suite)
        assert gc.isenabled() is enabled  # as it was before
    finally:
        gc.enable()
    assert sample.values["test_collector_state"] == 0.0  # paused while the metrics ran


@pytest.mark.parametrize("jobs", [1, 2])
def test_evaluate_streams_files_and_records_bad_lines(tmp_path: Path, jobs: int) -> None:
    path = _write(tmp_path / "t.jsonl", 300, {4: "{oops", 9: json.dumps({"id": "no-task"})})
    with Store(tmp_path / "r.db") as store:
        run_id = evaluate(
            iter_sources([path]),
            SUITE,
            store=store,
            options=EvaluateOptions(jobs=jobs, progress=False, batch_size=16, sources=[str(path)]),
        )
        doc = result_document(store, run_id)
        # the streamed file is the same document (plus the extra keys and the sample hook)
        written = tmp_path / "streamed.json"

        def mark(sample: dict[str, Any]) -> None:
            sample["seen"] = True

        write_result_json(store, run_id, written, extra={"note": "x"}, sample_hook=mark)
    streamed = json.loads(written.read_text(encoding="utf-8"))
    assert streamed.pop("note") == "x"
    assert all(s.pop("seen") for s in streamed["samples"])
    assert streamed == json.loads(json.dumps(doc))
    assert doc["status"] == "completed"
    assert len(doc["samples"]) == 298
    assert [(e["line"], e["field"]) for e in doc["errors"]] == [(5, None), (10, "task")]
    assert [s["id"] for s in doc["samples"]][:5] == ["r0", "r1", "r2", "r3", "r5"]
    exploded = [s for s in doc["samples"] if s["task_id"] == "explode"]
    assert len(exploded) == 6 and all("metric bug" in s["error"] for s in exploded)
    values = [s["metrics"]["test_step_share"] for s in doc["samples"]]
    expected = [min(1.0, (i % 12) / 10) for i in range(300) if i not in (4, 9) and i % 50 != 7]
    assert [v for v in values if v is not None] == pytest.approx(expected)
    agg = doc["aggregate"]["test_step_share"]
    assert agg["n"] == 292 and agg["n_missing"] == 6
    assert agg["mean"] == pytest.approx(sum(expected) / len(expected))
    assert agg["ci_low"] < agg["mean"] < agg["ci_high"]


def test_jobs_do_not_change_results(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", 200)
    docs = []
    for jobs in (1, 2):
        with Store(tmp_path / f"{jobs}.db") as store:
            rid = evaluate(
                iter_sources([path]),
                SUITE,
                store=store,
                options=EvaluateOptions(jobs=jobs, progress=False, batch_size=7),
            )
            docs.append(result_document(store, rid))
    strip = [[{k: v for k, v in s.items()} for s in d["samples"]] for d in docs]
    assert strip[0] == strip[1]
    assert docs[0]["aggregate"] == docs[1]["aggregate"]


def test_resume_skips_what_is_stored(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", 100, {3: "{bad"})
    db = tmp_path / "r.db"
    with Store(db) as store:
        rid = evaluate(
            iter_sources([path]),
            SUITE,
            store=store,
            options=EvaluateOptions(jobs=1, progress=False, batch_size=10),
        )
        # simulate a run that stopped after its first batches
        db = store.connection
        db.execute(
            "DELETE FROM sample_metrics WHERE run_id = ? AND sample_key IN "
            "(SELECT key FROM samples WHERE run_id = ? AND seq >= 40)",
            (rid, rid),
        )
        db.execute("DELETE FROM samples WHERE run_id = ? AND seq >= 40", (rid,))
        keys = [f"{path}#{line}" for line in range(1, 200)]
        before = store.done_among(rid, keys)
        assert len(before) == 40  # 39 samples and the bad line 4
        seen: list[str] = []

        def watch(items):  # type: ignore[no-untyped-def]
            for item in items:
                seen.append(item.key)
                yield item

        CALLS.clear()
        evaluate(
            watch(iter_sources([path])),
            SUITE,
            store=store,
            options=EvaluateOptions(run_id=rid, resume=True, jobs=1, progress=False, batch_size=10),
        )
        doc = result_document(store, rid)
    assert seen == [f"{path}#{n}" for n in range(1, 101)]
    assert set(CALLS) == {f"r{i}" for i in range(40, 100)}  # only the lost samples rescored
    assert len(doc["samples"]) == 99 and len(doc["errors"]) == 1
    assert len({s["id"] for s in doc["samples"]}) == 99


def test_in_memory_traces_and_secret_redaction(tmp_path: Path) -> None:
    traces = [
        Trace(
            id=f"m{i}",
            task=Task(id="t"),
            output="ok",
            steps=[Step(index=0, kind="llm", content="<b>hi</b>")],
        )
        for i in range(3)
    ]
    with Store(tmp_path / "r.db") as store:
        rid = evaluate(
            traces,
            SUITE,
            store=store,
            options=EvaluateOptions(
                jobs=1,
                progress=False,
                extra_config={"judge": {"api_key": "sk-secret", "api_key_env": "KEY"}},
            ),
        )
        run = store.get_run(rid)
        doc = result_document(store, rid)
        raw = b"".join(
            bytes(str(row), "utf-8") for row in store.connection.execute("SELECT * FROM runs")
        )
    assert run.config["judge"] == {"api_key": "***", "api_key_env": "KEY"}
    assert b"sk-secret" not in raw
    assert [s["id"] for s in doc["samples"]] == ["m0", "m1", "m2"]


def test_workers_store_what_one_process_stores_secrets_redacted(tmp_path: Path) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    lines = [
        json.dumps(
            {
                "id": f"w{i}",
                "task": {"id": "t", "category": "tool_use"},
                "output": f"the key is {key}" if i % 3 == 0 else "done",
                "steps": [{"index": 0, "kind": "llm", "content": f"step {i}"}],
            }
        )
        for i in range(30)
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([*lines[:10], "{not json", *lines[10:]]) + "\n")
    suite = load_suite("behavior")
    stored = []
    for jobs in (1, 2):
        db = tmp_path / f"jobs{jobs}.db"
        with Store(db) as store:
            rid = evaluate(
                iter_sources([path]),
                suite,
                store=store,
                options=EvaluateOptions(jobs=jobs, progress=False, batch_size=4, run_id="r"),
            )
            rows = store.connection.execute(
                "SELECT key, seq, composite, details, trace, usage, category FROM samples "
                "WHERE run_id = ? ORDER BY seq",
                (rid,),
            ).fetchall()
            values = store.connection.execute(
                "SELECT * FROM sample_metrics ORDER BY sample_key, part"
            ).fetchall()
            errors = store.connection.execute("SELECT * FROM read_errors").fetchall()
        stored.append(([tuple(r) for r in rows], [tuple(v) for v in values], errors))
        assert key.encode() not in db.read_bytes()
    assert stored[0] == stored[1]
    rows, values, errors = stored[0]
    # one row of values per sample, with a value (or None) of every metric
    assert len(rows) == len(values) == 30
    assert {v[3] for v in values} == {2 ** len(suite.metrics) - 1}
    traces = [zlib.decompress(r[4]).decode() for r in rows]  # compressed: read them whole
    assert not any(key in t for t in traces)
    hidden = "the key is [credential hidden]"
    assert [json.loads(t)["output"] for t in traces][:4] == [hidden, "done", "done", hidden]
    assert [tuple(e)[1:3] for e in errors] == [(str(path), 11)]
    # the safety metric saw the key in the output; the store keeps its finding, not the key
    unsafe = [json.loads(r[3])["safety"]["output_unsafe"] for r in rows]
    assert unsafe == [i % 3 == 0 for i in range(30)]


def test_redaction_keeps_counts_and_hides_url_credentials() -> None:
    config = {
        "judge": {
            "access_token": "tok-1",
            "Authorization": "Bearer x",
            "client_secret": "s",
            "max_tokens": 512,
            "input_tokens": 10,
            "tokenizer": "bert",
            "base_url": "https://alice:pa55@llm.example/v1",
            "endpoints": ["http://bob:pw@host:8000/v1", "http://host/v1?q=a@b"],
            "judge_url": "see http://h:9/v1?api_key=QS&model=m&token=T for details",
            "auth_header": "Bearer abc",
            "pass": "pw",
            "passage": "kept",
        }
    }
    assert redact_secrets(config)["judge"] == {
        "access_token": "***",
        "Authorization": "***",
        "client_secret": "***",
        "max_tokens": 512,
        "input_tokens": 10,
        "tokenizer": "bert",
        "base_url": "https://***@llm.example/v1",
        "endpoints": ["http://***@host:8000/v1", "http://host/v1?q=a@b"],
        "judge_url": "see http://h:9/v1?api_key=***&model=m&token=*** for details",
        "auth_header": "***",
        "pass": "***",
        "passage": "kept",
    }


def test_a_version_1_store_finds_a_pages_values_by_their_primary_key(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as old:
        old.executescript(f"{_MIGRATIONS[1]}; PRAGMA user_version = 1;")
    with Store(db) as store:
        version = store.connection.execute("PRAGMA user_version").fetchone()[0]
        plan = store.connection.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM sample_metrics "
            "WHERE run_id = 'r' AND part = 0 AND sample_key IN ('k', 'j')"
        ).fetchall()
    assert version == SCHEMA_VERSION
    # a page of samples' values are found by one seek each, not by scanning the whole run
    assert "PRIMARY KEY (run_id=? AND part=? AND sample_key=?)" in str([tuple(r) for r in plan])


@metric("test_build_log")
class _BuildLog:
    """Writes the id of the process that builds it to ``log``, one line per build."""

    def __init__(self, *, log: str = "", tag: int = 0) -> None:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {tag}\n")

    def score(self, trace: Trace) -> MetricResult:
        return MetricResult(value=1.0)


def test_a_suite_is_built_once_per_process_workers_included(tmp_path: Path) -> None:
    log = tmp_path / "builds.txt"
    suite_file = tmp_path / "s.toml"
    suite_file.write_text(
        f'metrics = ["test_build_log"]\n[options.test_build_log]\nlog = "{log}"\n'
    )
    suite = load_suite(suite_file)  # builds to check the options
    data = _write(tmp_path / "t.jsonl", 60)
    for _ in range(2):  # a second run of the same suite builds nothing either
        with Store(tmp_path / "r.db") as store:
            options = EvaluateOptions(jobs=2, progress=False, batch_size=5)
            run_id = evaluate(iter_sources([data]), suite, store=store, options=options)
            assert store.get_run(run_id).n_samples == 60
    # one build, in this process: the forked workers scored with their parent's metrics
    assert log.read_text().splitlines() == [f"{os.getpid()} 0"]
    # the same suite read again, or sent as JSON, is the same suite
    Suite.model_validate_json(load_suite(suite_file).model_dump_json()).build_metrics()
    assert len(log.read_text().splitlines()) == 1
    # other options, another suite
    other = suite.model_copy(update={"options": {"test_build_log": {"log": str(log), "tag": 1}}})
    other.build_metrics()
    other.build_metrics()
    assert log.read_text().splitlines()[1:] == [f"{os.getpid()} 1"]


def test_a_suite_whose_judge_has_a_budget_is_built_anew_for_each_run() -> None:
    budgeted = Suite(
        name="j",
        metrics=["planning_judge"],
        judge=JudgeSettings(model="test", max_calls=3),
    )
    first, second = budgeted.build_metrics(), budgeted.build_metrics()
    assert first[0] is not second[0]
    free = budgeted.model_copy(update={"judge": JudgeSettings(model="test")})
    assert free.build_metrics()[0] is free.build_metrics()[0]


def test_a_version_4_store_gains_the_bertscore_cache(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with Store(db) as store:
        run_id = store.create_run(kind="evaluate", suite="behavior", config={})
        store.connection.executescript(
            "DROP TABLE embedding_cache; DROP TABLE bertscore_cache; "
            "ALTER TABLE runs DROP COLUMN place; ALTER TABLE runs DROP COLUMN summary; "
            "DROP TABLE run_metrics; DROP TABLE sample_metrics; "
            "CREATE TABLE metric_values (run_id TEXT NOT NULL, sample_key TEXT NOT NULL, "
            "metric TEXT NOT NULL, value REAL, reason TEXT, error TEXT, "
            "PRIMARY KEY (run_id, metric, sample_key)) WITHOUT ROWID; "
            "PRAGMA user_version = 4;"
        )
    with Store(db) as store:
        assert store.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert store.get_run(run_id).kind == "evaluate"  # the runs are kept
        rows = [(b"d1", b"\x01\x00\x00\x00", b"\x00\x00\x80\x3f")]
        store.cache_embeddings("m", 6, rows)
        store.cache_embeddings("m", 6, [(b"d1", b"other", b"other")])  # the first one stays
        assert store.cached_embeddings("m", 6, [b"d1", b"d2"]) == {b"d1": rows[0][1:]}
        assert store.cached_embeddings("m", 5, [b"d1"]) == {}  # another layer
        store.cache_scores([(b"k", 0.5, 0.25, 1 / 3)])
        assert store.cached_scores([b"k", b"j"]) == {b"k": (0.5, 0.25, 1 / 3)}


def test_a_version_5_store_keeps_its_samples_in_a_rowid_table(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as old:
        old.executescript(
            ";".join(_MIGRATIONS[v] for v in range(1, 6)) + "; PRAGMA user_version = 5;"
        )
        old.execute(
            "INSERT INTO runs VALUES ('r', 'evaluate', 'behavior', '{}', '[]', 'completed', "
            "'2026-01-01T00:00:00+00:00', NULL)"
        )
        for seq, key in enumerate(["b#2", "a#1", "c#3"]):
            old.execute(
                "INSERT INTO samples (run_id, key, seq, trace_id, task_id, composite, coverage, "
                "details, category) VALUES ('r', ?, ?, ?, 't', ?, 1.0, '{}', 'math')",
                (key, seq, f"id{seq}", seq / 4),
            )
            old.execute(
                "INSERT INTO metric_values VALUES ('r', ?, 'accuracy', ?, NULL, NULL)",
                (key, seq / 4),
            )
    with Store(db) as store:
        con = store.connection
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        indexes = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert "samples_seq" not in indexes and {"samples_view", "samples_failed"} <= indexes
        # a rowid table now, whose rows keep the run's order
        assert [r[0] for r in con.execute("SELECT key FROM samples ORDER BY rowid")] == [
            "b#2",
            "a#1",
            "c#3",
        ]
        samples = list(store.iter_samples("r"))
        assert [(s.key, s.seq, s.composite, s.category) for s in samples] == [
            ("b#2", 0, 0.0, "math"),
            ("a#1", 1, 0.25, "math"),
            ("c#3", 2, 0.5, "math"),
        ]
        assert [m.value for s in samples for m in s.metrics] == [0.0, 0.25, 0.5]
        # (run, key) stays unique: writing a sample again replaces it
        again = samples[1]._replace(composite=1.0, details={})
        store.write_batch("r", [again])
        assert [s.composite for s in store.iter_samples("r")] == [0.0, 1.0, 0.5]
        assert store.get_sample("r", "a#1").composite == 1.0


def test_deleting_a_run_removes_all_of_it_and_nothing_else(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[1] / "examples" / "demo_traces.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n')
    with Store(tmp_path / "runs.db") as store:
        runs = [
            evaluate(
                iter_sources([demo, bad]),
                load_suite("behavior"),
                store=store,
                options=EvaluateOptions(jobs=1, progress=False),
            )
            for _ in range(2)
        ]
        store.delete_run(runs[0])
        con = store.connection
        left = {
            table: con.execute(f"SELECT DISTINCT run_id FROM {table}").fetchall()
            for table in ("samples", "sample_metrics", "run_metrics", "read_errors")
        }
        assert [r.id for r in store.list_runs()] == [runs[1]]
        assert all([tuple(row) for row in rows] == [(runs[1],)] for rows in left.values())
        assert store.get_run(runs[1]).n_samples == 72
        with pytest.raises(StoreError):
            store.get_run(runs[0])


def test_a_run_that_recorded_nothing_is_not_scored_as_perfect() -> None:
    behavior = load_suite("behavior")
    empty = Trace(id="empty", task=Task(id="t1", input="What is the weather in Paris?"))
    [sample] = score_traces([empty], behavior)
    assert sample.composite is None and sample.recommendation is None and sample.band is None
    assert sample.coverage == 0
    assert sample.values["efficiency"] is None and sample.values["safety"] is None
    assert sample.reasons["efficiency"] == NOTHING_RECORDED == sample.reasons["safety"]


def test_an_empty_run_of_a_task_that_expects_an_answer_fails_it() -> None:
    behavior = load_suite("behavior")
    expects_answer = Trace(id="a", task=Task(id="t1", input="Weather?", expected_output="sunny"))
    [sample] = score_traces([expects_answer], behavior)
    assert sample.values["accuracy"] == 0.0 and sample.composite == 0.0
    assert sample.recommendation == "reject"
