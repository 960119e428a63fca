"""tau2-bench's results in: a results file written by tau2-bench's own code (its mock domain,
its LLM agent and LLM user simulator, through LiteLLM, against a scripted server on 127.0.0.1:
``fixtures/make_tau2_fixture.py``) is imported, scored with the ``simulation`` suite, and its
rewards and pass^k equal what tau2-bench's ``compute_metrics`` computed from the same file
(``fixtures/tau2/tau2_metrics.json``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import load_suite
from agentgauge.engine import score_traces
from agentgauge.io.jsonl import ReadError
from agentgauge.io.tau2 import read_tau2
from agentgauge.model import StepKind, Trace
from agentgauge.stats import pass_k_over_tasks
from agentgauge.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tau2"
RESULTS = FIXTURES / "mock_4trials.json"
REFERENCE = json.loads((FIXTURES / "tau2_metrics.json").read_text())
runner = CliRunner()


def _traces(path: Path = RESULTS) -> list[Trace]:
    items = list(read_tau2(path))
    assert all(isinstance(t, Trace) for t in items), [str(e) for e in items]
    return items  # type: ignore[return-value]


def test_every_simulation_is_a_conversation_trace() -> None:
    traces = _traces()
    assert sorted(t.id for t in traces) == sorted(REFERENCE["rewards"])
    create = next(t for t in traces if t.id == "create_task_1#t0")
    assert [(s.kind, s.agent) for s in create.steps] == [
        (StepKind.llm, "llm_agent"),  # tau2-bench's greeting
        (StepKind.message, "user"),
        (StepKind.llm, "llm_agent"),
        (StepKind.tool_call, "llm_agent"),
        (StepKind.tool_result, "llm_agent"),
        (StepKind.llm, "llm_agent"),
        (StepKind.message, "user"),
    ]
    call = create.steps[3].tool_call
    assert call is not None and call.name == "create_task"
    assert call.arguments == {"user_id": "user_1", "title": "Important Meeting"}
    assert create.steps[4].parent_id == call.id
    assert create.agent == "llm_agent:openai/agent-model"
    # the user's instructions are the task's input; its tokens are kept apart
    assert "Important Meeting" in create.task.input["instructions"]  # type: ignore[index]
    outcome = create.metadata["simulation"]
    assert outcome["termination"] == "user_stop" and outcome["user_signal"] == "stop"
    assert outcome["recorded"]["db_match"] is True and outcome["recorded"]["reward"] == 1.0
    assert outcome["user_usage"]["input_tokens"] == 120 * 2
    assert create.usage is not None and create.usage.input_tokens == 120 * 2
    cut = next(t for t in traces if t.id == "update_task_1#t3")
    assert cut.metadata["simulation"]["termination"] == "max_turns"


def test_rewards_and_pass_hat_k_equal_tau2_bench_s_own() -> None:
    traces = _traces()
    scores = score_traces(traces, load_suite("simulation"))
    rewards = {s.trace_id: s.values["reward"] for s in scores}
    assert rewards == REFERENCE["rewards"]
    # and the reward each file recorded
    for trace in traces:
        assert rewards[trace.id] == trace.metadata["simulation"]["recorded"]["reward"]
    assert sum(rewards.values()) / len(rewards) == pytest.approx(REFERENCE["avg_reward"])
    trials: dict[str, list[bool]] = {}
    for trace in traces:
        trials.setdefault(trace.task.id, []).append(rewards[trace.id] == 1.0)
    table = pass_k_over_tasks(trials, [1, 2, 3, 4])
    assert {str(k): row["pass_hat_k"] for k, row in table.items()} == pytest.approx(
        REFERENCE["pass_hat_ks"]
    )
    why = {s.trace_id: s.reasons["reward"] for s in scores}
    assert why["update_task_1#t3"] == "the conversation ended by max turns"
    assert why["impossible_task_1#t2"] == (
        'actions: expected action(s) not taken: transfer_to_human_agents(summary="User needs '
        "to delete all their current tasks. This is not possible to do with the tools "
        'available.")'
    )
    assert "tau2-bench" in (why["create_task_1#t3"] or "")


def test_the_command_line_scores_and_passk_reads_the_imported_run(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    result = runner.invoke(
        app,
        ["evaluate", str(RESULTS), "--format", "tau2", "--suite", "simulation", "--db", str(db)],
    )
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        run_id = store.list_runs()[0].id
    # tau2-bench writes its models' arguments, API key included, into its results: the key is
    # not part of any trace
    assert '"api_key": "sk-fixture"' in RESULTS.read_text()
    assert b"sk-fixture" not in db.read_bytes()
    result = runner.invoke(
        app, ["passk", run_id, "--db", str(db), "--k", "1,2,3,4", "--metric", "reward"]
    )
    assert result.exit_code == 0, result.output
    for k, hat in REFERENCE["pass_hat_ks"].items():
        assert f"k={k}:" in result.output and f"pass^k {hat:.3f}" in result.output


def test_the_folder_format_and_what_is_not_a_trial(tmp_path: Path) -> None:
    doc = json.loads(RESULTS.read_text())
    simulations = doc.pop("simulations")
    simulations[0]["termination_reason"] = "infrastructure_error"
    del simulations[1]["messages"]
    simulations[2]["task_id"] = "no_such_task"
    folder = tmp_path / "run"
    (folder / "simulations").mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(doc))
    for i, sim in enumerate(simulations):
        (folder / "simulations" / f"{i:03d}.json").write_text(json.dumps(sim))
    items = list(read_tau2(folder / "results.json"))
    errors = [i for i in items if isinstance(i, ReadError)]
    assert len([i for i in items if isinstance(i, Trace)]) == len(simulations) - 3
    assert [(Path(e.source).name, e.field) for e in errors] == [
        ("000.json", "termination_reason"),
        ("001.json", "messages"),
        ("002.json", "task_id"),
    ]
    assert "not a trial" in errors[0].message


def test_a_file_that_is_not_tau2_bench_s(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"tasks": [')
    other = tmp_path / "other.json"
    shutil.copy(FIXTURES / "versions.json", other)
    for path, field in ((broken, None), (other, "tasks")):
        (error,) = list(read_tau2(path))
        assert isinstance(error, ReadError)
        assert error.source == str(path) and error.field == field
