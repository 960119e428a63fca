"""Tokens and cost: each token counted once, costs recorded or priced with genai-prices, and
the totals of a run in the terminal, JSON, CSV, HTML and compare."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.documents.compare import compare_runs
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.io.jsonl import read_traces
from agentgauge.metrics.base import MetricOptionError, create_metric
from agentgauge.model import Step, StepKind, Task, Trace, Usage
from agentgauge.store import Store
from agentgauge.usage import price_usd, trace_usage, usage_json
from report_data import embedded

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo_traces.jsonl"
runner = CliRunner()
# genai-prices' gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output tokens,
# $0.075 per million cache reads
MINI_IN, MINI_OUT, MINI_CACHE = 0.15e-6, 0.60e-6, 0.075e-6


def _llm(index: int, usage: Usage | None) -> Step:
    return Step(index=index, kind=StepKind.llm, content="x", usage=usage)


def test_usage_recorded_per_step_and_per_trace_is_counted_once() -> None:
    steps = [
        _llm(0, Usage(input_tokens=100, output_tokens=10)),
        _llm(1, Usage(input_tokens=200, output_tokens=20)),
    ]
    both = Trace(
        id="t",
        task=Task(id="t"),
        steps=steps,
        usage=Usage(input_tokens=300, output_tokens=30, cost_usd=0.01),
    )
    counted = trace_usage(both)
    assert (counted.input_tokens, counted.output_tokens, counted.total_tokens) == (300, 30, 330)
    assert (counted.cost_usd, counted.cost_source, counted.source) == (0.01, "recorded", "trace")
    assert counted.model_calls == 2

    only_steps = both.model_copy(update={"usage": None})
    summed = trace_usage(only_steps)
    assert (summed.input_tokens, summed.output_tokens, summed.source) == (300, 30, "steps")
    assert summed.cost_usd is None
    assert summed.cost_note == "no cost recorded and no model named to price the tokens"


def test_the_demo_run_counts_every_trace_once(tmp_path: Path) -> None:
    traces = [t for t in read_traces(DEMO) if isinstance(t, Trace)]
    assert all(t.usage is not None for t in traces)
    tokens = sum(
        (t.usage.input_tokens or 0) + (t.usage.output_tokens or 0) for t in traces if t.usage
    )
    # the demo records every trace's total and, in its model steps, the same tokens again
    in_steps = sum(
        (s.usage.input_tokens or 0) + (s.usage.output_tokens or 0)
        for t in traces
        for s in t.steps
        if s.usage
    )
    assert in_steps == tokens > 0
    cost = sum(t.usage.cost_usd or 0.0 for t in traces if t.usage)
    calls = sum(s.kind in (StepKind.llm, StepKind.reasoning) for t in traces for s in t.steps)

    out, table, page = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.html"
    args = ["evaluate", str(DEMO), "--db", str(tmp_path / "r.db"), "--jobs", "1", "--no-progress"]
    result = runner.invoke(
        app, [*args, "--json", str(out), "--csv", str(table), "--html", str(page)]
    )
    assert result.exit_code == 0, result.output

    agent = json.loads(out.read_text())["usage"]["agent"]
    assert agent["total_tokens"]["total"] == tokens  # not 2 × tokens
    assert agent["total_tokens"]["n"] == 72
    assert agent["total_tokens"]["mean"] == pytest.approx(tokens / 72)
    assert agent["cost_usd"]["total"] == pytest.approx(cost)
    assert agent["model_calls"]["total"] == calls
    low, high = agent["cost_usd"]["ci_low"], agent["cost_usd"]["ci_high"]
    assert low < cost / 72 < high
    # shown in the terminal and the report
    assert "tokens and cost of the agent" in result.output
    assert f"{tokens:,}" in result.output and f"${cost:.4f}" in result.output
    report, _ = embedded(page.read_text())
    assert report["run"]["usage"]["agent"]["total_tokens"]["total"] == tokens
    rows = list(csv.DictReader(table.open()))
    assert sum(int(r["total_tokens"]) for r in rows) == tokens
    assert rows[0]["cost_usd"] and rows[0]["judge_cost_usd"] == ""


def test_cost_from_genai_prices_per_step_and_mixed_sources() -> None:
    priced = Trace(
        id="p",
        task=Task(id="t"),
        params={"model": "gpt-4o-mini"},
        steps=[
            _llm(0, Usage(input_tokens=1000, output_tokens=50, cache_read_tokens=200)),
            _llm(1, Usage(input_tokens=400, output_tokens=20, cost_usd=0.5)),
        ],
    )
    usage = trace_usage(priced)
    first = 800 * MINI_IN + 200 * MINI_CACHE + 50 * MINI_OUT
    assert usage.cost_usd == pytest.approx(first + 0.5)
    assert usage.cost_source == "recorded+genai-prices"
    assert usage.cache_read_tokens == 200

    # a step's own model wins over the trace's; a model genai-prices lacks leaves it unknown
    unknown = priced.model_copy(deep=True)
    assert unknown.steps[0].usage is not None
    unknown.steps[0].usage.model = "no-such-model-xyz"
    found = trace_usage(unknown)
    assert found.cost_usd is None and found.cost_source is None
    assert found.cost_note == "genai-prices has no price for model 'no-such-model-xyz'"
    # the total tokens are known all the same
    assert found.total_tokens == 1000 + 50 + 400 + 20

    provider = Trace(
        id="q",
        task=Task(id="t"),
        usage=Usage(input_tokens=1000, output_tokens=50, model="openai:gpt-4o-mini"),
    )
    assert trace_usage(provider).cost_usd == pytest.approx(1000 * MINI_IN + 50 * MINI_OUT)
    assert trace_usage(Trace(id="n", task=Task(id="t"))).source is None


def test_a_cost_is_the_sum_of_the_counted_usages_costs_one_or_several() -> None:
    # a cost of one usage is summed as several are: a recorded -0.0 is 0.0 either way
    for steps, own in (([], Usage(cost_usd=-0.0)), ([Usage(cost_usd=-0.0)] * 2, None)):
        trace = Trace(
            id="z",
            task=Task(id="t"),
            steps=[_llm(i, u) for i, u in enumerate(steps)],
            usage=own,
        )
        cost = usage_json(trace)["cost_usd"]
        assert cost == 0.0 and str(cost) == "0.0"
        assert trace_usage(trace).cost_source == "recorded"
    one = Trace(id="o", task=Task(id="t"), usage=Usage(input_tokens=7, model="nope-model-x"))
    assert usage_json(one)["cost_note"] == "genai-prices has no price for model 'nope-model-x'"
    assert usage_json(one)["cost_usd"] is None and usage_json(one)["cost_source"] is None


@pytest.mark.parametrize(
    "model",
    ["gpt-4o-mini", "openai:gpt-4.1", "anthropic:claude-sonnet-4-0", "gemini-2.5-pro"],
)
def test_prices_equal_genai_prices_own_for_flat_and_tiered_models(model: str) -> None:
    # flat rates are priced without a call per count; tiered ones (gemini: by prompt length)
    # by genai-prices itself: either way its own figure, to the last digit
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    provider, _, name = model.rpartition(":")
    rng = random.Random(7)
    for _ in range(200):
        inputs = rng.randrange(0, 400_000)
        cached, outputs = rng.randrange(0, inputs + 1), rng.randrange(0, 50_000)
        expected = calc_price(
            PriceUsage(input_tokens=inputs, output_tokens=outputs, cache_read_tokens=cached),
            name,
            provider_id=provider or None,
        ).total_price
        assert price_usd(model, inputs, outputs, cached) == float(expected)
    assert price_usd("no-such-model-xyz", 10, 10) is None


_PRICE_THREE = """
import sys
from agentgauge.usage import price_usd
print(repr(price_usd("gpt-4o-mini", 412_345, 1_234, 100_000)))
print(repr(price_usd("openai:gpt-4.1", 99, 7)))
print(repr(price_usd("no-such-model-xyz", 1, 1)))
print("genai_prices" in sys.modules)
"""


def _in_a_fresh_process(code: str, cache: Path) -> list[str]:
    env = {**os.environ, "AGENTGAUGE_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def _genai_prices_own(model: str, provider: str | None, *tokens: int) -> str:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    inputs, outputs, cached = (*tokens, 0)[:3]
    usage = PriceUsage(input_tokens=inputs, output_tokens=outputs, cache_read_tokens=cached)
    return repr(float(calc_price(usage, model, provider_id=provider).total_price))


def test_flat_prices_are_kept_for_the_next_process_which_then_skips_genai_prices(
    tmp_path: Path,
) -> None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    expected = [
        _genai_prices_own("gpt-4o-mini", None, 412_345, 1_234, 100_000),
        _genai_prices_own("gpt-4.1", "openai", 99, 7),
        "None",
    ]
    assert _in_a_fresh_process(_PRICE_THREE, tmp_path) == [*expected, "True"]
    assert _in_a_fresh_process(_PRICE_THREE, tmp_path) == [*expected, "False"]
    (kept,) = tmp_path.glob("genai-prices-rates-*.json")
    mini = calc_price(PriceUsage(), "gpt-4o-mini").model_price
    assert json.loads(kept.read_text())["gpt-4o-mini"] == [
        str(mini.input_mtok),
        str(mini.output_mtok),
        str(mini.cache_read_mtok),
    ]
    assert json.loads(kept.read_text())["no-such-model-xyz"] is None
    # a file that cannot be read is passed over, and written anew
    kept.write_text("{not json")
    assert _in_a_fresh_process(_PRICE_THREE, tmp_path) == [*expected, "True"]
    assert set(json.loads(kept.read_text())) == {
        "gpt-4o-mini",
        "openai:gpt-4.1",
        "no-such-model-xyz",
    }


def test_prices_a_program_installs_in_genai_prices_are_used_and_not_kept(tmp_path: Path) -> None:
    assert _in_a_fresh_process(_PRICE_THREE, tmp_path)[-1] == "True"
    (kept,) = tmp_path.glob("genai-prices-rates-*.json")
    before = kept.read_text()
    # its own data: gpt-4o-mini at $1.50 per million input tokens
    custom = """
import copy
from decimal import Decimal
from genai_prices import data_snapshot
from genai_prices.data import providers
from agentgauge.usage import price_usd

openai = copy.deepcopy(next(p for p in providers if p.id == "openai"))
for model in openai.models:
    if model.id == "gpt-4o-mini":
        model.prices.input_mtok = Decimal("1.5")
data_snapshot.set_custom_snapshot(
    data_snapshot.DataSnapshot(providers=[openai], from_auto_update=False)
)
print(repr(price_usd("gpt-4o-mini", 1_000_000, 0)), repr(price_usd("gpt-4o", 1_000_000, 0)))
"""
    assert _in_a_fresh_process(custom, tmp_path) == [
        "1.5",
        _genai_prices_own("gpt-4o", None, 1_000_000, 0),
    ]
    assert kept.read_text() == before


def test_cost_efficiency_discounts_success_by_spend() -> None:
    trace = Trace(
        id="c",
        task=Task(id="t", expected_output={"answer": 4}),
        output={"answer": 4},
        usage=Usage(input_tokens=900, output_tokens=100, cost_usd=0.02),
    )
    tokens = create_metric("cost_efficiency").score(trace)
    # accuracy 1.0, 1,000 tokens against the 1,000-token reference: 1 / (1 + 1)
    assert tokens.value == pytest.approx(0.5)
    assert tokens.details["success_per_1k_tokens"] == pytest.approx(1.0)
    dollars = create_metric("cost_efficiency", {"unit": "usd", "reference_usd": 0.01}).score(trace)
    assert dollars.value == pytest.approx(1 / 3)
    assert dollars.details["success_per_usd"] == pytest.approx(50.0)

    half = trace.model_copy(
        update={
            "output": {"answer": 5},
            "task": Task(id="t", expected_output={"answer": 4, "unit": "x"}),
        }
    )
    # accuracy over the expected keys: the answer is wrong, the unit missing -> 0
    assert create_metric("cost_efficiency").score(half).value == 0.0
    no_usage = trace.model_copy(update={"usage": None})
    missing = create_metric("cost_efficiency").score(no_usage)
    assert missing.value is None and missing.reason == "the trace records no token usage"
    with pytest.raises(MetricOptionError, match="unit"):
        create_metric("cost_efficiency", {"unit": "euro"})


def _costly(trace_id: str, cost: float) -> Trace:
    return Trace(
        id=trace_id,
        task=Task(id=trace_id, expected_output="a"),
        output="a",
        usage=Usage(input_tokens=int(cost * 1e5), output_tokens=10, cost_usd=cost),
    )


def test_compare_says_whether_b_is_cheaper(tmp_path: Path) -> None:
    from agentgauge.config import load_suite

    suite = load_suite("behavior")
    options = EvaluateOptions(jobs=1, progress=False)
    with Store(tmp_path / "c.db") as store:
        a = evaluate(
            [_costly(f"t{i}", 0.02 + i / 1000) for i in range(12)],
            suite,
            store=store,
            options=options,
        )
        b = evaluate(
            [_costly(f"t{i}", 0.01 + i / 2000) for i in range(12)],
            suite,
            store=store,
            options=options,
        )
        result = compare_runs(store, a, b)
    cost = result["usage"]["cost_usd"]
    assert cost["n"] == 12
    assert cost["mean_a"] == pytest.approx(sum(0.02 + i / 1000 for i in range(12)) / 12)
    assert cost["diff"] < 0 and cost["verdict"] == "B cheaper"
    assert result["usage"]["total_tokens"]["verdict"] == "B cheaper"
    shown = runner.invoke(app, ["compare", a, b, "--db", str(tmp_path / "c.db")])
    assert shown.exit_code == 0, shown.output
    assert "cost_usd per sample (n=12)" in shown.output and "B cheaper" in shown.output


def test_usage_as_dict_has_every_field_in_order() -> None:
    priced = Trace(
        id="p",
        task=Task(id="t"),
        steps=[_llm(0, Usage(input_tokens=10, output_tokens=2, cost_usd=0.5))],
    )
    by_model = Trace(
        id="m",
        task=Task(id="t"),
        steps=[_llm(0, None), _llm(1, None)],
        usage=Usage(input_tokens=1000, output_tokens=50),
        params={"model": "gpt-4o-mini"},
    )
    for trace in (priced, by_model, Trace(id="n", task=Task(id="t"))):
        usage = trace_usage(trace)
        assert list(usage.as_dict().items()) == list(dataclasses.asdict(usage).items())
        # the engine's copy, made without the instance: the same object, key for key in order
        assert list(usage_json(trace).items()) == list(usage.as_dict().items())
    assert trace_usage(priced).as_dict()["cost_usd"] == 0.5
    assert usage_json(by_model)["model_calls"] == 2


def test_prices_beyond_the_decimal_precision_are_genai_prices_own() -> None:
    # counts whose exact price needs more digits than the decimal context holds are priced
    # in decimals, rounded as genai-prices rounds them
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    for inputs, outputs, cached in ((10**30 + 7, 3, 10**29), (123, 10**31 + 1, 0), (5, 5, 5)):
        expected = calc_price(
            PriceUsage(input_tokens=inputs, output_tokens=outputs, cache_read_tokens=cached),
            "gpt-4o-mini",
        ).total_price
        assert price_usd("gpt-4o-mini", inputs, outputs, cached) == float(expected)
