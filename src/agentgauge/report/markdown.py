"""The comparison of two runs as Markdown, for a pull request's comment: is the candidate (run
B) better than the baseline (run A), which metrics regressed, did the candidate pass its suite's
gates, what did it cost, and where the full report is.

The first line is an HTML comment (:data:`MARKER`) that a CI job looks for to update its earlier
comment instead of adding one per push. Every name and label taken from a run is escaped, so
that nothing in a run can change the comment's markup.
"""

from __future__ import annotations

import re
from typing import Any

from agentgauge.documents.summary import gates_failed
from agentgauge.scoring import gate_note
from agentgauge.store import RunInfo, Store

__all__ = ["MARKER", "comparison_markdown"]

MARKER = "<!-- agentgauge-compare -->"
"""The first line of every comparison comment."""

# what changes markup inside a line (no label starts a line, so #, -, + and 1. need nothing)
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
_USAGE_LABELS = {"cost_usd": "cost (USD) per sample", "total_tokens": "tokens per sample"}


def _text(value: str) -> str:
    """``value`` as literal Markdown text on one line."""
    return _SPECIAL.sub(r"\\\1", " ".join(value.split()))


def _label(run: RunInfo) -> str:
    return f"{_text(run.name)} (`{run.id}`)" if run.name else f"`{run.id}`"


def _number(value: float | None, *, signed: bool = False, general: bool = False) -> str:
    """A score with 3 decimals; a cost or a count (``general``) with 6 significant digits."""
    if value is None:
        return "—"
    if general:
        return f"{value:+.6g}" if signed else f"{value:.6g}"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(row: dict[str, Any], *, general: bool = False) -> str:
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return "—"
    low = _number(row["ci_low"], signed=True, general=general)
    high = _number(row["ci_high"], signed=True, general=general)
    return f"[{low}, {high}]"


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _verdict(verdict: str) -> str:
    return {"B better": "**B better**", "B worse": "**B worse**"}.get(verdict, verdict)


def _metrics_table(result: dict[str, Any]) -> list[str]:
    metrics: dict[str, dict[str, Any]] = result["metrics"]
    names = ["composite", *(n for n in metrics if n != "composite")]
    lines = [
        "| metric | A | B | B − A | 95% CI | p / q | verdict |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for name in names:
        if name not in metrics:
            continue
        row = metrics[name]
        shown = f"**{name}**" if name == "composite" else _text(name)
        lines.append(
            f"| {shown} | {_number(row['mean_a'])} | {_number(row['mean_b'])} | "
            f"{_number(row['diff'], signed=True)} | {_interval(row)} | {_p(row['q_value'])} | "
            f"{_verdict(row['verdict'])} |"
        )
    return lines


def _regressions(result: dict[str, Any]) -> list[str]:
    worse = [(n, r) for n, r in result["metrics"].items() if r["verdict"] == "B worse"]
    if not worse:
        return [f"No significant regression (α = {result['alpha']:g})."]
    lines = [f"**Regressions** (significant at α = {result['alpha']:g}):", ""]
    for name, row in worse:
        lines.append(
            f"- {_text(name)}: {_number(row['mean_a'])} → {_number(row['mean_b'])} "
            f"({_number(row['diff'], signed=True)}, 95% CI {_interval(row)})"
        )
    return lines


def _gates(store: Store, run: RunInfo) -> list[str]:
    if not run.gates:
        return []
    failed = gates_failed(store, run)
    floors = ", ".join(f"{_text(name)} ≥ {floor:g}" for name, floor in run.gates.items())
    if not failed:
        return [f"**Gates** of run B: all pass ({floors})."]
    return [
        f"**Gates** of run B: **failed**: {_text(gate_note(failed))}: run B is a reject whatever "
        f"its composite (gates: {floors})."
    ]


def _usage(result: dict[str, Any]) -> list[str]:
    usage: dict[str, dict[str, Any]] = result["usage"]
    if not usage:
        return []
    lines = [
        "| usage | A | B | B − A | 95% CI | p | verdict |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for field, row in usage.items():
        label = _USAGE_LABELS.get(field, _text(field))
        lines.append(
            f"| {label} | {_number(row['mean_a'], general=True)} | "
            f"{_number(row['mean_b'], general=True)} | "
            f"{_number(row['diff'], signed=True, general=True)} | "
            f"{_interval(row, general=True)} | {_p(row['p_value'])} | {row['verdict']} |"
        )
    return lines


def comparison_markdown(
    store: Store, result: dict[str, Any], *, report_url: str | None = None
) -> str:
    """The comparison of :func:`~agentgauge.documents.compare.compare_runs` as Markdown.

    Args:
        store: the store holding both runs (for their names and run B's gates).
        result: the comparison of run B against run A.
        report_url: where the HTML report of run B is (a CI artifact), linked at the end.
    """
    run_a, run_b = store.get_run(result["run_a"]), store.get_run(result["run_b"])
    composite = result["metrics"].get("composite")
    head = [MARKER, f"### agentgauge: {_label(run_b)} against {_label(run_a)}", ""]
    if composite is not None:
        head += [
            f"Composite {_number(composite['mean_a'])} → {_number(composite['mean_b'])} "
            f"(B − A {_number(composite['diff'], signed=True)}, 95% CI {_interval(composite)}, "
            f"p {_p(composite['p_value'])}): {_verdict(composite['verdict'])}.",
            "",
        ]
    body = [*_metrics_table(result), "", *_regressions(result)]
    if gates := _gates(store, run_b):
        body += ["", *gates]
    if usage := _usage(result):
        body += ["", *usage]
    unpaired = ""
    if result["only_in_a"] or result["only_in_b"]:
        unpaired = f"; unpaired: {result['only_in_a']} only in A, {result['only_in_b']} only in B"
    pairs = composite["n"] if composite is not None else 0
    notes = [
        f"Paired by {result['by']}: {pairs} pairs{unpaired}. Bootstrap 95% CIs; the composite's "
        "p-value is its own test, the metrics' are Benjamini–Hochberg adjusted (q)."
    ]
    notes += [f"Warning: {_text(w)}" for w in result["warnings"]]
    if report_url:
        notes.append(f"[HTML report of run B]({report_url.replace(')', '%29')})")
    return "\n".join([*head, *body, "", *(f"{n}  " for n in notes)]).rstrip() + "\n"
