"""Parameter impact: one-parameter-at-a-time sweeps around a base point.

For each parameter, ``points`` evenly spaced unit coordinates in [0, 1] are run with every other
parameter at the base point, on every task × ``repeats`` seeded repeats (the same seeds at every
point: common random numbers, so a difference between points is the parameter's doing). Each
(point, repeat) gives one observation per metric: the mean over tasks. Per parameter × metric:

- ``slope``: ordinary least squares of the metric on the parameter's *normalised* applied value
  (``scipy.stats.linregress``), i.e. the change over the whole range; its 95% confidence
  interval is ``slope ± t(0.975, n − 2)·stderr``; the effect is *significant* when the interval
  excludes 0 (a metric constant along the sweep has slope 0 and no effect);
- ``rho``: Spearman's rank correlation (``scipy.stats.spearmanr``), None when either side is
  constant.

:data:`SPEC_CLAIMS` lists the spec's "parameter X affects metric Y" statements (with the
direction where the spec gives one); :func:`check_claims` says which hold for the agent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from agentgauge.model import JSON
from agentgauge.tuning.objective import Objective, repeat_seeds

__all__ = [
    "SPEC_CLAIMS",
    "ClaimCheck",
    "Effect",
    "SweepPoint",
    "analyse",
    "check_claims",
    "sweep",
]

SPEC_CLAIMS: tuple[tuple[str, str, int | None], ...] = (
    ("context_length", "accuracy", +1),
    ("context_length", "efficiency", -1),
    ("temperature", "coherence", None),
    ("temperature", "adaptability", None),
    ("max_steps", "efficiency", -1),
    ("max_steps", "accuracy", +1),
    ("tool_usage_threshold", "tool_usage", None),
    ("tool_usage_threshold", "efficiency", None),
    ("reasoning_depth", "coherence", +1),
    ("reasoning_depth", "adaptability", None),
)
"""(parameter, metric, expected sign or None) from behavior-metrics.md: "more context,
potentially better accuracy but slower", "higher max_steps more thorough but slower", "higher
reasoning depth, better coherence"; the other claims give no direction."""


@dataclass
class SweepPoint:
    """One observation: a parameter at one value, one repeat, metric means over the tasks."""

    param: str
    unit: float
    value: JSON
    seed: int
    metrics: dict[str, float | None]


@dataclass
class Effect:
    """The effect of one parameter on one metric over its sweep.

    Args:
        param: the parameter swept.
        metric: the metric.
        slope: OLS slope per unit of the normalised range (None without data).
        ci_low: lower end of the 95% CI of the slope.
        ci_high: upper end of the 95% CI of the slope.
        rho: Spearman's rho (None when a side is constant).
        p_value: the slope's two-sided p-value (None when undefined).
        n: observations used.
        significant: the CI excludes 0.
    """

    param: str
    metric: str
    slope: float | None
    ci_low: float | None
    ci_high: float | None
    rho: float | None
    p_value: float | None
    n: int
    significant: bool

    @property
    def sign(self) -> int:
        """+1 / −1 for a significant effect, 0 otherwise."""
        if not self.significant or self.slope is None:
            return 0
        return 1 if self.slope > 0 else -1

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sign": self.sign}


def sweep(
    objective: Objective,
    base: Mapping[str, Any],
    *,
    params: Sequence[str] | None = None,
    points: int = 7,
    repeats: int = 3,
    seed: int = 0,
    on_point: Callable[[], None] | None = None,
) -> list[SweepPoint]:
    """Run the one-at-a-time sweeps.

    Args:
        objective: the agent, tasks, suite and space.
        base: the base point (completed with the space's defaults).
        params: the parameters to sweep (all numeric ones by default).
        points: values per parameter (>= 3).
        repeats: seeded repeats at each value.
        seed: seeds the repeats.
        on_point: called after each value (progress).
    """
    if points < 3:
        raise ValueError(f"points must be >= 3 to estimate a slope with a CI, got {points}")
    space = objective.space
    base_values = space.complete(base)
    names = list(params) if params is not None else space.names
    for name in names:
        if space.spec(name).type == "categorical":
            raise ValueError(f"parameter {name!r} is categorical: impact sweeps numeric ones")
    seeds = repeat_seeds(seed, repeats)
    out: list[SweepPoint] = []
    for name in names:
        spec = space.spec(name)
        for u in np.linspace(0.0, 1.0, points):
            values = {**base_values, name: spec.from_unit(float(u))}
            applied = space.apply(values)[name]
            for s in seeds:
                result = objective.evaluate(values, seeds=[s])
                out.append(
                    SweepPoint(
                        param=name,
                        unit=spec.to_unit(applied),
                        value=applied,
                        seed=s,
                        metrics=result.metric_means,
                    )
                )
            if on_point is not None:
                on_point()
    return out


def _effect(param: str, metric: str, x: list[float], y: list[float]) -> Effect:
    from scipy import stats

    n = len(x)
    if n < 3 or len(set(x)) < 2:
        return Effect(param, metric, None, None, None, None, None, n, False)
    if len(set(y)) == 1:
        return Effect(param, metric, 0.0, 0.0, 0.0, None, None, n, False)
    fit = stats.linregress(x, y)
    half = float(stats.t.ppf(0.975, n - 2)) * float(fit.stderr)
    slope = float(fit.slope)
    rho_result = stats.spearmanr(x, y)
    rho = float(rho_result.statistic)
    p_value = float(fit.pvalue)
    return Effect(
        param=param,
        metric=metric,
        slope=slope,
        ci_low=slope - half,
        ci_high=slope + half,
        rho=None if math.isnan(rho) else rho,
        p_value=None if math.isnan(p_value) else p_value,
        n=n,
        significant=slope - half > 0 or slope + half < 0,
    )


def analyse(points: Sequence[SweepPoint], metrics: Sequence[str]) -> list[Effect]:
    """One :class:`Effect` per swept parameter × metric (parameters in sweep order).

    Args:
        points: the sweep's observations.
        metrics: the metrics to analyse.
    """
    params = list(dict.fromkeys(p.param for p in points))
    effects = []
    for param in params:
        rows = [p for p in points if p.param == param]
        for metric in metrics:
            pairs = [(p.unit, p.metrics.get(metric)) for p in rows]
            x = [u for u, v in pairs if v is not None]
            y = [float(v) for _, v in pairs if v is not None]
            effects.append(_effect(param, metric, x, y))
    return effects


@dataclass
class ClaimCheck:
    """Whether one of the spec's claims holds for the agent measured.

    Args:
        param: the parameter.
        metric: the metric.
        expected_sign: the direction the spec states, None when it states none.
        effect: the measured effect (None when the pair was not measured).
        verdict: "holds", "opposite direction", "no significant effect" or "not measured".
    """

    param: str
    metric: str
    expected_sign: int | None
    effect: Effect | None
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "param": self.param,
            "metric": self.metric,
            "expected_sign": self.expected_sign,
            "verdict": self.verdict,
            "slope": self.effect.slope if self.effect else None,
            "significant": self.effect.significant if self.effect else None,
        }


def check_claims(effects: Sequence[Effect]) -> list[ClaimCheck]:
    """Check each of :data:`SPEC_CLAIMS` against the measured effects.

    Args:
        effects: from :func:`analyse`.
    """
    by_key = {(e.param, e.metric): e for e in effects}
    checks = []
    for param, metric, expected in SPEC_CLAIMS:
        effect = by_key.get((param, metric))
        if effect is None or effect.slope is None:
            verdict = "not measured"
        elif not effect.significant:
            verdict = "no significant effect"
        elif expected is not None and effect.sign != expected:
            verdict = "opposite direction"
        else:
            verdict = "holds"
        checks.append(ClaimCheck(param, metric, expected, effect, verdict))
    return checks
