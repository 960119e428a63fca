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


def _chain_doc(kind: str, n: int) -> dict[str, Any]:
    def span(i: int, parent: int | None, name: str, op: str) -> dict[str, Any]:
        start = 1_700_000_000_000_000_000 + i * 1000
        out: dict[str, Any] = {
            "traceId": "a" * 32,
            "spanId": f"{i + 1:016x}",
            "name": name,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 500),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": op}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": "a"}},
            ],
        }
        if parent is not None:
            out["parentSpanId"] = f"{parent + 1:016x}"
        return out

    if kind == "chain":  # an agent that calls itself n deep
        spans = [span(i, i - 1 if i else None, "invoke_agent a", "invoke_agent") for i in range(n)]
    elif kind == "siblings":  # one agent making n model calls one after the other
        root = span(0, None, "invoke_agent a", "invoke_agent")
        spans = [root] + [span(i, 0, "chat m", "chat") for i in range(1, n)]
    else:  # parent links that close a cycle
        spans = [span(i, (i + 1) % n, "invoke_agent a", "invoke_agent") for i in range(n)]
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}


@pytest.mark.parametrize("kind", ["chain", "siblings", "cycle"])
def test_span_trees_are_built_in_about_linear_steps(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentgauge.io.otel import SpanStream, assemble, merge

    steps = {"parent": 0, "same_call": 0}
    parent, same_call = assemble._Group.parent, merge._same_call

    def counted_parent(self: Any, obs: Any) -> Any:
        steps["parent"] += 1
        return parent(self, obs)

    def counted_same_call(*args: Any) -> bool:
        steps["same_call"] += 1
        return same_call(*args)

    monkeypatch.setattr(assemble._Group, "parent", counted_parent)
    monkeypatch.setattr(merge, "_same_call", counted_same_call)
    n = 2000
    stream = SpanStream("otlp")
    items = [*stream.add(_chain_doc(kind, n), 1), *stream.finish()]
    assert any(not isinstance(item, dict) for item in items)
    # each span looks at its parent a few times, and at siblings it overlaps in time: counted
    # walks, not timings (a walk to the root from every span was n^2 / 2 = 2,000,000 steps)
    assert steps["parent"] < 20 * n and steps["same_call"] < 20 * n, steps


def test_a_span_file_that_decompresses_past_the_cap_is_a_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    good = (FIXTURES / "layered.jaeger.json").read_bytes()
    (tmp_path / "good.json").write_bytes(good)
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as fh:  # 64 MB of blanks in 64 KB
        for _ in range(64):
            fh.write(b" " * (1 << 20))
    monkeypatch.setenv("AGENTGAUGE_MAX_SPAN_FILE_BYTES", str(8 << 20))
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app, ["import", str(bomb), str(tmp_path / "good.json"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "holds more than 8388608 bytes once decompressed" in result.output
    assert len(out.read_text().splitlines()) == 1  # the other file's trace


def test_an_id_in_base64_that_begins_with_0x_is_decoded_not_cut() -> None:
    import base64

    from agentgauge.io.otel.wire.span import hex_id

    # protobuf's JSON mapping writes ids in base64: one in 4,096 begins with "0x"
    raw = bytes([0xD3, 0x10]) + bytes(range(14))
    text = base64.b64encode(raw).decode()
    assert text.startswith("0x")
    assert hex_id(text) == raw.hex()
    assert hex_id("0x" + "ab" * 16) == "ab" * 16
