"""The failures report of a tool-calling run: for each failing sample, what was asked, which
calls were expected and predicted, and what was wrong."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from agentgauge.model import Trace
from agentgauge.store import SampleRow, Store
from agentgauge.workflows.toolcall_runs import CALL_METRICS, VALUE_METRIC, ToolcallError

__all__ = ["Failure", "FailuresReport", "failures_report"]


@dataclass(frozen=True)
class Failure:
    """One failing sample.

    Args:
        id: the trace id.
        query: the last user message (or the task's input).
        expected: the expected calls, each parameter with its acceptable values.
        predicted: the calls the model made.
        error: what was wrong, with the run's or parser's notes; ``-`` when nothing is named.
        error_type: the error type of the metric that failed the sample (``run_error`` for an
            unanswered sample).
        metric: the metric whose error is shown: the first of value_accuracy and the call
            metrics below 1 that names one (``type_error:type`` may come from
            parameter_accuracy while the values matched); None when none names one.
        raw_output: the model's output as it came.
    """

    id: str
    query: str
    expected: str
    predicted: str
    error: str
    error_type: str | None
    raw_output: Any
    metric: str | None = None


@dataclass(frozen=True)
class FailuresReport:
    """The failing samples of a run, in run order.

    Args:
        run_id: the run.
        n_samples: its scored samples.
        failures: those that failed.
    """

    run_id: str
    n_samples: int
    failures: list[Failure]

    def by_error_type(self) -> list[tuple[str, int]]:
        """How many failures of each error type, most common first (``-``: none named)."""
        return Counter(f.error_type or "-" for f in self.failures).most_common()

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON data (``--json``)."""
        return {
            "run_id": self.run_id,
            "n_samples": self.n_samples,
            "failures": [asdict(f) for f in self.failures],
        }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _acceptable(values: Any) -> str:
    """An expected parameter's acceptable values: ``5``, ``"a"|"b"``, ``"units"|<omit>``."""
    if not isinstance(values, list):
        return _json(values)
    return "|".join("<omit>" if v == "" else _json(v) for v in values) or "<none>"


def _calls_text(calls: Any, *, expected: bool = False) -> str:
    if not calls:
        return "(no call)"
    parts = []
    for call in calls:
        if isinstance(call, dict) and "name" in call:
            args = call.get("arguments") or {}
            show = _acceptable if expected else _json
            parts.append(f"{call['name']}({', '.join(f'{k}={show(v)}' for k, v in args.items())})")
        else:
            parts.append(_json(call))
    return "; ".join(parts)


def _query(trace: Trace | None) -> str:
    if trace is None:
        return ""
    value = trace.task.input
    if isinstance(value, list):
        users = [m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        value = users[-1] if users else value
    if value is None:
        return ""
    return value if isinstance(value, str) else _json(value)


def _is_failure(sample: SampleRow) -> bool:
    if sample.error:
        return True
    return any(
        m.value is not None and m.value < 1.0 for m in sample.metrics if m.metric in CALL_METRICS
    )


_ORDER = (VALUE_METRIC, *(m for m in CALL_METRICS if m != VALUE_METRIC))


def _failing_details(sample: SampleRow) -> tuple[str | None, dict[str, Any]]:
    """The metric that failed the sample and its details: the first below 1 that names an
    error; else the first metric's details (the calls, for an unnamed failure)."""
    values = sample.values
    for name in _ORDER:
        details = sample.details.get(name) or {}
        value = values.get(name)
        if (
            value is not None
            and value < 1.0
            and (details.get("errors") or details.get("error_type"))
        ):
            return name, details
    for name in _ORDER:
        if details := sample.details.get(name) or {}:
            return None, details
    return None, {}


def _failure(sample: SampleRow) -> Failure:
    metric, details = _failing_details(sample)
    trace = sample.trace()
    metadata = trace.metadata if trace is not None else {}
    expected = details.get("expected")
    if expected is None and trace is not None and trace.task.expected_calls is not None:
        expected = [call.model_dump(mode="json") for call in trace.task.expected_calls]
    error = ", ".join(str(e) for e in details.get("errors") or [])
    notes = [
        str(note)
        for note in (
            details.get("run_error"),
            details.get("bfcl_error"),
            metadata.get("parse_error"),
            sample.error,
        )
        if note
    ]
    if notes:
        error = f"{error} ({'; '.join(notes)})" if error else "; ".join(notes)
    return Failure(
        id=sample.trace_id,
        query=_query(trace),
        expected=_calls_text(expected, expected=True),
        predicted=_calls_text(details.get("predicted")),
        error=error or "-",
        error_type=details.get("error_type"),
        raw_output=details.get("raw_output", metadata.get("raw_output")),
        metric=metric,
    )


def failures_report(store: Store, run_id: str) -> FailuresReport:
    """The failing samples of a tool-calling run: an error, or a call metric below 1.

    Args:
        store: the store holding the run.
        run_id: the run's id, or a unique prefix of it.

    Raises:
        StoreError: no such run.
        ToolcallError: a run of another kind.
    """
    run = store.get_run(run_id)
    if run.kind != "toolcall":
        raise ToolcallError(f"run {run.id} is not a tool-calling run (its kind: {run.kind})")
    samples = list(store.iter_samples(run.id, with_trace=True))
    failing = [_failure(s) for s in samples if _is_failure(s)]
    return FailuresReport(run.id, len(samples), failing)
