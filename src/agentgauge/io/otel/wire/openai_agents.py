"""The OpenAI Agents SDK's own trace export: its traces and spans as their ``export()`` gives
them, one JSON object per line (a tracing processor writing them out) or in a ``{"data":
[...]}`` batch (the SDK's backend exporter payload).

Each span becomes a span of the GenAI conventions, and the span reader does the rest:

- ``agent`` -> ``invoke_agent`` named ``name``;
- ``generation`` -> ``chat``: ``model``, ``input`` / ``output`` messages, ``usage`` (all
  zeros is none: the SDK writes its empty ``Usage`` when the provider reported none, as a
  Chat Completions stream does unless asked for its usage);
- ``response`` -> ``chat`` with its ``response_id`` and ``usage`` when the export has it;
- ``function`` -> ``execute_tool``: ``name``, ``input`` (the arguments), ``output``;
- ``handoff`` -> a handoff from ``from_agent`` to ``to_agent``;
- an ``error`` -> the span's status, its message with the error's ``data``;
- other types (``custom`` turns and tasks, ``guardrail``, ``mcp_tools``, audio) make no step.
The trace objects themselves carry no step; their ``group_id`` is not in the spans' export.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["is_openai_agents", "openai_agents_spans"]

_OBJECTS = ("trace", "trace.span")


def is_openai_agents(doc: Any) -> bool:
    """Whether a JSON document is an Agents SDK export item or a ``{"data": [...]}`` batch.

    Args:
        doc: the parsed document.
    """
    if isinstance(doc, dict) and isinstance(doc.get("data"), list):
        return bool(doc["data"]) and all(is_openai_agents(item) for item in doc["data"])
    return isinstance(doc, dict) and doc.get("object") in _OBJECTS


def _attributes(data: dict[str, Any]) -> dict[str, Any]:
    """The GenAI attributes of one span's ``span_data``."""
    kind = data.get("type")
    if kind == "agent":
        return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": data.get("name")}
    if kind in ("generation", "response"):
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        if not usage.get("input_tokens") and not usage.get("output_tokens"):
            usage = {}
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": data.get("model"),
            "gen_ai.response.id": data.get("response_id"),
            "gen_ai.input.messages": data.get("input"),
            "gen_ai.output.messages": data.get("output"),
            "gen_ai.usage.input_tokens": usage.get("input_tokens"),
            "gen_ai.usage.output_tokens": usage.get("output_tokens"),
        }
        return {k: v for k, v in attrs.items() if v is not None}
    if kind == "function":
        return {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": data.get("name"),
            "gen_ai.tool.call.arguments": data.get("input"),
            "gen_ai.tool.call.result": data.get("output"),
        }
    if kind == "handoff":
        return {
            "gen_ai.operation.name": "handoff",
            "input.value": data.get("from_agent"),
            "output.value": data.get("to_agent"),
        }
    return {}


def _span(item: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = item["span_data"] if isinstance(item.get("span_data"), dict) else {}
    kind = str(data.get("type", ""))
    name = data.get("name") if kind in ("custom", "agent", "function") else None
    if kind == "handoff":
        name = f"handoff to {data.get('to_agent')}"
    error = item.get("error")
    status: dict[str, Any] = {}
    if isinstance(error, dict):
        details = error.get("data")
        message = str(error.get("message") or "error")
        status = {"code": 2, "message": f"{message}: {json.dumps(details)}" if details else message}
    return {
        "traceId": item.get("trace_id"),
        "spanId": item.get("id"),
        "parentSpanId": item.get("parent_id"),
        "name": str(name or kind),
        "start_time": item.get("started_at"),
        "end_time": item.get("ended_at"),
        "attributes": _attributes(data),
        "status": status,
    }


def openai_agents_spans(doc: Any) -> list[dict[str, Any]]:
    """The spans of an export item or batch as flattened GenAI spans (trace items give none).

    Args:
        doc: an item (see :func:`is_openai_agents`) or a ``{"data": [...]}`` batch.
    """
    items = doc["data"] if isinstance(doc.get("data"), list) else [doc]
    return [_span(item) for item in items if item.get("object") == "trace.span"]
