"""The store's reads for the viewer: a page of samples filtered and sorted in SQL, facet counts,
the reasons of missing values, one sample and its neighbours; and the schema-3 migration."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agentgauge.store import (
    _MIGRATIONS,
    _SAMPLE_COLUMNS_WRITTEN,
    SCHEMA_VERSION,
    MetricRow,
    SampleQuery,
    SampleRow,
    Store,
    StoreError,
    prepare_batch,
)

# key, task, category, composite, recommendation, band, (a, b), error type
_SAMPLES = [
    ("k0", "t-alpha", "math", 0.90, "accept", "excellent", (1.0, 0.8), None),
    ("k1", "t-beta", "math", 0.30, "reject", "poor", (0.2, None), "type_error:x"),
    ("k2", "t-alpha", "search", 0.65, "weak_accept", "fair", (0.5, 0.8), "wrong_tool"),
    ("k3", "T_GAMMA", "search", None, None, None, (None, None), None),
    ("k4", "t-beta", None, 0.50, "weak_reject", "fair", (0.6, 0.1), "type_error:x"),
]


def _row(seq: int) -> SampleRow:
    key, task, category, comp, rec, band, (a, b), error_type = _SAMPLES[seq]
    details = {"a": {"n": seq}, "b": {"error_type": error_type} if error_type else {}}
    return SampleRow(
        key=key,
        seq=seq,
        source="f.jsonl",
        line=seq + 1,
        trace_id=f"trace-{seq}",
        task_id=task,
        composite=comp,
        coverage=1.0,
        recommendation=rec,
        band=band,
        error=None,
        details=details,
        metrics=(
            MetricRow("a", a, None if a is not None else "no expected output", None),
            MetricRow("b", b, None if b is not None else "no tool call", None),
        ),
        trace_json=json.dumps({"id": f"trace-{seq}"}).encode(),
        category=category,
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "q.db")
    s.create_run(
        kind="evaluate", suite="s", config={"suite": {"metrics": ["a", "b"]}}, run_id="run1"
    )
    s.write_batch("run1", [_row(i) for i in range(len(_SAMPLES))])
    return s


def _keys(store: Store, query: SampleQuery, **page: int) -> tuple[int, list[str]]:
    total, rows = store.query_samples("run1", query, **page)
    return total, [r.key for r in rows]


def test_filters(store: Store) -> None:
    assert _keys(store, SampleQuery()) == (5, ["k0", "k1", "k2", "k3", "k4"])
    # case-insensitive part of the task id or the trace id; _ and % are literal
    assert _keys(store, SampleQuery(search="gamma")) == (1, ["k3"])
    assert _keys(store, SampleQuery(search="T_G")) == (1, ["k3"])
    assert _keys(store, SampleQuery(search="t_a")) == (0, [])
    assert _keys(store, SampleQuery(search="trace-4")) == (1, ["k4"])
    assert _keys(store, SampleQuery(band="fair")) == (2, ["k2", "k4"])
    assert _keys(store, SampleQuery(recommendation="reject")) == (1, ["k1"])
    assert _keys(store, SampleQuery(error_type="type_error:x")) == (2, ["k1", "k4"])
    assert _keys(store, SampleQuery(category="search")) == (2, ["k2", "k3"])
    assert _keys(store, SampleQuery(task_id="t-beta", band="fair")) == (1, ["k4"])


def test_metric_ranges_are_inclusive_and_leave_out_missing_values(store: Store) -> None:
    assert _keys(store, SampleQuery(ranges=(("a", 0.5, None),))) == (3, ["k0", "k2", "k4"])
    assert _keys(store, SampleQuery(ranges=(("a", 0.5, 0.6), ("b", None, 0.5)))) == (1, ["k4"])
    assert _keys(store, SampleQuery(ranges=(("composite", None, 0.5),))) == (2, ["k1", "k4"])
    assert _keys(store, SampleQuery(ranges=(("b", None, None),))) == (3, ["k0", "k2", "k4"])


def test_sorts_put_missing_values_last_and_pages(store: Store) -> None:
    by_composite = SampleQuery(sort="composite")
    assert _keys(store, by_composite)[1] == ["k1", "k4", "k2", "k0", "k3"]
    down = SampleQuery(sort="composite", descending=True)
    assert _keys(store, down)[1] == ["k0", "k2", "k4", "k1", "k3"]
    # ties (b = 0.8 twice) in input order; missing values last
    assert _keys(store, SampleQuery(sort="b", descending=True))[1] == [
        "k0",
        "k2",
        "k4",
        "k1",
        "k3",
    ]
    assert _keys(store, SampleQuery(sort="seq", descending=True))[1] == [
        "k4",
        "k3",
        "k2",
        "k1",
        "k0",
    ]
    assert _keys(store, SampleQuery(sort="a"), offset=1, limit=2) == (5, ["k2", "k4"])
    with pytest.raises(StoreError, match="no metric 'zzz'"):
        store.query_samples("run1", SampleQuery(sort="zzz"))


def test_rows_of_a_page_carry_their_metrics_category_and_error_type(store: Store) -> None:
    _, (row,) = store.query_samples("run1", SampleQuery(search="trace-1"))
    assert row.values == {"a": 0.2, "b": None}
    assert row.reasons == {"b": "no tool call"}
    assert (row.category, row.error_type, row.trace_json) == ("math", "type_error:x", None)


def test_facets_reasons_sample_and_neighbours(store: Store) -> None:
    assert store.facet_counts("run1", "band") == [
        ("fair", 2, pytest.approx(0.575), 2),
        ("excellent", 1, 0.9, 0),
        ("poor", 1, 0.3, 1),
    ]
    assert store.facet_counts("run1", "error_type") == [
        ("type_error:x", 2, pytest.approx(0.4), 2),
        ("wrong_tool", 1, 0.65, 1),
    ]
    # k3 has no composite: the mean is over the others
    assert store.facet_counts("run1", "category") == [
        ("math", 2, pytest.approx(0.6), 1),
        ("search", 2, 0.65, 1),
    ]
    with pytest.raises(ValueError, match="not a sample facet"):
        store.facet_counts("run1", "details")
    assert store.missing_reasons("run1") == {
        "a": [("no expected output", 1)],
        "b": [("no tool call", 2)],
    }
    sample = store.get_sample("run1", "k2")
    assert sample.trace_json == b'{"id": "trace-2"}' and sample.category == "search"
    assert store.neighbours("run1", 0) == (None, "k1")
    assert store.neighbours("run1", 2) == ("k1", "k3")
    assert store.neighbours("run1", 4) == ("k3", None)
    with pytest.raises(StoreError, match="no sample 'nope'"):
        store.get_sample("run1", "nope")


def test_a_version_2_store_gains_error_types_from_its_details(tmp_path: Path) -> None:
    db = tmp_path / "v2.db"
    with sqlite3.connect(db) as old:
        old.executescript(f"{_MIGRATIONS[1]}; {_MIGRATIONS[2]}; PRAGMA user_version = 2;")
        old.execute(
            "INSERT INTO runs VALUES ('r', 'toolcall', 's', '{}', '[]', 'done', 'now', NULL)"
        )
        for key, details in (
            ("x", {"tool_selection": {"error_type": None}, "value": {"error_type": "value_error"}}),
            ("y", {"tool_selection": {"error_type": None}, "note": "text"}),
        ):
            old.execute(
                "INSERT INTO samples VALUES ('r', ?, 0, NULL, NULL, ?, 't', 1.0, 1.0, NULL, NULL, "
                "NULL, ?, NULL)",
                (key, key, json.dumps(details)),
            )
    with Store(db) as store:
        assert store.facet_counts("r", "error_type") == [("value_error", 1, 1.0, 1)]
        _, rows = store.query_samples("r", SampleQuery(error_type="value_error"))
        assert [r.key for r in rows] == ["x"] and rows[0].category is None


def _reads(store: Store, ranged: str = "a", by: str = "b", key: str = "k1") -> list[object]:
    """Everything the readers of metric values get from run1."""
    query = SampleQuery(ranges=((ranged, 0.4, None),), sort=by, descending=True)
    names = store.metric_names("run1")
    return [
        names,
        [list(chunk) for m in names for chunk in store.iter_metric("run1", m)],
        [list(chunk) for chunk in store.iter_metric("run1", by, ordered=True)],
        [(r.key, r.metrics, r.details) for r in store.iter_samples("run1", order="worst")],
        store.missing_reasons("run1"),
        [(r.key, r.values) for r in store.query_samples("run1", query)[1]],
        store.get_sample("run1", key).metrics,
    ]


def _old_store(db: Path, rows: list[SampleRow], metrics: list[str]) -> None:
    """A store of the previous release's layout (schema 7: a row per sample and metric)."""
    with sqlite3.connect(db) as old:
        old.executescript(
            ";".join(_MIGRATIONS[v] for v in range(1, 8)) + "; PRAGMA user_version = 7;"
        )
        old.execute(
            "INSERT INTO runs (id, kind, suite, config, sources, status, created_at) VALUES "
            "('run1', 'evaluate', 's', ?, '[]', 'completed', 'now')",
            (json.dumps({"suite": {"metrics": metrics}}),),
        )
        for row in rows:
            old.execute(
                "INSERT INTO samples (run_id, key, seq, source, line, trace_id, task_id, "
                "composite, coverage, recommendation, band, error, details, trace, category, "
                "error_type) VALUES ('run1', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, ?, ?)",
                (*row[:10], json.dumps(row.details), row.category, row.error_type),
            )
            for m in reversed(row.metrics):  # the suite's order is not the rows' order
                old.execute(
                    "INSERT INTO metric_values VALUES ('run1', ?, ?, ?, ?, ?)", (row.key, *m)
                )


def test_a_store_of_the_previous_layout_opens_and_reads_the_same(
    tmp_path: Path, store: Store
) -> None:
    db = tmp_path / "v7.db"
    _old_store(db, [_row(i) for i in range(len(_SAMPLES))], ["a", "b"])
    with Store(db) as opened:
        con = opened.connection
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("PRAGMA page_size").fetchone()[0] == 4096  # its own pages kept
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        # one row of values per sample now, each metric in its place
        assert "metric_values" not in tables and "metric_values_by_sample" not in tables
        assert con.execute("SELECT COUNT(*) FROM sample_metrics").fetchone()[0] == len(_SAMPLES)
        assert _reads(opened) == _reads(store)
        names, values, ordered, worst, missing, page, k1 = _reads(opened)
    assert names == ["a", "b"]
    assert values == [[1.0, 0.2, 0.5, None, 0.6], [0.8, None, 0.8, None, 0.1]]
    assert ordered == [[0.8, None, 0.8, None, 0.1]]
    assert worst[0] == (
        "k3",
        (
            MetricRow("a", None, "no expected output", None),
            MetricRow("b", None, "no tool call", None),
        ),
        _row(3).details,
    )
    assert missing == {"a": [("no expected output", 1)], "b": [("no tool call", 2)]}
    assert page == [
        ("k0", {"a": 1.0, "b": 0.8}),
        ("k2", {"a": 0.5, "b": 0.8}),
        ("k4", {"a": 0.6, "b": 0.1}),
    ]
    assert k1 == (MetricRow("a", 0.2, None, None), MetricRow("b", None, "no tool call", None))


def _wide_row(seq: int) -> SampleRow:
    """A sample of twenty metrics (two rows of values): the second lacks m03 and lists its
    metrics backwards; every fifth metric has no value, and m17 fails on the third."""
    metrics = []
    for i in range(20):
        if seq == 1 and i == 3:
            continue
        error = "m17 raised" if seq == 2 and i == 17 else None
        value = None if i % 5 == 4 or error else seq + i / 10
        reason = "not applicable" if i % 5 == 4 else None
        metrics.append(MetricRow(f"m{i:02d}", value, reason, error))
    if seq == 1:
        metrics.reverse()
    return SampleRow(
        key=f"w{seq}",
        seq=seq,
        source=None,
        line=None,
        trace_id=f"t{seq}",
        task_id="t",
        composite=None,
        coverage=1.0,
        recommendation=None,
        band=None,
        error=None,
        details={},
        metrics=tuple(metrics),
    )


def test_many_metrics_in_any_order_read_the_same_in_both_layouts(tmp_path: Path) -> None:
    names = [f"m{i:02d}" for i in range(20)]
    rows = [_wide_row(seq) for seq in range(3)]
    _old_store(tmp_path / "old.db", rows, names)
    with Store(tmp_path / "new.db") as new, Store(tmp_path / "old.db") as old:
        new.create_run(
            kind="evaluate", suite="s", config={"suite": {"metrics": names}}, run_id="run1"
        )
        new.write_batch("run1", rows[1:2])  # its metrics backwards: their places too
        new.write_batch("run1", [rows[0], rows[2]])
        reads = _reads(new, ranged="m18", by="m15", key="w1")
        assert _reads(old, ranged="m18", by="m15", key="w1") == reads
    found, values, by_seq, samples, missing, page, w1 = reads
    assert found == names
    assert values[3] == [0.3, 2.3]  # w0 and w2: w1 has no m03
    assert values[17] == [1.7, 1 + 1.7, None] and values[4] == [None] * 3
    assert by_seq == [[1.5, 1 + 1.5, 2 + 1.5]]
    assert [key for key, _, _ in samples] == ["w0", "w1", "w2"]
    assert [m.metric for m in w1] == [n for n in names if n != "m03"]
    assert w1[3] == MetricRow("m04", None, "not applicable", None)
    assert samples[2][1][17] == MetricRow("m17", None, None, "m17 raised")
    assert missing["m04"] == [("not applicable", 3)] and missing["m17"] == [("m17 raised", 1)]
    assert [key for key, _ in page] == ["w2", "w1", "w0"]  # m18 >= 0.4 all, by m15 downwards


def test_columns_null_in_every_row_are_left_out_and_read_as_null(tmp_path: Path) -> None:
    # the same rows written with every column bound, as the store wrote them before
    names = [f"m{i:02d}" for i in range(20)]
    batches = [[_wide_row(0), _wide_row(2)], [_row(i) for i in range(len(_SAMPLES))]]
    with Store(tmp_path / "a.db") as left, Store(tmp_path / "b.db") as right:
        for s in (left, right):
            s.create_run(
                kind="evaluate", suite="s", config={"suite": {"metrics": names}}, run_id="r"
            )
        for rows in batches:
            left.write_batch("r", rows)
            prepared = prepare_batch(rows)
            db = right.connection
            db.executemany(
                f"INSERT INTO samples ({', '.join(_SAMPLE_COLUMNS_WRITTEN)}) "
                f"VALUES ({','.join('?' * 17)})",
                [("r", *row) for row in prepared.samples],
            )
            db.executemany(
                f"INSERT OR REPLACE INTO sample_metrics VALUES ({','.join('?' * 21)})",
                right._value_rows("r", prepared.metric_values),
            )
        for table in ("samples", "sample_metrics", "run_metrics"):
            sql = f"SELECT * FROM {table} ORDER BY 1, 2, 3"
            assert (
                left.connection.execute(sql).fetchall() == right.connection.execute(sql).fetchall()
            )
        nulls = "SELECT COUNT(*) FROM samples WHERE error IS NULL AND source IS NULL"
        assert left.connection.execute(nulls).fetchone()[0] == 2
