"""Tokens and cost of a trace, each token counted once.

The rule:

- **Tokens.** A trace's usage is its own ``usage`` when it records one (any token count or a
  cost); otherwise it is the sum of its steps' usage, field by field over the steps that report
  the field. Never both: a trace that records its own total and its steps' usage (as the chat
  agent and most exporters do) is counted from its own total only.
- **Cost.** The recorded ``cost_usd`` of the usage that was counted. Where none is recorded,
  the tokens are priced with `genai-prices <https://github.com/pydantic/genai-prices>`_ for the
  model named by that usage's ``model``, else by the trace's ``params["model"]``. When steps are
  summed, each step is priced on its own (its own cost, else its tokens at its model's price);
  one step whose cost cannot be found leaves the trace's cost unknown (None with a note), never
  a partial sum presented as the total.
- ``total_tokens`` = input + output tokens (``input_tokens`` already include the cache reads).
- ``model_calls`` = the trace's steps of kind ``llm`` or ``reasoning`` (one a request); None for
  a trace without steps.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, getcontext
from typing import Any, cast

from agentgauge._price_cache import MISSING, Rates, keep_rates, kept_rates
from agentgauge.model import StepKind, Trace, Usage

__all__ = ["TraceUsage", "price_usd", "sum_usage", "trace_usage", "usage_json"]

# a tuple: ``in`` compares the members' identities, where a set would call the enum's
# Python-level hash for every step
_MODEL_STEPS = (StepKind.llm, StepKind.reasoning)
_LLM, _REASONING = _MODEL_STEPS


@dataclass(frozen=True)
class TraceUsage:
    """What one trace spent, by the rule of this module.

    Args:
        input_tokens: prompt tokens (cache reads included).
        output_tokens: completion tokens (reasoning tokens included).
        cache_read_tokens: prompt tokens served from the provider's cache.
        total_tokens: input + output tokens.
        cost_usd: the cost in USD; None when it is unknown.
        cost_source: ``recorded``, ``genai-prices`` or ``recorded+genai-prices`` (steps of
            both kinds); None when the cost is unknown.
        cost_note: why the cost is unknown, when tokens are known.
        model_calls: the model requests (``llm`` and ``reasoning`` steps).
        source: ``trace`` (its own usage) or ``steps`` (their sum); None when nothing is
            recorded.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None
    cost_source: str | None = None
    cost_note: str | None = None
    model_calls: int | None = None
    source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON object."""
        return dict(vars(self))


def _recorded(usage: Usage | None) -> bool:
    return usage is not None and (
        usage.input_tokens is not None
        or usage.output_tokens is not None
        or usage.cache_read_tokens is not None
        or usage.cost_usd is not None
    )


def _field_sum(values: Iterable[int | float | None]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def sum_usage(usages: Iterable[Usage]) -> Usage | None:
    """The sum of several usages, field by field over the usages that report the field.

    Args:
        usages: the usages (of a trace's steps, say).

    Returns:
        None when no usage records anything; ``model`` is kept when all name the same one.
    """
    parts = [u for u in usages if _recorded(u)]
    if not parts:
        return None
    models = {u.model for u in parts}
    return Usage(
        input_tokens=_field_sum(u.input_tokens for u in parts),
        output_tokens=_field_sum(u.output_tokens for u in parts),
        cache_read_tokens=_field_sum(u.cache_read_tokens for u in parts),
        cost_usd=_field_sum(u.cost_usd for u in parts),
        model=models.pop() if len(models) == 1 else None,
    )


def price_usd(
    model: str, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0
) -> float | None:
    """The price of the tokens for ``model`` from genai-prices; None when it has no price.

    A ``provider:model`` string (pydantic-ai's form) looks the model up at that provider
    first, then anywhere.

    Args:
        model: the model's name, with or without a ``provider:`` prefix.
        input_tokens: prompt tokens (cache reads included).
        output_tokens: completion tokens.
        cache_read_tokens: prompt tokens read from the cache (priced at the cache rate).
    """
    rates = _flat_rates(model)
    if rates is None:
        return None
    if rates and 0 <= cache_read_tokens <= input_tokens and output_tokens >= 0:
        return _at_rates(rates, input_tokens, output_tokens, cache_read_tokens)
    return _genai_price(model, input_tokens, output_tokens, cache_read_tokens)


_MTOK = 1_000_000
_PROBE = (7_654_321, 1_234_567, 2_345_678)
"""Token counts whose price checks that a model's flat rates give genai-prices' own figure."""


def _at_rates(
    rates: tuple[Decimal, Decimal, Decimal], inputs: int, outputs: int, cached: int
) -> float:
    """The price at flat per-million rates (input, output, cache read), in exact decimals as
    genai-prices adds them: the cache reads at their rate, the other input tokens at the input
    rate."""
    scaled = _scaled_rates(rates)
    if scaled is not None and inputs >= cached >= 0 and outputs >= 0:
        whole_input, whole_output, whole_cached, unit = scaled
        # the same sum in integers: exact where the decimals' sum is (every part, and so the
        # sum, within the context's precision), and int / int rounds to the nearest float as
        # float(Decimal) does
        total = whole_input * (inputs - cached) + whole_cached * cached + whole_output * outputs
        if total < 10 ** getcontext().prec:
            return total / unit
    per_input, per_output, per_cached = rates
    return float(
        per_input * (inputs - cached) / _MTOK
        + per_cached * cached / _MTOK
        + per_output * outputs / _MTOK
    )


@functools.lru_cache(maxsize=256)
def _scaled_rates(rates: tuple[Decimal, Decimal, Decimal]) -> tuple[int, int, int, int] | None:
    """The rates as integers and the one number (a power of ten, times a million tokens)
    they are per; None for a rate that is negative or not a finite number."""
    exponents = [rate.as_tuple().exponent for rate in rates]
    if not all(isinstance(e, int) for e in exponents) or any(rate < 0 for rate in rates):
        return None
    shift = -min(0, *(e for e in exponents if isinstance(e, int)))
    per_input, per_output, per_cached = (int(rate.scaleb(shift)) for rate in rates)
    return per_input, per_output, per_cached, 10**shift * _MTOK


@functools.lru_cache(maxsize=256)
def _flat_rates(model: str) -> Rates:
    """The input, output and cache-read prices per million tokens of ``model`` when they are
    flat (one price whatever the counts: a trace's tokens are then priced without calling
    genai-prices, whose every call resolves the model's prices afresh); ``()`` when they are
    not (tiers by prompt length, a unit priced otherwise), None when genai-prices has no price.
    Kept between processes (:mod:`agentgauge._price_cache`) when they hold whatever the date.
    """
    kept = kept_rates(model)
    if kept is not MISSING:
        return cast(Rates, kept)
    rates, dated = _read_rates(model)
    if not dated:
        keep_rates(model, rates)
    return rates


def _read_rates(model: str) -> tuple[Rates, bool]:
    """:func:`_flat_rates` read from genai-prices, and whether its price holds for a period of
    time only."""
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    for ref, provider_id in _lookups(model):
        try:
            found = calc_price(PriceUsage(), ref, provider_id=provider_id)
        except LookupError:
            continue
        break
    else:
        return None, False
    dated = isinstance(found.model.prices, list)  # conditional prices, by date among others
    prices = found.model_price
    per_input, per_output, per_cached = (
        getattr(prices, key, None) for key in ("input_mtok", "output_mtok", "cache_read_mtok")
    )
    if not (
        isinstance(per_input, Decimal)
        and isinstance(per_output, Decimal)
        and isinstance(per_cached, Decimal)
    ):
        return (), dated
    rates = (per_input, per_output, per_cached)
    # the rule above must give genai-prices' own figure, else each call asks it
    return (rates if _at_rates(rates, *_PROBE) == _genai_price(model, *_PROBE) else ()), dated


def _lookups(model: str) -> list[tuple[str, str | None]]:
    """The model name and provider to look ``model`` up with, in turn: at the provider of a
    ``provider:model`` string first, then anywhere."""
    provider, _, name = model.rpartition(":")
    return [(name, provider), (name, None)] if provider else [(name, None)]


@functools.lru_cache(maxsize=4096)
def _genai_price(
    model: str, input_tokens: int, output_tokens: int, cache_read_tokens: int
) -> float | None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    tokens = PriceUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens,
    )
    for ref, provider_id in _lookups(model):
        try:
            return float(calc_price(tokens, ref, provider_id=provider_id).total_price)
        except LookupError:
            continue
    return None


def _cost(usage: Usage, default_model: str | None) -> tuple[float | None, str | None, str | None]:
    """One usage's cost, its source and, when unknown, why."""
    if usage.cost_usd is not None:
        return usage.cost_usd, "recorded", None
    model = usage.model or default_model
    if model is None:
        return None, None, "no cost recorded and no model named to price the tokens"
    if usage.input_tokens is None and usage.output_tokens is None:
        return None, None, "no cost and no token counts recorded"
    cost = price_usd(
        model, usage.input_tokens or 0, usage.output_tokens or 0, usage.cache_read_tokens or 0
    )
    if cost is None:
        return None, None, f"genai-prices has no price for model {model!r}"
    return cost, "genai-prices", None


@functools.lru_cache(maxsize=256)
def _nothing_recorded(model_calls: int | None) -> TraceUsage:
    """The usage of a trace that records none (one frozen instance per number of calls)."""
    return TraceUsage(model_calls=model_calls)


def trace_usage(trace: Trace) -> TraceUsage:
    """The tokens and cost of one trace (the rule in this module's description).

    Args:
        trace: the trace.
    """
    fields, calls = _usage_fields(trace)
    return _nothing_recorded(calls) if fields is None else TraceUsage(**fields)


def usage_json(trace: Trace) -> dict[str, Any]:
    """:func:`trace_usage` as the JSON object :meth:`TraceUsage.as_dict` gives (made without
    the instance: the engine keeps the object of every sample).

    Args:
        trace: the trace.
    """
    fields, calls = _usage_fields(trace)
    return _nothing_recorded(calls).as_dict() if fields is None else fields


def _usage_fields(trace: Trace) -> tuple[dict[str, Any] | None, int | None]:
    """The fields of :func:`trace_usage` in the order of :class:`TraceUsage`'s (None when
    nothing is recorded), and the trace's model calls."""
    usage, steps = trace.usage, trace.steps
    own = usage is not None and _recorded(usage)
    calls: int | None = None
    parts: list[Usage] = []
    if steps and own:
        kinds = [step.kind for step in steps]
        calls = kinds.count(_LLM) + kinds.count(_REASONING)
    elif steps:
        calls = 0
        for step in steps:  # one pass: the model calls, and the usage of each step
            calls += step.kind in _MODEL_STEPS
            if (step_usage := step.usage) is not None and _recorded(step_usage):
                parts.append(step_usage)
    if own:
        assert usage is not None
        counted: Usage | None = usage
        source = "trace"
        parts = [usage]
    else:
        counted = sum_usage(parts) if parts else None
        source = "steps"
    if counted is None:  # nothing recorded, the common case of tool-calling samples
        return None, calls
    params_model = trace.params.get("model")
    default_model = params_model if isinstance(params_model, str) else None
    cost: float | None
    cost_source: str | None
    if len(parts) == 1:  # one usage counted (a trace's own, most often): its cost is the sum
        cost, cost_source, note = _cost(parts[0], default_model)
        if cost is not None:
            cost = 0 + cost  # as sum() adds it (a -0.0 recorded is 0.0)
    else:
        costs = [_cost(u, default_model) for u in parts]
        cost = cost_source = None
        note = next((c[2] for c in costs if c[0] is None), None)
        if note is None:
            cost = sum(c[0] for c in costs if c[0] is not None)
            cost_source = "+".join(sorted({c[1] for c in costs if c[1] is not None}, reverse=True))
    inputs, outputs = counted.input_tokens, counted.output_tokens
    fields = {
        "input_tokens": inputs,
        "output_tokens": outputs,
        "cache_read_tokens": counted.cache_read_tokens,
        "total_tokens": _field_sum([inputs, outputs]),
        "cost_usd": cost,
        "cost_source": cost_source,
        "cost_note": note,
        "model_calls": calls,
        "source": source,
    }
    return fields, calls
