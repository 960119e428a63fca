"""Tier 3 graph metrics on hand-built multi-agent traces, against values computed by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentgauge.metrics.base import MetricOptionError, create_metric, get_metric_info
from agentgauge.model import ReferenceStep, Step, Task, ToolCall, Trace


def _step(index: int, kind: str, agent: str | None = None, **kw: Any) -> Step:
    tool = kw.pop("tool", None)
    if tool is not None:
        kw["tool_call"] = ToolCall(name=tool)
    return Step(index=index, kind=kind, agent=agent, **kw)  # type: ignore[arg-type]


def _msg(index: int, sender: str, recipient: str, message_type: str | None) -> Step:
    return _step(index, "message", sender, recipient=recipient, message_type=message_type)


# A manager delegates to a researcher (who searches twice, then fetches) and to an analyst.
#  idx  kind         agent       recipient   type / tool
#   0   message      manager     researcher  task_request
#   1   tool_call    researcher              search
#   2   tool_result  researcher              (the environment's reply)
#   3   tool_call    researcher              search        (a repeat)
#   4   tool_call    researcher              fetch
#   5   message      researcher  manager     result_delivery
#   6   message      manager     analyst     coordination
#   7   tool_call    analyst                 analyze
#   8   message      analyst     manager     status_update
#   9   message      analyst     manager     result_delivery
#  10   tool_call    manager                 save
#  11   message      manager     researcher  (no type)
TEAM_STEPS = [
    _msg(0, "manager", "researcher", "task_request"),
    _step(1, "tool_call", "researcher", tool="search", content="find related work"),
    _step(2, "tool_result", "researcher", result="3 hits"),
    _step(3, "tool_call", "researcher", tool="search"),
    _step(4, "tool_call", "researcher", tool="fetch"),
    _msg(5, "researcher", "manager", "result_delivery"),
    _msg(6, "manager", "analyst", "coordination"),
    _step(7, "tool_call", "analyst", tool="analyze"),
    _msg(8, "analyst", "manager", "status_update"),
    _msg(9, "analyst", "manager", "result_delivery"),
    _step(10, "tool_call", "manager", tool="save"),
    _msg(11, "manager", "researcher", None),
]


def _trace(steps: list[Step], **task: Any) -> Trace:
    return Trace(id="t", task=Task(id="task", **task), steps=steps)


def _score(name: str, trace: Trace, **options: Any) -> Any:
    return create_metric(name, options).score(trace)


# --- path_convergence -------------------------------------------------------------------------


def test_path_convergence_over_the_tool_graph() -> None:
    # calls: search, search, fetch, analyze, save (5 calls, 4 transitions). Transitions:
    # search→search, search→fetch, fetch→analyze, analyze→save. Shortest search ⇝ save:
    # search, fetch, analyze, save = 3 transitions → (4 − 1)/(5 − 1) = 3/4.
    result = _score("path_convergence", _trace(TEAM_STEPS))
    assert result.value == pytest.approx(3 / 4)
    assert result.details["shortest_path"] == ["search", "fetch", "analyze", "save"]
    assert result.details["minimum_transitions"] == 3
    assert result.details["transitions"] == 4
    assert result.details["mode"] == "tool_graph"


def test_path_convergence_counts_a_loop_as_a_detour() -> None:
    # A, B, A, B, C: the graph has A→B, B→A, B→C; shortest A ⇝ C is A, B, C = 2 transitions of
    # the 4 taken → 2/4.
    steps = [_step(i, "tool_call", "solo", tool=n) for i, n in enumerate("ABABC")]
    assert _score("path_convergence", _trace(steps)).value == pytest.approx(2 / 4)
    # A single call is both start and goal → 1.0.
    single = _score("path_convergence", _trace(steps[:1]))
    assert single.value == 1.0 and single.details["transitions"] == 0
    # A, B: one transition, the shortest path A ⇝ B is that transition → 1/1.
    assert _score("path_convergence", _trace(steps[:2])).value == 1.0
    # A repeated 4 times: start = goal, shortest path 0 transitions, 3 taken → 0/3.
    repeated = [_step(i, "tool_call", "solo", tool="A") for i in range(4)]
    assert _score("path_convergence", _trace(repeated)).value == 0.0
    # A, B, A: back where it started, 0 of 2 transitions were needed → 0/2.
    back = [_step(i, "tool_call", "solo", tool=n) for i, n in enumerate("ABA")]
    assert _score("path_convergence", _trace(back)).value == 0.0
    # A, B, C, B, D with edges A→B, B→C, C→B, B→D: shortest A ⇝ D = A, B, D = 2 of 4 → 1/2.
    detour = [_step(i, "tool_call", "solo", tool=n) for i, n in enumerate("ABCBD")]
    assert _score("path_convergence", _trace(detour)).value == pytest.approx(2 / 4)


def test_path_convergence_against_a_reference_trajectory() -> None:
    # The reference is contained in order: LCS = 4, max(4, 5) = 5 → 4/5 (spec: min / actual).
    ref = ["search", "fetch", "analyze", "save"]
    assert _score("path_convergence", _trace(TEAM_STEPS, reference_trajectory=ref)).value == (
        pytest.approx(4 / 5)
    )
    # 'summarize' was never called: LCS(search fetch summarize save, actual) = 3 → 3/5.
    ref2 = ["search", "fetch", "summarize", "save"]
    result = _score("path_convergence", _trace(TEAM_STEPS, reference_trajectory=ref2))
    assert result.value == pytest.approx(3 / 5)
    assert result.details["matched_in_order"] == 3
    # Out of order: reference save, search vs actual search, save → LCS 1, max 2 → 1/2.
    steps = [_step(0, "tool_call", "a", tool="search"), _step(1, "tool_call", "a", tool="save")]
    out_of_order = _trace(steps, reference_trajectory=["save", "search"])
    assert _score("path_convergence", out_of_order).value == pytest.approx(1 / 2)
    # Expected 2 calls, made none → 0/2.
    assert _score("path_convergence", _trace([], reference_trajectory=ref[:2])).value == 0.0


def test_a_reference_of_steps_scores_as_its_tool_names() -> None:
    # The same reference written as chat steps (a user message, calls with arguments, tool
    # outputs, a final answer) gives path_convergence and tool_selection_accuracy the values of
    # its tool-name list: 3/5 for both (see the two tests above and below).
    names = ["search", "fetch", "summarize", "save"]
    steps = [
        ReferenceStep(role="user", content="review the paper"),
        ReferenceStep(
            role="assistant",
            tool_calls=[ToolCall(name="search", arguments={"q": "x"}), ToolCall(name="fetch")],
        ),
        ReferenceStep(role="tool", content="hits"),
        ReferenceStep(role="tool", content="page"),
        ReferenceStep(role="assistant", tool_calls=[ToolCall(name="summarize")]),
        ReferenceStep(role="assistant", tool_calls=[ToolCall(name="save")]),
        ReferenceStep(role="assistant", content="done"),
    ]
    for metric_name in ("path_convergence", "tool_selection_accuracy"):
        by_name = _score(metric_name, _trace(TEAM_STEPS, reference_trajectory=names))
        by_steps = _score(metric_name, _trace(TEAM_STEPS, reference_trajectory=steps))
        assert by_steps.value == by_name.value == pytest.approx(3 / 5)


def test_path_convergence_without_tools_is_missing() -> None:
    result = _score("path_convergence", _trace([_msg(0, "a", "b", "coordination")]))
    assert result.value is None
    assert "no tool call" in (result.reason or "")


# --- tool_selection_accuracy ------------------------------------------------------------------


def test_tool_selection_against_optimal_tools_by_agent() -> None:
    # Context = the calling agent. researcher→search: search ✓, search ✓, fetch ✗;
    # analyst→analyze: analyze ✓; manager→publish: save ✗ → 3/5.
    optimal = {"researcher": "search", "analyst": "analyze", "manager": "publish"}
    result = _score("tool_selection_accuracy", _trace(TEAM_STEPS, optimal_tools=optimal))
    assert result.value == pytest.approx(3 / 5)
    assert [c["correct"] for c in result.details["calls"]] == [True, True, False, True, False]


def test_tool_selection_context_from_content_first_and_unlisted_calls() -> None:
    # Step 1's content 'find related work' is a key: expected 'lookup', got search ✗.
    # The analyst is the only other known context: analyze ✓. The three other calls
    # (researcher's 2nd search and fetch, manager's save) have no listed context, so no
    # optimal tool: not correct selections → 1 of 5 calls.
    optimal = {"find related work": "lookup", "analyst": "analyze"}
    result = _score("tool_selection_accuracy", _trace(TEAM_STEPS, optimal_tools=optimal))
    assert result.value == pytest.approx(1 / 5)
    assert result.details["judged"] == 5 and result.details["unlisted_context"] == 3
    unlisted = [c["step"] for c in result.details["calls"] if c["context"] is None]
    assert unlisted == [3, 4, 10]


def test_tool_selection_against_a_reference_trajectory() -> None:
    # Multisets: actual {search: 2, fetch, analyze, save}, reference {search, fetch,
    # summarize, save}: correct = min(2,1) + 1 + 0 + 1 = 3 of 5 calls → 3/5.
    ref = ["search", "fetch", "summarize", "save"]
    result = _score("tool_selection_accuracy", _trace(TEAM_STEPS, reference_trajectory=ref))
    assert result.value == pytest.approx(3 / 5)
    assert _score("tool_selection_accuracy", _trace([], reference_trajectory=ref)).value == 0.0
    assert _score("tool_selection_accuracy", _trace([], reference_trajectory=[])).value == 1.0


def test_tool_selection_without_references_is_missing() -> None:
    result = _score("tool_selection_accuracy", _trace(TEAM_STEPS))
    assert result.value is None
    assert "optimal_tools" in (result.reason or "")
    # a mapping that lists none of the calls' contexts: no call is a correct selection
    nothing_known = _trace(TEAM_STEPS, optimal_tools={"nobody": "x"})
    assert _score("tool_selection_accuracy", nothing_known).value == 0.0
    # no call at all: 0.0 when the mapping expects tools (the spec), 1.0 when it expects none
    assert _score("tool_selection_accuracy", _trace([], optimal_tools={"a": "x"})).value == 0.0
    assert _score("tool_selection_accuracy", _trace([], optimal_tools={})).value == 1.0


# --- communication_overhead -------------------------------------------------------------------


def test_communication_overhead() -> None:
    # Six messages the agents sent: task_request, result_delivery, coordination, status_update,
    # result_delivery and one untyped (step 11). Coordination ones: coordination,
    # status_update = 2; the untyped one counts in the denominator → 2/6.
    result = _score("communication_overhead", _trace(TEAM_STEPS))
    assert result.value == pytest.approx(2 / 6)
    assert result.details["messages"] == 6
    assert result.details["unclassified"] == 1
    assert get_metric_info("communication_overhead").higher_is_better is False


def test_an_untyped_handoff_counts_as_coordination() -> None:
    steps = [
        _step(0, "handoff", "a", recipient="b"),
        _msg(1, "b", "a", "data_transfer"),
        _msg(2, "b", "a", "handoff"),
    ]
    # handoff (implied), data_transfer, handoff → 2/3.
    assert _score("communication_overhead", _trace(steps)).value == pytest.approx(2 / 3)
    assert _score("communication_overhead", _trace(TEAM_STEPS[1:5])).value is None


def test_communication_overhead_counts_untyped_messages() -> None:
    # a→b coordination, b→a untyped, a→b untyped, b→a result_delivery: 1 coordination of 4
    # messages → 1/4; the user's untyped message is the environment's, not counted.
    steps = [
        _msg(0, "user", "a", None),
        _msg(1, "a", "b", "coordination"),
        _msg(2, "b", "a", None),
        _msg(3, "a", "b", None),
        _msg(4, "b", "a", "result_delivery"),
    ]
    result = _score("communication_overhead", _trace(steps))
    assert result.value == pytest.approx(1 / 4)
    assert result.details["unclassified"] == 2
    # Only untyped messages: nothing says which are coordination → None, with the count.
    untyped = [_msg(0, "a", "b", None), _msg(1, "b", "a", None)]
    missing = _score("communication_overhead", _trace(untyped))
    assert missing.value is None and "message_type" in (missing.reason or "")
    assert missing.details["unclassified"] == 2


# --- coordination_centrality ------------------------------------------------------------------


def test_centrality_of_a_manager_star() -> None:
    # Undirected graph manager–researcher, manager–analyst (n = 3).
    # manager: betweenness 1/1 (the only pair r–a passes through it), closeness 2/(1+1) = 1,
    #   degree 2/2 = 1 → 1.0.
    # researcher: betweenness 0, closeness 2/(1+2) = 2/3, degree 1/2 → (0 + 2/3 + 1/2)/3 = 7/18.
    result = _score("coordination_centrality", _trace(TEAM_STEPS))
    agents = result.details["agents"]
    assert agents["manager"]["centrality"] == pytest.approx(1.0)
    assert agents["researcher"]["centrality"] == pytest.approx(7 / 18)
    assert agents["analyst"]["centrality"] == pytest.approx(7 / 18)
    assert result.value == pytest.approx(1.0)
    mean = _score("coordination_centrality", _trace(TEAM_STEPS), aggregate="mean")
    assert mean.value == pytest.approx((1 + 7 / 18 + 7 / 18) / 3)


def test_centrality_of_a_chain() -> None:
    # a–b–c–d. b: betweenness (pairs a–c, a–d) 2 / ((3·2)/2) = 2/3, closeness 3/(1+1+2) = 3/4,
    # degree 2/3 → (2/3 + 3/4 + 2/3)/3 = 25/36. a: 0, 3/(1+2+3) = 1/2, 1/3 → 5/18.
    steps = [_msg(0, "a", "b", "coordination"), _msg(1, "b", "c", "coordination")]
    steps.append(_msg(2, "c", "d", "data_transfer"))
    result = _score("coordination_centrality", _trace(steps))
    assert result.details["agents"]["b"]["centrality"] == pytest.approx(25 / 36)
    assert result.details["agents"]["a"]["centrality"] == pytest.approx(5 / 18)
    assert result.value == pytest.approx(25 / 36)
    mean = _score("coordination_centrality", _trace(steps), aggregate="mean")
    assert mean.value == pytest.approx((2 * 25 / 36 + 2 * 5 / 18) / 4)


def test_centrality_counts_an_agent_cut_off_from_the_others() -> None:
    # The star plus an agent 'idle' that acts but never talks (n = 4).
    # manager: betweenness 1 pair of the 3 pairs of others → 1/3; closeness reaches 2 of 3
    # others at distance 1 → (2/2)·(2/3) = 2/3 (Wasserman–Faust); degree 2/3 → 5/9.
    steps = [*TEAM_STEPS, _step(12, "reasoning", "idle", content="thinking")]
    result = _score("coordination_centrality", _trace(steps))
    assert result.details["agents"]["manager"]["centrality"] == pytest.approx(5 / 9)
    assert result.details["agents"]["idle"]["centrality"] == 0.0


def test_centrality_without_messages_is_missing_and_options_are_checked() -> None:
    result = _score("coordination_centrality", _trace(TEAM_STEPS[1:5]))
    assert result.value is None
    assert result.details["agents"] == ["researcher"]
    with pytest.raises(MetricOptionError):
        create_metric("coordination_centrality", {"aggregate": "median"})


# --- task_distribution_balance ----------------------------------------------------------------


def test_task_distribution_balance() -> None:
    # Steps per agent, tool results excepted: manager 0, 6, 10, 11 = 4; researcher 1, 3, 4, 5 = 4;
    # analyst 7, 8, 9 = 3. mean 11/3; sample variance ((1/3)² + (1/3)² + (2/3)²)/2 = 1/3;
    # 1 − √(1/3)/(11/3) = 1 − √3/11.
    result = _score("task_distribution_balance", _trace(TEAM_STEPS))
    assert result.details["steps"] == {"manager": 4, "researcher": 4, "analyst": 3}
    assert result.value == pytest.approx(1 - math.sqrt(3) / 11)
    # Population stdev: variance (2/3)/3 = 2/9 → 1 − √2/3 / (11/3) = 1 − √2/11.
    population = _score("task_distribution_balance", _trace(TEAM_STEPS), ddof=0)
    assert population.value == pytest.approx(1 - math.sqrt(2) / 11)


def test_balance_is_clamped_at_zero_and_single_agent_is_one() -> None:
    # counts 9 and 1: mean 5, sample stdev √32 ≈ 5.66 > mean → max(0, ·) = 0.
    steps = [_step(i, "reasoning", "busy") for i in range(9)]
    steps.append(_step(9, "reasoning", "lazy"))
    assert _score("task_distribution_balance", _trace(steps)).value == 0.0
    # Steps without an agent belong to one (unnamed) agent.
    solo = [_step(0, "llm"), _step(1, "tool_call", tool="search")]
    assert _score("task_distribution_balance", _trace(solo)).value == 1.0
    assert _score("task_distribution_balance", _trace([])).value is None


# --- composites: tool_efficiency and coordination_quality -------------------------------------


def test_tool_efficiency() -> None:
    # path 3/4 (tool graph), selection 3/5 (optimal_tools above) → (0.75 + 0.6)/2 = 0.675.
    optimal = {"researcher": "search", "analyst": "analyze", "manager": "publish"}
    trace = _trace(TEAM_STEPS, optimal_tools=optimal)
    assert _score("tool_efficiency", trace).value == pytest.approx(0.675)
    # weights 3 and 1: (3·0.75 + 0.6)/4 = 0.7125.
    weighted = _score("tool_efficiency", trace, path_weight=3, selection_weight=1)
    assert weighted.value == pytest.approx(0.7125)
    # No references: selection is missing, path alone → 0.75, and the gap is recorded.
    alone = _score("tool_efficiency", _trace(TEAM_STEPS))
    assert alone.value == pytest.approx(0.75)
    assert "tool_selection_accuracy" in alone.details["missing"]
    assert _score("tool_efficiency", _trace([])).value is None


def test_coordination_quality() -> None:
    # 0.5·(1 − 2/6) + 0.5·(1 − √3/11).
    balance = 1 - math.sqrt(3) / 11
    result = _score("coordination_quality", _trace(TEAM_STEPS))
    assert result.value == pytest.approx(0.5 * (1 - 2 / 6) + 0.5 * balance)
    # With centrality (max = 1.0) at equal weight: ((1 − 2/6) + balance + 1.0)/3.
    with_hub = _score("coordination_quality", _trace(TEAM_STEPS), centrality_weight=0.5)
    assert with_hub.value == pytest.approx((1 - 2 / 6 + balance + 1.0) / 3)
    # A single agent without messages: balance alone (1.0); an empty trace: nothing.
    solo = _trace([_step(0, "llm", "writer"), _step(1, "tool_call", "writer", tool="search")])
    assert _score("coordination_quality", solo).value == 1.0
    empty = _score("coordination_quality", _trace([]))
    assert empty.value is None
    assert "no agent performed a step" in (empty.reason or "")
    with pytest.raises(MetricOptionError):
        create_metric("coordination_quality", {"overhead_weight": -1})


def test_a_suite_works_out_each_shared_part_once_per_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentgauge.config import Suite
    from agentgauge.engine import score_traces
    from agentgauge.metrics import graph

    made: list[str] = []
    for name in ("_path_convergence", "_tool_selection_accuracy"):
        part = getattr(graph, name)

        def counted(trace: Trace, part: Any = part, name: str = name) -> Any:
            made.append(name)
            return part(trace)

        monkeypatch.setattr(graph, name, counted)
    optimal = {"researcher": "search", "analyst": "analyze", "manager": "publish"}
    traces = [
        Trace(id=f"t{i}", task=Task(id="task", optimal_tools=optimal), steps=TEAM_STEPS[: 6 + i])
        for i in range(5)
    ]
    # the balance and the overhead with other options than coordination_quality's: not shared
    suite = Suite(
        name="graphs",
        metrics=[
            "path_convergence",
            "tool_selection_accuracy",
            "tool_efficiency",
            "task_distribution_balance",
            "communication_overhead",
            "coordination_quality",
        ],
        options={"task_distribution_balance": {"ddof": 0}},
    )
    samples = score_traces(traces, suite)

    assert sorted(made) == ["_path_convergence"] * 5 + ["_tool_selection_accuracy"] * 5
    for trace, sample in zip(traces, samples, strict=True):
        # the same values as each metric scored on its own, outside the engine
        for name in suite.metrics:
            options = suite.options.get(name, {})
            assert sample.values[name] == _score(name, trace, **options).value
        assert (
            sample.details["tool_efficiency"]["parts"]["path_convergence"]["value"]
            == (sample.values["path_convergence"])
        )
    # outside the engine nothing is kept: a trace changed between two calls is scored anew
    trace = _trace(list(TEAM_STEPS))
    before = _score("path_convergence", trace).value
    trace.steps.pop(4)  # the fetch: the path search → search → analyze → save
    assert _score("path_convergence", trace).value != before


# --- the environment is not an agent ------------------------------------------------------------


def test_a_single_agent_answering_a_user_is_a_single_agent() -> None:
    # The user asks (a typed message), the agent works and answers: one agent, no team.
    steps = [
        _msg(0, "user", "assistant", "task_request"),
        _step(1, "tool_call", "assistant", tool="search"),
        _step(2, "tool_result", "tool", result="hits"),
        _msg(3, "assistant", "user", "result_delivery"),
    ]
    trace = _trace(steps)
    balance = _score("task_distribution_balance", trace)
    assert balance.value == 1.0 and balance.details["steps"] == {"assistant": 2}
    centrality = _score("coordination_centrality", trace)
    assert centrality.value is None and centrality.details["agents"] == ["assistant"]
    # only the agent's own message counts: result_delivery → 0/1
    overhead = _score("communication_overhead", trace)
    assert overhead.value == 0.0 and overhead.details["messages"] == 1
    # 0.5·(1 − 0) + 0.5·1
    assert _score("coordination_quality", trace).value == 1.0
    # with no environment declared, the user counts as a second agent (steps 1 vs 2):
    # mean 1.5, sample stdev √0.5 → 1 − √0.5/1.5
    plain = _score("task_distribution_balance", trace, environment_agents=[])
    assert plain.value == pytest.approx(1 - math.sqrt(0.5) / 1.5)
    with pytest.raises(MetricOptionError):
        create_metric("task_distribution_balance", {"environment_agents": "user"})


def test_the_user_is_not_a_node_of_the_team_graph() -> None:
    # The manager star of TEAM_STEPS plus a user who briefs the manager and is answered:
    # the star's figures are unchanged (manager 1.0, the others 7/18).
    steps = [
        _msg(0, "user", "manager", "task_request"),
        *[s.model_copy(update={"index": s.index + 1}) for s in TEAM_STEPS],
        _msg(13, "manager", "User", "result_delivery"),
    ]
    result = _score("coordination_centrality", _trace(steps))
    assert sorted(result.details["agents"]) == ["analyst", "manager", "researcher"]
    assert result.details["agents"]["manager"]["centrality"] == pytest.approx(1.0)
    assert result.details["agents"]["analyst"]["centrality"] == pytest.approx(7 / 18)
