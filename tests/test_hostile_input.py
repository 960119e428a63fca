"""One bad value never kills a run: every reader turns an integer too long, a nesting too deep,
a number too large or text that is not Unicode into an error at its line, span, sample or
paper, and goes on; what cannot be stored is stored as an error."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import SuiteError, load_suite
from agentgauge.io.jsonl import NESTED_TOO_DEEPLY, ReadError, read_traces
from agentgauge.io.otel import read_otel
from agentgauge.model import Task, Trace
from agentgauge.review.loader import read_paper_file
from agentgauge.store import MetricRow, SampleRow, Store
from agentgauge.toolcall.datasets import read_predictions

runner = CliRunner()
HUGE_INT = "9" * 5000
DEEP = "[" * 5000 + "]" * 5000
OTEL = Path(__file__).parent / "data" / "otel" / "single_agent.json"


def _trace_line(i: int, **extra: object) -> str:
    doc = {"id": f"r{i}", "task": {"id": f"t{i}"}, "output": "ok", "metadata": {"n": i}}
    return json.dumps({**doc, **extra})


def _hostile_lines() -> list[str]:
    good = [_trace_line(i) for i in range(4)]
    return [
        good[0],
        _trace_line(90).replace('{"n": 90}', HUGE_INT),  # line 2: 5,000 digits
        good[1],
        _trace_line(91).replace('{"n": 91}', DEEP),  # line 4: nested 5,000 deep
        _trace_line(92).replace('"ok"', '"\\ud800"'),  # line 5: a lone surrogate, read as U+FFFD
        good[2],
        good[3],
    ]


def test_native_lines_with_hostile_values_are_located_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_hostile_lines()) + "\n")
    items = list(read_traces(path))
    errors = {e.line: e.message for e in items if isinstance(e, ReadError)}
    traces = [t for t in items if isinstance(t, Trace)]
    assert [t.id for t in traces] == ["r0", "r1", "r92", "r2", "r3"]
    assert traces[2].output == "\ufffd"  # UTF-8 cannot hold a lone surrogate: the store could not
    assert errors[2] == "an integer with more than 4300 digits"
    assert errors[4] == "invalid JSON: nested too deeply to read"
    # the line with the lone surrogate is read, and says so
    assert errors[5].startswith("warning: a lone surrogate (half of a UTF-16 pair, not text)")
    assert set(errors) == {2, 4, 5}


def test_evaluate_completes_and_resume_finds_nothing_left(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_hostile_lines()) + "\n")
    db = tmp_path / "a.db"
    args = ["evaluate", str(path), "--db", str(db), "--jobs", "1", "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    con = sqlite3.connect(db)
    run_id, status = con.execute("SELECT id, status FROM runs").fetchone()
    assert status == "completed"
    assert con.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 5
    problems = con.execute("SELECT line, message FROM read_errors ORDER BY line").fetchall()
    assert [(line, message.startswith("warning: ")) for line, message in problems] == [
        (2, False),
        (4, False),
        (5, True),
    ]
    con.close()
    again = runner.invoke(app, ["evaluate", "--resume", run_id, "--db", str(db), "--no-progress"])
    assert again.exit_code == 0, again.output
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 5
    assert con.execute("SELECT status FROM runs").fetchone()[0] == "completed"


def _otel_with(mutate: dict[str, object]) -> str:
    """The fixture's export with one span's attributes or times replaced."""
    doc = json.loads(OTEL.read_text().splitlines()[0])
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    chat = next(s for s in spans if s["name"].startswith("chat"))
    chat.update(mutate)
    return json.dumps(doc)


@pytest.mark.parametrize(
    "mutate",
    [
        {"startTimeUnixNano": "9" * 30},  # a time past year 9999
        {"endTimeUnixNano": "99999-01-01T00:00:00Z"},
        {"attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"doubleValue": "inf"}}]},
        {"attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": HUGE_INT}}]},
        {"attributes": [{"key": "x", "value": json.loads("[" * 400 + "]" * 400)}]},
        {"events": [{"name": "e", "attributes": 5}]},
    ],
)
def test_otel_hostile_span_values_are_errors_of_that_trace(
    tmp_path: Path, mutate: dict[str, object]
) -> None:
    path = tmp_path / "o.json"
    good = OTEL.read_text().strip()
    rest = "\n".join(good.splitlines()[1:])
    path.write_text(f"{_otel_with(mutate)}\n{rest}\n{good.replace('5b8aa5a2', '00000000')}\n")
    items = list(read_otel(path))
    traces = [t for t in items if isinstance(t, Trace)]
    errors = [e for e in items if isinstance(e, ReadError)]
    # the second document, untouched, is read whatever happened to the first
    assert any(t.id.startswith("00000000") for t in traces)
    assert all(e.source == str(path) and e.line >= 1 for e in errors)
    for t in traces:
        t.model_dump_json()  # whatever was read can be written


def test_unstorable_values_are_stored_as_errors(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        run = store.create_run(kind="evaluate", suite="s", config={}, sources=[])
        row = SampleRow(
            key="k\ud800",
            seq=0,
            source=None,
            line=None,
            trace_id="t\udfff",
            task_id="x",
            composite=0.5,
            coverage=1.0,
            recommendation=None,
            band=None,
            error=None,
            details={"n": 10**5000},
            metrics=(MetricRow("m", 0.5, "reason \ud800", None),),
        )
        good = row._replace(key="k2", trace_id="t2", details={"n": 1})
        store.write_batch(run, [row, good])
        samples = {s.trace_id: s for s in store.iter_samples(run)}
    assert samples["t2"].details == {"n": 1} and samples["t2"].error is None
    bad = samples["t\\udfff"]
    assert bad.details == {}
    assert (
        bad.error == "the sample's details cannot be stored: an integer with more than 4300 digits"
    )
    assert bad.reasons == {"m": "reason \\ud800"}


def test_details_and_usage_are_written_as_json_dumps_writes_them(tmp_path: Path) -> None:
    circular: dict[str, object] = {"a": 1}
    circular["self"] = circular
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    odd = {
        "m": {"nan": float("nan"), "inf": -float("inf"), "zero": -0.0, "x": 0.1 + 0.2},
        "n": {7: "int key", 2.5: "float key", False: "bool key", None: "none key"},
        "o": {"path": Path("/tmp/x"), "set": {3}, "text": "café ☕ \ud83d\ude00", "tuple": (1, 2)},
    }
    with Store(tmp_path / "s.db") as store:
        run = store.create_run(kind="evaluate", suite="s", config={}, sources=[])
        row = SampleRow("k0", 0, None, None, "t", "x", 0.5, 1.0, None, None, None, {}, ())
        rows = [
            row._replace(key="odd", trace_id="odd", details=odd, usage={"cost_usd": 1e-7}),
            row._replace(key="circular", trace_id="circular", details={"m": circular}),
            row._replace(key="deep", trace_id="deep", details={"m": deep}),
        ]
        store.write_batch(run, rows)
        stored = dict(
            store.connection.execute(
                "SELECT trace_id, details FROM samples WHERE run_id = ?", (run,)
            )
        )
        errors = {s.trace_id: s.error for s in store.iter_samples(run)}
        usage = store.connection.execute("SELECT usage FROM samples WHERE key = 'odd'").fetchone()
    assert stored["odd"] == json.dumps(odd, default=str)
    assert usage[0] == json.dumps({"cost_usd": 1e-7})
    assert errors["odd"] is None
    # the errors json.dumps gives, as before
    assert (
        errors["circular"] == "the sample's details cannot be stored: Circular reference detected"
    )
    assert errors["deep"] == f"the sample's details cannot be stored: {NESTED_TOO_DEEPLY}"
    assert stored["circular"] == stored["deep"] == "{}"


def test_a_trace_that_cannot_be_written_is_scored_and_stored_with_its_error(
    tmp_path: Path,
) -> None:
    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, evaluate

    bad = Trace(id="bad", task=Task(id="t"), output="\ud800")
    good = Trace(id="good", task=Task(id="t"), output="fine")
    with Store(tmp_path / "s.db") as store:
        opts = EvaluateOptions(jobs=1, progress=False)
        run = evaluate([bad, good], load_suite("behavior"), store=store, options=opts)
        samples = {s.trace_id: s for s in store.iter_samples(run, with_trace=True)}
        assert store.get_run(run).status == "completed"
    assert samples["bad"].trace_json is None
    assert samples["bad"].error is not None and "cannot be stored" in samples["bad"].error
    assert samples["good"].trace() is not None


def test_a_failed_run_is_marked_failed_and_resumes(tmp_path: Path) -> None:
    from agentgauge.config import load_suite
    from agentgauge.engine import EvaluateOptions, evaluate

    def items() -> object:
        yield Trace(id="a", task=Task(id="t"))
        raise OSError("the disk went away")

    suite = load_suite("behavior")
    with Store(tmp_path / "s.db") as store:
        with pytest.raises(OSError):
            evaluate(items(), suite, store=store, options=EvaluateOptions(jobs=1, progress=False))
        [run] = store.list_runs()
        assert run.status == "failed"
        opts = EvaluateOptions(run_id=run.id, resume=True, jobs=1, progress=False)
        more = [Trace(id="a", task=Task(id="t")), Trace(id="b", task=Task(id="t"))]
        evaluate(more, suite, store=store, options=opts)
        assert store.get_run(run.id).status == "completed"
        assert sorted(s.trace_id for s in store.iter_samples(run.id)) == ["a", "b"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "s0", "result": ' + HUGE_INT + "}", "an integer with more than 4300 digits"),
        ('{"id": "s0", "result": ' + DEEP + "}", "invalid JSON: nested too deeply to read"),
        ('{"id": "s0", "result": [{"f": {"x": ' + HUGE_INT + "}}]}", None),
    ],
)
def test_predictions_with_hostile_values_are_line_errors(
    tmp_path: Path, line: str, message: str | None
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(line + "\n" + '{"id": "s1", "result": []}\n')
    tasks = {k: Task(id=k, expected_calls=[]) for k in ("s0", "s1")}
    items = list(read_predictions(path, tasks))
    assert isinstance(items[0], ReadError) and items[0].line == 1
    if message is not None:
        assert items[0].message == message
    assert isinstance(items[1], Trace)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"id": "p1", "reviews": [{"RECOMMENDATION": ' + "9" * 400 + "}]}", "reviews[0]"),
        ('{"id": ' + "9" * 5000 + ', "reviews": []}', None),
        ('{"id": "p1", "reviews": ' + DEEP + "}", None),
    ],
)
def test_peerread_hostile_values_are_errors_of_that_paper(
    tmp_path: Path, body: str, field: str | None
) -> None:
    path = tmp_path / "acl_2017" / "train" / "reviews" / "1.json"
    path.parent.mkdir(parents=True)
    path.write_text(body)
    paper, errors = read_paper_file(path)
    assert errors and all(e.source == str(path) for e in errors)
    if field is not None:
        assert paper is not None and errors[0].field == f"{field}.RECOMMENDATION"
        assert "too large" in errors[0].message


@pytest.mark.parametrize(
    "text", [f"name = 'x'\nmetrics = ['accuracy']\n[weights]\naccuracy = {HUGE_INT}\n", DEEP]
)
def test_suite_files_with_hostile_values_are_suite_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text if text != DEEP else "x = " + "[" * 5000 + "]" * 5000)
    with pytest.raises(SuiteError, match="cannot read suite file"):
        load_suite(str(path))


def test_the_stored_trace_blob_is_json(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_trace_line(0) + "\n")
    db = tmp_path / "a.db"
    assert (
        runner.invoke(app, ["evaluate", str(path), "--db", str(db), "--no-progress"]).exit_code == 0
    )
    blob = sqlite3.connect(db).execute("SELECT trace FROM samples").fetchone()[0]
    assert json.loads(zlib.decompress(blob))["id"] == "r0"
