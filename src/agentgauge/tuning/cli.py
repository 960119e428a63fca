"""``agentgauge run``, ``tune`` and ``impact``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentgauge._cli import (
    DbOption,
    SuiteOption,
    console,
    err_console,
    output_file,
    usage_error,
    write_outputs,
)
from agentgauge.report.terminal import compact_table

if TYPE_CHECKING:
    from agentgauge.config import Suite
    from agentgauge.model import Task
    from agentgauge.tuning.space import ParameterSpace

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
    typer.Option("--space", help="TOML file with \\[params.NAME] tables (extra parameters)."),
]
ParamsOption = Annotated[
    str | None, typer.Option("--params", help="Parameters as k=v,k2=v2 (defaults for the rest).")
]
SeedOption = Annotated[int, typer.Option(help="Seed of everything random.")]
JobsOption = Annotated[int, typer.Option(min=1, help="Concurrent agent runs.")]


@contextmanager
def _progress(label: str, total: int, enabled: bool = True) -> Iterator[Any]:
    with Progress(
        TextColumn(f"[bold]{label}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=not enabled,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n=1: bar.advance(task, n)


def _load_agent(ref: str) -> Any:
    from agentgauge.agents.protocol import AgentLoadError, load_agent

    try:
        return load_agent(ref)
    except AgentLoadError as exc:
        raise usage_error(str(exc)) from None


def _load_tasks(ref: str) -> list[Task]:
    from agentgauge.agents.protocol import read_tasks
    from agentgauge.io.jsonl import ReadError

    if ref == "simulated":
        from agentgauge.agents.simulated import simulated_tasks

        return simulated_tasks()
    path = Path(ref)
    if not path.is_file():
        raise usage_error(f"--tasks: no such file: {path}")
    tasks = []
    for item in read_tasks(path):
        if isinstance(item, ReadError):
            err_console.print(f"skipped {item}", style="yellow", highlight=False, markup=False)
        else:
            tasks.append(item)
    if not tasks:
        raise usage_error(
            f'{path}: no valid task. --tasks takes one Task a line ({{"id", "input", ...}}); '
            'a trace file ({"id", "task", "steps", ...}) is for evaluate'
        )
    return tasks


def _load_suite(ref: str) -> Suite:
    from agentgauge.config import SuiteError, load_suite

    try:
        return load_suite(ref)
    except SuiteError as exc:
        raise usage_error(str(exc)) from None


def _load_space(path: Path | None) -> ParameterSpace:
    from agentgauge.tuning.space import ParameterError, load_space

    try:
        return load_space(path)
    except ParameterError as exc:
        raise usage_error(str(exc)) from None


def _base_params(text: str | None, space: ParameterSpace) -> dict[str, Any]:
    from agentgauge.agents.protocol import parse_params
    from agentgauge.tuning.space import ParameterError

    try:
        return space.complete(parse_params(text))
    except (ValueError, ParameterError) as exc:
        raise usage_error(str(exc)) from None


def _simulation_banner(agent: Any) -> None:
    meta = getattr(agent, "trace_metadata", {}) or {}
    if meta.get("simulation"):
        console.print(
            "[bold magenta]SIMULATION[/]: this agent is simulated (no model is called); "
            "its figures describe the simulator, not a real agent."
        )


def run_command(
    agent: AgentOption,
    tasks: TasksOption,
    out: Annotated[
        Path,
        typer.Option("--out", callback=output_file, help="Write the traces here (JSONL, .gz ok)."),
    ],
    params: ParamsOption = None,
    space_file: SpaceOption = None,
    repeats: Annotated[int, typer.Option(min=1, help="Seeded repeats of each task.")] = 1,
    seed: SeedOption = 0,
    jobs: JobsOption = 4,
    score: Annotated[bool, typer.Option("--score/--no-score", help="Score the traces.")] = True,
    suite: SuiteOption = "behavior",
    db: DbOption = Path("agentgauge.db"),
    json_out: Annotated[
        Path | None, typer.Option("--json", callback=output_file, help="Write results JSON.")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Run an agent over tasks, write its traces, then score them with a suite."""
    from agentgauge.agents.protocol import RunSpec, run_agents
    from agentgauge.io.jsonl import write_traces
    from agentgauge.tuning.objective import repeat_seeds

    chosen_suite = _load_suite(suite) if score else None
    the_agent = _load_agent(agent)
    task_list = _load_tasks(tasks)
    space = _load_space(space_file)
    applied = space.apply(_base_params(params, space))
    _simulation_banner(the_agent)
    seeds = repeat_seeds(seed, repeats)
    specs = [RunSpec(t, s, f"{t.id}#s{s}") for t in task_list for s in seeds]
    with _progress("running", len(specs), progress) as advance:
        traces = run_agents(the_agent, specs, applied, jobs=jobs, on_done=lambda _t: advance())
    write_traces(traces, out)
    failed = sum(1 for t in traces if "error" in t.metadata)
    console.print(f"wrote {len(traces)} traces to {out} ({failed} agent errors)")
    if chosen_suite is None:
        return
    from agentgauge.engine import evaluate
    from agentgauge.store import Store

    with Store(db) as store:
        run_id = evaluate(
            traces,
            chosen_suite,
            store=store,
            jobs=1,
            progress=progress,
            kind="agent-run",
            extra_config={"agent": agent, "params": applied, "seeds": seeds, "tasks": tasks},
            sources=[str(out)],
            total=len(traces),
        )
    write_outputs(db, run_id, json_out=json_out, csv_out=None, html_out=None, fail_under=None)


def tune_command(
    agent: AgentOption,
    tasks: TasksOption,
    strategy: Annotated[str, typer.Option(help="rl, bayes or random.")] = "rl",
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
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Tune an agent's parameters (rl, bayes or random) for the level of the suite's score."""
    from agentgauge.store import Store
    from agentgauge.tuning.objective import Objective, repeat_seeds
    from agentgauge.tuning.tuner import EpisodeRecord, run_tuning

    if strategy not in ("rl", "bayes", "random"):
        raise usage_error(f"--strategy: {strategy!r} is not one of rl, bayes, random")
    chosen_suite = _load_suite(suite)
    the_agent = _load_agent(agent)
    task_list = _load_tasks(tasks)
    space = _load_space(space_file)
    start = space.to_unit(_base_params(params, space))
    try:
        target = Objective(the_agent, task_list, chosen_suite, space, metric=objective, jobs=jobs)
        tuner = _strategy(strategy, start, space.names, seed=seed, learning_rate=learning_rate)
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    _simulation_banner(the_agent)
    config = {
        "agent": agent,
        "tasks": tasks,
        "strategy": strategy,
        "episodes": episodes,
        "tasks_per_episode": tasks_per_episode,
        "repeats": repeats,
        "learning_rate": learning_rate if strategy == "rl" else None,
        "seed": seed,
        "objective": target.label,
        "space": space.model_dump(mode="json"),
        "simulation": bool((getattr(the_agent, "trace_metadata", {}) or {}).get("simulation")),
    }
    with Store(db) as store:
        run_id = store.create_run(kind="tune", suite=chosen_suite.name, config=config)
        with _progress(f"tuning ({strategy})", episodes, progress) as advance:

            def on_episode(record: EpisodeRecord) -> None:
                store.append_record(run_id, "tuning", record.as_dict())
                advance()

            try:
                result = run_tuning(
                    target,
                    tuner,
                    episodes=episodes,
                    tasks_per_episode=tasks_per_episode,
                    repeats=repeats,
                    seed=seed,
                    on_episode=on_episode,
                )
            except BaseException:
                # the episodes done so far are already in the store
                store.finish_run(run_id, status="interrupted")
                raise
        if result.best is None:
            store.finish_run(run_id, status="failed")
            raise usage_error("no episode could be measured (every objective was None)")
        # the best setting's level on every task with fresh seeds (no selection bias)
        final = target.evaluate(result.best.params, seeds=repeat_seeds(seed + 1, repeats))
        summary = {
            "strategy": strategy,
            "objective": target.label,
            "best_episode": result.best.episode,
            "best_params": result.best.params,
            "best_objective_in_tuning": result.best.objective,
            "best_objective_all_tasks": final.objective,
            "best_metrics_all_tasks": final.metric_means,
            "policy_params": result.policy_params,
            "episodes": episodes,
        }
        store.append_record(run_id, "tuning_result", summary)
        store.finish_run(run_id)
    _print_tuning(result, summary, run_id)
    if plot is not None:
        from agentgauge.tuning.plots import plot_convergence

        title = None
        if config["simulation"]:
            title = f"Tuning convergence ({strategy}) on the SIMULATED agent"
        plot_convergence([result], plot, title=title)
        console.print(f"wrote {plot}")
    if json_out is not None:
        doc = {
            "run_id": run_id,
            "config": config,
            "result": summary,
            "history": [r.as_dict() for r in result.history],
        }
        json_out.write_text(json.dumps(doc, indent=2, default=str), encoding="utf-8")
        console.print(f"wrote {json_out}")


def _strategy(name: str, start: Any, names: list[str], *, seed: int, learning_rate: float) -> Any:
    if name == "rl":
        from agentgauge.tuning.rl import Reinforce

        return Reinforce(start, learning_rate=learning_rate, seed=seed)
    if name == "bayes":
        from agentgauge.tuning.bayes import BayesSearch

        return BayesSearch(start, names, seed=seed)
    from agentgauge.tuning.random_search import RandomSearch

    return RandomSearch(start, seed=seed)


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _print_tuning(result: Any, summary: dict[str, Any], run_id: str) -> None:
    table = Table(title=f"Best parameters by level ({result.strategy}, run {run_id})")
    table.add_column("parameter")
    table.add_column("value", justify="right")
    for name, value in summary["best_params"].items():
        table.add_row(name, _fmt(value))
    console.print(table)
    console.print(
        f"{summary['objective']}: {_fmt(summary['best_objective_in_tuning'])} in episode "
        f"{summary['best_episode']} (its tasks), {_fmt(summary['best_objective_all_tasks'])} "
        "re-measured on every task with fresh seeds"
    )
    if summary["policy_params"] is not None:
        shown = ", ".join(f"{k}={_fmt(v)}" for k, v in summary["policy_params"].items())
        console.print(f"rl policy mean at the end: {shown}")


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
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Measure each parameter's effect on each metric (one-at-a-time sweeps)."""
    from agentgauge.store import Store
    from agentgauge.tuning.impact import analyse, check_claims, sweep
    from agentgauge.tuning.objective import Objective

    chosen_suite = _load_suite(suite)
    the_agent = _load_agent(agent)
    task_list = _load_tasks(tasks)
    space = _load_space(space_file)
    base = _base_params(params, space)
    names = [n.strip() for n in sweep_params.split(",") if n.strip()] if sweep_params else None
    try:
        for name in names or []:
            space.spec(name)
        target = Objective(the_agent, task_list, chosen_suite, space, jobs=jobs)
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    _simulation_banner(the_agent)
    swept = names or [p.name for p in space.params if p.type != "categorical"]
    with _progress("sweeping", len(swept) * points, progress) as advance:
        observations = sweep(
            target,
            base,
            params=swept,
            points=points,
            repeats=repeats,
            seed=seed,
            on_point=advance,
        )
    effects = analyse(observations, chosen_suite.metrics)
    claims = check_claims(effects)
    simulation = bool((getattr(the_agent, "trace_metadata", {}) or {}).get("simulation"))
    config = {
        "agent": agent,
        "tasks": tasks,
        "base": space.apply(base),
        "points": points,
        "repeats": repeats,
        "seed": seed,
        "simulation": simulation,
    }
    with Store(db) as store:
        run_id = store.create_run(kind="impact", suite=chosen_suite.name, config=config)
        for effect in effects:
            store.append_record(run_id, "impact", effect.as_dict())
        for claim in claims:
            store.append_record(run_id, "impact_claims", claim.as_dict())
        store.finish_run(run_id)
    _print_impact(effects, claims, run_id, simulation)
    if plot is not None:
        from agentgauge.tuning.plots import plot_impact

        title = "Parameter impact on the SIMULATED agent" if simulation else None
        plot_impact(effects, plot, title=title)
        console.print(f"wrote {plot}")
    if json_out is not None:
        doc = {
            "run_id": run_id,
            "config": config,
            "effects": [e.as_dict() for e in effects],
            "claims": [c.as_dict() for c in claims],
        }
        json_out.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        console.print(f"wrote {json_out}")


def _print_impact(effects: Any, claims: Any, run_id: str, simulation: bool) -> None:
    who = "the SIMULATED agent" if simulation else "this agent"
    table = compact_table(
        f"Parameter impact on {who} (run {run_id}): slope over the range, Spearman rho"
    )
    for column in ("parameter", "metric", "slope [95% CI]", "rho", "effect"):
        justify = "left" if column in ("parameter", "metric") else "right"
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for e in effects:
        ci = "" if e.ci_low is None else f" [{e.ci_low:+.3f}, {e.ci_high:+.3f}]"
        slope = "n/a" if e.slope is None else f"{e.slope:+.3f}{ci}"
        verdict = {1: "[green]+[/]", -1: "[red]-[/]", 0: "none"}[e.sign]
        rho = "n/a" if e.rho is None else f"{e.rho:+.2f}"
        table.add_row(e.param, e.metric, slope, rho, verdict)
    console.print(table)
    claim_table = Table(title=f"The spec's claimed relationships, for {who}")
    claim_table.add_column("claim")
    claim_table.add_column("verdict")
    for c in claims:
        direction = {1: " (up)", -1: " (down)", None: ""}[c.expected_sign]
        colour = "green" if c.verdict == "holds" else "yellow"
        claim_table.add_row(f"{c.param} -> {c.metric}{direction}", f"[{colour}]{c.verdict}[/]")
    console.print(claim_table)


def register_tuning_commands(app: typer.Typer) -> None:
    """Add the agent-run and tuning commands to the main app."""
    app.command("run")(run_command)
    app.command("tune")(tune_command)
    app.command("impact")(impact_command)
