"""For generated hostile values (planted credentials as keys and values at any depth,
secret-looking argument names on lists, numbers and objects, lone surrogates, huge numbers), in
every format agentgauge reads: read -> score -> store -> read back -> render (JSON, CSV, HTML,
the viewer's documents, export-otel) never raises, never changes a value that is not a secret,
and never writes a planted secret.

The native format takes generated traces whole. Every other reader takes a real export of its
format (the same agent run recorded by each; openai-chat and tau2-bench files hold its
messages) with its tool call's arguments, its tool's answer and its final answer replaced by
generated values wherever the export writes them (as JSON text inside an attribute too): the
trace it makes must hold exactly those values, secrets hidden. ``AGENTGAUGE_FUZZ_EXAMPLES``
sets the examples per format (``make fuzz`` runs many).
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from agentgauge.config import load_suite
from agentgauge.engine import EvaluateOptions, FileRun, evaluate_files
from agentgauge.io.importers import IMPORTERS
from agentgauge.report.export import write_csv, write_result_json
from agentgauge.report.html import write_html
from agentgauge.report.otel_export import write_evaluation_events
from agentgauge.store import Store
from agentgauge.web.app import create_app

ROOT = Path(__file__).parent
FIXTURES = ROOT / "fixtures" / "otel"
EXAMPLES = int(os.environ.get("AGENTGAUGE_FUZZ_EXAMPLES", "0")) or None

# made-up credentials in real formats (a planted value is a whole string, a key, or the end of
# a string)
PLANTED = (
    "sk-proj-Q3m8Zx1Lk9Pw2Vt7Rb4Nc6Yh0Jd5Fs8Ga2",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "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",
    "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    "xoxb-2848203651-2848203652-Q3m8Zx1Lk9Pw2Vt7Rb4Nc6Yh",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THs",
    "github_pat_11ABCDEFG0abcdefghijklmn_OPQRSTUVWXYZ0123456789abcdef",
)
SECRET_NAMES = ("password", "api_key", "nextToken", "Authorization", "client_secret")
PLAIN_NAMES = ("city", "count", "items", "unit", "query", "max_tokens", "input_tokens")
# ordinary text: words a trace holds, never a credential
plain_text = st.lists(
    st.sampled_from(("Paris", "the", "weather", "is", "42", "km/h", "ok", "-", ".", "Tokyo")),
    max_size=6,
).map(" ".join)
surrogate_text = st.sampled_from(("a\ud800b", "\udfff", "x\udbff"))
numbers = st.one_of(
    st.integers(-(10**40), 10**40),
    st.sampled_from((10**300, -(10**300), 2**63)),
    st.floats(allow_nan=False, allow_infinity=False),
)
leaf = st.one_of(
    plain_text, surrogate_text, numbers, st.booleans(), st.none(), st.sampled_from(PLANTED)
)
keys = st.one_of(st.sampled_from(PLAIN_NAMES + SECRET_NAMES), st.sampled_from(PLANTED))
values: st.SearchStrategy[Any] = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=10,
)
arguments = st.dictionaries(
    st.sampled_from(PLAIN_NAMES + SECRET_NAMES),
    st.one_of(values, st.lists(numbers, max_size=3), st.dictionaries(keys, leaf, max_size=2)),
    max_size=4,
)
# a tool's answer: an object, whose keys and values may be anything above
answers = st.dictionaries(keys, values, min_size=1, max_size=3)
# a final answer: text, which may hold a credential or a lone surrogate
final_answers = st.one_of(
    plain_text.map(lambda t: f"answer {t}"),
    surrogate_text,
    st.sampled_from(PLANTED),
    st.sampled_from(PLANTED).map(lambda s: f"the key is {s}"),
)


def _kept(original: Any, stored: Any, secret: bool = False) -> None:
    """``stored`` is ``original`` with its secrets hidden, every other value as it was."""
    if isinstance(original, str):
        if any(p in original for p in PLANTED):
            assert isinstance(stored, str) and not any(p in stored for p in PLANTED)
        elif secret and original:
            assert stored == "***"
        else:
            expected = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in original)
            assert stored == expected
    elif isinstance(original, list):
        assert isinstance(stored, list) and len(stored) == len(original)
        for a, b in zip(original, stored, strict=True):
            _kept(a, b, secret)
    elif isinstance(original, dict):
        assert isinstance(stored, dict) and len(stored) == len(original)
        for key, value in original.items():
            if key in PLANTED:
                assert key not in stored
                continue
            assert key in stored
            _kept(value, stored[key], key in SECRET_NAMES)
    elif isinstance(original, float):
        assert stored == original or (isinstance(stored, float) and abs(stored - original) == 0)
    else:
        assert stored == original and type(stored) is type(original)


def _written(folder: Path, db: Path, run_id: str) -> str:
    """Every text written for a run: the files, and the run's rows in the store (texts and
    decompressed blobs)."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in folder.iterdir()]
    con = sqlite3.connect(db)
    tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        columns = [c[1] for c in con.execute(f"PRAGMA table_info({table})")]  # from the schema
        if "run_id" not in columns and table != "runs":
            rows = con.execute(f"SELECT * FROM {table}")  # a cache: the whole of it
        else:
            key = "run_id" if "run_id" in columns else "id"
            rows = con.execute(f"SELECT * FROM {table} WHERE {key} = ?", (run_id,))
        for row in rows:
            for value in row:
                if isinstance(value, bytes):
                    with suppress(zlib.error):
                        value = zlib.decompress(value)
                    value = value.decode("utf-8", "replace")
                texts.append(str(value))
    con.close()
    return "\n".join(texts)


class _Viewer:
    """One store and the viewer over it, for the examples of one test: each example scores
    its input into a run of its own, writes the run's reports and reads it back."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db = folder / "s.db"
        self.reports = folder / "reports"
        self.reports.mkdir()
        self.client = TestClient(create_app(self.db), base_url="http://127.0.0.1").__enter__()

    def score_and_render(self, source: Path, fmt: str) -> list[Any]:
        """Evaluate ``source`` as ``fmt``, write every report of the run and ask the viewer
        for its pages; returns the stored traces, read back (each validates as a Trace), and
        checks that no planted secret was written."""
        out = self.reports
        with Store(self.db) as store:
            suite = load_suite("behavior")
            options = EvaluateOptions(jobs=1, progress=False)
            run_id = evaluate_files(FileRun(suite, [source], fmt), store=store, options=options)
            assert store.get_run(run_id).status == "completed"
            write_result_json(store, run_id, out / "r.json")
            write_csv(store, run_id, out / "r.csv")
            write_html(store, run_id, out / "r.html")
            write_evaluation_events(store, run_id, out / "events.json", 1_700_000_000 * 10**9)
            rows = list(store.iter_samples(run_id, with_trace=True))
        asked = [
            f"/api/run?id={run_id}",
            f"/api/samples?run={run_id}",
            *(f"/api/sample?run={run_id}&key={quote(row.key, safe='')}" for row in rows),
        ]
        answers = [self.client.get(path) for path in asked]
        assert [a.status_code for a in answers] == [200] * len(asked)
        (out / "pages.json").write_text("\n".join(a.text for a in answers), encoding="utf-8")
        written = _written(out, self.db, run_id)
        assert [secret for secret in PLANTED if secret in written] == []
        traces = []
        for row in rows:
            stored = row.trace()  # validates as a Trace
            assert stored is not None, row.error
            traces.append(json.loads(stored.model_dump_json(exclude_none=True)))
        return traces

    def close(self) -> None:
        """Ask for the list of every run the examples made, then stop the viewer."""
        runs = self.client.get("/api/runs")
        self.client.__exit__(None, None, None)
        assert runs.status_code == 200
        assert [secret for secret in PLANTED if secret in runs.text] == []


@pytest.fixture(scope="module")
def viewers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, _Viewer]]:
    """A viewer per test, made when the test first asks."""
    made: dict[str, _Viewer] = {}

    class Lazy(dict[str, _Viewer]):
        def __missing__(self, name: str) -> _Viewer:
            made[name] = self[name] = _Viewer(tmp_path_factory.mktemp("viewer"))
            return made[name]

    yield Lazy()
    for viewer in made.values():
        viewer.close()


def _settings(examples: int) -> Any:
    """``examples`` per test in ``make test`` (``AGENTGAUGE_FUZZ_EXAMPLES`` sets more)."""
    return settings(
        max_examples=EXAMPLES or examples,
        deadline=None,
        derandomize=EXAMPLES is None,
        # a failing example is reported as found: shrinking one means minutes of whole runs
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# -- native: generated traces, whole ----------------------------------------------------------


def _native(i: int, output: Any, params: Any, args: dict[str, Any], expected: Any) -> Any:
    return {
        "id": f"t{i}",
        "task": {
            "id": f"task{i}",
            "input": "look it up",
            "expected_output": expected,
            "expected_calls": [{"name": "lookup", "arguments": {k: [v] for k, v in args.items()}}],
        },
        "output": output,
        "params": params if isinstance(params, dict) else {"p": params},
        "steps": [
            {"index": 0, "kind": "tool_call", "tool_call": {"name": "lookup", "arguments": args}},
            {"index": 1, "kind": "tool_result", "result": expected},
        ],
    }


@_settings(8)
@given(st.lists(st.tuples(values, values, arguments, values), min_size=1, max_size=3))
def test_hostile_native_traces_round_trip_without_secrets(
    tmp_path_factory: pytest.TempPathFactory,
    viewers: dict[str, _Viewer],
    cases: list[tuple[Any, Any, dict[str, Any], Any]],
) -> None:
    traces = [_native(i, *case) for i, case in enumerate(cases)]
    source = tmp_path_factory.mktemp("input") / "traces.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    stored = viewers["native"].score_and_render(source, "native")
    assert len(stored) == len(traces)
    for original, back in zip(traces, stored, strict=True):
        _kept(original["output"], back.get("output"))
        _kept(original["task"]["expected_output"], back["task"].get("expected_output"))
        _kept(original["params"], back["params"])
        _kept(
            original["steps"][0]["tool_call"]["arguments"],
            back["steps"][0]["tool_call"]["arguments"],
        )
        expected_args = original["task"]["expected_calls"][0]["arguments"]
        _kept(expected_args, back["task"]["expected_calls"][0]["arguments"])


# -- every other reader: a real export with generated values planted --------------------------

# what the exports below record for the run's first tool call, its answer and the final answer
CALL_ID = "call_paris"
MARK_ARGUMENTS = {"city": "Paris"}
MARK_ANSWER = {"temp": 18, "sky": "sunny"}
MARK_OUTPUT = "Paris: 18°C and sunny. Rome: 24°C and clear."

# each span format: the export of its own, as the product writes it
EXPORTS = {
    "otel": "layered.jsonl",
    "otlp-json": "layered.otlp.json",
    "otlp-proto": "layered.pb",
    "tempo": "layered.tempo.json",
    "jaeger": "layered.jaeger.json",
    "openai-agents": "openai_agents_sdk.jsonl",
    "langsmith": "langsmith.json",
    "langfuse": "langfuse_export.json",
    # MLflow's Trace.to_json() of the same run, recorded by MLflow's own tracing
    "mlflow": "../frameworks/mlflow_openai_json/trace.json",
}


def _documents(path: Path) -> list[Any]:
    if path.suffix == ".pb":
        from agentgauge.io.otel.wire.protobuf import decode_request

        return [decode_request(path.read_bytes())]
    text = path.read_text(encoding="utf-8")
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _plant(value: Any, arguments: Any, answer: Any, output: str) -> Any:
    """``value`` with the marks replaced wherever they are, JSON text inside strings too."""
    if value == MARK_ARGUMENTS:
        return arguments
    if value == MARK_ANSWER:
        return answer
    if value == MARK_OUTPUT:
        return output
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            inner = json.loads(value)
        except ValueError:
            return value
        planted = _plant(inner, arguments, answer, output)
        return value if planted is inner else json.dumps(planted)
    if isinstance(value, list):
        items = [_plant(v, arguments, answer, output) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = {k: _plant(v, arguments, answer, output) for k, v in value.items()}
        return value if all(pairs[k] is value[k] for k in value) else pairs
    return value


def _write_export(fmt: str, docs: list[Any], path: Path) -> None:
    if fmt == "otlp-proto":
        from google.protobuf.json_format import ParseDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        (doc,) = docs
        path.write_bytes(ParseDict(doc, ExportTraceServiceRequest()).SerializeToString())
    else:  # JSON text, its lone surrogates escaped as JSON writes them
        path.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")


def _step(trace: dict[str, Any], kind: str, call_id: str) -> dict[str, Any]:
    """The trace's step of ``kind`` for the call ``call_id`` (the call, or its answer)."""
    calls = {s["id"]: s for s in trace["steps"] if s["kind"] == "tool_call"}
    for step in trace["steps"]:
        if kind == "tool_call" and step["kind"] == kind and step["tool_call"].get("id") == call_id:
            return step
        if kind == "tool_result" and step["kind"] == kind:
            call = calls.get(step.get("parent_id"))
            if call is not None and call["tool_call"].get("id") == call_id:
                return step
    raise AssertionError(f"no {kind} step for {call_id} in {trace['steps']}")


def _chat(arguments: dict[str, Any], answer: Any, output: str, as_text: bool) -> dict[str, Any]:
    """An openai-chat line of the same run."""
    call = {"id": CALL_ID, "type": "function", "function": {"name": "get_weather",
            "arguments": json.dumps(arguments) if as_text else arguments}}  # fmt: skip
    return {
        "messages": [
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": CALL_ID, "content": answer},
            {"role": "assistant", "content": output},
        ]
    }


def _tau2(arguments: dict[str, Any], answer: Any, output: str, as_text: bool) -> dict[str, Any]:
    """A tau2-bench results file of the same run: a real one's first simulation, its messages
    those of the run."""
    doc = json.loads((ROOT / "fixtures" / "tau2" / "mock_4trials.json").read_text())
    simulation = doc["simulations"][0]
    call = {"id": CALL_ID, "name": "get_weather", "arguments": arguments, "requestor": "assistant"}
    simulation["messages"] = [
        {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None},
        {"role": "user", "content": "What's the weather in Paris?", "tool_calls": None},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "id": CALL_ID,
            "role": "tool",
            "content": json.dumps(answer) if as_text else answer,
            "requestor": "assistant",
            "error": False,
        },
        {"role": "assistant", "content": output, "tool_calls": None},
        {"role": "user", "content": "Thanks. ###STOP###", "tool_calls": None},
    ]
    return {**doc, "simulations": [simulation]}


def _check_planted(
    trace: dict[str, Any], arguments: dict[str, Any], answer: Any, output: str
) -> None:
    _kept(arguments, _step(trace, "tool_call", CALL_ID)["tool_call"]["arguments"])
    _kept(answer, _step(trace, "tool_result", CALL_ID)["result"])
    _kept(output, trace.get("output"))


@pytest.mark.parametrize("fmt", ["openai-chat", "tau2", *EXPORTS])
@_settings(4)
@given(arguments=arguments, answer=answers, output=final_answers, as_text=st.booleans())
def test_hostile_values_in_every_format_round_trip_without_secrets(
    tmp_path_factory: pytest.TempPathFactory,
    viewers: dict[str, _Viewer],
    fmt: str,
    arguments: dict[str, Any],
    answer: dict[str, Any],
    output: str,
    as_text: bool,
) -> None:
    source = tmp_path_factory.mktemp("input") / Path(EXPORTS.get(fmt) or f"{fmt}.json").name
    if fmt == "otlp-proto":
        pytest.importorskip("opentelemetry.proto")
        # protobuf strings are UTF-8 on the wire: a lone surrogate is only JSON text's escape
        output = output.encode("utf-8", "replace").decode("utf-8").replace("?", "\ufffd")
    if fmt == "openai-chat":
        source.write_text(json.dumps(_chat(arguments, answer, output, as_text)) + "\n")
    elif fmt == "tau2":
        source.write_text(json.dumps(_tau2(arguments, answer, output, as_text)))
    else:
        docs = [_plant(d, arguments, answer, output) for d in _documents(FIXTURES / EXPORTS[fmt])]
        _write_export(fmt, docs, source)
    (trace,) = viewers[fmt].score_and_render(source, fmt)
    _check_planted(trace, arguments, answer, output)


def test_every_reader_is_covered() -> None:
    # a new importer joins the property above with an export of its own format
    assert set(IMPORTERS) == {"native", "openai-chat", "tau2", *EXPORTS}
