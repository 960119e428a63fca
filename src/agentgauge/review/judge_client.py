"""Calling a judge model through pydantic-ai: settings, retries, timeouts, budget, cache.

One :class:`JudgeSession` serves one batch of judge calls on one event loop. It builds the
pydantic-ai model once, runs the calls concurrently under a semaphore, serves repeats from an
in-process memo and from the SQLite :class:`~agentgauge.review.judge_cache.JudgeCache`, and
turns every failure into a :class:`JudgeFailure` with a reason instead of a score.

Who does what:

- pydantic-ai builds the model (any ``provider:model`` string it knows, or an
  ``OpenAIChatModel`` with an ``OpenAIProvider(base_url=...)``), validates the structured
  output against the verdict model and re-asks the model ``output_retries`` times when it is
  invalid;
- the provider SDK retries 408/409/429/5xx answers, dropped connections and timeouts
  ``retries`` times with exponential backoff (honouring ``Retry-After``); ``timeout_s`` bounds
  each attempt (pydantic-ai's ``ModelSettings.timeout``);
- token usage is pydantic-ai's ``RunUsage`` of the run; its cost is the configured price per
  1k tokens when one is set, else pydantic-ai's genai-prices figure, else unknown (None).

The API key is read from the environment variable ``api_key_env`` when the call is made; it is
never stored, logged or put in a reason (provider error messages are scrubbed of it).
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agentgauge._redact import redact_url
from agentgauge.review.judge_cache import JudgeCache, cache_key

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.models import Model

__all__ = [
    "JudgeFailure",
    "JudgeRequest",
    "JudgeSession",
    "JudgeSettings",
    "JudgeSpend",
    "JudgeVerdict",
    "run_sync",
]

_T = TypeVar("_T")


class JudgeSettings(BaseModel):
    """How the judges reach their model; the ``[judge]`` table of a suite file.

    Args:
        model: a pydantic-ai model string (``"openai:gpt-4o-mini"``, ``"anthropic:..."``,
            ``"ollama:..."``), or the model name served at ``base_url``. None: no judge, the
            judge metrics are None with the reason "no judge configured".
        base_url: an OpenAI-compatible endpoint (``http://host:port/v1``); the model is then
            pydantic-ai's ``OpenAIChatModel`` with an ``OpenAIProvider`` at this URL.
        api_key_env: the environment variable holding the API key. With ``base_url`` it is the
            only key ever sent (none when unset, so a key meant for another provider never
            leaks to a third-party URL); with a model string, unset means the provider's own
            variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``...).
        timeout_s: the timeout of each HTTP attempt, in seconds.
        retries: how many times a failed request (429, 5xx, timeout, dropped connection) is
            retried by the provider SDK, with exponential backoff.
        output_retries: how many times pydantic-ai re-asks the model after invalid output.
        concurrency: the most judge calls in flight at once.
        max_calls: the most live calls (cache hits are free); the samples after it are None.
        max_cost_usd: the most spend; the samples after it are None (calls in flight when it
            is reached may overshoot it by up to ``concurrency`` calls).
        price_per_1k_input_tokens: USD per 1000 input tokens (overrides genai-prices).
        price_per_1k_output_tokens: USD per 1000 output tokens (overrides genai-prices).
        cache_path: the SQLite file of the judge cache (the results store's file); None
            disables the cache.
        excerpt_chars: how many characters of the paper the technical-accuracy judge sees.
        trace_budget_chars: how many characters of trace steps the planning judge sees.
        fallback: ``"heuristic"`` computes a labelled heuristic when the judge is unavailable;
            None (default) leaves the metric None with the reason.
    """

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    retries: int = Field(default=2, ge=0)
    output_retries: int = Field(default=1, ge=0)
    concurrency: int = Field(default=4, ge=1)
    max_calls: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    price_per_1k_input_tokens: float | None = Field(default=None, ge=0)
    price_per_1k_output_tokens: float | None = Field(default=None, ge=0)
    cache_path: str | None = "agentgauge.db"
    excerpt_chars: int = Field(default=12000, ge=1)
    trace_budget_chars: int = Field(default=12000, ge=200)
    fallback: Literal["heuristic"] | None = None

    @property
    def model_id(self) -> str | None:
        """The model's identity in details and cache keys: the string, or ``name@base_url``
        (the URL without its credentials: this identity is stored)."""
        if self.model is None:
            return None
        return f"{self.model}@{redact_url(self.base_url)}" if self.base_url else self.model


@dataclass(frozen=True)
class JudgeRequest:
    """One judge call.

    Args:
        judge: the judge's metric name.
        prompt_version: the judge's prompt version.
        instructions: the system instructions.
        prompt: the user prompt built from one trace.
        verdict_type: the structured output model.
    """

    judge: str
    prompt_version: str
    instructions: str
    prompt: str
    verdict_type: type[BaseModel]


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's answer and what it cost.

    Args:
        output: the structured output (the verdict model's fields).
        usage: ``input_tokens``, ``output_tokens``, ``requests``, ``cost_usd`` (None when
            unknown) and ``cost_source`` of the call that produced it.
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
``planning_rational`` beside ``planning_rationality``) reuses the verdict, cache or no cache."""


def _remember(key: str, verdict: JudgeVerdict) -> None:
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = verdict


_SECRET_LIKE = re.compile(r"\b(?:sk|key|api)[-_][A-Za-z0-9*_\-]{6,}", re.IGNORECASE)


def _scrub(text: str, secret: str | None) -> str:
    if secret:
        text = text.replace(secret, "[redacted]")
    return _SECRET_LIKE.sub("[redacted]", text)


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


def _cost(settings: JudgeSettings, usage: Any) -> tuple[float | None, str | None]:
    if (
        settings.price_per_1k_input_tokens is not None
        or settings.price_per_1k_output_tokens is not None
    ):
        cost = (
            usage.input_tokens * (settings.price_per_1k_input_tokens or 0.0)
            + usage.output_tokens * (settings.price_per_1k_output_tokens or 0.0)
        ) / 1000.0
        return cost, "price_per_1k_tokens"
    if usage.cost is not None:
        return float(usage.cost), "genai-prices"
    return None, None


@dataclass
class JudgeSpend:
    """What a judge metric has spent so far (live calls only), against its budget.

    Args:
        calls: live calls started.
        cost_usd: their known cost.
        cost_unknown: True once a call's cost could not be determined.
    """

    calls: int = 0
    cost_usd: float = 0.0
    cost_unknown: bool = False


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
        self._lock = asyncio.Lock()
        self._inflight: dict[str, asyncio.Task[JudgeVerdict | JudgeFailure]] = {}
        self._agents: dict[str, Agent[None, Any]] = {}
        self._model: Model | None = None
        self._setup_failure: str | None = None
        self._api_key: str | None = None
        self._cache: JudgeCache | None = None

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
            self._setup_failure = _scrub(f"judge model could not be built: {exc}", self._api_key)
        if self.settings.cache_path:
            self._cache = JudgeCache(self.settings.cache_path)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._model is not None:
            await self._model.__aexit__(None, None, None)
        if self._cache is not None:
            self._cache.close()

    def _key(self, request: JudgeRequest) -> str:
        return cache_key(
            model=self.model_id,
            prompt_version=request.prompt_version,
            parts={
                "judge": request.judge,
                "instructions": request.instructions,
                "prompt": request.prompt,
                "schema": _schema(request.verdict_type),
            },
        )

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

    async def _reserve(self) -> str | None:
        s = self.settings
        async with self._lock:
            if s.max_calls is not None and self._spend.calls >= s.max_calls:
                return f"judge budget exhausted: max_calls={s.max_calls} reached"
            if s.max_cost_usd is not None:
                if self._spend.cost_unknown:
                    return (
                        f"judge budget cannot be enforced: max_cost_usd={s.max_cost_usd} but the "
                        f"cost of {self.model_id} is unknown (set price_per_1k_input_tokens and "
                        "price_per_1k_output_tokens)"
                    )
                if self._spend.cost_usd >= s.max_cost_usd:
                    return (
                        f"judge budget exhausted: max_cost_usd={s.max_cost_usd} reached "
                        f"(spent {self._spend.cost_usd:.6f})"
                    )
            self._spend.calls += 1
            return None

    def _agent(self, request: JudgeRequest) -> Agent[None, Any]:
        from pydantic_ai import Agent
        from pydantic_ai.settings import ModelSettings

        agent = self._agents.get(request.judge)
        if agent is None:
            s = self.settings
            agent = Agent(
                self._model,
                output_type=request.verdict_type,
                instructions=request.instructions,
                model_settings=ModelSettings(
                    temperature=0.0, timeout=s.timeout_s, max_retries=s.retries
                ),
                retries={"output": s.output_retries},
            )
            self._agents[request.judge] = agent
        return agent

    async def _call(self, key: str, request: JudgeRequest) -> JudgeVerdict | JudgeFailure:
        from pydantic_ai.exceptions import AgentRunError

        if self._setup_failure is not None:
            return JudgeFailure(self._setup_failure)
        async with self._semaphore:
            refused = await self._reserve()
            if refused is not None:
                return JudgeFailure(refused)
            try:
                result = await self._agent(request).run(request.prompt)
            except (AgentRunError, TimeoutError) as exc:
                return JudgeFailure(_scrub(_failure_reason(exc), self._api_key))
        run_usage = result.usage
        cost, cost_source = _cost(self.settings, run_usage)
        async with self._lock:
            if cost is None:
                self._spend.cost_unknown = True
            else:
                self._spend.cost_usd += cost
        usage = {
            "input_tokens": run_usage.input_tokens,
            "output_tokens": run_usage.output_tokens,
            "requests": run_usage.requests,
            "cost_usd": cost,
            "cost_source": cost_source,
        }
        output = result.output.model_dump()
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
