"""``agentgauge simulate``: a simulated user talks with an agent over a stateful environment;
every conversation is scored like tau2-bench and stored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from agentgauge.cli._common import (
    DbOption,
    HtmlOption,
    JsonOption,
    NameOption,
    OverwriteOption,
    TagOption,
    check_choice,
    console,
    label_run,
    refuse_clashes,
    usage_error,
    write_outputs,
)
from agentgauge.cli.tuning import skipped

if TYPE_CHECKING:
    from agentgauge.simulate.runs import SimulationOptions

_STARTED = "--resume continues a run as it was started"


def _options(given: dict[str, Any], domain: str | None) -> SimulationOptions:
    """The options of a new simulation run, with a bundled domain's environment and
    scenarios when ``--domain`` names one."""
    from agentgauge.simulate.domains import DOMAINS
    from agentgauge.simulate.runs import SimulationOptions

    if domain is not None:
        check_choice("--domain", domain, DOMAINS)
        bundled = DOMAINS[domain]
        given["env"] = given["env"] or bundled.env
        given["scenarios"] = given["scenarios"] or str(bundled.scenarios)
    for option, key in (("--env", "env"), ("--scenarios", "scenarios"), ("--agent", "agent")):
        if not given[key]:
            hint = " (or --domain orders)" if key != "agent" else ""
            raise usage_error(f"{option} is required{hint}")
    return SimulationOptions(**{k: v for k, v in given.items() if v is not None})


def _print_summary(summary: dict[str, Any]) -> None:
    from agentgauge.report.terminal import compact_table

    reward = summary["reward"]
    console.print(
        f"{summary['conversations']} conversations over {summary['scenarios']} scenarios "
        f"({summary['trials']} trial(s) each); mean reward "
        + ("—" if reward is None else f"{reward:.3f}"),
        highlight=False,
    )
    if summary["pass_hat_k"]:
        console.print(
            "pass^k: all of k trials of a scenario pass; pass@k: at least one does (a trial "
            "passes at reward 1); means over the scenarios",
            highlight=False,
        )
        table = compact_table("")
        table.add_column("k", justify="right")
        table.add_column("pass^k", justify="right")
        table.add_column("pass@k", justify="right")
        for k, hat in summary["pass_hat_k"].items():
            at = summary["pass_at_k"][k]
            table.add_row(
                str(k), "—" if hat is None else f"{hat:.3f}", "—" if at is None else f"{at:.3f}"
            )
        console.print(table)
    share = summary["simulator_share"]
    console.print(
        f"failed conversations: {summary['failed']}; attributed to the simulated user: "
        f"{summary['failed_by_simulator']}" + ("" if share is None else f" ({share:.0%})"),
        highlight=False,
    )
    ends = ", ".join(f"{k} {v}" for k, v in summary["terminations"].items())
    turns = summary["mean_user_turns"]
    console.print(
        f"ended by: {escape(ends)}; user messages per conversation: "
        + ("—" if turns is None else f"{turns:.1f}")
        + f"; conversations with a policy violation: {summary['with_policy_violations']}",
        highlight=False,
    )


def simulate(
    domain: Annotated[
        str | None,
        typer.Option(help="A bundled domain (orders): its environment and scenarios."),
    ] = None,
    env: Annotated[
        str | None,
        typer.Option("--env", help="The environment: 'module:factory' (a class or a function)."),
    ] = None,
    scenarios: Annotated[
        str | None, typer.Option("--scenarios", help="Scenario file (JSONL, one a line).")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="The agent: 'module:factory', or an OpenAI-compatible base URL for the "
            "bundled chat agent (with --agent-model).",
        ),
    ] = None,
    agent_model: Annotated[
        str | None, typer.Option(help="The chat agent's model (with a URL --agent).")
    ] = None,
    agent_key_env: Annotated[
        str | None,
        typer.Option(help="Environment variable holding the agent model's API key."),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            help="'scripted' (the scenarios' user_turns; the default) or an OpenAI-compatible "
            "base URL for a model to play the user (with --user-model).",
        ),
    ] = None,
    user_model: Annotated[
        str | None, typer.Option(help="The simulated user's model (with a URL --user).")
    ] = None,
    user_key_env: Annotated[
        str | None,
        typer.Option(help="Environment variable holding the user model's API key."),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(min=1, help="Conversations per scenario (default 1).")
    ] = None,
    jobs: Annotated[int, typer.Option(min=1, help="Conversations at once.")] = 4,
    seed: Annotated[
        int | None, typer.Option(help="Seed of the first trial (default 0; trial t: seed + t).")
    ] = None,
    params: Annotated[
        str | None, typer.Option("--params", help="The agent's parameters as k=v,k2=v2.")
    ] = None,
    suite: Annotated[
        str | None,
        typer.Option("--suite", help="Scoring suite: simulation (the default) or a suite TOML."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(min=0.001, help="Seconds per model request attempt (default 60)."),
    ] = None,
    max_retries: Annotated[
        int | None, typer.Option(min=0, help="Retries of a failed model request (default 4).")
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Continue this run: only the conversations it lacks are played (the others "
            "are kept, never played again)."
        ),
    ] = None,
    db: DbOption = Path("agentgauge.db"),
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    overwrite: OverwriteOption = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    name: NameOption = None,
    tags: TagOption = None,
) -> None:
    """Play scenarios between a simulated user and an agent, and score each conversation.

    Each conversation is stored as a multi-turn trace as soon as it ends, scored with the
    reward of tau2-bench (end state x actions x communicated); the run reports pass^k and
    pass@k over the trials and the share of failures due to the simulated user.
    """
    from agentgauge.simulate.environment import SimulationError
    from agentgauge.simulate.runs import prepare, resume_options, run_simulation
    from agentgauge.store import Store

    given: dict[str, Any] = {
        "env": env,
        "scenarios": scenarios,
        "agent": agent,
        "agent_model": agent_model,
        "agent_key_env": agent_key_env,
        "user": user,
        "user_model": user_model,
        "user_key_env": user_key_env,
        "trials": trials,
        "seed": seed,
        "params": params,
        "suite": suite,
        "timeout_s": timeout,
        "max_retries": max_retries,
    }
    refuse_clashes({"--json": json_out, "--html": html_out}, store=db, overwrite=overwrite)
    run_id: str | None = None
    if resume is not None:
        extra = [k for k, v in given.items() if v is not None] + (["domain"] if domain else [])
        if extra:
            raise usage_error(f"{_STARTED}: drop --{extra[0].replace('_', '-')}")
        if not db.exists():
            raise usage_error(f"no store at {db}")
        with Store(db) as store:
            run_id, options = resume_options(store, resume)
        from dataclasses import replace

        options = replace(options, jobs=jobs)
    else:
        options = _options({**given, "jobs": jobs}, domain)
    try:
        setup = prepare(options)
    except SimulationError as exc:
        raise usage_error(str(exc)) from None
    if setup.simulation:
        console.print(
            "[bold magenta]SIMULATION[/]: this agent is scripted (no model is called); its "
            "figures describe the script, not a real agent."
        )
    with Store(db) as store:
        try:
            run_id = run_simulation(
                setup, store, resume_id=run_id, progress=progress, on_skip=skipped
            )
        except SimulationError as exc:
            raise usage_error(str(exc)) from None
        label_run(store, run_id, name, tags)
        summary = store.records(run_id, "simulation_summary")[-1]
    console.print(f"run {run_id}", highlight=False)
    _print_summary(summary)
    write_outputs(
        db,
        run_id,
        json_out=json_out,
        csv_out=None,
        html_out=html_out,
        fail_under=None,
        extra={"simulation": summary},
    )
