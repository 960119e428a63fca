"""``agentgauge judge ...``: what a judge sees, and how well it agrees with people."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.rule import Rule

from agentgauge.cli._common import (
    Command,
    DbOption,
    JudgeKeyEnvOption,
    JudgeOption,
    JudgeUrlOption,
    OverwriteOption,
    console,
    not_a_file,
    output_file,
    refuse_clashes,
    require_store,
    usage_error,
)

if TYPE_CHECKING:
    from agentgauge.stats import Agreement
    from agentgauge.workflows.calibration import JudgePreview, MetricCalibration

judge_app = typer.Typer(
    help="LLM judges: preview what a judge sees, calibrate it against human labels, compare "
    "runs pairwise.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _require_files(*paths: Path) -> None:
    for path in paths:
        if not path.is_file():
            raise usage_error(not_a_file(path))


def _print_preview(metric: str, item: JudgePreview) -> None:
    title = f"{metric} on {item.trace_id}"
    if item.reason is not None:
        console.print(Rule(title, align="left"))
        console.print(f"not judged: {item.reason}", markup=False, highlight=False)
        return
    console.print(Rule(f"{title} · about {item.estimated_tokens} tokens", align="left"))
    for name, text in (("instructions", item.instructions), ("prompt", item.prompt)):
        console.print(f"[bold]{name}[/]")
        console.print(text, markup=False, highlight=False, soft_wrap=True)


@judge_app.command("preview", cls=Command)
def preview_command(
    traces: Annotated[Path, typer.Argument(metavar="TRACES", help="Native JSONL trace file.")],
    metric: Annotated[str, typer.Option("--metric", help="The judge metric's name.")],
    suite: Annotated[
        str | None,
        typer.Option(help="Suite holding the metric (default: the built-in metric alone)."),
    ] = None,
    trace_id: Annotated[str | None, typer.Option("--id", help="Show this trace only.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many traces.")] = 1,
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    judge_api_key_env: JudgeKeyEnvOption = None,
    db: DbOption = Path("agentgauge.db"),
) -> None:
    """Print what a judge metric would be sent for the first traces of a file.

    Its instructions and the trace's view within its token budget; no model is called.
    """
    from agentgauge.workflows.calibration import judge_suite, preview

    _require_files(traces)
    chosen = judge_suite(
        suite,
        metric,
        model=judge,
        base_url=judge_url,
        api_key_env=judge_api_key_env,
        cache_path=str(db),
    )
    for item in preview(traces, chosen, metric, trace_id=trace_id, limit=limit):
        _print_preview(metric, item)


def _figure(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}" + ("" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]")


def _row(who: str, figures: Agreement) -> list[str]:
    return [
        who,
        str(figures.n),
        _figure(figures.mae, figures.mae_ci),
        _figure(figures.spearman, figures.spearman_ci),
        _figure(figures.kappa, figures.kappa_ci),
    ]


def _print_calibration(rows: list[MetricCalibration]) -> None:
    from agentgauge.report.terminal import compact_table

    table = compact_table(
        "agreement with the human labels (humans: each against the others, the ceiling)",
        caption="n: pairs; MAE on the scale; rho: Spearman; kappa: quadratic-weighted; "
        "[95% bootstrap CI]",
        caption_justify="left",
    )
    table.add_column("metric", no_wrap=True)
    table.add_column("rater", no_wrap=True)
    for col in ("n", "MAE", "rho", "kappa"):
        table.add_column(col, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(f"{row.metric} ({row.scale})", *_row("judge", row.judge))
        table.add_row("", *_row("humans", row.human_ceiling))
        table.add_section()
    console.print(table)
    for row in rows:
        if row.judge_missing:
            console.print(
                f"{row.metric}: the judge gave no score on {row.judge_missing} labelled traces "
                f"({row.reason})",
                markup=False,
                highlight=False,
            )
        if row.human_ceiling.n == 0:
            console.print(f"{row.metric}: no trace has two human labels: no human ceiling")


@judge_app.command("calibrate", cls=Command)
def calibrate_command(
    suite: Annotated[str, typer.Option(help="Suite holding the judge metrics (TOML or name).")],
    traces: Annotated[Path, typer.Option(help="Native JSONL trace file.")],
    labels: Annotated[
        Path,
        typer.Option(help="Human labels, JSON Lines: trace_id, metric, score, rater (optional)."),
    ],
    label_scale: Annotated[
        str | None,
        typer.Option(
            help="LOW-HIGH: the labels' scale, for metrics that have none of their own (their "
            "value in [0, 1] is mapped onto it)."
        ),
    ] = None,
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    judge_api_key_env: JudgeKeyEnvOption = None,
    db: DbOption = Path("agentgauge.db"),
    json_out: Annotated[
        Path | None,
        typer.Option("--json", callback=output_file, help="Write the agreement figures here."),
    ] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """How well a suite's judges agree with human labels.

    MAE, Spearman and quadratic-weighted kappa with bootstrap CIs, beside the humans' own
    leave-one-out agreement where several humans labelled a trace.
    """
    from agentgauge.report.export import write_json
    from agentgauge.workflows.calibration import calibrate, judge_suite

    _require_files(traces, labels)
    refuse_clashes({"--json": json_out}, inputs=[traces, labels], store=db, overwrite=overwrite)
    chosen = judge_suite(
        suite, model=judge, base_url=judge_url, api_key_env=judge_api_key_env, cache_path=str(db)
    )
    rows = calibrate(chosen, traces, labels, label_scale=label_scale)
    _print_calibration(rows)
    if json_out:
        write_json({"suite": chosen.name, "metrics": [r.as_dict() for r in rows]}, json_out)
        console.print(f"wrote {json_out}")


def _rate(pair: dict[str, Any]) -> str:
    if pair["win_rate_b"] is None:
        return "—"
    ci = "" if pair["ci_low"] is None else f" [{pair['ci_low']:.2f}, {pair['ci_high']:.2f}]"
    return f"{pair['win_rate_b']:.2f}{ci}"


def print_pairwise(doc: dict[str, Any]) -> None:
    """Print a pairwise comparison: each pair of runs, and Bradley–Terry strengths.

    Args:
        doc: :func:`agentgauge.workflows.pairwise.pairwise_runs`' result.
    """
    from agentgauge.report.terminal import compact_table

    table = compact_table(
        f"pairwise judgment ({doc['model']}): {doc['criteria']}",
        caption="each task judged in both orders under anonymous labels; A, B: wins; inc.: "
        "the orders disagree (a tie, never a win); cons.: position consistency; B win rate: "
        "(B wins + ½ ties and inconsistent) / n [95% bootstrap CI]; consistency floor "
        f"{doc['consistency_floor']:g}",
        caption_justify="left",
    )
    for col in ("run A", "run B", "n", "A", "B", "tie", "inc.", "cons.", "B win rate"):
        table.add_column(col, justify="left" if col.startswith("run") else "right", no_wrap=True)
    for pair in doc["pairs"]:
        consistency = "—" if pair["consistency"] is None else f"{pair['consistency']:.2f}"
        table.add_row(
            pair["run_a"],
            pair["run_b"],
            str(pair["n"]),
            str(pair["wins_a"]),
            str(pair["wins_b"]),
            str(pair["ties"]),
            str(pair["inconsistent"]),
            consistency,
            _rate(pair),
        )
    console.print(table)
    for pair in doc["pairs"]:
        console.print(
            f"{pair['run_b']} against {pair['run_a']}: [bold]{pair['conclusion']}[/]",
            highlight=False,
        )
    for pair in doc["pairs"]:
        if pair["failed"]:
            console.print(
                f"{pair['run_a']} vs {pair['run_b']}: {pair['failed']} pairs not judged "
                f"({'; '.join(pair['errors'])})",
                markup=False,
                highlight=False,
            )
    bt = doc.get("bradley_terry")
    if bt:
        strengths = compact_table(
            "Bradley-Terry strengths (log scale, centred; [95% bootstrap CI])",
            caption_justify="left",
        )
        strengths.add_column("run", no_wrap=True)
        strengths.add_column("strength", justify="right", no_wrap=True)
        order = sorted(range(len(bt["runs"])), key=lambda i: -bt["strengths"][i])
        for i in order:
            strengths.add_row(
                bt["runs"][i],
                f"{bt['strengths'][i]:+.2f} [{bt['ci_low'][i]:+.2f}, {bt['ci_high'][i]:+.2f}]",
            )
        console.print(strengths)


@judge_app.command("pairwise", cls=Command)
def pairwise_command(
    runs: Annotated[
        list[str],
        typer.Argument(metavar="RUNS", help="Two runs (baseline first, then candidate) or more."),
    ],
    criteria: Annotated[
        str, typer.Option(help="What makes one answer better than another, in your words.")
    ],
    judge: JudgeOption = None,
    judge_url: JudgeUrlOption = None,
    judge_api_key_env: JudgeKeyEnvOption = None,
    db: DbOption = Path("agentgauge.db"),
    by: Annotated[str, typer.Option(help="Pair samples by 'task' or by trace 'id'.")] = "task",
    consistency_floor: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Below this position consistency the answer is 'no reliable preference'.",
        ),
    ] = 0.6,
    json_out: Annotated[
        Path | None, typer.Option("--json", callback=output_file, help="Write the result here.")
    ] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Which run's answers does a judge prefer? Position bias controlled.

    Each task the runs share is judged twice, once in each order, under anonymous labels; a
    pair whose two answers disagree is inconsistent, not a win. Reports B's win rate over A
    with a bootstrap CI, the position consistency, and 'no reliable preference' below the
    consistency floor; with more than two runs, Bradley-Terry strengths with CIs. The result
    is recorded with the runs, where 'agentgauge compare A B' shows it.
    """
    from agentgauge.judges.preflight import check_judge
    from agentgauge.judges.settings import JudgeSettings
    from agentgauge.report.export import write_json
    from agentgauge.store import Store
    from agentgauge.workflows.pairwise import pairwise_runs

    if by not in ("task", "id"):
        raise usage_error(f"--by must be 'task' or 'id', not {by!r}")
    if judge is None:
        raise usage_error("--judge MODEL: the judge model to compare the runs with")
    require_store(db)
    refuse_clashes({"--json": json_out}, store=db, overwrite=overwrite)
    settings = JudgeSettings(
        model=judge, base_url=judge_url, api_key_env=judge_api_key_env, cache_path=str(db)
    )
    check_judge(settings)
    with Store(db) as store:
        try:
            doc = pairwise_runs(store, runs, criteria, settings, by=by, floor=consistency_floor)
        except ValueError as exc:
            raise usage_error(str(exc)) from None
    if not any(pair["n"] or pair["failed"] for pair in doc["pairs"]):
        raise usage_error(f"the runs share no sample (by {by}): nothing to compare")
    print_pairwise(doc)
    if json_out:
        write_json(doc, json_out)
        console.print(f"wrote {json_out}", markup=False, highlight=False)
