"""``agentgauge run``: run an agent over tasks, write its traces, then score them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentgauge.cli._common import (
    DbOption,
    KeepSecretsOption,
    NameOption,
    OverwriteOption,
    SuiteOption,
    TagOption,
    console,
    label_run,
    output_file,
    refuse_clashes,
    write_outputs,
)
from agentgauge.cli.tuning import (
    AgentOption,
    JobsOption,
    ParamsOption,
    ProgressOption,
    SeedOption,
    SpaceOption,
    TasksOption,
    simulation_banner,
    skipped,
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
    progress: ProgressOption = True,
    name: NameOption = None,
    tags: TagOption = None,
    overwrite: OverwriteOption = False,
    keep_secrets: KeepSecretsOption = False,
) -> None:
    """Run an agent over tasks, write its traces, then score them.

    The traces are scored with --suite unless --no-score is given; they are scored whole, and
    written with their credentials hidden unless --keep-secrets is given.
    """
    from agentgauge.config import load_suite
    from agentgauge.store import Store
    from agentgauge.tuning.agent_run import RunOptions, load_setup, run_agent, score_agent_run

    refuse_clashes(
        {"--out": out, "--json": json_out}, inputs=[Path(tasks)], store=db, overwrite=overwrite
    )
    options = RunOptions(
        agent=agent,
        tasks=tasks,
        params=params,
        space_file=space_file,
        suite=suite,
        seed=seed,
        repeats=repeats,
        jobs=jobs,
        progress=progress,
        out=out,
        keep_secrets=keep_secrets,
    )
    chosen_suite = load_suite(suite) if score else None
    setup = load_setup(options, on_skip=skipped)
    simulation_banner(setup)
    run = run_agent(setup, options)
    console.print(f"wrote {len(run.traces)} traces to {out} ({run.n_agent_errors} agent errors)")
    if chosen_suite is None:
        return
    with Store(db) as store:
        run_id = score_agent_run(run, chosen_suite, options, store=store)
        label_run(store, run_id, name, tags)
    write_outputs(db, run_id, json_out=json_out, csv_out=None, html_out=None, fail_under=None)
