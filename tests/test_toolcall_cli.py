"""``agentgauge toolcall score | run | failures`` end to end: real BFCL slices, a DeepFabric file,
a scripted chat-completions server on 127.0.0.1, a real SQLite store."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.store import Store
from report_data import embedded
from toolcall_samples import READ_FILE_TOOL, SEARCH_TOOL, deepfabric_sample, write_jsonl
from toolcall_server import ServerState, record_retry_waits, scripted_server, tool_message

SECRET = "sk-cli-SECRET-9876543210"


def _lines(path: Path, n: int) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


def _bfcl_slice(shared_data: Path, tmp_path: Path, category: str, n: int) -> tuple[Path, Path]:
    """The first ``n`` questions of a BFCL category and their possible answers, in tmp_path."""
    bfcl = shared_data / "bfcl"
    questions = tmp_path / f"BFCL_v4_{category}.json"
    answers = tmp_path / f"BFCL_v4_{category}_answers.json"
    for src, dst in (
        (bfcl / f"BFCL_v4_{category}.json", questions),
        (bfcl / "possible_answer" / f"BFCL_v4_{category}.json", answers),
    ):
        dst.write_text("".join(json.dumps(r) + "\n" for r in _lines(src, n)), encoding="utf-8")
    return questions, answers


def _first_acceptable(ground_truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BFCL's decoded format built from the possible answers: the first acceptable value of
    each parameter, omitting a parameter only when omission is its first option."""

    def value(options: list[Any]) -> Any:
        chosen = options[0]
        return {k: value(v) for k, v in chosen.items()} if isinstance(chosen, dict) else chosen

    calls = []
    for call in ground_truth:
        ((name, params),) = call.items()
        calls.append({name: {p: value(opts) for p, opts in params.items() if opts[0] != ""}})
    return calls


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, ["toolcall", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture
def no_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    return record_retry_waits(monkeypatch)


@pytest.mark.parametrize(
    ("category", "n"), [("simple_python", 8), ("parallel", 4), ("live_multiple", 6)]
)
def test_score_ground_truth_is_all_valid_in_bfcl_mode(
    shared_data: Path, tmp_path: Path, category: str, n: int
) -> None:
    questions, answers = _bfcl_slice(shared_data, tmp_path, category, n)
    gold = [
        {"id": row["id"], "result": _first_acceptable(row["ground_truth"])}
        for row in _lines(answers, n)
    ]
    preds = write_jsonl(tmp_path / "preds.jsonl", list(reversed(gold)))  # aligned by id
    out = tmp_path / "out.json"
    result = _invoke(
        "score", "--dataset", str(questions), "--answers", str(answers),
        "--predictions", str(preds), "--format", "bfcl", "--json", str(out),
        "--db", str(tmp_path / "ag.db"), "--jobs", "1", "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["config"]["toolcall"]["mode"] == "bfcl"
    assert [s["id"] for s in doc["samples"]] == [row["id"] for row in reversed(gold)]
    assert all(s["valid"] is True and s["error_type"] is None for s in doc["samples"])
    assert doc["aggregate"]["value_accuracy"]["mean"] == 1.0
    assert doc["aggregate"]["composite"]["mean"] == 1.0
    assert doc["errors"] == []


def test_score_perturbed_bfcl_predictions(shared_data: Path, tmp_path: Path) -> None:
    questions, answers = _bfcl_slice(shared_data, tmp_path, "simple_python", 5)
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            # a string where the schema says integer: right tool, wrong type
            {"id": "simple_python_0",
             "result": [{"calculate_triangle_area": {"base": "10", "height": 5}}]},
            # the required parameter left out
            {"id": "simple_python_1", "result": "[math.factorial()]"},
            # correct, as Python-call text; the optional z omitted
            {"id": "simple_python_2", "result": "[math.hypot(x=4, y=5)]"},
            # the wrong tool
            {"id": "simple_python_3",
             "result": [{"solve_quadratic_equation": {"a": 1, "b": -3, "c": 2}}]},
            # simple_python_4: no prediction at all; and an id the dataset does not have
            {"id": "simple_python_9", "result": "[]"},
        ],
    )  # fmt: skip
    out = tmp_path / "out.json"
    db = tmp_path / "ag.db"
    result = _invoke(
        "score", "--dataset", str(questions), "--answers", str(answers),
        "--predictions", str(preds), "--format", "bfcl", "--json", str(out),
        "--html", str(tmp_path / "out.html"), "--db", str(db), "--jobs", "2", "--no-progress",
        "--name", "perturbed", "--tag", "smoke",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        [stored] = store.list_runs()
    assert (stored.name, stored.tags, stored.mode, stored.source) == (
        "perturbed",
        ["smoke"],
        "bfcl",
        "BFCL_v4_simple_python.json +2",
    )
    page = (tmp_path / "out.html").read_text()
    data, pages = embedded(page)
    assert "simple_python_3" in page and data["run"]["run"]["recommendation"] is not None
    # the error types are a chart of the report; each sample's calls are in its page once
    bars = next(s for s in data["run"]["sections"] if s["title"] == "Error types")
    assert dict(zip(bars["labels"], bars["values"], strict=True))["wrong_tool"] == 1
    wrong = next(p for p in pages.values() if p["trace_id"] == "simple_python_3")
    assert wrong["shared"]["predicted"][0]["name"] == "solve_quadratic_equation"
    assert all(
        "predicted" not in m["details"] for m in wrong["metrics"] if "predicted" in m["shared"]
    )
    doc = json.loads(out.read_text(encoding="utf-8"))
    samples = {s["id"]: s for s in doc["samples"]}
    assert {k: s["valid"] for k, s in samples.items()} == {
        "simple_python_0": False,
        "simple_python_1": False,
        "simple_python_2": True,
        "simple_python_3": False,
        "simple_python_4": False,
    }
    assert samples["simple_python_0"]["error_type"] == "type_error:base"
    assert samples["simple_python_1"]["error_type"] == "missing_required:number"
    assert samples["simple_python_3"]["error_type"] == "wrong_tool"
    assert samples["simple_python_4"]["error_type"] == "run_error"
    assert "1 samples have no answer from the model" in result.output
    # overall = .40 tool_selection + .35 parameter_accuracy + .25 execution_success
    composites = {k: s["composite"] for k, s in samples.items()}
    assert composites == pytest.approx(
        {
            "simple_python_0": 0.40,
            "simple_python_1": 0.40,
            "simple_python_2": 1.0,
            "simple_python_3": 0.0,
            "simple_python_4": 0.0,
        }
    )
    assert doc["aggregate"]["composite"]["mean"] == pytest.approx(1.8 / 5)
    assert doc["aggregate"]["value_accuracy"]["mean"] == pytest.approx(1 / 5)
    assert doc["errors"] == [
        {
            "source": str(preds),
            "line": 5,
            "field": "id",
            "message": "no task with id 'simple_python_9' in the dataset",
        }
    ]

    listing = tmp_path / "failures.json"
    shown = _invoke("failures", doc["run_id"], "--db", str(db), "--json", str(listing))
    assert shown.exit_code == 0, shown.output
    assert "4 of 5 samples failed" in shown.output
    # one error type a line, with its count
    lines = [line.split() for line in shown.output.splitlines()]
    for error_type in ("type_error:base", "missing_required:number", "wrong_tool", "run_error"):
        assert [error_type, "1"] in lines, error_type
    assert "simple_python_2" not in shown.output
    for sample_id in ("simple_python_0", "simple_python_1", "simple_python_3", "simple_python_4"):
        assert sample_id in shown.output
    failed = {row["id"]: row for row in json.loads(listing.read_text())["failures"]}
    assert list(failed) == [
        "simple_python_0",
        "simple_python_1",
        "simple_python_3",
        "simple_python_4",
    ]
    assert failed["simple_python_0"] == {
        "id": "simple_python_0",
        "query": "Find the area of a triangle with a base of 10 units and height of 5 units.",
        "expected": 'calculate_triangle_area(base=10, height=5, unit="units"|<omit>)',
        "predicted": 'calculate_triangle_area(base="10", height=5)',
        "error": "type_error:base ('base' is str, expected int)",
        "error_type": "type_error:base",
        "raw_output": [{"calculate_triangle_area": {"base": "10", "height": 5}}],
        "metric": "value_accuracy",
    }
    assert failed["simple_python_3"]["expected"] == "algebra.quadratic_roots(a=1, b=-3, c=2)"
    assert failed["simple_python_3"]["predicted"] == "solve_quadratic_equation(a=1, b=-3, c=2)"
    assert failed["simple_python_4"]["predicted"] == "(no call)"
    assert failed["simple_python_4"]["error"] == "run_error (no prediction)"

    limited = _invoke("failures", doc["run_id"][:8], "--db", str(db), "--limit", "1")
    assert limited.exit_code == 0 and "… 3 more (use --limit)" in limited.output


def test_failures_name_the_metric_that_failed_when_the_values_matched(
    shared_data: Path, tmp_path: Path
) -> None:
    questions, answers = _bfcl_slice(shared_data, tmp_path, "simple_python", 1)
    # 10.0 where the schema says integer: the value matches, the type does not
    call = {"calculate_triangle_area": {"base": 10.0, "height": 5}}
    preds = write_jsonl(tmp_path / "preds.jsonl", [{"id": "simple_python_0", "result": [call]}])
    db, listing = tmp_path / "ag.db", tmp_path / "failures.json"
    scored = _invoke(
        "score", "--dataset", str(questions), "--answers", str(answers), "--predictions",
        str(preds), "--format", "bfcl", "--mode", "strict", "--db", str(db), "--no-progress",
    )  # fmt: skip
    assert scored.exit_code == 0, scored.output
    with Store(db) as store:
        [run] = store.list_runs()
        [sample] = store.iter_samples(run.id)
    assert sample.values["value_accuracy"] == 1.0 and sample.values["parameter_accuracy"] == 0.0
    shown = _invoke("failures", run.id, "--db", str(db), "--json", str(listing))
    [failure] = json.loads(listing.read_text())["failures"]
    assert (failure["metric"], failure["error_type"]) == ("parameter_accuracy", "type_error:base")
    assert failure["error"].startswith("type_error:base")
    assert ["type_error:base", "1"] in [line.split() for line in shown.output.splitlines()]
    assert "(from parameter_accuracy)" in shown.output


def _deepfabric_rows() -> list[dict[str, Any]]:
    tools = [READ_FILE_TOOL, SEARCH_TOOL]
    return [
        deepfabric_sample(id="df-read", tools=tools, generator="deepfabric 4.13"),
        {
            "id": "df-chat",
            "messages": [
                {"role": "user", "content": "Say hello"},
                {"role": "assistant", "content": "Hello!"},
            ],
            "tools": tools,
            "final_answer": "Hello!",
        },
        {
            "id": "df-search",
            "messages": [
                {"role": "user", "content": "Find 5 pages on tides"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "search",
                                "arguments": '{"query": "tides", "limit": 5}',
                            },
                        }
                    ],
                },
            ],
            "tool_context": {
                "executions": [
                    {
                        "function_name": "search",
                        "arguments": '{"query": "tides", "limit": 5}',
                        "result": "[]",
                    }
                ]
            },
            "tools": tools,
        },
    ]


def test_score_deepfabric_file_with_weights(tmp_path: Path) -> None:
    dataset = write_jsonl(tmp_path / "df.jsonl", _deepfabric_rows())
    read_call = tool_message("read_file", {"file_path": "config.json"}, call_id="call_0")
    bad_search = tool_message("search", {"query": "tides", "limit": "5"}, call_id="call_1")
    answer = {"role": "assistant", "content": "debug is true"}
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {"id": "df-read#1", "result": read_call},
            {"id": "df-read#2", "result": answer},
            {"id": "df-chat#1", "result": {"role": "assistant", "content": "Hello!"}},
            {"id": "df-search#1", "result": bad_search},
        ],
    )
    out = tmp_path / "out.json"
    result = _invoke(
        "score", "--dataset", str(dataset), "--predictions", str(preds),
        "--format", "deepfabric", "--weights", "tool_selection=0.5,parameter_accuracy=0.5",
        "--json", str(out), "--db", str(tmp_path / "ag.db"), "--jobs", "1", "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["config"]["toolcall"]["mode"] == "strict"
    assert doc["config"]["suite"]["weights"] == {"tool_selection": 0.5, "parameter_accuracy": 0.5}
    samples = {s["id"]: s for s in doc["samples"]}
    assert samples["df-read#1"]["metrics"]["tool_selection"] == 1.0
    assert samples["df-read#1"]["valid"] is True
    assert samples["df-read#1"]["composite"] == 1.0
    assert samples["df-read#2"]["metrics"]["tool_selection"] == 1.0  # the answer, no call
    assert samples["df-chat#1"]["metrics"]["tool_selection"] == 1.0  # no call expected, none made
    assert samples["df-search#1"]["metrics"]["tool_selection"] == 1.0
    assert samples["df-search#1"]["metrics"]["parameter_accuracy"] == 0.0
    assert samples["df-search#1"]["error_type"] == "type_error:limit"
    assert samples["df-search#1"]["composite"] == pytest.approx(0.5)  # .5·1 + .5·0
    mean = doc["aggregate"]["composite"]["mean"]
    assert mean == pytest.approx(sum(s["composite"] for s in samples.values()) / 4)

    gate = _invoke(
        "score", "--dataset", str(dataset), "--predictions", str(preds),
        "--format", "deepfabric", "--weights", "tool_selection=0.5,parameter_accuracy=0.5",
        "--db", str(tmp_path / "ag.db"), "--jobs", "1", "--no-progress",
        "--fail-under", str(round(mean + 0.01, 3)),
    )  # fmt: skip
    assert gate.exit_code == 1 and "below --fail-under" in gate.output


def test_score_a_chat_per_turn_or_its_last_turn(tmp_path: Path) -> None:
    chat = {
        "id": "c",
        "messages": [
            {"role": "user", "content": "Find 5 pages on tides"},
            tool_message("search", {"query": "tides", "limit": 5}, call_id="call_1"),
            {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
            {"role": "assistant", "content": "Nothing found."},
            {"role": "user", "content": "Read config.json"},
            tool_message("read_file", {"file_path": "config.json"}, call_id="call_2"),
        ],
        "tools": [READ_FILE_TOOL, SEARCH_TOOL],
    }
    dataset = write_jsonl(tmp_path / "chats.jsonl", [chat])
    read_call = tool_message("read_file", {"file_path": "config.json"})
    per_turn = write_jsonl(
        tmp_path / "turns.jsonl",
        [
            {"id": "c#1", "result": tool_message("search", {"query": "tides", "limit": 5})},
            {"id": "c#2", "result": read_call},  # a call where the answer was due
            {"id": "c#3", "result": read_call},
        ],
    )
    last = write_jsonl(tmp_path / "last.jsonl", [{"id": "c", "result": read_call}])
    docs = {}
    for turns, preds in (("all", per_turn), ("last", last)):
        out = tmp_path / f"{turns}.json"
        result = _invoke(
            "score", "--dataset", str(dataset), "--predictions", str(preds), "--format", "openai",
            "--turns", turns, "--json", str(out), "--db", str(tmp_path / "ag.db"),
            "--jobs", "1", "--no-progress",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        docs[turns] = json.loads(out.read_text(encoding="utf-8"))
    assert docs["all"]["config"]["toolcall"]["turns"] == "all"
    assert {s["id"]: s["valid"] for s in docs["all"]["samples"]} == {
        "c#1": True,
        "c#2": False,
        "c#3": True,
    }
    assert docs["all"]["samples"][1]["error_type"] == "spurious_call"
    assert [(s["id"], s["valid"]) for s in docs["last"]["samples"]] == [("c", True)]
    assert docs["last"]["errors"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--weights", "tool_selection=0.5,speed=0.5"], "'speed'"),
        (["--weights", "tool_selection"], "'tool_selection' is not metric=weight"),
        (["--weights", "tool_selection=fast"], "'fast' for 'tool_selection' is not a number"),
        (["--weights", "tool_selection=-1"], "'tool_selection' must be a finite number >= 0"),
        (["--mode", "fuzzy"], "fuzzy"),
    ],
)
def test_score_usage_errors_exit_2(
    shared_data: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    questions, answers = _bfcl_slice(shared_data, tmp_path, "simple_python", 1)
    preds = write_jsonl(tmp_path / "p.jsonl", [{"id": "simple_python_0", "result": "[]"}])
    result = _invoke(
        "score", "--dataset", str(questions), "--answers", str(answers),
        "--predictions", str(preds), "--format", "bfcl", "--db", str(tmp_path / "ag.db"), *args,
    )  # fmt: skip
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "ag.db").exists()


def test_score_missing_file_exit_2(tmp_path: Path) -> None:
    result = _invoke(
        "score", "--dataset", str(tmp_path / "nope.jsonl"), "--predictions",
        str(write_jsonl(tmp_path / "p.jsonl", [])), "--format", "openai",
    )  # fmt: skip
    assert result.exit_code == 2 and "no such file" in result.output


def test_run_against_local_server_then_score_and_inspect(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_waits: list[float]
) -> None:
    questions, answers = _bfcl_slice(shared_data, tmp_path, "simple_python", 5)
    query = {row["id"]: row["question"][0][-1]["content"] for row in _lines(questions, 5)}
    state = ServerState()
    triangle = tool_message("calculate_triangle_area", {"base": 10, "height": 5})
    state.by_query = {
        query["simple_python_0"]: triangle,
        # the model sees BFCL's dotted names rewritten, as OpenAI requires, and answers so
        query["simple_python_1"]: tool_message("math_factorial", {"number": 5}),
        query["simple_python_2"]: "rate_limited",  # 429 twice, then a call of another tool
        query["simple_python_3"]: "slow",
        query["simple_python_4"]: "malformed",
    }  # fmt: skip
    monkeypatch.setenv("AG_CLI_KEY", SECRET)
    out = tmp_path / "preds.jsonl"
    db = tmp_path / "ag.db"
    report = tmp_path / "out.json"
    with scripted_server(state) as (base, _):
        result = _invoke(
            "run", "--endpoint", base, "--model", "scripted", "--dataset", str(questions),
            "--answers", str(answers), "--format", "bfcl", "--out", str(out),
            "--concurrency", "3", "--timeout", "1", "--max-retries", "2",
            "--api-key-env", "AG_CLI_KEY", "--json", str(report), "--db", str(db),
            "--jobs", "1", "--no-progress",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "5 samples sent, 2 failed requests" in result.output

    assert {r.headers["Authorization"] for r in state.requests} == {f"Bearer {SECRET}"}
    assert {r.body["temperature"] for r in state.requests} == {0.0}
    assert {r.body["seed"] for r in state.requests} == {0}
    first_tools = {r.body["tools"][0]["function"]["name"] for r in state.requests}
    assert "math_factorial" in first_tools and "math.factorial" not in first_tools
    assert state.seen["rate_limited"] == 3 and state.seen["slow"] == 3
    assert state.seen["malformed"] == 1

    predictions = {p["id"]: p for p in map(json.loads, out.read_text().splitlines())}
    assert set(predictions) == set(query)
    factorial = predictions["simple_python_1"]["result"]["tool_calls"][0]["function"]
    assert factorial["name"] == "math.factorial"
    assert predictions["simple_python_1"]["calls"] == [
        {"id": "call_0", "name": "math.factorial", "arguments": {"number": 5}}
    ]
    assert predictions["simple_python_2"]["attempts"] == 3
    assert predictions["simple_python_3"]["error"] == (
        "timeout: no complete response within 1 s (after 3 attempts)"
    )
    assert predictions["simple_python_4"]["error"].startswith("response body is not JSON")

    doc = json.loads(report.read_text(encoding="utf-8"))
    samples = {s["id"]: s for s in doc["samples"]}
    assert {k: s["valid"] for k, s in samples.items()} == {
        "simple_python_0": True,
        "simple_python_1": True,
        "simple_python_2": False,
        "simple_python_3": False,
        "simple_python_4": False,
    }
    assert samples["simple_python_2"]["error_type"] == "wrong_tool"
    assert samples["simple_python_3"]["error_type"] == "run_error"
    assert doc["aggregate"]["composite"]["mean"] == pytest.approx(2 / 5)
    assert doc["config"]["toolcall"]["model"] == "scripted"
    assert doc["config"]["toolcall"]["runner"]["api_key_env"] == "AG_CLI_KEY"

    listing = tmp_path / "failures.json"
    shown = _invoke("failures", doc["run_id"], "--db", str(db), "--json", str(listing))
    assert shown.exit_code == 0
    assert "3 of 5 samples failed" in shown.output
    failed = {row["id"]: row for row in json.loads(listing.read_text())["failures"]}
    assert failed["simple_python_2"]["predicted"] == 'get_weather(city="Rome")'
    assert failed["simple_python_3"]["error"] == (
        "run_error (timeout: no complete response within 1 s (after 3 attempts))"
    )

    for text in (
        result.output,
        shown.output,
        listing.read_text(encoding="utf-8"),
        out.read_text(encoding="utf-8"),
        report.read_text(encoding="utf-8"),
    ):
        assert SECRET not in text
    assert SECRET.encode() not in db.read_bytes()


def test_run_parses_text_answers_and_scores_them(tmp_path: Path, no_waits: list[float]) -> None:
    rows = _deepfabric_rows()
    rows[0]["messages"] = rows[0]["messages"][:3]  # up to the call: one turn, scripted by its query
    dataset = write_jsonl(tmp_path / "df.jsonl", rows)
    hermes = (
        '<tool_call>{"name": "read_file", "arguments": {"file_path": "config.json"}}</tool_call>'
    )
    state = ServerState()
    state.by_query = {
        "Show config.json": {"role": "assistant", "content": hermes},
        "Say hello": {"role": "assistant", "content": "Hello!"},
        "Find 5 pages on tides": tool_message("search", {"query": "tides", "limit": 5}),
    }
    report = tmp_path / "out.json"
    with scripted_server(state) as (base, _):
        result = _invoke(
            "run", "--endpoint", base, "--model", "m", "--dataset", str(dataset),
            "--format", "deepfabric", "--out", str(tmp_path / "p.jsonl"), "--json", str(report),
            "--db", str(tmp_path / "ag.db"), "--jobs", "1", "--no-progress",
            "--fail-under", "1.0",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    samples = {s["id"]: s for s in json.loads(report.read_text())["samples"]}
    assert {k: s["valid"] for k, s in samples.items()} == {
        "df-read#1": True,
        "df-chat#1": True,
        "df-search#1": True,
    }
    assert samples["df-read#1"]["metrics"]["tool_selection"] == 1.0
    assert samples["df-chat#1"]["metrics"]["tool_selection"] == 1.0


def test_run_no_score_writes_predictions_only(
    tmp_path: Path, no_waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dataset = write_jsonl(tmp_path / "df.jsonl", _deepfabric_rows())
    out = tmp_path / "preds.jsonl"
    db = tmp_path / "ag.db"
    with scripted_server() as (base, state):
        result = _invoke(
            "run", "--endpoint", base + "/v1", "--model", "m", "--dataset", str(dataset),
            "--format", "deepfabric", "--out", str(out), "--no-score", "--db", str(db),
            "--limit", "2", "--no-progress", "--temperature", "none", "--seed", "none",
            "--max-tokens", "32",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not db.exists()
    assert len(state.requests) == 2
    assert "no API key in $OPENAI_API_KEY: sending none" in result.output
    assert not any("Authorization" in r.headers for r in state.requests)
    for request in state.requests:  # for models that refuse sampling settings
        assert "temperature" not in request.body and "seed" not in request.body
        assert request.body["max_tokens"] == 32
    # each turn's prompt is the conversation before it, earlier calls and results included
    sent = {r.body["messages"][-1]["content"]: r.body["messages"] for r in state.requests}
    assert sent["Show config.json"] == [
        {"role": "system", "content": "You can use tools."},
        {"role": "user", "content": "Show config.json"},
    ]
    [call] = sent['{"debug": true}'][2]["tool_calls"]
    assert call["function"] == {"name": "read_file", "arguments": '{"file_path": "config.json"}'}
    assert sent['{"debug": true}'][3] == {
        "role": "tool",
        "content": '{"debug": true}',
        "tool_call_id": "call_0",
    }
    assert sorted(json.loads(line)["id"] for line in out.read_text().splitlines()) == [
        "df-read#1",
        "df-read#2",
    ]


def test_run_resume_sends_only_unanswered_samples(tmp_path: Path, no_waits: list[float]) -> None:
    dataset = write_jsonl(tmp_path / "df.jsonl", _deepfabric_rows())
    out = tmp_path / "preds.jsonl"
    args = [
        "run", "--dataset", str(dataset), "--format", "deepfabric", "--model", "m",
        "--out", str(out), "--no-score", "--no-progress",
    ]  # fmt: skip
    state = ServerState()
    state.by_query = {"Say hello": "malformed"}
    with scripted_server(state) as (base, _):
        first = _invoke(*args, "--endpoint", base)
    assert first.exit_code == 0 and "4 samples sent, 1 failed requests" in first.output
    state = ServerState()
    state.by_query = {"Say hello": {"role": "assistant", "content": "Hello!"}}
    with scripted_server(state) as (base, _):
        second = _invoke(*args, "--endpoint", base, "--resume")
    assert second.exit_code == 0 and "1 samples sent, 0 failed requests" in second.output
    assert [r.body["messages"][-1]["content"] for r in state.requests] == ["Say hello"]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == [
        "df-chat#1",
        "df-read#1",
        "df-read#2",
        "df-search#1",
    ]
    assert all("error" not in line for line in lines)


def test_run_where_every_request_failed_is_a_failed_run(
    tmp_path: Path, no_waits: list[float]
) -> None:
    rows = _deepfabric_rows()
    dataset = write_jsonl(tmp_path / "df.jsonl", rows)
    db = tmp_path / "ag.db"
    state = ServerState()
    state.by_query = {
        q: "malformed"
        for q in ("Show config.json", '{"debug": true}', "Say hello", "Find 5 pages on tides")
    }
    with scripted_server(state) as (base, _):
        result = _invoke(
            "run", "--endpoint", base, "--model", "m", "--dataset", str(dataset),
            "--format", "deepfabric", "--out", str(tmp_path / "p.jsonl"), "--db", str(db),
            "--jobs", "1", "--no-progress",
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "every request failed: the run is marked failed" in " ".join(result.output.split())
    with Store(db) as store:
        [run] = store.list_runs()
    assert (run.status, run.n_samples) == ("failed", 4)


def test_run_never_overwrites_its_out_file_unasked(tmp_path: Path) -> None:
    dataset = write_jsonl(tmp_path / "df.jsonl", _deepfabric_rows())
    out = tmp_path / "p.jsonl"
    out.write_text("earlier answers\n")
    args = [
        "run", "--model", "m", "--dataset", str(dataset), "--format", "deepfabric",
        "--out", str(out), "--no-score", "--no-progress", "--limit", "1",
    ]  # fmt: skip
    with scripted_server() as (base, state):
        refused = _invoke(*args, "--endpoint", base)
        assert refused.exit_code == 2 and state.requests == []
        assert "--overwrite replaces it, --resume keeps its answered lines" in refused.output
        assert out.read_text() == "earlier answers\n"
        replaced = _invoke(*args, "--endpoint", base, "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["df-read#1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--api-key-env", "AG_CLI_UNSET_KEY"], "environment variable AG_CLI_UNSET_KEY is not set"),
        (["--weights", "nope=1"], "'nope'"),
        (["--temperature", "hot"], "--temperature: 'hot' is neither a number nor 'none'"),
        (["--seed", "-3"], "--seed: '-3' is not a finite non-negative number"),
        (["--temperature", "nan"], "--temperature: 'nan' is not a finite non-negative number"),
    ],
)
def test_run_usage_errors_exit_2_before_any_request(
    tmp_path: Path, args: list[str], message: str
) -> None:
    dataset = write_jsonl(tmp_path / "df.jsonl", _deepfabric_rows())
    with scripted_server() as (base, state):
        result = _invoke(
            "run", "--endpoint", base, "--model", "m", "--dataset", str(dataset),
            "--format", "deepfabric", "--out", str(tmp_path / "p.jsonl"), *args,
        )  # fmt: skip
    assert result.exit_code == 2 and message in result.output
    assert state.requests == []


def test_run_bad_endpoint_exit_2(tmp_path: Path) -> None:
    dataset = write_jsonl(tmp_path / "df.jsonl", _deepfabric_rows())
    result = _invoke(
        "run", "--endpoint", "localhost:8000", "--model", "m", "--dataset", str(dataset),
        "--format", "deepfabric", "--out", str(tmp_path / "p.jsonl"),
    )  # fmt: skip
    assert result.exit_code == 2 and "not an http(s) URL" in result.output


def test_run_against_a_dead_endpoint_fails_in_one_line_within_seconds(
    shared_data: Path, tmp_path: Path
) -> None:
    """40 samples of BFCL live_multiple against a port where nothing listens: one request, then
    one line and exit 2 (each sample was retried 5 times: 33.5 s); the earlier --out stays."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "p.jsonl"
    out.write_text("earlier answers\n")
    db = tmp_path / "ag.db"
    started = time.perf_counter()
    result = _invoke(
        "run", "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m",
        "--dataset", str(shared_data / "bfcl" / "BFCL_v4_live_multiple.json"),
        "--answers", str(shared_data / "bfcl" / "possible_answer" / "BFCL_v4_live_multiple.json"),
        "--format", "bfcl", "--limit", "40", "--out", str(out), "--overwrite", "--db", str(db),
        "--no-progress",
    )  # fmt: skip
    assert time.perf_counter() - started < 10
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[-1].startswith(
        f"error: the first request to http://127.0.0.1:{port}/v1/chat/completions failed: "
        "ConnectError"
    ), result.output
    assert out.read_text() == "earlier answers\n"
    assert not db.exists() or Store(db).list_runs() == []


def test_failures_unknown_or_foreign_run_exit_2(tmp_path: Path) -> None:
    assert _invoke("failures", "abc", "--db", str(tmp_path / "none.db")).exit_code == 2
    db = tmp_path / "ag.db"
    with Store(db) as store:
        run_id = store.create_run(kind="evaluate", suite="behavior", config={}, sources=[])
    assert _invoke("failures", "nope", "--db", str(db)).exit_code == 2
    foreign = _invoke("failures", run_id, "--db", str(db))
    assert foreign.exit_code == 2 and "not a tool-calling run" in foreign.output


def test_bfcl_without_answers_exit_2(shared_data: Path, tmp_path: Path) -> None:
    questions, _ = _bfcl_slice(shared_data, tmp_path, "simple_python", 2)
    preds = write_jsonl(tmp_path / "p.jsonl", [{"id": "simple_python_0", "result": "[]"}])
    result = _invoke(
        "score", "--dataset", str(questions), "--predictions", str(preds), "--format", "bfcl",
        "--db", str(tmp_path / "ag.db"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "no usable sample" in result.output and "possible-answer file" in result.output


def test_a_lone_surrogate_in_a_models_answer_is_stored_shown_and_read_back(
    tmp_path: Path, no_waits: list[float]
) -> None:
    from starlette.testclient import TestClient

    from agentgauge.web.app import create_app

    rows = _deepfabric_rows()
    dataset = write_jsonl(tmp_path / "df.jsonl", rows)
    state = ServerState()
    # half of a UTF-16 pair in a model's text and in its call's arguments (JSON's \ud800)
    state.by_query = {
        "Show config.json": tool_message("read_file", {"file_path": "config\ud800.json"}),
        "Say hello": {"role": "assistant", "content": "Hello\udfff!"},
        "Find 5 pages on tides": tool_message("search", {"query": "tides", "limit": 5}),
    }
    db = tmp_path / "ag.db"
    predictions = tmp_path / "p.jsonl"
    with scripted_server(state) as (base, _):
        result = _invoke(
            "run", "--endpoint", base, "--model", "m", "--dataset", str(dataset),
            "--format", "deepfabric", "--out", str(predictions), "--json",
            str(tmp_path / "run.json"), "--html", str(tmp_path / "run.html"), "--db", str(db),
            "--jobs", "1", "--no-progress",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert "Hello\ufffd!" in json.dumps(report, ensure_ascii=False)
    # the predictions file keeps the model's answer as it came (its JSON escape); scoring it
    # reads the lone surrogate as U+FFFD and says where
    assert "\\ud800" in predictions.read_text(encoding="utf-8")
    scored = _invoke(
        "score", "--dataset", str(dataset), "--format", "deepfabric", "--predictions",
        str(predictions), "--json", str(tmp_path / "score.json"), "--html",
        str(tmp_path / "score.html"), "--db", str(db), "--jobs", "1", "--no-progress",
    )  # fmt: skip
    assert scored.exit_code == 0, scored.output
    # the predictions come in the order the answers arrived
    lines = predictions.read_text(encoding="utf-8").splitlines()
    for escape, field in (
        ("\\ud800", "calls[0].arguments.file_path"),
        ("\\udfff", "result.content"),
    ):
        line = next(n for n, text in enumerate(lines, 1) if escape in text)
        assert f"p.jsonl:{line}: {field}: warning: a lone surrogate" in scored.output
    scored_report = (tmp_path / "score.json").read_text(encoding="utf-8")
    assert '"file_path": "config\ufffd.json"' in scored_report
    with Store(db) as store:
        runs = [run.id for run in store.list_runs()]
    client = TestClient(create_app(db), base_url="http://127.0.0.1")
    for run_id in runs:
        with Store(db) as store:
            keys = [row.key for row in store.iter_samples(run_id)]
        for key in keys:
            page = client.get("/api/sample", params={"run": run_id, "key": key})
            assert page.status_code == 200, (run_id, key)
    failures = _invoke("failures", runs[0], "--db", str(db))
    assert failures.exit_code == 0
