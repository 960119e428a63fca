"""The records of a simulated conversation and what scores them: state diffs, tau2-bench's
action and communication rules, the reward's product and its termination rule, the simulator
checks and the attribution of failures, and the user-simulator judge (against the judge server
on 127.0.0.1). Every expected value is worked out by hand in the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgauge.conversation import (
    Expectations,
    ExpectedAction,
    Outcome,
    RecordedVerdicts,
    StateAssertion,
    StateChange,
    Termination,
    Violation,
    change_differences,
    flatten_state,
    same_json,
    state_changes,
)
from agentgauge.judges import client as judge_client
from agentgauge.metrics.base import create_metric
from agentgauge.metrics.simulator import facts_in, simulator_findings
from agentgauge.model import Step, StepKind, Task, ToolCall, Trace
from judge_server import KEY_ENV, TRAJECTORY_VALUE, JudgeServer, judge_options, judge_server


def _value(name: str, trace: Trace, **options: Any) -> float | None:
    return create_metric(name, options).score(trace).value


def _conversation(
    turns: list[tuple[str, str]],
    *,
    expectations: Expectations | None = None,
    outcome: Outcome | None = None,
    calls: list[ToolCall] = (),  # type: ignore[assignment]
    instructions: str = "You are Ada (ada@example.com). Cancel order W1002.",
) -> Trace:
    """A conversation: (role, text) turns, role "user" or "agent"; tool calls after them."""
    steps: list[Step] = []
    for role, text in turns:
        agent = "user" if role == "user" else "desk"
        kind = StepKind.message if role == "user" else StepKind.llm
        steps.append(Step(index=len(steps), kind=kind, agent=agent, content=text))
    for call in calls:
        steps.append(Step(index=len(steps), kind=StepKind.tool_call, agent="desk", tool_call=call))
    exp = expectations or Expectations()
    out = outcome or Outcome(termination="user_stop", user_signal="stop", changes=[])
    task = Task(
        id="s1",
        input={"instructions": instructions},
        metadata={"simulation": exp.model_dump(mode="json")},
    )
    return Trace(
        id="s1#t0",
        task=task,
        steps=steps,
        metadata={"simulation": out.model_dump(mode="json")},
    )


# ---- states --------------------------------------------------------------------------------


def test_flatten_state_names_every_leaf_by_its_path() -> None:
    state = {"orders": {"W1": {"items": [{"sku": "A"}, {"sku": "B"}], "tags": []}}, "a.b": 1}
    assert flatten_state(state) == {
        "orders.W1.items[0].sku": "A",
        "orders.W1.items[1].sku": "B",
        "orders.W1.tags": [],
        '["a.b"]': 1,
    }
    assert flatten_state(3) == {"": 3}


def test_state_changes_and_json_equality() -> None:
    before = {"a": 1, "b": {"c": True}, "gone": "x"}
    after = {"a": 1.0, "b": {"c": 1}, "new": [1]}
    assert same_json(1, 1.0) and not same_json(True, 1) and not same_json("1", 1)
    assert state_changes(before, after) == [
        StateChange(path="b.c", before=True, after=1),
        StateChange(path="gone", before="x", kind="removed"),
        StateChange(path="new[0]", after=1, kind="added"),
    ]


def test_change_differences_compare_final_values_from_the_same_initial_state() -> None:
    expected = [
        StateChange(path="o.status", before="processing", after="cancelled"),
        StateChange(path="o.reason", after="no longer needed", kind="added"),
    ]
    actual = [
        StateChange(path="o.status", before="processing", after="cancelled"),
        StateChange(path="o.reason", after="ordered by mistake", kind="added"),
        StateChange(path="o.note", before="x", kind="removed"),
    ]
    assert change_differences(expected, actual) == [
        {"path": "o.note", "expected": "x", "actual": None, "note": "not in the final state"},
        {"path": "o.reason", "expected": "no longer needed", "actual": "ordered by mistake"},
    ]
    assert change_differences(expected, expected) == []
    # a change that was expected and not made: the field kept its initial value
    assert change_differences(expected, actual[:1]) == [
        {
            "path": "o.reason",
            "expected": "no longer needed",
            "actual": None,
            "note": "not in the final state",
        }
    ]


def test_assertions() -> None:
    def holds(op: str, actual: Any, value: Any = None) -> bool:
        return StateAssertion(path="p", op=op, value=value).holds(actual)  # type: ignore[arg-type]

    from agentgauge.conversation import ABSENT

    assert holds("eq", 2, 2.0) and not holds("eq", True, 1)
    assert holds("ne", ABSENT, 1) and not holds("eq", ABSENT, None)
    assert holds("in", "b", ["a", "b"]) and holds("not_in", "c", ["a", "b"])
    assert holds("contains", ["x", "y"], "y") and holds("contains", "hello", "ell")
    assert holds("gt", 3, 2) and holds("le", 2, 2) and not holds("lt", "1", 2)
    assert holds("exists", 0) and holds("absent", ABSENT) and not holds("exists", ABSENT)


# ---- tau2-bench's rules ----------------------------------------------------------------------


def test_actions_match_as_tau2_bench_compares_them() -> None:
    action = ExpectedAction(name="cancel", arguments={"order": "W1", "reason": "x"})
    # compare_args None: the arguments the call has, each against the action's value
    assert action.matches(ToolCall(name="cancel", arguments={"order": "W1", "reason": "x"}))
    assert action.matches(ToolCall(name="cancel", arguments={"order": "W1"}))
    assert not action.matches(ToolCall(name="cancel", arguments={"order": "W1", "reason": "y"}))
    assert not action.matches(ToolCall(name="cancel", arguments={"order": "W1", "extra": 1}))
    assert not action.matches(ToolCall(name="other", arguments={"order": "W1", "reason": "x"}))
    only_order = action.model_copy(update={"compare_args": ["order"]})
    assert only_order.matches(ToolCall(name="cancel", arguments={"order": "W1", "reason": "y"}))
    anything = action.model_copy(update={"compare_args": []})
    assert anything.matches(ToolCall(name="cancel", arguments={}))


def test_communicated_is_a_case_free_substring_of_an_agent_message_without_commas() -> None:
    exp = Expectations(communicate=["1234.50", "Cancelled"])
    said = _conversation(
        [("user", "cancel it; the refund is 1234.50?"), ("agent", "It is CANCELLED: $1,234.50.")],
        expectations=exp,
    )
    assert _value("communicated", said) == 1.0
    only_user = _conversation([("user", "1234.50 cancelled"), ("agent", "Done.")], expectations=exp)
    result = create_metric("communicated").score(only_user)
    assert result.value == 0.0
    assert result.details["missing"] == ["1234.50", "Cancelled"]


def test_reward_is_the_product_of_its_basis_and_0_for_an_abnormal_end() -> None:
    exp = Expectations(
        expected_changes=[StateChange(path="o", before=1, after=2)],
        actions=[ExpectedAction(name="set", arguments={"v": 2})],
        communicate=["done"],
    )
    good = Outcome(termination="user_stop", changes=[StateChange(path="o", before=1, after=2)])
    call = ToolCall(name="set", arguments={"v": 2})
    trace = _conversation([("agent", "done")], expectations=exp, outcome=good, calls=[call])
    assert _value("reward", trace) == 1.0
    silent = _conversation([("agent", "ok")], expectations=exp, outcome=good, calls=[call])
    assert _value("reward", silent) == 0.0
    # actions are not in this basis: a missing call does not count
    lenient = exp.model_copy(update={"reward_basis": ["end_state", "communicated"]})
    no_call = _conversation([("agent", "done")], expectations=lenient, outcome=good)
    assert _value("reward", no_call) == 1.0
    assert _value("actions", no_call) == 0.0
    cut = good.model_copy(update={"termination": Termination.max_turns})
    result = create_metric("reward").score(
        _conversation([("agent", "done")], expectations=exp, outcome=cut, calls=[call])
    )
    assert result.value == 0.0 and result.reason == "the conversation ended by max turns"
    # a component the scenario leaves empty but names in its basis counts 1 (tau2-bench)
    empty = Expectations(reward_basis=["communicated"])
    assert _value("reward", _conversation([("agent", "x")], expectations=empty)) == 1.0
    # nothing to check at all: no reward rather than a free 1
    assert _value("reward", _conversation([("agent", "x")])) is None
    # not a conversation
    assert _value("reward", Trace(id="x", task=Task(id="t"))) is None


def test_end_state_reads_recorded_verdicts_of_an_imported_file() -> None:
    recorded = RecordedVerdicts(
        source="tau2-bench",
        db_match=False,
        env_assertions=[{"env_assertion": "task_2 is pending", "met": True}],
        reward_basis=["ENV_ASSERTION"],
    )
    out = Outcome(termination="user_stop", recorded=recorded)
    trace = _conversation([("agent", "x")], expectations=Expectations(), outcome=out)
    # the database differs, but only the assertions count in this basis
    assert _value("end_state", trace) == 1.0
    db = out.model_copy(update={"recorded": recorded.model_copy(update={"reward_basis": ["DB"]})})
    result = create_metric("end_state").score(
        _conversation([("agent", "x")], expectations=Expectations(), outcome=db)
    )
    assert result.value == 0.0
    assert result.reason == "the final database differs from the expected one (tau2-bench)"


def test_end_state_checks_expected_values_and_assertions() -> None:
    exp = Expectations(
        expected_values={"orders.W1.status": "cancelled"},
        assertions=[StateAssertion(path="orders.W1.refund", op="gt", value=0)],
    )
    out = Outcome(termination="user_stop", changes=[], observed={"orders.W1.status": "open"})
    result = create_metric("end_state").score(
        _conversation([("agent", "x")], expectations=exp, outcome=out)
    )
    assert result.value == 0.0
    assert result.reason == (
        "the final state differs: orders.W1.status is 'open', expected 'cancelled'; "
        "orders.W1.refund gt 0 does not hold (absent)"
    )


# ---- the simulated user ----------------------------------------------------------------------


def test_facts_are_ids_amounts_and_addresses_normalised() -> None:
    assert facts_in("Order #W1002 cost $1,049.00, zip 02139; call me at ada@example.com.") == {
        "w1002",
        "1049",
        "02139",
        "ada@example.com",
    }
    assert facts_in("I have 2 mugs and 3 lamps") == set()  # bare digits are counts
    assert facts_in("It was 49 dollars, that is $49.00") == {"49"}


def _findings(trace: Trace, **options: Any) -> list[tuple[str, int | None]]:
    found = simulator_findings(trace, **options)
    assert found is not None
    return [(f.check, f.turn) for f in found]


def test_a_fact_is_supported_by_the_instructions_or_an_earlier_agent_message() -> None:
    trace = _conversation(
        [
            ("agent", "Hi! Your other order is W1009."),
            ("user", "Cancel W1002 and W1009, the two orders; my email is ada@example.com."),
            ("user", "Also my zip is 10001 and my phone 555-0100."),
        ]
    )
    assert _findings(trace) == [("unsupported_fact", 2), ("unsupported_fact", 2)]
    found = simulator_findings(trace)
    assert found is not None
    assert [f.message.split(",")[0] for f in found] == ["stated '10001'", "stated '555-0100'"]


def test_withheld_values_before_the_agent_says_them() -> None:
    exp = Expectations(withheld=["ada@example.com"])
    early = _conversation([("user", "It's ada@example.com")], expectations=exp)
    assert ("withheld_fact", 1) in _findings(early)
    told = _conversation(
        [("agent", "Is it ada@example.com?"), ("user", "Yes, ada@example.com.")], expectations=exp
    )
    assert _findings(told) == []


def test_ended_early_only_when_the_agent_waits_for_an_answer() -> None:
    exp = Expectations(expected_changes=[StateChange(path="o", before=1, after=2)])
    out = Outcome(termination="user_stop", user_signal="stop", changes=[], goal_turn=None)
    waiting = _conversation(
        [("user", "Cancel W1002"), ("agent", "Why do you cancel it?"), ("user", "###STOP###")],
        expectations=exp,
        outcome=out,
    )
    assert _findings(waiting) == [("ended_early", 2)]
    closing = _conversation(
        [
            ("user", "Cancel W1002"),
            ("agent", "I cannot. Is there anything else I can help you with?"),
            ("user", "###STOP###"),
        ],
        expectations=exp,
        outcome=out,
    )
    assert _findings(closing) == []


def test_went_on_after_the_goal_beyond_its_patience() -> None:
    exp = Expectations(expected_changes=[StateChange(path="o", before=1, after=2)])
    out = Outcome(termination="user_stop", user_signal="stop", changes=[], goal_turn=1)
    turns = [("user", "Cancel W1002"), ("agent", "Done.")]
    more = [("user", "Thanks"), ("agent", "You're welcome."), ("user", "Really?")]
    trace = _conversation(
        [*turns, *more, ("agent", "Yes."), ("user", "###STOP###")], expectations=exp, outcome=out
    )
    assert _findings(trace) == []  # two more messages: within the default patience
    assert _findings(trace, patience=1) == [("went_on", 2)]
    cut = out.model_copy(update={"termination": Termination.max_turns, "user_signal": None})
    assert _findings(_conversation(turns, expectations=exp, outcome=cut)) == [("went_on", None)]


def test_broke_character() -> None:
    instructions = (
        "You are Ada and you want to cancel your order W1002 because you no longer need it at all."
    )
    trace = _conversation(
        [
            ("user", "As an AI language model, how can I help you today?"),
            ("user", "###DONE###"),
            ("user", "you want to cancel your order W1002 because you no longer need it at all"),
        ],
        instructions=instructions,
    )
    assert _findings(trace) == [
        ("broke_character", 1),
        ("broke_character", 1),
        ("broke_character", 1),
        ("broke_character", 2),
        ("broke_character", 3),
    ]
    assert _findings(trace, phrases=["nothing like this"], copy_words=20) == [
        ("broke_character", 2)
    ]


def test_failures_are_attributed_to_the_simulator_only_with_a_finding() -> None:
    exp = Expectations(communicate=["refund"])
    failed_agent = _conversation([("user", "Cancel W1002"), ("agent", "ok")], expectations=exp)
    result = create_metric("simulator_fault").score(failed_agent)
    assert result.value == 0.0 and result.details["attributed_to"] == "agent"
    failed_user = _conversation([("user", "Cancel W7777"), ("agent", "ok")], expectations=exp)
    assert _value("simulator_fault", failed_user) == 1.0
    assert _value("user_fidelity", failed_user) == 0.0
    passed = _conversation([("user", "Cancel W7777"), ("agent", "refund sent")], expectations=exp)
    result = create_metric("simulator_fault").score(passed)
    assert result.value is None and result.reason == "the conversation succeeded"
    crashed = Outcome(termination="user_error", error="HTTP 500")
    result = create_metric("simulator_fault").score(
        _conversation([("agent", "Hi")], expectations=exp, outcome=crashed)
    )
    assert result.value == 1.0 and "user_error" in (result.reason or "")


def test_policy_compliance_reads_the_environments_report() -> None:
    clean = Outcome(termination="user_stop", violations=[])
    assert _value("policy_compliance", _conversation([], outcome=clean)) == 1.0
    breached = clean.model_copy(
        update={"violations": [Violation(message="cancelled a shipped order", turn=2)]}
    )
    result = create_metric("policy_compliance").score(_conversation([], outcome=breached))
    assert (
        result.value == 0.0
        and result.reason == "policy breached: turn 2: cancelled a shipped order"
    )
    assert _value("policy_compliance", _conversation([])) is None  # no report


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-0123456789")
    judge_client._MEMO.clear()
    with judge_server() as state:
        yield state
    judge_client._MEMO.clear()


def test_the_user_simulator_judge_sees_the_instructions_and_the_conversation(
    server: JudgeServer, tmp_path: Path
) -> None:
    trace = _conversation(
        [("agent", "Hi! How can I help?"), ("user", "Cancel W1002."), ("agent", "Done.")]
    )
    result = create_metric("user_simulator_quality", judge_options(server, tmp_path)).score(trace)
    # the judge server answers a score of 4 on 1-5 to a verdict with issues and a score
    assert result.value == pytest.approx(TRAJECTORY_VALUE)
    assert result.details["issues"] == ["step 3 repeats step 1"]
    body = server.requests[0]["body"]
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    assert system.startswith("You check a simulated user, not the agent.")
    assert "<user_instructions>" in prompt and "Cancel order W1002." in prompt
    assert "Cancel W1002." in prompt.split("<conversation>")[1]
    not_one = create_metric("user_simulator_quality", judge_options(server, tmp_path)).score(
        Trace(id="x", task=Task(id="t"))
    )
    assert not_one.value is None and len(server.requests) == 1


def test_a_suite_s_judge_table_reaches_the_user_simulator_judge(
    server: JudgeServer, tmp_path: Path
) -> None:
    from agentgauge.config import load_suite

    suite_file = tmp_path / "sim.toml"
    suite_file.write_text(
        'extends = "simulation"\n'
        'metrics = ["reward", "user_fidelity", "user_simulator_quality"]\n'
        "[judge]\n"
        'model = "judge-model"\n'
        f'base_url = "{server.base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\n'
        f'cache_path = "{tmp_path / "cache.db"}"\n'
    )
    suite = load_suite(str(suite_file))
    judge = next(m for m in suite.build_metrics() if m.name == "user_simulator_quality")
    trace = _conversation([("agent", "Hi!"), ("user", "Cancel W1002."), ("agent", "Done.")])
    assert judge.score(trace).value == pytest.approx(TRAJECTORY_VALUE)
