"""Model output -> tool calls, without ever executing anything.

One entry point, :func:`parse_tool_calls`, reads what a model produced (an API response, an
OpenAI message, a decoded call list or raw text) and returns a :class:`ParseResult`: the calls
it found, the text answer, which format it recognised and, when something looked like a call
but could not be read, the parse error. Supported:

- OpenAI ``tool_calls`` (``arguments`` as a JSON string or an object) and whole
  chat-completion responses; the legacy ``function_call``;
- Hermes / Qwen ``<tool_call>{...}</tool_call>`` blocks (a trailing unclosed block included);
- Mistral ``[TOOL_CALLS] [{...}]`` and ``[TOOL_CALLS]name[ARGS]{...}``;
- Llama-style ``{"name": ..., "parameters": ...}`` objects with nested arguments, and any JSON
  call object in free text (balanced scanning with ``json.JSONDecoder.raw_decode``);
- Python-call syntax ``f(a=1)``, ``[f(a=1), g(b="x")]``, ``mod.f(a=[1, 2])`` read with ``ast``:
  argument values must be literals (``ast.literal_eval``; a bare identifier reads as its name,
  as in BFCL); positional arguments are named by the tool schema's property order;
- BFCL's decoded list ``[{"func": {"a": 1}}]``.

Each format is also a registered parser (``openai``, ``hermes``, ``mistral``, ``llama``,
``json``, ``python``, ``bfcl``) that reads only that format from text; ``auto``, the default,
detects it. Other packages add parsers through the ``agentgauge.parsers`` entry-point group::

    @parser("my_model", description="<call>name(args)</call> blocks")
    def parse_my_model(output, tools, positional) -> ParseResult: ...
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pydantic import ValidationError

from agentgauge._safe import DECODE_ERRORS, describe
from agentgauge.model import ToolCall, ToolSpec
from agentgauge.registry import Registry
from agentgauge.toolcall.schema import find_tool, parameter_names

__all__ = [
    "PARSERS",
    "SCAN_LIMIT",
    "ParseResult",
    "Parser",
    "Positional",
    "parse_tool_calls",
    "parser",
]

Positional = Literal["schema", "drop"]

_DECODER = json.JSONDecoder()
# a bracket that can open a JSON value: "{" before a key or "}", "[" before a value or "]"
# (prose such as "[see above]" is not tried)
_OPENING = re.compile(r"\{(?=\s*[\"}])|\[(?=\s*[\]\"{\[\-0-9tfn])")
SCAN_LIMIT = 8
_FIRST_WINDOW = 256
"""How many times its length an output is read, at most, when searching it for JSON calls."""
_HERMES_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_MISTRAL_MARK = "[TOOL_CALLS]"
_LLAMA_PYTHON_TAG = "<|python_tag|>"
_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)
# A name directly followed by "(" at the start: prose such as "Paris (France) is nice." is not
# taken for a call, a truncated call still is (and fails as one).
_PYTHON_CALL = re.compile(r"^\[?\s*[A-Za-z_][\w.]*\(")


class _ParseFailure(ValueError):
    """Something that looks like a tool call but cannot be read."""


@dataclass(frozen=True)
class ParseResult:
    """What a model output contained.

    Args:
        calls: the tool calls read, in order (those before a failure are kept).
        error: why (part of) the output could not be read as calls; None when it could.
        format: the format recognised (``openai``, ``hermes``, ``mistral``, ``json``,
            ``python``, ``bfcl``), None when the output held no call.
        text: the text answer (message content, or text outside the call markup), if any.
    """

    calls: list[ToolCall] = field(default_factory=list)
    error: str | None = None
    format: str | None = None
    text: str | None = None


# --------------------------------------------------------------------------- call objects


def _arguments(raw: Any, name: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _ParseFailure(f"arguments of {name!r} are not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise _ParseFailure(f"arguments of {name!r} are {type(raw).__name__}, not an object")
    return raw


def _make_call(name: Any, arguments: Any, call_id: Any = None) -> ToolCall:
    if not isinstance(name, str) or not name:
        raise _ParseFailure(f"a tool call needs a non-empty string name, got {name!r}")
    try:
        return ToolCall(
            id=call_id if isinstance(call_id, str) else None,
            name=name,
            arguments=_arguments(arguments, name),
        )
    except ValidationError as exc:
        raise _ParseFailure(f"arguments of {name!r} are not JSON values: {exc}") from None


def _is_bfcl_entry(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and len(obj) == 1
        and isinstance(next(iter(obj)), str)
        and isinstance(next(iter(obj.values())), dict | str)
    )


def _is_call_object(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    function = obj.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return True
    return isinstance(obj.get("name"), str) and ("arguments" in obj or "parameters" in obj)


def _call_from_object(obj: Any) -> ToolCall:
    """One call from an OpenAI tool call, a ``{"name", "arguments"|"parameters"}`` object
    or a BFCL ``{"name": {args}}`` entry."""
    if not isinstance(obj, dict):
        raise _ParseFailure(f"a tool call must be an object, got {type(obj).__name__}")
    function = obj.get("function")
    if isinstance(function, dict):
        return _make_call(function.get("name"), function.get("arguments"), obj.get("id"))
    if "name" in obj:
        args = obj.get("arguments", obj.get("parameters"))
        return _make_call(obj["name"], args, obj.get("id"))
    if _is_bfcl_entry(obj):
        name, args = next(iter(obj.items()))
        return _make_call(name, args)
    raise _ParseFailure(f"not a tool call: an object with keys {sorted(obj)}")


def _calls_from_objects(objs: Sequence[Any]) -> list[ToolCall]:
    return [_call_from_object(o) for o in objs]


def _structured_format(value: Any) -> str:
    items = value if isinstance(value, list) else [value]
    if items and all(_is_bfcl_entry(i) and "name" not in i for i in items):
        return "bfcl"
    if any(isinstance(i, dict) and isinstance(i.get("function"), dict) for i in items):
        return "openai"
    return "json"


# --------------------------------------------------------------------------- Python calls


def _dotted_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr}"
    raise _ParseFailure(f"a called name must be dotted identifiers, got {ast.unparse(node)!r}")


def _as_json(value: Any, where: str) -> Any:
    if isinstance(value, tuple | list):
        return [_as_json(v, where) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _ParseFailure(f"{where}: dictionary keys must be strings")
        return {k: _as_json(v, where) for k, v in value.items()}
    if value is None or isinstance(value, str | bool | int | float):
        return value
    raise _ParseFailure(f"{where}: {type(value).__name__} is not a JSON value")


def _literal(node: ast.expr, where: str) -> Any:
    if isinstance(node, ast.Name):  # a bare identifier stands for itself (BFCL's reading)
        return node.id
    try:
        return _as_json(ast.literal_eval(node), where)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _ParseFailure(f"{where}: {ast.unparse(node)!r} is not a literal") from None


def _python_call(node: ast.expr, tools: Sequence[ToolSpec], positional: Positional) -> ToolCall:
    if not isinstance(node, ast.Call):
        raise _ParseFailure(f"expected a call, got {ast.unparse(node)!r}")
    name = _dotted_name(node.func)
    arguments: dict[str, Any] = {}
    if node.args and positional == "schema":
        tool = find_tool(tools, name)
        if tool is None:
            raise _ParseFailure(f"{name}: positional arguments, and no tool schema to name them")
        names = parameter_names(tool)
        if len(node.args) > len(names):
            raise _ParseFailure(
                f"{name}: {len(node.args)} positional arguments, the schema names {len(names)}"
            )
        for i, (arg, param) in enumerate(zip(node.args, names, strict=False)):
            if isinstance(arg, ast.Starred):
                raise _ParseFailure(f"{name}: '*' arguments are not literals")
            arguments[param] = _literal(arg, f"{name}(argument {i + 1})")
    for kw in node.keywords:
        if kw.arg is None:
            raise _ParseFailure(f"{name}: '**' arguments are not literals")
        if kw.arg in arguments:
            raise _ParseFailure(f"{name}: {kw.arg!r} given positionally and by keyword")
        arguments[kw.arg] = _literal(kw.value, f"{name}({kw.arg}=...)")
    return _make_call(name, arguments)


def _parse_python(source: str, tools: Sequence[ToolSpec], positional: Positional) -> list[ToolCall]:
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise _ParseFailure(
            f"invalid Python call syntax: {exc.msg} (column {exc.offset})"
        ) from None
    body = tree.body
    nodes = body.elts if isinstance(body, ast.List | ast.Tuple) else [body]
    return [_python_call(n, tools, positional) for n in nodes]


# --------------------------------------------------------------------------- text formats


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text.strip())
    return match.group(1).strip() if match else text.strip()


def _json_values(text: str) -> Iterator[tuple[int, int, Any]]:
    """Every JSON object or array in ``text`` (start, end, value), outermost first; a value
    that is not a call is searched inside.

    Each bracket is tried, and a try reads up to where the value ends or fails: text with many
    unclosed brackets would be read once per bracket (quadratic time). The reading is counted,
    and stops with a failure past :data:`SCAN_LIMIT` times the text's length.
    """
    budget = SCAN_LIMIT * len(text) + 4096
    after_call = 0
    for match in _OPENING.finditer(text):
        i = match.start()
        if i < after_call:
            continue  # inside a call already read
        value, end, read = _decode_at(text, i)
        budget -= read
        if end > 0 and _holds_calls(value):
            yield i, end, value
            after_call = end
        if budget < 0:
            raise _ParseFailure(
                "the output has too many nested or unclosed brackets to search for calls "
                f"(more than {SCAN_LIMIT} times its length read)"
            )


def _decode_at(text: str, i: int) -> tuple[Any, int, int]:
    """The JSON value that starts at ``text[i]``: ``(value, end, characters read)``, with an
    ``end`` of -1 when there is none.

    The value is read from a window of the text that grows (×4) only while the value runs past
    it: a failure (whose error message counts the lines before it) costs what it read, not the
    whole text before it.
    """
    window, read = _FIRST_WINDOW, 0
    while True:
        piece = text[i : i + window]
        try:
            value, end = _DECODER.raw_decode(piece)
        except json.JSONDecodeError as exc:
            ran_out = exc.pos >= len(piece) - 8 or exc.msg.startswith("Unterminated string")
            if not ran_out or i + window >= len(text):
                return None, -1, read + exc.pos + 1
            read += len(piece)
            window *= 4
        except DECODE_ERRORS:
            # nested too deeply (and so is every bracket inside), an integer too long: counted
            # as the rest of the text read, so that a deep nest ends the search soon
            return None, -1, read + len(text) - i
        else:
            return value, i + end, read + end


def _holds_calls(value: Any) -> bool:
    if isinstance(value, dict):
        return _is_call_object(value) or isinstance(value.get("tool_calls"), list)
    return isinstance(value, list) and bool(value) and all(_is_call_object(v) for v in value)


def _calls_in_value(value: Any) -> list[ToolCall]:
    if isinstance(value, dict) and "tool_calls" in value and not _is_call_object(value):
        return _calls_from_objects(value["tool_calls"])
    return _calls_from_objects(value if isinstance(value, list) else [value])


def _parse_hermes(text: str) -> ParseResult:
    calls: list[ToolCall] = []
    errors: list[str] = []
    for n, block in enumerate(_HERMES_BLOCK.findall(text), start=1):
        try:
            value = json.loads(_strip_fence(block))
            calls += _calls_in_value(value)
        except json.JSONDecodeError as exc:
            errors.append(f"<tool_call> block {n}: invalid JSON: {exc}")
        except _ParseFailure as exc:
            errors.append(f"<tool_call> block {n}: {exc}")
    rest = _HERMES_BLOCK.sub("", text).strip()
    return ParseResult(calls, "; ".join(errors) or None, "hermes", rest or None)


def _parse_mistral(text: str) -> ParseResult:
    head, _, tail = text.partition(_MISTRAL_MARK)
    calls: list[ToolCall] = []
    try:
        for segment in tail.split(_MISTRAL_MARK):
            segment = segment.strip()
            if segment.startswith(("[", "{")):
                value, _ = _DECODER.raw_decode(segment)
                calls += _calls_in_value(value)
            else:  # v11 tokenizer: name[ARGS]{...}
                name, sep, args = segment.partition("[ARGS]")
                if not sep:
                    raise _ParseFailure(f"no call after {_MISTRAL_MARK}: {segment[:40]!r}")
                value, _ = _DECODER.raw_decode(args.strip())
                calls.append(_make_call(name.split("[CALL_ID]")[0].strip(), value))
    except json.JSONDecodeError as exc:
        return ParseResult(
            calls, f"{_MISTRAL_MARK}: invalid JSON: {exc}", "mistral", head.strip() or None
        )
    except _ParseFailure as exc:
        return ParseResult(calls, f"{_MISTRAL_MARK}: {exc}", "mistral", head.strip() or None)
    return ParseResult(calls, None, "mistral", head.strip() or None)


def _looks_like_call(text: str) -> bool:
    return text.startswith(("{", "[")) or bool(_PYTHON_CALL.match(text))


@dataclass(frozen=True)
class _TextSteps:
    """Which readings a parser tries on text, in this order: ``[TOOL_CALLS]`` markup,
    ``<tool_call>`` blocks, the whole text as JSON, a Python call, JSON objects in free text.

    ``python_final``: a text that looks like a Python call but cannot be read is the answer
    (a parser of that format); when False, the JSON readings are tried after it (``auto``).
    """

    mistral: bool = False
    hermes: bool = False
    whole_json: bool = False
    python: bool = False
    json_scan: bool = False
    python_final: bool = True


def _parse_text(
    text: str, tools: Sequence[ToolSpec], steps: _TextSteps, positional: Positional
) -> ParseResult:
    if steps.mistral and _MISTRAL_MARK in text:
        return _parse_mistral(text)
    if steps.hermes and "<tool_call>" in text:
        return _parse_hermes(text)
    if not (steps.whole_json or steps.python or steps.json_scan):
        return ParseResult(text=text.strip() or None)
    body = _strip_fence(text.split(_LLAMA_PYTHON_TAG, 1)[-1])
    if steps.whole_json:
        try:
            whole = json.loads(body)
        except json.JSONDecodeError:
            whole = None
        else:
            if _holds_calls(whole) or (
                isinstance(whole, list) and all(_is_bfcl_entry(v) for v in whole)
            ):
                return _parse_structured(whole, tools, positional)
    python_error = None
    if steps.python and _PYTHON_CALL.match(body):
        try:
            return ParseResult(_parse_python(body, tools, positional), None, "python")
        except _ParseFailure as exc:
            if steps.python_final:
                return ParseResult([], str(exc), "python")
            python_error = str(exc)
    if steps.json_scan:
        calls: list[ToolCall] = []
        spans: list[tuple[int, int]] = []
        try:
            for start, end, value in _json_values(body):
                calls += _calls_in_value(value)
                spans.append((start, end))
        except _ParseFailure as exc:
            return ParseResult(calls, str(exc), "json")
        if calls:
            rest = "".join(body[a:b] for a, b in _gaps(spans, len(body))).strip()
            return ParseResult(calls, None, "json", rest or None)
    if python_error is not None:
        return ParseResult([], python_error, "python")
    if _looks_like_call(body):
        return ParseResult([], f"unreadable tool call: {body[:80]!r}", None, text.strip() or None)
    return ParseResult(text=text.strip() or None)


def _gaps(spans: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    out, cursor = [], 0
    for start, end in spans:
        out.append((cursor, start))
        cursor = end
    out.append((cursor, length))
    return out


# --------------------------------------------------------------------------- structured input

_AUTO = _TextSteps(
    mistral=True, hermes=True, whole_json=True, python=True, json_scan=True, python_final=False
)


def _parse_message(
    message: dict[str, Any], tools: Sequence[ToolSpec], positional: Positional
) -> ParseResult:
    content = message.get("content")
    text = content if isinstance(content, str) else None
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list) and tool_calls:
        return ParseResult(_calls_from_objects(tool_calls), None, "openai", text or None)
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        return ParseResult([_call_from_object({"function": legacy})], None, "openai", text or None)
    if text:  # a server without a tool parser leaves the call markup in the content
        return _parse_text(text, tools, _AUTO, positional)
    return ParseResult()


def _parse_structured(value: Any, tools: Sequence[ToolSpec], positional: Positional) -> ParseResult:
    if isinstance(value, dict):
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if not isinstance(message, dict):
                raise _ParseFailure("choices[0] has no message object")
            return _parse_message(message, tools, positional)
        if not _is_call_object(value) and (
            "tool_calls" in value or "role" in value or "function_call" in value
        ):
            return _parse_message(value, tools, positional)
        return ParseResult([_call_from_object(value)], None, _structured_format(value))
    if isinstance(value, list):
        return ParseResult(
            _calls_from_objects(value), None, _structured_format(value) if value else None
        )
    raise _ParseFailure(f"cannot read tool calls from a {type(value).__name__}")


# --------------------------------------------------------------------------- the registry

Parser: TypeAlias = Callable[[Any, Sequence[ToolSpec], Positional], ParseResult]
"""``parse(output, tools, positional) -> ParseResult``: ``output`` is never None; a failure is
recorded in the result's ``error``."""


def parser(name: str, *, description: str = "") -> Callable[[Parser], Parser]:
    """Register a parser of model outputs under ``name`` (see :data:`Parser`).

    Args:
        name: the parser's name (``toolcall score --parser NAME``).
        description: one line for ``agentgauge plugins`` (default: the parser's docstring's
            first line).
    """
    return PARSERS.decorator(name, description=description)


PARSERS: Registry[Parser] = Registry(
    "parser",
    "agentgauge.parsers",
    builtins=("agentgauge.toolcall.parsers",),
    adopt=lambda name, obj: parser(name)(obj),
)
"""Every parser of model outputs by name."""


def _text_parser(steps: _TextSteps) -> Parser:
    """A parser that reads text with ``steps``; structured outputs (messages, responses, call
    lists) are read whatever the text format."""

    def parse(output: Any, tools: Sequence[ToolSpec], positional: Positional) -> ParseResult:
        if isinstance(output, str):
            return _parse_text(output, tools, steps, positional)
        return _parse_structured(output, tools, positional)

    return parse


def _register_text_parsers() -> None:
    json_text = _TextSteps(whole_json=True, json_scan=True)
    for name, steps, description in (
        ("auto", _AUTO, "detect the format (any of those below)"),
        ("openai", json_text, "OpenAI tool_calls, and JSON call objects in text"),
        ("hermes", _TextSteps(hermes=True), "Hermes / Qwen <tool_call>{...}</tool_call> blocks"),
        ("mistral", _TextSteps(mistral=True), "Mistral [TOOL_CALLS] markup"),
        ("llama", json_text, 'Llama {"name": ..., "parameters": ...} objects'),
        ("json", json_text, "JSON call objects, the whole text or within it"),
        ("python", _TextSteps(python=True), "Python call syntax f(a=1), [f(a=1), g(b=2)]"),
        ("bfcl", _TextSteps(whole_json=True, python=True), "BFCL decoded lists or Python calls"),
    ):
        PARSERS.add(name, _text_parser(steps), source=_text_parser, description=description)


_register_text_parsers()


def parse_tool_calls(
    output: Any,
    tools: Sequence[ToolSpec] | None = None,
    format: str = "auto",
    positional: Positional = "schema",
) -> ParseResult:
    """Read the tool calls in a model's output; never executes anything.

    Args:
        output: raw model text, an OpenAI assistant message or chat-completion response (dict),
            a decoded call list (BFCL ``[{"f": {...}}]``, OpenAI ``tool_calls``, or
            ``[{"name", "arguments"}]``), or None (no output).
        tools: the tools offered, used to name positional arguments of Python-style calls.
        format: the parser: ``auto`` (detect), a format read from text only (``openai``,
            ``hermes``, ``mistral``, ``llama``, ``json``, ``python``, ``bfcl``), or a
            registered plugin's.
        positional: ``schema`` names positional arguments by the tool's property order (an
            error when the tool is unknown); ``drop`` discards them, as BFCL's decoder does.

    Returns:
        A :class:`ParseResult`; a failure is recorded in ``error``, never raised.

    Raises:
        UnknownNameError: for an unknown ``format``.
    """
    parse = PARSERS.get(format)
    try:
        if output is None:
            return ParseResult()
        return parse(output, list(tools or []), positional)
    except _ParseFailure as exc:
        return ParseResult([], str(exc), None)
    except (RecursionError, MemoryError):
        # adversarial or degenerate output: deeper or larger than the parsers can walk
        return ParseResult([], "the output is nested too deeply or too large to read", None)
    except DECODE_ERRORS as exc:  # an integer too long, a number too large
        return ParseResult([], f"the output cannot be read: {describe(exc)}", None)
