"""Parameter impact on the SIMULATED agent: every non-zero true effect is recovered with its
sign, and no significant effect is reported where the simulator has none."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from agentgauge.agents.simulated import SimulatedAgent, simulated_tasks
from agentgauge.config import load_suite
from agentgauge.tuning.impact import SPEC_CLAIMS, SweepPoint, analyse, check_claims, sweep
from agentgauge.tuning.objective import Objective
from agentgauge.tuning.space import ParameterSpace

METRICS = ["accuracy", "efficiency", "safety", "tool_usage", "coherence", "adaptability"]
MIN_EFFECT = 0.01
"""A true effect smaller than 1% of the metric's scale over the whole range is negligible."""

# Where the simulator has no effect by construction (see agentgauge.agents.simulated).
STRUCTURAL_NULLS = {
    ("temperature", "efficiency"),
    ("temperature", "tool_usage"),
    ("temperature", "adaptability"),
    *((p, "safety") for p in ParameterSpace().names),
}


@pytest.fixture(scope="module")
def objective() -> Objective:
    suite = load_suite("behavior")
    space = ParameterSpace()
    return Objective(SimulatedAgent(), simulated_tasks(), suite, space, cache_scores=True)


@pytest.fixture(scope="module")
def measured(objective: Objective) -> list[SweepPoint]:
    return sweep(objective, objective.space.defaults(), points=7, repeats=3, seed=0)


@pytest.fixture(scope="module")
def truth(objective: Objective) -> list[SweepPoint]:
    # the "true" curves: many more repeats, other seeds
    return sweep(objective, objective.space.defaults(), points=7, repeats=12, seed=1)


def _truth_table(points: list[SweepPoint]) -> dict[tuple[str, str], str]:
    """'zero' where the metric is constant along the sweep, '+'/'-' for a clear slope, and
    'negligible' for anything else."""
    table = {}
    for param in dict.fromkeys(p.param for p in points):
        rows = [p for p in points if p.param == param]
        for metric in METRICS:
            y = np.array([p.metrics[metric] for p in rows], dtype=float)
            x = np.array([p.unit for p in rows])
            if np.ptp(y) == 0:
                table[param, metric] = "zero"
                continue
            fit = stats.linregress(x, y)
            half = stats.t.ppf(0.975, len(x) - 2) * fit.stderr
            if abs(fit.slope) >= MIN_EFFECT and abs(fit.slope) > half:
                table[param, metric] = "+" if fit.slope > 0 else "-"
            else:
                table[param, metric] = "negligible"
    return table


def test_impact_recovers_true_signs_and_nulls(
    measured: list[SweepPoint], truth: list[SweepPoint]
) -> None:
    effects = {(e.param, e.metric): e for e in analyse(measured, METRICS)}
    table = _truth_table(truth)
    assert {k for k, v in table.items() if v == "zero"} >= STRUCTURAL_NULLS
    nonzero = {k: v for k, v in table.items() if v in "+-"}
    assert len(nonzero) >= 15  # the simulator has many real effects
    for key, sign in nonzero.items():
        effect = effects[key]
        assert effect.significant, f"{key}: true sign {sign}, measured {effect}"
        assert effect.sign == (1 if sign == "+" else -1), key
    for key in (k for k, v in table.items() if v == "zero"):
        assert not effects[key].significant, key
        assert effects[key].slope == 0.0


def test_slope_and_ci_match_scipy_on_the_observations(measured: list[SweepPoint]) -> None:
    rows = [p for p in measured if p.param == "context_length"]
    x = [p.unit for p in rows]
    y = [p.metrics["accuracy"] for p in rows]
    fit = stats.linregress(x, y)
    effect = next(
        e
        for e in analyse(measured, ["accuracy"])
        if e.param == "context_length" and e.metric == "accuracy"
    )
    t = stats.t.ppf(0.975, len(x) - 2)
    assert effect.n == 21
    assert effect.slope == pytest.approx(fit.slope)
    assert effect.ci_low == pytest.approx(fit.slope - t * fit.stderr)
    assert effect.ci_high == pytest.approx(fit.slope + t * fit.stderr)
    assert effect.rho == pytest.approx(stats.spearmanr(x, y).statistic)


def test_sweep_uses_common_seeds_and_applied_values(measured: list[SweepPoint]) -> None:
    depth = [p for p in measured if p.param == "reasoning_depth"]
    assert sorted({p.value for p in depth}) == [1, 3, 4, 6, 7, 9, 10]  # 1 + 9·k/6, rounded
    assert {p.seed for p in depth} == {0, 1, 2}
    assert depth[3].unit == pytest.approx((3 - 1) / 9)


def test_claims_are_checked_for_the_simulated_agent(measured: list[SweepPoint]) -> None:
    claims = {(c.param, c.metric): c for c in check_claims(analyse(measured, METRICS))}
    assert set(claims) == {(p, m) for p, m, _ in SPEC_CLAIMS}
    # the simulator has no temperature → adaptability effect, so that claim does not hold
    assert claims["temperature", "adaptability"].verdict == "no significant effect"
    assert claims["context_length", "accuracy"].verdict == "holds"
    assert claims["max_steps", "accuracy"].verdict == "holds"


def test_sweep_validates_its_arguments(objective: Objective) -> None:
    with pytest.raises(ValueError, match="points must be >= 3"):
        sweep(objective, {}, points=2)
