"""Run results as a JSON document and a CSV table.

The JSON document is the contract other tools read::

    {"run_id", "suite", "config", "status",
     "aggregate": {METRIC: {"mean", "ci_low", "ci_high", "n", "n_missing"},
                   "composite": {..., "mean_coverage", "recommendation", "band"}},
     "usage": {"agent": {FIELD: {"total", "mean", "ci_low", "ci_high", "n", "n_missing"}},
               "judge": {...totals} | null, "composite_per_usd", "composite_per_1k_tokens"},
     "samples": [{"id", "task_id", "metrics", "details", "reasons", "composite", "coverage",
                  "recommendation", "band", "error", "source", "line", "usage"}],
     "errors": [{"source", "line", "field", "message"}]}

The usage ``FIELD``s are ``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
``total_tokens``, ``cost_usd`` and ``model_calls`` (the agent's, by the rule of
:mod:`agentgauge.usage`); a sample's ``usage`` holds them with ``judge``, what the judges spent
on it in this run.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agentgauge._atomic import atomic_path
from agentgauge.judges.cost import judge_spend
from agentgauge.scoring import band, failed_gates, recommendation
from agentgauge.stats import Summary, summarize
from agentgauge.store import RunInfo, SampleRow, Store

__all__ = [
    "USAGE_FIELDS",
    "SampleHook",
    "finite",
    "result_document",
    "run_aggregate",
    "run_usage",
    "run_verdict",
    "sample_document",
    "write_csv",
    "write_json",
    "write_result_json",
]


def run_aggregate(store: Store, run_id: str) -> dict[str, Summary]:
    """Per-metric means with 95% bootstrap CIs over a run's samples, plus ``composite``.

    Args:
        store: the results store.
        run_id: the run.
    """
    out = {m: summarize(store.metric_values(run_id, m)) for m in store.metric_names(run_id)}
    out["composite"] = summarize(store.composites(run_id))
    return out


USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "total_tokens",
    "cost_usd",
    "model_calls",
)
"""The agent's usage figures of a sample, as :func:`agentgauge.usage.trace_usage` counts them."""

_JUDGE_COUNTS = (
    "calls",
    "cached",
    "requests",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "total_tokens",
    "cost_unknown",
)


def _judge_totals(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not parts:
        return None
    totals: dict[str, Any] = {k: sum(p.get(k) or 0 for p in parts) for k in _JUDGE_COUNTS}
    totals["cost_usd"] = sum(p.get("cost_usd") or 0.0 for p in parts)
    return totals


def _setup_spend(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The judges' once-per-run calls (a rubric's evaluation steps) in :func:`judge_spend`'s
    shape."""
    out = []
    for record in store.records(run_id, "judge_setup"):
        usage, cached = record.get("usage"), record.get("cached")
        if isinstance(usage, dict) and isinstance(cached, bool):
            out.append(judge_spend([{"usage": usage, "cached": cached}]) or {})
    return out


def run_usage(store: Store, run_id: str) -> dict[str, Any]:
    """A run's tokens and cost: the agent's totals and means with 95% CIs, the judges' totals,
    and the composite per dollar and per 1,000 tokens.

    ``composite_per_usd`` = Σ composite / Σ cost over the samples that have both (None when
    their cost is 0 or unknown); ``composite_per_1k_tokens`` likewise with total tokens / 1000.
    The judges' totals add the calls of every sample and the run's set-up calls (a rubric's
    evaluation steps); their ``cost_usd`` leaves out the ``cost_unknown`` calls.

    Args:
        store: the results store.
        run_id: the run.
    """
    rid = store.get_run(run_id).id
    usages = store.usages(rid)
    agent: dict[str, Any] = {}
    for name in USAGE_FIELDS:
        values = [None if u is None else u.get(name) for u in usages]
        present = [v for v in values if v is not None]
        agent[name] = {"total": sum(present) if present else None, **summarize(values).as_dict()}
    judge = [u["judge"] for u in usages if u is not None and u.get("judge")]
    composites = store.composites(rid)
    pairs = [(c, u) for c, u in zip(composites, usages, strict=True) if c is not None and u]
    per: dict[str, float | None] = {}
    for key, field, scale in (
        ("composite_per_usd", "cost_usd", 1.0),
        ("composite_per_1k_tokens", "total_tokens", 1000.0),
    ):
        known = [(c, u[field]) for c, u in pairs if u.get(field) is not None]
        spent = sum(v for _, v in known)
        per[key] = sum(c for c, _ in known) / (spent / scale) if spent > 0 else None
    return {
        "agent": agent,
        "judge": _judge_totals(judge + _setup_spend(store, rid)),
        **per,
    }


def run_verdict(
    run: RunInfo, mean_composite: float | None, means: Mapping[str, float | None] | None = None
) -> dict[str, Any]:
    """The suite's recommendation and band applied to the run's mean composite, and its gates
    to the metrics' means: a failed gate makes the run a reject (``gates_failed`` says which;
    the key is there when the suite has gates).

    Args:
        run: the run (its suite's thresholds and gates are read from the stored config).
        mean_composite: the mean of the samples' composites; None gives None verdicts.
        means: metric -> mean over the samples, for the gates.
    """
    gates = run.gates
    failed = failed_gates(means or {}, gates)
    verdict: dict[str, Any] = {"recommendation": None, "recommendation_weight": None, "band": None}
    if mean_composite is not None:
        thresholds = run.thresholds
        label, weight = recommendation(mean_composite, thresholds)
        verdict = {
            "recommendation": label,
            "recommendation_weight": weight,
            "band": band(mean_composite, thresholds),
        }
    if failed:
        verdict.update(recommendation="reject", recommendation_weight=-1.0)
    if gates:
        verdict["gates_failed"] = failed
    return verdict


def sample_document(row: SampleRow) -> dict[str, Any]:
    """One sample of :meth:`Store.iter_samples` in the shape of the JSON contract.

    Args:
        row: the stored sample.
    """
    return {
        "id": row.trace_id,
        "task_id": row.task_id,
        "metrics": row.values,
        "details": row.details,
        "reasons": row.reasons,
        "composite": row.composite,
        "coverage": row.coverage,
        "recommendation": row.recommendation,
        "band": row.band,
        "error": row.error,
        "source": row.source,
        "line": row.line,
        "usage": row.usage,
    }


SampleHook = Callable[[dict[str, Any]], None]
"""Adds a domain's keys to one sample document (in place)."""


def _head(store: Store, run: RunInfo) -> dict[str, Any]:
    """The document's keys before ``samples``: the run, its config and the aggregate."""
    aggregate = run_aggregate(store, run.id)
    composite = aggregate["composite"].as_dict()
    composite["mean_coverage"] = store.coverage(run.id)[0]
    means = {name: summary.mean for name, summary in aggregate.items()}
    composite.update(run_verdict(run, aggregate["composite"].mean, means))
    return {
        "run_id": run.id,
        "kind": run.kind,
        "suite": run.suite,
        "status": run.status,
        "created_at": run.created_at,
        "sources": run.sources,
        "config": run.config,
        "aggregate": {**{k: v.as_dict() for k, v in aggregate.items()}, "composite": composite},
        "usage": run_usage(store, run.id),
    }


def _samples(store: Store, run_id: str, hook: SampleHook | None) -> Iterator[dict[str, Any]]:
    for row in store.iter_samples(run_id):
        sample = sample_document(row)
        if hook is not None:
            hook(sample)
        yield sample


def result_document(
    store: Store, run_id: str, *, sample_hook: SampleHook | None = None
) -> dict[str, Any]:
    """The whole run as the JSON contract's document, in memory (see
    :func:`write_result_json` to write a large run without holding it).

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
        sample_hook: adds a domain's keys to each sample.
    """
    run = store.get_run(run_id)
    return {
        **_head(store, run),
        "samples": list(_samples(store, run.id, sample_hook)),
        "errors": _error_documents(store, run.id),
    }


def write_result_json(
    store: Store,
    run_id: str,
    path: str | Path,
    *,
    extra: dict[str, Any] | None = None,
    sample_hook: SampleHook | None = None,
) -> None:
    """Write the run's document (:func:`result_document`) sample by sample: memory stays flat
    whatever the run's size.

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
        path: the output file.
        extra: top-level keys a domain adds to the document.
        sample_hook: adds a domain's keys to each sample.
    """
    run = store.get_run(run_id)
    head = {**_head(store, run), **(extra or {})}
    with atomic_path(path) as temporary, temporary.open("w", encoding="utf-8") as fh:
        fh.write("{\n")
        for key, value in head.items():
            fh.write(f" {_dumps(key)}: {_dumps(value)},\n")
        fh.write(' "samples": [')
        for i, sample in enumerate(_samples(store, run.id, sample_hook)):
            fh.write(("\n  " if i == 0 else ",\n  ") + _dumps(sample))
        fh.write("\n ],\n")
        fh.write(f' "errors": {_dumps(_error_documents(store, run.id))}\n}}\n')


def _error_documents(store: Store, run_id: str) -> list[dict[str, Any]]:
    return [error.as_dict() for error in store.read_errors(run_id)]


def _dumps(value: Any) -> str:
    return json.dumps(finite(value), ensure_ascii=False, default=str)


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, infinity) made None, as JSON has none.

    Args:
        value: JSON-like data.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def write_json(doc: dict[str, Any], path: str | Path) -> None:
    """Write a result document as JSON (non-finite floats become null).

    Args:
        doc: a document from :func:`result_document`, possibly extended by a domain.
        path: the output file.
    """
    text = json.dumps(finite(doc), indent=1, ensure_ascii=False, default=str)
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_csv(store: Store, run_id: str, path: str | Path) -> None:
    """Write one row per sample: ids, composite, verdict, every metric's value, the agent's
    tokens and cost, the judges' cost and the error.

    Args:
        store: the results store.
        run_id: the run.
        path: the output file.
    """
    run = store.get_run(run_id)
    metrics = store.metric_names(run.id)
    fixed = ["id", "task_id", "source", "line", "composite", "coverage", "recommendation", "band"]
    with atomic_path(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*fixed, *metrics, *USAGE_FIELDS, "judge_cost_usd", "error"])
        for row in store.iter_samples(run.id):
            doc = sample_document(row)
            values = doc["metrics"]
            usage = row.usage or {}
            judge_cost = (usage.get("judge") or {}).get("cost_usd")
            writer.writerow(
                [_inert(doc[k]) for k in fixed]
                + ["" if values.get(m) is None else values[m] for m in metrics]
                + ["" if usage.get(k) is None else usage[k] for k in USAGE_FIELDS]
                + ["" if judge_cost is None else judge_cost]
                + [_inert(row.error or "")]
            )


def _inert(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula (``=HYPERLINK(...)``, ``+cmd|...``)
    gets a leading apostrophe, the OWASP defence against CSV injection; numbers are kept."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
