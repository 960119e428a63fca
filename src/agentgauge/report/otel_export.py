"""A run's scores written back as OpenTelemetry: ``gen_ai.evaluation.result`` events.

Each sample of the run gives one event per metric and one for the composite, with the
current GenAI conventions' attributes: ``gen_ai.evaluation.name``,
``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label`` (the interpretation
band of the score, or ``not_available``), ``gen_ai.evaluation.explanation`` (the metric's
reason) and ``error.type`` for a metric that failed. An event is parented to the span it
evaluates, the root span of the imported run (``traceId``/``spanId`` from the trace's
``root_trace_id``/``root_span_id``), so the scores show next to the trace in the user's own
backend; traces that did not come from spans give events without a span.

The file holds one OTLP/JSON ``ExportLogsServiceRequest`` per sample, one per line, as the
Collector's file exporter writes them (its ``otlpjsonfile`` receiver reads them back).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentgauge._atomic import atomic_path
from agentgauge.results import samples_of
from agentgauge.scoring import band
from agentgauge.store import SampleRow, Store

__all__ = ["EVENT_NAME", "evaluation_events", "write_evaluation_events"]

EVENT_NAME = "gen_ai.evaluation.result"
_SCOPE = {"name": "agentgauge"}


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _record(
    name: str,
    score: float | None,
    context: dict[str, str],
    when: str,
    *,
    explanation: str | None = None,
    error: str | None = None,
    label: str | None = None,
) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.evaluation.name": name}
    if score is not None:
        attributes["gen_ai.evaluation.score.value"] = float(score)
    attributes["gen_ai.evaluation.score.label"] = label or (
        band(score) if score is not None else "not_available"
    )
    if explanation:
        attributes["gen_ai.evaluation.explanation"] = explanation
    if error:
        attributes["error.type"] = "metric_error"
        attributes["gen_ai.evaluation.explanation"] = error
    return {
        "timeUnixNano": when,
        "observedTimeUnixNano": when,
        "eventName": EVENT_NAME,
        **context,
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
    }


def evaluation_events(sample: SampleRow, run_id: str, when_ns: int) -> dict[str, Any]:
    """One sample's scores as an OTLP/JSON ``ExportLogsServiceRequest``.

    Args:
        sample: the scored sample, read with its trace.
        run_id: the run, recorded as ``agentgauge.run.id`` on the resource.
        when_ns: the events' time (Unix nanoseconds).
    """
    trace = sample.trace()
    meta: dict[str, Any] = trace.metadata if trace is not None else {}
    context = {}
    if isinstance(meta.get("root_trace_id"), str) and isinstance(meta.get("root_span_id"), str):
        context = {"traceId": meta["root_trace_id"], "spanId": meta["root_span_id"]}
    when = str(when_ns)
    records = [
        _record(m.metric, m.value, context, when, explanation=m.reason, error=m.error)
        for m in sample.metrics
    ]
    records.append(
        _record(
            "agentgauge.composite",
            sample.composite,
            context,
            when,
            explanation=sample.error,
            label=sample.band,
        )
    )
    resource = {
        "service.name": "agentgauge",
        "agentgauge.run.id": run_id,
        "agentgauge.sample.id": sample.trace_id,
        "agentgauge.task.id": sample.task_id,
    }
    return {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": k, "value": _value(v)} for k, v in resource.items()]
                },
                "scopeLogs": [{"scope": _SCOPE, "logRecords": records}],
            }
        ]
    }


def write_evaluation_events(store: Store, run_id: str, out: str | Path, when_ns: int) -> int:
    """Write a run's scores as OTLP/JSON logs, one request per sample and line.

    Args:
        store: the store holding the run.
        run_id: the run.
        out: the file to write.
        when_ns: the events' time (Unix nanoseconds).

    Returns:
        The number of events written.
    """
    run = store.get_run(run_id)
    n = 0
    with atomic_path(out) as temporary, temporary.open("w", encoding="utf-8") as fh:
        for sample in samples_of(store, run).iter_samples(run.id, with_trace=True):
            request = evaluation_events(sample, run.id, when_ns)
            n += len(request["resourceLogs"][0]["scopeLogs"][0]["logRecords"])
            fh.write(json.dumps(request, ensure_ascii=False) + "\n")
    return n
