"""The agent protocol: what an agent is, how its steps are recorded, how it is run.

An agent is any object with ``run(task, params, recorder) -> output`` (a plain or an ``async``
method). It records what it does on the :class:`Recorder` it is given; the tools it calls
through functions decorated with :func:`tool` are recorded automatically on the recorder of
the *current run*, found through a context variable, so one set of tool functions serves many
concurrent runs (asyncio tasks or threads) without mixing their steps::

    @tool
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    class MyAgent:
        name = "my-agent"
        def run(self, task, params, recorder):
            recorder.reasoning("adding the numbers")
            return {"sum": add(2, 3)}

    trace = run_agent(MyAgent(), task, {"temperature": 0.2}, seed=0)

Threads started by the agent itself do not inherit the context (standard ``contextvars``
behaviour); ``asyncio.to_thread`` and ``loop.run_in_executor`` with ``contextvars`` copy it,
and :func:`run_agents` runs each run in its own context.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import inspect
import json
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, create_model
from pydantic_core import to_jsonable_python

from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import ReadError, iter_raw_lines, validate_line
from agentgauge.model import JSON, Step, StepKind, Task, ToolCall, ToolSpec, Trace, Usage
from agentgauge.usage import sum_usage

__all__ = [
    "Agent",
    "AgentLoadError",
    "Recorder",
    "RunSpec",
    "Tool",
    "agent_name",
    "current_recorder",
    "import_reference",
    "load_agent",
    "parse_params",
    "read_tasks",
    "recording",
    "run_agent",
    "run_agent_async",
    "run_agents",
    "tool",
]

P = ParamSpec("P")
R = TypeVar("R")


@runtime_checkable
class Agent(Protocol):
    """Anything that does a task with parameters and records its steps.

    ``run`` may be a coroutine function; its return value is the trace's output and must be
    JSON-serialisable. Optional attributes: ``name`` (the agent's name in traces),
    ``trace_metadata`` (a dict copied into every trace's metadata) and ``simulated_time``
    (True when the steps carry simulated durations: the trace then has no wall-clock stamps
    and its duration is the sum of the step durations).
    """

    def run(self, task: Task, params: Mapping[str, JSON], recorder: Recorder) -> Any: ...


def _jsonable(value: Any) -> JSON:
    """A JSON value for anything a tool or an agent returns (unknown objects become strings)."""
    return cast(JSON, to_jsonable_python(value, fallback=str))


class Recorder:
    """Collects the steps of one run; safe to call from several threads of that run.

    Args:
        seed: the run's seed; an agent that samples anything should derive its randomness from
            it so that a run is reproducible (the chat agent sends it as the request ``seed``).
        agent: default agent name put on the steps.
        timestamps: stamp each step's ``started_at`` with the wall clock (off for simulated
            agents, whose traces must not depend on when they ran).
        tools: tools the run offers the agent besides its own, by name (a simulation's
            environment: its tools act on that conversation's state). An agent calls them as it
            calls its own; the chat agent offers them to its model.
    """

    def __init__(
        self,
        seed: int | None = None,
        agent: str | None = None,
        *,
        timestamps: bool = True,
        tools: Mapping[str, Tool] | None = None,
    ) -> None:
        self.seed = seed
        self.agent = agent
        self.timestamps = timestamps
        self.tools: dict[str, Tool] = dict(tools or {})
        self._steps: list[Step] = []
        self._lock = threading.Lock()
        self._call_ids = 0

    @property
    def steps(self) -> list[Step]:
        """A copy of the steps recorded so far, in order."""
        with self._lock:
            return list(self._steps)

    def add(self, kind: StepKind, **fields: Any) -> Step:
        """Record one step of ``kind``; ``fields`` are the other :class:`Step` fields.

        Args:
            kind: what the step is.
            fields: any of content, tool_call, result, error, duration_s, usage, agent,
                recipient, message_type, parent_id, id, started_at.
        """
        fields.setdefault("agent", self.agent)
        if self.timestamps:
            fields.setdefault("started_at", datetime.now(UTC))
        with self._lock:
            step = Step(index=len(self._steps), kind=kind, **fields)
            self._steps.append(step)
        return step

    def llm(
        self, content: str | None, *, usage: Usage | None = None, duration_s: float | None = None
    ) -> Step:
        """Record a model turn (what the model said)."""
        return self.add(StepKind.llm, content=content, usage=usage, duration_s=duration_s)

    def reasoning(
        self, content: str, *, usage: Usage | None = None, duration_s: float | None = None
    ) -> Step:
        """Record a reasoning turn (with the usage of the request that produced it)."""
        return self.add(StepKind.reasoning, content=content, usage=usage, duration_s=duration_s)

    def error(self, message: str) -> Step:
        """Record an error the agent met."""
        return self.add(StepKind.error, error=message)

    def next_call_id(self) -> str:
        """A call id unique within this run (``call_1``, ``call_2``...)."""
        with self._lock:
            self._call_ids += 1
            return f"call_{self._call_ids}"

    def tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str | None = None,
        duration_s: float | None = None,
    ) -> str:
        """Record a tool call and return its id (give it to :meth:`tool_result`)."""
        call_id = call_id or self.next_call_id()
        args = {k: _jsonable(v) for k, v in arguments.items()}
        call = ToolCall(id=call_id, name=name, arguments=args)
        self.add(StepKind.tool_call, id=call_id, tool_call=call, duration_s=duration_s)
        return call_id

    def tool_result(
        self,
        call_id: str,
        result: Any = None,
        *,
        error: str | None = None,
        duration_s: float | None = None,
    ) -> Step:
        """Record what a tool returned (or the error it raised) for the call ``call_id``."""
        return self.add(
            StepKind.tool_result,
            parent_id=call_id,
            result=_jsonable(result),
            error=error,
            duration_s=duration_s,
        )


_CURRENT: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "agentgauge_recorder", default=None
)


def current_recorder() -> Recorder | None:
    """The recorder of the run executing in this context, or None outside a run."""
    return _CURRENT.get()


@contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Make ``recorder`` the current one for the duration of the block (this context only)."""
    token = _CURRENT.set(recorder)
    try:
        yield recorder
    finally:
        _CURRENT.reset(token)


_Description = tuple[inspect.Signature, type[BaseModel], ToolSpec]
_DESCRIBED: weakref.WeakKeyDictionary[Callable[..., Any], dict[tuple[bool, str], _Description]]
_DESCRIBED = weakref.WeakKeyDictionary()


def _described(fn: Callable[..., Any], name: str) -> _Description:
    """A tool function's signature, arguments model and spec, built once per function: the
    same method bound to each of many objects (an environment per conversation) shares them."""
    function = getattr(fn, "__func__", fn)
    key = (function is not fn, name)
    try:
        known = _DESCRIBED.setdefault(function, {})
    except TypeError:  # a callable that takes no weak reference: described each time
        known = {}
    if key in known:
        return known[key]
    signature = inspect.signature(fn)
    fields: dict[str, Any] = {}
    hints = inspect.get_annotations(fn, eval_str=True)
    for pname, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args/**kwargs are not supported")
        default = ... if param.default is param.empty else param.default
        fields[pname] = (hints.get(pname, Any), default)
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    doc = (inspect.getdoc(fn) or "").split("\n\n", 1)[0].strip()
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    described = known[key] = (
        signature,
        model,
        ToolSpec(name=name, description=doc, parameters=schema),
    )
    return described


class Tool:
    """A Python function offered to agents as a tool; calls are recorded on the current run.

    Calling it with no current run simply calls the function. ``spec`` is its OpenAI function
    description (name, first docstring paragraph, JSON Schema of its parameters built by
    pydantic from the type hints); :meth:`ainvoke` validates JSON arguments against that schema
    before calling (arguments from a model are data, never code).
    """

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.is_async = inspect.iscoroutinefunction(fn)
        self._signature, self.arguments_model, self.spec = _described(fn, self.name)
        functools.update_wrapper(self, fn)

    def _bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = self._signature.bind(*args, **kwargs)
        return dict(bound.arguments)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        recorder = _CURRENT.get()
        if recorder is None:
            return self.fn(*args, **kwargs)
        if self.is_async:
            return self._call_async(recorder, None, args, kwargs)
        return self._call_sync(recorder, None, args, kwargs)

    @contextmanager
    def _recorded(
        self,
        recorder: Recorder,
        call_id: str | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Iterator[Callable[[Any], None]]:
        """Record the call, then its result (passed to the yielded function) or its error."""
        call_id = recorder.tool_call(self.name, self._bound(args, kwargs), call_id=call_id)
        start = time.perf_counter()
        results: list[Any] = []
        try:
            yield results.append
        except Exception as exc:
            elapsed = time.perf_counter() - start
            recorder.tool_result(call_id, error=f"{type(exc).__name__}: {exc}", duration_s=elapsed)
            raise
        recorder.tool_result(call_id, results[0], duration_s=time.perf_counter() - start)

    def _call_sync(
        self,
        recorder: Recorder,
        call_id: str | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        with self._recorded(recorder, call_id, args, kwargs) as keep:
            result = self.fn(*args, **kwargs)
            keep(result)
        return result

    async def _call_async(
        self,
        recorder: Recorder,
        call_id: str | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        with self._recorded(recorder, call_id, args, kwargs) as keep:
            result = await self.fn(*args, **kwargs)
            keep(result)
        return result

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate JSON ``arguments`` against the tool's schema (pydantic, never eval).

        Raises:
            pydantic.ValidationError: for arguments that do not fit the schema.
        """
        validated = self.arguments_model.model_validate(dict(arguments))
        return {k: getattr(validated, k) for k in type(validated).model_fields}

    async def ainvoke(self, arguments: Mapping[str, Any], *, call_id: str | None = None) -> Any:
        """Validate ``arguments``, then call the tool (awaited if async), recorded on the
        current run under ``call_id`` (a model's tool-call id).

        Raises:
            pydantic.ValidationError: for arguments that do not fit the schema.
        """
        kwargs = self.validate(arguments)
        recorder = _CURRENT.get()
        if recorder is None:
            result = self.fn(**kwargs)
            return await result if self.is_async else result
        if self.is_async:
            return await self._call_async(recorder, call_id, (), kwargs)
        return self._call_sync(recorder, call_id, (), kwargs)


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Turn a function into a recorded :class:`Tool` (usable as ``@tool`` or ``@tool(name=)``).

    Args:
        fn: the function (sync or async) with type-hinted parameters.
        name: the tool's name; the function's name by default.
    """
    if fn is None:
        return lambda f: Tool(f, name=name)
    return Tool(fn, name=name)


def agent_name(agent: Any) -> str:
    """The agent's ``name`` attribute, else its class name."""
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else type(agent).__name__


def _finish(
    agent: Any,
    task: Task,
    params: Mapping[str, JSON],
    recorder: Recorder,
    output: Any,
    error: BaseException | None,
    started: datetime,
    t0: float,
    trace_id: str,
    metadata: Mapping[str, JSON] | None,
) -> Trace:
    meta: dict[str, JSON] = dict(getattr(agent, "trace_metadata", {}) or {})
    meta.update(metadata or {})
    if recorder.seed is not None:
        meta["seed"] = recorder.seed
    if error is not None:
        frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        where = f" ({Path(frame.filename).name}:{frame.lineno})" if frame else ""
        message = f"{type(error).__name__}: {error}{where}"
        recorder.error(message)
        meta["error"] = message
        output = None
    steps = recorder.steps
    timing: dict[str, Any]
    if _simulated_time(agent):
        # A simulated agent's clock is the sum of its simulated step durations.
        timing = {"duration_s": sum(s.duration_s or 0.0 for s in steps)}
    else:
        timing = {
            "started_at": started,
            "ended_at": datetime.now(UTC),
            "duration_s": time.perf_counter() - t0,
        }
    return Trace(
        id=trace_id,
        task=task,
        output=_jsonable(output),
        steps=steps,
        agent=agent_name(agent),
        params=dict(params),
        usage=sum_usage(s.usage for s in steps if s.usage is not None),
        metadata=meta,
        **timing,
    )


def _simulated_time(agent: Any) -> bool:
    return getattr(agent, "simulated_time", False) is True


def _recorder_for(agent: Any, seed: int | None) -> Recorder:
    return Recorder(seed=seed, agent=agent_name(agent), timestamps=not _simulated_time(agent))


async def run_agent_async(
    agent: Any,
    task: Task,
    params: Mapping[str, JSON],
    *,
    seed: int | None = None,
    trace_id: str | None = None,
    metadata: Mapping[str, JSON] | None = None,
) -> Trace:
    """Run ``agent`` on ``task`` in a fresh context and return its Trace.

    An exception raised by the agent ends that run: it is recorded as an error step and in
    ``metadata["error"]``, the output is None, and the exception does not propagate.

    Args:
        agent: an :class:`Agent` (sync ``run`` is executed in a worker thread).
        task: the task.
        params: the parameters, already applied (integers rounded).
        seed: the run's seed (``recorder.seed``).
        trace_id: the trace id; ``{task.id}`` or ``{task.id}#s{seed}`` by default.
        metadata: added to the trace's metadata.
    """
    recorder = _recorder_for(agent, seed)
    started, t0 = datetime.now(UTC), time.perf_counter()
    output: Any = None
    error: BaseException | None = None
    with recording(recorder):
        try:
            if inspect.iscoroutinefunction(agent.run):
                output = await agent.run(task, params, recorder)
            else:
                output = await asyncio.to_thread(agent.run, task, params, recorder)
                if inspect.isawaitable(output):
                    output = await output
        except Exception as exc:
            error = exc
    tid = trace_id or (task.id if seed is None else f"{task.id}#s{seed}")
    return _finish(agent, task, params, recorder, output, error, started, t0, tid, metadata)


def run_agent(
    agent: Any,
    task: Task,
    params: Mapping[str, JSON],
    *,
    seed: int | None = None,
    trace_id: str | None = None,
    metadata: Mapping[str, JSON] | None = None,
) -> Trace:
    """Run ``agent`` on ``task`` synchronously (see :func:`run_agent_async` for the arguments).

    A sync agent runs in the calling thread, in a copy of the current context; an async agent
    runs in its own event loop.
    """
    if inspect.iscoroutinefunction(agent.run):
        return asyncio.run(
            run_agent_async(agent, task, params, seed=seed, trace_id=trace_id, metadata=metadata)
        )
    recorder = _recorder_for(agent, seed)
    started, t0 = datetime.now(UTC), time.perf_counter()

    def _run() -> tuple[Any, BaseException | None]:
        with recording(recorder):
            try:
                out = agent.run(task, params, recorder)
                if inspect.isawaitable(out):
                    out = asyncio.run(_await(out))
                return out, None
            except Exception as exc:
                return None, exc

    output, error = contextvars.copy_context().run(_run)
    tid = trace_id or (task.id if seed is None else f"{task.id}#s{seed}")
    return _finish(agent, task, params, recorder, output, error, started, t0, tid, metadata)


async def _await(awaitable: Awaitable[R]) -> R:
    return await awaitable


@dataclass(frozen=True)
class RunSpec:
    """One run to do: a task, its seed and the trace id."""

    task: Task
    seed: int | None
    trace_id: str


def run_agents(
    agent: Any,
    runs: Sequence[RunSpec],
    params: Mapping[str, JSON],
    *,
    jobs: int = 4,
    metadata: Mapping[str, JSON] | None = None,
    on_done: Callable[[Trace], None] | None = None,
) -> list[Trace]:
    """Run ``agent`` over ``runs`` concurrently (asyncio for async agents, threads otherwise).

    Args:
        agent: the agent.
        runs: what to run; the traces come back in this order.
        params: the parameters of every run.
        jobs: how many runs at once.
        metadata: added to each trace's metadata.
        on_done: called with each trace as it finishes (progress bars).
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if inspect.iscoroutinefunction(agent.run):

        async def _all() -> list[Trace]:
            gate = asyncio.Semaphore(jobs)

            async def _one(spec: RunSpec) -> Trace:
                async with gate:
                    trace = await run_agent_async(
                        agent,
                        spec.task,
                        params,
                        seed=spec.seed,
                        trace_id=spec.trace_id,
                        metadata=metadata,
                    )
                if on_done is not None:
                    on_done(trace)
                return trace

            return list(await asyncio.gather(*(_one(s) for s in runs)))

        return asyncio.run(_all())

    def _one_sync(spec: RunSpec) -> Trace:
        trace = run_agent(
            agent, spec.task, params, seed=spec.seed, trace_id=spec.trace_id, metadata=metadata
        )
        if on_done is not None:
            on_done(trace)
        return trace

    if jobs == 1:
        return [_one_sync(s) for s in runs]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_one_sync, runs))


class AgentLoadError(AgentgaugeError, ValueError):
    """An ``--agent module:factory`` reference that cannot be loaded."""


@contextmanager
def _current_folder_last() -> Iterator[None]:
    """The current folder importable while the agent's module is imported, after every
    installed package: a file there named like a library (``optuna.py``) never replaces it,
    neither now nor when agentgauge imports that library later."""
    folder = str(Path.cwd())
    added = folder not in sys.path
    if added:
        sys.path.append(folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def import_reference(ref: str, option: str, error: type[AgentgaugeError]) -> Any:
    """Import ``module:attribute`` and return the attribute (the current folder importable
    while the module is imported, after the installed packages: it never shadows one).

    Args:
        ref: ``package.module:name``.
        option: the option that gave it, for the messages (``--agent``).
        error: the error to raise.

    Raises:
        error: naming what is wrong.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise error(f"{option} {ref!r}: expected 'module:factory'")
    try:
        with _current_folder_last():
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise error(f"{option} {ref!r}: cannot import {module_name!r}: {exc}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise error(f"{option} {ref!r}: module {module_name!r} has no {attr!r}") from None


def load_agent(ref: str) -> Any:
    """Import ``module:attribute`` and return the agent it names.

    The attribute may be an agent (an object with ``run``), or a class or factory function
    called with no arguments that returns one. The current folder is importable while the
    agent's module is imported, after the installed packages (it never shadows one).

    Args:
        ref: ``package.module:name``.

    Raises:
        AgentLoadError: naming what is wrong.
    """
    obj = import_reference(ref, "--agent", AgentLoadError)
    attr = ref.partition(":")[2]
    if not hasattr(obj, "run") or inspect.isclass(obj):
        if not callable(obj):
            raise AgentLoadError(
                f"--agent {ref!r}: {attr!r} (of type {type(obj).__name__}) is not an agent, "
                "a class or a factory"
            )
        try:
            obj = obj()
        except TypeError as exc:
            raise AgentLoadError(
                f"--agent {ref!r}: {attr!r} cannot be called without arguments: {exc}"
            ) from None
    if not callable(getattr(obj, "run", None)):
        raise AgentLoadError(f"--agent {ref!r}: {attr!r} gives no object with a run() method")
    return obj


def read_tasks(path: str | Path) -> Iterator[Task | ReadError]:
    """Stream the Tasks of a JSONL file (one Task per line); bad lines come out as ReadError.

    Args:
        path: a ``.jsonl`` file, optionally ``.gz``-compressed.
    """
    for raw in iter_raw_lines(path):
        yield validate_line(Task, raw)


def _scalar(text: str) -> JSON:
    try:
        return cast(JSON, json.loads(text))
    except json.JSONDecodeError:
        return text


def parse_params(text: str | None) -> dict[str, JSON]:
    """Parse ``k=v,k2=v2`` (values as JSON scalars when they parse, else strings).

    Args:
        text: the ``--params`` option; None or empty gives {}.

    Raises:
        ValueError: for an item without ``=`` or an empty name.
    """
    out: dict[str, JSON] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--params: {item.strip()!r} is not 'name=value'")
        out[key.strip()] = _scalar(value.strip())
    return out
