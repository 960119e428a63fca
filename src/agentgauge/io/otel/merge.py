"""One model call (or tool execution) recorded by several instrumentations is one record.

Stacked instrumentations (a framework's own spans plus OpenLLMetry, OpenInference or the
official OpenAI instrumentation) each record every call. Observations of the same kind that
overlap in time, nested in one another or side by side under one parent, are one call when
their response ids agree, else when their content agrees, else (one of them recorded no
content) when their models agree. Their spans are folded into one: the outermost record's
place in the tree and times, the union of the attributes with the richest record's first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from agentgauge.io.otel.conventions import observe
from agentgauge.io.otel.observation import Kind, Observation

__all__ = ["assistant_text", "merge_layers"]


def assistant_text(messages: list[Any]) -> str | None:
    """The last assistant (or model) message's text.

    Args:
        messages: :class:`~agentgauge.io.otel.observation.Message` items.
    """
    texts = [m.text for m in messages if m.role in ("assistant", "model") and m.text]
    return texts[-1] if texts else None


def _fingerprint(obs: Observation, kind: Kind) -> tuple[Any, ...] | None:
    """What two records of one call agree on, when they recorded content: for a model call
    the number of input messages and the answer (text and requested call ids), for a tool
    its call id or its name and arguments. None when the span recorded no content."""
    if kind is Kind.tool:
        if obs.tool_call_id is not None:
            return ("id", obs.tool_call_id)
        arguments = json.dumps(obs.arguments, sort_keys=True)
        return ("args", obs.tool, arguments, str(obs.raw_arguments))
    inputs, outputs = obs.input_messages, obs.output_messages
    if not inputs and not outputs:
        return None
    calls = tuple(c.id or c.name for m in outputs for c in m.tool_calls)
    return (len(inputs), assistant_text(outputs), calls)


def _same_call(a: Observation, b: Observation, kind: Kind) -> bool:
    """Whether two overlapping records, nested or side by side, record the same call."""
    sa, sb = a.span, b.span
    if sa.start_ns is None or sb.start_ns is None or sa.end_ns is None or sb.end_ns is None:
        return False
    if sa.start_ns > sb.end_ns or sb.start_ns > sa.end_ns:
        return False
    if kind is Kind.model_call:
        if a.response_id is not None and b.response_id is not None:
            return a.response_id == b.response_id
    elif a.tool != b.tool:
        return False
    prints = _fingerprint(a, kind), _fingerprint(b, kind)
    if prints[0] is not None and prints[1] is not None:
        return prints[0] == prints[1]
    if kind is Kind.model_call:
        # one side has no content (an instrumentation that leaves it out): the same model
        models = sorted((a.model or "", b.model or ""), key=len)
        return models[1].startswith(models[0])
    return True


def _content_weight(obs: Observation) -> int:
    """How much of a call a record holds: its messages' text, tool calls and results."""
    messages = [*obs.input_messages, *obs.output_messages]
    return sum(
        len(m.text or "") + 50 * len(m.tool_calls) + 50 * len(m.responses) + 1 for m in messages
    )


def _merged(members: list[Observation], depth: dict[str, int]) -> Observation:
    """One observation for the records of one call."""
    outer = min(members, key=lambda o: (depth[o.span.span_id], o.span.start_ns or 0))
    richest = max(members, key=_content_weight)
    attributes: dict[str, Any] = {}
    for member in [richest, *members]:
        for key, value in member.span.attributes.items():
            attributes.setdefault(key, value)
    failed = [m.span for m in members if m.span.status_error]
    span = replace(
        outer.span,
        attributes=attributes,
        events=[ev for m in members for ev in m.span.events],
        status_error=bool(failed),
        status_message=next((s.status_message for s in failed if s.status_message), None),
    )
    return observe(span)


def span_depths(by_id: dict[str, Observation], wanted: Iterable[str]) -> dict[str, int]:
    """How many ancestors each wanted span has in ``by_id``, each span walked once (a parent
    cycle counts from where it closes): a chain of spans costs its length, not its square.

    Args:
        by_id: observations by span id.
        wanted: the span ids whose depth is needed.
    """
    depth: dict[str, int] = {}
    for start in wanted:
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = start
        while node is not None and node in by_id and node not in depth and node not in on_path:
            path.append(node)
            on_path.add(node)
            node = by_id[node].span.parent_id
        base = depth[node] + 1 if node is not None and node in depth else 0
        for n, span_id in enumerate(reversed(path)):
            depth[span_id] = base + n
    return depth


def merge_layers(by_id: dict[str, Observation], ops: dict[str, str | None]) -> int:
    """Fold the records of one call into one observation, in place: ``by_id`` keeps the
    merged one under the outermost record's span id, and the children of a folded record
    move to it.

    Args:
        by_id: the observations of one run by span id.
        ops: their operations by span id (folded records are removed).

    Returns:
        the number of records folded away.
    """
    kinds = {
        span_id: by_id[span_id].kind
        for span_id in ops
        if by_id[span_id].kind in (Kind.model_call, Kind.tool)
    }
    if len(kinds) < 2:
        return 0
    boss: dict[str, str] = {}  # union-find over span ids

    def find(span_id: str) -> str:
        root = span_id
        while boss.get(root, root) != root:
            root = boss[root]
        while span_id != root:  # path compression: the next find is one step
            boss[span_id], span_id = root, boss[span_id]
        return root

    siblings: dict[str | None, list[Observation]] = {}
    for span_id, kind in kinds.items():
        obs = by_id[span_id]
        parent_id = obs.span.parent_id
        parent = by_id.get(parent_id) if parent_id else None
        nested = parent is not None and kinds.get(parent.span.span_id) is kind
        if parent is not None and nested and kind is not None and _same_call(obs, parent, kind):
            boss[find(span_id)] = find(parent.span.span_id)
        siblings.setdefault(parent_id, []).append(obs)
    for group in siblings.values():
        # only records that overlap in time can be one call: by start, each is compared with
        # the ones that start before it ends (thousands of sequential calls cost a sort)
        timed = sorted(
            (o for o in group if o.span.start_ns is not None and o.span.end_ns is not None),
            key=lambda o: o.span.start_ns or 0,
        )
        for i, a in enumerate(timed):
            for b in timed[i + 1 :]:
                if (b.span.start_ns or 0) > (a.span.end_ns or 0):
                    break
                kind = kinds[a.span.span_id]
                unjoined = kind is kinds[b.span.span_id] and find(a.span.span_id) != find(
                    b.span.span_id
                )
                if unjoined and kind is not None and _same_call(a, b, kind):
                    boss[find(b.span.span_id)] = find(a.span.span_id)
    if not boss:
        return 0
    members: dict[str, list[Observation]] = {}
    for span_id in kinds:
        members.setdefault(find(span_id), []).append(by_id[span_id])
    depth = span_depths(by_id, kinds)
    moved: dict[str, str] = {}  # folded span id -> the span it became
    folded = 0
    for group in members.values():
        if len(group) < 2:
            continue
        merged = _merged(group, depth)
        for member in group:
            del by_id[member.span.span_id]
            if member.span.span_id != merged.span.span_id:
                moved[member.span.span_id] = merged.span.span_id
                del ops[member.span.span_id]
                folded += 1
        by_id[merged.span.span_id] = merged
    for span_id, obs in list(by_id.items()):
        if obs.span.parent_id in moved:
            by_id[span_id] = observe(replace(obs.span, parent_id=moved[obs.span.parent_id]))
    return folded
