"""What the viewer's pages show, as JSON data built from the store: the runs list, a run's
summary, a page of its samples, one sample with its trace, and the comparison of two runs.

The local server (:mod:`agentgauge.web.app`) returns these documents from its API; the HTML
report (:mod:`agentgauge.report.html`) embeds them in one file. Trace content is made safe
here, once (:mod:`agentgauge.documents.safe`); the page renders every string as text, never as
markup.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from agentgauge.documents.compare import PairBy, compare_runs
from agentgauge.documents.safe import MAX_CONTENT, as_text, clean, clip
from agentgauge.documents.sections import run_sections
from agentgauge.documents.summary import judge_noise, run_usage, run_verdict
from agentgauge.model import Trace
from agentgauge.results import BINS, samples_of, summary_stats
from agentgauge.store import RunInfo, SampleQuery, SampleRow, Store

__all__ = [
    "BINS",
    "compare_document",
    "run_document",
    "run_row",
    "sample_document",
    "sample_page",
    "sample_row",
    "samples_document",
]


_FACETS = ("recommendation", "band", "error_type", "category")
_N_READ_ERRORS = 200

STEPS_PAGE = 2000
"""Steps of a trace on one sample page of the viewer (a trace of a million steps is pages of
these, not one answer of hundreds of megabytes)."""


# runs ---------------------------------------------------------------------------------------


def run_row(store: Store, run: RunInfo, noise: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run as the runs list shows it.

    Args:
        store: the store holding the run.
        run: the run.
        noise: the run's judge noise, when the caller has it already.
    """
    if noise is None:
        noise = judge_noise(store, run.id)
    stats = summary_stats(store, run.id)
    summary = stats.composite
    gated = {
        name: stats.metrics[name].mean if name in stats.metrics else None for name in run.gates
    }
    return {
        "id": run.id,
        "name": run.name,
        "tags": run.tags,
        "kind": run.kind,
        "suite": run.suite,
        "status": run.status,
        "source": run.source,
        "model": run.model,
        "mode": run.mode,
        "n_samples": run.n_samples,
        "n_errors": run.n_errors,
        "composite": summary.as_dict(),
        **run_verdict(run, summary.mean, gated, composite_se=noise.get("composite_se")),
        "cost_usd": stats.agent_usage["cost_usd"]["total"],
        "created_at": run.created_at,
        "finished_at": run.finished_at,
    }


def run_document(store: Store, run_id: str) -> dict[str, Any]:
    """A run's page: summary with CIs, distributions, coverage, why values are missing, the
    values its samples can be filtered by, and what its kind adds (error types, tiers,
    convergence, effects, records).

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
    """
    run = store.get_run(run_id)
    source = samples_of(store, run)
    stats = summary_stats(store, run.id)
    reasons = source.missing_reasons(run.id)
    weights = run.weights
    metrics = [
        {
            "name": name,
            "weight": weights.get(name, 0.0),
            **summary.as_dict(),
            "bins": stats.bins[name],
            "missing": [list(r) for r in reasons.get(name, [])],
        }
        for name, summary in stats.metrics.items()
    ]
    noise = judge_noise(store, run.id)
    return {
        "run": {**run_row(store, run, noise), "sources": run.sources, "config": run.config},
        "judge_noise": noise,
        "metrics": metrics,
        "composite": {
            **stats.composite.as_dict(),
            "bins": stats.bins["composite"],
            "mean_coverage": stats.mean_coverage,
            "lowest_coverage": stats.lowest_coverage,
            "n_metric_errors": stats.n_failed,
        },
        "thresholds": run.thresholds.model_dump(),
        "usage": run_usage(store, run.id, stats),
        "facets": {
            name: [[f.value, f.n] for f in source.facet_counts(run.id, name)] for name in _FACETS
        },
        "sections": run_sections(store, run),
        "read_errors": [e.as_dict() for e in source.read_errors(run.id, _N_READ_ERRORS)],
        "n_read_errors": run.n_errors,
    }


# samples ------------------------------------------------------------------------------------


def _attribution(details: dict[str, Any]) -> dict[str, Any] | None:
    """Where a failed run went wrong, as ``failure_attribution`` found it (the step the viewer
    marks), or None."""
    for name, entry in details.items():
        if isinstance(entry, dict) and {"step", "category", "evidence"} <= set(entry):
            return {
                "metric": name,
                **{k: entry.get(k) for k in ("step", "agent", "category", "evidence", "note")},
            }
    return None


def sample_row(row: SampleRow) -> dict[str, Any]:
    """One sample as a row of the samples table.

    Args:
        row: the stored sample.
    """
    return {
        "key": row.key,
        "seq": row.seq,
        "trace_id": row.trace_id,
        "task_id": row.task_id,
        "category": row.category,
        "error_type": row.error_type,
        "composite": row.composite,
        "coverage": row.coverage,
        "recommendation": row.recommendation,
        "band": row.band,
        "error": row.error,
        "values": row.values,
        "reasons": row.reasons,
    }


def samples_document(
    store: Store, run_id: str, query: SampleQuery, *, offset: int = 0, limit: int = 50
) -> dict[str, Any]:
    """One page of a run's samples, filtered and sorted by the store.

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
        query: the filters and the order.
        offset: samples to skip.
        limit: at most this many.
    """
    run = store.get_run(run_id)
    total, rows = samples_of(store, run).query_samples(run.id, query, offset=offset, limit=limit)
    return {
        "total": total,
        "offset": offset,
        "limit": limit,
        "rows": [sample_row(r) for r in rows],
    }


def _hoist(details: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The blocks of details (objects, lists) several metrics of a sample share, such as the
    expected and predicted calls of the tool-calling metrics, taken out so that each is shown
    and stored once.

    Returns:
        The shared values by key, and per metric the keys taken out of its details.
    """
    by_key: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for metric, detail in details.items():
        if isinstance(detail, dict):
            for key, value in detail.items():
                # blocks only (calls, lists of errors): a repeated number costs nothing
                if isinstance(value, dict | list) and value:
                    text = json.dumps(value, sort_keys=True, default=str)
                    by_key[key][text].append(metric)
    shared: dict[str, Any] = {}
    taken: dict[str, list[str]] = defaultdict(list)
    for key, values in by_key.items():
        # one value per key: the one most metrics have
        metrics = max(values.values(), key=len)
        if len(metrics) > 1:
            shared[key] = details[metrics[0]][key]
            for metric in metrics:
                taken[metric].append(key)
    return shared, dict(taken)


def sample_page(
    row: SampleRow,
    weights: dict[str, float],
    max_content: int = MAX_CONTENT,
    *,
    steps_offset: int = 0,
    steps_limit: int | None = None,
) -> dict[str, Any]:
    """One sample's page: its scores, each metric's value, reason and details, and its trace.

    Args:
        row: the stored sample, with its trace.
        weights: the weights of the run's suite.
        max_content: characters kept of one piece of trace content.
        steps_offset: the trace's steps to skip.
        steps_limit: at most this many steps; None for all.
    """
    shared, taken = _hoist(row.details)
    metrics = []
    for m in row.metrics:
        detail = row.details.get(m.metric)
        own = (
            {k: v for k, v in detail.items() if k not in taken.get(m.metric, [])}
            if isinstance(detail, dict)
            else detail
        )
        metrics.append(
            {
                "name": m.metric,
                "value": m.value,
                "weight": weights.get(m.metric, 0.0),
                "reason": None if m.reason is None else clip(m.reason, max_content),
                "error": None if m.error is None else clip(m.error, max_content),
                "details": clean(own, max_content),
                "shared": taken.get(m.metric, []),
            }
        )
    trace = row.trace()
    return {
        **sample_row(row),
        "source": row.source,
        "line": row.line,
        "usage": row.usage,
        "metrics": metrics,
        "shared": clean(shared, max_content),
        "gates": row.details.get("gates"),
        "uncertain": row.details.get("uncertain"),
        "attribution": _attribution(row.details),
        "trace": None
        if trace is None
        else trace_view(trace, max_content, steps_offset=steps_offset, steps_limit=steps_limit),
    }


def sample_document(
    store: Store, run_id: str, key: str, *, steps_offset: int = 0, steps_limit: int = STEPS_PAGE
) -> dict[str, Any]:
    """One sample's page (:func:`sample_page`, a page of its steps) with the keys of the
    samples before and after it in input order.

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
        key: the sample's key.
        steps_offset: the trace's steps to skip.
        steps_limit: at most this many steps.
    """
    run = store.get_run(run_id)
    source = samples_of(store, run)
    row = source.get_sample(run.id, key)
    before, after = source.neighbours(run.id, row.seq)
    page = sample_page(row, run.weights, steps_offset=steps_offset, steps_limit=steps_limit)
    return {"run_id": run.id, **page, "prev": before, "next": after}


def _offsets(trace: Trace) -> list[float]:
    """When each step started, in seconds from the first: from the steps' clocks when they
    have them, else one after the other by their durations."""
    starts = [s.started_at.timestamp() for s in trace.steps if s.started_at is not None]
    origin = min(starts) if starts else None
    offsets, clock = [], 0.0
    for step in trace.steps:
        if step.started_at is not None and origin is not None:
            start = step.started_at.timestamp() - origin
        else:
            start = clock
        offsets.append(round(start, 6))
        clock = start + (step.duration_s or 0.0)
    return offsets


def _graph(trace: Trace) -> dict[str, Any]:
    """The agents of a trace and the messages and hand-offs between them (counts per pair)."""
    agents: dict[str, None] = {}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    for step in trace.steps:
        if step.agent:
            agents[step.agent] = None
        if step.agent and step.recipient:
            agents[step.recipient] = None
            edge = edges.setdefault(
                (step.agent, step.recipient),
                {"from": step.agent, "to": step.recipient, "count": 0, "types": []},
            )
            edge["count"] += 1
            kind = step.message_type.value if step.message_type else step.kind.value
            if kind not in edge["types"]:
                edge["types"].append(kind)
    return {
        "agents": [clip(a, 200) for a in agents],
        "edges": [clean(e, 200) for e in edges.values()],
    }


def trace_view(
    trace: Trace,
    max_content: int = MAX_CONTENT,
    *,
    steps_offset: int = 0,
    steps_limit: int | None = None,
) -> dict[str, Any]:
    """A trace as the sample page shows it: the task, the output, the steps on a timeline
    and the graph of the agents' messages, every piece of content made safe.

    Args:
        trace: the trace.
        max_content: characters kept of one piece of content.
        steps_offset: steps to skip (``steps_total`` and ``steps_offset`` say where the page
            is).
        steps_limit: at most this many steps; None for all.
    """
    task = trace.task
    end = None if steps_limit is None else steps_offset + steps_limit
    offsets = _offsets(trace)[steps_offset:end]
    steps = [
        {
            "index": step.index,
            "kind": step.kind.value,
            "agent": None if step.agent is None else clip(step.agent, 200),
            "recipient": None if step.recipient is None else clip(step.recipient, 200),
            "message_type": step.message_type.value if step.message_type else None,
            "content": as_text(step.content, max_content),
            "tool": None
            if step.tool_call is None
            else {
                "name": clip(step.tool_call.name, 200),
                "arguments": as_text(step.tool_call.arguments, max_content),
            },
            "result": as_text(step.result, max_content),
            "error": as_text(step.error, max_content),
            "offset_s": offset,
            "duration_s": step.duration_s,
        }
        for step, offset in zip(trace.steps[steps_offset:end], offsets, strict=True)
    ]
    return {
        "id": trace.id,
        "agent": trace.agent,
        "params": clean(trace.params, max_content),
        "task": {
            "id": task.id,
            "category": task.category,
            "difficulty": task.difficulty.value if task.difficulty else None,
            "description": as_text(task.description, max_content),
            "input": as_text(task.input, max_content),
            "expected_output": as_text(task.expected_output, max_content),
        },
        "output": as_text(trace.output, max_content),
        "duration_s": trace.duration_s,
        "usage": trace.usage.model_dump(exclude_none=True) if trace.usage else None,
        "steps": steps,
        "steps_total": len(trace.steps),
        "steps_offset": steps_offset,
        "graph": _graph(trace),
    }


# compare ------------------------------------------------------------------------------------


def _composites_by(store: Store, run_id: str, by: PairBy) -> dict[str, tuple[float, str]]:
    """Per pairing key: the mean composite of its samples and the key of its first sample."""
    run = store.get_run(run_id)
    pair_column = "task_id" if by == "task" else "trace_id"
    totals: dict[str, list[float]] = {}
    first: dict[str, str] = {}
    for rows in samples_of(store, run).iter_columns(
        run.id, [pair_column, "key", "composite"], ordered=True
    ):
        for pair, key, composite in rows:
            first.setdefault(pair, key)
            if composite is not None:
                total = totals.setdefault(pair, [0.0, 0])
                total[0] += composite
                total[1] += 1
    return {k: (total / count, first[k]) for k, (total, count) in totals.items()}


def _regressed(store: Store, a: str, b: str, by: PairBy, n: int) -> Iterator[dict[str, Any]]:
    ga, gb = _composites_by(store, a, by), _composites_by(store, b, by)
    pairs = sorted(
        ((gb[k][0] - ga[k][0], k) for k in set(ga) & set(gb) if gb[k][0] < ga[k][0]),
        key=lambda p: (p[0], p[1]),
    )
    for diff, pair in pairs[:n]:
        yield {
            "pair": pair,
            "composite_a": ga[pair][0],
            "composite_b": gb[pair][0],
            "diff": diff,
            "key_a": ga[pair][1],
            "key_b": gb[pair][1],
        }


def compare_document(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    by: PairBy = "task",
    alpha: float = 0.05,
    n_regressed: int = 25,
) -> dict[str, Any]:
    """The comparison of run B against run A (:func:`agentgauge.documents.compare.compare_runs`)
    with both runs' rows and the samples whose composite fell most.

    Args:
        store: the store holding both runs.
        run_a: the baseline run.
        run_b: the candidate run.
        by: pair samples by ``task`` or by trace ``id``.
        alpha: significance level.
        n_regressed: at most this many regressed samples.
    """
    result = compare_runs(store, run_a, run_b, by=by, alpha=alpha)
    a, b = store.get_run(result["run_a"]), store.get_run(result["run_b"])
    return {
        **result,
        "runs": [run_row(store, a), run_row(store, b)],
        "regressed": list(_regressed(store, a.id, b.id, by, n_regressed)),
    }
