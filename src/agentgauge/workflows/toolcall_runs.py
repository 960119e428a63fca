"""Tool-calling runs: score recorded predictions against a dataset, or send a dataset to a
model and keep its answers to score.

Scoring goes through :func:`agentgauge.engine.evaluate` with the ``toolcall`` suite, so a run
lands in the store like any other (kind ``toolcall``). Its JSON document is the common one;
each sample also carries ``valid`` (the value-level verdict of the chosen mode) and
``error_type`` (:func:`add_verdict`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgauge.config import Suite, load_suite
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import ReadError
from agentgauge.model import Task, Trace
from agentgauge.store import Store
from agentgauge.toolcall.bfcl_multiturn import SimulatorError, is_multi_turn, require_simulators
from agentgauge.toolcall.datasets import read_dataset, read_predictions
from agentgauge.toolcall.formats import Turns
from agentgauge.toolcall.runner import (
    ChatBackend,
    Prediction,
    RunSettings,
    request_from_task,
    run_to_jsonl,
)

__all__ = [
    "CALL_METRICS",
    "SUITE",
    "VALUE_METRIC",
    "Dataset",
    "ModelRun",
    "ToolcallError",
    "add_verdict",
    "check_scorable",
    "count_unanswered",
    "load_dataset",
    "parse_weights",
    "run_model",
    "score_predictions",
    "toolcall_suite",
]

SUITE = "toolcall"
VALUE_METRIC = "value_accuracy"
CALL_METRICS = ("tool_selection", "parameter_accuracy", "execution_success", VALUE_METRIC)


class ToolcallError(AgentgaugeError, ValueError):
    """A dataset, predictions file or option of a tool-calling run that cannot be used."""


def parse_weights(text: str) -> dict[str, float]:
    """``"tool_selection=0.5,parameter_accuracy=0.5"`` -> ``{...}``.

    Args:
        text: comma-separated ``metric=weight`` pairs.

    Raises:
        ToolcallError: naming the malformed entry.
    """
    weights: dict[str, float] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise ToolcallError(f"--weights: {entry!r} is not metric=weight")
        try:
            weight = float(value)
            if not math.isfinite(weight):
                raise ValueError(weight)
            weights[key.strip()] = weight
        except ValueError:
            message = f"--weights: {value.strip()!r} for {key.strip()!r} is not a number"
            raise ToolcallError(message) from None
    if not weights:
        raise ToolcallError("--weights: no metric=weight pair given")
    return weights


def toolcall_suite(mode: str, weights: str | None = None) -> Suite:
    """The ``toolcall`` suite with ``value_accuracy`` in ``mode`` and the given weights.

    Args:
        mode: the value-matching mode (one of
            :data:`~agentgauge.toolcall.matching.VALUE_ACCURACY_MODES`).
        weights: ``--weights`` text; None keeps the suite's weights.

    Raises:
        ToolcallError: a malformed ``--weights``.
        SuiteError: an unknown weight key (named in the message) or a negative weight.
    """
    custom = parse_weights(weights) if weights is not None else None
    suite = load_suite(SUITE)
    update: dict[str, Any] = {"options": {**suite.options, VALUE_METRIC: {"mode": mode}}}
    if custom is not None:
        update["weights"] = custom
    suite = suite.model_copy(update=update)
    suite.validate_names("--weights" if weights is not None else f"suite {SUITE!r}")
    return suite


@dataclass(frozen=True)
class Dataset:
    """A tool-calling dataset as read: its usable samples and the lines that were not.

    Args:
        path: the dataset file.
        format: its format (a registered one, :data:`~agentgauge.toolcall.formats.FORMATS`).
        answers: the file of expected calls, for a format that keeps them apart (BFCL's
            possible answers), if any.
        tasks: the usable samples, in file order.
        errors: the lines that could not be read (reported with the run).
        turns: which assistant turns of a conversation are samples (``all`` or ``last``).
    """

    path: Path
    format: str
    answers: Path | None = None
    tasks: list[Task] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)
    turns: Turns = "all"


def load_dataset(
    path: Path, fmt: str, answers: Path | None = None, turns: Turns = "all"
) -> Dataset:
    """Read a tool-calling dataset.

    Args:
        path: the dataset (JSONL; BFCL: its question file).
        fmt: its format: ``deepfabric``, ``openai``, ``bfcl`` or a plugin's.
        answers: the file of expected calls, for a format that keeps them apart (BFCL's
            possible answers).
        turns: which assistant turns of a conversation are samples: ``all`` (``<id>#<n>``) or
            ``last`` (``<id>``); conversation formats only.

    Raises:
        ToolcallError: a missing file, an unknown format, an answers file or turns the
            format does not read, or no usable sample (naming the first error).
    """
    for given in (path, answers):
        if given is not None and not given.is_file():
            raise ToolcallError(f"no such file: {given}")
    tasks: list[Task] = []
    errors: list[ReadError] = []
    try:
        for item in read_dataset(path, fmt, answers=answers, turns=turns):
            if isinstance(item, ReadError):
                errors.append(item)
            else:
                tasks.append(item)
    except ValueError as exc:
        raise ToolcallError(str(exc)) from None
    if not tasks:
        first = f" (first error: {errors[0]})" if errors else ""
        raise ToolcallError(f"{path}: no usable sample{first}")
    return Dataset(path, fmt, answers, tasks, errors, turns)


def _scored_items(dataset: Dataset, predictions: Path, parser: str) -> Iterator[Trace | ReadError]:
    """Dataset errors, the predictions' traces, then a failed trace per unanswered sample."""
    yield from dataset.errors
    by_id = {task.id: task for task in dataset.tasks}
    yield from read_predictions(predictions, by_id, parser=parser, include_missing=True)


def check_scorable(dataset: Dataset, suite: Suite) -> None:
    """Check that the suite can score the dataset's samples.

    Args:
        dataset: the dataset.
        suite: the ``toolcall`` suite.

    Raises:
        ToolcallError: BFCL multi-turn questions in mode ``bfcl`` without BFCL's simulated
            APIs installed (the message says how to install them).
    """
    if suite.options[VALUE_METRIC]["mode"] == "bfcl" and any(map(is_multi_turn, dataset.tasks)):
        try:
            require_simulators()
        except SimulatorError as exc:
            raise ToolcallError(str(exc)) from None


def score_predictions(
    dataset: Dataset,
    predictions: Path,
    suite: Suite,
    *,
    store: Store,
    parser: str = "auto",
    jobs: int | None = None,
    progress: bool = True,
    extra_config: dict[str, Any] | None = None,
) -> str:
    """Score a predictions file against its dataset and store the run (kind ``toolcall``).

    A sample the file does not answer scores 0 on every metric (error type ``run_error``).

    Args:
        dataset: the dataset the predictions answer.
        predictions: ``{"id", "result"}`` per line.
        suite: the ``toolcall`` suite (:func:`toolcall_suite`).
        store: where the run goes.
        parser: how the model's answers are read: ``auto`` (detect the format) or a
            registered parser (:data:`~agentgauge.toolcall.parsers.PARSERS`).
        jobs: scoring processes (default: cores).
        progress: show a progress bar.
        extra_config: more settings recorded in the run's ``toolcall`` configuration.

    Returns:
        The run id.

    Raises:
        ToolcallError: see :func:`check_scorable`.
    """
    check_scorable(dataset, suite)
    config = {
        "dataset": str(dataset.path),
        "answers": str(dataset.answers) if dataset.answers else None,
        "format": dataset.format,
        "turns": dataset.turns,
        "parser": parser,
        "mode": suite.options[VALUE_METRIC]["mode"],
        "weights": suite.weights,
        "predictions": str(predictions),
        **(extra_config or {}),
    }
    sources = [str(p) for p in (dataset.path, dataset.answers, predictions) if p]
    return evaluate(
        _scored_items(dataset, predictions, parser),
        suite,
        store=store,
        options=EvaluateOptions(
            jobs=jobs,
            progress=progress,
            kind="toolcall",
            extra_config={"toolcall": config},
            sources=sources,
            total=len(dataset.tasks) + len(dataset.errors),
        ),
    )


def add_verdict(sample: dict[str, Any]) -> None:
    """Add ``valid`` (the value-level verdict of the chosen mode) and ``error_type`` to one
    sample of the run's JSON document.

    Args:
        sample: one element of the document's ``samples``.
    """
    value = sample["metrics"].get(VALUE_METRIC)
    sample["valid"] = None if value is None else value >= 1.0
    details = sample["details"].get(VALUE_METRIC) or {}
    sample["error_type"] = details.get("error_type")


def count_unanswered(store: Store, run_id: str) -> int:
    """The samples of a run the model never answered (no prediction, or a failed request).

    Args:
        store: the store holding the run.
        run_id: the run.
    """
    return sum(
        1
        for s in store.iter_samples(run_id)
        if any((d or {}).get("error_type") == "run_error" for d in s.details.values())
    )


@dataclass(frozen=True)
class ModelRun:
    """What a model answered: one prediction per sample sent.

    Args:
        out: the predictions file.
        predictions: the predictions of this run (samples kept by a resume are not in it).
    """

    out: Path
    predictions: list[Prediction]

    @property
    def failed(self) -> list[Prediction]:
        """The samples without an answer."""
        return [p for p in self.predictions if p.error is not None]

    @property
    def median_latency_s(self) -> float | None:
        """The median latency of the answered requests (the upper one of an even count)."""
        latencies = sorted(p.latency_s for p in self.predictions if p.latency_s is not None)
        return latencies[len(latencies) // 2] if latencies else None

    def tokens(self, key: str) -> int:
        """The tokens of every answer, as the server counted them.

        Args:
            key: ``input_tokens`` or ``output_tokens``.
        """
        return sum((p.usage or {}).get(key, 0) for p in self.predictions)


def run_model(
    tasks: Sequence[Task],
    backend: ChatBackend,
    out: Path,
    settings: RunSettings,
    *,
    resume: bool = False,
    progress: bool = True,
) -> ModelRun:
    """Send each sample to a model and write its answers to ``out`` as they come.

    A sample that cannot be sent (its tools cannot be written for the endpoint) gets a line
    with its error, so that scoring counts it as unanswered.

    Args:
        tasks: the samples.
        backend: the model.
        out: the predictions JSONL.
        settings: concurrency, deadline and retries.
        resume: keep ``out``'s answered lines; send only the other samples.
        progress: show a progress bar.

    Raises:
        ToolcallError: for BFCL multi-turn questions, which need the model's calls executed
            turn by turn while it runs.
    """
    if any(map(is_multi_turn, tasks)):
        raise ToolcallError(
            "BFCL multi-turn questions need the model's calls executed turn by turn, which "
            "this runner does not do; score a BFCL result file with 'toolcall score'"
        )
    requests = []
    unsendable: list[Prediction] = []
    for task in tasks:
        try:
            requests.append(request_from_task(task))
        except ValueError as exc:
            unsendable.append(Prediction(id=task.id, error=str(exc)))
    predictions = run_to_jsonl(requests, backend, out, settings, resume=resume, progress=progress)
    if unsendable:
        with out.open("a", encoding="utf-8") as fh:
            fh.writelines(p.to_line() + "\n" for p in unsendable)
    return ModelRun(out, predictions + unsendable)
