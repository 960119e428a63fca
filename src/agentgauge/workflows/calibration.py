"""Calibrating a judge: what it sees (:func:`preview`) and how well it agrees with people
(:func:`calibrate`).

**Preview** renders, for a judge metric of a suite and a few traces, the instructions and the
prompt the judge would be sent — the trace's view within the token budget, shortened in the
middle with a marker — without calling any model.

**Calibration** scores labelled traces with a suite's judge metrics and compares the judge with
the humans who labelled them. A label file is JSON Lines, one human score a line::

    {"trace_id": "t-17", "metric": "helpfulness", "score": 4, "rater": "ana"}

(``rater`` is optional; without it every line is a different person). The scores are on the
judge's own scale: a rubric's ``LOW-HIGH`` score (its ``details["score"]``), 0/1 for pass/fail
and ``goal_accuracy``, 1–5 for ``trajectory_judge``; for other metrics the value in [0, 1], or
that value mapped onto ``label_scale`` (``LOW + value·(HIGH − LOW)``). For each metric the
judge's score is compared with the mean of the humans' scores of the same trace: MAE,
Spearman's rho and, on an integer scale, Cohen's quadratic-weighted kappa (against that mean
rounded to the nearest point), each with a 95% bootstrap interval. Where several humans label
a trace, the same figures for each human against the mean of the others (leave-one-out) are
the **human ceiling**: a judge that reaches it agrees with the humans as well as they agree
with each other.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentgauge.config import Suite, SuiteError, load_suite
from agentgauge.engine import SampleScore, checked_metrics, score_traces
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import ReadError, iter_raw_lines, read_traces, validate_line
from agentgauge.judges.render import estimate_tokens
from agentgauge.judges.rubric import RubricScale
from agentgauge.metrics.judge import JudgeMetric
from agentgauge.model import Trace
from agentgauge.stats import Agreement, ScoredItem, against_others, agreement, leave_one_out

__all__ = [
    "CalibrationError",
    "JudgePreview",
    "Label",
    "MetricCalibration",
    "calibrate",
    "judge_suite",
    "preview",
    "read_labels",
]


class CalibrationError(AgentgaugeError, ValueError):
    """Traces, labels or a suite that cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class JudgePreview:
    """What a judge would be sent for one trace, or why it would not be asked.

    Args:
        trace_id: the trace.
        instructions: the system instructions (None when the trace cannot be judged).
        prompt: the user prompt: the trace's view.
        reason: why the trace cannot be judged (the metric would be None with it).
    """

    trace_id: str
    instructions: str | None = None
    prompt: str | None = None
    reason: str | None = None

    @property
    def estimated_tokens(self) -> int:
        """The estimated tokens of the instructions and the prompt together."""
        return estimate_tokens((self.instructions or "") + (self.prompt or ""))


def judge_suite(
    ref: str | None,
    metric: str | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    cache_path: str | None = None,
) -> Suite:
    """The suite ``ref``, or one holding just the built-in ``metric``, with a judge applied.

    Args:
        ref: a built-in suite name or a suite TOML file; None for ``metric`` alone.
        metric: the metric of the one-metric suite (when ``ref`` is None).
        model: the judge model (``--judge``).
        base_url: the judge's OpenAI-compatible URL (``--judge-url``).
        api_key_env: the variable holding the judge's key (``--judge-api-key-env``).
        cache_path: the judge cache's file, unless the suite names one.

    Raises:
        SuiteError: an unknown suite or metric, or a judge URL without a model.
    """
    if ref is not None:
        suite = load_suite(ref)
    else:
        suite = Suite(name=str(metric), metrics=[str(metric)])
        suite.validate_names(f"metric {metric!r}")
    return suite.with_judge(
        model=model, base_url=base_url, api_key_env=api_key_env, cache_path=cache_path
    )


def _judge(suite: Suite, name: str) -> JudgeMetric:
    if name not in suite.metrics:
        raise CalibrationError(
            f"suite {suite.name!r} has no metric {name!r}; its metrics: {', '.join(suite.metrics)}"
        )
    built = {m.name: m for m in suite.model_copy(update={"metrics": [name]}).build_metrics()}
    judge = built[name]
    if not isinstance(judge, JudgeMetric):
        raise CalibrationError(f"metric {name!r} is not an LLM judge: nothing to preview")
    return judge


def _traces(path: Path) -> list[Trace]:
    traces = []
    for item in read_traces(path):
        if isinstance(item, ReadError):
            raise CalibrationError(str(item))
        traces.append(item)
    return traces


def preview(
    traces_file: Path, suite: Suite, metric: str, *, trace_id: str | None = None, limit: int = 1
) -> list[JudgePreview]:
    """What the judge metric ``metric`` of ``suite`` would be sent for the first traces of a
    file (or the one with ``trace_id``); no model is called.

    Args:
        traces_file: a native JSONL trace file.
        suite: the suite holding the metric (a built-in judge metric works in any suite that
            lists it).
        metric: the metric's name in the suite.
        trace_id: show only this trace.
        limit: show at most this many traces.

    Raises:
        CalibrationError: for an unknown metric, a metric that is not a judge, a bad line of
            the file or a trace id it does not hold.
    """
    judge = _judge(suite, metric)
    traces = _traces(traces_file)
    chosen = [t for t in traces if trace_id is None or t.id == trace_id][:limit]
    if trace_id is not None and not chosen:
        raise CalibrationError(f"{traces_file}: no trace with id {trace_id!r}")
    out = []
    for trace in chosen:
        seen = judge.view(trace)
        if isinstance(seen, str):
            out.append(JudgePreview(trace.id, reason=seen))
        else:
            out.append(JudgePreview(trace.id, instructions=seen[0], prompt=seen[1]))
    return out


class Label(BaseModel):
    """One human score of one trace on one metric."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str
    metric: str
    score: float
    rater: str | None = None


def read_labels(path: Path) -> list[Label]:
    """The labels of a JSON Lines file.

    Args:
        path: the label file.

    Raises:
        CalibrationError: naming the file, the line and the field of a bad line.
    """
    labels: list[Label] = []
    for raw in iter_raw_lines(path):
        label = validate_line(Label, raw)
        if isinstance(label, ReadError):
            raise CalibrationError(str(label))
        labels.append(label)
    if not labels:
        raise CalibrationError(f"{path}: no labels")
    return labels


@dataclass(frozen=True)
class MetricCalibration:
    """A judge metric's agreement with the humans, beside the humans' own.

    Args:
        metric: the metric.
        scale: the scale the scores are compared on (``1-5``, ``pass/fail``, ``0-1``).
        judge: the judge against the mean of the humans of each trace.
        human_ceiling: each human against the mean of the others (traces with 2+ humans).
        traces: labelled traces scored.
        labels: human scores used.
        judge_missing: labelled traces the judge gave no score (with the first reason).
        reason: the first reason the judge gave no score.
    """

    metric: str
    scale: str
    judge: Agreement
    human_ceiling: Agreement
    traces: int
    labels: int
    judge_missing: int
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "scale": self.scale,
            "judge": self.judge.as_dict(),
            "human_ceiling": self.human_ceiling.as_dict(),
            "traces": self.traces,
            "labels": self.labels,
            "judge_missing": self.judge_missing,
            "reason": self.reason,
        }


def _raters(labels: Iterable[Label]) -> dict[str, dict[str, list[float]]]:
    """metric -> trace -> the scores of its raters (a rater labelling twice is an error)."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seen: set[tuple[str, str, str]] = set()
    for label in labels:
        if label.rater is not None:
            key = (label.metric, label.trace_id, label.rater)
            if key in seen:
                raise CalibrationError(
                    f"rater {label.rater!r} labels trace {label.trace_id!r} on "
                    f"{label.metric!r} twice"
                )
            seen.add(key)
        out[label.metric][label.trace_id].append(label.score)
    return out


def _judged_score(
    value: float | None, details: dict[str, Any], label_scale: RubricScale | None
) -> tuple[float | None, RubricScale | None]:
    """The judge's score on its own scale (see the module's description), and that scale."""
    if value is None:
        return None, None
    scale_text = details.get("scale")
    if isinstance(scale_text, str):
        scale = RubricScale.parse(scale_text)
        if scale.low is None:
            return value, RubricScale(0, 1)
        return float(details["score"]), scale
    if label_scale is not None and label_scale.low is not None and label_scale.high is not None:
        return label_scale.low + value * (label_scale.high - label_scale.low), label_scale
    return value, None


def calibrate(
    suite: Suite,
    traces_file: Path,
    labels_file: Path,
    *,
    label_scale: str | None = None,
    confidence: float = 0.95,
    n_resamples: int = 1000,
) -> list[MetricCalibration]:
    """Score the labelled traces with the suite's labelled metrics and compare them with the
    humans (see the module's description).

    Args:
        suite: the suite (its ``[judge]`` and metric options as for a run).
        traces_file: the traces (native JSONL); only the labelled ones are scored.
        labels_file: the human labels (JSON Lines: trace_id, metric, score, rater).
        label_scale: ``LOW-HIGH``: the labels' scale for metrics without one of their own.
        confidence: coverage of the bootstrap intervals.
        n_resamples: bootstrap resamples.

    Raises:
        CalibrationError: for unusable files, a labelled metric the suite lacks, labels outside
            the judge's scale, or no labelled trace in the trace file.
        JudgeSetupError: for a judge that cannot work as configured.
    """
    labels = read_labels(labels_file)
    by_metric = _raters(labels)
    missing = [m for m in by_metric if m not in suite.metrics]
    if missing:
        raise CalibrationError(
            f"{labels_file}: metric {missing[0]!r} is not in suite {suite.name!r} "
            f"({', '.join(suite.metrics)})"
        )
    try:
        scale_given = RubricScale.parse(label_scale) if label_scale is not None else None
    except ValueError as exc:
        raise CalibrationError(f"--label-scale: {exc}") from None
    if scale_given is not None and scale_given.low is None:
        raise CalibrationError("--label-scale: give LOW-HIGH (pass/fail metrics have a scale)")
    labelled = {t for per_trace in by_metric.values() for t in per_trace}
    traces = [t for t in _traces(traces_file) if t.id in labelled]
    if not traces:
        raise CalibrationError(f"{traces_file}: none of its traces has a label in {labels_file}")
    names = list(by_metric)
    try:
        chosen = suite.model_copy(
            update={
                "metrics": names,
                "weights": {k: v for k, v in suite.weights.items() if k in names},
            }
        )
        built = checked_metrics(chosen)
    except SuiteError as exc:
        raise CalibrationError(str(exc)) from None
    samples = score_traces(traces, chosen, built)
    return [
        _metric_calibration(name, by_metric[name], samples, scale_given, confidence, n_resamples)
        for name in names
    ]


def _metric_calibration(
    name: str,
    humans: dict[str, list[float]],
    samples: Sequence[SampleScore],
    label_scale: RubricScale | None,
    confidence: float,
    n_resamples: int,
) -> MetricCalibration:
    judged: list[ScoredItem] = []
    scale: RubricScale | None = None
    missing, reason = 0, None
    for sample in samples:
        if sample.trace_id not in humans:
            continue
        value = sample.values.get(name)
        score, found = _judged_score(value, sample.details.get(name, {}), label_scale)
        if score is None:
            missing += 1
            reason = reason or sample.reasons.get(name) or sample.metric_errors.get(name)
            continue
        scale = scale or found
        judged.append(({name: score}, [{name: s} for s in humans[sample.trace_id]]))
    if scale is not None and scale.low is not None and scale.high is not None:
        outside = [
            s for scores in humans.values() for s in scores if not scale.low <= s <= scale.high
        ]
        if outside:
            raise CalibrationError(
                f"labels of {name!r} lie outside its scale {scale.label} (e.g. {outside[0]}): "
                "label on the judge's scale"
                + ("" if label_scale else ", or give the labels' scale with --label-scale")
            )
    points = (
        list(range(scale.low, scale.high + 1))
        if scale is not None and scale.low is not None and scale.high is not None
        else None
    )
    groups = [[{name: s} for s in scores] for scores in humans.values()]

    def figures(items: Iterable[ScoredItem]) -> Agreement:
        predicted, target = against_others(items, name)
        return agreement(
            predicted, target, scale=points, confidence=confidence, n_resamples=n_resamples
        )

    return MetricCalibration(
        metric=name,
        scale=scale.label if scale is not None else "0-1 (value)",
        judge=figures(judged),
        human_ceiling=figures(leave_one_out(groups)),
        traces=len(judged),
        labels=sum(len(v) for v in humans.values()),
        judge_missing=missing,
        reason=reason,
    )
