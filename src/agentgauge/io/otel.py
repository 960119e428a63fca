"""Import OpenTelemetry GenAI traces (OTLP/JSON span files) as agentgauge Traces.

Reads what instrumented agents already emit: the OTel Collector's file exporter output (one
``ExportTraceServiceRequest`` JSON document per line), a single or several concatenated JSON
documents, or a JSON list of flattened spans (``attributes`` as a dict, as SDK console exporters
print them). Spans are grouped by trace id (or by ``gen_ai.conversation.id``) and each group
becomes one Trace:

- ``execute_tool`` spans become ``tool_call`` steps, followed by a ``tool_result`` step when
  the span records a result or an error;
- ``chat`` / ``text_completion`` / ``generate_content`` spans become ``llm`` steps with usage;
- ``plan`` spans become ``reasoning`` steps;
- ``invoke_agent`` / ``invoke_workflow`` spans name the agent of the steps below them, and a
  ``handoff`` step marks each passing of control to another agent (also for
  ``execute_tool transfer_to_X``).

Several vintages of the GenAI conventions are read at once (parts-based and OpenAI-style
messages, deprecated span events, ``gen_ai.prompt`` / ``gen_ai.completion``, legacy token
names), plus the OpenInference dialect. What cannot be mapped is counted in the Trace's
``metadata``. Bad input becomes a :class:`ReadError` naming the file, line and field, and reading
goes on.

Streaming: with ``group_by="trace"`` a trace is emitted as soon as the document holding its root
span (a span without parent) has been read, so memory holds only the traces still open; traces
whose root never arrives are emitted at the end of the file. ``group_by="conversation"`` holds
the whole file, since a conversation's turns can be anywhere in it.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Literal, cast, get_args

from pydantic import ValidationError

from agentgauge._safe import DECODE_ERRORS, describe
from agentgauge.io.importers import importer
from agentgauge.io.jaeger import is_jaeger, jaeger_to_otlp
from agentgauge.io.jsonl import (
    ReadError,
    decode_error,
    invalid_json,
    validation_read_error,
)
from agentgauge.io.langfuse import is_langfuse, langfuse_spans
from agentgauge.io.langsmith import is_langsmith, langsmith_spans
from agentgauge.io.openai_agents import is_openai_agents, openai_agents_spans
from agentgauge.io.otlp_proto import decode_request, is_protobuf
from agentgauge.model import MessageType, Step, StepKind, Task, ToolCall, ToolSpec, Trace, Usage

__all__ = [
    "DEFAULT_TASK_ID_ATTRIBUTE",
    "SPAN_FORMATS",
    "GroupBy",
    "SpanFormat",
    "SpanStream",
    "read_otel",
]

GroupBy = Literal["trace", "conversation"]
"""``trace``: one run per trace id (bare model calls joined into runs); ``conversation``: one
run per conversation id."""

DEFAULT_TASK_ID_ATTRIBUTE = "gen_ai.conversation.id"
"""The span attribute a run's task id is read from by default."""

SpanFormat = Literal[
    "auto", "otlp-json", "otlp-proto", "jaeger", "tempo", "openai-agents", "langsmith", "langfuse"
]
SPAN_FORMATS: tuple[str, ...] = get_args(SpanFormat)

_CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "thread.id")

_AGENT_OPS = frozenset({"invoke_agent", "invoke_workflow"})
_LLM_OPS = frozenset({"chat", "text_completion", "generate_content"})
_KNOWN_OPS = _AGENT_OPS | _LLM_OPS | {"execute_tool", "plan", "create_agent", "embeddings"}
_OPENINFERENCE_OPS = {
    "LLM": "chat",
    "TOOL": "execute_tool",
    "AGENT": "invoke_agent",
    "RETRIEVER": "retrieval",
    "EMBEDDING": "embeddings",
}
_HANDOFF_PREFIX = "handoff to "
_REQUEST_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.top_k": "top_k",
    "gen_ai.request.max_tokens": "max_tokens",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.presence_penalty": "presence_penalty",
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HEX = re.compile(r"[0-9a-fA-F]+")
MAX_ATTRIBUTE_CHARS = 10_000_000
"""Attribute values longer than this are left out of their span (and reported)."""
_SECRET = re.compile(r"api[_-]?key|secret|password|authori[sz]ation|access[_-]?token", re.I)


class _BadField(ValueError):
    """A field of a span that cannot be read; ``field`` is its dotted path."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class _Event:
    name: str
    attributes: dict[str, Any]


@dataclass
class _Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    events: list[_Event]
    status_error: bool
    status_message: str | None
    resource: dict[str, Any]
    scope: str | None
    line: int
    source_format: str = "otlp-json"
    memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def duration_s(self) -> float | None:
        if self.start_ns is None or self.end_ns is None:
            return None
        return max(0, self.end_ns - self.start_ns) / 1e9

    @property
    def error(self) -> str | None:
        """Why the span failed: the status message, else the message of its ``exception``
        event (pydantic-ai records a failed tool that way), else ``error.type``; None when it
        did not fail."""
        error_type = self.attributes.get("error.type")
        if self.status_error:
            if self.status_message:
                return self.status_message
            for ev in self.events:
                if ev.name == "exception":
                    _, text = _first(ev.attributes, "exception.message", "exception.type")
                    if text is not None:
                        return str(text)
            return str(error_type) if error_type else "error"
        return str(error_type) if error_type else None


@dataclass
class _Message:
    role: str
    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    responses: list[tuple[str, Any]] = field(default_factory=list)  # (call id, result)


# --- reading documents ------------------------------------------------------------------------


def _open_binary(path: str | Path) -> IO[bytes]:
    """A file's bytes, decompressed when they are gzip (told by their first bytes)."""
    fh = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    if fh.read(2) == b"\x1f\x8b":
        fh.seek(0)
        return cast(IO[bytes], gzip.GzipFile(fileobj=fh))
    fh.seek(0)
    return fh


def _protobuf_document(
    path: str | Path, needle: str | None
) -> Iterator[tuple[int, Any] | ReadError]:
    """The one request of an OTLP protobuf file, as its OTLP/JSON dict."""
    with _open_binary(path) as fh:
        data = fh.read()
    try:
        doc = decode_request(data)
    except ImportError:
        message = (
            "the file is not JSON text, and reading it as OTLP protobuf needs "
            "opentelemetry-proto: pip install 'agentgauge[otel]'"
        )
        yield ReadError(str(path), 1, None, message)
        return
    except ValueError as exc:
        yield ReadError(str(path), 1, None, f"the file is not JSON text, and {exc}")
        return
    if needle is None or needle in doc:
        yield 1, doc


def _documents(
    path: str | Path, needle: str | None = None, *, binary: bool = False
) -> Iterator[tuple[int, Any] | ReadError]:
    """The JSON documents of a file with the line each starts on.

    One document per line (the file exporter); when the first line is not a whole document the
    file is read as one document or several concatenated ones (pretty-printed output). A file
    that cannot be read on (not UTF-8, a corrupt ``.gz``) ends with a ReadError. With a
    ``needle``, only the lines (or the whole text) containing it are parsed.
    """
    last = 0
    try:
        if binary:
            yield from _protobuf_document(path, needle)
            return
        for item in _documents_of(path, needle):
            last = item.line if isinstance(item, ReadError) else item[0]
            yield item
    except (UnicodeDecodeError, OSError, EOFError, zlib.error) as exc:
        yield ReadError(str(path), last + 1, None, f"the file cannot be read on: {exc}")


def _binary(path: str | Path) -> bool:
    """Whether a file's content is binary (protobuf) rather than JSON text; a file that cannot
    be read counts as text, whose reader reports why."""
    try:
        with _open_binary(path) as fh:
            return is_protobuf(fh.read(64))
    except (OSError, EOFError, zlib.error):
        return False


def _documents_of(path: str | Path, needle: str | None) -> Iterator[tuple[int, Any] | ReadError]:
    source = str(path)
    with io.TextIOWrapper(_open_binary(path), encoding="utf-8-sig") as fh:
        first = 0
        for first, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                doc = json.loads(text)
                if needle is None or needle in text:
                    yield first, doc
            except json.JSONDecodeError as exc:
                if exc.pos < len(text.rstrip()):
                    yield invalid_json(source, first, exc)  # a broken line of a JSONL file
                else:
                    # a document that goes on past its first line: pretty-printed JSON
                    rest = text + fh.read()
                    if needle is None or needle in rest:
                        yield from _concatenated(rest, source, first)
                    return
            except DECODE_ERRORS as exc:
                yield decode_error(source, first, exc)
            break
        for number, text in enumerate(fh, start=first + 1):
            if text.strip() and (needle is None or needle in text):
                try:
                    yield number, json.loads(text)
                except DECODE_ERRORS as exc:
                    yield decode_error(source, number, exc)


def _second_line_is_json(text: str) -> bool:
    """Whether the second non-blank line is a whole JSON document: a JSONL file whose first
    line is cut short, not a pretty-printed document that is."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        json.loads(lines[1])
    except DECODE_ERRORS:
        return False
    return True


def _concatenated(text: str, source: str, first_line: int) -> Iterator[tuple[int, Any] | ReadError]:
    decoder = json.JSONDecoder()
    pos, n_docs = 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        line = first_line + text.count("\n", 0, pos)
        try:
            doc, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            if n_docs == 0 and _second_line_is_json(text):
                # not pretty-printed JSON either: one document per line, with a bad first line
                for offset, raw in enumerate(text.splitlines()):
                    if raw.strip():
                        try:
                            yield first_line + offset, json.loads(raw)
                        except DECODE_ERRORS as line_exc:
                            yield decode_error(source, first_line + offset, line_exc)
                return
            message = f"invalid JSON: {exc.msg} at column {exc.colno}"
            if exc.pos >= len(text.rstrip()):
                message = f"invalid JSON: the document that starts on line {line} ends early"
            at = min(exc.pos, len(text.rstrip()))  # the last line with content, at the end
            yield ReadError(
                source,
                first_line + text.count("\n", 0, at),
                None,
                f"{message}; the rest of the file is skipped",
            )
            return
        except DECODE_ERRORS as exc:
            yield ReadError(source, line, None, f"{describe(exc)}; the rest of the file is skipped")
            return
        yield line, doc
        n_docs += 1
        pos = end


# --- decoding spans ---------------------------------------------------------------------------

# A span or trace whose values have an unexpected shape or size (a time past year 9999, an
# infinite token count, a list where an object belongs) is an error of that span or trace.
_SHAPE_ERRORS: tuple[type[Exception], ...] = (
    *DECODE_ERRORS,
    TypeError,
    AttributeError,
    KeyError,
    IndexError,
)


def _any_value(value: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as plain JSON (flattened exporters already give plain values)."""
    if not isinstance(value, dict):
        return value
    try:
        if "stringValue" in value:
            return value["stringValue"]
        if "intValue" in value:
            return int(value["intValue"])
        if "doubleValue" in value:
            return float(value["doubleValue"])
        if "boolValue" in value:
            return bool(value["boolValue"])
        if "bytesValue" in value:
            return value["bytesValue"]
    except (TypeError, ValueError) as exc:
        raise _BadField(where, f"bad attribute value {value!r}: {exc}") from None
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values") or []
        return [_any_value(v, f"{where}.arrayValue.values[{i}]") for i, v in enumerate(items)]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values") or [], f"{where}.kvlistValue")
    return value or None


def _attributes(raw: Any, where: str) -> dict[str, Any]:
    """OTLP ``[{key, value}]`` attributes (or a plain dict of them) as a dict."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(k): _any_value(v, f"{where}.{k}") for k, v in raw.items()}
    if not isinstance(raw, list):
        raise _BadField(where, f"expected a list of key/value attributes, got {type(raw).__name__}")
    out: dict[str, Any] = {}
    for i, kv in enumerate(raw):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise _BadField(f"{where}[{i}].key", "an attribute needs a string 'key'")
        out[kv["key"]] = _any_value(kv.get("value"), f"{where}[{i}].value")
    return out


def _nanos(value: Any, where: str) -> int | None:
    """Unix nanoseconds from an integer, a numeric string or an ISO 8601 time."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise _BadField(where, f"expected a time, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            message = f"expected Unix nanoseconds or ISO 8601, got {value!r}"
            raise _BadField(where, message) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return (moment - _EPOCH) // timedelta(microseconds=1) * 1000
    raise _BadField(where, f"expected a time, got {type(value).__name__}")


def _hex_id(value: Any) -> str | None:
    """An id as lowercase hex: a ``0x`` prefix is dropped, and the base64 of protobuf's JSON
    mapping (Tempo, ``MessageToJson``: 24 characters for a trace id, 12 for a span id) is
    decoded."""
    if value is None or value == "":
        return None
    text = str(value)
    if text.startswith("0x"):
        return text[2:]
    if len(text) in (12, 24) and not _HEX.fullmatch(text):
        try:
            return base64.b64decode(text, validate=True).hex()
        except binascii.Error:
            return text
    return text


def _first(d: dict[str, Any], *keys: str) -> tuple[str, Any]:
    for key in keys:
        if d.get(key) not in (None, ""):
            return key, d[key]
    return keys[0], None


def _from_langfuse(attrs: dict[str, Any], name: str) -> None:
    """Langfuse's observation attributes (its SDK's spans) as GenAI ones, where the span has
    none: ``generation`` -> ``chat`` (input messages and tools, output message, model, usage
    details), ``tool`` -> ``execute_tool`` (the decorated function's keyword arguments, its
    output), ``agent`` -> ``invoke_agent``; an ``ERROR`` level gives ``error.type``."""
    kind = attrs["langfuse.observation.type"]
    given = _maybe_json(attrs.get("langfuse.observation.input"))
    output = _maybe_json(attrs.get("langfuse.observation.output"))
    mapped: dict[str, Any] = {}
    if kind == "generation":
        request = given if isinstance(given, dict) else {"messages": given}
        usage = _maybe_json(attrs.get("langfuse.observation.usage_details"))
        usage = usage if isinstance(usage, dict) else {}
        mapped = {
            "gen_ai.operation.name": "chat",
            "gen_ai.response.model": attrs.get("langfuse.observation.model.name"),
            "gen_ai.input.messages": request.get("messages"),
            "gen_ai.tool.definitions": request.get("tools"),
            "gen_ai.output.messages": [output] if isinstance(output, dict | str) else output,
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens", usage.get("input")),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens", usage.get("output")),
        }
    elif kind == "tool":
        call = given if isinstance(given, dict) else {}
        # the SDK's decorator records {"args": [...], "kwargs": {...}}; others the arguments
        decorated = "kwargs" in call and not call.get("args")
        arguments = call.get("kwargs") if decorated else call
        mapped = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": arguments,
            "gen_ai.tool.call.result": output,
        }
    elif kind == "agent":
        mapped = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    if attrs.get("langfuse.observation.level") == "ERROR":
        mapped["error.type"] = attrs.get("langfuse.observation.status_message") or "error"
    for key, value in mapped.items():
        if value is not None:
            attrs.setdefault(key, value)


def _drop_oversized(attrs: dict[str, Any], where: str, problems: list[_BadField]) -> None:
    """Leave out attribute values over :data:`MAX_ATTRIBUTE_CHARS` (a whole document pasted
    into an attribute), each reported as a problem of its span."""
    for key in [k for k, v in attrs.items() if isinstance(v, str) and len(v) > MAX_ATTRIBUTE_CHARS]:
        size = len(attrs.pop(key)) / 1e6
        message = (
            f"a value of {size:.1f} million characters, over the limit of "
            f"{MAX_ATTRIBUTE_CHARS / 1e6:.0f} million: the attribute is left out, the span kept"
        )
        problems.append(_BadField(f"{where}.{key}", message))


def _decode_span(
    raw: Any,
    where: str,
    line: int,
    resource: dict[str, Any],
    scope: str | None,
    problems: list[_BadField],
) -> _Span:
    """One span, in OTLP/JSON or flattened (SDK console) form; what is left out of it goes in
    ``problems``."""
    if not isinstance(raw, dict):
        raise _BadField(where, f"expected a span object, got {type(raw).__name__}")
    context: dict[str, Any] = raw["context"] if isinstance(raw.get("context"), dict) else {}
    ids = {**context, **raw}
    trace_key, trace_id = _first(ids, "traceId", "trace_id")
    span_key, span_id = _first(ids, "spanId", "span_id", "id")
    parent_key, parent = _first(raw, "parentSpanId", "parent_span_id", "parent_id", "parentId")
    for key, value in ((trace_key, trace_id), (span_key, span_id), (parent_key, parent)):
        if value is not None and not isinstance(value, str):
            raise _BadField(f"{where}.{key}", f"expected a hex string, got {value!r:.40}")
    if _hex_id(trace_id) is None:
        raise _BadField(f"{where}.{trace_key}", "missing: every span needs its trace id")
    if _hex_id(span_id) is None:
        raise _BadField(f"{where}.{span_key}", "missing: every span needs its span id")
    start_key, start = _first(raw, "startTimeUnixNano", "start_time")
    end_key, end = _first(raw, "endTimeUnixNano", "end_time")
    start_ns, end_ns = _nanos(start, f"{where}.{start_key}"), _nanos(end, f"{where}.{end_key}")
    if start_ns is None and isinstance(raw.get("timestamp"), int | float):
        # the JavaScript console exporter: microseconds since the epoch and a duration
        start_ns = int(raw["timestamp"] * 1000)
        if isinstance(raw.get("duration"), int | float):
            end_ns = start_ns + int(raw["duration"] * 1000)
    status: dict[str, Any] = raw["status"] if isinstance(raw.get("status"), dict) else {}
    code = status.get("code", status.get("status_code"))
    message = status.get("message", status.get("description"))
    events: list[_Event] = []
    bad: list[_BadField] = []
    for i, ev in _objects(raw.get("events"), f"{where}.events", bad):
        attrs = _attributes(ev.get("attributes"), f"{where}.events[{i}].attributes")
        _drop_oversized(attrs, f"{where}.events[{i}].attributes", problems)
        events.append(_Event(str(ev.get("name", "")), attrs))
    if bad:
        raise bad[0]
    own_resource = raw.get("resource")
    if isinstance(own_resource, dict) and "attributes" in own_resource:
        resource = _attributes(own_resource["attributes"], f"{where}.resource.attributes")
    attributes = _attributes(raw.get("attributes"), f"{where}.attributes")
    _drop_oversized(attributes, f"{where}.attributes", problems)
    if "langfuse.observation.type" in attributes:
        _from_langfuse(attributes, str(raw.get("name") or ""))
    return _Span(
        trace_id=str(_hex_id(trace_id)),
        span_id=str(_hex_id(span_id)),
        parent_id=_hex_id(parent),
        name=str(raw.get("name") or ""),
        start_ns=start_ns,
        end_ns=end_ns,
        attributes=attributes,
        events=events,
        status_error=code in (2, "2", "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR"),
        status_message=str(message) if message else None,
        resource=resource,
        scope=scope,
        line=line,
    )


def _as_otlp(doc: Any, span_format: SpanFormat) -> tuple[Any, str, list[_BadField]]:
    """A document of another span format in OTLP/JSON's shape (Jaeger's query API converted,
    Tempo's ``batches`` renamed, OpenAI Agents SDK items, LangSmith runs and Langfuse
    observations as spans) and the name of its format: ``jaeger``, ``tempo``,
    ``openai-agents``, ``langsmith``, ``langfuse``, ``otlp-json`` (requests) or ``sdk-json``
    (span lists), and what could not be converted (all of it, with no document, when it is not
    of the format asked for). ``auto`` tells the formats apart by their keys."""
    jaeger = is_jaeger(doc)
    request = isinstance(doc, dict) and "resourceSpans" in doc
    tempo = isinstance(doc, dict) and "batches" in doc
    agents = is_openai_agents(doc)
    if span_format == "openai-agents" and not agents:
        message = "missing: not an OpenAI Agents SDK export (object: trace or trace.span)"
        return None, "openai-agents", [_BadField("object", message)]
    if agents and span_format in ("auto", "openai-agents"):
        return openai_agents_spans(doc), "openai-agents", []
    langsmith = is_langsmith(doc)
    if span_format == "langsmith" and not langsmith:
        message = "missing: not a LangSmith run (run_type, id) nor a list of runs"
        return None, "langsmith", [_BadField("run_type", message)]
    if langsmith and span_format in ("auto", "langsmith"):
        return langsmith_spans(doc), "langsmith", []
    langfuse = is_langfuse(doc)
    if span_format == "langfuse" and not langfuse:
        message = "missing: not a Langfuse export (a trace with observations, or observations)"
        return None, "langfuse", [_BadField("observations", message)]
    if langfuse and span_format in ("auto", "langfuse"):
        spans, problems = langfuse_spans(doc)
        return spans, "langfuse", [_BadField(where, message) for where, message in problems]
    if span_format == "jaeger" and not jaeger:
        return None, "jaeger", [_BadField("data", "missing: not a Jaeger export (data[].spans)")]
    if span_format == "tempo" and not (tempo or request):
        message = "missing: not a Tempo export (batches, resourceSpans)"
        return None, "tempo", [_BadField("batches", message)]
    if jaeger and span_format in ("auto", "jaeger"):
        return jaeger_to_otlp(doc), "jaeger", []
    if tempo and span_format in ("auto", "tempo"):
        return {"resourceSpans": doc["batches"]}, "tempo", []
    return (
        doc,
        span_format if span_format == "tempo" else "otlp-json" if request else "sdk-json",
        [],
    )


def _spans_of(doc: Any, line: int) -> tuple[list[_Span], list[_BadField]]:
    """The spans of one OTLP/JSON document (a request, a span or a list of spans); spans that
    cannot be read come back as errors."""
    spans: list[_Span] = []
    errors: list[_BadField] = []

    def take(raw: Any, where: str, resource: dict[str, Any], scope: str | None) -> None:
        try:
            spans.append(_decode_span(raw, where, line, resource, scope, errors))
        except _BadField as exc:
            errors.append(exc)
        except _SHAPE_ERRORS as exc:
            errors.append(_BadField(where, describe(exc)))

    if isinstance(doc, list):
        for i, item in enumerate(doc):
            if isinstance(item, dict) and "resourceSpans" in item:
                more, bad = _spans_of(item, line)
                spans += more
                errors += [_BadField(f"[{i}].{e.field}", str(e)) for e in bad]
            else:
                take(item, f"[{i}]", {}, None)
        return spans, errors
    if not isinstance(doc, dict):
        return [], [_BadField("", f"expected a JSON object or list, got {type(doc).__name__}")]
    if "resourceSpans" not in doc:
        if "name" in doc and any(k in doc for k in ("context", "spanId", "span_id", "id")):
            take(doc, "span", {}, None)
            return spans, errors
        return [], [_BadField("resourceSpans", "missing: not an OTLP trace export nor a span")]
    for i, rs in _objects(doc.get("resourceSpans"), "resourceSpans", errors):
        where_rs = f"resourceSpans[{i}]"
        try:
            resource = _attributes(
                (rs.get("resource") or {}).get("attributes"), f"{where_rs}.resource"
            )
        except (_BadField, AttributeError):
            errors.append(_BadField(f"{where_rs}.resource", "expected a resource object"))
            continue
        scope_key = "scopeSpans" if "scopeSpans" in rs else "instrumentationLibrarySpans"
        for j, ss in _objects(rs.get(scope_key), f"{where_rs}.{scope_key}", errors):
            scope_info = ss.get("scope") or ss.get("instrumentationLibrary")
            scope = scope_info.get("name") if isinstance(scope_info, dict) else None
            where_ss = f"{where_rs}.{scope_key}[{j}].spans"
            for k, raw in _objects(ss.get("spans"), where_ss, errors):
                take(raw, f"{where_ss}[{k}]", resource, scope)
    return spans, errors


def _objects(value: Any, where: str, errors: list[_BadField]) -> Iterator[tuple[int, Any]]:
    """The items of a list in the export's envelope; a non-list or a non-object is an error."""
    if value is None:
        return
    if not isinstance(value, list):
        errors.append(_BadField(where, f"expected a list, got {type(value).__name__}"))
        return
    for i, item in enumerate(value):
        if isinstance(item, dict):
            yield i, item
        else:
            errors.append(_BadField(f"{where}[{i}]", f"expected an object, got {item!r:.40}"))


def _line_error(source: str, line: int, errors: list[_BadField]) -> ReadError:
    """All the errors of one line as one ReadError (the store keeps one per line)."""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ReadError(source, line, errors[0].field or None, str(errors[0]) + more)


# --- content ----------------------------------------------------------------------------------


def _maybe_json(value: Any) -> Any:
    """A value that instrumentations store either as JSON text or as a structured value."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except DECODE_ERRORS:
            return value
    return value


def _listify(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _listify(v) for k, v in node.items()}
        if node and all(k.isdigit() for k in node):
            return [node[k] for k in sorted(node, key=int)]
    return node


def _unflatten(attrs: dict[str, Any], prefix: str) -> list[Any]:
    """``prefix.{i}.a.b`` attributes (OpenInference, OpenLLMetry) as a list of nested dicts."""
    tree: dict[str, Any] = {}
    for key, value in attrs.items():
        if key.startswith(prefix + "."):
            node = tree
            *path, leaf = key[len(prefix) + 1 :].split(".")
            for part in path:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    break
                node = child
            else:
                node[leaf] = value
    out = _listify(tree)
    return out if isinstance(out, list) else []


def _text_of(content: Any) -> str | None:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                part = part.get("message_content", part)
                if isinstance(part, dict) and part.get("type", "text") == "text":
                    value = part.get("content", part.get("text"))
                    if isinstance(value, str):
                        texts.append(value)
        return "\n".join(texts) if texts else None
    return None


def _tool_call(raw: Any) -> ToolCall | None:
    """A requested call: a ``tool_call`` part, OpenAI ``{id, function}``, OpenInference
    ``{tool_call: {...}}`` or OpenLLMetry ``{id, name, arguments}``."""
    if not isinstance(raw, dict):
        return None
    raw = raw.get("tool_call", raw)
    fn = raw.get("function", raw) if isinstance(raw, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    arguments = _maybe_json(fn.get("arguments"))
    call_id = raw.get("id")
    return ToolCall(
        id=str(call_id) if call_id is not None else None,
        name=fn["name"],
        arguments=arguments if isinstance(arguments, dict) else {},
    )


def _gemini_call(raw: dict[str, Any]) -> ToolCall | None:
    return _tool_call({"id": raw.get("id"), "name": raw.get("name"), "arguments": raw.get("args")})


def _message(raw: Any, default_role: str) -> _Message | None:
    """A message in the parts-based schema, OpenAI style, OpenInference or a choice body."""
    if isinstance(raw, str):
        return _Message(default_role, raw)
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("message"), dict):
        # a gen_ai.choice body or an OpenInference "message.*" group
        raw = {**raw["message"], "role": raw["message"].get("role", default_role)}
    role = str(raw.get("role") or default_role)
    if isinstance(raw.get("parts"), list):
        # GenAI parts are typed; Gemini / ADK parts are keyed (function_call, function_response)
        parts = [p for p in raw["parts"] if isinstance(p, dict)]
        calls = [
            _tool_call(p) if p.get("type") == "tool_call" else _gemini_call(p["function_call"])
            for p in parts
            if p.get("type") == "tool_call" or isinstance(p.get("function_call"), dict)
        ]
        responses = [
            (str(p.get("id")), _maybe_json(p.get("response", p.get("result"))))
            for p in (
                p.get("function_response", p)
                for p in parts
                if p.get("type") == "tool_call_response"
                or isinstance(p.get("function_response"), dict)
            )
        ]
        return _Message(role, _text_of(parts), [c for c in calls if c], responses)
    raw_calls = raw.get("tool_calls")
    calls = [_tool_call(c) for c in raw_calls] if isinstance(raw_calls, list) else []
    text = _text_of(raw.get("content"))
    if text is None:
        text = _text_of(raw.get("contents"))
    responses = []
    # OpenAI messages name the call in ``tool_call_id``; the ``gen_ai.tool.message`` event of
    # the 1.30 conventions names it in ``id``
    _, call_id = _first(raw, "tool_call_id", "id")
    if role == "tool" and call_id is not None:
        responses.append((str(call_id), _maybe_json(raw.get("content"))))
        text = None  # a tool's reply is not a message of the conversation's speakers
    return _Message(role, text, [c for c in calls if c], responses)


def _messages(value: Any, default_role: str) -> list[_Message]:
    value = _maybe_json(value)
    items = value if isinstance(value, list) else [value]
    return [m for m in (_message(_maybe_json(v), default_role) for v in items) if m]


def _plain_value(attrs: dict[str, Any], key: str) -> str | None:
    """OpenInference ``input.value`` / ``output.value`` when it is text, not a JSON payload."""
    value = attrs.get(key)
    mime = attrs.get(key.replace(".value", ".mime_type"))
    if isinstance(value, str) and value and mime != "application/json":
        return value
    return None


@dataclass(frozen=True)
class _Direction:
    """Where one side of a model call (its input or its output) may be recorded."""

    attribute: str  # the current conventions' attribute
    legacy: str  # the older attribute (JSON, or flattened by OpenLLMetry)
    legacy_event: str  # the event that carried the older attribute
    openinference: str  # OpenInference's flattened prefix
    plain: str  # OpenInference's plain value
    role: str  # the default role
    events: dict[str, str]  # deprecated events -> their role
    adk: tuple[str, str]  # Google ADK's JSON attribute and the key of its messages


_INPUT = _Direction(
    "gen_ai.input.messages",
    "gen_ai.prompt",
    "gen_ai.content.prompt",
    "llm.input_messages",
    "input.value",
    "user",
    {
        "gen_ai.system.message": "system",
        "gen_ai.user.message": "user",
        "gen_ai.assistant.message": "assistant",
        "gen_ai.tool.message": "tool",
    },
    ("gcp.vertex.agent.llm_request", "contents"),
)
_OUTPUT = _Direction(
    "gen_ai.output.messages",
    "gen_ai.completion",
    "gen_ai.content.completion",
    "llm.output_messages",
    "output.value",
    "assistant",
    {"gen_ai.choice": "assistant"},
    ("gcp.vertex.agent.llm_response", "content"),
)


def _span_messages(span: _Span, side: _Direction) -> list[_Message]:
    """One side's messages, from the first place that has any (see the module docs)."""
    attrs = span.attributes
    for key in (side.attribute, side.legacy):
        if attrs.get(key) not in (None, ""):
            return _messages(attrs[key], side.role)
    flat = _unflatten(attrs, side.legacy)
    if flat:
        return _messages(flat, side.role)
    adk_attribute, adk_key = side.adk
    adk = _maybe_json(attrs.get(adk_attribute))
    if isinstance(adk, dict) and adk.get(adk_key):
        return _messages(adk[adk_key], side.role)
    flat = _unflatten(attrs, side.openinference)
    if flat:
        return _messages(flat, side.role)
    from_events = []
    for ev in span.events:
        if ev.name in side.events:
            from_events += _messages(_event_body(ev), side.events[ev.name])
        elif ev.name == side.legacy_event:
            from_events += _messages(ev.attributes.get(side.legacy), side.role)
    if from_events:
        return from_events
    text = _plain_value(attrs, side.plain)
    return [_Message(side.role, text)] if text else []


def _input_messages(span: _Span) -> list[_Message]:
    if "input" not in span.memo:
        span.memo["input"] = _span_messages(span, _INPUT)
    messages: list[_Message] = span.memo["input"]
    return messages


def _output_messages(span: _Span) -> list[_Message]:
    if "output" not in span.memo:
        span.memo["output"] = _span_messages(span, _OUTPUT)
    messages: list[_Message] = span.memo["output"]
    return messages


def _event_body(ev: _Event) -> Any:
    """A deprecated GenAI event's body: its attributes, or the JSON in ``gen_ai.event.content``."""
    body = _maybe_json(ev.attributes.get("gen_ai.event.content"))
    if isinstance(body, dict):
        return body
    return {k: _maybe_json(v) for k, v in ev.attributes.items()}


def _assistant_text(messages: list[_Message]) -> str | None:
    texts = [m.text for m in messages if m.role in ("assistant", "model") and m.text]
    return texts[-1] if texts else None


def _int_attr(attrs: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            try:
                return int(value)
            except ValueError:
                continue
    return None


def _usage(attrs: dict[str, Any]) -> Usage | None:
    """Token usage; cached input tokens are already part of ``input_tokens``."""
    inp = _int_attr(
        attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"
    )
    out = _int_attr(
        attrs,
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
        "llm.token_count.completion",
    )
    if inp is None and out is None:
        return None
    return Usage(input_tokens=inp, output_tokens=out)


def _model(attrs: dict[str, Any]) -> str | None:
    _, model = _first(attrs, "gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
    return str(model) if model is not None else None


def _tool_specs(span: _Span) -> list[ToolSpec]:
    """Tools whose schema the span records: offered to the model (``gen_ai.tool.definitions``,
    OpenInference ``llm.tools``, OpenLLMetry ``llm.request.functions``) or run by an
    OpenInference tool span (``tool.name`` with the JSON Schema in ``tool.parameters``)."""
    attrs = span.attributes
    raw = _maybe_json(attrs.get("gen_ai.tool.definitions"))
    defs = raw if isinstance(raw, list) else []
    defs += [
        _maybe_json(t.get("tool", {}).get("json_schema"))
        for t in _unflatten(attrs, "llm.tools")
        if isinstance(t, dict)
    ]
    defs += _unflatten(attrs, "llm.request.functions")
    schema = _maybe_json(attrs.get("tool.parameters"))
    if isinstance(attrs.get("tool.name"), str) and _is_json_schema(schema):
        description = attrs.get("tool.description")
        defs.append({"name": attrs["tool.name"], "description": description, "parameters": schema})
    specs = []
    for d in defs:
        if isinstance(d, dict):
            fn = d.get("function", d)
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                params = _maybe_json(fn.get("parameters"))
                specs.append(
                    ToolSpec(
                        name=fn["name"],
                        description=str(fn.get("description") or ""),
                        **({"parameters": params} if isinstance(params, dict) else {}),
                    )
                )
    return specs


# --- spans to steps ---------------------------------------------------------------------------


def _operation(span: _Span) -> str | None:
    """The GenAI operation of a span: the attribute, the OpenInference kind, or the span name."""
    attrs = span.attributes
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, str) and op:
        return op
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str):
        if kind.upper() == "TOOL" and span.name.startswith(_HANDOFF_PREFIX):
            return "handoff"  # OpenInference records an openai-agents handoff as a tool span
        return _OPENINFERENCE_OPS.get(kind.upper(), kind.lower())
    first_word = span.name.split(" ", 1)[0]
    if first_word in _KNOWN_OPS:
        return first_word
    if "gen_ai.tool.name" in attrs:
        return "execute_tool"
    if any(k in attrs for k in ("gen_ai.request.model", "gen_ai.system", "gen_ai.provider.name")):
        return "chat"
    return None


def _name_after_op(span: _Span) -> str | None:
    _, _, rest = span.name.partition(" ")
    return rest or None


def _agent_name(span: _Span) -> str:
    attrs = span.attributes
    _, name = _first(attrs, "gen_ai.agent.name", "gen_ai.workflow.name", "agent.name")
    return str(name or _name_after_op(span) or span.name)


def _tool_name(span: _Span) -> str:
    _, name = _first(span.attributes, "gen_ai.tool.name", "tool.name")
    return str(name or _name_after_op(span) or span.name)


def _is_json_schema(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "object" and "properties" in value


def _tool_arguments(span: _Span) -> tuple[dict[str, Any], Any]:
    """The call's arguments, and the raw value when it is not a JSON object (else None)."""
    attrs = span.attributes
    for key in (
        "gen_ai.tool.call.arguments",
        "gcp.vertex.agent.tool_call_args",
        "tool_call.function.arguments",
        "tool.parameters",
    ):
        value = _maybe_json(attrs.get(key))
        if value is None or (key == "tool.parameters" and _is_json_schema(value)):
            continue  # OpenInference may put the tool's schema there, not the call's values
        return (value, None) if isinstance(value, dict) else ({}, value)
    value = _maybe_json(attrs.get("input.value"))
    if isinstance(value, dict):
        return value, None
    return {}, value


def _tool_result(span: _Span) -> Any:
    _, value = _first(
        span.attributes, "gen_ai.tool.call.result", "gcp.vertex.agent.tool_response", "output.value"
    )
    return _maybe_json(value)


def _normalised(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _transfer_target(tool_name: str) -> str | None:
    """``transfer_to_billing_agent`` -> ``billing_agent`` (the handoff tool convention)."""
    if tool_name.startswith("transfer_to_") and len(tool_name) > len("transfer_to_"):
        return _normalised(tool_name[len("transfer_to_") :])
    return None


def _datetime(ns: int | None) -> datetime | None:
    if ns is None:
        return None
    return _EPOCH + timedelta(microseconds=ns // 1000)


@dataclass
class _Draft:
    """A step before ordering: sorted by (time, depth, rank, creation order)."""

    time_ns: int
    depth: int
    rank: int
    fields: dict[str, Any]


@dataclass
class _Group:
    """The spans of one trace (or conversation) and the relations between them."""

    spans: list[_Span]
    by_id: dict[str, _Span] = field(default_factory=dict)
    duplicates: int = 0
    merged: int = 0
    ops: dict[str, str | None] = field(default_factory=dict)
    _depth: dict[str, int] = field(default_factory=dict)
    _agent_parent: dict[str, _Span | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for span in self.spans:
            if span.span_id in self.by_id:
                self.duplicates += 1
            else:
                self.by_id[span.span_id] = span
                self.ops[span.span_id] = _operation(span)
        self.merged = _merge_layers(self.by_id, self.ops)
        self._not_agents()
        self.spans = sorted(
            self.by_id.values(), key=lambda s: (s.start_ns or 0, self.depth(s), s.line)
        )

    def _not_agents(self) -> None:
        """Agent spans that only stand around agents are no agents: OpenInference's unnamed
        ``Agent workflow`` above the named agents, and the ``invoke_agent`` span of another
        service (a controller) around an agent of the same name."""
        children: dict[str, list[_Span]] = {}
        for span in self.by_id.values():
            if span.parent_id:
                children.setdefault(span.parent_id, []).append(span)
        wrappers = []
        for span in self.by_id.values():
            if self.ops[span.span_id] != "invoke_agent":
                continue
            below = self._agents_below(span, children)
            unnamed = _first(span.attributes, "gen_ai.agent.name", "agent.name")[1] is None
            orchestrates = below and unnamed and "openinference.span.kind" in span.attributes
            wraps = any(
                _normalised(_agent_name(a)) == _normalised(_agent_name(span))
                and (a.scope, a.resource.get("service.name"))
                != (span.scope, span.resource.get("service.name"))
                for a in below
            )
            if orchestrates or wraps:
                wrappers.append(span)
        for span in wrappers:
            self.ops[span.span_id] = None

    def _agents_below(self, span: _Span, children: dict[str, list[_Span]]) -> list[_Span]:
        """The nearest agent spans below a span (none of them below another)."""
        found, todo = [], list(children.get(span.span_id, []))
        seen = {span.span_id}
        while todo:
            node = todo.pop()
            if node.span_id in seen:
                continue  # a cycle in the parent links
            seen.add(node.span_id)
            if self.ops[node.span_id] in _AGENT_OPS:
                found.append(node)
            else:
                todo += children.get(node.span_id, [])
        return found

    def parent(self, span: _Span) -> _Span | None:
        return self.by_id.get(span.parent_id) if span.parent_id else None

    def ancestors(self, span: _Span) -> Iterator[_Span]:
        seen = {span.span_id}
        node = self.parent(span)
        while node is not None and node.span_id not in seen:  # a cycle ends the walk
            seen.add(node.span_id)
            yield node
            node = self.parent(node)

    def depth(self, span: _Span) -> int:
        if span.span_id not in self._depth:
            self._depth[span.span_id] = sum(1 for _ in self.ancestors(span))
        return self._depth[span.span_id]

    def agent_span(self, span: _Span) -> _Span | None:
        """The nearest enclosing agent (or workflow) span, excluding the span itself."""
        if span.span_id not in self._agent_parent:
            self._agent_parent[span.span_id] = next(
                (a for a in self.ancestors(span) if self.ops[a.span_id] in _AGENT_OPS), None
            )
        return self._agent_parent[span.span_id]

    def agent_of(self, span: _Span) -> str | None:
        owner = self.agent_span(span)
        return _agent_name(owner) if owner is not None else None

    def is_agent(self, span: _Span) -> bool:
        return self.ops[span.span_id] in _AGENT_OPS

    def has_agent_below(self, span: _Span) -> bool:
        return any(
            self.is_agent(s) and any(a is span for a in self.ancestors(s)) for s in self.spans
        )


class _StepBuilder:
    """The steps of one group, in one pass over its spans by start time.

    Each span becomes steps by its GenAI operation (agent, tool, LLM or plan). What a span
    means can depend on the spans before it, and that state lives here: the last agent of
    each scope (to see a handoff), a transfer tool's handoff (not to record it twice) and the
    tool calls requested in messages (for the results answering them later).

    Args:
        group: the spans.
        unmapped: counts the spans of operations that make no step.
        notes: counts and values that go in the Trace's metadata.
    """

    def __init__(self, group: _Group, unmapped: Counter[str], notes: dict[str, Any]) -> None:
        self._group = group
        self._unmapped = unmapped
        self._notes = notes
        self._drafts: list[_Draft] = []
        # without tool spans, the calls the model asked for are the only record of the trajectory
        self._calls_from_messages = not any(op == "execute_tool" for op in group.ops.values())
        self._open_calls: dict[str, tuple[str | None, str]] = {}  # call id -> (agent, step id)
        self._last_in_scope: dict[str | None, str] = {}  # enclosing agent span id -> last agent
        self._transferred: tuple[str | None, str] | None = None
        # the calls each agent's model asked for, to give tool spans without an id theirs
        self._requested: dict[str | None, list[ToolCall]] = {}

    def steps(self) -> list[Step]:
        """The group's steps ordered by start time; the span tree kept in ``id``/``parent_id``."""
        for span in self._group.spans:
            self._span(span)
        self._drafts.sort(key=lambda d: (d.time_ns, d.depth, d.rank))  # stable: creation order last
        return [Step(index=i, **d.fields) for i, d in enumerate(self._drafts)]

    def _add(self, span: _Span, time_ns: int | None, *, rank: int = 0, **fields: Any) -> None:
        depth = self._group.depth(span)
        self._drafts.append(_Draft(time_ns if time_ns is not None else 0, depth, rank, fields))

    def _count(self, note: str, n: int) -> None:
        self._notes[note] = self._notes.get(note, 0) + n

    def _span(self, span: _Span) -> None:
        """The steps of one span, by its operation."""
        op = self._group.ops[span.span_id]
        agent = self._group.agent_of(span)
        common: dict[str, Any] = {
            "agent": agent,
            "parent_id": span.parent_id,
            "started_at": _datetime(span.start_ns),
        }
        if op in _AGENT_OPS:
            self._handoff_to(span, agent, common)
        elif op == "handoff":
            self._handoff_span(span, agent, common)
        elif op == "execute_tool":
            self._tool_steps(span, agent, common)
        elif op in _LLM_OPS:
            self._llm_steps(span, agent, common)
        elif op == "plan":
            self._add(
                span,
                span.start_ns,
                **common,
                kind=StepKind.reasoning,
                id=span.span_id,
                content=_assistant_text(_output_messages(span)),
                duration_s=span.duration_s,
                error=span.error,
            )
        else:
            self._unmapped[op or span.name] += 1

    def _handoff_to(self, span: _Span, agent: str | None, common: dict[str, Any]) -> None:
        """An agent span: a handoff step when control passes to it from another agent."""
        # control passes from the previous agent of the same scope, else from the enclosing
        # agent (a workflow orchestrates: it hands nothing off itself)
        name = _agent_name(span)
        enclosing = self._group.agent_span(span)
        scope = enclosing.span_id if enclosing is not None else None
        giver = self._last_in_scope.get(scope)
        if (
            giver is None
            and enclosing is not None
            and self._group.ops[enclosing.span_id] == "invoke_agent"
        ):
            giver = agent
        self._last_in_scope[scope] = name
        if giver is None or giver == name:
            return
        if self._transferred == (giver, _normalised(name)):
            self._transferred = None  # the transfer tool already recorded this handoff
            return
        # what the receiving agent was asked: its own input, else its first model call's
        first_calls = [
            s
            for s in self._group.spans
            if self._group.ops[s.span_id] in _LLM_OPS and self._group.agent_span(s) is span
        ]
        first_user = [
            m.text
            for s in [span, *first_calls[:1]]
            for m in _input_messages(s)
            if m.role == "user" and m.text
        ]
        content = first_user[0] if first_user else None
        self._handoff(span, {**common, "agent": giver}, span.span_id, name, content)

    def _handoff(
        self,
        span: _Span,
        common: dict[str, Any],
        step_id: str,
        recipient: str,
        content: str | None = None,
    ) -> None:
        """Add a handoff step from ``common["agent"]`` to ``recipient`` at the span's start."""
        self._add(
            span,
            span.start_ns,
            **common,
            kind=StepKind.handoff,
            id=step_id,
            recipient=recipient,
            message_type=MessageType.handoff,
            content=content,
        )

    def _handoff_span(self, span: _Span, agent: str | None, common: dict[str, Any]) -> None:
        """A span of the handoff itself (``handoff to X``, from the agent in ``input.value``):
        a handoff step, which the receiving agent's span then does not record again."""
        giver = _plain_value(span.attributes, "input.value") or agent
        recipient = (
            _plain_value(span.attributes, "output.value") or span.name[len(_HANDOFF_PREFIX) :]
        )
        self._handoff(span, {**common, "agent": giver}, span.span_id, recipient)
        self._transferred = (giver, _normalised(recipient))

    def _tool_steps(self, span: _Span, agent: str | None, common: dict[str, Any]) -> None:
        """A tool span: its call and its result or error; a transfer tool (``transfer_to_X``)
        is a handoff, not a call of a tool."""
        if _transfer_target(_tool_name(span)) is not None:
            self._transfer_handoff(span, _tool_name(span), agent, common)
            return
        call = self._tool_call(span, agent)
        self._add(
            span,
            span.start_ns,
            **common,
            kind=StepKind.tool_call,
            id=span.span_id,
            tool_call=call,
            duration_s=span.duration_s,
        )
        result, error = _tool_result(span), span.error
        if result is not None or error is not None:
            self._add(
                span,
                span.end_ns if span.end_ns is not None else span.start_ns,
                **{**common, "parent_id": span.span_id, "started_at": _datetime(span.end_ns)},
                kind=StepKind.tool_result,
                id=f"{span.span_id}:result",
                result=result,
                error=error,
            )

    def _tool_call(self, span: _Span, agent: str | None) -> ToolCall:
        """The call a tool span made; arguments that are not a JSON object go in the notes.
        A span without a call id takes the id of the call its agent's model asked for with
        the same name (and arguments, when several match)."""
        arguments, raw_arguments = _tool_arguments(span)
        if raw_arguments is not None:
            self._notes.setdefault("unparsed_tool_arguments", []).append(
                {"span_id": span.span_id, "value": raw_arguments}
            )
        name = _tool_name(span)
        call_id = _first(span.attributes, "gen_ai.tool.call.id", "tool_call.id")[1]
        requested = self._requested.get(agent, [])
        same_name = [c for c in requested if c.name == name]
        match = next((c for c in same_name if c.arguments == arguments), None)
        match = match or (same_name[0] if same_name else None)
        if call_id is not None:
            match = next((c for c in requested if c.id == str(call_id)), None)
        if match is not None:
            requested.remove(match)
            call_id = call_id if call_id is not None else match.id
        return ToolCall(
            id=str(call_id) if call_id is not None else None, name=name, arguments=arguments
        )

    def _transfer_handoff(
        self, span: _Span, tool: str, agent: str | None, common: dict[str, Any]
    ) -> None:
        """The handoff a ``transfer_to_X`` tool makes, unless an agent span below it records
        the handoff itself."""
        target = _transfer_target(tool)
        if target is None or self._group.has_agent_below(span):
            return
        later = (
            s
            for s in self._group.spans
            if self._group.is_agent(s)
            and (s.start_ns or 0) >= (span.start_ns or 0)
            and _normalised(_agent_name(s)) == target
        )
        recipient = next((_agent_name(s) for s in later), target)
        step_id = f"{span.span_id}:handoff"
        self._handoff(span, {**common, "parent_id": span.span_id}, step_id, recipient)
        self._transferred = (agent, _normalised(recipient))

    def _llm_steps(self, span: _Span, agent: str | None, common: dict[str, Any]) -> None:
        """An LLM span: its step with usage, and the tool calls its messages carry."""
        outputs = _output_messages(span)
        self._add(
            span,
            span.start_ns,
            **common,
            kind=StepKind.llm,
            id=span.span_id,
            content=_assistant_text(outputs),
            duration_s=span.duration_s,
            usage=_usage(span.attributes),
            error=span.error,
        )
        requested = [c for m in outputs for c in m.tool_calls]
        self._requested[agent] = [c for c in requested if c.id is not None]
        if self._calls_from_messages:
            self._message_tool_steps(span, requested, agent, common)
        elif requested:
            self._count("tool_calls_in_messages", len(requested))

    def _message_tool_steps(
        self, span: _Span, requested: list[ToolCall], agent: str | None, common: dict[str, Any]
    ) -> None:
        """Tool steps read from an LLM span's messages (for a trace without tool spans): the
        results its input answers to calls requested earlier, and the calls it requests."""
        for call_id, result in [r for m in _input_messages(span) for r in m.responses]:
            if call_id not in self._open_calls:
                continue
            caller, call_step = self._open_calls.pop(call_id)
            self._add(
                span,
                span.start_ns,
                rank=-1,  # known before this call started
                **{**common, "agent": caller, "parent_id": call_step},
                kind=StepKind.tool_result,
                id=f"{call_step}:result",
                result=result,
            )
        for k, call in enumerate(requested):
            step_id = f"{span.span_id}:call{k}"
            self._add(
                span,
                span.end_ns,
                rank=1,
                **{**common, "parent_id": span.span_id, "started_at": _datetime(span.end_ns)},
                kind=StepKind.tool_call,
                id=step_id,
                tool_call=call,
            )
            if call.id is not None:
                self._open_calls[call.id] = (agent, step_id)
        if requested:
            self._count("tool_calls_from_messages", len(requested))


def _root(group: _Group) -> tuple[_Span, list[_Span]]:
    """The run's root span and its top-level agent spans (those with no agent above them)."""
    top_agents = [s for s in group.spans if group.is_agent(s) and group.agent_span(s) is None]
    if len(top_agents) == 1:
        return top_agents[0], top_agents
    parentless = [s for s in group.spans if group.parent(s) is None]
    return (parentless or group.spans)[0], top_agents


def _output(root: _Span, top_agents: list[_Span], steps: list[Step]) -> Any:
    """The last top-level agent's own output (the last turn's, in a conversation), else the
    root span's, else the last assistant text of a top-level agent's LLM steps, else of any
    LLM step."""
    for span in [*reversed(top_agents), root]:
        own = _assistant_text(_output_messages(span))
        if own is not None:
            return own
    top_names = {_agent_name(s) for s in top_agents}
    for candidates in (
        [s for s in steps if s.kind is StepKind.llm and s.agent in top_names],
        [s for s in steps if s.kind is StepKind.llm],
    ):
        texts = [s.content for s in candidates if s.content]
        if texts:
            return texts[-1]
    return None


def _params(group: _Group) -> dict[str, Any]:
    """The request parameters of the first LLM call (model, temperature, ...)."""
    for span in group.spans:
        if group.ops[span.span_id] in _LLM_OPS:
            attrs = span.attributes
            params: dict[str, Any] = {}
            invocation = _maybe_json(attrs.get("llm.invocation_parameters"))
            if isinstance(invocation, dict):
                # a client's settings may carry its credentials: they never enter a Trace
                params.update({k: v for k, v in invocation.items() if not _SECRET.search(k)})
            model = _model(attrs)
            if model is not None:
                params["model"] = model
            params.update({name: attrs[k] for k, name in _REQUEST_PARAMS.items() if k in attrs})
            return params
    return {}


# --- one model call, several instrumentations -------------------------------------------------


def _response_id(span: _Span) -> str | None:
    """The provider's id of the response: the GenAI attribute, else OpenInference's raw
    response body."""
    value = span.attributes.get("gen_ai.response.id")
    if value not in (None, ""):
        return str(value)
    body = _maybe_json(span.attributes.get("output.value"))
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        return str(body["id"])
    return None


def _call_fingerprint(span: _Span, kind: str) -> tuple[Any, ...] | None:
    """What two records of one call agree on, when they recorded content: for a model call
    the number of input messages and the answer (text and requested call ids), for a tool
    its call id or its name and arguments. None when the span recorded no content."""
    if kind == "tool":
        call_id = _first(span.attributes, "gen_ai.tool.call.id", "tool_call.id")[1]
        if call_id is not None:
            return ("id", str(call_id))
        arguments, raw = _tool_arguments(span)
        return ("args", _tool_name(span), json.dumps(arguments, sort_keys=True), str(raw))
    inputs, outputs = _input_messages(span), _output_messages(span)
    if not inputs and not outputs:
        return None
    calls = tuple(c.id or c.name for m in outputs for c in m.tool_calls)
    return (len(inputs), _assistant_text(outputs), calls)


def _same_call(a: _Span, b: _Span, kind: str) -> bool:
    """Whether two overlapping spans, nested or side by side, record the same call."""
    if a.start_ns is None or b.start_ns is None or a.end_ns is None or b.end_ns is None:
        return False
    if a.start_ns > b.end_ns or b.start_ns > a.end_ns:
        return False
    if kind == "llm":
        ids = _response_id(a), _response_id(b)
        if ids[0] is not None and ids[1] is not None:
            return ids[0] == ids[1]
    elif _tool_name(a) != _tool_name(b):
        return False
    prints = _call_fingerprint(a, kind), _call_fingerprint(b, kind)
    if prints[0] is not None and prints[1] is not None:
        return prints[0] == prints[1]
    if kind == "llm":
        # one side has no content (an instrumentation that leaves it out): the same model
        models = sorted((_model(a.attributes) or "", _model(b.attributes) or ""), key=len)
        return models[1].startswith(models[0])
    return True


def _content_weight(span: _Span) -> int:
    """How much of a call a span recorded: its messages' text, tool calls and results."""
    messages = [*_input_messages(span), *_output_messages(span)]
    return sum(
        len(m.text or "") + 50 * len(m.tool_calls) + 50 * len(m.responses) + 1 for m in messages
    )


def _merged_span(members: list[_Span], depth: dict[str, int]) -> _Span:
    """One span for the records of one call: the outermost record's place in the tree and
    times, and the union of the attributes with the richest record's first."""
    outer = min(members, key=lambda s: (depth[s.span_id], s.start_ns or 0))
    richest = max(members, key=_content_weight)
    attributes: dict[str, Any] = {}
    for member in [richest, *members]:
        for key, value in member.attributes.items():
            attributes.setdefault(key, value)
    failed = [m for m in members if m.status_error]
    return replace(
        outer,
        attributes=attributes,
        events=[ev for m in members for ev in m.events],
        status_error=bool(failed),
        status_message=next((m.status_message for m in failed if m.status_message), None),
    )


def _merge_layers(by_id: dict[str, _Span], ops: dict[str, str | None]) -> int:
    """Fold the spans that record one model call (or one tool execution) into one span.

    Stacked instrumentations (a framework's own spans plus OpenLLMetry, OpenInference or the
    official OpenAI instrumentation) each record every call. Spans of the same kind that
    overlap in time, nested in one another or side by side under one parent, are one call
    when their response ids agree, else when their content agrees, else (one of them
    recorded no content) when their models agree. The folded span's children move to it.

    Returns:
        the number of spans folded away.
    """
    kinds = {
        span_id: "llm" if op in _LLM_OPS else "tool"
        for span_id, op in ops.items()
        if op in _LLM_OPS or op == "execute_tool"
    }
    if len(kinds) < 2:
        return 0
    boss: dict[str, str] = {}  # union-find over span ids

    def find(span_id: str) -> str:
        while boss.get(span_id, span_id) != span_id:
            span_id = boss[span_id]
        return span_id

    siblings: dict[str | None, list[_Span]] = {}
    for span_id in kinds:
        span = by_id[span_id]
        parent = by_id.get(span.parent_id) if span.parent_id else None
        nested = parent is not None and kinds.get(parent.span_id) == kinds[span_id]
        if parent is not None and nested and _same_call(span, parent, kinds[span_id]):
            boss[find(span_id)] = find(parent.span_id)
        siblings.setdefault(span.parent_id, []).append(span)
    for group in siblings.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                kind = kinds[a.span_id]
                unjoined = kind == kinds[b.span_id] and find(a.span_id) != find(b.span_id)
                if unjoined and _same_call(a, b, kind):
                    boss[find(b.span_id)] = find(a.span_id)
    if not boss:
        return 0
    members: dict[str, list[_Span]] = {}
    for span_id in kinds:
        members.setdefault(find(span_id), []).append(by_id[span_id])
    depth: dict[str, int] = {}
    for span_id in kinds:
        node, n, seen = by_id[span_id], 0, {span_id}
        while node.parent_id in by_id and node.parent_id not in seen:
            seen.add(node.parent_id)
            node, n = by_id[node.parent_id], n + 1
        depth[span_id] = n
    moved: dict[str, str] = {}  # folded span id -> the span it became
    folded = 0
    for group in members.values():
        if len(group) < 2:
            continue
        merged = _merged_span(group, depth)
        for member in group:
            del by_id[member.span_id]
            if member.span_id != merged.span_id:
                moved[member.span_id] = merged.span_id
                del ops[member.span_id]
                folded += 1
        by_id[merged.span_id] = merged
    for span_id, span in list(by_id.items()):
        if span.parent_id in moved:
            by_id[span_id] = replace(span, parent_id=moved[span.parent_id])
    return folded


def _build_trace(
    spans: list[_Span], trace_id: str, task_id_attribute: str, notes: dict[str, Any]
) -> Trace:
    group = _Group(spans)
    unmapped: Counter[str] = Counter()
    steps = _StepBuilder(group, unmapped, notes).steps()
    root, top_agents = _root(group)

    first_input = next(
        (m.text for s in group.spans for m in _input_messages(s) if m.role == "user" and m.text),
        None,
    )
    tools: dict[str, ToolSpec] = {}
    for span in group.spans:
        for spec in _tool_specs(span):
            tools.setdefault(spec.name, spec)
    task_id = next(
        (
            str(s.attributes[key])
            for key in (task_id_attribute, "session.id")
            for s in [root, *group.spans]
            if s.attributes.get(key) not in (None, "")
        ),
        trace_id,
    )
    llm_usage = [s.usage for s in steps if s.kind is StepKind.llm and s.usage is not None]
    usage = (
        Usage(
            input_tokens=sum(u.input_tokens or 0 for u in llm_usage),
            output_tokens=sum(u.output_tokens or 0 for u in llm_usage),
        )
        if llm_usage
        else _usage(root.attributes)
    )
    starts = [s.start_ns for s in group.spans if s.start_ns is not None]
    ends = [s.end_ns for s in group.spans if s.end_ns is not None]
    models = Counter(
        m for s in group.spans if group.ops[s.span_id] in _LLM_OPS and (m := _model(s.attributes))
    )
    metadata: dict[str, Any] = {
        "source_format": Counter(s.source_format for s in spans).most_common(1)[0][0],
        "trace_ids": sorted({s.trace_id for s in group.spans}),
        "root_span": root.name,
        "root_span_id": root.span_id,
        "root_trace_id": root.trace_id,
        "span_count": len(group.spans) + group.merged,
        "scopes": sorted({s.scope for s in spans if s.scope}),
    }
    service = root.resource.get("service.name")
    if service is not None:
        metadata["service_name"] = service
    if models:
        metadata["models"] = dict(models)
    if unmapped:
        metadata["unmapped_spans"] = dict(unmapped)
    if group.duplicates:
        metadata["duplicate_spans"] = group.duplicates
    if group.merged:
        metadata["merged_spans"] = group.merged
    if not any(group.parent(s) is None and s.parent_id is None for s in group.spans):
        metadata["root_span_missing"] = True
    if any(s.status_error for s in group.spans):
        metadata["error_spans"] = sum(1 for s in group.spans if s.status_error)
    metadata.update(notes)
    return Trace(
        id=trace_id,
        task=Task(id=task_id, input=first_input, tools=list(tools.values())),
        output=_output(root, top_agents, steps),
        steps=steps,
        agent=_agent_name(top_agents[0]) if top_agents else None,
        params=_params(group),
        started_at=_datetime(min(starts)) if starts else None,
        ended_at=_datetime(max(ends)) if ends else None,
        duration_s=(max(ends) - min(starts)) / 1e9 if starts and ends else None,
        usage=usage,
        metadata=metadata,
    )


# --- the reader -------------------------------------------------------------------------------


def _log_events(
    doc: dict[str, Any], source: str, line: int
) -> tuple[list[_LogEvent], list[_BadField]]:
    """The GenAI events of an OTLP logs export, each with the span it belongs to."""
    events: list[_LogEvent] = []
    errors: list[_BadField] = []
    for i, rl in _objects(doc.get("resourceLogs"), "resourceLogs", errors):
        for j, sl in _objects(rl.get("scopeLogs"), f"resourceLogs[{i}].scopeLogs", errors):
            where_sl = f"resourceLogs[{i}].scopeLogs[{j}].logRecords"
            for k, rec in _objects(sl.get("logRecords"), where_sl, errors):
                where = f"{where_sl}[{k}]"
                try:
                    attrs = _attributes(rec.get("attributes"), f"{where}.attributes")
                    body = _any_value(rec.get("body"), f"{where}.body")
                except _BadField as exc:
                    errors.append(exc)
                    continue
                except _SHAPE_ERRORS as exc:
                    errors.append(_BadField(where, describe(exc)))
                    continue
                name = str(rec.get("eventName") or attrs.pop("event.name", "") or "")
                if not name.startswith("gen_ai."):
                    continue  # application logs: nothing an agent trace is made of
                trace_id, span_id = _hex_id(rec.get("traceId")), _hex_id(rec.get("spanId"))
                if trace_id is None or span_id is None:
                    missing = "traceId" if trace_id is None else "spanId"
                    errors.append(_BadField(f"{where}.{missing}", f"missing: {name} names no span"))
                    continue
                if isinstance(body, dict):
                    attrs.update(body)
                elif body is not None:
                    attrs.setdefault("content", body)
                events.append(_LogEvent(trace_id, span_id, source, line, _Event(name, attrs)))
    return events, errors


@dataclass
class _LogEvent:
    trace_id: str
    span_id: str
    source: str
    line: int
    event: _Event


def _attach(spans: list[_Span], logs: list[_LogEvent]) -> dict[str, Any]:
    """Put log events on their spans; returns notes for the trace's metadata.

    ``gen_ai.client.inference.operation.details`` carries span-attribute keys (messages,
    tool definitions), which fill the span's missing attributes; older events join the span's
    events.
    """
    by_id = {s.span_id: s for s in spans}
    unattached = 0
    for log in logs:
        span = by_id.get(log.span_id)
        if span is None:
            unattached += 1
        elif log.event.name == "gen_ai.client.inference.operation.details":
            for key, value in log.event.attributes.items():
                span.attributes.setdefault(key, value)
        else:
            span.events.append(log.event)
    notes: dict[str, Any] = {"log_records": len(logs)} if logs else {}
    if unattached:
        notes["unattached_log_records"] = unattached
    return notes


def _break_cycles(spans: list[_Span]) -> list[list[_Span]]:
    """Find the cycles in the spans' parent links and break each at its earliest span, which
    becomes a root; returns the cycles found (each in parent order)."""
    by_id = {s.span_id: s for s in spans}
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    cycles = []
    for span in spans:
        path: list[_Span] = []
        node: _Span | None = span
        while node is not None and state.get(node.span_id) is None:
            state[node.span_id] = 1
            path.append(node)
            node = by_id.get(node.parent_id) if node.parent_id else None
        if node is not None and state.get(node.span_id) == 1:
            cycle = path[next(i for i, s in enumerate(path) if s is node) :]
            cycles.append(cycle)
            first = min(cycle, key=lambda s: (s.start_ns or 0, s.line))
            first.parent_id = None
        for visited in path:
            state[visited.span_id] = 2
    return cycles


def _run_items(
    spans: list[_Span], notes: dict[str, Any], group_id: str, source: str, task_id_attribute: str
) -> Iterator[Trace | ReadError]:
    """A run's Trace, after a ReadError for each cycle in its parent links (broken to read
    it); a ReadError instead when the Trace is not valid."""
    for cycle in _break_cycles(spans):
        root = next(s for s in cycle if s.parent_id is None)
        chain = " -> ".join(s.span_id for s in [*cycle, cycle[0]])
        message = (
            f"the parent links of spans {chain} form a cycle; {root.span_id} is read as a root"
        )
        yield ReadError(source, root.line, "parentSpanId", message)
    try:
        yield _build_trace(spans, group_id, task_id_attribute, notes)
    except ValidationError as exc:
        line = min(s.line for s in spans)
        yield validation_read_error(source, line, exc, prefix=f"trace {group_id}")
    except _SHAPE_ERRORS as exc:
        yield ReadError(source, min(s.line for s in spans), f"trace {group_id}", describe(exc))


def _conversation_of(spans: list[_Span]) -> str | None:
    for span in spans:
        _, value = _first(span.attributes, *_CONVERSATION_KEYS)
        if value is not None:
            return str(value)
    return None


def _late(kind: str, trace_id: str) -> _BadField:
    return _BadField(
        "traceId",
        f"{kind} of trace {trace_id} came after the trace's root span and the trace was "
        "already imported without it",
    )


def _is_bare(spans: list[_Span]) -> bool:
    """Whether a trace is model calls without a span around them (an app that opens no span
    of its own): every span without a parent in the trace is a model call."""
    ids = {s.span_id for s in spans}
    tops = [s for s in spans if s.parent_id not in ids]
    return bool(tops) and all(_operation(s) in _LLM_OPS for s in tops)


@dataclass
class _Run:
    """The traces that make one run, while it may still grow."""

    group_id: str
    spans: list[_Span]
    notes: dict[str, Any]
    open_calls: set[str] = field(default_factory=set)


class _Runs:
    """Puts the traces of one run together.

    A trace with a span around its model calls is a run of its own. Bare model calls (one
    trace each) are grouped by their conversation id (``gen_ai.conversation.id``,
    ``session.id``, ``thread.id``) until the end of the file, else by message continuity: a
    call whose input answers tool calls an earlier call asked for continues that call's run,
    which is complete once its last call asks for no tool. With ``by_conversation``, every
    trace with a conversation id joins its conversation.
    """

    def __init__(self, by_conversation: bool) -> None:
        self._by_conversation = by_conversation
        self._held: dict[tuple[str, str], _Run] = {}

    def add(
        self, trace_id: str, spans: list[_Span], notes: dict[str, Any]
    ) -> Iterator[tuple[str, list[_Span], dict[str, Any]]]:
        """The runs this trace completes: itself, or one it continues."""
        bare = _is_bare(spans)
        conversation = _conversation_of(spans) if self._by_conversation or bare else None
        if conversation is not None:
            self._join(("conversation", conversation), trace_id, spans, notes)
            return
        if not bare:
            yield trace_id, spans, notes
            return
        answers = {call_id for s in spans for m in _input_messages(s) for call_id, _ in m.responses}
        asked = {c.id for s in spans for m in _output_messages(s) for c in m.tool_calls if c.id}
        key = next(
            (k for k, run in self._held.items() if k[0] == "calls" and run.open_calls & answers),
            ("calls", trace_id),
        )
        run = self._join(key, trace_id, spans, notes)
        run.open_calls = (run.open_calls - answers) | asked
        if not run.open_calls:
            del self._held[key]
            yield run.group_id, run.spans, run.notes

    def _join(
        self, key: tuple[str, str], trace_id: str, spans: list[_Span], notes: dict[str, Any]
    ) -> _Run:
        run = self._held.get(key)
        if run is None:
            run = self._held[key] = _Run(key[1] if key[0] == "conversation" else trace_id, [], {})
        run.spans += spans
        for note, n in notes.items():
            run.notes[note] = run.notes.get(note, 0) + n
        return run

    def rest(self) -> Iterator[tuple[str, list[_Span], dict[str, Any]]]:
        """The runs still held at the end of the file."""
        for run in self._held.values():
            yield run.group_id, run.spans, run.notes
        self._held.clear()


def _preload_logs(
    paths: Sequence[str | Path],
    stream: SpanStream,
    *,
    same_file: bool = False,
    binary: bool = False,
) -> Iterator[ReadError]:
    """Read the GenAI log records of OTLP logs exports. In the span file itself
    (``same_file``), only the documents that mention ``resourceLogs`` are parsed and what
    is not a logs export is left to the span pass."""
    for path in paths:
        needle = "resourceLogs" if same_file else None
        for item in _documents(path, needle, binary=binary and same_file):
            if isinstance(item, ReadError):
                if not same_file:
                    yield item
                continue
            line, doc = item
            if not isinstance(doc, dict) or "resourceLogs" not in doc:
                if not same_file:
                    message = "missing: not an OTLP logs export"
                    yield ReadError(str(path), line, "resourceLogs", message)
                continue
            yield from stream.add_logs(doc, line, str(path))


class SpanStream:
    """Agent runs assembled from span documents as they come: a file's, or the requests of a
    live receiver.

    A trace is complete when its root span (one without a parent) arrives (with
    ``group_by="trace"``), when it is closed (:meth:`close_idle`) or at the end
    (:meth:`finish`); complete traces become runs (:class:`_Runs`) and runs become Traces.

    Args:
        source: what the documents come from, for the errors (a file name, a URL).
        group_by: ``trace`` or ``conversation``.
        task_id_attribute: the span attribute that holds the task id.
        span_format: ``auto`` or the one format the documents are in.
        binary: the documents were OTLP protobuf (their format is named so).
    """

    def __init__(
        self,
        source: str,
        *,
        group_by: GroupBy = "trace",
        task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
        span_format: SpanFormat = "auto",
        binary: bool = False,
    ) -> None:
        if group_by not in ("trace", "conversation"):
            raise ValueError(f"group_by must be 'trace' or 'conversation', not {group_by!r}")
        if span_format not in SPAN_FORMATS:
            known = ", ".join(SPAN_FORMATS)
            raise ValueError(f"span_format must be one of {known}, not {span_format!r}")
        self.source = source
        self._group_by = group_by
        self._task_id_attribute = task_id_attribute
        self._span_format = span_format
        self._binary = binary
        self._logs: dict[str, list[_LogEvent]] = {}
        self._open: dict[str, list[_Span]] = {}
        self._touched: dict[str, float] = {}  # trace id -> when a span of it last came
        self._emitted: set[str] = set()
        self._runs = _Runs(by_conversation=group_by == "conversation")

    def add_logs(self, doc: Any, line: int, source: str | None = None) -> Iterator[ReadError]:
        """Keep the GenAI log records of an OTLP logs export for their spans.

        Args:
            doc: the ``{"resourceLogs": [...]}`` document.
            line: where it starts, for the errors.
            source: where it comes from, when not from this stream's source.
        """
        origin = source or self.source
        events, errors = _log_events(doc, origin, line)
        for ev in events:
            if ev.trace_id in self._emitted:
                errors.append(_late(f"log record {ev.event.name}", ev.trace_id))
            else:
                self._logs.setdefault(ev.trace_id, []).append(ev)
        if errors:
            yield _line_error(origin, line, errors)

    def add(
        self, doc: Any, line: int, now: float = 0.0, *, binary: bool | None = None
    ) -> Iterator[Trace | ReadError]:
        """Take the spans of one document; yields the runs it completes.

        Args:
            doc: an OTLP/JSON request, a span list, or a document of another span format.
            line: where it starts, for the errors.
            now: the time it arrived (for :meth:`close_idle`).
            binary: the document came as OTLP protobuf (default: as the stream was told).
        """
        protobuf = self._binary if binary is None else binary
        completed: list[str] = []
        doc, label, errors = _as_otlp(doc, self._span_format)
        spans: list[_Span] = []
        if doc is not None:
            spans, bad = _spans_of(doc, line)
            errors += bad
        for span in spans:
            span.source_format = "otlp-proto" if protobuf else label
            if span.trace_id in self._emitted:
                errors.append(_late(f"span {span.span_id}", span.trace_id))
                continue
            self._open.setdefault(span.trace_id, []).append(span)
            self._touched[span.trace_id] = now
            if self._group_by == "trace" and span.parent_id is None:
                completed.append(span.trace_id)
        if errors:
            yield _line_error(self.source, line, errors)
        for trace_id in dict.fromkeys(completed):
            yield from self._close(trace_id)

    def close_idle(self, before: float) -> Iterator[Trace | ReadError]:
        """Close the traces no span of which came since ``before`` (their root never came).

        Args:
            before: a time on the clock given to :meth:`add`.
        """
        for trace_id in [t for t, when in self._touched.items() if when < before]:
            yield from self._close(trace_id)

    def finish(self) -> Iterator[Trace | ReadError]:
        """Close everything still open: the traces, the runs waiting for more, and the log
        records that matched no span."""
        for trace_id in list(self._open):
            yield from self._close(trace_id)
        for group_id, spans, notes in self._runs.rest():
            yield from _run_items(spans, notes, group_id, self.source, self._task_id_attribute)
        for trace_id, logs in self._logs.items():
            # records from other files may belong to spans elsewhere: only this source's count
            orphans = [ev for ev in logs if ev.source == self.source]
            if orphans:
                yield ReadError(
                    self.source,
                    orphans[0].line,
                    "traceId",
                    f"{len(orphans)} GenAI log records of trace {trace_id} match no span",
                )
        self._logs.clear()

    def _close(self, trace_id: str) -> Iterator[Trace | ReadError]:
        self._emitted.add(trace_id)
        self._touched.pop(trace_id, None)
        spans = self._open.pop(trace_id)
        notes = _attach(spans, self._logs.pop(trace_id, []))
        for group_id, run_spans, run_notes in self._runs.add(trace_id, spans, notes):
            yield from _run_items(
                run_spans, run_notes, group_id, self.source, self._task_id_attribute
            )


@importer(
    "otel",
    description="OpenTelemetry GenAI / OpenInference spans in any span format, told by content",
)
def read_otel(
    path: str | Path,
    *,
    group_by: GroupBy = "trace",
    task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
    log_files: Sequence[str | Path] = (),
    span_format: SpanFormat = "auto",
) -> Iterator[Trace | ReadError]:
    """Stream the agent runs of a span file as Traces.

    Args:
        path: the file, gzip-compressed or not: one OTLP/JSON ``ExportTraceServiceRequest`` per
            line (the Collector's file exporter), one or several concatenated JSON documents
            (a whole OTLP/HTTP request, a Tempo ``batches`` export, a Jaeger query-API
            export), a JSON list of spans as the SDKs' console exporters print them, or an OTLP
            protobuf request. OTLP logs exports (``resourceLogs``) in the same file are read
            too: their GenAI events join the spans they name.
        group_by: ``trace`` (one Trace per trace id, emitted once its root span is read) or
            ``conversation`` (one Trace per ``gen_ai.conversation.id`` / ``session.id``, traces
            without one stand alone; holds the file's spans until its end).
        task_id_attribute: the span attribute that holds the task id (searched on the root span
            first, then on every span; ``session.id`` is the fallback); the trace id otherwise.
        log_files: OTLP logs exports written to other files (read first, held in memory).
        span_format: ``auto`` tells the formats apart by their content; ``otlp-json``,
            ``otlp-proto``, ``jaeger``, ``tempo``, ``openai-agents``, ``langsmith`` or
            ``langfuse`` reads the file as that format only.
    """
    binary = span_format == "otlp-proto" or (span_format == "auto" and _binary(path))
    stream = SpanStream(
        str(path),
        group_by=group_by,
        task_id_attribute=task_id_attribute,
        span_format=span_format,
        binary=binary,
    )
    yield from _preload_logs(log_files, stream)
    # log records are exported apart from the spans, often after them: read them first
    yield from _preload_logs([path], stream, same_file=True, binary=binary)
    for item in _documents(path, binary=binary):
        if isinstance(item, ReadError):
            yield item
        elif not (isinstance(item[1], dict) and "resourceLogs" in item[1]):  # logs: read first
            yield from stream.add(item[1], item[0])
    yield from stream.finish()


_SPAN_IMPORTERS: dict[SpanFormat, str] = {
    "otlp-json": "OTLP/JSON spans only (file-exporter lines, whole requests, SDK span lists)",
    "otlp-proto": "an OTLP protobuf request (the otel extra)",
    "jaeger": "Jaeger's query-API JSON",
    "tempo": "Tempo's trace API JSON (batches of resource spans)",
    "openai-agents": "the OpenAI Agents SDK's own trace export",
    "langsmith": "LangSmith run trees and run lists",
    "langfuse": "Langfuse trace exports (traces with their observations)",
}
"""The importers of one span format each (``otel`` tells them all apart)."""


def _span_importer(span_format: SpanFormat) -> Callable[..., Iterator[Trace | ReadError]]:
    """The reader of one span format: :func:`read_otel` told the format."""

    def read(
        path: str | Path,
        *,
        group_by: GroupBy = "trace",
        task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
        log_files: Sequence[str | Path] = (),
    ) -> Iterator[Trace | ReadError]:
        return read_otel(
            path,
            group_by=group_by,
            task_id_attribute=task_id_attribute,
            log_files=log_files,
            span_format=span_format,
        )

    read.__doc__ = f"Stream the agent runs of {_SPAN_IMPORTERS[span_format]} as Traces."
    return read


for _format, _description in _SPAN_IMPORTERS.items():
    importer(_format, description=_description)(_span_importer(_format))
