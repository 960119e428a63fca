"""The pytest plugin: assert_passes fails a test with a table of the failing samples, the
agentgauge_eval fixture, and --agentgauge-db, run in real pytest sessions (pytester)."""

import re
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import agentgauge as ag

# imported before the inner sessions, which drop the modules they import first
import agentgauge.api
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.pytest_plugin import assert_passes

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


@metric("plugin_answer")
def _answer(trace: ag.Trace) -> MetricResult:
    if trace.task.id == "explode":
        raise RuntimeError("metric bug")
    if trace.output is None:
        return MetricResult.missing("no output")
    return MetricResult(value=float(trace.output), details={"said": trace.output})  # type: ignore[arg-type]


@metric("plugin_steps")
def _steps(trace: ag.Trace) -> MetricResult:
    return MetricResult(value=min(1.0, len(trace.steps) / 2))


SUITE = ag.Suite(
    name="plugin",
    metrics=["plugin_answer", "plugin_steps"],
    weights={"plugin_answer": 0.75, "plugin_steps": 0.25},
)

# The test file of the inner sessions, as a user would write it.
INNER = """
import agentgauge as ag
from agentgauge.pytest_plugin import assert_passes


@ag.metric("inner_answer")
def answer(trace):
    if trace.output is None:
        return ag.MetricResult.missing("no output")
    return ag.MetricResult(value=trace.output)


SUITE = ag.Suite(name="inner", metrics=["inner_answer"], weights={"inner_answer": 1.0})


def traces(values):
    return [ag.Trace(id=f"a{i}", task=ag.Task(id=f"t{i}"), output=v) for i, v in enumerate(values)]


def test_good_agent():
    assert_passes(traces([1.0, 0.9, 1.0]), SUITE, min_composite=0.8)


def test_bad_agent():
    assert_passes(traces([1.0, 0.2, None, 0.7]), SUITE, min_composite=0.8)


def test_with_the_fixture(agentgauge_eval):
    assert agentgauge_eval(traces([0.5, 1.0]), SUITE).composite == 0.75
"""


def traces(values: list[float | None]) -> list[ag.Trace]:
    """Trace ``a<i>`` on task ``t<i>`` answers ``values[i]`` in two steps."""
    return [
        ag.Trace(
            id=f"a{i}",
            task=ag.Task(id=f"t{i}"),
            output=value,
            steps=[ag.Step(index=j, kind="llm", content="x") for j in range(2)],
        )
        for i, value in enumerate(values)
    ]


def _plugin_args() -> list[str]:
    """An installed agentgauge loads the plugin through its entry point; a source tree that is
    not installed names it on the command line. (The inner sessions have no configuration
    for pytest-asyncio, which would warn about it.)"""
    quiet = ["-p", "no:asyncio"]
    if entry_points(group="pytest11", name="agentgauge"):
        return quiet
    return [*quiet, "-p", "agentgauge.pytest_plugin"]


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_agent=INNER)
    return pytester


def test_a_failing_test_shows_the_failing_samples(inner: pytest.Pytester) -> None:
    result = inner.runpytest(*_plugin_args(), "-k", "bad_agent")
    result.assert_outcomes(failed=1)
    # worst first: a2 has no composite, then a1 (0.2) and a3 (0.7); a0 (1.0) passes
    result.stdout.fnmatch_lines(
        [
            "*3 of 4 samples fail (suite inner: composite >= 0.8, no metric error; run *)",
            "*sample  task  composite  fails*reasons",
            "*a2      t2    —          no composite           inner_answer: no output",
            "*a1      t1    0.200      composite 0.200 < 0.8  lowest: inner_answer 0.20",
            "*a3      t3    0.700      composite 0.700 < 0.8  lowest: inner_answer 0.70",
        ]
    )
    assert "a0 " not in result.stdout.str()


def test_the_table_names_failing_metrics_missing_values_and_errors() -> None:
    checked = traces([0.95, 0.2, None, 0.85])
    checked[3] = checked[3].model_copy(update={"task": ag.Task(id="explode")})
    with pytest.raises(AssertionError) as caught:
        assert_passes(checked, SUITE, min_composite=0.8, per_metric={"plugin_answer": 0.9})
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(
        "3 of 4 samples fail (suite plugin: composite >= 0.8, plugin_answer >= 0.9, "
        "no metric error; run "
    )
    rows = {line.split()[0]: line for line in lines[2:]}
    assert list(rows) == ["a1", "a2", "a3"]  # a1: 0.75·0.2 + 0.25 = 0.4; a2, a3: steps only
    assert re.split(r"\s{2,}", rows["a1"])[2:] == [
        "0.400",
        "composite 0.400 < 0.8, plugin_answer 0.200 < 0.9",
        'lowest: plugin_answer 0.20; plugin_answer: {"said": 0.2}',
    ]
    assert "plugin_answer not measured" in rows["a2"]
    assert rows["a2"].endswith("plugin_answer: no output")
    assert "plugin_answer raised" in rows["a3"] and "RuntimeError: metric bug" in rows["a3"]


def test_a_passing_test_and_the_fixture(inner: pytest.Pytester) -> None:
    result = inner.runpytest(*_plugin_args(), "-k", "good_agent or fixture")
    result.assert_outcomes(passed=2)


def test_the_store_option_keeps_the_runs(inner: pytest.Pytester, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    result = inner.runpytest(*_plugin_args(), f"--agentgauge-db={db}")
    result.assert_outcomes(passed=2, failed=1)
    with ag.Store(db) as store:
        runs = {r.config["metadata"]["test"]: r for r in store.list_runs()}
    assert sorted(runs) == [
        "test_agent.py::test_bad_agent",
        "test_agent.py::test_good_agent",
        "test_agent.py::test_with_the_fixture",
    ]
    assert runs["test_agent.py::test_bad_agent"].n_samples == 4
    assert runs["test_agent.py::test_with_the_fixture"].suite == "inner"


def test_without_the_option_nothing_is_written(inner: pytest.Pytester) -> None:
    inner.runpytest(*_plugin_args(), "-k", "good_agent").assert_outcomes(passed=1)
    assert list(inner.path.rglob("*.db")) == []


def test_checks_that_cannot_pass_are_refused() -> None:
    with pytest.raises(ValueError, match="'plugin_answr' is not a metric of the suite"):
        assert_passes(traces([1.0]), SUITE, per_metric={"plugin_answr": 0.5})
    with pytest.raises(AssertionError, match="no sample was scored"):
        assert_passes([], SUITE)
    bad_line = ag.ReadError("f.jsonl", 2, None, "invalid JSON")
    with pytest.raises(AssertionError) as caught:
        assert_passes([*traces([1.0]), bad_line], SUITE)
    assert str(caught.value).splitlines()[1:] == [
        "records that are not traces (1):",
        "  f.jsonl:2: invalid JSON",
    ]
    run = ag.evaluate(traces([1.0]), suite=SUITE)
    assert assert_passes(run, min_composite=1.0) is run


def test_the_plugin_is_registered_under_pytest11() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"agentgauge": "agentgauge.pytest_plugin"}


def _doc_blocks(language: str) -> list[str]:
    """The fenced blocks of docs/pytest.md in ``language`` ("" for plain ones)."""
    blocks: list[tuple[str, list[str]]] = []
    fenced: list[str] | None = None
    for line in (ROOT / "docs" / "pytest.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if fenced is None:
                fenced = []
                blocks.append((line[3:].strip(), fenced))
            else:
                fenced = None
        elif fenced is not None:
            fenced.append(line)
    return ["\n".join(lines) + "\n" for lang, lines in blocks if lang == language]


def test_docs_pytest_md_examples_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """docs/pytest.md's tests, as a user copies them, against the demo traces: the first fails
    with the table the page shows, the fixture's passes; then its commands read the runs that
    --agentgauge-db kept."""
    demo = ROOT / "examples" / "demo_traces.jsonl"
    (pytester.path / "examples").mkdir()
    (pytester.path / "runs").mkdir()
    for copy in ("examples/demo_traces.jsonl", "runs/before.jsonl", "runs/after.jsonl"):
        (pytester.path / copy).write_bytes(demo.read_bytes())
    pytester.makepyfile(test_docs="\n\n".join(_doc_blocks("python")))
    db = tmp_path / "runs.db"
    (command,) = [line for line in _doc_blocks("sh")[0].splitlines() if line.startswith("pytest")]
    assert command == "pytest --agentgauge-db runs.db"
    result = pytester.runpytest(*_plugin_args(), f"--agentgauge-db={db}")
    result.assert_outcomes(passed=1, failed=1)
    shown = [
        line
        for line in (_doc_blocks("")[0]).splitlines()
        if line.startswith("E ") and "..." not in line
    ]
    run_id = re.search(r"; run (\w+)\)", result.stdout.str())
    assert run_id is not None
    # the page's table, line for line, with this run's id
    result.stdout.fnmatch_lines([re.sub(r"run \w+\)", "run *)", line) for line in shown])
    with ag.Store(db) as store:
        runs = {r.config["metadata"]["test"]: r for r in store.list_runs()}
    assert sorted(runs) == [
        "test_docs.py::test_the_agent_is_good_and_safe",
        "test_docs.py::test_the_new_prompt_is_not_worse",
    ]
    from typer.testing import CliRunner

    from agentgauge.cli import app

    listed = CliRunner().invoke(app, ["runs", "--db", str(db)])
    assert listed.exit_code == 0 and run_id.group(1) in listed.output
    report = tmp_path / "report.html"
    shown_run = CliRunner().invoke(
        app, ["show", run_id.group(1), "--db", str(db), "--html", str(report)]
    )
    assert shown_run.exit_code == 0, shown_run.output
    assert report.stat().st_size > 0
