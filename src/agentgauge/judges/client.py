"""Calling a judge model through pydantic-ai: retries, timeouts, budget, cache.

One :class:`JudgeSession` serves one batch of judge calls on one event loop. It builds the
pydantic-ai model once, runs the calls concurrently under a semaphore, serves repeats from an
in-process memo and from the SQLite :class:`~agentgauge.judges.cache.JudgeCache`, and
turns every failure into a :class:`JudgeFailure` with a reason instead of a score.

Who does what:

- pydantic-ai builds the model (any ``provider:model`` string it knows, or an
  ``OpenAIChatModel`` with an ``OpenAIProvider(base_url=...)``), validates the structured
  output against the verdict model and re-asks the model ``output_retries`` times when it is
  invalid;
- the provider SDK retries 408/409/429/5xx answers, dropped connections and timeouts
  ``retries`` times with exponential backoff (honouring ``Retry-After``); ``timeout_s`` bounds
  each attempt (pydantic-ai's ``ModelSettings.timeout``);
- token usage is pydantic-ai's ``RunUsage`` of the run; its cost comes from
  :func:`~agentgauge.judges.cost.call_cost` and counts against the
  :class:`~agentgauge.judges.budget.JudgeSpend` budget;
- the output mode (:mod:`~agentgauge.judges.output`) is the one configured, or, with
  ``output_mode = "auto"``, the first of tool calling, ``response_format`` and prompted JSON
  that the endpoint answers a probe with; the probe is made once per run (its outcome is
  kept in the cache, so that every worker process of the run uses the same mode);
- a repeated judgment (``samples`` > 1) is one request per sample index, each with its own
  cache entry and, where the provider takes one, its own seed (the index).

The API key is read from the environment variable ``api_key_env`` when the call is made; it is
never stored, logged or put in a reason (provider error messages are scrubbed of it).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agentgauge._redact import redact_error
from agentgauge.judges.budget import JudgeSpend
from agentgauge.judges.cache import JudgeCache, cache_key
from agentgauge.judges.cost import call_cost
from agentgauge.judges.output import (
    MODES,
    PROBE_PROMPT,
    OutputMode,
    ProbeVerdict,
    prompted_instructions,
    read_verdict,
)
from agentgauge.judges.settings import JudgeSettings

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.models import Model
    from pydantic_ai.toolsets import AbstractToolset

__all__ = [
    "TRAIL",
    "JudgeFailure",
    "JudgeRequest",
    "JudgeSession",
    "JudgeVerdict",
    "OutputModeUnavailable",
    "cached_verdict",
    "detect_output_mode",
    "request_key",
    "run_sync",
]

_T = TypeVar("_T")


@dataclass(frozen=True)
class JudgeRequest:
    """One judge call.

    Args:
        judge: the judge's metric name.
        prompt_version: the judge's prompt version.
        instructions: the system instructions.
        prompt: the user prompt built from one trace.
        verdict_type: the structured output model.
        sample: the sample index of a repeated judgment (0 for the first or only one): each
            index is its own request and cache entry.
        toolset: tools the judge may call while it judges (the trace-exploring tools).
        context: what the tools show that the prompt does not, for the cache key (the
            explored trace's fingerprint).
        max_requests: the most model requests of the judgment (tool calls make several).
    """

    judge: str
    prompt_version: str
    instructions: str
    prompt: str
    verdict_type: type[BaseModel]
    sample: int = 0
    toolset: AbstractToolset[None] | None = None
    context: str = ""
    max_requests: int | None = None


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's answer and what it cost.

    Args:
        output: the structured output (the verdict model's fields).
        usage: ``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``requests``,
            ``cost_usd`` (None when unknown) and ``cost_source`` of the call that produced it.
        cached: True when served from the cache or the in-process memo (no new spend).
    """

    output: dict[str, Any]
    usage: dict[str, Any]
    cached: bool = False


@dataclass(frozen=True)
class JudgeFailure:
    """A judge call that gave no verdict, and why."""

    reason: str


_MEMO_SIZE = 10_000
_MEMO: dict[str, JudgeVerdict] = {}
"""Verdicts of this process by cache key: a second metric with the same judge and inputs (e.g.
``planning_judge`` listed twice under two names) reuses the verdict, cache or no cache."""


def _remember(key: str, verdict: JudgeVerdict) -> None:
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = verdict


def _failure_reason(exc: BaseException) -> str:
    from pydantic_ai.exceptions import ModelHTTPError, ModelTimeoutError, UnexpectedModelBehavior

    if isinstance(exc, ModelTimeoutError | TimeoutError):
        return f"judge call timed out ({exc})"
    if isinstance(exc, ModelHTTPError):
        return f"judge call failed: HTTP {exc.status_code} ({exc.body})"
    if isinstance(exc, UnexpectedModelBehavior):
        return f"judge output invalid: {exc}"
    return f"judge call failed: {type(exc).__name__}: {exc}"


@functools.cache
def _schema(verdict_type: type[BaseModel]) -> dict[str, Any]:
    return verdict_type.model_json_schema()


def request_key(model_id: str, request: JudgeRequest) -> str:
    """The cache key of ``request`` sent to the model ``model_id``.

    Args:
        model_id: the judge model's identity (:attr:`JudgeSettings.model_id`).
        request: the judge call.
    """
    parts: dict[str, Any] = {
        "judge": request.judge,
        "instructions": request.instructions,
        "prompt": request.prompt,
        "schema": _schema(request.verdict_type),
    }
    # the first sample keeps the key of a single judgment: runs before repeated sampling, and
    # runs with samples = 1, share their cached answers with the first sample of any run
    if request.sample:
        parts["sample"] = request.sample
    if request.context:
        parts["context"] = request.context
    return cache_key(model=model_id, prompt_version=request.prompt_version, parts=parts)


_MODE_VERSION = "output-mode/1"


def _mode_key(model_id: str) -> str:
    return cache_key(model=model_id, prompt_version=_MODE_VERSION, parts={})


_MODES_SEEN: dict[str, OutputMode] = {}
"""The output mode found for each judge model in this process."""


def cached_verdict(settings: JudgeSettings, request: JudgeRequest) -> JudgeVerdict | None:
    """The verdict already known for ``request`` (this process's memo or the SQLite cache),
    without calling the model; None when there is none.

    Args:
        settings: the judge settings (their model and cache file).
        request: the judge call.
    """
    key = request_key(settings.model_id or "", request)
    if key in _MEMO:
        return JudgeVerdict(_MEMO[key].output, _MEMO[key].usage, cached=True)
    if not settings.cache_path or not Path(settings.cache_path).is_file():
        return None
    cache = JudgeCache(settings.cache_path)
    try:
        hit = cache.get(key)
    finally:
        cache.close()
    return None if hit is None else JudgeVerdict(hit[0], hit[1], cached=True)


class OutputModeUnavailable(Exception):
    """The probe of an endpoint's output modes failed for a reason other than a missing
    feature (a refused key, a timeout): no mode can be chosen."""


def _unsupported(exc: BaseException) -> bool:
    """Whether a probe's failure says that the endpoint lacks the feature (rather than that
    the endpoint cannot be used at all)."""
    from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

    if isinstance(exc, ModelHTTPError):
        return exc.status_code not in (401, 403, 408, 429)
    return isinstance(exc, UnexpectedModelBehavior)


async def detect_output_mode(model: Model, settings: JudgeSettings) -> OutputMode:
    """The first output mode the endpoint answers a small probe with: tool calling, then
    ``response_format``; prompted JSON when it takes neither.

    Args:
        model: the judge model (built).
        settings: the judge settings (their timeout and retries).

    Raises:
        OutputModeUnavailable: the probe failed for another reason (its reason is the message).
    """
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import AgentRunError
    from pydantic_ai.settings import ModelSettings

    for mode in MODES[:-1]:
        agent: Agent[None, Any] = Agent(
            model,
            output_type=_output_type(mode, ProbeVerdict),
            model_settings=ModelSettings(
                temperature=0.0, timeout=settings.timeout_s, max_retries=settings.retries
            ),
            retries={"output": 0},
        )
        try:
            await agent.run(PROBE_PROMPT)
        except (AgentRunError, TimeoutError) as exc:
            if not _unsupported(exc):
                raise OutputModeUnavailable(_failure_reason(exc)) from None
            continue
        return mode
    return "prompted"


def _output_type(mode: OutputMode, verdict_type: type[BaseModel]) -> Any:
    from pydantic_ai import NativeOutput, TextOutput, ToolOutput

    if mode == "tool":
        return ToolOutput(verdict_type)
    if mode == "native":
        return NativeOutput(verdict_type)

    def parse(text: str) -> BaseModel:
        from pydantic_ai import ModelRetry

        try:
            return read_verdict(text, verdict_type)
        except ValueError as exc:
            raise ModelRetry(str(exc)) from None

    return TextOutput(parse)


def _build_model(settings: JudgeSettings, api_key: str | None) -> Model:
    from pydantic_ai.models import infer_model

    assert settings.model is not None
    if settings.base_url:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        # An explicit placeholder: with api_key=None the SDK would send OPENAI_API_KEY here.
        provider = OpenAIProvider(base_url=settings.base_url, api_key=api_key or "no-key")
        return OpenAIChatModel(settings.model, provider=provider)
    if api_key is None:
        return infer_model(settings.model)
    from pydantic_ai.providers import infer_provider_class

    def provider_with_key(name: str) -> Any:
        return infer_provider_class(name)(api_key=api_key)  # type: ignore[call-arg]

    return infer_model(settings.model, provider_factory=provider_with_key)


class JudgeSession:
    """Judge calls of one batch, on the running event loop.

    Use as ``async with JudgeSession(settings, spend) as session`` and await :meth:`judge`
    for each request (concurrently).

    Args:
        settings: the judge settings (``model`` must be set).
        spend: what earlier batches of the same metric spent; updated in place, so that the
            budget holds over a whole run.
    """

    def __init__(self, settings: JudgeSettings, spend: JudgeSpend) -> None:
        self.settings = settings
        self.model_id = settings.model_id or ""
        self._spend = spend
        self._semaphore = asyncio.Semaphore(settings.concurrency)
        self._inflight: dict[str, asyncio.Task[JudgeVerdict | JudgeFailure]] = {}
        self._agents: dict[tuple[str, str, str], Agent[None, Any]] = {}
        self._model: Model | None = None
        self._setup_failure: str | None = None
        self._api_key: str | None = None
        self._cache: JudgeCache | None = None
        self._mode: OutputMode | None = None
        self._mode_lock = asyncio.Lock()

    async def __aenter__(self) -> JudgeSession:
        env = self.settings.api_key_env
        if env is not None:
            self._api_key = os.environ.get(env) or None
            if self._api_key is None:
                self._setup_failure = f"judge API key variable {env} is not set"
                return self
        try:
            self._model = _build_model(self.settings, self._api_key)
            await self._model.__aenter__()
        except Exception as exc:  # any provider's construction error: missing key, package...
            self._model = None
            reason = f"judge model could not be built: {exc}"
            self._setup_failure = redact_error(reason, self._api_key)
        if self.settings.cache_path:
            self._cache = JudgeCache(self.settings.cache_path)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._model is not None:
            await self._model.__aexit__(None, None, None)
        if self._cache is not None:
            self._cache.close()

    def _key(self, request: JudgeRequest) -> str:
        return request_key(self.model_id, request)

    @property
    def mode(self) -> OutputMode | None:
        """The output mode of this session's calls, once it is known."""
        return self._mode

    async def output_mode(self) -> OutputMode | JudgeFailure:
        """The output mode of the calls: the configured one, or the one found for this model
        in this run (this process, then the cache), or found now by a probe (then kept).
        """
        if self._mode is not None:
            return self._mode
        async with self._mode_lock:
            if self._mode is not None:
                return self._mode
            if self._setup_failure is not None:
                return JudgeFailure(self._setup_failure)
            configured = self.settings.output_mode
            if configured != "auto":
                self._mode = configured
                return configured
            key = _mode_key(self.model_id)
            found = _MODES_SEEN.get(key)
            if found is None and self._cache is not None and (hit := self._cache.get(key)):
                found = hit[0].get("mode")
            if found not in MODES:
                assert self._model is not None
                try:
                    found = await detect_output_mode(self._model, self.settings)
                except OutputModeUnavailable as exc:
                    reason = f"the judge's output modes could not be probed: {exc}"
                    return JudgeFailure(redact_error(reason, self._api_key))
                if self._cache is not None:
                    self._cache.put(
                        key,
                        model=self.model_id,
                        prompt_version=_MODE_VERSION,
                        output={"mode": found},
                        usage={},
                    )
            assert found in MODES
            _MODES_SEEN[key] = found
            self._mode = found
            return found

    async def judge(self, request: JudgeRequest) -> JudgeVerdict | JudgeFailure:
        """The verdict for ``request``: from the memo, the cache, or one model call.

        Args:
            request: the judge call.
        """
        key = self._key(request)
        if key in _MEMO:
            return JudgeVerdict(_MEMO[key].output, _MEMO[key].usage, cached=True)
        if self._cache is not None and (hit := self._cache.get(key)) is not None:
            verdict = JudgeVerdict(hit[0], hit[1], cached=True)
            _remember(key, verdict)
            return verdict
        task = self._inflight.get(key)
        if task is not None:  # the same inputs twice in one batch: one call, the repeat is free
            outcome = await task
            if isinstance(outcome, JudgeVerdict):
                return JudgeVerdict(outcome.output, outcome.usage, cached=True)
            return outcome
        task = asyncio.ensure_future(self._call(key, request))
        self._inflight[key] = task
        return await task

    def _agent(self, request: JudgeRequest, mode: OutputMode) -> Agent[None, Any]:
        from pydantic_ai import Agent
        from pydantic_ai.settings import ModelSettings

        slot = (request.judge, mode, request.instructions)
        agent = self._agents.get(slot)
        if agent is None:
            s = self.settings
            instructions = request.instructions
            if mode == "prompted":
                instructions = prompted_instructions(instructions, request.verdict_type)
            agent = Agent(
                self._model,
                output_type=_output_type(mode, request.verdict_type),
                instructions=instructions,
                model_settings=ModelSettings(
                    temperature=s.temperature, timeout=s.timeout_s, max_retries=s.retries
                ),
                retries={"output": s.output_retries},
            )
            self._agents[slot] = agent
        return agent

    async def _call(self, key: str, request: JudgeRequest) -> JudgeVerdict | JudgeFailure:
        from pydantic_ai.exceptions import AgentRunError
        from pydantic_ai.settings import ModelSettings
        from pydantic_ai.usage import UsageLimits

        if self._setup_failure is not None:
            return JudgeFailure(self._setup_failure)
        mode = await self.output_mode()
        if isinstance(mode, JudgeFailure):
            return mode
        # a repeated judgment varies the seed where the provider takes one
        run_settings = ModelSettings(seed=request.sample) if self.settings.samples > 1 else None
        limits = UsageLimits(request_limit=request.max_requests) if request.max_requests else None
        async with self._semaphore:
            # no await between the budget's check and its count: atomic on this event loop
            refused = self._spend.reserve(self.settings)
            if refused is not None:
                return JudgeFailure(refused)
            try:
                result = await self._agent(request, mode).run(
                    request.prompt,
                    model_settings=run_settings,
                    usage_limits=limits,
                    toolsets=[request.toolset] if request.toolset is not None else None,
                )
            except (AgentRunError, TimeoutError) as exc:
                return JudgeFailure(redact_error(_failure_reason(exc), self._api_key))
        run_usage = result.usage
        cost, cost_source = call_cost(self.settings, run_usage)
        self._spend.add_cost(cost)
        usage = {
            "input_tokens": run_usage.input_tokens,
            "output_tokens": run_usage.output_tokens,
            "cache_read_tokens": run_usage.cache_read_tokens,
            "requests": run_usage.requests,
            "cost_usd": cost,
            "cost_source": cost_source,
        }
        output = result.output.model_dump()
        trail = getattr(request.toolset, "trail", None)
        if callable(trail):
            output[TRAIL] = trail()
        verdict = JudgeVerdict(output, usage)
        _remember(key, verdict)
        if self._cache is not None:
            self._cache.put(
                key,
                model=self.model_id,
                prompt_version=request.prompt_version,
                output=output,
                usage=usage,
            )
        return verdict


TRAIL = "_explored"
"""The key of a verdict's output under which a judge's tool calls are recorded (what it
listed, read and searched)."""


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion from synchronous code, also when a loop already runs here.

    Args:
        coro: the coroutine.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
