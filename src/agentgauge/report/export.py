"""Run results as a JSON document and a CSV table.

The JSON document is the contract other tools read::

    {"run_id", "suite", "config", "status",
     "aggregate": {METRIC: {"mean", "ci_low", "ci_high", "n", "n_missing"},
                   "composite": {..., "mean_coverage", "recommendation", "band",
                                 "uncertain_samples", "judge_noise_se" (runs with repeated
                                 judgments: the judges' noise in the mean composite)}},
     "gates_failed": {METRIC: {"value", "floor"}},
     "usage": {"agent": {FIELD: {"total", "mean", "ci_low", "ci_high", "n", "n_missing"}},
               "judge": {...totals} | null, "composite_per_usd", "composite_per_1k_tokens"},
     "judge_noise": {METRIC: {"samples", "answers", "aggregate", "mean_sd", "mean_sd_ci",
                              "pooled_sd", "pooled_sd_ci", "agreement", "unanimous", "alpha",
                              "alpha_level", "between_sd", "noise_to_spread", "uncertain"}},
     "samples": [{"id", "task_id", "metrics", "details", "reasons", "composite", "coverage",
                  "recommendation", "band", "error", "source", "line", "usage"}],
     "errors": [{"source", "line", "field", "message"}]}

``gates_failed`` holds the suite's ``[gates]`` that the run's means fail (empty when none
does): the commands that make a run then exit with status 3. The usage ``FIELD``s are
``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``total_tokens``, ``cost_usd`` and
``model_calls`` (the agent's, by the rule of :mod:`agentgauge.usage`); a sample's ``usage``
holds them with ``judge``, what the judges spent on it in this run. A sample's
``recommendation`` may be ``uncertain``: its judges' own noise could change its verdict
(:mod:`agentgauge.scoring`); the run's too, when the judges' noise in the mean composite spans
a threshold.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentgauge._atomic import atomic_path
from agentgauge.documents.summary import (
    USAGE_FIELDS,
    finite,
    judge_noise,
    run_usage,
    run_verdict,
)
from agentgauge.results import samples_of, summary_stats
from agentgauge.store import RunInfo, SampleRow, Store

__all__ = [
    "SampleHook",
    "result_document",
    "sample_document",
    "write_csv",
    "write_json",
    "write_result_json",
]


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
    stats = summary_stats(store, run.id)
    aggregate = stats.aggregate()
    composite = aggregate["composite"].as_dict()
    composite["mean_coverage"] = stats.mean_coverage
    means = {name: summary.mean for name, summary in aggregate.items()}
    noise = judge_noise(store, run.id)
    composite.update(
        run_verdict(run, aggregate["composite"].mean, means, composite_se=noise.get("composite_se"))
    )
    if noise:
        composite["uncertain_samples"] = noise["uncertain"]
        composite["judge_noise_se"] = noise["composite_se"]
    return {
        "run_id": run.id,
        "kind": run.kind,
        "suite": run.suite,
        "status": run.status,
        "created_at": run.created_at,
        "sources": run.sources,
        "config": run.config,
        "aggregate": {**{k: v.as_dict() for k, v in aggregate.items()}, "composite": composite},
        "gates_failed": composite.get("gates_failed", {}),
        "usage": run_usage(store, run.id, stats),
        "judge_noise": noise.get("metrics", {}),
    }


def _samples(store: Store, run: RunInfo, hook: SampleHook | None) -> Iterator[dict[str, Any]]:
    for row in samples_of(store, run).iter_samples(run.id):
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
        "samples": list(_samples(store, run, sample_hook)),
        "errors": _error_documents(store, run),
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
        for i, sample in enumerate(_samples(store, run, sample_hook)):
            fh.write(("\n  " if i == 0 else ",\n  ") + _dumps(sample))
        fh.write("\n ],\n")
        fh.write(f' "errors": {_dumps(_error_documents(store, run))}\n}}\n')


def _error_documents(store: Store, run: RunInfo) -> list[dict[str, Any]]:
    return [error.as_dict() for error in samples_of(store, run).read_errors(run.id)]


def _dumps(value: Any) -> str:
    return json.dumps(finite(value), ensure_ascii=False, default=str)


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
    source = samples_of(store, run)
    metrics = source.metric_names(run.id)
    fixed = ["id", "task_id", "source", "line", "composite", "coverage", "recommendation", "band"]
    with atomic_path(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*fixed, *metrics, *USAGE_FIELDS, "judge_cost_usd", "error"])
        for row in source.iter_samples(run.id):
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
