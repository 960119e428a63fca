"""A self-contained HTML report: summary, tokens and cost, a histogram per metric, and the
samples worst first with their details and trace. No external requests (plots are inline SVG,
styles inline); every piece of trace content is escaped by jinja2's autoescaping, and text that
looks like a leaked credential (the safety metric's patterns) is hidden, so a report can be
shared."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from agentgauge._redact import hide_credentials, redact_secrets
from agentgauge.model import Step
from agentgauge.report.export import USAGE_FIELDS, run_aggregate, run_usage, run_verdict
from agentgauge.store import SampleRow, Store

__all__ = ["histogram_svg", "render_html", "write_html"]

_MAX_SAMPLES = 300
_MAX_CONTENT = 2000


def histogram_svg(values: list[float], title: str) -> str:
    """An inline SVG histogram of values in [0, 1] (matplotlib, Agg-free SVG backend).

    Args:
        values: the values to plot.
        title: the plot's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.2, 1.9), dpi=72)
    ax.hist(values, bins=20, range=(0.0, 1.0), color="#4c72b0", edgecolor="white")
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.set_xlim(0, 1)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]


def _clip(text: Any) -> str:
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    s = hide_credentials(s)
    return s if len(s) <= _MAX_CONTENT else s[:_MAX_CONTENT] + f"… ({len(s)} chars)"


@dataclass(frozen=True)
class _StepView:
    """One step of a trace as the page shows it."""

    index: int
    kind: str
    agent: str
    what: str


@dataclass(frozen=True)
class _SampleView:
    """One sample as the page shows it: its stored row and its trace's text, secrets hidden."""

    row: SampleRow
    details_json: str
    task_input: str
    output: str
    steps: list[_StepView]


def _step_view(step: Step) -> _StepView:
    call = step.tool_call.model_dump(mode="json", exclude_unset=True) if step.tool_call else None
    # values under secret-looking keys (api_key, token, ...) go before anything is shown
    what = redact_secrets(call or step.content or step.error or step.result or "")
    return _StepView(step.index, step.kind.value, redact_secrets(step.agent or ""), _clip(what))


def _sample_view(row: SampleRow) -> _SampleView:
    trace = row.trace()
    return _SampleView(
        row=row,
        details_json=_clip(json.dumps(row.details, indent=1, default=str)),
        task_input=_clip(redact_secrets(trace.task.input) if trace else None),
        output=_clip(redact_secrets(trace.output) if trace else None),
        steps=[_step_view(step) for step in trace.steps] if trace else [],
    )


def render_html(store: Store, run_id: str, *, max_samples: int = _MAX_SAMPLES) -> str:
    """Render a run as one HTML page.

    Args:
        store: the results store.
        run_id: the run.
        max_samples: how many samples (worst first) get a row with drill-down.
    """
    run = store.get_run(run_id)
    aggregate = run_aggregate(store, run.id)
    plots = []
    for name in [*store.metric_names(run.id), "composite"]:
        raw = store.composites(run.id) if name == "composite" else store.metric_values(run.id, name)
        present = [v for v in raw if v is not None]
        if present:
            plots.append(histogram_svg(present, name))
    samples = [
        _sample_view(row)
        for row in store.iter_samples(run.id, order="worst", limit=max_samples, with_trace=True)
    ]
    env = Environment(
        loader=PackageLoader("agentgauge.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["num"] = lambda v: "—" if v is None else f"{v:.3f}"
    env.filters["usd"] = lambda v: "—" if v is None else f"${v:.6f}"
    env.filters["count"] = lambda v: "—" if v is None else f"{v:,.1f}".removesuffix(".0")
    template = env.get_template("report.html")
    return template.render(
        run=run,
        aggregate=aggregate,
        verdict=run_verdict(run, aggregate["composite"].mean),
        usage=run_usage(store, run.id),
        usage_fields=USAGE_FIELDS,
        weights=run.weights,
        plots=plots,
        samples=samples,
        n_shown=len(samples),
        records=_record_tables(store, run.id),
        errors=store.read_errors(run.id),
    )


_MAX_RECORDS = 200


def _record_tables(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The run's record streams (aspect agreement, tuning history, impact effects...) as
    tables: one row a record, nested objects flattened one level (``generated.mae``)."""
    tables = []
    for stream, count in store.streams(run_id).items():
        rows = [_flatten(record) for record in store.records(run_id, stream)[:_MAX_RECORDS]]
        columns = list(dict.fromkeys(key for row in rows for key in row))
        tables.append(
            {
                "name": stream,
                "count": count,
                "columns": columns,
                "rows": [[_cell(row.get(c)) for c in columns] for row in rows],
            }
        )
    return tables


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
    return _clip(value)


def write_html(store: Store, run_id: str, path: str | Path) -> None:
    """Write the HTML report of a run.

    Args:
        store: the results store.
        run_id: the run.
        path: the output file.
    """
    Path(path).write_text(render_html(store, run_id), encoding="utf-8")
