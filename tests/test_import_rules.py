"""The import rules that hold for every framework, each checked on the real exports that need
it (``tests/fixtures/frameworks``), item by item: a scenario still pending for another reason
holds the rule all the same. The values asserted are read by hand from the raw files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from agentgauge.io.jsonl import ReadError
from agentgauge.io.otel import read_otel
from agentgauge.io.otel.conventions import tool_error
from agentgauge.model import StepKind, Trace

FRAMEWORKS = Path(__file__).parent / "fixtures" / "frameworks"


def _traces(scenario: str) -> list[Trace]:
    items = list(read_otel(FRAMEWORKS / scenario / "spans.jsonl"))
    assert not [i for i in items if isinstance(i, ReadError)]
    return [i for i in items if isinstance(i, Trace)]


def _only(scenario: str) -> Trace:
    traces = _traces(scenario)
    assert len(traces) == 1
    return traces[0]


def _calls(trace: Trace) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, c.arguments) for c in trace.tool_calls]


WEATHER_CALLS = [("get_weather", {"city": "Paris"}), ("get_forecast", {"city": "Rome", "days": 2})]


def test_arguments_from_the_models_call_matched_by_tool_call_id() -> None:
    # ADK records the arguments only in the model call's log record (call_paris,
    # call_forecast); its tool spans carry the ids. strands' default conventions put them in
    # the model's gen_ai.choice event as Bedrock toolUse blocks.
    for scenario in ("adk_transfer", "strands_default"):
        trace = _only(scenario)
        assert _calls(trace)[:2] == WEATHER_CALLS, scenario
        assert [c.id for c in trace.tool_calls][:2] == ["call_paris", "call_forecast"]


def test_a_bare_string_input_is_the_single_parameter() -> None:
    # OpenInference LangChain: the one-argument tool's span input is "Paris"; the schema has
    # one property, city (and the model's call, matched by name, says the same)
    trace = _only("langgraph_react")
    assert _calls(trace) == WEATHER_CALLS
    assert _calls(_only("langchain_agent")) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]


def test_never_the_schema_never_a_kwargs_wrapper() -> None:
    # smolagents: tool.parameters is the input schema, input.value {"args": [], "kwargs": ...}
    smol = _only("smolagents_managed")
    assert _calls(smol)[:3] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
        ("get_forecast", {"city": "Rome", "days": 2}),
    ]
    # LlamaIndex: input.value {"kwargs": {...}}
    for scenario in ("llamaindex_agent", "llamaindex_workflow"):
        assert _calls(_only(scenario)) == WEATHER_CALLS, scenario


def test_coordination_tools_are_handoffs_to_the_agent_they_name() -> None:
    # ADK transfer_to_agent(agent_name="weather") inside an invoke_workflow; strands Swarm
    # handoff_to_agent(agent_name="weather"); no agent named after the tool
    for scenario in ("adk_transfer", "strands_default", "strands_latest"):
        trace = _only(scenario)
        handoffs = [(s.agent, s.recipient) for s in trace.steps if s.kind is StepKind.handoff]
        assert handoffs == [("triage", "weather")], scenario
        assert {s.agent for s in trace.steps} == {"triage", "weather"}, scenario
        assert all(
            c.name not in ("transfer_to_agent", "handoff_to_agent") for c in trace.tool_calls
        )


def test_a_workflow_is_no_agent_but_names_the_run() -> None:
    trace = _only("adk_transfer")  # invoke_workflow triage around the two agents
    assert trace.agent == "triage"
    assert "invoke_workflow" not in trace.metadata.get("unmapped_spans", {})


def test_preparation_spans_are_not_model_calls() -> None:
    # LlamaIndex: each call is OpenAI._prepare_chat_with_tools (an LLM span without an
    # answer or usage) then OpenAI.astream_chat
    for scenario, calls in (("llamaindex_agent", 2), ("llamaindex_workflow", 3)):
        trace = _only(scenario)
        assert sum(1 for s in trace.steps if s.kind is StepKind.llm) == calls, scenario
        skipped = trace.metadata["unmapped_spans"]
        assert skipped["OpenAI._prepare_chat_with_tools"] == calls, scenario


def test_the_output_from_span_events_and_never_a_repr() -> None:
    answer = "Paris: 18°C and sunny. Rome: 24°C and clear."
    # strands: the answer only in gen_ai.choice events (default) or in
    # gen_ai.client.inference.operation.details events (latest conventions)
    for scenario in ("strands_single", "strands_default", "strands_latest"):
        assert str(_only(scenario).output).strip() == answer, scenario
    # LlamaIndex: the workflow span's output.value is StopEvent(result=...)
    for scenario in ("llamaindex_agent", "llamaindex_workflow"):
        assert _only(scenario).output == answer, scenario


def test_traces_that_only_define_agents_are_no_run() -> None:
    # AutoGen: create_agent triage and create_agent weather each in a trace of its own, then
    # the run of weather alone
    trace = _only("autogen_single")
    assert {s.agent for s in trace.steps} == {"weather"}


def test_traces_that_name_one_run_make_one_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgauge.io.otel.conventions import CONVENTIONS, Convention, ConventionInfo
    from agentgauge.io.otel.wire.span import Span

    # AutoGen names the group chat in each agent's gen_ai.agent.id, "<type>_<team>/<team>"
    class TeamRun(Convention):
        def run_id(self, span: Span) -> str | None:
            agent_id = span.attributes.get("gen_ai.agent.id")
            return agent_id.rsplit("/", 1)[-1] if isinstance(agent_id, str) else None

    CONVENTIONS.load()
    monkeypatch.setattr(CONVENTIONS, "version", CONVENTIONS.version + 1)
    entries = CONVENTIONS._entries  # one convention for this test only
    info = ConventionInfo("test-team-run", TeamRun(), 5)
    monkeypatch.setitem(entries, "test-team-run", replace(entries["genai"], name="x", value=info))
    runs = [t for t in _traces("autogen_swarm") if any(s.kind is StepKind.llm for s in t.steps)]
    assert len(runs) == 1
    assert {s.agent for s in runs[0].steps} == {"triage", "weather"}
    assert [(s.agent, s.recipient) for s in runs[0].steps if s.kind is StepKind.handoff] == [
        ("triage", "weather")
    ]


@pytest.mark.parametrize("scenario", ["strands_default", "adk_transfer", "langchain_agent"])
def test_truth_files_agree_with_the_rules(scenario: str) -> None:
    truth = json.loads((FRAMEWORKS / scenario / "expected.json").read_text())
    trace = _only(scenario)
    expected = [(c["name"], c["arguments"]) for c in truth["traces"][0]["tool_calls"]]
    assert _calls(trace)[: len(expected)] == expected


def test_parallel_tool_calls_come_in_the_order_the_model_asked_for_them() -> None:
    # LangSmith: get_forecast's run started 2 ms before get_weather's; the model asked for
    # get_weather (call_paris) first
    items = list(read_otel(FRAMEWORKS / "langsmith_langgraph_tree" / "run.json"))
    [trace] = [i for i in items if isinstance(i, Trace)]
    assert [c.id for c in trace.tool_calls] == ["call_paris", "call_forecast"]
    assert trace.agent == "weather_agent"  # the LangGraph graph's run


def test_a_tool_failure_told_only_in_the_frameworks_words_is_an_error() -> None:
    # CrewAI traced by OpenLLMetry records no tool span: the failed forecast is only the text
    # CrewAI gave the model, "Error executing tool: the forecast service is unavailable"
    trace = _only("crewai_openllmetry")
    results = {s.parent_id: s for s in trace.steps if s.kind is StepKind.tool_result}
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    assert [c.tool_call.name for c in calls if c.tool_call] == ["get_weather", "get_forecast"]
    assert [results[c.id].error for c in calls] == [None, "the forecast service is unavailable"]
    told = "Error executing tool: the forecast service is unavailable"
    assert results[calls[1].id].result == told


@pytest.mark.parametrize(
    ("result", "error"),
    [
        # crewai translations/en.json tool_usage_exception, formatted as crewai does
        (
            "I encountered an error while trying to use the tool. This was the error: "
            "division by zero.\n Tool calculator accepts these inputs: {'a': int}",
            "division by zero",
        ),
        ("I encountered an error: timeout", "timeout"),
        # langgraph.prebuilt ToolNode's TOOL_CALL_ERROR_TEMPLATE with a raised ValueError
        (
            "Error: ValueError('no such city')\n Please fix your mistakes.",
            "ValueError('no such city')",
        ),
        ("The error rate fell to 2%.", None),
        ("Error: 404 is the status the page gave", None),
        ({"error": "not a text"}, None),
    ],
)
def test_the_frameworks_error_texts(result: object, error: str | None) -> None:
    assert tool_error(result) == error
