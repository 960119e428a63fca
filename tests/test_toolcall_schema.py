"""Argument checks against JSON Schema and BFCL type names."""

from __future__ import annotations

from typing import Any

import pytest

from agentgauge.model import ToolSpec
from agentgauge.toolcall.schema import check_arguments, json_equal, openai_tools, type_matches

ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "item": {"type": "string"},
        "quantity": {"type": "integer"},
        "price": {"type": "number"},
        "gift": {"type": "boolean"},
        "size": {"type": "string", "enum": ["S", "M", "L"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["city"],
        },
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["sku"],
            },
        },
        "note": {"type": ["string", "null"]},
        "coupon": {"type": "string", "nullable": True},
        "discount": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["half"]}]},
        "channel": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    },
    "required": ["item", "quantity"],
}


def test_valid_arguments_have_no_error() -> None:
    args = {
        "item": "tea",
        "quantity": 2,
        "price": 3,  # an integer is a number
        "gift": False,
        "size": "M",
        "tags": ["green", "hot"],
        "address": {"city": "Oslo", "zip": 150},
        "lines": [{"sku": "A1", "n": 1}, {"sku": "B2"}],
        "note": None,
        "coupon": None,
        "discount": "half",
        "channel": 2.5,
    }
    assert check_arguments(args, ORDER_SCHEMA) == []


@pytest.mark.parametrize(
    ("args", "errors"),
    [
        ({"item": "tea"}, ["missing_required:quantity"]),
        ({"item": "tea", "quantity": True}, ["type_error:quantity"]),  # bool is not an integer
        ({"item": "tea", "quantity": 2.0}, ["type_error:quantity"]),
        ({"item": "tea", "quantity": "2"}, ["type_error:quantity"]),
        ({"item": "tea", "quantity": 1, "price": False}, ["type_error:price"]),
        ({"item": "tea", "quantity": 1, "gift": 1}, ["type_error:gift"]),
        ({"item": "tea", "quantity": 1, "size": "XL"}, ["type_error:size"]),
        ({"item": "tea", "quantity": 1, "tags": ["a", 2]}, ["type_error:tags[1]"]),
        ({"item": "tea", "quantity": 1, "tags": "a"}, ["type_error:tags"]),
        ({"item": "tea", "quantity": 1, "address": {"zip": 1}}, ["missing_required:address.city"]),
        (
            {"item": "tea", "quantity": 1, "address": {"city": "Oslo", "zip": "0150"}},
            ["type_error:address.zip"],
        ),
        (
            {"item": "tea", "quantity": 1, "lines": [{"sku": "A"}, {"n": 2}]},
            ["missing_required:lines[1].sku"],
        ),
        ({"item": "tea", "quantity": 1, "note": 3}, ["type_error:note"]),
        ({"item": "tea", "quantity": 1, "discount": "full"}, ["type_error:discount"]),
        ({"item": "tea", "quantity": 1, "channel": 3}, ["type_error:channel"]),  # both branches
        ({"item": "tea", "quantity": 1, "colour": "red"}, ["unexpected_param:colour"]),
        (
            {"quantity": "x", "colour": "red"},
            ["missing_required:item", "type_error:quantity", "unexpected_param:colour"],
        ),
    ],
)
def test_errors_are_named_by_kind_and_path(args: dict[str, Any], errors: list[str]) -> None:
    assert check_arguments(args, ORDER_SCHEMA) == errors


def test_unexpected_parameters_can_be_allowed_and_additional_properties_decides() -> None:
    args = {"item": "tea", "quantity": 1, "colour": "red"}
    assert check_arguments(args, ORDER_SCHEMA, allow_unexpected=True) == []
    closed = {**ORDER_SCHEMA, "additionalProperties": False}
    assert check_arguments(args, closed, allow_unexpected=True) == ["unexpected_param:colour"]
    typed_extra = {**ORDER_SCHEMA, "additionalProperties": {"type": "integer"}}
    assert check_arguments(args, typed_extra) == ["type_error:colour"]


def test_bfcl_type_names() -> None:
    # As in BFCL_v4_simple_python / live_multiple function descriptions.
    schema = {
        "type": "dict",
        "properties": {
            "base": {"type": "integer"},
            "ratio": {"type": "float"},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "options": {"type": "dict", "properties": {"fast": {"type": "boolean"}}},
            "anything": {"type": "any"},
        },
        "required": ["base"],
    }
    good = {"base": 10, "ratio": 2, "point": [1.5, 2], "options": {"fast": True}, "anything": [1]}
    assert check_arguments(good, schema) == []
    bad = {"base": 10.0, "ratio": "2", "point": [1, "x"], "options": {"fast": "yes"}}
    assert check_arguments(bad, schema) == [
        "type_error:base",
        "type_error:ratio",
        "type_error:point[1]",
        "type_error:options.fast",
    ]


def test_type_matches_and_unknown_type_names() -> None:
    assert type_matches(3, "integer") is True
    assert type_matches(True, "integer") is False
    assert type_matches(3, "number") is True
    assert type_matches(3, "float") is True
    assert type_matches((1, 2), "tuple") is False  # decoded JSON has no tuples
    assert type_matches("x", "Widget") is None
    # an unknown type constrains nothing
    assert check_arguments({"w": 1}, {"properties": {"w": {"type": "Widget"}}}) == []


def test_json_equal() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal([1, 2], [2, 1])
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal("1", 1)


def test_openai_tools_converts_bfcl_type_names() -> None:
    tool = ToolSpec(
        name="calc",
        description="d",
        parameters={
            "type": "dict",
            "properties": {
                "x": {"type": "float"},
                "pts": {"type": "tuple", "items": {"type": "float"}},
                "cfg": {"type": "dict", "properties": {"v": {"type": "any"}}},
            },
            "required": ["x"],
        },
    )
    [converted] = openai_tools([tool])
    assert converted == {
        "type": "function",
        "function": {
            "name": "calc",
            "description": "d",
            "parameters": {
                "type": "object",
                "properties": {
                    "x": {"type": "number"},
                    "pts": {"type": "array", "items": {"type": "number"}},
                    "cfg": {"type": "object", "properties": {"v": {"type": "string"}}},
                },
                "required": ["x"],
            },
        },
    }
    assert tool.parameters["type"] == "dict"  # the task keeps BFCL's names
