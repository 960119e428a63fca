"""The public Python API: in-memory runs with the command's numbers, stores, reading, comparing,
and the runnable examples of docs/python.md."""

import doctest
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agentgauge as ag
from agentgauge.cli import app
from agentgauge.config import SuiteError
from agentgauge.documents.compare import compare_runs
from agentgauge.metrics.base import MetricOptionError, MetricResult, metric
from agentgauge.stats import Summary

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo_traces.jsonl"


@metric("api_output_share")
def _output_share(trace: ag.Trace, *, scale: float = 1.0) -> MetricResult:
    if trace.task.id == "explode":
        raise RuntimeError("metric bug")
    return MetricResult(value=float(trace.output) * scale)  # type: ignore[arg-type]


@metric("api_has_steps")
def _has_steps(trace: ag.Trace) -> MetricResult:
    if not trace.steps:
        return MetricResult.missing("no steps")
    return MetricResult(value=1.0)


SUITE = ag.Suite(
    name="api",
    metrics=["api_output_share", "api_has_steps"],
    weights={"api_output_share": 0.5, "api_has_steps": 0.5},
)


def _trace(i: int, value: float, task: str | None = None, steps: int = 1) -> ag.Trace:
    return ag.Trace(
        id=f"r{i}",
        task=ag.Task(id=task or f"t{i}"),
        output=value,
        steps=[ag.Step(index=j, kind="llm", content="x") for j in range(steps)],
    )


def test_in_memory_run_gives_the_numbers_of_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = ag.evaluate(ag.load_traces(DEMO), suite="behavior")
    assert list(tmp_path.iterdir()) == []  # nothing written: the run was in memory
    assert result.store_path is None

    out = tmp_path / "cli.json"
    cli = CliRunner().invoke(
        app,
        ["evaluate", str(DEMO), "--db", str(tmp_path / "c.db"), "--json", str(out)],
    )
    assert cli.exit_code == 0, cli.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    # a metric's values are summed and resampled in the order of the stored sample keys (the
    # file's lines there, the traces' positions here): the same means, to the last bits
    assert result.aggregate.keys() == doc["aggregate"].keys()
    for name, summary in result.aggregate.items():
        expected = doc["aggregate"][name]
        assert (summary.n, summary.n_missing) == (expected["n"], expected["n_missing"])
        assert summary.mean == pytest.approx(expected["mean"], rel=1e-12)
    assert result.aggregate["composite"].as_dict() == {
        f: doc["aggregate"]["composite"][f] for f in ("mean", "ci_low", "ci_high", "n", "n_missing")
    }
    assert result.recommendation == doc["aggregate"]["composite"]["recommendation"]
    assert result.band == doc["aggregate"]["composite"]["band"]
    assert [(s.trace_id, s.values, s.composite) for s in result.samples] == [
        (s["id"], s["metrics"], s["composite"]) for s in doc["samples"]
    ]
    assert f"{doc['aggregate']['composite']['mean']:.3f}" == "0.732"
    assert str(result.aggregate["composite"]).startswith("0.732 [")


def test_summary_reads_as_mean_interval_and_counts() -> None:
    assert str(Summary(0.5, 0.25, 0.75, 4, 1)) == "0.500 [0.250, 0.750] (n=4, 1 missing)"
    assert str(Summary(1.0, None, None, 1, 0)) == "1.000 (n=1)"
    assert str(Summary(None, None, None, 0, 3)) == "— (n=0, 3 missing)"


def test_python_suite_metric_errors_and_a_named_store(tmp_path: Path) -> None:
    traces = [_trace(0, 0.5), _trace(1, 0.25, steps=0), _trace(2, 1.0, task="explode")]
    db = tmp_path / "r.db"
    result = ag.evaluate(traces, suite=SUITE, store=db, run_id="mine", metadata={"model": "m1"})
    first, no_steps, exploded = result.samples
    # r0: (0.5 + 1.0) / 2; r1: only the output share is measured; r2: only the steps are
    assert first.composite == pytest.approx(0.75)
    assert no_steps.composite == pytest.approx(0.25) and no_steps.coverage == 0.5
    assert no_steps.reasons["api_has_steps"] == "no steps"
    assert exploded.values["api_output_share"] is None
    assert "RuntimeError: metric bug" in exploded.metric_errors["api_output_share"]
    assert exploded.composite == 1.0
    assert result.composite == pytest.approx((0.75 + 0.25 + 1.0) / 3)
    assert result.aggregate["api_output_share"].n == 2
    assert result.aggregate["api_output_share"].n_missing == 1
    assert result.run_id == "mine" and result.store_path == str(db)
    with ag.Store(db) as store:
        again = ag.RunResult.load(store, "mine")
        assert store.get_run("mine").config["metadata"] == {"model": "m1"}
    assert again.samples == result.samples and again.aggregate == result.aggregate
    # an open store is used as it is, and left open
    with ag.Store(db) as store:
        other = ag.evaluate(traces[:1], suite=SUITE, store=store)
        assert [r.id for r in store.list_runs()] == [other.run_id, "mine"]


def test_read_errors_given_as_items_are_recorded() -> None:
    error = ag.ReadError("f.jsonl", 3, "task", "Field required")
    result = ag.evaluate([_trace(0, 1.0), error], suite=SUITE)
    assert len(result.samples) == 1 and result.read_errors == [error]


def test_a_python_suite_is_checked_like_a_suite_file() -> None:
    bad = ag.Suite(name="bad", metrics=["api_has_steps"], weights={"api_output_share": 1.0})
    with pytest.raises(SuiteError, match="unknown weight key 'api_output_share'"):
        ag.evaluate([_trace(0, 1.0)], suite=bad)
    with pytest.raises(SuiteError, match="unknown suite 'nope'"):
        ag.evaluate([_trace(0, 1.0)], suite="nope")


def test_score_one_metric_with_options() -> None:
    trace = _trace(0, 0.4)
    assert ag.score(trace, "api_output_share").value == pytest.approx(0.4)
    assert ag.score(trace, "api_output_share", scale=2.0).value == pytest.approx(0.8)
    with pytest.raises(MetricOptionError, match="no option 'scal'"):
        ag.score(trace, "api_output_share", scal=2.0)
    with pytest.raises(RuntimeError, match="metric bug"):
        ag.score(_trace(1, 0.4, task="explode"), "api_output_share")
    built = SUITE.build_metrics()[1]
    assert ag.score(_trace(2, 0.1, steps=0), built).reason == "no steps"
    with pytest.raises(TypeError):
        ag.score(trace, built, scale=2.0)


def test_load_traces_raises_or_skips_bad_records(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": "a", "task": {"id": "t"}}) + "\n")
    mixed = tmp_path / "mixed.jsonl"
    lines = [{"id": "b", "task": {"id": "t"}}, "{oops", {"id": "c"}]
    mixed.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    assert [t.id for t in ag.load_traces(good)] == ["a"]
    with pytest.raises(ag.TraceReadError) as caught:
        ag.load_traces([str(good), mixed])
    assert [(e.line, e.field) for e in caught.value.errors] == [(2, None), (3, "task")]
    assert [t.id for t in caught.value.traces] == ["a", "b"]
    assert str(caught.value).splitlines()[0] == "2 records are not traces (2 read):"
    assert f"{mixed}:3: task: Field required" in str(caught.value)
    with pytest.warns(UserWarning, match="skipped 2 records"):
        assert [t.id for t in ag.load_traces([good, mixed], on_error="skip")] == ["a", "b"]
    with pytest.raises(FileNotFoundError, match="no such file"):
        ag.load_traces(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unknown trace format 'xml'"):
        ag.load_traces(good, format="xml")


def test_load_traces_reads_other_formats() -> None:
    traces = ag.load_traces(ROOT / "tests" / "data" / "otel" / "single_agent.json", format="otel")
    assert len(traces) == 1 and traces[0].steps


def test_compare_in_memory_runs_equals_the_stored_comparison(tmp_path: Path) -> None:
    a_traces = [_trace(i, 0.5 + (i % 5) / 20) for i in range(20)]
    b_traces = [_trace(i, 0.6 + (i % 5) / 20) for i in range(20)]
    a, b = ag.evaluate(a_traces, suite=SUITE), ag.evaluate(b_traces, suite=SUITE)
    in_memory = ag.compare(a, b)
    share = in_memory["metrics"]["api_output_share"]
    assert share["n"] == 20 and share["diff"] == pytest.approx(0.1)
    assert share["verdict"] == "B better"
    assert in_memory["metrics"]["composite"]["diff"] == pytest.approx(0.05)
    with ag.Store(tmp_path / "c.db") as store:
        sa = ag.evaluate(a_traces, suite=SUITE, store=store, run_id=a.run_id)
        sb = ag.evaluate(b_traces, suite=SUITE, store=store, run_id=b.run_id)
        stored = compare_runs(store, sa.run_id, sb.run_id)
    assert in_memory == stored


def test_import_is_cheap_and_names_load_on_use() -> None:
    code = (
        "import sys, agentgauge as ag\n"
        "heavy = ['numpy', 'pydantic', 'rich', 'agentgauge.engine', 'pytest']\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "print(ag.Trace.__name__, 'evaluate' in dir(ag), 'numpy' in sys.modules)\n"
        "from agentgauge import *\n"
        "print(callable(evaluate), 'pytest' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == ["[]", "Trace True False", "True False"]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        ag.nothing  # noqa: B018


def test_docs_python_md_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples").mkdir()
    shutil.copy(DEMO, tmp_path / "examples" / DEMO.name)
    monkeypatch.chdir(tmp_path)
    failed, attempted = doctest.testfile(
        str(ROOT / "docs" / "python.md"),
        module_relative=False,
        optionflags=doctest.ELLIPSIS,
        raise_on_error=False,
    )
    assert attempted > 20 and failed == 0
