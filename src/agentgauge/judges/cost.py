"""What judging costs: the cost of one call, and what the judges spent on one sample.

A call's cost is the configured price per 1k tokens when one is set, else pydantic-ai's
genai-prices figure, else unknown (None).

A metric that calls a model reports the call in its details as ``usage`` (the call's tokens,
``requests`` and ``cost_usd``) beside ``cached`` (True when the verdict was already paid for:
the cache, or the same call made for another sample or metric of the run); the rubric's
evaluation steps are reported the same way under ``steps_generation``, and each answer of a
repeated judgment under ``judge_samples["calls"]``. :func:`judge_spend`
adds up the live calls of one sample, so that a run's judging cost is the sum over its samples
and nothing cached is counted again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agentgauge.judges.settings import JudgeSettings

if TYPE_CHECKING:
    from pydantic_ai.usage import RunUsage

__all__ = ["call_cost", "judge_spend"]


def call_cost(settings: JudgeSettings, usage: RunUsage) -> tuple[float | None, str | None]:
    """The call's cost in USD and where the figure comes from (``price_per_1k_tokens`` or
    ``genai-prices``); ``(None, None)`` when it is unknown.

    Args:
        settings: the judge settings (their prices, when set, override genai-prices).
        usage: the token usage of the call's run.
    """
    price_in = settings.price_per_1k_input_tokens
    price_out = settings.price_per_1k_output_tokens
    if price_in is not None or price_out is not None:
        cost = usage.input_tokens * (price_in or 0.0) + usage.output_tokens * (price_out or 0.0)
        return cost / 1000.0, "price_per_1k_tokens"
    if usage.cost is not None:
        return float(usage.cost), "genai-prices"
    return None, None


def _calls(details: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    repeated = details.get("judge_samples")
    calls = repeated.get("calls") if isinstance(repeated, Mapping) else None
    entries = [details, details.get("steps_generation"), *(calls or [])]
    return [
        entry
        for entry in entries
        if isinstance(entry, Mapping)
        and isinstance(entry.get("usage"), Mapping)
        and isinstance(entry.get("cached"), bool)
    ]


def judge_spend(details: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The model calls the metrics of one sample made in this run, and what they cost.

    Args:
        details: the details of each metric of the sample.

    Returns:
        ``{"calls", "cached", "requests", "input_tokens", "output_tokens",
        "cache_read_tokens", "total_tokens", "cost_usd", "cost_unknown"}`` — judge calls paid
        for now, answers served from the cache, HTTP requests and tokens of the live calls
        (a call re-asked after invalid output makes several requests), their cost (None when
        one call's cost is unknown, counted in ``cost_unknown``); None when no metric reports
        a call.
    """
    entries = [
        entry
        for d in details
        # most metrics call no model: no call
        if "usage" in d or "steps_generation" in d or "judge_samples" in d
        for entry in _calls(d)
    ]
    if not entries:
        return None
    live = [e["usage"] for e in entries if not e["cached"]]
    unknown = sum(u.get("cost_usd") is None for u in live)
    inputs = sum(u.get("input_tokens") or 0 for u in live)
    outputs = sum(u.get("output_tokens") or 0 for u in live)
    return {
        "calls": len(live),
        "cached": len(entries) - len(live),
        "requests": sum(u.get("requests") or 0 for u in live),
        "input_tokens": inputs,
        "output_tokens": outputs,
        "cache_read_tokens": sum(u.get("cache_read_tokens") or 0 for u in live),
        "total_tokens": inputs + outputs,
        "cost_usd": None if unknown else sum(u.get("cost_usd") or 0.0 for u in live),
        "cost_unknown": unknown,
    }
