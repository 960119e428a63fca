"""Langfuse trace exports: a trace with its ``observations`` (``GET /api/public/traces/{id}``,
the UI's JSON download), a list of such traces or a ``{"data": [...]}`` page of them
(``GET /api/public/traces``), and observations on their own (``GET /api/public/observations``),
which join their trace by ``traceId`` when both are in the same document. A trace listed
without its observations (the traces list gives their ids only) makes no span.

Each observation becomes a span carrying Langfuse's observation attributes, which the span
reader reads as it reads the Langfuse SDK's own spans:

- ``GENERATION`` -> ``chat``: ``model``, the messages and tools of ``input`` (a message list or
  an object with ``messages`` and ``tools``), the ``output`` message, ``usageDetails`` (else
  the older ``usage``) ``input`` / ``output``;
- ``TOOL`` -> ``execute_tool`` named ``name``: ``input`` are the arguments, ``output`` the
  result;
- ``AGENT`` -> ``invoke_agent`` named ``name``;
- ``level: ERROR`` -> the step's error, with ``statusMessage``;
- ``SPAN``, ``EVENT``, ``CHAIN``, ``RETRIEVER``, ``EMBEDDING``, ``EVALUATOR`` and ``GUARDRAIL``
  observations make no step.
The trace itself is the root span, with its ``sessionId`` as ``session.id``; an observation
without ``parentObservationId`` is its child. UUID ids lose their dashes.
"""

from __future__ import annotations

import json
from typing import Any

from agentgauge._safe import DECODE_ERRORS

__all__ = ["is_langfuse", "langfuse_spans"]

_OBSERVATION_TYPES = frozenset(
    {
        "GENERATION",
        "SPAN",
        "EVENT",
        "AGENT",
        "TOOL",
        "CHAIN",
        "RETRIEVER",
        "EMBEDDING",
        "EVALUATOR",
        "GUARDRAIL",
    }
)


def _is_observation(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in _OBSERVATION_TYPES and "startTime" in item


def _is_trace(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "id" in item
        and "timestamp" in item
        and isinstance(item.get("observations"), list)
    )


def _items(doc: Any) -> list[tuple[str, Any]] | None:
    """The traces and observations of a document, each with where it is (``data[2].``), or
    None when the document is not a Langfuse export."""
    if isinstance(doc, dict) and isinstance(doc.get("trace"), dict):
        # the trace page's download: the trace, its observations beside it
        observations = doc.get("observations")
        if not isinstance(observations, list):
            observations = doc["trace"].get("observations")
        items = [("trace.", {**doc["trace"], "observations": observations})]
    elif isinstance(doc, dict) and isinstance(doc.get("observations"), list) and "id" not in doc:
        # the server-side download: the observations (and the scores) of one trace
        items = [(f"observations[{i}].", item) for i, item in enumerate(doc["observations"])]
    elif isinstance(doc, dict) and isinstance(doc.get("data"), list):
        items = [(f"data[{i}].", item) for i, item in enumerate(doc["data"])]
    elif isinstance(doc, list):
        items = [(f"[{i}].", item) for i, item in enumerate(doc)]
    else:
        items = [("", doc)]
    # one odd item (reported) does not make the rest another format
    if any(_is_trace(i) or _is_observation(i) for _, i in items):
        return items
    return None


def is_langfuse(doc: Any) -> bool:
    """Whether a JSON document is a Langfuse trace, a list or ``{"data": [...]}`` page of
    traces, or of observations.

    Args:
        doc: the parsed document.
    """
    return _items(doc) is not None


def _id(value: Any) -> str | None:
    """An id's hex digits (a UUID without its dashes); None when it is not a string."""
    return (value.replace("-", "") or None) if isinstance(value, str) else None


def _recorded(metadata: Any, prefix: str) -> dict[str, Any]:
    """What Langfuse's OTel ingestion kept of a span in the observation's metadata: the
    span's attributes (``attributes``) or its resource's (``resourceAttributes``), nested or
    flattened (``attributes.gen_ai.tool.name``)."""
    if not isinstance(metadata, dict):
        return {}
    nested = metadata.get(prefix)
    found = dict(nested) if isinstance(nested, dict) else {}
    dotted = prefix + "."
    found.update({k[len(dotted) :]: v for k, v in metadata.items() if k.startswith(dotted)})
    return found


def _usage(obs: dict[str, Any]) -> Any:
    """The usage the application reported: ``providedUsageDetails`` where the export has it
    (``usageDetails`` then adds Langfuse's own token estimates), else ``usageDetails``, else
    the older ``usage``."""
    if "providedUsageDetails" in obs:
        return obs["providedUsageDetails"] or None
    return obs.get("usageDetails") or obs.get("usage")


def _observation_span(obs: dict[str, Any], root: str | None) -> dict[str, Any]:
    """One observation as a span, with the attributes of the span it was made from where the
    export keeps them; ``root`` is its trace's span id (None: its trace is absent)."""
    kind = str(obs.get("type")).lower()
    usage = _usage(obs)
    metadata = obs.get("metadata")
    if isinstance(metadata, str):
        metadata = _json(metadata)
    attrs = {
        "langfuse.observation.type": kind,
        "langfuse.observation.input": obs.get("input"),
        "langfuse.observation.output": obs.get("output"),
        "langfuse.observation.model.name": obs.get("model"),
        "langfuse.observation.usage_details": usage if kind == "generation" else None,
        "langfuse.observation.level": obs.get("level"),
        "langfuse.observation.status_message": obs.get("statusMessage"),
        "session.id": obs.get("sessionId"),
    }
    scope = metadata.get("scope.name") if isinstance(metadata, dict) else None
    return {
        "traceId": _id(obs.get("traceId")) or root,
        "spanId": _id(obs.get("id")),
        "parentSpanId": _id(obs.get("parentObservationId")) or root,
        "name": str(obs.get("name") or kind),
        "start_time": obs.get("startTime"),
        "end_time": obs.get("endTime"),
        "attributes": {
            **_recorded(metadata, "attributes"),
            **{k: v for k, v in attrs.items() if v is not None},
        },
        "resource": {"attributes": _recorded(metadata, "resourceAttributes")},
        "scope": scope if isinstance(scope, str) else None,
    }


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except DECODE_ERRORS:
        return None


def _trace_span(trace: dict[str, Any]) -> dict[str, Any]:
    attrs = {
        "session.id": trace.get("sessionId"),
        "user.id": trace.get("userId"),
        "langfuse.trace.input": trace.get("input"),
        "langfuse.trace.output": trace.get("output"),
    }
    return {
        "traceId": _id(trace.get("id")),
        "spanId": _id(trace.get("id")),
        "name": str(trace.get("name") or "trace"),
        "start_time": trace.get("timestamp"),
        "attributes": {k: v for k, v in attrs.items() if v is not None},
    }


def langfuse_spans(doc: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The traces and observations of a Langfuse export as flattened spans, and the field and
    reason of each one left out (a trace or an observation without its id or its trace's).

    Args:
        doc: a document :func:`is_langfuse` accepts.
    """
    items = _items(doc) or []
    spans: list[dict[str, Any]] = []
    problems: list[tuple[str, str]] = []

    def observation(where: str, obs: dict[str, Any], root: str | None) -> None:
        if _id(obs.get("id")) is None:
            problems.append((f"{where}id", "missing: every observation needs its id"))
        elif _id(obs.get("traceId")) is None and root is None:
            problems.append((f"{where}traceId", "missing: every observation needs its trace id"))
        else:
            spans.append(_observation_span(obs, root))

    joined = {_id(i.get("traceId")) for _, i in items if _is_observation(i)}
    known: set[str] = set()
    for where, trace in items:
        if not _is_trace(trace):
            continue
        root = _id(trace.get("id"))
        if root is None:
            problems.append((f"{where}id", "missing: every trace needs its id"))
            continue
        # the traces list gives the observations' ids only: without them in this document the
        # trace is left out, so that observations exported apart make a run of their own
        embedded = [(i, o) for i, o in enumerate(trace["observations"]) if isinstance(o, dict)]
        if not embedded and root not in joined:
            continue
        known.add(root)
        spans.append(_trace_span(trace))
        for i, obs in embedded:
            observation(f"{where}observations[{i}].", obs, root)
    for where, item in items:
        if _is_observation(item):
            trace_id = _id(item.get("traceId"))
            # joins its trace when the document has it; else its root observation is the root
            observation(where, item, trace_id if trace_id in known else None)
        elif not _is_trace(item):
            message = "expected a trace (id, timestamp, observations) or an observation"
            problems.append((where.rstrip("."), message))
    return spans, problems
