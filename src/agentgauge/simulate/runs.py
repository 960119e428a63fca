"""``agentgauge simulate``'s workflow: every scenario played ``trials`` times, each conversation
scored and stored as soon as it ends, and the run's summary (reward, pass^k and pass@k, the
share of failures due to the simulated user).

Conversations run concurrently (``jobs`` at once) in an event loop of their own; the engine
(:func:`agentgauge.engine.evaluate`) scores each finished conversation with the suite and writes
it to the store in its own transaction, so a run that is killed keeps every conversation that
had ended, and ``resume`` plays only the others (a conversation cut off in the middle is played
again from its start: nothing of it was kept).
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentgauge.agents.protocol import load_agent, parse_params
from agentgauge.config import Suite, load_suite
from agentgauge.conversation import Expectations, state_changes
from agentgauge.engine import EvaluateOptions, evaluate, source_fingerprint
from agentgauge.io.jsonl import ReadError
from agentgauge.model import JSON, ToolSpec, Trace
from agentgauge.simulate.environment import (
    EnvironmentFactory,
    SimulationError,
    environment_tools,
    load_environment,
    replay,
)
from agentgauge.simulate.loop import Cast, Trial, converse
from agentgauge.simulate.scenario import Scenario, read_scenarios, scenario_task
from agentgauge.simulate.users import LLMUser, ScriptedUser, UserSimulator
from agentgauge.stats import pass_k_over_tasks
from agentgauge.store import Store

__all__ = [
    "SimulationOptions",
    "SimulationSetup",
    "prepare",
    "resume_options",
    "run_simulation",
    "summarize",
]

RUN_KIND = "simulate"
SUMMARY_STREAM = "simulation_summary"


@dataclass(frozen=True, kw_only=True)
class SimulationOptions:
    """What a simulation runs (kept with its run, so that ``resume`` runs the same).

    Args:
        env: the environment, ``module:factory``.
        scenarios: the scenario file (JSONL).
        agent: ``module:factory`` (an agent of the agent protocol), or the base URL of an
            OpenAI-compatible endpoint for the bundled chat agent.
        agent_model: the chat agent's model (with a URL ``agent``).
        agent_key_env: the environment variable holding the chat agent's API key.
        user: ``scripted`` (the scenarios' ``user_turns``) or the base URL of the endpoint of
            the model that plays the user.
        user_model: the user's model (with a URL ``user``).
        user_key_env: the environment variable holding the user model's API key.
        trials: conversations per scenario.
        jobs: conversations at once.
        seed: the first trial's seed (trial ``t`` has ``seed + t``).
        params: the agent's parameters, ``k=v,k2=v2``.
        suite: the scoring suite (``simulation`` or a suite file).
        timeout_s: the deadline of each model request.
        max_retries: retries of a failed model request.
    """

    env: str
    scenarios: str
    agent: str
    agent_model: str | None = None
    agent_key_env: str | None = None
    user: str = "scripted"
    user_model: str | None = None
    user_key_env: str | None = None
    trials: int = 1
    jobs: int = 4
    seed: int = 0
    params: str | None = None
    suite: str = "simulation"
    timeout_s: float = 60.0
    max_retries: int = 4

    def as_config(self) -> dict[str, JSON]:
        """The options as JSON (stored with the run)."""
        return dict(asdict(self))

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> SimulationOptions:
        """The options a run recorded.

        Args:
            config: :meth:`as_config`'s output.
        """
        known = {k: v for k, v in config.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _is_url(ref: str) -> bool:
    return ref.startswith(("http://", "https://"))


def _agent(options: SimulationOptions) -> Any:
    if not _is_url(options.agent):
        return load_agent(options.agent)
    if not options.agent_model:
        raise SimulationError("--agent-model: the chat agent at --agent needs a model name")
    from agentgauge.agents.chat import ChatAgent

    return ChatAgent(
        options.agent,
        options.agent_model,
        api_key_env=options.agent_key_env or "OPENAI_API_KEY",
        timeout_s=options.timeout_s,
        max_retries=options.max_retries,
    )


def _user(options: SimulationOptions) -> UserSimulator:
    if options.user == "scripted":
        return ScriptedUser()
    if not _is_url(options.user):
        raise SimulationError(
            f"--user must be 'scripted' or the URL of an OpenAI-compatible endpoint, not "
            f"{options.user!r}"
        )
    if not options.user_model:
        raise SimulationError("--user-model: the simulated user at --user needs a model name")
    return LLMUser(
        options.user,
        options.user_model,
        api_key_env=options.user_key_env or "OPENAI_API_KEY",
        timeout_s=options.timeout_s,
        max_retries=options.max_retries,
    )


def _expectations(scenario: Scenario, make_env: EnvironmentFactory) -> Expectations:
    """The scenario's expectations; its expected changes from replaying its actions."""
    if scenario.expected_actions is None:
        return scenario.expectations(None)
    env = make_env()
    env.reset(scenario.initial_state)
    before = env.state()
    replay(env, scenario.expected_actions)
    return scenario.expectations(state_changes(before, env.state()))


@dataclass(frozen=True)
class SimulationSetup:
    """A simulation ready to run: who takes part, the conversations to have, the bad lines.

    Args:
        options: its options.
        cast: the agent, the user and the environment's factory.
        trials: every conversation, trial by trial.
        errors: the scenario lines that cannot be played.
        suite: the scoring suite.
    """

    options: SimulationOptions
    cast: Cast
    trials: list[Trial]
    errors: list[ReadError] = field(default_factory=list)
    suite: Suite = field(default_factory=lambda: load_suite("simulation"))

    @property
    def simulation(self) -> bool:
        """Whether the agent is a simulation (no model is called)."""
        meta = getattr(self.cast.agent, "trace_metadata", {}) or {}
        return bool(meta.get("simulation"))


def prepare(options: SimulationOptions) -> SimulationSetup:
    """Load and check everything a simulation needs, before anything runs: the suite, the
    environment, the agent, the user, and each scenario (its expected actions replayed on a
    fresh environment; a scenario that cannot be played is an error of its line).

    Args:
        options: the simulation's options.

    Raises:
        SimulationError, AgentLoadError, SuiteError: naming what is wrong.
    """
    if options.trials < 1 or options.jobs < 1:
        raise SimulationError("--trials and --jobs must be at least 1")
    suite = load_suite(options.suite)
    make_env = load_environment(options.env)
    try:
        params = parse_params(options.params)
    except ValueError as exc:
        raise SimulationError(str(exc)) from None
    cast = Cast(_agent(options), params, _user(options), make_env)
    path = Path(options.scenarios)
    if not path.is_file():
        raise SimulationError(f"--scenarios: no such file: {path}")
    specs: list[ToolSpec] = [t.spec for t in environment_tools(make_env()).values()]
    played: list[tuple[Scenario, Expectations]] = []
    errors: list[ReadError] = []
    for item in read_scenarios(path):
        if isinstance(item, ReadError):
            errors.append(item)
            continue
        line, scenario = item
        try:
            cast.user.session(scenario, options.seed)
        except SimulationError as exc:
            errors.append(ReadError(str(path), line, "user_turns", str(exc)))
            continue
        try:
            played.append((scenario, _expectations(scenario, make_env)))
        except SimulationError as exc:
            errors.append(ReadError(str(path), line, None, f"scenario {scenario.id!r}: {exc}"))
    if not played:
        first = f": {errors[0]}" if errors else ""
        raise SimulationError(f"{path}: no scenario can be played{first}")
    trials = [
        Trial(
            scenario,
            trial,
            options.seed + trial,
            scenario_task(scenario, specs, expectations),
            expectations,
        )
        for trial in range(options.trials)
        for scenario, expectations in played
    ]
    return SimulationSetup(options, cast, trials, errors, suite)


_DONE = object()


def _conversations(trials: list[Trial], cast: Cast, jobs: int) -> Iterator[Trace]:
    """The traces of ``trials`` as the conversations end (``jobs`` at once, in a thread with
    its own event loop). Closing the iterator cancels the conversations still running."""
    results: queue.Queue[Any] = queue.Queue()
    loop = asyncio.new_event_loop()
    main: list[asyncio.Task[Any]] = []

    async def all_of_them() -> None:
        gate = asyncio.Semaphore(jobs)

        async def one(trial: Trial) -> None:
            async with gate:
                results.put(await converse(trial, cast))

        await asyncio.gather(*(one(t) for t in trials))

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            task = loop.create_task(all_of_them())
            main.append(task)
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # handed to the consumer, which raises it
            results.put(exc)
        finally:
            loop.close()
            results.put(_DONE)

    worker = threading.Thread(target=run, name="agentgauge-simulate", daemon=True)
    worker.start()
    try:
        while (item := results.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        if worker.is_alive() and main:
            loop.call_soon_threadsafe(main[0].cancel)


def _done_ids(store: Store, run_id: str) -> set[str]:
    return {row.trace_id for row in store.iter_samples(run_id)}


def run_simulation(
    setup: SimulationSetup,
    store: Store,
    *,
    resume_id: str | None = None,
    progress: bool = True,
    on_skip: Callable[[ReadError], None] | None = None,
) -> str:
    """Have every conversation of ``setup`` (those a resumed run lacks), score and store each
    as it ends, then record the run's summary.

    Args:
        setup: the prepared simulation.
        store: where the run goes.
        resume_id: the run to continue; None starts one.
        progress: show a progress bar.
        on_skip: called with each scenario line that cannot be played (new runs only).

    Returns:
        The run id.

    Raises:
        SimulationError: the scenario file changed since the resumed run began.
    """
    done: set[str] = set()
    stored = 0
    fingerprint = source_fingerprint(Path(setup.options.scenarios))
    if resume_id is not None:
        recorded = store.get_run(resume_id).config.get("source_fingerprints") or [{}]
        if {k: recorded[0].get(k) for k in fingerprint} != fingerprint:
            raise SimulationError(
                f"{setup.options.scenarios} changed since run {resume_id} began: its "
                "conversations would not be those of the run; start a new run"
            )
        done = _done_ids(store, resume_id)
        stored = store.count_done(resume_id)
    pending = [t for t in setup.trials if t.trace_id not in done]
    if resume_id is None and on_skip is not None:
        for error in setup.errors:
            on_skip(error)
    errors: list[Trace | ReadError] = list(setup.errors)
    items = itertools.chain(errors, _conversations(pending, setup.cast, setup.options.jobs))
    run_id = evaluate(
        items,
        setup.suite,
        store=store,
        options=EvaluateOptions(
            run_id=resume_id,
            resume=resume_id is not None,
            kind=RUN_KIND,
            sources=[setup.options.scenarios],
            extra_config={
                "simulation": setup.options.as_config(),
                # a list, not keyed by path: a path is never mistaken for a secret's key
                "source_fingerprints": [{"path": setup.options.scenarios, **fingerprint}],
            },
            jobs=1,
            batch_size=1,
            progress=progress,
            total=len(pending) + len(setup.errors),
            first_seq=stored,
        ),
    )
    store.append_record(run_id, SUMMARY_STREAM, summarize(store, run_id))
    return run_id


def resume_options(store: Store, run_id: str) -> tuple[str, SimulationOptions]:
    """The id and options of a simulation run to continue.

    Args:
        store: the store holding it.
        run_id: its id or a unique prefix.

    Raises:
        StoreError: no such run.
        SimulationError: a run of another command.
    """
    run = store.get_run(run_id)
    config = run.config.get("simulation")
    if run.kind != RUN_KIND or not isinstance(config, dict):
        raise SimulationError(
            f"run {run.id} is a {run.kind} run: resume it with the command that made it"
        )
    return run.id, SimulationOptions.from_config(config)


def summarize(store: Store, run_id: str) -> dict[str, Any]:
    """A simulation run's figures: mean reward, pass^k and pass@k for k = 1..trials (over the
    scenarios, a trial passing at reward 1), how the conversations ended, and the failed
    conversations attributed to the simulated user.

    Args:
        store: the store.
        run_id: the run.
    """
    rewards: list[float] = []
    terminations: Counter[str] = Counter()
    turns: list[int] = []
    failed = by_simulator = unscored = violated = 0
    trials: dict[str, list[bool]] = {}
    for row in store.iter_samples(run_id):
        values = row.values
        reward = values.get("reward")
        trials.setdefault(row.task_id, []).append(reward is not None and reward >= 1.0)
        details = row.details.get("reward", {})
        if isinstance(details, dict):
            terminations[str(details.get("termination", "unknown"))] += 1
            if isinstance(details.get("user_turns"), int):
                turns.append(details["user_turns"])
        if values.get("policy_compliance") == 0.0:
            violated += 1
        if reward is None:
            unscored += 1
            continue
        rewards.append(reward)
        if reward < 1.0:
            failed += 1
            if values.get("simulator_fault") == 1.0:
                by_simulator += 1
    most = max((len(v) for v in trials.values()), default=0)
    table = pass_k_over_tasks(trials, range(1, most + 1))
    return {
        "conversations": sum(len(v) for v in trials.values()),
        "scenarios": len(trials),
        "trials": most,
        "reward": sum(rewards) / len(rewards) if rewards else None,
        "unscored": unscored,
        "pass_hat_k": {str(k): row["pass_hat_k"] for k, row in table.items()},
        "pass_at_k": {str(k): row["pass_at_k"] for k, row in table.items()},
        "failed": failed,
        "failed_by_simulator": by_simulator,
        "simulator_share": by_simulator / failed if failed else None,
        "terminations": dict(sorted(terminations.items())),
        "mean_user_turns": sum(turns) / len(turns) if turns else None,
        "with_policy_violations": violated,
    }
