"""The agent judges (rubric, goal_accuracy, trajectory_judge) against a real OpenAI-compatible
HTTP server on 127.0.0.1 (judge_server.py), through pydantic-ai's OpenAIChatModel: what they
are sent, their values, the rubric's evaluation steps written once and cached, set-up errors
before a run, and the judges' cost in the run's usage."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import Suite, SuiteError, load_suite
from agentgauge.documents.summary import run_usage
from agentgauge.engine import EvaluateOptions, evaluate, iter_sources, score_traces
from agentgauge.judges import client as judge_client
from agentgauge.judges.preflight import JudgeSetupError, check_judge
from agentgauge.judges.render import CHARS_PER_TOKEN, render_trace
from agentgauge.judges.settings import JudgeSettings
from agentgauge.metrics.base import MetricOptionError, create_metric
from agentgauge.model import ExpectedCall, Step, StepKind, Task, ToolCall, Trace
from agentgauge.report.export import result_document
from agentgauge.store import Store
from judge_server import (
    COMPLETION_TOKENS,
    KEY_ENV,
    PROMPT_TOKENS,
    RUBRIC_VALUE,
    TRAJECTORY_VALUE,
    VERDICTS,
    JudgeServer,
    judge_options,
    judge_server,
)

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo_traces.jsonl"
# 1000 prompt tokens at $0.5/1k + 50 completion tokens at $2/1k
CALL_COST = PROMPT_TOKENS * 0.5 / 1000 + COMPLETION_TOKENS * 2.0 / 1000
runner = CliRunner()


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with judge_server() as state:
        yield state


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(KEY_ENV, "sk-test-0123456789")
    judge_client._MEMO.clear()
    yield
    judge_client._MEMO.clear()


def _settings(server: JudgeServer, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """The test server's judge at $0.5 and $2 per 1,000 input and output tokens."""
    prices = {"price_per_1k_input_tokens": 0.5, "price_per_1k_output_tokens": 2.0}
    return judge_options(server, tmp_path, **{**prices, **extra})


def _messages(request: dict[str, Any]) -> tuple[str, str]:
    """The system and user messages of a request."""
    messages = request["body"]["messages"]
    system = next(m["content"] for m in messages if m["role"] == "system")
    user = next(m["content"] for m in messages if m["role"] == "user")
    return system, user


def _asks(request: dict[str, Any]) -> set[str]:
    """The fields of the verdict a request asks for."""
    return set(request["body"]["tools"][0]["function"]["parameters"]["properties"])


def _trace(trace_id: str = "t1", output: Any = "Canberra") -> Trace:
    return Trace(
        id=trace_id,
        task=Task(
            id="capital",
            description="Answer the question.",
            input={"question": "What is the capital of Australia?"},
            expected_output="Canberra",
            tools=[],
        ),
        output=output,
        steps=[
            Step(
                index=0,
                kind=StepKind.tool_call,
                tool_call=ToolCall(name="search", arguments={"q": "capital"}),
            ),
            Step(index=1, kind=StepKind.tool_result, result={"hits": ["Canberra"]}),
            Step(index=2, kind=StepKind.llm, agent="qa", content="Canberra"),
        ],
    )


def test_rubric_writes_its_steps_once_then_judges_with_them(
    server: JudgeServer, tmp_path: Path
) -> None:
    options = _settings(server, tmp_path, criteria="The answer is correct and complete.")
    rubric = create_metric("rubric", options)
    results = rubric.score_batch([_trace("a"), _trace("b", "Sydney")])

    # one call writes the steps, then one verdict per trace
    assert [_asks(r) for r in server.requests] == [{"steps"}, *[{"reasoning", "score"}] * 2]
    _, steps_user = _messages(server.requests[0])
    assert "The answer is correct and complete." in steps_user
    assert "<scale>\n1-5\n</scale>" in steps_user
    # the two verdicts are asked concurrently: take trace a's, whichever came first
    system, user = next(
        m for m in map(_messages, server.requests[1:]) if "Canberra\n</output>" in m[1]
    )
    assert "1. Read the task.\n2. Check the output against the criteria.\n3. Decide." in system
    assert "Criteria:\nThe answer is correct and complete." in system
    # the default inputs: the task and the final output, not the steps
    assert "<task>" in user and "<output>\nCanberra\n</output>" in user
    assert "<steps" not in user and "<expected_output>" not in user

    first, second = results
    assert first.value == second.value == pytest.approx(RUBRIC_VALUE)
    assert first.reason == VERDICTS["score"]["reasoning"]
    d = first.details
    assert (d["score"], d["scale"], d["threshold"], d["passed"]) == (4, "1-5", 0.5, True)
    assert d["steps"] == VERDICTS["steps"]["steps"] and d["steps_source"] == "generated"
    assert d["usage"]["cost_usd"] == pytest.approx(CALL_COST)
    # the steps' call is reported once, with the batch's first sample
    assert d["steps_generation"]["cached"] is False
    assert "steps_generation" not in second.details

    # a new process: the steps and the verdicts come from the SQLite cache
    judge_client._MEMO.clear()
    again = create_metric("rubric", options).score_batch([_trace("a"), _trace("b", "Sydney")])
    assert len(server.requests) == 3
    assert [r.value for r in again] == [r.value for r in results]
    assert again[0].details["steps_generation"]["cached"] is True


def test_rubric_given_steps_pass_fail_and_inputs(server: JudgeServer, tmp_path: Path) -> None:
    options = _settings(
        server,
        tmp_path,
        criteria="The answer matches the expected output.",
        steps=["Compare the output with the expected output."],
        scale="pass/fail",
        inputs=["expected_output", "output", "tool_calls"],
    )
    result = create_metric("rubric", options).score(_trace())
    (request,) = server.requests
    system, user = _messages(request)
    assert _asks(request) == {"reasoning", "passed"}
    assert "1. Compare the output with the expected output." in system
    seen = "the agent's tool calls and their results, the agent's final output and the expected"
    assert seen in system
    assert "<expected_output>\nCanberra\n</expected_output>" in user
    # only the tool call and its result: the llm step is not a tool step
    assert '<tool_calls total="2" shown="2">' in user and "[2] llm" not in user
    assert result.value == 1.0
    assert result.details["verdict"] == "pass" and result.details["steps_source"] == "given"

    # no expected output: nothing to compare with, no call
    bare = _trace()
    bare.task.expected_output = None
    missing = create_metric("rubric", options).score(bare)
    assert missing.value is None
    assert missing.reason == "the rubric needs the trace's expected_output, which it does not have"
    assert len(server.requests) == 1


def test_rubric_options_are_checked() -> None:
    with pytest.raises(MetricOptionError, match="criteria"):
        create_metric("rubric", {})
    with pytest.raises(MetricOptionError, match="scale must be 'LOW-HIGH'"):
        create_metric("rubric", {"criteria": "x", "scale": "5-1"})
    with pytest.raises(MetricOptionError, match="unknown input 'answer'"):
        create_metric("rubric", {"criteria": "x", "inputs": ["answer"]})
    with pytest.raises(MetricOptionError, match="threshold"):
        create_metric("rubric", {"criteria": "x", "threshold": 2.0})


def test_a_0_10_rubric_and_its_threshold(server: JudgeServer, tmp_path: Path) -> None:
    options = _settings(server, tmp_path, criteria="Helpful.", scale="0-10", threshold=0.5)
    result = create_metric("rubric", options).score(_trace())
    # the server's 4 on 0-10
    assert result.value == pytest.approx(0.4)
    assert result.details["passed"] is False
    schema = server.requests[-1]["body"]["tools"][0]["function"]["parameters"]
    assert schema["properties"]["score"]["minimum"] == 0
    assert schema["properties"]["score"]["maximum"] == 10


def test_goal_accuracy_with_and_without_a_reference(server: JudgeServer, tmp_path: Path) -> None:
    judge = create_metric("goal_accuracy", _settings(server, tmp_path))
    result = judge.score(_trace())
    _, user = _messages(server.requests[0])
    assert "<reference_goal>\nCanberra\n</reference_goal>" in user
    assert "<output>\nCanberra\n</output>" in user and '<steps total="3" shown="3">' in user
    assert result.value == 1.0
    assert result.reason == VERDICTS["achieved"]["reasoning"]
    assert result.details["achieved"] is True and result.details["with_reference"] is True

    inferred = _trace()
    inferred.task.expected_output = None
    judge.score(inferred)
    _, user = _messages(server.requests[1])
    assert "<reference_goal>" not in user


def test_trajectory_judge_sees_the_path_and_the_reference(
    server: JudgeServer, tmp_path: Path
) -> None:
    trace = _trace()
    trace.task.expected_calls = [ExpectedCall(name="search", arguments={"q": ["capital"]})]
    result = create_metric("trajectory_judge", _settings(server, tmp_path)).score(trace)
    _, user = _messages(server.requests[0])
    assert '[0] tool_call ?: search({"q": "capital"})' in user
    assert '"name": "search"' in user.split("<reference_trajectory>")[1]
    assert result.value == pytest.approx(TRAJECTORY_VALUE)
    assert result.details["issues"] == ["step 3 repeats step 1"]

    stepless = create_metric("trajectory_judge", _settings(server, tmp_path)).score(
        Trace(id="s", task=Task(id="t"))
    )
    assert stepless.value is None and stepless.reason == "the trace has no steps to judge"
    assert len(server.requests) == 1


def test_render_trace_shortens_the_middle_with_markers() -> None:
    steps = [
        Step(
            index=i,
            kind=StepKind.tool_call,
            agent="a",
            tool_call=ToolCall(name=f"tool_{i}", arguments={"x": "y" * 40}),
        )
        for i in range(300)
    ]
    output = "BEGIN " + "word " * 5000 + " END"
    trace = Trace(id="long", task=Task(id="t", description="Do it."), output=output, steps=steps)
    view = render_trace(trace, ["input", "steps", "output"], budget_tokens=1000)
    assert view.shortened
    assert len(view.text) <= 1000 * CHARS_PER_TOKEN
    # the first and last steps stay, the middle is replaced by a marker that counts them
    assert "tool_0(" in view.text and "tool_299(" in view.text
    omitted = 300 - view.steps_shown
    assert f"... [{omitted} steps omitted to fit the budget] ..." in view.text
    assert f'<steps total="300" shown="{view.steps_shown}">' in view.text
    # the output keeps its beginning and end around a marker
    assert "BEGIN" in view.text and "END\n</output>" in view.text
    assert "chars omitted] …" in view.text
    # sections in a fixed order
    assert view.text.index("<task>") < view.text.index("<steps") < view.text.index("<output>")

    short = render_trace(_trace(), ["input", "output"], budget_tokens=1000)
    assert not short.shortened and "omitted" not in short.text


def _judged_suite(path: Path, server: JudgeServer, tmp_path: Path, **extra: Any) -> Path:
    settings = _settings(server, tmp_path, **extra)
    judge = "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items() if k != "cache_path")
    path.write_text(
        f"""
name = "judged-demo"
[metrics.helpfulness]
kind = "rubric"
criteria = "The output gives the user what the task asks for."
[metrics.concise]
kind = "rubric"
criteria = "The output has no needless text."
scale = "pass/fail"
inputs = ["output"]
[metrics.goal_accuracy]
[weights]
helpfulness = 0.4
concise = 0.2
goal_accuracy = 0.4
[judge]
{judge}
"""
    )
    return path


def test_two_rubrics_and_goal_accuracy_on_the_demo(
    server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # the demo's longest traces shortened, not explored: one request per judge call
    suite_file = _judged_suite(tmp_path / "judged.toml", server, tmp_path, long_traces="truncate")
    db = tmp_path / "runs.db"
    args = ["evaluate", str(DEMO), "--suite", str(suite_file), "--db", str(db), "--jobs", "1"]
    first = runner.invoke(app, [*args, "--no-progress", "--json", str(tmp_path / "a.json")])
    assert first.exit_code == 0, first.output
    live = len(server.requests)
    # no call is ever made twice: the same question for another sample comes from the memo
    asked = [(_messages(r), tuple(sorted(_asks(r)))) for r in server.requests]
    assert len(set(asked)) == live
    assert sum(_asks(r) == {"steps"} for r in server.requests) == 2  # one per rubric

    doc = json.loads((tmp_path / "a.json").read_text())
    samples = doc["samples"]
    assert len(samples) == 72
    for sample in samples:
        assert sample["metrics"]["helpfulness"] == pytest.approx(RUBRIC_VALUE)
        assert sample["metrics"]["concise"] == 1.0
        assert sample["metrics"]["goal_accuracy"] == 1.0
        assert sample["reasons"]["helpfulness"] == VERDICTS["score"]["reasoning"]
        assert sample["reasons"]["goal_accuracy"] == VERDICTS["achieved"]["reasoning"]
    judge = doc["usage"]["judge"]
    # every live call is counted once: the two steps calls and the verdicts
    assert judge["calls"] == judge["requests"] == live
    assert judge["cached"] == 3 * 72 - (live - 2)
    assert judge["cost_usd"] == pytest.approx(live * CALL_COST)
    assert judge["total_tokens"] == live * (PROMPT_TOKENS + COMPLETION_TOKENS)
    shown_cost = f"${live * CALL_COST:.4f}"
    assert f"judges: {live} calls paid for ({live} requests" in first.output
    assert shown_cost in first.output
    # the run records the steps the rubrics used
    with Store(db) as store:
        setup = store.records(doc["run_id"], "judge_setup")
    assert [(r["metric"], r["cached"]) for r in setup] == [
        ("helpfulness", False),
        ("concise", False),
    ]
    assert setup[0]["steps"] == VERDICTS["steps"]["steps"]

    # a second run in a new process: everything from the cache, nothing spent
    judge_client._MEMO.clear()
    second = runner.invoke(app, [*args, "--no-progress", "--json", str(tmp_path / "b.json")])
    assert second.exit_code == 0, second.output
    assert len(server.requests) == live
    again = json.loads((tmp_path / "b.json").read_text())
    assert again["usage"]["judge"]["calls"] == 0
    assert again["usage"]["judge"]["cost_usd"] == 0.0
    assert [s["metrics"] for s in again["samples"]] == [s["metrics"] for s in samples]


def test_pool_workers_share_the_steps_written_before_the_run(
    server: JudgeServer, tmp_path: Path
) -> None:
    suite = load_suite(_judged_suite(tmp_path / "judged.toml", server, tmp_path))
    with Store(tmp_path / "pool.db") as store:
        options = EvaluateOptions(jobs=2, batch_size=8, progress=False)
        evaluate(iter_sources([DEMO]), suite, store=store, options=options)
    assert sum(_asks(r) == {"steps"} for r in server.requests) == 2


def test_a_failing_judge_leaves_that_sample_none_and_the_run_goes_on(
    server: JudgeServer, tmp_path: Path
) -> None:
    # the first sample's request fails twice (one retry), the others answer
    server.script = ["500", "500"]
    suite = Suite(
        name="goal",
        metrics=["goal_accuracy"],
        weights={"goal_accuracy": 1.0},
        judge=JudgeSettings(**_settings(server, tmp_path, concurrency=1)),
    )
    traces = [_trace(f"t{i}", f"answer {i}") for i in range(3)]
    with Store(tmp_path / "r.db") as store:
        run = evaluate(traces, suite, store=store, options=EvaluateOptions(jobs=1, progress=False))
        rows = list(store.iter_samples(run))
        status = store.get_run(run).status
    assert status == "completed"
    assert [r.values["goal_accuracy"] for r in rows] == [None, 1.0, 1.0]
    reason = rows[0].reasons["goal_accuracy"]
    assert "HTTP 500" in reason
    assert len(server.requests) == 4


def _evaluate_goal(tmp_path: Path, *options: str) -> Any:
    """``agentgauge evaluate`` of the demo with a suite of goal_accuracy alone."""
    suite = tmp_path / "goal.toml"
    suite.write_text('metrics = ["goal_accuracy"]\n')
    args = ["evaluate", str(DEMO), "--suite", str(suite), "--no-progress", *options]
    return runner.invoke(app, args)


def test_missing_provider_key_stops_evaluate_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def no_model(*args: Any) -> Any:
        raise AssertionError("a judge model was built")

    monkeypatch.setattr(judge_client, "_build_model", no_model)
    db = tmp_path / "r.db"
    result = _evaluate_goal(tmp_path, "--db", str(db), "--judge", "openai:gpt-4o-mini")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "OPENAI_API_KEY" in lines[0]
    assert "--judge-api-key-env ([judge] api_key_env)" in lines[0]
    with Store(db) as store:
        assert store.list_runs() == []


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"model": "nosuchprovider:m"}, "unknown judge provider 'nosuchprovider'"),
        ({"model": "gpt-4o-mini"}, "names no provider"),
        ({"model": "m", "api_key_env": "AGENTGAUGE_UNSET_VAR"}, "AGENTGAUGE_UNSET_VAR is not set"),
        ({"model": "m", "base_url": "not a url"}, "is not an http(s) URL"),
        ({"model": "anthropic:claude"}, "ANTHROPIC_API_KEY"),
    ],
)
def test_judge_setup_errors_name_what_to_set(
    settings: dict[str, Any], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("AGENTGAUGE_UNSET_VAR", raising=False)
    with pytest.raises(JudgeSetupError, match=named.replace("(", r"\(").replace(")", r"\)")):
        check_judge(JudgeSettings(**settings))


def test_an_unreachable_judge_url_is_a_usage_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    db = str(tmp_path / "r.db")
    result = _evaluate_goal(tmp_path, "--db", db, "--judge", "m", "--judge-url", url)
    assert result.exit_code == 2
    assert f"judge base URL {url} is unreachable" in result.output
    assert "--judge-url" in result.output


def test_metric_tables_name_several_rubrics(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[metrics.helpful]\nkind = "rubric"\ncriteria = "Helpful."\n'
        '[metrics.correct]\nkind = "rubric"\ncriteria = "Correct."\nscale = "pass/fail"\n'
        "[metrics.accuracy]\n[weights]\nhelpful = 1\n"
    )
    suite = load_suite(path)
    assert suite.metrics == ["helpful", "correct", "accuracy"]
    assert suite.kinds == {"helpful": "rubric", "correct": "rubric"}
    built = suite.build_metrics()
    assert [m.name for m in built] == ["helpful", "correct", "accuracy"]
    assert [type(m).__name__ for m in built] == ["Rubric", "Rubric", "Accuracy"]

    path.write_text('[metrics.helpful]\nkind = "rubrik"\ncriteria = "x"\n')
    with pytest.raises(SuiteError, match=r"metrics\.helpful: kind: unknown metric 'rubrik'"):
        load_suite(path)
    path.write_text('[metrics.accuracy]\nkind = "rubric"\ncriteria = "x"\n')
    with pytest.raises(SuiteError, match="'accuracy' is the name of a built-in metric"):
        load_suite(path)
    path.write_text('[metrics.helpful]\nkind = "rubric"\ncriterion = "x"\n')
    with pytest.raises(SuiteError, match="unknown option 'criterion'"):
        load_suite(path)


def test_preview_shows_the_judges_view_without_a_call(server: JudgeServer, tmp_path: Path) -> None:
    suite_file = _judged_suite(tmp_path / "judged.toml", server, tmp_path)
    result = runner.invoke(
        app,
        [
            "judge",
            "preview",
            str(DEMO),
            "--metric",
            "helpfulness",
            "--suite",
            str(suite_file),
            "--id",
            "demo-002",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "helpfulness on demo-002 · about" in result.output
    assert "Criteria:\nThe output gives the user what the task asks for." in result.output
    assert "(written by the judge from the criteria on the first run, then cached)" in result.output
    assert '{"request": "What is the weather in Lisbon right now, in Celsius?"}' in result.output
    assert server.requests == []

    trajectory = runner.invoke(
        app, ["judge", "preview", str(DEMO), "--metric", "trajectory_judge", "--limit", "2"]
    )
    assert trajectory.exit_code == 0, trajectory.output
    assert trajectory.output.count("trajectory_judge on demo-") == 2
    unknown = runner.invoke(app, ["judge", "preview", str(DEMO), "--metric", "accuracy"])
    assert unknown.exit_code == 2 and "is not an LLM judge" in unknown.output


def test_score_traces_reports_the_judge_spend_per_sample(
    server: JudgeServer, tmp_path: Path
) -> None:
    suite = Suite(
        name="g",
        metrics=["goal_accuracy", "trajectory_judge"],
        judge=JudgeSettings(**_settings(server, tmp_path)),
    )
    first, repeat = score_traces([_trace("a"), _trace("b")], suite)
    assert first.usage["judge"] == {
        "calls": 2,
        "cached": 0,
        "requests": 2,
        "input_tokens": 2 * PROMPT_TOKENS,
        "output_tokens": 2 * COMPLETION_TOKENS,
        "cache_read_tokens": 0,
        "total_tokens": 2 * (PROMPT_TOKENS + COMPLETION_TOKENS),
        "cost_usd": pytest.approx(2 * CALL_COST),
        "cost_unknown": 0,
    }
    # the same inputs under another id: served by the memo, nothing spent
    assert repeat.usage["judge"]["calls"] == 0 and repeat.usage["judge"]["cached"] == 2


def test_cache_holds_no_key(server: JudgeServer, tmp_path: Path) -> None:
    create_metric("rubric", _settings(server, tmp_path, criteria="x")).score(_trace())
    with sqlite3.connect(tmp_path / "agentgauge.db") as conn:
        versions = sorted(r[0] for r in conn.execute("SELECT prompt_version FROM judge_cache"))
    assert versions == ["rubric/1", "rubric_steps/1"]


def test_run_usage_of_a_judged_run(server: JudgeServer, tmp_path: Path) -> None:
    suite = Suite(
        name="g", metrics=["goal_accuracy"], judge=JudgeSettings(**_settings(server, tmp_path))
    )
    with Store(tmp_path / "r.db") as store:
        options = EvaluateOptions(jobs=1, progress=False)
        run = evaluate([_trace("a", "x"), _trace("b", "y")], suite, store=store, options=options)
        usage = run_usage(store, run)
        doc = result_document(store, run)
    assert usage["judge"]["calls"] == 2
    assert usage["judge"]["cost_usd"] == pytest.approx(2 * CALL_COST)
    assert doc["samples"][0]["usage"]["judge"]["cost_usd"] == pytest.approx(CALL_COST)
