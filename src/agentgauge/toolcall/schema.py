"""Argument checks against a tool's JSON Schema, with BFCL's type names understood.

:func:`check_arguments` validates a call's arguments against a tool's ``parameters`` schema
and returns structured errors (``missing_required:<p>``, ``type_error:<p>``,
``unexpected_param:<p>``; nested parameters are named by path, ``loc.city`` or ``ids[2]``).
Types follow JSON Schema: a bool is not an integer, an integer is a number; ``enum``,
``nullable``, ``anyOf``/``oneOf``, ``items`` and ``properties``/``required`` are checked
recursively. BFCL's names (``dict``, ``float``, ``tuple``, ``any``...) are read as their JSON
Schema equivalents; a schema violation that is not about presence (wrong type, value outside
``enum``) is reported as ``type_error``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentgauge.model import JSON, ToolSpec

__all__ = [
    "check_arguments",
    "find_tool",
    "json_equal",
    "openai_tools",
    "parameter_names",
    "type_matches",
]

# BFCL (Python, Java and JavaScript test files) and DeepFabric type names -> JSON Schema.
_TYPE_ALIASES: dict[str, str] = {
    "string": "string",
    "str": "string",
    "String": "string",
    "char": "string",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "Boolean": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "Array": "array",
    "ArrayList": "array",
    "object": "object",
    "dict": "object",
    "HashMap": "object",
    "null": "null",
    "any": "any",
}

_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
    "any": lambda v: True,
}

_ERROR_ORDER = ("missing_required", "type_error", "unexpected_param")

# For sending BFCL tools to an OpenAI-compatible API (BFCL's own GORILLA_TO_OPENAPI mapping).
_BFCL_TO_OPENAPI: dict[str, str] = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "any": "string",
    "list": "array",
    "str": "string",
    "int": "integer",
    "bool": "boolean",
}


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare by value (``1 == 1.0``), a bool equals only a bool,
    lists compare in order, objects by their keys and values.

    Args:
        a: a decoded JSON value.
        b: another decoded JSON value.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def type_matches(value: Any, type_name: str) -> bool | None:
    """Whether ``value`` has the JSON Schema or BFCL type ``type_name``; None for a name that
    is neither (such a type constrains nothing).

    Args:
        value: a decoded JSON value.
        type_name: ``string``, ``integer``, ``dict``, ``float``, ``tuple``, ``any``...
    """
    canonical = _TYPE_ALIASES.get(type_name)
    if canonical is None:
        return None
    return _TYPE_TESTS[canonical](value)


def _type_tests(declared: Any) -> tuple[Callable[[Any], bool], ...]:
    """The tests of the known types among a schema's ``type`` (a name or a list of names)."""
    names = declared if isinstance(declared, list) else [declared] if declared else []
    canonical = (_TYPE_ALIASES.get(str(n), str(n)) for n in names)
    return tuple(_TYPE_TESTS[t] for t in canonical if t in _TYPE_TESTS)


# the tests of each known type name, so that a value is checked without building lists
_TESTS_OF_NAME = {name: _type_tests(name) for name in _TYPE_ALIASES}

# the exact Python types of the decoded JSON values that pass each type name's tests: a value
# of one of them needs no test (a value of a subclass, a bool for "integer", does)
_JSON_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "array": frozenset({list}),
    "object": frozenset({dict}),
    "null": frozenset({type(None)}),
    "any": frozenset({str, int, float, bool, list, dict, type(None)}),
}
_SCALAR_TYPES = frozenset({str, int, float, bool})
_PASSING_TYPES = {name: _JSON_TYPES[canonical] for name, canonical in _TYPE_ALIASES.items()}


def _value_errors(value: Any, schema: Any, path: str) -> list[str]:
    """Schema violations of one value (``path`` names it in the errors)."""
    if type(schema) is not dict and not isinstance(schema, Mapping):  # a dict, but quickly
        return []
    if (
        type(value) in _SCALAR_TYPES
        and type(declared := schema.get("type")) is str
        and type(value) in _PASSING_TYPES.get(declared, ())
        and "enum" not in schema
        and "anyOf" not in schema
        and "oneOf" not in schema
    ):
        return []  # most arguments: a scalar of its declared type under no other rule
    if value is None and schema.get("nullable") is True:
        return []
    if "anyOf" in schema or "oneOf" in schema:
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                passing = sum(1 for b in branches if not _value_errors(value, b, path))
                if passing < 1 or (key == "oneOf" and passing != 1):
                    return [f"type_error:{path}"]
    enum = schema.get("enum")
    if isinstance(enum, list) and not (
        value in enum if isinstance(value, str) else any(json_equal(value, o) for o in enum)
    ):
        return [f"type_error:{path}"]
    declared = schema.get("type")
    if type(declared) is not str or type(value) not in _PASSING_TYPES.get(declared, ()):
        tests = _TESTS_OF_NAME.get(declared) if isinstance(declared, str) else None
        if tests is None:
            tests = _type_tests(declared)
        if tests:
            for test in tests:
                if test(value):
                    break
            else:
                return [f"type_error:{path}"]
    if isinstance(value, list):
        return _array_errors(value, schema, path)
    if isinstance(value, dict):
        return _object_errors(value, schema, path, allow_unexpected=True)
    return []


def _array_errors(value: list[Any], schema: Mapping[str, Any], path: str) -> list[str]:
    items = schema.get("items")
    errors: list[str] = []
    if isinstance(items, list):  # draft-4 tuple form: one schema per position
        for i, (item, item_schema) in enumerate(zip(value, items, strict=False)):
            errors += _value_errors(item, item_schema, f"{path}[{i}]")
    elif isinstance(items, Mapping):
        for i, item in enumerate(value):
            errors += _value_errors(item, items, f"{path}[{i}]")
    return errors


def _object_errors(
    value: Mapping[str, Any], schema: Mapping[str, Any], path: str, *, allow_unexpected: bool
) -> list[str]:
    prefix = f"{path}." if path else ""
    properties = schema.get("properties")
    if type(properties) is not dict and not isinstance(properties, Mapping):
        properties = {}
    required = schema.get("required")
    errors: list[str] = []
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in value:
                errors.append(f"missing_required:{prefix}{name}")
    additional = schema.get("additionalProperties")
    for name, item in value.items():
        if name in properties:
            errors += _value_errors(item, properties[name], f"{prefix}{name}" if path else name)
        elif isinstance(additional, Mapping):
            errors += _value_errors(item, additional, f"{prefix}{name}")
        elif additional is False or (not allow_unexpected and additional is not True):
            errors.append(f"unexpected_param:{prefix}{name}")
    return errors


def check_arguments(
    arguments: Mapping[str, JSON], parameters: Mapping[str, Any], *, allow_unexpected: bool = False
) -> list[str]:
    """Check a call's arguments against a tool's ``parameters`` schema.

    Args:
        arguments: the call's decoded arguments.
        parameters: the tool's parameters (a JSON Schema object; BFCL type names accepted).
        allow_unexpected: accept top-level arguments the schema does not list (JSON Schema's
            default). Off by default: a made-up parameter makes a call that a strict API (and
            BFCL) rejects. ``additionalProperties`` in the schema overrides it either way.

    Returns:
        The errors in order: ``missing_required:<p>``, ``type_error:<p>``,
        ``unexpected_param:<p>``; empty when the arguments are valid.
    """
    errors = _object_errors(arguments, parameters, "", allow_unexpected=allow_unexpected)
    if len(errors) < 2:
        return errors
    return sorted(errors, key=lambda e: _ERROR_ORDER.index(e.split(":", 1)[0]))


def parameter_names(tool: ToolSpec) -> list[str]:
    """The tool's parameter names in schema order (used to name positional arguments).

    Args:
        tool: the tool.
    """
    properties = tool.parameters.get("properties")
    return list(properties) if isinstance(properties, dict) else []


def find_tool(tools: Sequence[ToolSpec], name: str) -> ToolSpec | None:
    """The first tool called ``name``, or None.

    Args:
        tools: the tools offered to the model.
        name: a tool name.
    """
    for tool in tools:
        if tool.name == name:
            return tool
    return None


def _to_openapi(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_to_openapi(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = _BFCL_TO_OPENAPI.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _to_openapi(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "oneOf", "additionalProperties"):
            out[key] = _to_openapi(value)
        else:
            out[key] = value
    return out


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The tools in OpenAI's ``{"type": "function", "function": {...}}`` form, BFCL type names
    converted to JSON Schema (``dict``→``object``, ``float``→``number``, ``tuple``→``array``,
    ``any``→``string``), ready to send to an OpenAI-compatible API.

    Args:
        tools: the tools of a task.
    """
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": _to_openapi(t.parameters),
            },
        }
        for t in tools
    ]
