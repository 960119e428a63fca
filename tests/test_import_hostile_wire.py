"""Jaeger and LangSmith files with hostile fields: NaN and infinite times, wrong-typed
``references``/``logs``/``spans``, a 5,000-digit int64 tag, ``extra``/``metadata``/
``child_runs`` of the wrong type. Each is read without a traceback; the file's good trace is
imported beside it, and a LangSmith tree of thousands of runs is read in linear time."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.otel.wire.langsmith import langsmith_spans

FIXTURES = Path(__file__).parent / "fixtures" / "otel"
runner = CliRunner()


def _import(tmp_path: Path, doc: Any) -> tuple[int, str, list[dict[str, Any]]]:
    source = tmp_path / "in.json"
    source.write_text(json.dumps(doc))  # NaN and Infinity written as JavaScript spells them
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["import", str(source), "--out", str(out)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    traces = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return result.exit_code, result.output, traces


def _jaeger_copy(trace_id: str, change: Any) -> dict[str, Any]:
    good = json.loads((FIXTURES / "layered.jaeger.json").read_text())["data"][0]
    bad = copy.deepcopy(good)
    bad["traceID"] = trace_id
    for span in bad["spans"]:
        span["traceID"] = trace_id
        change(span)
    return bad


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(startTime=float("nan")),
        lambda s: s.update(startTime=float("inf"), duration=float("-inf")),
        lambda s: s.update(startTime=10**30),
        lambda s: s.update(references={"refType": "CHILD_OF"}),
        lambda s: s.update(references=7, logs="not a list"),
        lambda s: s.update(logs=[1, "x", {"fields": 3}]),
        lambda s: s["tags"].append({"key": "n", "type": "int64", "value": "9" * 5000}),
    ],
    ids=["nan", "infinity", "huge", "references dict", "references int", "logs", "5000 digits"],
)
def test_a_hostile_jaeger_trace_leaves_the_good_one_whole(tmp_path: Path, change: Any) -> None:
    good = json.loads((FIXTURES / "layered.jaeger.json").read_text())["data"][0]
    bad = _jaeger_copy("f" * 32, change)
    code, output, traces = _import(tmp_path, {"data": [good, bad, {"spans": {"not": "a list"}}]})
    assert code == 0, output
    assert "Traceback" not in output
    ids = [t["id"] for t in traces]
    assert good["traceID"] in ids


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(extra=["not", "an", "object"]),
        lambda r: r.update(extra={"metadata": "text"}),
        lambda r: r.update(child_runs={"id": "x"}),
        lambda r: r.update(child_runs=5),
    ],
    ids=["extra list", "metadata text", "child_runs dict", "child_runs int"],
)
def test_a_hostile_langsmith_run_is_read_without_a_traceback(tmp_path: Path, change: Any) -> None:
    doc = json.loads((FIXTURES / "langsmith.json").read_text())
    change(doc)
    for child in doc.get("child_runs") if isinstance(doc.get("child_runs"), list) else []:
        change(child) if isinstance(child, dict) and "run_type" in child else None
    code, output, _ = _import(tmp_path, doc)
    assert code in (0, 1) and "Traceback" not in output


def test_a_deep_langsmith_tree_is_read_in_linear_time() -> None:
    root: dict[str, Any] = {"id": "r", "run_type": "chain", "child_runs": []}
    root["child_runs"] = [
        {"id": f"c{i}", "run_type": "tool", "name": "t", "child_runs": []} for i in range(20000)
    ]
    spans = langsmith_spans(root)
    assert [s["spanId"] for s in spans[:3]] == ["r", "c0", "c1"] and len(spans) == 20001
