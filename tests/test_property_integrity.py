"""For generated hostile traces (planted credentials as keys and values at any depth,
secret-looking argument names on lists, numbers and objects, lone surrogates, huge numbers):
read -> score -> store -> read back -> render (JSON, CSV, HTML, the viewer's documents) never
raises, never changes a value that is not a secret, and never writes a planted secret."""

from __future__ import annotations

import json
import sqlite3
import zlib
from contextlib import suppress
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agentgauge.config import load_suite
from agentgauge.documents.pages import sample_document
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.io.jsonl import iter_raw_lines
from agentgauge.report.export import write_csv, write_result_json
from agentgauge.report.html import write_html
from agentgauge.store import Store

# made-up credentials in real formats (a planted value is a whole string, or a key)
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


def _trace(i: int, output: Any, params: Any, args: dict[str, Any], expected: Any) -> Any:
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


def _kept(original: Any, stored: Any, secret: bool = False) -> None:
    """``stored`` is ``original`` with its secrets hidden, every other value as it was."""
    if isinstance(original, str):
        if original in PLANTED:
            assert isinstance(stored, str) and original not in stored
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


def _written(folder: Path) -> str:
    """Every text written: the files, and the store's texts and decompressed blobs."""
    texts = []
    for path in folder.iterdir():
        if path.suffix == ".db":
            con = sqlite3.connect(path)
            for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                for row in con.execute(f"SELECT * FROM {table}"):  # names from the schema
                    for value in row:
                        if isinstance(value, bytes):
                            with suppress(zlib.error):
                                value = zlib.decompress(value)
                            value = value.decode("utf-8", "replace")
                        texts.append(str(value))
            con.close()
        elif path.is_file():
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


@settings(
    max_examples=15,
    deadline=None,
    # a failing example is reported as found: shrinking one means minutes of whole runs
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(values, values, arguments, values), min_size=1, max_size=3))
def test_hostile_traces_round_trip_without_secrets(
    tmp_path_factory: Any, cases: list[tuple[Any, Any, dict[str, Any], Any]]
) -> None:
    folder = tmp_path_factory.mktemp("prop")
    traces = [_trace(i, *case) for i, case in enumerate(cases)]
    source = tmp_path_factory.mktemp("input") / "traces.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    db = folder / "s.db"
    with Store(db) as store:
        options = EvaluateOptions(jobs=1, progress=False, sources=[str(source)])
        run_id = evaluate(
            iter_raw_lines(source), load_suite("behavior"), store=store, options=options
        )
        write_result_json(store, run_id, folder / "r.json")
        write_csv(store, run_id, folder / "r.csv")
        write_html(store, run_id, folder / "r.html")
        rows = list(store.iter_samples(run_id, with_trace=True))
        assert len(rows) == len(traces)
        pages = [json.dumps(sample_document(store, run_id, row.key)) for row in rows]
    (folder / "pages.json").write_text("\n".join(pages), encoding="utf-8")
    for original, row in zip(traces, rows, strict=True):
        stored = row.trace()  # validates as a Trace
        assert stored is not None
        back = json.loads(stored.model_dump_json(exclude_none=True))
        _kept(original["output"], back.get("output"))
        _kept(original["task"]["expected_output"], back["task"].get("expected_output"))
        _kept(original["params"], back["params"])
        _kept(
            original["steps"][0]["tool_call"]["arguments"],
            back["steps"][0]["tool_call"]["arguments"],
        )
        expected_args = original["task"]["expected_calls"][0]["arguments"]
        _kept(expected_args, back["task"]["expected_calls"][0]["arguments"])
    written = _written(folder)
    assert [secret for secret in PLANTED if secret in written] == []
