"""Every reader under hostile input (hypothesis): real documents with a value replaced by an
integer too long, a nesting too deep, an infinite or huge number, a lone surrogate or any other
JSON value, or cut short or sprinkled with bytes. No exception escapes a reader; every failure
is an error located in its file. ``AGENTGAUGE_FUZZ_EXAMPLES`` sets the examples per reader
(``make fuzz`` runs many)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgauge.config import SuiteError, load_suite
from agentgauge.io.importers import IMPORTERS, get_importer
from agentgauge.io.jsonl import ReadError, read_traces
from agentgauge.io.openai_chat import read_openai_chat
from agentgauge.io.otel import read_otel
from agentgauge.model import Task
from agentgauge.review.loader import read_paper_file
from agentgauge.toolcall.datasets import read_dataset, read_predictions
from agentgauge.toolcall.parsers import parse_tool_calls
from toolcall_samples import READ_FILE_TOOL, SEARCH_TOOL, deepfabric_sample

EXAMPLES = int(os.environ.get("AGENTGAUGE_FUZZ_EXAMPLES", "25"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="AGENTGAUGE_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ROOT = Path(__file__).resolve().parent

# markers replaced in the JSON text by what json.dumps cannot write
_TOKENS = {
    "\x00HUGE\x00": "9" * 5000,
    "\x00DEEP\x00": "[" * 3000 + "]" * 3000,
    "\x00INF\x00": "1e999",
    "\x00NEGINF\x00": "-1e999",
    "\x00NAN\x00": "NaN",
    "\x00SURROGATE\x00": '"\\ud800"',
    "\x00WIDE\x00": "1" + "0" * 400 + ".5",
    "\x00HEXLIKE\x00": '"0x' + "f" * 64 + '"',
}
_HOSTILE = st.sampled_from(sorted(_TOKENS))
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | _HOSTILE,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _text(value: Any) -> str:
    text = json.dumps(value)
    for marker, token in _TOKENS.items():
        text = text.replace(json.dumps(marker), token)
    return text


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterable[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))


def _mutated(data: st.DataObject, doc: Any) -> str:
    """The document with up to three values replaced, then maybe cut or given stray bytes."""
    doc = json.loads(json.dumps(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = data.draw(_JSON)
    text = _text(doc)
    damage = data.draw(st.sampled_from(["none", "none", "cut", "bytes"]))
    if damage == "cut":
        text = text[: data.draw(st.integers(0, len(text)))]
    elif damage == "bytes":
        at = data.draw(st.integers(0, len(text)))
        text = (
            text[:at] + data.draw(st.sampled_from(["\x00", "\u2028", "\n", "}{", "\\"])) + text[at:]
        )
    return text


def _check(items: Iterable[Any], path: Path) -> int:
    """Every item read; a ReadError must name the file and a line."""
    n = 0
    for item in items:
        n += 1
        if isinstance(item, ReadError):
            assert item.source == str(path) and item.line >= 0 and item.message
    return n


def _run(reader: Callable[[Path], Iterable[Any]], lines: list[str], name: str = "in.jsonl") -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        _check(reader(path), path)


NATIVE = [
    json.loads(line)
    for line in (ROOT.parent / "examples" / "demo_traces.jsonl").read_text().splitlines()[:3]
]


def _documents(path: Path) -> list[Any]:
    text = path.read_text()
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


OTEL = [
    doc
    for f in sorted((ROOT / "data" / "otel").glob("*.json"))
    if f.name != "malformed.json"
    for doc in _documents(f)
]
# the exports of real instrumentations, for every importer
EXPORTS = [
    (f.name, doc)
    for f in sorted((ROOT / "fixtures" / "otel").glob("*.json*"))
    for doc in _documents(f)[:2]
]
# formats with real files of their own: tau2-bench results (two of a run's trials) and MLflow's
# Trace.to_json()
_TAU2 = json.loads((ROOT / "fixtures" / "tau2" / "mock_4trials.json").read_text())
OWN_EXPORTS = {
    "tau2": [("results.json", {**_TAU2, "simulations": _TAU2["simulations"][:2]})],
    "mlflow": [
        ("trace.json", json.loads(f.read_text()))
        for f in sorted((ROOT / "fixtures" / "frameworks").glob("mlflow*/trace.json"))
    ],
}
CHAT = {
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "read config.json"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"file_path": "config.json"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        {"role": "assistant", "content": "done"},
    ],
    "tools": [READ_FILE_TOOL],
}  # fmt: skip
DATASET = deepfabric_sample(id="df", tools=[READ_FILE_TOOL, SEARCH_TOOL])
BFCL = {
    "id": "simple_0",
    "question": [[{"role": "user", "content": "area of a 10 by 5 triangle"}]],
    "function": [{"name": "area", "description": "d", "parameters": {
        "type": "dict", "properties": {"base": {"type": "integer"}}, "required": ["base"]}}],
}  # fmt: skip
BFCL_ANSWER = {"id": "simple_0", "ground_truth": [{"area": {"base": [10]}}]}
PREDICTION = {"id": "s0", "result": [{"area": {"base": 10}}], "latency_s": 0.5,
              "usage": {"input_tokens": 3, "output_tokens": 2}}  # fmt: skip
PAPER = {"id": "7", "title": "t", "abstract": "a", "accepted": True,
         "reviews": [{"comments": "good", "RECOMMENDATION": 4, "ORIGINALITY": "3"}]}  # fmt: skip


@FUZZ
@given(st.data())
def test_fuzz_native_jsonl(data: st.DataObject) -> None:
    _run(read_traces, [_mutated(data, doc) for doc in NATIVE])


@FUZZ
@given(st.data())
def test_fuzz_otel(data: st.DataObject) -> None:
    docs = data.draw(st.lists(st.sampled_from(OTEL), min_size=1, max_size=3))
    _run(read_otel, [_mutated(data, doc) for doc in docs], "spans.json")


@FUZZ
@given(st.data(), st.sampled_from(sorted(IMPORTERS)))
def test_fuzz_every_importer(data: st.DataObject, name: str) -> None:
    fixture, doc = data.draw(st.sampled_from(OWN_EXPORTS.get(name, EXPORTS)))
    _run(get_importer(name), [_mutated(data, doc)], fixture)


@FUZZ
@given(st.data())
def test_fuzz_openai_chat(data: st.DataObject) -> None:
    _run(read_openai_chat, [_mutated(data, CHAT), json.dumps(CHAT)])


@FUZZ
@given(st.data(), st.sampled_from(["deepfabric", "openai"]))
def test_fuzz_conversation_datasets(data: st.DataObject, fmt: str) -> None:
    _run(lambda p: read_dataset(p, fmt), [_mutated(data, DATASET), json.dumps(DATASET)])


@FUZZ
@given(st.data())
def test_fuzz_bfcl_dataset(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        answers = Path(folder) / "answers.json"
        answers.write_text(_mutated(data, BFCL_ANSWER) + "\n", errors="surrogatepass")
        path = Path(folder) / "BFCL_v3_simple.json"
        path.write_text(_mutated(data, BFCL) + "\n", errors="surrogatepass")
        for item in read_dataset(path, "bfcl", answers=answers):
            if isinstance(item, ReadError):
                assert item.source in (str(path), str(answers))


@FUZZ
@given(st.data())
def test_fuzz_predictions(data: st.DataObject) -> None:
    tasks = {k: Task(id=k, expected_calls=[]) for k in ("s0", "s1")}
    line = _mutated(data, PREDICTION)
    _run(lambda p: read_predictions(p, tasks), [line, json.dumps({**PREDICTION, "id": "s1"})])


@FUZZ
@given(st.data())
def test_fuzz_model_answers(data: st.DataObject) -> None:
    answer = _mutated(data, {"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]})
    result = parse_tool_calls(data.draw(st.sampled_from([answer, f"Sure: {answer} ok"])))
    assert result.error is None or isinstance(result.error, str)


@FUZZ
@given(st.data())
def test_fuzz_peerread(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "acl_2017" / "train" / "reviews" / "7.json"
        path.parent.mkdir(parents=True)
        path.write_text(_mutated(data, PAPER), encoding="utf-8", errors="surrogatepass")
        paper, errors = read_paper_file(path)
        assert paper is not None or errors
        assert all(e.source.startswith(folder) for e in errors)


_TOML_VALUES = st.sampled_from(
    ["1", "0.5", "9" * 5000, "1e999", "inf", "nan", "-0.0", "5e-324", '"x"', "true",
     "[" * 600 + "]" * 600, "1979-05-27", "{a = 1}", '"\\ud800"', "0x" + "f" * 400, "[1, ["]
)  # fmt: skip


@FUZZ
@given(st.data())
def test_fuzz_suite_toml(data: st.DataObject) -> None:
    weight, name = data.draw(_TOML_VALUES), data.draw(_TOML_VALUES | st.just('"s"'))
    text = f'name = {name}\nmetrics = ["accuracy"]\n[weights]\naccuracy = {weight}\n'
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(st.text(max_size=5)) + text[at:]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            load_suite(str(path))
        except SuiteError as exc:
            assert str(path) in str(exc)


@pytest.mark.parametrize("token", sorted(_TOKENS))
def test_every_hostile_token_reaches_the_readers(token: str) -> None:
    # the markers are written as the text they stand for, not as strings
    assert json.dumps(token) not in _text({"v": token})
