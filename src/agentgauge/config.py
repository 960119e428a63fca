"""Suites: which metrics to compute, their weights, options and thresholds.

A suite is built in (``behavior``, ``toolcall``, ``review``) or read from a TOML file::

    name = "my-suite"
    extends = "behavior"                 # optional: start from a built-in suite
    metrics = ["accuracy", "efficiency", "safety", "coherence"]   # optional
    [weights]
    accuracy = 0.5
    coherence = 0.2
    [thresholds]
    accept = 0.85
    [options.efficiency]
    max_steps_ref = 30
    [judge]                              # optional: settings shared by the LLM judges
    model = "openai:gpt-4o-mini"
    [text]                               # optional: settings shared by the Tier 1 metrics
    model = "all-MiniLM-L6-v2"

Unknown keys, metrics, weights or options are load-time errors that name the key.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import error_message
from agentgauge.judges.settings import JudgeSettings
from agentgauge.metrics.base import (
    METRICS,
    Metric,
    MetricOptionError,
    UnknownMetricError,
    create_metric,
    get_metric_info,
    lower_is_better,
)
from agentgauge.metrics.judge import JUDGE_METRICS
from agentgauge.metrics.text import TEXT_METRICS
from agentgauge.scoring import Thresholds

__all__ = ["BUILTIN_SUITES", "Suite", "SuiteError", "load_suite"]


class SuiteError(AgentgaugeError, ValueError):
    """A suite that cannot be loaded: unknown suite, key, metric, weight or option."""


class Suite(BaseModel):
    """What to compute and how to combine it.

    Args:
        name: the suite's name, echoed in results.
        metrics: metric names to compute (reported even with weight 0).
        weights: metric -> weight of the composite; metrics absent here weigh 0.
        options: metric -> keyword options of that metric.
        thresholds: recommendation and band cut-offs.
        judge: settings shared by the LLM-judge metrics, merged under each one's options.
        text: options shared by the reference-based text metrics (``cosine``, ``jaccard``,
            ``semantic``, ``output_similarity``, ``task_success``: the BERTScore model and
            layer, the similarity weights, ...), merged under each one's options. Sharing them
            keeps one best reference per sample across the five.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    metrics: list[str]
    weights: dict[str, float] = Field(default_factory=dict)
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    judge: JudgeSettings | None = None
    text: dict[str, Any] | None = None

    def validate_names(self, origin: str = "suite") -> None:
        """Check every metric, weight and option key; raise :class:`SuiteError` naming it."""
        for name in self.metrics:
            try:
                get_metric_info(name)
            except UnknownMetricError as exc:
                raise SuiteError(f"{origin}: metrics: {exc}") from None
        listed = set(self.metrics)
        for key, w in self.weights.items():
            if key not in listed:
                raise SuiteError(
                    f"{origin}: weights: unknown weight key {key!r} (not a metric of this "
                    f"suite: {', '.join(self.metrics)})"
                )
            if not math.isfinite(w) or w < 0:
                raise SuiteError(f"{origin}: weights: {key!r} must be a finite number >= 0 ({w})")
        total = sum(self.weights.values())
        if self.weights and not total > 0:
            raise SuiteError(f"{origin}: weights: at least one weight must be positive")
        if not math.isfinite(total):
            raise SuiteError(f"{origin}: weights: their sum overflows ({total})")
        if self.text:
            shared = get_metric_info("semantic").options
            unknown_text = sorted(set(self.text) - set(shared))
            if unknown_text:
                raise SuiteError(
                    f"{origin}: text: unknown option {unknown_text[0]!r}; "
                    f"its options: {', '.join(sorted(shared))}"
                )
        for key, opts in self.options.items():
            if key not in listed:
                raise SuiteError(f"{origin}: options: unknown metric {key!r}")
            info = get_metric_info(key)
            unknown = sorted(set(opts) - set(info.options))
            if unknown:
                raise SuiteError(
                    f"{origin}: options.{key}: unknown option {unknown[0]!r}; "
                    f"its options: {', '.join(sorted(info.options)) or 'none'}"
                )

    @property
    def lower_is_better(self) -> frozenset[str]:
        """The suite's metrics where lower is better (they enter the composite as 1 − value)."""
        return lower_is_better(self.metrics)

    def build_metrics(self) -> list[Metric]:
        """The suite's metrics with their options, built once per process for a suite.

        A suite is identified by its content: the same suite read again, copied, or sent to a
        worker process as JSON reuses the metrics already built (and the models they loaded);
        forked workers reuse their parent's. A suite whose judge has a budget is built anew on
        each call: a budget is a run's, and reused judges would carry their spending over.
        """
        judge = self.judge
        if judge is not None and (judge.max_calls is not None or judge.max_cost_usd is not None):
            return self._build_metrics()
        key = (self.model_dump_json(), METRICS.version)
        built = _BUILT.pop(key, None)
        if built is None:
            built = self._build_metrics()
        _BUILT[key] = built  # most recently used last
        while len(_BUILT) > _BUILT_LIMIT:
            del _BUILT[next(iter(_BUILT))]
        return list(built)

    def _build_metrics(self) -> list[Metric]:
        built = []
        for name in self.metrics:
            options = self.options.get(name)
            if self.judge is not None and name in JUDGE_METRICS:
                options = {**self.judge.model_dump(exclude_unset=True), **(options or {})}
            if self.text and name in TEXT_METRICS:
                options = {**self.text, **(options or {})}
            try:
                built.append(create_metric(name, options))
            except MetricOptionError as exc:
                raise SuiteError(f"suite {self.name!r}: {exc}") from None
        return built

    def with_weights(self, weights: dict[str, float]) -> Suite:
        """A copy whose weights are replaced for the given keys (validated)."""
        suite = self.model_copy(update={"weights": {**self.weights, **weights}})
        suite.validate_names("weights")
        return suite


_BUILT: dict[tuple[str, int], list[Metric]] = {}
"""Built metrics by suite content and metric-registry version, least recently used first."""
_BUILT_LIMIT = 8


_REVIEW_METRICS = (
    "time_taken",
    "task_success",
    "coordination_quality",
    "tool_efficiency",
    "planning_rational",
    "output_similarity",
)

BUILTIN_SUITES: dict[str, dict[str, Any]] = {
    "behavior": {
        "metrics": [
            "accuracy",
            "exact_match",
            "efficiency",
            "tool_usage",
            "safety",
            "coherence",
            "adaptability",
        ],
        "weights": {"accuracy": 0.4, "efficiency": 0.3, "tool_usage": 0.2, "safety": 0.1},
    },
    "toolcall": {
        "metrics": [
            "tool_selection",
            "parameter_accuracy",
            "execution_success",
            "response_quality",
            "value_accuracy",
            "abstention",
        ],
        "weights": {
            "tool_selection": 0.40,
            "parameter_accuracy": 0.35,
            "execution_success": 0.25,
            "response_quality": 0.0,
        },
    },
    "review": {
        "metrics": list(_REVIEW_METRICS),
        "weights": {name: 1 / len(_REVIEW_METRICS) for name in _REVIEW_METRICS},
    },
}


def _builtin(name: str) -> Suite:
    spec = BUILTIN_SUITES[name]
    return Suite(name=name, metrics=list(spec["metrics"]), weights=dict(spec["weights"]))


def load_suite(ref: str | Path) -> Suite:
    """Load a built-in suite by name or a suite TOML file by path.

    Args:
        ref: ``behavior``, ``toolcall``, ``review``, or a path to a ``.toml`` file.

    Raises:
        SuiteError: for an unknown suite, an unreadable file, or an unknown key, metric,
            weight or option (the message names the file and the key).
    """
    text_ref = str(ref)
    if text_ref in BUILTIN_SUITES:
        suite = _builtin(text_ref)
        suite.validate_names(f"suite {text_ref!r}")
        return suite
    path = Path(text_ref)
    if not path.exists():
        raise SuiteError(
            f"unknown suite {text_ref!r}: not a built-in suite "
            f"({', '.join(BUILTIN_SUITES)}) and no such file"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: cannot read suite file: {exc}") from None
    for table in ("weights", "options", "thresholds", "judge", "text"):
        if table in data and not isinstance(data[table], dict):
            raise SuiteError(f"{path}: {table}: expected a table ([{table}]), got {data[table]!r}")
    base_name = data.pop("extends", None)
    if base_name is not None:
        if not isinstance(base_name, str) or base_name not in BUILTIN_SUITES:
            raise SuiteError(f"{path}: extends: unknown suite {base_name!r}")
        base = _builtin(base_name).model_dump()
    else:
        base = {"metrics": [], "weights": {}}
    merged: dict[str, Any] = {**base, "name": data.pop("name", path.stem)}
    if "metrics" in data:
        merged["metrics"] = data.pop("metrics")
        merged["weights"] = {k: v for k, v in base["weights"].items() if k in merged["metrics"]}
    if "weights" in data:
        merged["weights"] = {**merged["weights"], **data.pop("weights")}
    for key in ("options", "thresholds"):
        if key in data:
            merged[key] = {**base.get(key, {}), **data.pop(key)}
    merged.update(data)  # anything left is an unknown key, reported by validation below
    try:
        suite = Suite.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise SuiteError(f"{path}: {loc}: {error_message(err)}") from None
    if not suite.metrics:
        raise SuiteError(f"{path}: metrics: the suite names no metric")
    suite.validate_names(str(path))
    try:
        suite.build_metrics()  # an option's value is checked now, not in a worker later
    except SuiteError as exc:
        raise SuiteError(f"{path}: {exc}") from None
    return suite
