"""Output parsers on real-shaped model outputs: every format, nested arguments, several calls,
malformed output recorded as a parse error (never raised, never executed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgauge.model import ToolCall, ToolSpec
from agentgauge.toolcall.parsers import ParseResult, parse_tool_calls

WEATHER = ToolSpec(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
)
NESTED_ARGS = {"query": {"filters": {"price": {"max": 100, "currency": "EUR"}}, "tags": ["a", "b"]}}


def _pairs(result: ParseResult) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in result.calls]


def test_openai_message_with_string_and_object_arguments() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "search", "arguments": json.dumps(NESTED_ARGS)},
            },
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            },
        ],
    }
    result = parse_tool_calls(message)
    assert result.error is None and result.format == "openai"
    assert _pairs(result) == [("search", NESTED_ARGS), ("get_weather", {"city": "Paris"})]
    assert [c.id for c in result.calls] == ["call_0", "call_1"]


def test_openai_chat_completion_response_and_empty_arguments() -> None:
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "x",
                            "type": "function",
                            "function": {"name": "now", "arguments": ""},
                        }
                    ],
                },
            }
        ],
    }
    result = parse_tool_calls(response)
    assert _pairs(result) == [("now", {})]
    assert result.text is None


def test_openai_arguments_that_are_not_json_are_a_parse_error() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": '{"a": 1'}}],
    }
    result = parse_tool_calls(message)
    assert result.calls == []
    assert result.error is not None and "not valid JSON" in result.error


def test_openai_message_without_calls_keeps_its_text() -> None:
    result = parse_tool_calls({"role": "assistant", "content": "It is 21 °C in Paris."})
    assert result.calls == [] and result.error is None
    assert result.text == "It is 21 °C in Paris."


def test_hermes_qwen_blocks_with_nested_arguments_and_surrounding_text() -> None:
    text = (
        "Let me look that up.\n"
        "<tool_call>\n"
        + json.dumps({"name": "search", "arguments": NESTED_ARGS})
        + "\n</tool_call>\n<tool_call>\n"
        + '{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}'
        + "\n</tool_call>"
    )
    result = parse_tool_calls(text)
    assert result.format == "hermes" and result.error is None
    assert _pairs(result) == [
        ("search", NESTED_ARGS),
        ("get_weather", {"city": "Zürich", "unit": "celsius"}),
    ]
    assert result.text == "Let me look that up."


def test_hermes_malformed_block_keeps_the_good_ones_and_records_the_error() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "b", "arguments": {"x": 1,}}</tool_call>'
        '<tool_call>{"name": "c", "arguments": {"y": 2}}'  # stopped before the closing tag
    )
    result = parse_tool_calls(text)
    assert _pairs(result) == [("a", {}), ("c", {"y": 2})]
    assert result.error is not None and result.error.startswith("<tool_call> block 2")


def test_mistral_list_and_v11_formats() -> None:
    listed = parse_tool_calls(
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "search", "arguments": ' + json.dumps(NESTED_ARGS) + "}]"
    )
    assert listed.format == "mistral" and listed.error is None
    assert _pairs(listed) == [("get_weather", {"city": "Paris"}), ("search", NESTED_ARGS)]
    v11 = parse_tool_calls('[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}')
    assert _pairs(v11) == [("get_weather", {"city": "Oslo"})]
    broken = parse_tool_calls('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": ')
    assert broken.calls == [] and broken.error is not None and "invalid JSON" in broken.error


def test_llama_parameters_with_nested_objects() -> None:
    # DeepFabric's regex-based Llama parser loses these (research notes A6); ours must not.
    text = '{"name": "f", "parameters": {"a": {"b": 1}}}'
    assert _pairs(parse_tool_calls(text)) == [("f", {"a": {"b": 1}})]
    tagged = parse_tool_calls(
        "<|python_tag|>" + json.dumps({"name": "search", "parameters": NESTED_ARGS})
    )
    assert _pairs(tagged) == [("search", NESTED_ARGS)]


def test_generic_json_scanner_finds_calls_inside_prose_and_fences() -> None:
    text = (
        "I will call two tools.\n```json\n"
        + json.dumps([{"name": "a", "arguments": {"k": [1, {"z": None}]}}])
        + "\n```\nand then "
        + json.dumps({"name": "b", "arguments": {"s": "}{ tricky ]["}})
        + " to finish."
    )
    result = parse_tool_calls(text)
    assert result.format == "json" and result.error is None
    assert _pairs(result) == [("a", {"k": [1, {"z": None}]}), ("b", {"s": "}{ tricky ]["})]


def test_python_call_syntax_single_list_and_dotted() -> None:
    single = parse_tool_calls('get_weather(city="Paris", unit="celsius")')
    assert single.format == "python"
    assert _pairs(single) == [("get_weather", {"city": "Paris", "unit": "celsius"})]
    many = parse_tool_calls(
        '[get_weather(city="Paris"), math.factorial(number=5), '
        "mod.f(a=[1, 2], b=(3, 4), c=-2.5, d=None, e=True, g={'k': [1]})]"
    )
    assert _pairs(many) == [
        ("get_weather", {"city": "Paris"}),
        ("math.factorial", {"number": 5}),
        ("mod.f", {"a": [1, 2], "b": [3, 4], "c": -2.5, "d": None, "e": True, "g": {"k": [1]}}),
    ]


def test_python_positional_arguments_named_by_schema_order() -> None:
    result = parse_tool_calls('get_weather("Paris", "celsius")', tools=[WEATHER])
    assert _pairs(result) == [("get_weather", {"city": "Paris", "unit": "celsius"})]
    mixed = parse_tool_calls('get_weather("Paris", unit="kelvin")', tools=[WEATHER])
    assert _pairs(mixed) == [("get_weather", {"city": "Paris", "unit": "kelvin"})]
    # BFCL's decoder drops positional arguments (research notes B4): reproducible on demand.
    dropped = parse_tool_calls('get_weather("Paris")', tools=[WEATHER], positional="drop")
    assert _pairs(dropped) == [("get_weather", {})]


@pytest.mark.parametrize(
    ("text", "with_tools", "fragment"),
    [
        ('get_weather("Paris")', False, "no tool schema"),
        ('get_weather("a", "b", "c")', True, "3 positional arguments"),
        ('get_weather("Paris", city="Rome")', True, "positionally and by keyword"),
        ("get_weather(city=len('ab') + 0)", True, "not a literal"),  # BFCL eval()s this
        ("get_weather(city=(lambda: 'x')())", True, "not a literal"),
        ("get_weather(**{'city': 'x'})", True, "'**'"),
        ('get_weather(city="Paris"', True, "invalid Python call syntax"),
    ],
)
def test_python_calls_that_are_not_literal_are_parse_errors(
    text: str, with_tools: bool, fragment: str
) -> None:
    result = parse_tool_calls(text, tools=[WEATHER] if with_tools else None)
    assert result.calls == []
    assert result.error is not None and fragment in result.error


def test_bfcl_decoded_list_as_object_and_as_text() -> None:
    decoded = [{"spotify.play": {"artist": "Taylor Swift", "duration": 20}}, {"f": {}}]
    as_object = parse_tool_calls(decoded)
    assert as_object.format == "bfcl"
    assert _pairs(as_object) == [
        ("spotify.play", {"artist": "Taylor Swift", "duration": 20}),
        ("f", {}),
    ]
    assert _pairs(parse_tool_calls(json.dumps(decoded))) == _pairs(as_object)
    # BFCL's FC handlers keep each call's arguments as a JSON string.
    as_strings = parse_tool_calls([{"spotify.play": '{"artist": "Maroon 5", "duration": 15}'}])
    assert _pairs(as_strings) == [("spotify.play", {"artist": "Maroon 5", "duration": 15})]


def test_plain_text_has_no_call_and_no_error() -> None:
    for prose in ("Paris (France) is nice.", "Hello (world)", "Note: f(x) grows."):
        assert parse_tool_calls(prose) == parse_tool_calls(prose).__class__(text=prose)
    result = parse_tool_calls("I cannot help with that request.")
    assert result.calls == [] and result.error is None and result.format is None
    assert result.text == "I cannot help with that request."
    assert parse_tool_calls(None).calls == []
    assert parse_tool_calls("[]").calls == [] and parse_tool_calls("[]").error is None


def test_malformed_json_call_is_a_parse_error() -> None:
    result = parse_tool_calls('{"name": "get_weather", "arguments": {"city": "Paris"')
    assert result.calls == []
    assert result.error is not None


def test_unknown_structure_is_a_parse_error_not_a_crash() -> None:
    assert parse_tool_calls(42).error is not None
    assert parse_tool_calls([{"a": 1, "b": 2}]).error is not None
    assert parse_tool_calls([{"name": 3, "arguments": {}}]).error is not None


def test_forced_format_reads_only_that_format() -> None:
    text = '{"name": "f", "arguments": {}}'
    assert parse_tool_calls(text, format="hermes").calls == []
    assert parse_tool_calls(text, format="json").calls == [ToolCall(name="f", arguments={})]


@pytest.mark.parametrize(
    "output",
    [
        "[" * 3000,
        "[TOOL_CALLS]" + "[" * 5000,
        "f(x=" + "-" * 50000 + "1)",
        "f(x=" + "+".join(["1"] * 20000) + ")",
    ],
)
def test_degenerate_outputs_are_parse_errors_not_crashes(output: str) -> None:
    result = parse_tool_calls(output)
    assert result.calls == [] and result.error is not None
