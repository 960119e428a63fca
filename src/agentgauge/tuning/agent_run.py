"""Running a live agent: what every session over one is given and loads (the agent, its
tasks, the parameter space and the base point), and ``agentgauge run``'s workflow: run the
agent over its tasks, write the traces, score them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentgauge.agents.protocol import RunSpec, load_agent, parse_params, read_tasks, run_agents
from agentgauge.config import Suite, load_suite
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import ReadError, write_traces
from agentgauge.model import JSON, Task, Trace
from agentgauge.store import Store
from agentgauge.tuning.objective import Objective, repeat_seeds
from agentgauge.tuning.space import ParameterSpace, load_space

__all__ = [
    "AgentOptions",
    "AgentRun",
    "AgentSession",
    "AgentSetup",
    "RunOptions",
    "SessionOutcome",
    "TuningError",
    "load_setup",
    "progress_bar",
    "run_agent",
    "score_agent_run",
]


class TuningError(AgentgaugeError, ValueError):
    """Tasks, a strategy or a setting of a session that cannot be used."""


@dataclass(frozen=True, kw_only=True)
class AgentOptions:
    """What every session over an agent is given.

    Args:
        agent: ``module:factory``, an object with ``run()`` or what makes one.
        tasks: a task JSONL file, or ``simulated`` for the bundled simulation tasks.
        params: the base point as ``k=v,k2=v2`` (the space's defaults for the rest).
        space_file: a TOML file with ``[params.NAME]`` tables (extra parameters).
        suite: a built-in suite name or a suite TOML file.
        seed: the seed of everything random.
        repeats: seeded repeats of each task (per episode, per swept value).
        jobs: concurrent agent runs.
        progress: show a progress bar.
    """

    agent: str
    tasks: str
    params: str | None = None
    space_file: Path | None = None
    suite: str = "behavior"
    seed: int = 0
    repeats: int = 1
    jobs: int = 4
    progress: bool = True


@dataclass(frozen=True)
class AgentSetup:
    """The agent of a session and what it runs on.

    Args:
        agent: the loaded agent.
        tasks: its tasks.
        space: the parameter space.
        base: the base point, complete (every parameter of the space).
    """

    agent: Any
    tasks: list[Task]
    space: ParameterSpace
    base: dict[str, JSON]

    @property
    def simulation(self) -> bool:
        """Whether the agent is a simulation (its traces say so)."""
        return bool((getattr(self.agent, "trace_metadata", {}) or {}).get("simulation"))


def _load_tasks(ref: str, on_skip: Callable[[ReadError], None] | None) -> list[Task]:
    if ref == "simulated":
        from agentgauge.agents.simulated import simulated_tasks

        return simulated_tasks()
    path = Path(ref)
    if not path.is_file():
        raise TuningError(f"--tasks: no such file: {path}")
    tasks = []
    for item in read_tasks(path):
        if isinstance(item, ReadError):
            if on_skip is not None:
                on_skip(item)
        else:
            tasks.append(item)
    if not tasks:
        raise TuningError(
            f'{path}: no valid task. --tasks takes one Task a line ({{"id", "input", ...}}); '
            'a trace file ({"id", "task", "steps", ...}) is for evaluate'
        )
    return tasks


def load_setup(
    options: AgentOptions, *, on_skip: Callable[[ReadError], None] | None = None
) -> AgentSetup:
    """Load and check a session's agent, tasks, space and base point, in this order.

    Args:
        options: the session's options.
        on_skip: called with each line of the task file that is not a task (it is skipped).

    Raises:
        AgentLoadError, ParameterError, TuningError: naming what is wrong.
    """
    agent = load_agent(options.agent)
    tasks = _load_tasks(options.tasks, on_skip)
    space = load_space(options.space_file)
    try:
        base = space.complete(parse_params(options.params))
    except ValueError as exc:
        if isinstance(exc, AgentgaugeError):
            raise
        raise TuningError(str(exc)) from None
    return AgentSetup(agent, tasks, space, base)


class SessionOutcome(Protocol):
    """What a finished session gives: its run's id, the run as JSON data and its figure."""

    @property
    def run_id(self) -> str:
        """The run's id in the store."""

    def as_dict(self) -> dict[str, Any]:
        """The run as JSON data (``--json``)."""

    def plot(self, path: Path) -> None:
        """Write the run's figure (PNG).

        Args:
            path: the file to write.
        """


_Options = TypeVar("_Options", bound=AgentOptions)
_Outcome = TypeVar("_Outcome", bound=SessionOutcome)


@dataclass(frozen=True)
class AgentSession(ABC, Generic[_Options, _Outcome]):
    """A prepared session over an agent (:meth:`prepare`); ``run(store)`` runs it.

    Args:
        options: its options.
        setup: the agent and what it runs on.
        objective: what is measured of a setting.
    """

    options: _Options
    setup: AgentSetup
    objective: Objective

    @classmethod
    def prepare(
        cls, options: _Options, *, on_skip: Callable[[ReadError], None] | None = None
    ) -> Self:
        """Load and check everything the session needs: first what the options alone
        tell, then the suite, the agent, its tasks, the space and the base point, last
        what the session builds of them.

        Args:
            options: the session's options.
            on_skip: called with each line of the task file that is not a task.

        Raises:
            TuningError, SuiteError, AgentLoadError, ParameterError: naming what is wrong.
        """
        cls._check(options)
        suite = load_suite(options.suite)
        setup = load_setup(options, on_skip=on_skip)
        try:
            return cls._build(options, setup, suite)
        except ValueError as exc:
            raise TuningError(str(exc)) from None

    @classmethod
    def _check(cls, options: _Options) -> None:
        """Check what the options alone tell, before anything is loaded."""

    @classmethod
    @abstractmethod
    def _build(cls, options: _Options, setup: AgentSetup, suite: Suite) -> Self:
        """The session, once its agent and suite are loaded (a ValueError becomes a
        TuningError)."""

    @abstractmethod
    def run(self, store: Store) -> _Outcome:
        """Run the session and store its run.

        Args:
            store: where the run goes.
        """


@contextmanager
def progress_bar(label: str, total: int, enabled: bool = True) -> Iterator[Callable[..., None]]:
    """A progress bar on stderr; yields its ``advance(n=1)``.

    Args:
        label: what is counted.
        total: how many there are.
        enabled: False shows nothing.
    """
    with Progress(
        TextColumn(f"[bold]{label}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n=1: bar.advance(task, n)


@dataclass(frozen=True, kw_only=True)
class RunOptions(AgentOptions):
    """``agentgauge run``'s options.

    Args:
        out: the traces file to write (JSONL, ``.gz`` compresses it).
        keep_secrets: write the traces' credentials as they are (hidden by default; the
            traces are scored whole either way).
    """

    out: Path
    keep_secrets: bool = False


@dataclass(frozen=True)
class AgentRun:
    """The traces of an agent run.

    Args:
        traces: one per task and repeat seed.
        params: the parameters as applied.
        seeds: the repeat seeds.
    """

    traces: list[Trace]
    params: dict[str, JSON]
    seeds: list[int]

    @property
    def n_agent_errors(self) -> int:
        """The runs in which the agent raised."""
        return sum(1 for t in self.traces if "error" in t.metadata)


def run_agent(setup: AgentSetup, options: RunOptions) -> AgentRun:
    """Run the agent over its tasks (each with every repeat seed) at the base point, and
    write the traces to ``options.out``.

    Args:
        setup: the agent, tasks, space and base point.
        options: the run's options.
    """
    applied = setup.space.apply(setup.base)
    seeds = repeat_seeds(options.seed, options.repeats)
    specs = [RunSpec(t, s, f"{t.id}#s{s}") for t in setup.tasks for s in seeds]
    with progress_bar("running", len(specs), options.progress) as advance:
        traces = run_agents(
            setup.agent, specs, applied, jobs=options.jobs, on_done=lambda _t: advance()
        )
    write_traces(traces, options.out, keep_secrets=options.keep_secrets)
    return AgentRun(traces, applied, seeds)


def score_agent_run(run: AgentRun, suite: Suite, options: RunOptions, *, store: Store) -> str:
    """Score an agent run's traces and store the run (kind ``agent-run``).

    Args:
        run: the traces.
        suite: what to compute and how to combine it.
        options: the run's options (recorded with it).
        store: where the run goes.

    Returns:
        The run id.
    """
    return evaluate(
        run.traces,
        suite,
        store=store,
        options=EvaluateOptions(
            jobs=1,
            progress=options.progress,
            kind="agent-run",
            extra_config={
                "agent": options.agent,
                "params": run.params,
                "seeds": run.seeds,
                "tasks": options.tasks,
            },
            sources=[str(options.out)],
            total=len(run.traces),
        ),
    )
