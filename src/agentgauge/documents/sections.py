"""What a run's page adds to the common summary, by what the run holds: error types and the
per-category table of a tool-calling run, the tiers of a review run, and the records a run
keeps beside its samples (a tuning run's convergence and best parameters, an impact run's
effects with their CIs, the human-agreement table of a review run and its human reviewers'
scores beside the generated reviews', any other stream as a table).

Each section is JSON data with a ``type`` the page knows how to draw: ``bars``, ``line``,
``intervals``, ``statements`` or ``table``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentgauge._redact import redact_secrets
from agentgauge.documents.safe import clip
from agentgauge.results import samples_of
from agentgauge.store import RunInfo, Store
from agentgauge.workflows.review_report import tier_status

__all__ = ["record_table", "run_sections"]

_MAX_RECORDS = 200
_MAX_CELL = 2000

Section = dict[str, Any]


def _error_types(store: Store, run: RunInfo) -> list[Section]:
    """The error types the samples name (a bar each) and, per task category, how many samples
    failed with one."""
    source = samples_of(store, run)
    error_types = source.facet_counts(run.id, "error_type")
    if not error_types:
        return []
    sections: list[Section] = [
        {
            "type": "bars",
            "title": "Error types",
            "note": "samples per error type (the first metric that names one)",
            "labels": [f.value for f in error_types],
            "values": [f.n for f in error_types],
        }
    ]
    categories = source.facet_counts(run.id, "category")
    if categories:
        sections.append(
            {
                "type": "table",
                "title": "By category",
                "columns": ["category", "samples", "mean composite", "with an error type", "share"],
                "rows": [
                    [
                        f.value,
                        f.n,
                        _cell(f.mean_composite),
                        f.n_error_type,
                        f"{f.n_error_type / f.n:.0%}",
                    ]
                    for f in categories
                ],
            }
        )
    return sections


def _tiers(store: Store, run: RunInfo) -> list[Section]:
    """A review run's Tier 1/2/3 statements: what was measured and why the rest was not."""
    if not run.kind.startswith("review"):
        return []
    tiers = tier_status(list(store.iter_samples(run.id)), run.metric_order)
    return [
        {
            "type": "statements",
            "title": "Tiers",
            "items": [tier["statement"] for tier in tiers.values()],
        }
    ]


def _convergence(records: list[dict[str, Any]]) -> list[Section]:
    return [
        {
            "type": "line",
            "title": "Convergence",
            "note": "the objective of each episode and the best so far",
            "x_label": "episode",
            "labels": [r.get("episode") for r in records],
            "series": [
                {"name": "objective", "values": [r.get("objective") for r in records]},
                {"name": "best so far", "values": [r.get("best_objective") for r in records]},
            ],
        }
    ]


def _best(records: list[dict[str, Any]]) -> list[Section]:
    sections = []
    for result in records[-1:]:
        level = result.get("best_objective_all_tasks")
        rows = [[name, _cell(value)] for name, value in result.get("best_params", {}).items()]
        sections.append(
            {
                "type": "table",
                "title": "Best parameters",
                "note": (
                    f"episode {result.get('best_episode')} of {result.get('episodes')}; "
                    f"objective {_cell(level)} re-measured on every task"
                ),
                "columns": ["parameter", "value"],
                "rows": rows,
            }
        )
    return sections


def _effects(records: list[dict[str, Any]]) -> list[Section]:
    measured = [r for r in records if r.get("slope") is not None]
    if not measured:
        return []
    return [
        {
            "type": "intervals",
            "title": "Effects of the parameters",
            "note": "OLS slope per unit of each parameter's range, with its 95% CI",
            "labels": [f"{r.get('param')} → {r.get('metric')}" for r in measured],
            "estimates": [r.get("slope") for r in measured],
            "lows": [r.get("ci_low") for r in measured],
            "highs": [r.get("ci_high") for r in measured],
        }
    ]


def _agreement(records: list[dict[str, Any]]) -> list[Section]:
    return [record_table("Agreement with the human reviewers", records, len(records))]


def _human_reviewers(records: list[dict[str, Any]]) -> list[Section]:
    return [
        {
            "type": "table",
            "title": "Beside the human reviewers",
            "note": (
                "mean of each metric: the generated reviews and the held-out human reviews of "
                "the same papers (each against the paper's other reviews)"
            ),
            "columns": ["metric", "generated", "human reviewers", "n generated", "n human"],
            "rows": [
                [
                    r.get("metric"),
                    _cell(r.get("generated")),
                    _cell(r.get("human")),
                    r.get("n_generated"),
                    r.get("n_human"),
                ]
                for r in records
            ],
        }
    ]


def _window(records: list[dict[str, Any]]) -> list[Section]:
    """A live run's rolling summary: the latest per metric, and the rolling composite's
    course."""
    if not records:
        return []
    latest = records[-1]
    counts = latest.get("counts") or {}
    rows = []
    for name, m in (latest.get("metrics") or {}).items():
        interval = (
            "—" if m.get("ci_low") is None else f"[{_cell(m['ci_low'])}, {_cell(m['ci_high'])}]"
        )
        floor = m.get("floor")
        state = "—" if floor is None else ("below" if m.get("below") else "above")
        rows.append([name, _cell(m.get("mean")), interval, m.get("n"), _cell(floor), state])
    sections: list[Section] = [
        {
            "type": "table",
            "title": "Rolling window",
            "note": (
                f"the last {latest.get('window')} scored traces, at {latest.get('at')}; "
                f"received {counts.get('received')}, scored {counts.get('scored')}, not in "
                f"the sample {counts.get('not_sampled')} (sample {latest.get('sample')}), "
                f"filtered out {counts.get('filtered_out')}; gates fired "
                f"{latest.get('gates_fired')}"
            ),
            "columns": ["metric", "mean", "95% CI", "n", "floor", "gate"],
            "rows": rows,
        }
    ]
    sections.append(
        {
            "type": "line",
            "title": "Rolling composite",
            "note": "the rolling mean composite at each summary kept",
            "x_label": "scored traces",
            "labels": [(r.get("counts") or {}).get("scored") for r in records],
            "series": [
                {
                    "name": "composite",
                    "values": [
                        ((r.get("metrics") or {}).get("composite") or {}).get("mean")
                        for r in records
                    ],
                }
            ],
        }
    )
    return sections


_STREAMS: dict[str, Callable[[list[dict[str, Any]]], list[Section]]] = {
    "tuning": _convergence,
    "tuning_result": _best,
    "impact": _effects,
    "aspect_agreement": _agreement,
    "human_reviewers": _human_reviewers,
    "window": _window,
}
"""Record streams drawn their own way; the others are tables."""

_OWN_TABLES = frozenset({"aspect_agreement", "human_reviewers", "window"})
"""Streams whose own drawing is their table."""

_LATEST = {"window": _MAX_RECORDS}
"""Streams of which only the latest records are read (a live run keeps a summary a second)."""

_UNSHOWN = frozenset({"otlp"})
"""Streams kept for the run's own use: a live receiver's stored requests (raw OTLP)."""


def run_sections(store: Store, run: RunInfo) -> list[Section]:
    """The sections of a run's page beyond the common summary.

    Args:
        store: the store holding the run.
        run: the run.
    """
    sections = _error_types(store, run) + _tiers(store, run)
    for stream, count in store.streams(run.id).items():
        if stream in _UNSHOWN:
            continue
        records = store.records(run.id, stream, last=_LATEST.get(stream))
        draw = _STREAMS.get(stream)
        if draw is not None:
            sections += draw(records)
        if stream not in _OWN_TABLES:
            sections.append(record_table(f"Records: {stream}", records[:_MAX_RECORDS], count))
    return sections


def record_table(title: str, records: list[dict[str, Any]], count: int) -> Section:
    """Records as a table: one row a record, nested objects flattened one level
    (``generated.mae``).

    Args:
        title: the table's title.
        records: the records shown.
        count: how many the stream holds.
    """
    rows = [_flatten(record) for record in records]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    return {
        "type": "table",
        "title": title,
        "note": f"the first {len(records)} of {count}" if len(records) < count else None,
        "columns": columns,
        "rows": [[_cell(row.get(c)) for c in columns] for row in rows],
    }


def _flatten(record: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict) and all(not isinstance(v, dict | list) for v in value.values()):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    text = value if isinstance(value, str) else json.dumps(redact_secrets(value), default=str)
    return clip(text, _MAX_CELL)
