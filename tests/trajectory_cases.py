"""The peers' own test cases for the trajectory metrics, as plain data.

- ``AGENTEVALS``: every evaluation of LangChain agentevals' ``python/tests/test_trajectory.py``
  (``create_trajectory_match_evaluator``): the messages of each test, its evaluator options and
  the verdict its test asserts for each mode (or args mode).
- ``DEEPEVAL``: DeepEval's ``ToolCorrectnessMetric`` on the cases of its
  ``tests/test_tool_correctness.py`` (which prints scores without asserting them; the values
  here are deepeval 4.3.1's) and on the cases of ``tests/test_metrics/
  test_tool_correctness_metric.py`` that need no tool-call type (values asserted there).
- ``RAGAS``: every scoring case of Ragas' ``tests/unit/test_tool_call_accuracy.py``
  (``ToolCallAccuracy``) with the score it asserts, and its sequence-alignment cases with the
  score ragas 0.4.3 gives.

Messages are OpenAI chat messages or LangChain message dicts, as the ``openai-chat`` format
reads them.
"""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str | None = None, *calls: dict[str, Any], **extra: Any) -> Message:
    message: Message = {"role": "assistant", "content": text, **extra}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    made: dict[str, Any] = {"function": {"name": name, "arguments": json.dumps(arguments)}}
    if call_id is not None:
        made["id"] = call_id
    return made


def tool(text: str, call_id: str | None = None) -> Message:
    message: Message = {"role": "tool", "content": text}
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


# LangChain message dicts (HumanMessage, AIMessage with tool_calls, ToolMessage)
def human(text: str) -> Message:
    return {"role": "human", "content": text}


def ai(text: str, *calls: dict[str, Any]) -> Message:
    message: Message = {"role": "ai", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def lc_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "args": args}


def lc_tool(call_id: str, text: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


# --------------------------------------------------------------------------- agentevals

SF = "What is the weather in SF?"
SF_LONDON = "What is the weather in SF and London?"
FLIGHT_Q = "Hi there, what time is my flight?"
UPDATE_Q = (
    "Update it to the next flight after that and bump me to first class if there is availability."
)
FLIGHT_A = (
    "Your flight LX0112 from CDG to BSL is scheduled to depart in an hour and arrive in two hours."
)
TICKET = json.dumps(
    [{"ticket_no": "7240005432906569", "flight_no": "LX0112", "departure_airport": "CDG"}]
)
NO_UPGRADES = (
    "Upgrades to first class are not currently available as they are being saved for VIPs."
)
NEXT_FLIGHT = (
    "The next flight after that is LX0112 from CDG to BSL is in 4 hours. However, we do not "
    "currently allow upgrades to first class. Confirming that I should book it for you anyway?"
)
POSSIBLE = (
    "Ok, it looks like upgrades to first class are possible. What date would you like to "
    "change your flight to?"
)
FETCH_ID = "d3b6d04c-87b5-4e94-a11f-d8bc7c033188"
TIME = {"start": "2025-03-22T18:34:40Z", "end": "2025-03-22T20:34:40Z"}
REF_TIME = {"start": "2025-03-22T18:34:40Z", "end": "baz"}


def city_matcher(output: dict[str, Any], reference: dict[str, Any]) -> bool:
    """The override of agentevals' test_trajectory_match_with_langchain_messages_and_override."""
    return output["city"] in ("SF", "San Francisco") and reference["city"] in (
        "SF",
        "San Francisco",
    )


def lookup_policy_query_matcher(output: dict[str, Any], reference: dict[str, Any]) -> bool:
    """The override of agentevals' test_trajectory_match_with_overrides."""
    if reference.get("query", {}) and "upgrade" in reference.get("query", {}):
        return "upgrade" in output.get("query", {})
    return True


CALLABLES = {
    "city_matcher": city_matcher,
    "lookup_policy_query_matcher": lookup_policy_query_matcher,
}

ALL_TRUE = {"unordered": 1.0, "superset": 1.0, "subset": 1.0, "strict": 1.0}
ALL_FALSE = {"unordered": 0.0, "superset": 0.0, "subset": 0.0, "strict": 0.0}

_FLIGHT_START = [
    user(FLIGHT_Q),
    assistant("", call("fetch_user_flight_information", {}, FETCH_ID)),
    tool(TICKET, FETCH_ID),
    assistant(FLIGHT_A),
    user(UPDATE_Q),
]
_NESTED_START = [
    user(FLIGHT_Q),
    assistant("", call("fetch_user_flight_information", {"user_id": "123"}, FETCH_ID)),
    tool(TICKET, FETCH_ID),
    assistant(FLIGHT_A),
    user(UPDATE_Q),
]
_GET_FLIGHT_OUT = [
    user(FLIGHT_Q),
    assistant("", call("get_flight_info", {"is_cool": True, "flight_no": "LX0112"}, "123")),
    assistant("Your flight is at 10:00 AM."),
]

# Each case: the peer test's name, its outputs and reference messages, the evaluator options
# other than the one varied, and {varied option value: asserted score}. ``vary`` is "mode"
# (trajectory_match_mode) or "args" (tool_args_match_mode).
AGENTEVALS: list[dict[str, Any]] = [
    {
        "test": "test_trajectory_match",
        "outputs": [
            user(SF),
            assistant(None, call("get_weather", {"city": "San Francisco"})),
            tool("It's 80 degrees and sunny in SF."),
            assistant("The weather in SF is 80 degrees and sunny."),
        ],
        "reference": [
            user(SF),
            assistant(None, call("get_weather", {"city": "San Francisco"})),
            tool("It's 80 degrees and sunny in San Francisco."),
            assistant("The weather in SF is 80˚ and sunny."),
        ],
        "vary": "mode",
        "scores": ALL_TRUE,
    },
    {
        "test": "test_trajectory_with_different_tool_message_order",
        "outputs": [
            user(SF_LONDON),
            assistant(
                None, call("get_weather", {"city": "SF"}), call("get_weather", {"city": "London"})
            ),
            tool("It's 80 degrees and sunny in SF."),
            tool("It's 90 degrees and rainy in London."),
            assistant("The weather in SF is 80 degrees and sunny. In London, it's 90 degrees."),
        ],
        "reference": [
            user(SF_LONDON),
            assistant(
                None, call("get_weather", {"city": "London"}), call("get_weather", {"city": "SF"})
            ),
            tool("It's 90 degrees and rainy in London."),
            tool("It's 80 degrees and sunny in SF."),
            assistant("The weather in London is 90˚ and rainy. In SF, it's 80˚ and sunny."),
        ],
        "vary": "mode",
        "scores": ALL_TRUE,
    },
    {
        "test": "test_trajectory_with_different_message_count",
        "outputs": [
            user(SF_LONDON),
            assistant(None, call("get_weather", {"city": "SF"})),
            tool("It's 80 degrees and sunny in SF."),
            assistant(None, call("get_weather", {"city": "London"})),
            tool("It's 90 degrees and rainy in London."),
            assistant("The weather in SF is 80 degrees and sunny. In London, it's 90 degrees."),
        ],
        "reference": [
            user(SF_LONDON),
            assistant(
                None, call("get_weather", {"city": "London"}), call("get_weather", {"city": "SF"})
            ),
            tool("It's 90 degrees and rainy in London."),
            tool("It's 80 degrees and sunny in SF."),
            assistant("The weather in London is 90˚ and rainy. In SF, it's 80˚ and sunny."),
        ],
        "vary": "mode",
        "scores": {"unordered": 1.0, "superset": 1.0, "subset": 1.0, "strict": 0.0},
    },
    {
        "test": "test_trajectory_subset_tool_call",
        "outputs": [
            user(SF_LONDON),
            assistant(None, call("get_weather", {"city": "SF"})),
            tool("It's 80 degrees and sunny in SF."),
            assistant("The weather in SF is 80 degrees and sunny. In London, it's 9000 degrees."),
        ],
        "reference": [
            user(SF_LONDON),
            assistant(
                None, call("get_weather", {"city": "London"}), call("get_weather", {"city": "SF"})
            ),
            tool("It's 90 degrees and rainy in London."),
            tool("It's 90 degrees and rainy in London."),
            assistant("The weather in London is 90˚ and rainy. In SF, it's 80˚ and sunny."),
        ],
        "vary": "mode",
        "scores": {"unordered": 0.0, "superset": 0.0, "subset": 1.0, "strict": 0.0},
    },
    {
        "test": "test_exact_matcher_with_different_called_tools",
        "outputs": [
            user(SF),
            assistant(None, call("get_weather", {"city": "SF"})),
            tool("It's 80 degrees and sunny in SF."),
            assistant("The weather in SF is 80 degrees and sunny."),
        ],
        "reference": [
            user(SF),
            assistant(None, call("accuweather_forecast", {"city": "San Francisco"})),
            tool("It's 80 degrees and sunny in San Francisco."),
            assistant("The weather in SF is 80˚ and sunny."),
        ],
        "vary": "mode",
        "scores": ALL_FALSE,
    },
    {
        "test": "test_trajectory_with_extra_tool_calls_and_override",
        "outputs": [
            user(SF_LONDON),
            assistant(
                None,
                call("get_weather", {"city": "San Francisco"}),
                call("get_weather", {"city": "London"}),
            ),
            tool("It's 80 degrees and sunny in San Francisco."),
            tool("It's 90 degrees and rainy in London."),
            assistant("The weather in SF is 80˚ and sunny. In London, it's 90˚ and rainy."),
        ],
        "reference": [
            user(SF_LONDON),
            assistant(None, call("get_weather", {"city": "SF and London"})),
            tool("It's 80 degrees and sunny in SF, and 90 degrees and rainy in London."),
            assistant("The weather in SF is 80 degrees and sunny. In London, it's 90 degrees."),
        ],
        "options": {"overrides": {"get_weather": "ignore"}},
        "vary": "mode",
        "scores": {"unordered": 0.0, "superset": 1.0, "subset": 0.0, "strict": 0.0},
    },
    {
        "test": "test_trajectory_with_subset_tool_calls_and_override",
        "outputs": [
            user(SF_LONDON),
            assistant(None, call("get_weather", {"city": "SF and London"})),
            tool("It's 80 degrees and sunny in SF, and 90 degrees and rainy in London."),
            assistant("The weather in SF is 80 degrees and sunny. In London, it's 90 degrees."),
        ],
        "reference": [
            user(SF_LONDON),
            assistant(
                None,
                call("get_weather", {"city": "San Francisco"}),
                call("get_weather", {"city": "London"}),
            ),
            tool("It's 80 degrees and sunny in San Francisco."),
            tool("It's 90 degrees and rainy in London."),
            assistant("The weather in SF is 80˚ and sunny. In London, it's 90˚ and rainy."),
        ],
        "options": {"overrides": {"get_weather": "ignore"}},
        "vary": "mode",
        "scores": {"unordered": 0.0, "superset": 0.0, "subset": 1.0, "strict": 0.0},
    },
    {
        "test": "test_trajectory_match_with_langchain_messages_and_override",
        "outputs": [
            human(SF),
            ai("", lc_call("1234", "get_weather", {"city": "SF"})),
            lc_tool("1234", "It's 80 degrees and sunny in SF."),
            ai("The weather in SF is 80 degrees and sunny."),
        ],
        "reference": [
            human(SF),
            ai(
                "Let me check that for you!",
                lc_call("4321", "get_weather", {"city": "San Francisco"}),
            ),
            lc_tool("4321", "It's 80 degrees and sunny in San Francisco."),
            ai("The weather in SF is 80˚ and sunny."),
        ],
        "options": {"overrides": {"get_weather": "city_matcher"}},
        "vary": "mode",
        "scores": ALL_TRUE,
    },
    {
        "test": "test_trajectory_match_with_langchain_messages_failure",
        "outputs": [
            human(SF),
            ai("", lc_call("1234", "get_weather", {"city": "SF"})),
            lc_tool("1234", "It's 80 degrees and sunny in SF."),
            ai("The weather in SF is 80 degrees and sunny."),
        ],
        "reference": [
            human(SF),
            ai(
                "Let me check that for you!",
                lc_call("4321", "accuweather_forecast", {"city": "San Francisco"}),
            ),
            lc_tool("4321", "It's 80 degrees and sunny in San Francisco."),
            ai("The weather in SF is 80˚ and sunny."),
        ],
        "vary": "mode",
        "scores": ALL_FALSE,
    },
]

_OVERRIDES_OUTPUTS = [
    *_FLIGHT_START,
    assistant(
        "",
        call(
            "search_flights",
            {
                "start_time": "2025-03-22T18:34:40Z",
                "departure_airport": "CDG",
                "arrival_airport": "BSL",
            },
            "f6ff5419-c03f-4543-b67d-72693c94b2ca",
        ),
    ),
    tool(
        json.dumps([{"flight_id": 19229, "flight_no": "LX0112"}]),
        "f6ff5419-c03f-4543-b67d-72693c94b2ca",
    ),
    assistant(
        "",
        call("lookup_policy", {"query": "flight upgrades"}, "4a286aff-199a-4152-99b1-df1ca07c920e"),
        call("lookup_policy", {"query": "first class"}, "00000000-0000-0000-0000-000000000000"),
    ),
    tool(NO_UPGRADES, "4a286aff-199a-4152-99b1-df1ca07c920e"),
    tool(NO_UPGRADES, "00000000-0000-0000-0000-000000000000"),
    assistant(NEXT_FLIGHT),
]
_OVERRIDES_REFERENCE = [
    *_FLIGHT_START,
    assistant(
        "",
        call(
            "lookup_policy",
            {"query": "upgrade to first class"},
            "cb2f81d3-382a-46ce-8fa0-a7ece7a75de1",
        ),
        call("lookup_policy", {"query": "foo"}, "00000000-0000-0000-0000-000000000000"),
        name="flight_agent",
    ),
    tool("...", "cb2f81d3-382a-46ce-8fa0-a7ece7a75de1"),
    tool("...", "00000000-0000-0000-0000-000000000000"),
    assistant(POSSIBLE, name="flight_agent"),
]
_NESTED_OUTPUTS = [
    *_NESTED_START,
    assistant(
        "",
        call(
            "lookup_policy",
            {"query": "flight upgrades", "time": TIME},
            "4a286aff-199a-4152-99b1-df1ca07c920e",
        ),
        call(
            "lookup_policy",
            {"query": "first class", "time": TIME},
            "00000000-0000-0000-0000-000000000000",
        ),
    ),
    tool(NO_UPGRADES, "4a286aff-199a-4152-99b1-df1ca07c920e"),
    tool(NO_UPGRADES, "00000000-0000-0000-0000-000000000000"),
    assistant(NEXT_FLIGHT),
]
_NESTED_REFERENCE = [
    *_NESTED_START,
    assistant(
        "",
        call(
            "lookup_policy",
            {"query": "foo", "time": REF_TIME},
            "cb2f81d3-382a-46ce-8fa0-a7ece7a75de1",
        ),
        call(
            "lookup_policy",
            {"query": "bar", "time": REF_TIME},
            "00000000-0000-0000-0000-000000000000",
        ),
        name="flight_agent",
    ),
    tool("...", "cb2f81d3-382a-46ce-8fa0-a7ece7a75de1"),
    tool("...", "00000000-0000-0000-0000-000000000000"),
    assistant(POSSIBLE, name="flight_agent"),
]

AGENTEVALS += [
    {
        "test": "test_trajectory_match_with_overrides[no overrides]",
        "outputs": _OVERRIDES_OUTPUTS,
        "reference": _OVERRIDES_REFERENCE,
        "vary": "mode",
        "scores": ALL_FALSE,
    },
    {
        "test": "test_trajectory_match_with_overrides",
        "outputs": _OVERRIDES_OUTPUTS,
        "reference": _OVERRIDES_REFERENCE,
        "options": {"overrides": {"lookup_policy": "lookup_policy_query_matcher"}},
        "vary": "mode",
        "scores": {"unordered": 0.0, "superset": 1.0, "subset": 0.0, "strict": 0.0},
    },
    {
        "test": "test_trajectory_match_with_nested_field_overrides[no overrides]",
        "outputs": _NESTED_OUTPUTS,
        "reference": _NESTED_REFERENCE,
        "vary": "mode",
        "scores": ALL_FALSE,
    },
    {
        "test": "test_trajectory_match_with_nested_field_overrides",
        "outputs": _NESTED_OUTPUTS,
        "reference": _NESTED_REFERENCE,
        "options": {"overrides": {"lookup_policy": ["time.start"]}},
        "vary": "mode",
        "scores": ALL_TRUE,
    },
    {
        "test": "test_tool_args_match_mode_superset",
        "outputs": _GET_FLIGHT_OUT,
        "reference": [
            user(FLIGHT_Q),
            assistant("", call("get_flight_info", {"flight_no": "LX0112"}, "321")),
            assistant("Your flight is at 10:00 AM."),
        ],
        "vary": "args",
        "scores": {"exact": 0.0, "ignore": 1.0, "subset": 0.0, "superset": 1.0},
    },
    {
        "test": "test_tool_args_match_mode_subset",
        "outputs": [
            user(FLIGHT_Q),
            assistant("", call("get_flight_info", {"flight_no": "LX0112"}, "123")),
            assistant("Your flight is at 10:00 AM."),
        ],
        "reference": [
            user(FLIGHT_Q),
            assistant("", call("get_flight_info", {"flight_no": "LX0112", "foo": "bar"}, "321")),
            assistant("Your flight is at 10:00 AM."),
        ],
        "vary": "args",
        "scores": {"exact": 0.0, "ignore": 1.0, "subset": 1.0, "superset": 0.0},
    },
    {
        "test": "test_tool_args_match_mode_exact",
        "outputs": [
            user(FLIGHT_Q),
            assistant("", call("get_flight_info", {"flight_no": "LX0112"}, "123")),
            assistant("Your flight is at 10:00 AM."),
        ],
        "reference": [
            user(FLIGHT_Q),
            assistant("", call("get_flight_info", {"flight_no": "LX0112"}, "321")),
            assistant("Your flight is at 10:00 AM."),
        ],
        "vary": "args",
        "scores": {"exact": 1.0, "ignore": 1.0, "subset": 1.0, "superset": 1.0},
    },
]


# --------------------------------------------------------------------------- DeepEval


def tc(name: str, inp: dict[str, Any] | None = None, out: Any = None) -> dict[str, Any]:
    """A DeepEval ToolCall: name, input_parameters, output."""
    return {"name": name, "input": inp or {}, "output": out}


# The nine test cases of DeepEval's tests/test_tool_correctness.py: (name, called, expected).
DEEPEVAL_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = [
    (
        "exact_match",
        [tc("tool1", {"a": 1, "b": 2, "c": 2}, "x")],
        [tc("tool1", {"a": 1, "b": 4, "c": 2}, "x")],
    ),
    (
        "tool_name_mismatch",
        [tc("tool2", {"a": 1, "b": 2}, "x")],
        [tc("tool1", {"a": 1, "b": 2}, "x")],
    ),
    (
        "input_parameter_mismatch",
        [tc("tool1", {"a": 2, "b": 2}, "x")],
        [tc("tool1", {"a": 1, "b": 2}, "x")],
    ),
    ("output_mismatch", [tc("tool1", {"a": 1, "b": 2}, "y")], [tc("tool1", {"a": 1, "b": 2}, "x")]),
    (
        "extra_tools_called",
        [tc("tool1", {"a": 1, "b": 2}, "x"), tc("tool2", {"c": 3}, "y")],
        [tc("tool1", {"a": 1, "b": 2}, "x")],
    ),
    ("missing_tools", [], [tc("tool1", {"a": 1, "b": 2}, "x")]),
    (
        "correct_ordering",
        [tc("tool1", {"a": 1, "b": 2}, "x"), tc("tool2", {"c": 3}, "y")],
        [tc("tool1", {"a": 1, "b": 2}, "x"), tc("tool2", {"c": 3}, "y")],
    ),
    (
        "out_of_order_tools",
        [tc("tool2", {"c": 3}, "y"), tc("tool1", {"a": 1, "b": 2}, "x")],
        [tc("tool1", {"a": 1, "b": 2}, "x"), tc("tool2", {"c": 3}, "y")],
    ),
    (
        "missing_and_out_of_order",
        [tc("tool2", {"c": 3}, "y")],
        [tc("tool1", {"a": 1, "b": 2}, "x"), tc("tool2", {"c": 3}, "y")],
    ),
]

# The option sets each case is scored with: the test file's own metric (TOOL,
# INPUT_PARAMETERS, OUTPUT; threshold 0.5) first, then the other options.
DEEPEVAL_OPTIONS: list[dict[str, Any]] = [
    {"compare": ["name", "input", "output"]},
    {"compare": ["name"]},
    {"compare": ["name", "input"]},
    {"compare": ["name", "input", "output"], "ordering": True},
    {"compare": ["name", "input"], "ordering": True},
    {"compare": ["name", "input", "output"], "exact": True},
    {"compare": ["name"], "exact": True},
    {"compare": ["name", "input"], "strict": True},
]

# deepeval 4.3.1's scores, one row per case of DEEPEVAL_CASES, one column per DEEPEVAL_OPTIONS.
DEEPEVAL_SCORES: dict[str, list[float]] = {
    "exact_match": [2 / 3, 1.0, 2 / 3, 2 / 3, 2 / 3, 0.0, 1.0, 0.0],
    "tool_name_mismatch": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    "input_parameter_mismatch": [0.5, 1.0, 0.5, 0.5, 0.5, 0.0, 1.0, 0.0],
    "output_mismatch": [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0],
    "extra_tools_called": [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0],
    "missing_tools": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    "correct_ordering": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    "out_of_order_tools": [1.0, 1.0, 1.0, 0.5, 0.5, 0.0, 0.0, 1.0],
    "missing_and_out_of_order": [0.5, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0],
}

# tests/test_metrics/test_tool_correctness_metric.py, the cases without a tool-call type
# mismatch (agentgauge's calls have no type): (test, called, expected, asserted score).
DEEPEVAL_TYPED: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], float]] = [
    (
        "test_matching_type_passes",
        [tc("ask_question", {"repoName": "confident-ai/deepeval"})],
        [tc("ask_question", {"repoName": "confident-ai/deepeval"})],
        1.0,
    ),
    ("test_defaulted_type_is_function", [tc("get_weather")], [tc("get_weather")], 1.0),
    (
        "test_same_name_different_types_do_not_match",
        [tc("ask_question"), tc("ask_question")],
        [tc("ask_question")],
        1.0,
    ),
]


# --------------------------------------------------------------------------- Ragas


def rc(name: str, **args: Any) -> dict[str, Any]:
    """A Ragas ToolCall."""
    return {"name": name, "args": args}


# (test, predicted calls grouped by AI message, reference calls, strict_order, score).
RAGAS: list[tuple[str, list[list[dict[str, Any]]], list[dict[str, Any]], bool, float]] = [
    (
        "test_perfect_match_scenario",
        [[rc("search", query="python"), rc("filter", type="recent")]],
        [rc("search", query="python"), rc("filter", type="recent")],
        True,
        1.0,
    ),
    ("test_no_predicted_tool_calls", [[]], [rc("search", query="python")], True, 0.0),
    (
        "test_sequence_misalignment",
        [[rc("filter", type="recent"), rc("search", query="python")]],
        [rc("search", query="python"), rc("filter", type="recent")],
        True,
        0.0,
    ),
    (
        "test_length_mismatch_more_predicted",
        [[rc("search", query="python"), rc("filter", type="recent")]],
        [rc("search", query="python")],
        True,
        0.0,
    ),
    (
        "test_length_mismatch_fewer_predicted",
        [[rc("search", query="python")]],
        [rc("search", query="python"), rc("filter", type="recent")],
        True,
        0.0,
    ),
    (
        "test_partial_argument_match",
        [[rc("search", query="python", limit=5), rc("filter", type="recent")]],
        [rc("search", query="python", limit=10), rc("filter", type="recent")],
        True,
        0.75,
    ),
    (
        "test_wrong_tool_names",
        [[rc("wrong_tool", query="python")]],
        [rc("search", query="python")],
        True,
        0.0,
    ),
    (
        "test_multiple_ai_messages",
        [[rc("search", query="python")], [rc("filter", type="recent")]],
        [rc("search", query="python"), rc("filter", type="recent")],
        True,
        1.0,
    ),
    ("test_empty_reference_tool_calls", [[]], [], True, 1.0),
    ("test_empty_reference_with_predictions", [[rc("unexpected")]], [], True, 0.0),
    (
        "test_is_sequence_aligned_perfect_match",
        [[rc("func1"), rc("func2"), rc("func3")]],
        [rc("func1"), rc("func2"), rc("func3")],
        True,
        1.0,
    ),
    (
        "test_is_sequence_aligned_different_order",
        [[rc("func1"), rc("func3"), rc("func2")]],
        [rc("func1"), rc("func2"), rc("func3")],
        True,
        0.0,
    ),
    (
        "test_is_sequence_aligned_different_length",
        [[rc("func1"), rc("func2")]],
        [rc("func1"), rc("func2"), rc("func3")],
        True,
        0.0,
    ),
    ("test_is_sequence_aligned_empty_sequences", [[]], [], True, 1.0),
    (
        "test_is_sequence_aligned_flexible_mode[flexible]",
        [[rc("func2"), rc("func1"), rc("func3")]],
        [rc("func1"), rc("func2"), rc("func3")],
        False,
        1.0,
    ),
    (
        "test_is_sequence_aligned_flexible_mode[strict]",
        [[rc("func2"), rc("func1"), rc("func3")]],
        [rc("func1"), rc("func2"), rc("func3")],
        True,
        0.0,
    ),
    (
        "test_flexible_order_sorting_behavior[strict]",
        [[rc("UVIndex", location="Paris"), rc("WeatherForecast", location="Paris")]],
        [rc("WeatherForecast", location="Paris"), rc("UVIndex", location="Paris")],
        True,
        0.0,
    ),
    (
        "test_flexible_order_sorting_behavior[flexible]",
        [[rc("UVIndex", location="Paris"), rc("WeatherForecast", location="Paris")]],
        [rc("WeatherForecast", location="Paris"), rc("UVIndex", location="Paris")],
        False,
        1.0,
    ),
]
