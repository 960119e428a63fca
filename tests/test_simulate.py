"""``agentgauge simulate`` end to end: whole conversations between the bundled chat agent and a
simulated user, both played by scripted OpenAI-compatible servers on 127.0.0.1, over the real
order-desk environment, scored and stored in a real SQLite store."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.model import StepKind
from agentgauge.simulate.users import USER_GUIDELINES
from agentgauge.store import Store
from toolcall_server import ServerState, scripted_server

runner = CliRunner()
ORDER_DESK = "agentgauge.simulate.domains.orders:OrderDesk"
KEY_ENV = "AGENTGAUGE_TEST_SIM_KEY"
SECRET = "sk-test-simulate-0123456789abcdef"

ADA = {
    "id": "cancel-w1002",
    "instructions": "You are Ada Lovelace (ada.lovelace@example.com). Cancel order W1002: you "
    "no longer need it.",
    "known_info": {"email": "ada.lovelace@example.com", "order": "W1002"},
    "expected_actions": [
        {
            "name": "find_customer",
            "arguments": {"email": "ada.lovelace@example.com"},
            "compare_args": [],
        },
        {"name": "cancel_order", "arguments": {"order_id": "W1002", "reason": "no longer needed"}},
    ],
    "communicate": ["89.00"],
    "max_turns": 6,
}
EDSGER = {
    "id": "cancel-w1009",
    "instructions": "You are Edsger Dijkstra (edsger@example.com). Cancel order W1009: you "
    "ordered it by mistake.",
    "known_info": {"email": "edsger@example.com", "order": "W1009"},
    "expected_actions": [
        {"name": "find_customer", "arguments": {"email": "edsger@example.com"}, "compare_args": []},
        {
            "name": "cancel_order",
            "arguments": {"order_id": "W1009", "reason": "ordered by mistake"},
        },
    ],
    "communicate": ["288.00"],
    "max_turns": 6,
}
USER_LINES = {
    "cancel-w1002": [
        "Hi, please cancel my order W1002, I no longer need it. My email is "
        "ada.lovelace@example.com.",
        "###STOP###",
    ],
    "cancel-w1009": [
        "Hello, I ordered W1009 by mistake, please cancel it. My email is edsger@example.com.",
        "###STOP###",
    ],
}


def _call(name: str, **arguments: Any) -> tuple[str, str, dict[str, Any]]:
    return ("call", name, arguments)


def _say(text: str) -> tuple[str, str, dict[str, Any]]:
    return ("say", text, {})


def _cancel_turn(email: str, order: str, reason: str, amount: str) -> list[Any]:
    return [
        _call("find_customer", email=email),
        _call("cancel_order", order_id=order, reason=reason),
        _say(f"Done: order {order} is cancelled and ${amount} will be refunded."),
    ]


@dataclass
class Dialogue:
    """Plays the agent's model (``agent-model``) and the user's model (``user-model``).

    The agent's answers are scripted per conversation (its first user message and the request's
    seed) and turn, one assistant message per request of the turn; the user's lines per scenario
    (found by its instructions in the system prompt), one per user turn.
    """

    agent: Callable[[str, int], list[list[Any]]]
    users: dict[str, list[str]] = field(default_factory=dict)
    instructions: dict[str, str] = field(default_factory=dict)
    block: Callable[[str, int], bool] = lambda first, seed: False
    blocked: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    seen: Counter[tuple[str, int]] = field(default_factory=Counter)

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == "user-model":
            return self._user(body)
        return self._agent(body)

    def _user(self, body: dict[str, Any]) -> dict[str, Any]:
        system = body["messages"][0]["content"]
        scenario = next(s for s, text in self.instructions.items() if text in system)
        said = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return {"role": "assistant", "content": self.users[scenario][said]}

    def _agent(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        first, seed = messages[users[0]]["content"], int(body["seed"])
        self.seen[(first, seed)] += 1
        if self.block(first, seed):
            self.blocked.set()
            self.release.wait(timeout=60)
        turn = len(users) - 1
        step = sum(1 for m in messages[users[-1] :] if m["role"] == "assistant")
        kind, value, arguments = self.agent(first, seed)[turn][step]
        if kind == "say":
            return {"role": "assistant", "content": value}
        call_id = f"call_{turn}_{step}"
        function = {"name": value, "arguments": json.dumps(arguments)}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, ServerState]]:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with scripted_server() as (url, state):
        yield url, state


def _scenarios(path: Path, *scenarios: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in scenarios))
    return path


def _simulate(tmp_path: Path, url: str, scenarios: Path, *extra: str) -> tuple[str, Path]:
    db = tmp_path / "sim.db"
    args = [
        "simulate",
        "--env",
        ORDER_DESK,
        "--scenarios",
        str(scenarios),
        "--agent",
        url,
        "--agent-model",
        "agent-model",
        "--agent-key-env",
        KEY_ENV,
        "--db",
        str(db),
        "--no-progress",
        *extra,
    ]
    if "--user" not in extra:
        args += ["--user", url, "--user-model", "user-model", "--user-key-env", KEY_ENV]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output, db


def _samples(db: Path) -> dict[str, Any]:
    with Store(db) as store:
        run = store.list_runs()[0]
        return {row.trace_id: row for row in store.iter_samples(run.id, with_trace=True)}


def test_a_conversation_that_reaches_the_goal_scores_reward_1(
    tmp_path: Path, served: tuple[str, ServerState]
) -> None:
    url, state = served
    state.responder = Dialogue(
        agent=lambda first, seed: [
            _cancel_turn("ada.lovelace@example.com", "W1002", "no longer needed", "89.00")
        ],
        users=USER_LINES,
        instructions={"cancel-w1002": ADA["instructions"]},
    )
    output, db = _simulate(tmp_path, url, _scenarios(tmp_path / "s.jsonl", ADA))
    row = _samples(db)["cancel-w1002#t0"]
    assert row.values["reward"] == 1.0
    assert row.values["end_state"] == 1.0
    assert row.values["actions"] == 1.0
    assert row.values["communicated"] == 1.0
    assert row.values["user_fidelity"] == 1.0
    assert row.values["simulator_fault"] is None  # nothing failed, nothing to attribute
    assert "mean reward 1.000" in output
    trace = row.trace()
    kinds = [(s.kind, s.agent) for s in trace.steps]
    agent = "chat:agent-model"
    assert kinds == [
        (StepKind.message, agent),  # the greeting
        (StepKind.message, "user"),
        (StepKind.llm, agent),
        (StepKind.tool_call, agent),
        (StepKind.tool_result, agent),
        (StepKind.llm, agent),
        (StepKind.tool_call, agent),
        (StepKind.tool_result, agent),
        (StepKind.llm, agent),
        (StepKind.message, "user"),
    ]
    assert trace.steps[-1].content == "###STOP###"
    outcome = trace.metadata["simulation"]
    assert outcome["termination"] == "user_stop"
    changed = {c["path"]: (c.get("before"), c.get("after")) for c in outcome["changes"]}
    assert changed["orders.W1002.status"] == ("processing", "cancelled")
    assert changed["orders.W1002.cancel_reason"] == (None, "no longer needed")
    assert changed["orders.W1002.refunds[0].amount"] == (None, 89.0)
    # the agent's model got the policy and the desk's tools; the user's model, its scenario
    # and the conversation with the roles flipped
    agent_calls = [r.body for r in state.requests if r.body["model"] == "agent-model"]
    assert "<policy>" in agent_calls[0]["messages"][0]["content"]
    tools = {t["function"]["name"] for t in agent_calls[0]["tools"]}
    assert {"find_customer", "cancel_order", "return_items"} <= tools
    user_calls = [r.body for r in state.requests if r.body["model"] == "user-model"]
    assert user_calls[0]["messages"][0]["content"].startswith(USER_GUIDELINES)
    assert ADA["instructions"] in user_calls[0]["messages"][0]["content"]
    assert [m["role"] for m in user_calls[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert user_calls[1]["messages"][3]["content"].startswith("Done: order W1002 is cancelled")
    # the key went to the servers, never to the store
    assert state.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert SECRET.encode() not in db.read_bytes()
    assert trace.usage is not None and trace.usage.input_tokens == 11 * 3  # the agent's only
    assert outcome["user_usage"]["input_tokens"] == 11 * 2


def test_a_wrong_field_in_the_end_state_scores_0_and_names_the_field(
    tmp_path: Path, served: tuple[str, ServerState]
) -> None:
    url, state = served
    state.responder = Dialogue(
        agent=lambda first, seed: [
            _cancel_turn("ada.lovelace@example.com", "W1002", "ordered by mistake", "89.00")
        ],
        users=USER_LINES,
        instructions={"cancel-w1002": ADA["instructions"]},
    )
    _, db = _simulate(tmp_path, url, _scenarios(tmp_path / "s.jsonl", ADA))
    row = _samples(db)["cancel-w1002#t0"]
    assert row.values["reward"] == 0.0
    assert row.values["end_state"] == 0.0
    assert row.values["actions"] == 0.0  # cancel_order with the expected reason was not called
    assert row.values["communicated"] == 1.0
    differences = row.details["end_state"]["differences"]
    assert differences == [
        {
            "path": "orders.W1002.cancel_reason",
            "expected": "no longer needed",
            "actual": "ordered by mistake",
        }
    ]
    assert "orders.W1002.cancel_reason" in row.reasons["end_state"]
    assert "orders.W1002.cancel_reason" in row.reasons["reward"]
    # the user played its part: the failure is the agent's
    assert row.values["simulator_fault"] == 0.0
    assert row.details["simulator_fault"]["attributed_to"] == "agent"


def test_a_user_revealing_a_fact_outside_its_instructions_is_attributed_to_the_simulator(
    tmp_path: Path, served: tuple[str, ServerState]
) -> None:
    url, state = served
    # the scripted user names an order its instructions never gave it; the agent acts on it
    scenario = {
        **ADA,
        "id": "cancel-keyboard",
        "instructions": "You are Ada Lovelace (ada.lovelace@example.com). Cancel your keyboard "
        "order: you no longer need it. You do not know the order number.",
        "known_info": {"email": "ada.lovelace@example.com"},
        "user_turns": [
            "Hi, please cancel my order W1001, I no longer need it. My email is "
            "ada.lovelace@example.com."
        ],
    }
    state.responder = Dialogue(
        agent=lambda first, seed: [
            _cancel_turn("ada.lovelace@example.com", "W1001", "no longer needed", "64.00")
        ]
    )
    output, db = _simulate(
        tmp_path, url, _scenarios(tmp_path / "s.jsonl", scenario), "--user", "scripted"
    )
    row = _samples(db)["cancel-keyboard#t0"]
    assert row.values["reward"] == 0.0
    assert row.values["user_fidelity"] == 0.0
    findings = row.details["user_fidelity"]["findings"]
    assert findings == [
        {
            "check": "unsupported_fact",
            "turn": 1,
            "message": "stated 'w1001', which its instructions do not give and the agent had "
            "not said",
        }
    ]
    assert row.values["simulator_fault"] == 1.0
    assert row.details["simulator_fault"]["attributed_to"] == "simulator"
    # the desk refused to cancel a delivered order, and said so
    violations = row.trace().metadata["simulation"]["violations"]
    assert violations == [
        {"message": "cancel_order on W1001, which is delivered", "tool": "cancel_order", "turn": 1}
    ]
    assert row.values["policy_compliance"] == 0.0
    assert "attributed to the simulated user: 1 (100%)" in output


def test_pass_hat_k_over_4_trials_equals_the_hand_computation(
    tmp_path: Path, served: tuple[str, ServerState]
) -> None:
    url, state = served

    def agent(first: str, seed: int) -> list[list[Any]]:
        if "W1002" in first:  # passes with seeds 0, 1, 2; the wrong reason with seed 3
            reason = "no longer needed" if seed != 3 else "ordered by mistake"
            return [_cancel_turn("ada.lovelace@example.com", "W1002", reason, "89.00")]
        # passes with seed 1 only; otherwise forgets the amount (communicated fails)
        amount = "288.00" if seed == 1 else "the full amount"
        return [_cancel_turn("edsger@example.com", "W1009", "ordered by mistake", amount)]

    state.responder = Dialogue(
        agent=agent,
        users=USER_LINES,
        instructions={"cancel-w1002": ADA["instructions"], "cancel-w1009": EDSGER["instructions"]},
    )
    scenarios = _scenarios(tmp_path / "s.jsonl", ADA, EDSGER)
    output, db = _simulate(tmp_path, url, scenarios, "--trials", "4", "--jobs", "3")
    samples = _samples(db)
    rewards = {tid: row.values["reward"] for tid, row in samples.items()}
    assert rewards == {
        "cancel-w1002#t0": 1.0,
        "cancel-w1002#t1": 1.0,
        "cancel-w1002#t2": 1.0,
        "cancel-w1002#t3": 0.0,
        "cancel-w1009#t0": 0.0,
        "cancel-w1009#t1": 1.0,
        "cancel-w1009#t2": 0.0,
        "cancel-w1009#t3": 0.0,
    }
    # by hand: n = 4 trials; c = 3 (W1002) and c = 1 (W1009)
    hat = {
        k: (math.comb(3, k) / math.comb(4, k) + math.comb(1, k) / math.comb(4, k)) / 2
        for k in range(1, 5)
    }
    at = {
        k: ((1 - math.comb(1, k) / math.comb(4, k)) + (1 - math.comb(3, k) / math.comb(4, k))) / 2
        for k in range(1, 5)
    }
    assert hat == {1: 0.5, 2: 0.25, 3: 0.125, 4: 0.0}
    assert at == {1: 0.5, 2: 0.75, 3: 0.875, 4: 1.0}
    with Store(db) as store:
        summary = store.records(store.list_runs()[0].id, "simulation_summary")[-1]
    assert summary["pass_hat_k"] == {str(k): pytest.approx(v) for k, v in hat.items()}
    assert summary["pass_at_k"] == {str(k): pytest.approx(v) for k, v in at.items()}
    assert " 4   0.000   1.000" in output
    # the existing passk command reads the same run
    run_id = summary_run = _run_id(db)
    result = runner.invoke(
        app, ["passk", summary_run, "--db", str(db), "--k", "1,2,3,4", "--metric", "reward"]
    )
    assert result.exit_code == 0, result.output
    assert "k=2: pass@k 0.750  pass^k 0.250  over 2 tasks" in result.output
    assert run_id


def _run_id(db: Path) -> str:
    with Store(db) as store:
        return store.list_runs()[0].id


def test_kill_and_resume_loses_and_repeats_no_conversation(
    tmp_path: Path, served: tuple[str, ServerState]
) -> None:
    url, state = served
    lines = {
        "a": "Hi, please cancel order W1002, I no longer need it. Email ada.lovelace@example.com.",
        "b": "Hello, cancel W1009, I ordered it by mistake. Email edsger@example.com.",
        "c": "Hi, cancel W1012, I ordered it by mistake. Email b.liskov@example.com.",
    }
    scripts = {
        lines["a"]: _cancel_turn("ada.lovelace@example.com", "W1002", "no longer needed", "89.00"),
        lines["b"]: _cancel_turn("edsger@example.com", "W1009", "ordered by mistake", "288.00"),
        lines["c"]: _cancel_turn("b.liskov@example.com", "W1012", "ordered by mistake", "36.00"),
    }
    dialogue = Dialogue(
        agent=lambda first, seed: [scripts[first]],
        # the 4th conversation (trial 1 of the first scenario) waits until the process is killed
        block=lambda first, seed: first == lines["a"] and seed == 1,
    )
    state.responder = dialogue
    scenarios = _scenarios(
        tmp_path / "s.jsonl",
        *(
            {
                "id": key,
                "instructions": f"Scenario {key}.",
                "communicate": ["is cancelled"],
                "user_turns": [text],
            }
            for key, text in lines.items()
        ),
    )
    db = tmp_path / "sim.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "simulate",
            "--env",
            ORDER_DESK,
            "--scenarios",
            str(scenarios),
            "--agent",
            url,
            "--agent-model",
            "agent-model",
            "--trials",
            "2",
            "--jobs",
            "1",
            "--db",
            str(db),
            "--no-progress",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert dialogue.blocked.wait(timeout=60), proc.stderr.read().decode() if proc.stderr else ""
        deadline = time.monotonic() + 30
        while _stored(db) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _stored(db) == 3
    finally:
        proc.kill()
        proc.wait()
        dialogue.release.set()
    before_kill = Counter(dialogue.seen)
    kept = {tid: row.values for tid, row in _samples(db).items()}
    assert set(kept) == {"a#t0", "b#t0", "c#t0"}
    dialogue.block = lambda first, seed: False
    result = runner.invoke(app, ["simulate", "--resume", _run_id(db), "--db", str(db)])
    assert result.exit_code == 0, result.output
    samples = _samples(db)
    assert sorted(samples) == ["a#t0", "a#t1", "b#t0", "b#t1", "c#t0", "c#t1"]
    assert all(row.values["reward"] == 1.0 for row in samples.values())
    assert {tid: samples[tid].values for tid in kept} == kept  # nothing kept was lost or redone
    after = dialogue.seen - before_kill
    # the conversations stored before the kill were not played again; the one cut off was
    # played again from its start, the others once
    assert {first for first, _ in after if _ == 0} == set()
    assert after == Counter({(lines["a"], 1): 3, (lines["b"], 1): 3, (lines["c"], 1): 3})
    with Store(db) as store:
        run = store.list_runs()[0]
        assert run.status == "completed"
        assert len(list(store.iter_samples(run.id))) == 6


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(db)
    try:
        return int(con.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def test_the_bundled_domain_runs_with_the_scripted_agent_and_no_model(tmp_path: Path) -> None:
    from agentgauge.simulate.domains import DOMAINS
    from agentgauge.simulate.scenario import Scenario, read_scenarios

    scenarios = [s for _, s in read_scenarios(DOMAINS["orders"].scenarios)]  # type: ignore[misc]
    assert len(scenarios) >= 30
    assert all(isinstance(s, Scenario) and s.user_turns for s in scenarios)
    assert Counter(str(s.difficulty) for s in scenarios) == {"easy": 10, "medium": 10, "hard": 12}
    # every scenario states its expected end state (an empty list: nothing may change)
    assert all(s.expected_actions is not None for s in scenarios)
    db = tmp_path / "demo.db"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--domain",
            "orders",
            "--agent",
            DOMAINS["orders"].scripted_agent,
            "--params",
            "slip_rate=0",
            "--db",
            str(db),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "SIMULATION" in result.output
    samples = _samples(db)
    assert len(samples) == len(scenarios)
    failed = {tid: row for tid, row in samples.items() if row.values["reward"] != 1.0}
    # without slips the script fails only where it reads a keyword and not the meaning
    assert list(failed) == ["change-of-mind-address#t0"]
    assert failed["change-of-mind-address#t0"].values["simulator_fault"] == 0.0
    assert all(row.values["user_fidelity"] == 1.0 for row in samples.values())


def test_a_bad_scenario_line_is_reported_and_the_others_run(tmp_path: Path) -> None:
    from agentgauge.simulate.domains import DOMAINS

    good = json.loads(DOMAINS["orders"].scenarios.read_text().splitlines()[3])
    scenarios = tmp_path / "s.jsonl"
    scenarios.write_text(
        "\n".join(
            [
                json.dumps({**good, "colour": "blue"}),  # an unknown field
                json.dumps(good),
                json.dumps(  # an expected action the desk refuses: no expected end state
                    {
                        **good,
                        "id": "bad-gold",
                        "expected_actions": [
                            {"name": "cancel_order", "arguments": {"order_id": "W1002"}}
                        ],
                    }
                ),
                json.dumps({**good, "id": "no-script", "user_turns": None}),
            ]
        )
        + "\n"
    )
    db = tmp_path / "sim.db"
    args = [
        "simulate",
        "--env",
        ORDER_DESK,
        "--scenarios",
        str(scenarios),
        "--agent",
        "agentgauge.simulate.domains.orders_agent:DeskAgent",
        "--db",
        str(db),
        "--no-progress",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert list(_samples(db)) == [f"{good['id']}#t0"]
    with Store(db) as store:
        run = store.list_runs()[0]
        errors = {(e.line, e.field): e.message for e in store.read_errors(run.id)}
    assert set(errors) == {(1, "colour"), (3, None), (4, "user_turns")}
    assert errors[(3, None)].startswith("scenario 'bad-gold': expected_actions[0]: cancel_order")
    # a resumed run is the run as it was started, from the same scenarios
    again = runner.invoke(app, ["simulate", "--resume", run.id, "--db", str(db), "--trials", "2"])
    assert again.exit_code == 2 and "drop --trials" in again.output
    scenarios.write_text(scenarios.read_text() + "\n")
    again = runner.invoke(app, ["simulate", "--resume", run.id, "--db", str(db)])
    assert again.exit_code == 2 and "changed since run" in again.output


def test_a_user_model_that_fails_ends_the_conversation_on_the_simulator(
    tmp_path: Path, served: tuple[str, ServerState]
) -> None:
    url, state = served

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": "  "}  # the user model says nothing

    state.responder = answer
    output, db = _simulate(tmp_path, url, _scenarios(tmp_path / "s.jsonl", ADA))
    row = _samples(db)["cancel-w1002#t0"]
    outcome = row.trace().metadata["simulation"]
    assert outcome["termination"] == "user_error"
    assert outcome["error"].startswith("UserError: the user model answered without text")
    assert row.values["reward"] == 0.0
    assert row.values["simulator_fault"] == 1.0
    assert row.details["user_fidelity"]["findings"][0]["check"] == "user_error"
    assert "ended by: user_error 1; user messages per conversation: 0.0" in output


class PeekingAgent:
    """An agent of the plain protocol that keeps what each turn shows it, cancels W1002 with
    the environment's tools and answers."""

    seen: ClassVar[list[Any]] = []

    def run(self, task: Any, params: Any, recorder: Any) -> str:
        PeekingAgent.seen.append((task, sorted(recorder.tools)))
        recorder.tools["find_customer"](email="ada.lovelace@example.com")
        result = recorder.tools["cancel_order"](order_id="W1002", reason="no longer needed")
        return f"Cancelled; ${result['refund']:.2f} is refunded."


def test_an_agent_of_the_plain_protocol_sees_the_conversation_and_never_the_answers(
    tmp_path: Path,
) -> None:
    scenario = {**ADA, "user_turns": USER_LINES["cancel-w1002"]}
    PeekingAgent.seen.clear()
    db = tmp_path / "sim.db"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--env",
            ORDER_DESK,
            "--scenarios",
            str(_scenarios(tmp_path / "s.jsonl", scenario)),
            "--agent",
            "test_simulate:PeekingAgent",
            "--db",
            str(db),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    ((task, tools),) = PeekingAgent.seen
    assert task.metadata == {} and task.expected_output is None
    assert "Cancel order W1002" not in json.dumps(task.model_dump())  # not the instructions
    assert task.description.startswith("# Order desk policy")
    assert [m["role"] for m in task.input["messages"]] == ["assistant", "user"]
    assert {"find_customer", "cancel_order"} <= set(tools) == {t.name for t in task.tools}
    row = _samples(db)["cancel-w1002#t0"]
    assert row.values["reward"] == 1.0
    # its tool calls were recorded on the conversation, its reply added as a message
    kinds = [s.kind for s in row.trace().steps]
    assert kinds.count(StepKind.tool_call) == 2 and kinds[-2] is StepKind.message
