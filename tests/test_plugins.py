"""Extension points: a fake installed distribution registers one entry of each kind through its
entry points; ``agentgauge plugins`` lists them and the commands use them by name.

The commands run in subprocesses whose ``sys.path`` holds the fake distribution (a
``*.dist-info`` folder with its ``entry_points.txt``), so that ``importlib.metadata`` finds it
exactly as it finds an installed package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.registry import PluginWarning, Registry, UnknownNameError

ENTRY_POINTS = """\
[agentgauge.metrics]
answer_words = fakeplug:answer_words
broken_metric = fakeplug_missing:nothing

[agentgauge.importers]
qa_lines = fakeplug:read_qa

[agentgauge.formats]
call_lines = fakeplug:read_call_lines

[agentgauge.parsers]
call_text = fakeplug:parse_call_text

[agentgauge.tuners]
corners = fakeplug:corners

[agentgauge.executors]
counting = fakeplug:counting

[agentgauge.conventions]
fake_spans = fakeplug:FakeSpans
"""

# One entry of each kind: some undecorated (registered under the entry point's name), some
# decorated with the extension point's decorator.
FAKEPLUG = '''
import sys
from pathlib import Path

import numpy as np

from agentgauge.engine import score_batch
from agentgauge.io.jsonl import ReadError
from agentgauge.io.otel.conventions import Convention
from agentgauge.metrics.base import MetricResult
from agentgauge.model import ExpectedCall, Task, ToolCall, ToolSpec, Trace
from agentgauge.toolcall.formats import dataset_format
from agentgauge.toolcall.parsers import ParseResult, parser


def answer_words(trace, *, limit: int = 3):
    """The answer's word count over a limit."""
    words = len(str(trace.output or "").split())
    return MetricResult(value=min(words, limit) / limit, details={"words": words})


def read_qa(path):
    """QUESTION|ANSWER lines."""
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        question, sep, answer = line.partition("|")
        if not sep:
            yield ReadError(str(path), n, None, "expected QUESTION|ANSWER")
            continue
        yield Trace(id=f"qa-{n}", task=Task(id=f"q{n}", input=question), output=answer)


@dataset_format("call_lines", value_mode="lenient")
def read_call_lines(path):
    """ID TOOL KEY=VALUE lines: the call a sample expects."""
    for line in Path(path).read_text().splitlines():
        sample, tool, arg = line.split()
        key, value = arg.split("=")
        yield Task(
            id=sample,
            input=f"use {tool}",
            tools=[ToolSpec(name=tool, parameters={
                "type": "object", "properties": {key: {"type": "string"}}, "required": [key],
            })],
            expected_calls=[ExpectedCall(name=tool, arguments={key: [value]})],
        )


@parser("call_text")
def parse_call_text(output, tools, positional):
    """CALL TOOL KEY=VALUE."""
    head, _, rest = output.partition(" ")
    if head != "CALL":
        return ParseResult(text=output)
    tool, _, arg = rest.partition(" ")
    key, _, value = arg.partition("=")
    return ParseResult(calls=[ToolCall(name=tool, arguments={key: value})], format="call_text")


class Corners:
    """The start point, then the cube's corners 1 and 0 in turn."""

    name = "corners"

    def __init__(self, start):
        self._start = np.asarray(start, dtype=np.float64)
        self._turn = 0

    def ask(self):
        self._turn += 1
        if self._turn == 1:
            return self._start
        return np.full(len(self._start), float(self._turn % 2 == 0))

    def tell(self, point, objective):
        pass


def corners(start, names, *, seed=0):
    """Start point, then corners."""
    return Corners(start)


class _Counting:
    def __init__(self, suite, metrics):
        self.suite, self.metrics, self.batches = suite, metrics, 0

    def run(self, batches):
        for batch in batches:
            self.batches += 1
            yield score_batch(batch, self.suite, self.metrics)

    def close(self, wait=True):
        print(f"counting executor: {self.batches} batches", file=sys.stderr)


def counting(suite, metrics, *, jobs, address):
    """Scores here, counting the batches."""
    return _Counting(suite, metrics)


class FakeSpans(Convention):
    """Spans of the fake framework: fake.kind, fake.tool, fake.args."""

    def operation(self, span):
        return {"model": "chat", "tool": "execute_tool"}.get(span.attributes.get("fake.kind"))

    def tool_name(self, span):
        return span.attributes.get("fake.tool")

    def arguments(self, span):
        return span.attributes.get("fake.args")

    def output_tokens(self, span):
        return span.attributes.get("fake.tokens")
'''


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    """A folder holding the fake distribution ``fakeplug`` 1.0, as site-packages would."""
    root = tmp_path / "site"
    dist = root / "fakeplug-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    (root / "fakeplug.py").write_text(FAKEPLUG)
    return root


def _agentgauge(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_entry_points_of_the_fake_distribution_are_found(site: Path) -> None:
    sys.path.insert(0, str(site))
    try:
        from importlib.metadata import entry_points

        found = {ep.name: ep.dist.name for ep in entry_points(group="agentgauge.tuners") if ep.dist}
    finally:
        sys.path.remove(str(site))
    assert found["corners"] == "fakeplug"


def test_plugins_lists_one_of_each_kind_and_warns_about_a_broken_one(site: Path) -> None:
    result = _agentgauge(site, "plugins", "--json")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    assert list(listing) == [
        "metrics",
        "importers",
        "conventions",
        "formats",
        "parsers",
        "tuners",
        "executors",
    ]
    mine = {
        "metrics": "answer_words",
        "importers": "qa_lines",
        "formats": "call_lines",
        "parsers": "call_text",
        "tuners": "corners",
        "executors": "counting",
        "conventions": "fake_spans",
    }
    for kind, name in mine.items():
        assert listing[kind]["group"] == f"agentgauge.{kind}"
        by_name = {p["name"]: p for p in listing[kind]["plugins"]}
        assert by_name[name]["origin"] == "fakeplug", kind
        # the built-in entries come first and say so
        assert listing[kind]["plugins"][0]["origin"] == "built-in"
        assert listing[kind]["plugins"][-1]["name"] == name
    descriptions = {p["name"]: p["description"] for p in listing["metrics"]["plugins"]}
    assert descriptions["answer_words"] == "The answer's word count over a limit."
    assert {p["name"] for p in listing["executors"]["plugins"]} == {"local", "ray", "counting"}
    assert "broken_metric" not in descriptions
    assert "PluginWarning" in result.stderr
    assert "'broken_metric' (fakeplug_missing:nothing) of fakeplug" in result.stderr
    assert "ModuleNotFoundError" in result.stderr

    table = _agentgauge(site, "plugins")
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if "corners" in line]
    assert len(rows) == 1 and "fakeplug" in rows[0]


def test_a_plugin_importer_metric_and_executor_score_a_run(site: Path, tmp_path: Path) -> None:
    data = tmp_path / "qa.txt"
    data.write_text("capital of France?|Paris\nnot a pair\nand of Italy?|it is Rome\n")
    suite = tmp_path / "words.toml"
    suite.write_text('metrics = ["answer_words"]\n[weights]\nanswer_words = 1.0\n')
    out = tmp_path / "run.json"
    result = _agentgauge(
        site, "evaluate", str(data), "--format", "qa_lines", "--executor", "counting",
        "--suite", str(suite), "--db", str(tmp_path / "ag.db"), "--json", str(out),
        "--no-progress", "--batch-size", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    values = {s["id"]: s["metrics"]["answer_words"] for s in doc["samples"]}
    # "Paris": 1 word of 3; "it is Rome": 3 words, capped at 3
    assert values == {"qa-1": pytest.approx(1 / 3), "qa-3": 1.0}
    assert [(e["line"], e["message"]) for e in doc["errors"]] == [(2, "expected QUESTION|ANSWER")]
    assert doc["config"]["format"] == "qa_lines"
    # two traces and one read error, one item a batch
    assert "counting executor: 3 batches" in result.stderr


def test_a_plugin_convention_reads_its_framework_spans(site: Path, tmp_path: Path) -> None:
    spans = [
        {"traceId": "t1", "spanId": "a", "name": "run", "attributes": {}},
        {
            "traceId": "t1",
            "spanId": "b",
            "parentId": "a",
            "name": "step",
            "attributes": {"fake.kind": "tool", "fake.tool": "lookup", "fake.args": {"q": "x"}},
        },
        {
            "traceId": "t1",
            "spanId": "c",
            "parentId": "a",
            "name": "think",
            "attributes": {"fake.kind": "model", "fake.tokens": 7},
        },
    ]
    source, out = tmp_path / "spans.json", tmp_path / "traces.jsonl"
    source.write_text(json.dumps(spans))
    result = _agentgauge(site, "import", str(source), "--out", str(out))
    assert result.returncode == 0, result.stderr
    trace = json.loads(out.read_text())
    assert [s["kind"] for s in trace["steps"]] == ["tool_call", "llm"]
    assert trace["steps"][0]["tool_call"] == {"name": "lookup", "arguments": {"q": "x"}}


def test_a_plugin_dataset_format_and_output_parser_score_predictions(
    site: Path, tmp_path: Path
) -> None:
    dataset = tmp_path / "calls.txt"
    dataset.write_text("s1 get_weather city=Paris\ns2 get_time zone=UTC\ns3 get_time zone=CET\n")
    predictions = tmp_path / "preds.jsonl"
    lines = [
        {"id": "s1", "result": "CALL get_weather city=paris"},  # lenient: case-folded
        {"id": "s2", "result": "CALL get_weather zone=UTC"},  # the wrong tool
        {"id": "s3", "result": "I would rather not."},  # no call
    ]
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "scored.json"
    result = _agentgauge(
        site, "toolcall", "score", "--dataset", str(dataset), "--format", "call_lines",
        "--predictions", str(predictions), "--parser", "call_text",
        "--db", str(tmp_path / "ag.db"), "--json", str(out), "--no-progress",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["config"]["toolcall"]["mode"] == "lenient"  # the format's own value mode
    assert doc["config"]["toolcall"]["parser"] == "call_text"
    samples = {s["id"]: s for s in doc["samples"]}
    assert {k: s["metrics"]["tool_selection"] for k, s in samples.items()} == {
        "s1": 1.0,
        "s2": 0.0,
        "s3": 0.0,
    }
    assert {k: s["metrics"]["value_accuracy"] for k, s in samples.items()} == {
        "s1": 1.0,
        "s2": 0.0,
        "s3": 0.0,
    }
    assert samples["s1"]["details"]["value_accuracy"]["predicted"] == [
        {"name": "get_weather", "arguments": {"city": "paris"}}
    ]


def test_a_plugin_tuner_tunes(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "tune.json"
    result = _agentgauge(
        site, "tune", "--agent", "agentgauge.agents.simulated:SimulatedAgent",
        "--tasks", "simulated", "--strategy", "corners", "--episodes", "3",
        "--tasks-per-episode", "2", "--db", str(tmp_path / "ag.db"), "--json", str(out),
        "--no-progress", "--jobs", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["config"]["strategy"] == "corners"
    assert doc["config"]["learning_rate"] is None  # the tuner takes no learning rate
    history = doc["history"]
    assert [r["strategy"] for r in history] == ["corners"] * 3
    dim = len(history[0]["unit"])
    assert history[1]["unit"] == [1.0] * dim and history[2]["unit"] == [0.0] * dim


def test_a_registry_loads_its_group_once_names_the_known_and_survives_a_broken_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "widgets_site"
    dist = root / "widgets-2.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: widgets\nVersion: 2.0\n")
    (dist / "entry_points.txt").write_text(
        "[agentgauge_test.widgets]\nspoon = widgets:spoon\nfork = widgets_missing:fork\n"
    )
    (root / "widgets.py").write_text('def spoon():\n    """A spoon."""\n')
    monkeypatch.syspath_prepend(str(root))
    adopted: list[str] = []

    def adopt(name: str, obj: object) -> None:
        adopted.append(name)
        registry.add(name, obj, source=obj)

    registry: Registry[object] = Registry(
        "widget", "agentgauge_test.widgets", builtins=(), adopt=adopt
    )
    with pytest.warns(PluginWarning, match=r"'fork' \(widgets_missing:fork\) of widgets"):
        entries = registry.entries()
    assert [(e.name, e.origin, e.description) for e in entries] == [
        ("spoon", "widgets", "A spoon.")
    ]
    registry.get("spoon")
    assert adopted == ["spoon"]  # loaded once
    with pytest.raises(UnknownNameError, match="unknown widget 'knife'; known widgets: spoon"):
        registry.get("knife")
    with pytest.raises(ValueError):  # what callers catch for any bad name
        registry.get("knife")
