"""How the judges reach their model, what they may spend and what they see: ``[judge]``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentgauge._redact import redact_url

__all__ = ["JudgeSettings"]


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
        trace_budget_tokens: how many tokens of the trace a judge sees (estimated at four
            characters a token); longer traces are shortened in the middle, with a marker.
        fallback: ``"heuristic"`` computes a labelled heuristic when a review or planning judge
            is unavailable; None (default) leaves the metric None with the reason. The other
            judges have no heuristic and are None with the reason either way.
        samples: how many times each judgment is asked (independent requests, each cached
            under its own sample index, the seed varied where the provider takes one); the
            value is the mean of the answers (the majority for pass/fail judges) and the
            spread of the answers is the judge's measured noise.
        temperature: the sampling temperature of every judge request.
        output_mode: how the judge returns its structured verdict: ``"tool"`` (a function
            call), ``"native"`` (``response_format`` with the JSON Schema), ``"prompted"``
            (JSON asked for in the instructions, validated strictly, one repair request) or
            ``"auto"`` (default: the endpoint is probed once per run, in that order).
        long_traces: what a judge does with a trace longer than ``trace_budget_tokens``:
            ``"tools"`` (default: it explores the trace with tools: list, read and search the
            steps), ``"chunks"`` (each window of steps is judged, then the windows' findings)
            or ``"truncate"`` (the middle is cut out, with a marker).
        max_tool_calls: the most trace-exploring tool calls of one judgment.
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
    trace_budget_tokens: int = Field(default=3000, ge=50)
    fallback: Literal["heuristic"] | None = None
    samples: int = Field(default=1, ge=1, le=100)
    temperature: float = Field(default=0.0, ge=0, le=2)
    output_mode: Literal["auto", "tool", "native", "prompted"] = "auto"
    long_traces: Literal["tools", "chunks", "truncate"] = "tools"
    max_tool_calls: int = Field(default=20, ge=1, le=500)

    @property
    def model_id(self) -> str | None:
        """The model's identity in details and cache keys: the string, or ``name@base_url``
        (the URL without its credentials: this identity is stored)."""
        if self.model is None:
            return None
        return f"{self.model}@{redact_url(self.base_url)}" if self.base_url else self.model
