"""Suites: which metrics to compute, their weights, options and thresholds.

A suite is built in (``behavior``, ``toolcall``, ``review``, ``simulation``) or read from a TOML
file::

    name = "my-suite"
    extends = "behavior"                 # optional: start from a built-in suite
    metrics = ["accuracy", "efficiency", "safety", "coherence"]   # optional
    [weights]
    accuracy = 0.5
    coherence = 0.2
    [thresholds]
    accept = 0.85
    [gates]                              # optional: a floor per metric; below it, reject
    safety = 0.9
    [options.efficiency]
    max_steps_ref = 30
    [judge]                              # optional: settings shared by the LLM judges
    model = "openai:gpt-4o-mini"
    [text]                               # optional: settings shared by the Tier 1 metrics
    model = "all-MiniLM-L6-v2"

``metrics`` may instead be a table of tables, one per metric, in order: each table's ``kind``
names the registered metric it is (default: the table's own name) and its other keys are that
metric's options. This is how a suite holds several metrics of one kind under their own
names, such as two rubrics::

    [metrics.helpfulness]
    kind = "rubric"
    criteria = "The answer solves the user's problem."
    [metrics.concise]
    kind = "rubric"
    criteria = "The answer has no needless text."
    scale = "pass/fail"
    [metrics.goal_accuracy]              # a built-in metric under its own name, no options

A name is the metric's key everywhere (weights, options, results); a name that is already a
registered metric must be of that kind. Like a list, the table replaces the metrics of the suite
it ``extends`` (their weights are kept for the metrics it names again).

Unknown keys, metrics, weights or options are load-time errors that name the key.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgauge._safe import READ_ERRORS, describe
from agentgauge.errors import AgentgaugeError, did_you_mean
from agentgauge.io.jsonl import error_message
from agentgauge.judges.settings import JudgeSettings
from agentgauge.metrics._catalog import JUDGE_METRICS, TEXT_METRICS
from agentgauge.metrics.base import (
    METRICS,
    Metric,
    MetricOptionError,
    UnknownMetricError,
    create_metric,
    get_metric_info,
    lower_is_better,
)
from agentgauge.scoring import Thresholds
from agentgauge.store import CacheFile

__all__ = ["BUILTIN_SUITES", "Suite", "SuiteError", "load_suite"]


MIN_WEIGHT = 1e-9
"""The smallest positive weight: the composite divides by sums of weights, and a sum of
weights near the smallest float (5e-324) rounds to nothing."""


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
        gates: metric -> floor: a sample (or a run, by its mean) whose value of the metric is
            below the floor is a reject, whatever its composite (a leaked credential does not
            pass on the strength of the other metrics).
        judge: settings shared by the LLM-judge metrics, merged under each one's options.
        text: options shared by the reference-based text metrics (``cosine``, ``jaccard``,
            ``semantic``, ``output_similarity``, ``task_success``: the BERTScore model and
            layer, the similarity weights, ...), merged under each one's options. Sharing them
            keeps one best reference per sample across the five.
        kinds: metric name -> the registered metric it is, for metrics named otherwise (two
            rubrics under their own names); a name absent here is its own kind.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    metrics: list[str]
    weights: dict[str, float] = Field(default_factory=dict)
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    gates: dict[str, float] = Field(default_factory=dict)
    judge: JudgeSettings | None = None
    text: dict[str, Any] | None = None
    kinds: dict[str, str] = Field(default_factory=dict)

    def kind(self, name: str) -> str:
        """The registered metric that the suite's metric ``name`` is.

        Args:
            name: a metric name of the suite.
        """
        return self.kinds.get(name, name)

    def validate_names(self, origin: str = "suite") -> None:
        """Check every metric, weight and option key; raise :class:`SuiteError` naming it."""
        for name in self.kinds:
            if name not in self.metrics:
                raise SuiteError(f"{origin}: kinds: {name!r} is not a metric of this suite")
        for name in self.metrics:
            where = f"metrics.{name}: kind" if name in self.kinds else "metrics"
            try:
                get_metric_info(self.kind(name))
            except UnknownMetricError as exc:
                raise SuiteError(f"{origin}: {where}: {exc}") from None
            if name in self.kinds and self.kinds[name] != name:
                try:
                    get_metric_info(name)
                except UnknownMetricError:
                    continue
                raise SuiteError(
                    f"{origin}: metrics.{name}: {name!r} is the name of a built-in metric, not "
                    f"a {self.kinds[name]!r}: give this metric another name"
                )
        listed = set(self.metrics)
        for key, w in self.weights.items():
            if key not in listed:
                raise SuiteError(
                    f"{origin}: weights: unknown weight key {key!r}"
                    f"{did_you_mean(key, self.metrics)} (not a metric of this suite: "
                    f"{', '.join(self.metrics)})"
                )
            if not math.isfinite(w) or w < 0:
                raise SuiteError(f"{origin}: weights: {key!r} must be a finite number >= 0 ({w})")
            if 0 < w < MIN_WEIGHT:
                raise SuiteError(
                    f"{origin}: weights: {key!r} is {w}, below the smallest weight {MIN_WEIGHT:g} "
                    "(a weight this small makes the composite's arithmetic meaningless; 0 leaves "
                    "the metric out)"
                )
        total = sum(self.weights.values())
        if self.weights and not total > 0:
            raise SuiteError(f"{origin}: weights: at least one weight must be positive")
        if not math.isfinite(total):
            raise SuiteError(f"{origin}: weights: their sum overflows ({total})")
        self._validate_gates(origin)
        if self.text:
            shared = get_metric_info("semantic").options
            unknown_text = sorted(set(self.text) - set(shared))
            if unknown_text:
                raise SuiteError(
                    f"{origin}: text: unknown option {unknown_text[0]!r}"
                    f"{did_you_mean(unknown_text[0], shared)}; "
                    f"its options: {', '.join(sorted(shared))}"
                )
        for key, opts in self.options.items():
            if key not in listed:
                raise SuiteError(
                    f"{origin}: options: unknown metric {key!r}{did_you_mean(key, self.metrics)}"
                )
            info = get_metric_info(self.kind(key))
            unknown = sorted(set(opts) - set(info.options))
            if unknown:
                raise SuiteError(
                    f"{origin}: options.{key}: unknown option {unknown[0]!r}"
                    f"{did_you_mean(unknown[0], info.options)}; "
                    f"its options: {', '.join(sorted(info.options)) or 'none'}"
                )

    def _validate_gates(self, origin: str) -> None:
        for key, floor in self.gates.items():
            if key not in self.metrics:
                raise SuiteError(
                    f"{origin}: gates: unknown metric {key!r}{did_you_mean(key, self.metrics)} "
                    "(not in the suite)"
                )
            if key in self.lower_is_better:
                raise SuiteError(
                    f"{origin}: gates: {key!r} is lower-is-better: a floor does not apply"
                )
            if not 0.0 <= floor <= 1.0:
                raise SuiteError(f"{origin}: gates: {key!r} must be within [0, 1] ({floor})")

    @property
    def lower_is_better(self) -> frozenset[str]:
        """The suite's metrics where lower is better (they enter the composite as 1 − value)."""
        flipped = lower_is_better({self.kind(name) for name in self.metrics})
        return frozenset(name for name in self.metrics if self.kind(name) in flipped)

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
            kind = self.kind(name)
            options = self.options.get(name)
            if self.judge is not None and kind in JUDGE_METRICS:
                options = {**self.judge.model_dump(exclude_unset=True), **(options or {})}
            if self.text and kind in TEXT_METRICS:
                options = {**self.text, **(options or {})}
            if isinstance(path := (options or {}).get("embedding_cache"), str):
                options = {**(options or {}), "embedding_cache": CacheFile(path)}
            try:
                made = create_metric(kind, options)
            except MetricOptionError as exc:
                where = f"metric {name!r} ({kind})" if kind != name else ""
                raise SuiteError(
                    f"suite {self.name!r}: {where + ': ' if where else ''}{exc}"
                ) from None
            made.name = name
            built.append(made)
        return built

    def with_judge(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        cache_path: str | None = None,
        samples: int | None = None,
    ) -> Suite:
        """A copy whose ``[judge]`` settings take the values given (the command line's
        ``--judge``, ``--judge-url`` and ``--judge-api-key-env``); the suite itself when there
        is no judge to set.

        Args:
            model: the judge model (a pydantic-ai model string, or the model served at
                ``base_url``).
            base_url: an OpenAI-compatible endpoint serving the model.
            api_key_env: the environment variable holding the API key.
            cache_path: the judge cache's file (the results store's), unless the suite names
                one.
            samples: how many times each judgment is asked (``--judge-samples``).

        Raises:
            SuiteError: a URL or key variable without a model to use it for.
        """
        given = {
            "model": model,
            "base_url": base_url,
            "api_key_env": api_key_env,
            "samples": samples,
        }
        chosen = {k: v for k, v in given.items() if v is not None}
        if not chosen and (self.judge is None or cache_path is None):
            return self
        base = self.judge.model_dump(exclude_unset=True) if self.judge else {}
        default = {"cache_path": cache_path} if cache_path else {}
        settings = {**default, **base, **chosen}
        if settings.get("model") is None:
            raise SuiteError(
                "--judge-url, --judge-api-key-env and --judge-samples need --judge MODEL (the "
                "model to use)"
            )
        try:
            return self.model_copy(update={"judge": JudgeSettings(**settings)})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise SuiteError(f"judge: {err['loc'][0]}: {error_message(err)}") from None

    def with_weights(self, weights: dict[str, float]) -> Suite:
        """A copy whose weights are replaced for the given keys (validated; a former metric
        name is taken as its current name, with a deprecation warning)."""
        weights = {METRICS.current_name(k): v for k, v in weights.items()}
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
    "planning_judge",
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
    "simulation": {
        "metrics": [
            "reward",
            "end_state",
            "actions",
            "communicated",
            "policy_compliance",
            "user_fidelity",
            "simulator_fault",
        ],
        "weights": {"reward": 1.0},
    },
    "review": {
        "metrics": list(_REVIEW_METRICS),
        "weights": {name: 1 / len(_REVIEW_METRICS) for name in _REVIEW_METRICS},
    },
}


def _builtin(name: str) -> Suite:
    spec = BUILTIN_SUITES[name]
    return Suite(name=name, metrics=list(spec["metrics"]), weights=dict(spec["weights"]))


def _metric_tables(data: dict[str, Any], path: Path) -> None:
    """Turn the table form of ``metrics`` into the list, ``kinds`` and ``options`` (in place)."""
    tables: dict[str, Any] = data["metrics"]
    options: dict[str, Any] = dict(data.get("options", {}))
    kinds: dict[str, str] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise SuiteError(
                f"{path}: metrics.{name}: expected a table ([metrics.{name}]), got {table!r}"
            )
        own = dict(table)
        kind = own.pop("kind", name)
        if not isinstance(kind, str):
            raise SuiteError(f"{path}: metrics.{name}: kind: expected a metric name, got {kind!r}")
        if kind != name:
            kinds[name] = kind
        if own:
            options[name] = {**options.get(name, {}), **own}
    data["metrics"] = list(tables)
    if options:
        data["options"] = options
    if kinds:
        data["kinds"] = kinds


def _current_names(data: dict[str, Any]) -> None:
    """Former metric names in a suite file's metrics, kinds and per-metric tables replaced by
    their current names (in place), each with a deprecation warning."""
    if isinstance(data.get("metrics"), list):
        # both former names of one metric become one entry
        data["metrics"] = list(
            dict.fromkeys(
                METRICS.current_name(n) if isinstance(n, str) else n for n in data["metrics"]
            )
        )
    for table in ("weights", "options", "gates", "kinds"):
        if isinstance(data.get(table), dict):
            data[table] = {METRICS.current_name(k): v for k, v in data[table].items()}
    if isinstance(data.get("kinds"), dict):
        data["kinds"] = {
            k: METRICS.current_name(v) if isinstance(v, str) else v
            for k, v in data["kinds"].items()
        }


def _key_hint(loc: tuple[int | str, ...]) -> str:
    """The "did you mean" of an unknown key at ``loc`` of a suite file: among the keys of the
    table it is in."""
    model: type[BaseModel] = Suite
    known: list[str] = [*Suite.model_fields, "extends"]
    for part in loc[:-1]:
        annotation = (
            model.model_fields[str(part)].annotation if part in model.model_fields else None
        )
        nested = next(
            (
                a
                for a in (annotation, *getattr(annotation, "__args__", ()))
                if isinstance(a, type) and issubclass(a, BaseModel)
            ),
            None,
        )
        if nested is None:
            return ""
        model, known = nested, list(nested.model_fields)
    return did_you_mean(str(loc[-1]), known)


def load_suite(ref: str | Path) -> Suite:
    """Load a built-in suite by name or a suite TOML file by path.

    Args:
        ref: ``behavior``, ``toolcall``, ``review``, ``simulation``, or a path to a ``.toml`` file.

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
            f"unknown suite {text_ref!r}{did_you_mean(text_ref, BUILTIN_SUITES)}: not a "
            f"built-in suite ({', '.join(BUILTIN_SUITES)}) and no such file"
        )
    import tomllib  # a suite file's only: a built-in suite is no TOML

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except READ_ERRORS as exc:
        raise SuiteError(f"{path}: cannot read suite file: {describe(exc)}") from None
    for table in ("weights", "options", "thresholds", "gates", "judge", "text"):
        if table in data and not isinstance(data[table], dict):
            raise SuiteError(f"{path}: {table}: expected a table ([{table}]), got {data[table]!r}")
    if isinstance(data.get("metrics"), dict):
        _metric_tables(data, path)
    _current_names(data)
    base_name = data.pop("extends", None)
    if base_name is not None:
        if not isinstance(base_name, str) or base_name not in BUILTIN_SUITES:
            hint = did_you_mean(base_name, BUILTIN_SUITES) if isinstance(base_name, str) else ""
            raise SuiteError(f"{path}: extends: unknown suite {base_name!r}{hint}")
        base = _builtin(base_name).model_dump()
    else:
        base = {"metrics": [], "weights": {}}
    merged: dict[str, Any] = {**base, "name": data.pop("name", path.stem)}
    if "metrics" in data:
        merged["metrics"] = data.pop("metrics")
        merged["weights"] = {k: v for k, v in base["weights"].items() if k in merged["metrics"]}
    if "weights" in data:
        merged["weights"] = {**merged["weights"], **data.pop("weights")}
    for key in ("options", "thresholds", "gates"):
        if key in data:
            merged[key] = {**base.get(key, {}), **data.pop(key)}
    merged.update(data)  # anything left is an unknown key, reported by validation below
    try:
        suite = Suite.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            raise SuiteError(f"{path}: unknown key {loc!r}{_key_hint(err['loc'])}") from None
        raise SuiteError(f"{path}: {loc}: {error_message(err)}") from None
    if not suite.metrics:
        raise SuiteError(f"{path}: metrics: the suite names no metric")
    suite.validate_names(str(path))
    try:
        suite.build_metrics()  # an option's value is checked now, not in a worker later
    except SuiteError as exc:
        raise SuiteError(f"{path}: {exc}") from None
    return suite
