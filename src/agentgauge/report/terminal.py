"""The run summary in the terminal (rich)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agentgauge.documents.summary import (
    USAGE_FIELDS,
    judge_noise,
    run_usage,
    run_verdict,
)
from agentgauge.results import samples_of, summary_stats
from agentgauge.scoring import gate_note
from agentgauge.store import Store

__all__ = ["compact_table", "print_judge_noise", "print_runs", "print_summary", "print_usage"]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def compact_table(title: str, **options: Any) -> Table:
    """A table for wide rows in an 80-column terminal: a rule under the header, no side
    borders, one space between columns.

    Args:
        title: shown above the table, left-aligned.
        options: more :class:`rich.table.Table` options (a caption...).
    """
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
        **options,
    )


def print_summary(store: Store, run_id: str, console: Console | None = None) -> None:
    """Print a run's per-metric table (mean, 95% CI, n, n/a, weight), composite and errors.

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
        console: where to print; a new stdout console by default.
    """
    console = console or Console()
    run = store.get_run(run_id)
    weights = run.weights
    stats = summary_stats(store, run.id)
    aggregate = stats.aggregate()
    table = Table(
        title=f"run {run.id} · suite {escape(run.suite)} · {run.n_samples} samples · {run.status}",
        title_justify="left",
    )
    for col, justify in (
        ("metric", "left"),
        ("weight", "right"),
        ("mean", "right"),
        ("95% CI", "right"),
        ("n", "right"),
        ("n/a", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for name, s in aggregate.items():
        if name == "composite":
            continue
        ci = "—" if s.ci_low is None else f"[{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]"
        w = weights.get(name, 0.0)
        table.add_row(
            escape(name), f"{w:.2f}" if w else "·", _fmt(s.mean), ci, str(s.n), str(s.n_missing)
        )
    comp = aggregate["composite"]
    ci = "—" if comp.ci_low is None else f"[{_fmt(comp.ci_low)}, {_fmt(comp.ci_high)}]"
    table.add_section()
    table.add_row(
        "[bold]composite[/]",
        "",
        f"[bold]{_fmt(comp.mean)}[/]",
        ci,
        str(comp.n),
        str(comp.n_missing),
    )
    console.print(table)
    noise = judge_noise(store, run.id)
    means = {name: s.mean for name, s in aggregate.items()}
    verdict = run_verdict(run, comp.mean, means, composite_se=noise.get("composite_se"))
    if noise:
        print_judge_noise(noise, console)
    modes = {
        (r.get("model"), r.get("mode"), r.get("error"))
        for r in store.records(run.id, "judge_setup")
        if r.get("purpose") == "output mode"
    }
    for model, mode, error in sorted(modes, key=str):
        said = f"judge output mode: {mode}" if mode else f"judge output mode unknown ({error})"
        console.print(f"{said} · {escape(str(model))}", highlight=False)
    if verdict.get("uncertain"):
        low, high = verdict["uncertain"]["interval"]
        at_low, at_high = verdict["uncertain"]["recommendations"]
        console.print(
            f"run verdict: [bold]uncertain[/]: the mean composite's interval {low:.3f}–"
            f"{high:.3f} under the judges' noise spans {at_low} and {at_high} · band "
            f"[bold]{escape(str(verdict['band']))}[/]"
        )
    elif verdict["band"] is not None:
        console.print(
            f"run verdict: [bold]{escape(str(verdict['recommendation']))}[/] "
            f"(weight {verdict['recommendation_weight']:+.1f}) · "
            f"band [bold]{escape(str(verdict['band']))}[/] "
            "(the suite's thresholds applied to the mean composite)"
        )
    if verdict.get("gates_failed"):
        console.print(
            f"[red]gate failed: {escape(gate_note(verdict['gates_failed']))}[/]: the run is a "
            "reject whatever its composite (the suite's \\[gates])",
            highlight=False,
        )
    print_usage(run_usage(store, run.id, stats), console)
    mean_cov, lowest, failed = stats.mean_coverage, stats.lowest_coverage, stats.n_failed
    if mean_cov == 0:
        console.print(
            "[yellow]coverage 0%[/]: no weighted metric was measured, so there is no composite "
            "and no verdict (see each sample's reasons)."
        )
    elif mean_cov is not None and lowest is not None and lowest < 1.0:
        console.print(
            f"[yellow]coverage {mean_cov:.0%}[/]: some weighted metrics were not measured; the "
            "composite is renormalised over the metrics that were (see each sample's reasons)."
        )
    if failed:
        console.print(f"[red]{failed} samples had a metric error[/] (see the JSON/HTML report).")
    source = samples_of(store, run)
    errors = source.read_errors(run.id, limit=10, warnings=False)
    if errors:
        console.print(f"[red]{run.n_errors} input lines could not be read:[/]")
        for e in errors:
            console.print(f"  {e}", markup=False, highlight=False)
        if run.n_errors > 10:
            console.print(f"  … and {run.n_errors - 10} more")
    warnings = source.read_errors(run.id, limit=11, warnings=True)
    if warnings:
        n = f"{len(warnings)}" if len(warnings) <= 10 else "More than 10"
        console.print(f"[yellow]{n} input lines were read with a value left out:[/]")
        for e in warnings[:10]:
            console.print(f"  {e}", markup=False, highlight=False)
        if len(warnings) > 10:
            console.print("  … and more (the JSON report lists them all)")


def _interval(ci: Any) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def print_judge_noise(noise: dict[str, Any], console: Console) -> None:
    """Print each repeated judge metric's noise beside the run's spread, and the count of
    ``uncertain`` samples.

    Args:
        noise: :func:`agentgauge.documents.summary.judge_noise` of the run.
        console: where to print.
    """
    table = compact_table(
        "judge noise (each judgment asked k times; unit scale; [95% CI])",
        caption="sd: mean within-sample SD; pooled: root mean within-sample variance; agree: "
        "equal pairs of answers; alpha: Krippendorff's across repeats; spread: SD between "
        "samples; uncertain: the metric's threshold within its noise",
        caption_justify="left",
    )
    for col in ("metric", "k", "sd", "pooled", "agree", "alpha", "spread", "uncertain"):
        table.add_column(col, justify="left" if col == "metric" else "right", no_wrap=True)
    for name, m in noise["metrics"].items():
        k = m["answers"] / m["samples"] if m["samples"] else 0
        table.add_row(
            escape(name),
            f"{k:g}",
            _fmt(m["mean_sd"]) + _interval(m["mean_sd_ci"]),
            _fmt(m["pooled_sd"]) + _interval(m["pooled_sd_ci"]),
            _fmt(m["agreement"], 2),
            _fmt(m["alpha"], 2),
            _fmt(m["between_sd"]),
            str(m["uncertain"]),
        )
    console.print(table)
    if noise["uncertain"]:
        console.print(
            f"[yellow]{noise['uncertain']} samples uncertain[/]: their judges' noise could "
            "change their verdict (a recommendation threshold or a gate lies within it)"
        )


_USAGE_LABELS = {
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cache_read_tokens": "cache read tokens",
    "total_tokens": "total tokens",
    "cost_usd": "cost (USD)",
    "model_calls": "model calls",
}


def _amount(value: float | None, field: str) -> str:
    if value is None:
        return "—"
    if field == "cost_usd":
        return f"${value:.4f}" if value >= 0.01 else f"${value:.6f}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def print_usage(usage: dict[str, Any], console: Console) -> None:
    """Print a run's tokens and cost (:func:`~agentgauge.report.export.run_usage`): the
    agent's totals and means per sample with their 95% CIs, then what the judges spent.
    Nothing is printed when neither the traces nor the judges recorded any.

    Args:
        usage: the run's usage figures.
        console: where to print.
    """
    agent, judge = usage["agent"], usage["judge"]
    if all(agent[f]["n"] == 0 for f in USAGE_FIELDS if f != "model_calls") and not judge:
        return
    table = compact_table("tokens and cost of the agent (each token counted once)")
    table.add_column("", no_wrap=True)
    for col in ("total", "mean per sample", "95% CI", "n", "n/a"):
        table.add_column(col, justify="right", no_wrap=True)
    for field in USAGE_FIELDS:
        s = agent[field]
        if s["n"] == 0:
            continue
        ci = (
            "—"
            if s["ci_low"] is None
            else f"[{_amount(s['ci_low'], field)}, {_amount(s['ci_high'], field)}]"
        )
        table.add_row(
            _USAGE_LABELS[field],
            _amount(s["total"], field),
            _amount(s["mean"], field),
            ci,
            str(s["n"]),
            str(s["n_missing"]),
        )
    if table.row_count:
        console.print(table)
    per_usd, per_tokens = usage["composite_per_usd"], usage["composite_per_1k_tokens"]
    if per_usd is not None or per_tokens is not None:
        console.print(
            f"composite per dollar {_fmt(per_usd, 2)} · per 1,000 tokens {_fmt(per_tokens)}",
            highlight=False,
        )
    if judge:
        cost = _amount(judge["cost_usd"], "cost_usd")
        unknown = (
            f" (+{judge['cost_unknown']} calls of unknown cost)" if judge["cost_unknown"] else ""
        )
        console.print(
            f"judges: {judge['calls']} calls paid for ({judge['requests']} requests, "
            f"{_amount(judge['total_tokens'], 'total_tokens')} tokens, {cost}{unknown}), "
            f"{judge['cached']} answers from the cache",
            highlight=False,
        )


def print_runs(
    store: Store, console: Console | None = None, limit: int = 50, *, tag: str | None = None
) -> None:
    """Print the runs in the store, newest first: each with its name, tags, kind, suite,
    source, model and mode (as the run has them), wrapped at the terminal's width, never cut.

    Args:
        store: the results store.
        console: where to print.
        limit: at most this many runs.
        tag: only the runs with this tag.
    """
    console = console or Console()
    table = compact_table(
        f"runs in {escape(str(store.path))} (n: samples, bad: unreadable lines, mean: composite)"
    )
    # the id is what users copy: it never wraps or shrinks; the rest wraps, never cut
    table.add_column("run", no_wrap=True, min_width=12)
    table.add_column("name #tags, what", overflow="fold")
    table.add_column("status", overflow="fold")
    for col in ("n", "bad", "created (UTC)", "mean"):
        table.add_column(col, justify="right", no_wrap=True)
    chosen = store.list_runs(limit) if tag is None else store.list_runs()
    for run in [r for r in chosen if tag is None or tag in r.tags][:limit]:
        mean = summary_stats(store, run.id).composite.mean
        tags = " ".join(f"#{t}" for t in run.tags)
        what = " · ".join(x for x in (run.kind, run.suite, run.source, run.model, run.mode) if x)
        table.add_row(
            escape(run.id),
            Text("\n".join(x for x in (run.name, tags, what) if x)),
            escape(run.status),
            str(run.n_samples),
            str(run.n_errors),
            run.created_at[:16].replace("T", " "),
            _fmt(mean),
        )
    console.print(table)
