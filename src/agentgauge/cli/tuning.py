"""``agentgauge tune`` and ``impact``: sessions over a live agent, and the options every
command running one shares."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from agentgauge._atomic import atomic_path
from agentgauge.cli._common import (
    DbOption,
    NameOption,
    OverwriteOption,
    SuiteOption,
    TagOption,
    console,
    err_console,
    label_run,
    output_file,
    refuse_clashes,
)

if TYPE_CHECKING:
    from agentgauge.io.jsonl import ReadError
    from agentgauge.tuning.agent_run import AgentSession, AgentSetup, SessionOutcome
    from agentgauge.tuning.impact_session import ImpactOutcome
    from agentgauge.tuning.session import TuningOutcome

AgentOption = Annotated[
    str, typer.Option("--agent", help="The agent: 'module:factory' (an object with run()).")
]
TasksOption = Annotated[
    str,
    typer.Option(
        "--tasks", help="Task JSONL file, or 'simulated' for the bundled SIMULATION tasks."
    ),
]
SpaceOption = Annotated[
    Path | None,
    typer.Option("--space", help="TOML file with [params.NAME] tables (extra parameters)."),
]
ParamsOption = Annotated[
    str | None, typer.Option("--params", help="Parameters as k=v,k2=v2 (defaults for the rest).")
]
SeedOption = Annotated[int, typer.Option(help="Seed of everything random.")]
JobsOption = Annotated[int, typer.Option(min=1, help="Concurrent agent runs.")]
ProgressOption = Annotated[bool, typer.Option(help="Show a progress bar.")]


def skipped(error: ReadError) -> None:
    """Report a line of the task file that is not a task (it is skipped).

    Args:
        error: the line's error.
    """
    err_console.print(f"skipped {error}", style="yellow", highlight=False, markup=False)


def simulation_banner(setup: AgentSetup) -> None:
    """Say so when the agent is a simulation, before its figures are shown.

    Args:
        setup: the session's agent.
    """
    if setup.simulation:
        console.print(
            "[bold magenta]SIMULATION[/]: this agent is simulated (no model is called); "
            "its figures describe the simulator, not a real agent."
        )


def _inputs(tasks: str) -> list[Path]:
    """The task file, unless the bundled tasks are named."""
    return [] if tasks == "simulated" else [Path(tasks)]


_Outcome = TypeVar("_Outcome", bound="SessionOutcome")


def _run_session(
    session: AgentSession[Any, _Outcome],
    db: Path,
    show: Callable[[_Outcome], None],
    plot: Path | None,
    json_out: Path | None,
    name: str | None,
    tags: list[str] | None,
) -> None:
    """Run a prepared session into the store (with its --name and --tag), show its outcome,
    write its plot and JSON."""
    from agentgauge.store import Store

    simulation_banner(session.setup)
    with Store(db) as store:
        outcome = session.run(store)
        label_run(store, outcome.run_id, name, tags)
    show(outcome)
    if plot is not None:
        outcome.plot(plot)
        console.print(f"wrote {plot}")
    if json_out is not None:
        text = json.dumps(outcome.as_dict(), indent=2, default=str)
        with atomic_path(json_out) as temporary:
            temporary.write_text(text, encoding="utf-8")
        console.print(f"wrote {json_out}")


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _print_tuning(outcome: TuningOutcome) -> None:
    from rich.table import Table

    summary = outcome.summary
    title = escape(f"Best parameters by level ({outcome.result.strategy}, run {outcome.run_id})")
    table = Table(title=title)
    table.add_column("parameter")
    table.add_column("value", justify="right")
    for name, value in summary.best_params.items():
        table.add_row(escape(name), escape(_fmt(value)))
    console.print(table)
    console.print(
        f"{summary.objective}: {_fmt(summary.best_objective_in_tuning)} in episode "
        f"{summary.best_episode} (its tasks), {_fmt(summary.best_objective_all_tasks)} "
        "re-measured on every task with fresh seeds"
    )
    if summary.policy_params is not None:
        shown = ", ".join(f"{k}={_fmt(v)}" for k, v in summary.policy_params.items())
        console.print(f"rl policy mean at the end: {shown}", markup=False)


def tune_command(
    agent: AgentOption,
    tasks: TasksOption,
    strategy: Annotated[str, typer.Option(help="rl, bayes, random or a plugin's tuner.")] = "rl",
    episodes: Annotated[int, typer.Option(min=1, help="Settings to evaluate.")] = 40,
    tasks_per_episode: Annotated[
        int | None, typer.Option(min=1, help="Tasks per episode (default: all).")
    ] = None,
    repeats: Annotated[int, typer.Option(min=1, help="Seeded repeats per task.")] = 1,
    learning_rate: Annotated[float, typer.Option(help="rl: step size (0.001-0.1).")] = 0.1,
    seed: SeedOption = 0,
    objective: Annotated[
        str | None, typer.Option(help="Optimise this metric instead of the composite.")
    ] = None,
    params: ParamsOption = None,
    space_file: SpaceOption = None,
    suite: SuiteOption = "behavior",
    db: DbOption = Path("agentgauge.db"),
    plot: Annotated[
        Path | None, typer.Option(callback=output_file, help="Write the convergence plot (PNG).")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", callback=output_file, help="Write the result JSON.")
    ] = None,
    jobs: JobsOption = 4,
    progress: ProgressOption = True,
    name: NameOption = None,
    tags: TagOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Tune an agent's parameters (rl, bayes, random, ...) for its score.

    The best setting is the one with the highest level of the suite's score (or of
    --objective), re-measured at the end on every task with fresh seeds.
    """
    from agentgauge.tuning.session import TuneOptions, TuningSession

    refuse_clashes(
        {"--plot": plot, "--json": json_out},
        inputs=_inputs(tasks),
        store=db,
        overwrite=overwrite,
    )
    options = TuneOptions(
        agent=agent,
        tasks=tasks,
        params=params,
        space_file=space_file,
        suite=suite,
        seed=seed,
        repeats=repeats,
        jobs=jobs,
        progress=progress,
        strategy=strategy,
        episodes=episodes,
        tasks_per_episode=tasks_per_episode,
        learning_rate=learning_rate,
        objective=objective,
    )
    session = TuningSession.prepare(options, on_skip=skipped)
    _run_session(session, db, _print_tuning, plot, json_out, name, tags)


def _print_impact(outcome: ImpactOutcome) -> None:
    from rich.table import Table

    from agentgauge.report.terminal import compact_table

    who = "the SIMULATED agent" if outcome.simulation else "this agent"
    table = compact_table(
        f"Parameter impact on {who} (run {outcome.run_id}): slope over the range, Spearman rho"
    )
    for column in ("parameter", "metric", "slope [95% CI]", "rho", "effect"):
        justify = "left" if column in ("parameter", "metric") else "right"
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for e in outcome.effects:
        ci = "" if e.ci_low is None else f" [{e.ci_low:+.3f}, {e.ci_high:+.3f}]"
        slope = "n/a" if e.slope is None else f"{e.slope:+.3f}{ci}"
        verdict = {1: "[green]+[/]", -1: "[red]-[/]", 0: "none"}[e.sign]
        rho = "n/a" if e.rho is None else f"{e.rho:+.2f}"
        table.add_row(escape(e.param), escape(e.metric), slope, rho, verdict)
    console.print(table)
    claim_table = Table(title=f"Expected parameter effects, checked on {who}")
    claim_table.add_column("claim")
    claim_table.add_column("verdict")
    for c in outcome.claims:
        direction = {1: " (up)", -1: " (down)", None: ""}[c.expected_sign]
        colour = "green" if c.verdict == "holds" else "yellow"
        claim = escape(f"{c.param} -> {c.metric}{direction}")
        claim_table.add_row(claim, f"[{colour}]{escape(c.verdict)}[/]")
    console.print(claim_table)


def impact_command(
    agent: AgentOption,
    tasks: TasksOption,
    params: Annotated[
        str | None, typer.Option("--params", help="Base point k=v,... (defaults for the rest).")
    ] = None,
    sweep_params: Annotated[
        str | None, typer.Option("--sweep", help="Parameters to sweep (comma list; default all).")
    ] = None,
    points: Annotated[int, typer.Option(min=3, help="Values per parameter.")] = 7,
    repeats: Annotated[int, typer.Option(min=1, help="Seeded repeats per value.")] = 3,
    seed: SeedOption = 0,
    space_file: SpaceOption = None,
    suite: SuiteOption = "behavior",
    db: DbOption = Path("agentgauge.db"),
    plot: Annotated[
        Path | None, typer.Option(callback=output_file, help="Write the heat map (PNG).")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", callback=output_file, help="Write the effects JSON.")
    ] = None,
    jobs: JobsOption = 4,
    progress: ProgressOption = True,
    name: NameOption = None,
    tags: TagOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Measure each parameter's effect on each metric.

    Each parameter is swept on its own around the base point (--params), the others held
    there.
    """
    from agentgauge.tuning.impact_session import ImpactOptions, ImpactSession

    refuse_clashes(
        {"--plot": plot, "--json": json_out},
        inputs=_inputs(tasks),
        store=db,
        overwrite=overwrite,
    )
    names = [n.strip() for n in sweep_params.split(",") if n.strip()] if sweep_params else None
    options = ImpactOptions(
        agent=agent,
        tasks=tasks,
        params=params,
        space_file=space_file,
        suite=suite,
        seed=seed,
        repeats=repeats,
        jobs=jobs,
        progress=progress,
        sweep=names,
        points=points,
    )
    session = ImpactSession.prepare(options, on_skip=skipped)
    _run_session(session, db, _print_impact, plot, json_out, name, tags)
