"""The cost of one judge call: the configured price per 1k tokens when one is set, else
pydantic-ai's genai-prices figure, else unknown (None)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgauge.judges.settings import JudgeSettings

if TYPE_CHECKING:
    from pydantic_ai.usage import RunUsage

__all__ = ["call_cost"]


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
