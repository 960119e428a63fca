"""Online scoring of live traffic: which traces the receiver scores, what their recent scores
say, and the gates that fire when quality drops.

- :class:`Selection` keeps a trace when it passes the filters (service, agent name, span
  attribute) and its sample: a trace is sampled by its trace id as OpenTelemetry's
  ``TraceIdRatioBased`` sampler decides (the id's lower 64 bits below ``rate`` × 2^64), so
  that a trace the app sampled at the same rate is the one scored here, and a trace's spans
  arriving in many requests get one decision.
- :class:`RollingWindow` holds each metric's values over the last ``size`` scored traces and
  summarises them (mean, 95% interval, counts).
- :class:`Gate` is a floor on a metric's rolling mean (``composite`` included); it fires when
  the mean falls below it with at least ``min_n`` values in the window, once until the mean
  comes back above it.
- :class:`Monitor` ties them to a live run: it counts what arrives, updates the window as
  samples are written, fires the gates (a log line, an optional webhook, a record in the
  store) and keeps the latest summary in the store for the viewer.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentgauge.io.otel.wire.span import hex_id
from agentgauge.model import Trace
from agentgauge.stats import summarize
from agentgauge.store import PreparedBatch, Store

__all__ = [
    "GATE_STREAM",
    "WINDOW_STREAM",
    "Gate",
    "Monitor",
    "RollingWindow",
    "Selection",
    "attribute_matches",
    "parse_attribute",
    "parse_gate",
]

WINDOW_STREAM = "window"
"""The records stream of a live run that holds its rolling-window summaries."""

GATE_STREAM = "gates"
"""The records stream of a live run that holds the gates that fired."""

_ID_BITS = 1 << 64


def parse_attribute(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as a pair.

    Raises:
        ValueError: without ``=`` or without a key.
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"an attribute filter is KEY=VALUE, not {text!r}")
    return key.strip(), value


def parse_gate(text: str) -> Gate:
    """``METRIC=FLOOR`` (or ``METRIC<FLOOR``) as a :class:`Gate`.

    Raises:
        ValueError: a text of another shape, or a floor that is not a number in [0, 1].
    """
    for sep in ("<", "="):
        metric, found, floor = text.partition(sep)
        if found:
            break
    try:
        value = float(floor)
    except ValueError:
        value = math.nan
    if not found or not metric.strip() or not 0.0 <= value <= 1.0:
        raise ValueError(f"a gate is METRIC=FLOOR with a floor in [0, 1], not {text!r}")
    return Gate(metric.strip(), value)


def _value_text(value: Mapping[str, Any]) -> str | None:
    """An OTLP/JSON ``AnyValue`` as the text a filter compares with."""
    for kind in ("stringValue", "intValue", "doubleValue"):
        if kind in value:
            return str(value[kind])
    if "boolValue" in value:
        return "true" if value["boolValue"] else "false"
    return None


def attribute_matches(doc: Any, attributes: Sequence[tuple[str, str]]) -> Iterable[tuple[str, int]]:
    """The (trace id, filter index) pairs of an OTLP/JSON traces request: a span of the trace,
    or its resource, has the filter's attribute with its value.

    Args:
        doc: an ``ExportTraceServiceRequest`` as OTLP/JSON (the receiver's protobuf decoded so).
        attributes: the filters, ``(key, value)``.
    """
    if not isinstance(doc, dict):
        return
    wanted: dict[str, list[tuple[int, str]]] = {}
    for k, (key, value) in enumerate(attributes):
        wanted.setdefault(key, []).append((k, value))

    def hits(attrs: Any) -> set[int]:
        found: set[int] = set()
        for attr in attrs if isinstance(attrs, list) else []:
            if not isinstance(attr, dict) or attr.get("key") not in wanted:
                continue
            text = _value_text(attr.get("value") or {})
            found.update(k for k, value in wanted[attr["key"]] if value == text)
        return found

    for resource_spans in doc.get("resourceSpans") or []:
        if not isinstance(resource_spans, dict):
            continue
        from_resource = hits((resource_spans.get("resource") or {}).get("attributes"))
        for scope in resource_spans.get("scopeSpans") or []:
            for span in (scope or {}).get("spans") or [] if isinstance(scope, dict) else []:
                trace_id = hex_id(span.get("traceId")) if isinstance(span, dict) else None
                if trace_id is not None:
                    for k in from_resource | hits(span.get("attributes")):
                        yield trace_id.lower(), k


@dataclass(frozen=True)
class Selection:
    """Which closed traces a live run scores.

    Args:
        sample: the share of traces scored, in (0, 1].
        services: keep traces of these services only (``service.name``); empty keeps all.
        agents: keep traces in which one of these agents ran; empty keeps all.
        attributes: keep traces with each of these span (or resource) attributes.
    """

    sample: float = 1.0
    services: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()

    def sampled(self, trace_id: str) -> bool:
        """Whether a trace id falls in the sample: its lower 64 bits (a 32-digit hex OTel trace
        id) or a digest of it (another id) below ``sample`` × 2^64."""
        if self.sample >= 1.0:
            return True
        text = trace_id.lower()
        if len(text) == 32 and all(c in "0123456789abcdef" for c in text):
            low = int(text[16:], 16)
        else:
            low = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16], 16)
        return low < round(self.sample * _ID_BITS)

    def passes(self, trace: Trace, matched: set[int]) -> bool:
        """Whether a trace passes the filters; ``matched`` holds the attribute filters that
        its spans met."""
        if self.services and trace.metadata.get("service_name") not in self.services:
            return False
        if self.agents:
            ran = {trace.agent, *(step.agent for step in trace.steps)}
            if not ran & set(self.agents):
                return False
        return len(matched) == len(self.attributes)


@dataclass(frozen=True)
class Gate:
    """A floor on a metric's rolling mean.

    Args:
        metric: a metric of the suite, or ``composite``.
        floor: the lowest rolling mean that passes.
    """

    metric: str
    floor: float


class RollingWindow:
    """Each metric's values (and the composite's) over the last ``size`` scored traces.

    Args:
        size: how many traces the window holds.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: dict[str, deque[float | None]] = {}
        self.seen = 0

    def add(self, values: Mapping[str, float | None]) -> None:
        """Add one scored trace's values (``composite`` among them)."""
        self.seen += 1
        for name, value in values.items():
            kept = self._values.setdefault(name, deque(maxlen=self.size))
            kept.append(value)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per metric: mean, 95% interval and counts over the window."""
        return {name: summarize(list(values)).as_dict() for name, values in self._values.items()}

    def mean(self, metric: str) -> tuple[float | None, int]:
        """A metric's mean over the window and how many values it has."""
        values = [v for v in self._values.get(metric, ()) if v is not None]
        return (math.fsum(values) / len(values) if values else None), len(values)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class _Counts:
    received: int = 0
    not_sampled: int = 0
    filtered_out: int = 0
    scored: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Monitor:
    """What a live run reports as it goes: the counts of received, sampled and filtered
    traces, the rolling window, and the gates.

    Args:
        selection: which traces are scored.
        window: the size of the rolling window.
        gates: the floors on rolling means.
        min_n: the values a metric's window needs before its gate can fire.
        webhook: a URL told of each gate that fires (a JSON POST).
        log: where a line goes when a gate fires (and when the webhook cannot be told).
        snapshot_every_s: how often the summary is written to the store at most.
    """

    selection: Selection = field(default_factory=Selection)
    window: int = 100
    gates: tuple[Gate, ...] = ()
    min_n: int = 20
    webhook: str | None = None
    log: Callable[[str], None] = print
    snapshot_every_s: float = 1.0

    def __post_init__(self) -> None:
        self.counts = _Counts()
        self._window = RollingWindow(self.window)
        self._lock = threading.Lock()
        self._below: set[str] = set()
        self.fired: list[dict[str, Any]] = []
        self._matched: dict[str, set[int]] = {}
        self._written = 0.0

    # selection --------------------------------------------------------------------------

    def watch(self, doc: Any) -> None:
        """Note which attribute filters the spans of a traces request meet (before its traces
        close).

        Args:
            doc: the OTLP/JSON request.
        """
        if not self.selection.attributes:
            return
        with self._lock:
            for trace_id, k in attribute_matches(doc, self.selection.attributes):
                self._matched.setdefault(trace_id, set()).add(k)

    def screen(self, doc: Any) -> Any:
        """A traces request without the spans of the traces outside the sample: they are never
        assembled nor stored, and each is counted (received, not in the sample) when its root
        span arrives. What is not a span with a trace id is left for the reader to report.

        Args:
            doc: the OTLP/JSON request.
        """
        if self.selection.sample >= 1.0 or not isinstance(doc, dict):
            return doc
        dropped = 0
        resources = []
        for resource_spans in doc.get("resourceSpans") or []:
            if not isinstance(resource_spans, dict) or not isinstance(
                resource_spans.get("scopeSpans"), list
            ):
                resources.append(resource_spans)
                continue
            scopes = []
            for scope in resource_spans["scopeSpans"]:
                if not isinstance(scope, dict) or not isinstance(scope.get("spans"), list):
                    scopes.append(scope)
                    continue
                kept = []
                for span in scope["spans"]:
                    trace_id = hex_id(span.get("traceId")) if isinstance(span, dict) else None
                    if trace_id is None or self.selection.sampled(trace_id):
                        kept.append(span)
                    elif not span.get("parentSpanId"):
                        dropped += 1
                if kept:
                    scopes.append({**scope, "spans": kept})
            if scopes:
                resources.append({**resource_spans, "scopeSpans": scopes})
        with self._lock:
            self.counts.received += dropped
            self.counts.not_sampled += dropped
        return {**doc, "resourceSpans": resources}

    def keep(self, trace: Trace) -> bool:
        """Whether a closed trace is scored (counted either way).

        Args:
            trace: the trace, as the receiver assembled it.
        """
        listed = trace.metadata.get("trace_ids")
        ids = {str(t).lower() for t in (listed if isinstance(listed, list) else [trace.id])}
        with self._lock:
            matched: set[int] = set()
            for trace_id in ids:
                matched |= self._matched.pop(trace_id, set())
            self.counts.received += 1
            root = str(trace.metadata.get("root_trace_id") or trace.id)
            if not self.selection.sampled(root):
                self.counts.not_sampled += 1
                return False
            if not self.selection.passes(trace, matched):
                self.counts.filtered_out += 1
                return False
            return True

    # scores -------------------------------------------------------------------------------

    def on_written(self, store: Store, run_id: str, batch: PreparedBatch) -> None:
        """Take a batch of scored samples just written to the store (the engine's hook).

        Args:
            store: the store (its connection in the thread that scores).
            run_id: the live run.
            batch: the samples' rows.
        """
        per_key: dict[str, dict[str, float | None]] = {row[0]: {} for row in batch.samples}
        for sample in batch.metric_values:
            if sample.key in per_key:
                per_key[sample.key].update(zip(sample.metrics, sample.values, strict=True))
        events = []
        with self._lock:
            for row in batch.samples:
                self.counts.scored += 1
                self._window.add({**per_key[row[0]], "composite": row[6]})
            events = self._check_gates()
            due = time.monotonic() - self._written >= self.snapshot_every_s
        for event in events:
            store.append_record(run_id, GATE_STREAM, event)
            self._announce(event)
        if due or events:
            self.write_snapshot(store, run_id)

    def _check_gates(self) -> list[dict[str, Any]]:
        events = []
        for gate in self.gates:
            mean, n = self._window.mean(gate.metric)
            if mean is None or n < self.min_n:
                continue
            if mean < gate.floor and gate.metric not in self._below:
                self._below.add(gate.metric)
                event = {
                    "event": "gate_fired",
                    "metric": gate.metric,
                    "rolling_mean": mean,
                    "floor": gate.floor,
                    "n": n,
                    "window": self.window,
                    "scored": self.counts.scored,
                    "at": _now(),
                }
                self.fired.append(event)
                events.append(event)
            elif mean >= gate.floor:
                self._below.discard(gate.metric)  # back above: armed again
        return events

    def _announce(self, event: dict[str, Any]) -> None:
        self.log(
            f"gate fired: the rolling mean of {event['metric']} is {event['rolling_mean']:.3f} "
            f"over the last {event['n']} scored traces, below its floor {event['floor']}"
        )
        if self.webhook is not None:
            threading.Thread(target=self._tell, args=(event,), daemon=True).start()

    def _tell(self, event: dict[str, Any]) -> None:
        request = urllib.request.Request(
            self.webhook or "",
            data=json.dumps(event).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except Exception as exc:  # a webhook down must not stop the scoring
            self.log(f"the webhook {self.webhook} could not be told: {exc}")

    # summaries ----------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The live run's counts, its rolling window per metric with the gates' floors, and
        the gates that fired."""
        with self._lock:
            metrics = self._window.summary()
            floors = {g.metric: g.floor for g in self.gates}
            for name, summary in metrics.items():
                if name in floors:
                    summary["floor"] = floors[name]
                    summary["below"] = name in self._below
            return {
                "at": _now(),
                "counts": self.counts.as_dict(),
                "sample": self.selection.sample,
                "window": self.window,
                "metrics": metrics,
                "gates_fired": len(self.fired),
            }

    def write_snapshot(self, store: Store, run_id: str) -> None:
        """Keep the current summary in the store (the viewer shows the latest).

        Args:
            store: the store.
            run_id: the live run.
        """
        store.append_record(run_id, WINDOW_STREAM, self.snapshot())
        self._written = time.monotonic()
