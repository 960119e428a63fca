"""``agentgauge toolcall ...`` commands: score recorded predictions, run a model, inspect failures.

Scoring goes through :func:`agentgauge.engine.evaluate` with the ``toolcall`` suite, so a run
lands in the store like any other (``agentgauge runs``, ``show``, ``compare`` work on it). The
JSON document is the foundation's contract; each sample also carries ``valid`` (the value-level
verdict of the chosen mode) and ``error_type``.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from agentgauge._cli import (
    DbOption,
    HtmlOption,
    JsonOption,
    console,
    err_console,
    output_file,
    score_level,
    usage_error,
    write_outputs,
)

if TYPE_CHECKING:
    from agentgauge.config import Suite
    from agentgauge.io.jsonl import ReadError
    from agentgauge.model import Task, Trace
    from agentgauge.store import SampleRow
    from agentgauge.toolcall.runner import HttpChatBackend, Prediction, RunSettings

toolcall_app = typer.Typer(help="Evaluate tool-calling models.", no_args_is_help=True)

SUITE = "toolcall"
VALUE_METRIC = "value_accuracy"
CALL_METRICS = ("tool_selection", "parameter_accuracy", "execution_success", VALUE_METRIC)
_CELL = 160
_N = TypeVar("_N", int, float)


class DatasetFormat(StrEnum):
    deepfabric = "deepfabric"
    openai = "openai"
    bfcl = "bfcl"


class Mode(StrEnum):
    bfcl = "bfcl"
    strict = "strict"
    lenient = "lenient"


DatasetOpt = Annotated[
    Path, typer.Option("--dataset", help="Dataset file (JSONL; BFCL: its question file).")
]
AnswersOpt = Annotated[
    Path | None, typer.Option("--answers", help="BFCL possible-answer file for the dataset.")
]
FormatOpt = Annotated[DatasetFormat, typer.Option("--format", help="Dataset format.")]
ModeOpt = Annotated[
    Mode | None,
    typer.Option(
        "--mode", help="value_accuracy mode (default: bfcl for BFCL data, strict otherwise)."
    ),
]
WeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--weights",
        help="Overall weights as k=v,... (replace the defaults; unnamed metrics weigh 0).",
    ),
]
JobsOpt = Annotated[int | None, typer.Option("--jobs", min=1, help="Scoring processes.")]
FailUnderOpt = Annotated[
    float | None,
    typer.Option(
        "--fail-under", callback=score_level, help="Exit 1 if the mean overall is below this."
    ),
]
ProgressOpt = Annotated[bool, typer.Option(help="Show progress bars.")]


def _usage_error(message: str) -> typer.Exit:

    return usage_error(message)


def parse_weights(text: str) -> dict[str, float]:
    """``"tool_selection=0.5,parameter_accuracy=0.5"`` -> ``{...}``.

    Args:
        text: comma-separated ``metric=weight`` pairs.

    Raises:
        ValueError: naming the malformed entry.
    """
    weights: dict[str, float] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--weights: {entry!r} is not metric=weight")
        try:
            weight = float(value)
            if not math.isfinite(weight):
                raise ValueError(weight)
            weights[key.strip()] = weight
        except ValueError:
            message = f"--weights: {value.strip()!r} for {key.strip()!r} is not a number"
            raise ValueError(message) from None
    if not weights:
        raise ValueError("--weights: no metric=weight pair given")
    return weights


def build_suite(mode: Mode, weights: str | None) -> Suite:
    """The ``toolcall`` suite with ``value_accuracy`` in ``mode`` and the given weights.

    Args:
        mode: the value-matching mode.
        weights: ``--weights`` text; None keeps the spec's defaults (0.40/0.35/0.25/0.0).

    Raises:
        ValueError: a malformed ``--weights``.
        SuiteError: an unknown weight key (named in the message) or a negative weight.
    """
    from agentgauge.config import load_suite

    custom = parse_weights(weights) if weights is not None else None
    suite = load_suite(SUITE)
    update: dict[str, Any] = {"options": {**suite.options, VALUE_METRIC: {"mode": mode.value}}}
    if custom is not None:
        update["weights"] = custom
    suite = suite.model_copy(update=update)
    suite.validate_names("--weights" if weights is not None else f"suite {SUITE!r}")
    return suite


def _load_tasks(
    dataset: Path, answers: Path | None, fmt: DatasetFormat
) -> tuple[list[Task], list[ReadError]]:
    from agentgauge.io.jsonl import ReadError
    from agentgauge.toolcall.datasets import read_dataset

    for path in (dataset, answers):
        if path is not None and not path.is_file():
            raise _usage_error(f"no such file: {path}")
    tasks: list[Task] = []
    errors: list[ReadError] = []
    try:
        for item in read_dataset(dataset, fmt.value, answers=answers):
            if isinstance(item, ReadError):
                errors.append(item)
            else:
                tasks.append(item)
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    if not tasks:
        first = f" (first error: {errors[0]})" if errors else ""
        raise _usage_error(f"{dataset}: no usable sample{first}")
    return tasks, errors


def _scored_items(
    tasks: list[Task], dataset_errors: list[ReadError], predictions: Path
) -> Iterator[Trace | ReadError]:
    """Dataset errors, the predictions' traces, then a failed trace per unanswered sample."""
    from agentgauge.toolcall.datasets import read_predictions

    yield from dataset_errors
    by_id = {task.id: task for task in tasks}
    yield from read_predictions(predictions, by_id, include_missing=True)


def _score(
    tasks: list[Task],
    dataset_errors: list[ReadError],
    predictions: Path,
    suite: Suite,
    *,
    db: Path,
    jobs: int | None,
    progress: bool,
    config: dict[str, Any],
) -> str:
    from agentgauge.config import SuiteError
    from agentgauge.engine import evaluate
    from agentgauge.store import Store, StoreError

    sources = [str(p) for p in (config.get("dataset"), config.get("answers"), predictions) if p]
    try:
        with Store(db) as store:
            return evaluate(
                _scored_items(tasks, dataset_errors, predictions),
                suite,
                store=store,
                jobs=jobs,
                progress=progress,
                kind="toolcall",
                extra_config={"toolcall": config},
                sources=sources,
                total=len(tasks) + len(dataset_errors),
            )
    except (SuiteError, StoreError) as exc:
        raise _usage_error(str(exc)) from None


def add_verdict(sample: dict[str, Any]) -> None:
    """Add ``valid`` (the value-level verdict of the chosen mode) and ``error_type`` to one
    sample of the run's JSON document."""
    value = sample["metrics"].get(VALUE_METRIC)
    sample["valid"] = None if value is None else value >= 1.0
    details = sample["details"].get(VALUE_METRIC) or {}
    sample["error_type"] = details.get("error_type")


def _report(
    db: Path,
    run_id: str,
    json_out: Path | None,
    html_out: Path | None,
    fail_under: float | None,
) -> None:
    from agentgauge.report.export import write_result_json
    from agentgauge.store import Store

    if json_out is not None:
        with Store(db) as store:
            write_result_json(store, run_id, json_out, sample_hook=add_verdict)
        console.print(f"wrote {json_out}")
    console.print(f"run id: {run_id}  (agentgauge toolcall failures {run_id} --db {db})")
    unanswered = _count_unanswered(db, run_id)
    if unanswered:
        console.print(
            f"[yellow]{unanswered} samples have no answer from the model[/] (no prediction, or "
            "a failed request): each scores 0 on every metric (error type run_error)."
        )
    write_outputs(db, run_id, json_out=None, csv_out=None, html_out=html_out, fail_under=fail_under)


def _count_unanswered(db: Path, run_id: str) -> int:
    from agentgauge.store import Store

    with Store(db) as store:
        return sum(
            1
            for s in store.iter_samples(run_id)
            if any((d or {}).get("error_type") == "run_error" for d in s.details.values())
        )


def _optional_number(option: str, text: str, kind: Callable[[str], _N]) -> _N | None:
    """``'none'`` -> None, else the number (a usage error naming the option otherwise)."""
    if text.strip().lower() == "none":
        return None
    try:
        value = kind(text)
    except ValueError:
        raise _usage_error(f"{option}: {text!r} is neither a number nor 'none'") from None
    if not math.isfinite(value) or value < 0:
        raise _usage_error(f"{option}: {text!r} is not a finite non-negative number")
    return value


def _mode_for(fmt: DatasetFormat, mode: Mode | None) -> Mode:
    if mode is not None:
        return mode
    return Mode.bfcl if fmt is DatasetFormat.bfcl else Mode.strict


def _checked_suite(fmt: DatasetFormat, mode: Mode | None, weights: str | None) -> Suite:
    from agentgauge.config import SuiteError

    try:
        return build_suite(_mode_for(fmt, mode), weights)
    except (ValueError, SuiteError) as exc:
        raise _usage_error(str(exc)) from None


@toolcall_app.command()
def score(
    dataset: DatasetOpt,
    predictions: Annotated[
        Path, typer.Option("--predictions", help='Predictions JSONL: {"id", "result"} per line.')
    ],
    fmt: FormatOpt,
    answers: AnswersOpt = None,
    mode: ModeOpt = None,
    weights: WeightsOpt = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOpt = None,
    fail_under: FailUnderOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Score recorded predictions against a dataset, store the run and report it."""
    suite = _checked_suite(fmt, mode, weights)
    if not predictions.is_file():
        raise _usage_error(f"no such file: {predictions}")
    tasks, errors = _load_tasks(dataset, answers, fmt)
    config = _config(dataset, answers, fmt, suite, predictions)
    run_id = _score(
        tasks, errors, predictions, suite, db=db, jobs=jobs, progress=progress, config=config
    )
    _report(db, run_id, json_out, html_out, fail_under)


def _config(
    dataset: Path, answers: Path | None, fmt: DatasetFormat, suite: Suite, predictions: Path
) -> dict[str, Any]:
    return {
        "dataset": str(dataset),
        "answers": str(answers) if answers else None,
        "format": fmt.value,
        "mode": suite.options[VALUE_METRIC]["mode"],
        "weights": suite.weights,
        "predictions": str(predictions),
    }


@toolcall_app.command()
def run(
    endpoint: Annotated[
        str, typer.Option("--endpoint", help="OpenAI-compatible base URL (with or without /v1).")
    ],
    model: Annotated[str, typer.Option("--model", help="Model name the server knows.")],
    dataset: DatasetOpt,
    fmt: FormatOpt,
    out: Annotated[
        Path, typer.Option("--out", callback=output_file, help="Predictions JSONL to write.")
    ],
    answers: AnswersOpt = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Requests in flight.")] = 8,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds per attempt.")] = 120.0,
    max_retries: Annotated[int, typer.Option(min=0, help="Retries on 429/5xx/timeouts.")] = 4,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Env var holding the API key (default OPENAI_API_KEY, optional; when given, "
            "it must be set)."
        ),
    ] = None,
    temperature: Annotated[
        str, typer.Option(help="Sampling temperature, or 'none' to send none.")
    ] = "0",
    seed: Annotated[str, typer.Option(help="Sampling seed, or 'none' to send none.")] = "0",
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Completion token limit.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N samples.")] = None,
    resume: Annotated[
        bool, typer.Option(help="Keep --out's answered lines; send only the other samples.")
    ] = False,
    do_score: Annotated[bool, typer.Option("--score/--no-score", help="Score the run.")] = True,
    mode: ModeOpt = None,
    weights: WeightsOpt = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOpt = None,
    fail_under: FailUnderOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Send each sample to a model, write its answers to --out, then score them."""
    from agentgauge.http import chat_completions_url
    from agentgauge.toolcall.runner import EndpointConfig, HttpChatBackend, RunSettings

    suite = _checked_suite(fmt, mode, weights) if do_score else None
    if api_key_env is not None and not os.environ.get(api_key_env):
        raise _usage_error(f"--api-key-env: environment variable {api_key_env} is not set")
    try:
        chat_completions_url(endpoint)
    except ValueError as exc:
        raise _usage_error(f"--endpoint: {exc}") from None
    temperature_value = _optional_number("--temperature", temperature, float)
    seed_value = _optional_number("--seed", seed, int)
    tasks, errors = _load_tasks(dataset, answers, fmt)
    if limit is not None:
        tasks = tasks[:limit]
    config = EndpointConfig(
        base_url=endpoint,
        model=model,
        api_key_env=api_key_env or "OPENAI_API_KEY",
        temperature=temperature_value,
        seed=seed_value,
        max_tokens=max_tokens,
    )
    settings = RunSettings(concurrency=concurrency, timeout_s=timeout, max_retries=max_retries)
    backend = HttpChatBackend(config, concurrency=concurrency)
    if not backend.has_api_key:
        err_console.print(f"no API key in ${config.api_key_env}: sending none", highlight=False)
    predictions = _run_model(tasks, backend, out, settings, progress, resume)
    _print_run_summary(predictions, out)
    if suite is None:
        return
    run_config = {
        **_config(dataset, answers, fmt, suite, out),
        "endpoint": backend.url,
        "model": model,
        "runner": {**config.model_dump(mode="json"), **settings.model_dump(mode="json")},
    }
    run_id = _score(
        tasks, errors, out, suite, db=db, jobs=jobs, progress=progress, config=run_config
    )
    _report(db, run_id, json_out, html_out, fail_under)


def _run_model(
    tasks: Iterable[Task],
    backend: HttpChatBackend,
    out: Path,
    settings: RunSettings,
    progress: bool,
    resume: bool,
) -> list[Prediction]:
    from agentgauge.toolcall.runner import Prediction, request_from_task, run_to_jsonl

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
    return predictions + unsendable


def _print_run_summary(predictions: list[Prediction], out: Path) -> None:

    failed = [p for p in predictions if p.error is not None]
    latencies = sorted(p.latency_s for p in predictions if p.latency_s is not None)
    tokens_in = sum((p.usage or {}).get("input_tokens", 0) for p in predictions)
    tokens_out = sum((p.usage or {}).get("output_tokens", 0) for p in predictions)
    median = f"{latencies[len(latencies) // 2]:.2f} s" if latencies else "n/a"
    console.print(
        f"wrote {out}: {len(predictions)} samples sent, {len(failed)} failed requests, "
        f"median latency {median}, tokens in/out {tokens_in}/{tokens_out}"
    )
    for p in failed[:5]:
        console.print(f"  {p.id}: {p.error}", highlight=False, markup=False)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _CELL else text[: _CELL - 1] + "…"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _acceptable(values: Any) -> str:
    """An expected parameter's acceptable values: ``5``, ``"a"|"b"``, ``"units"|<omit>``."""
    if not isinstance(values, list):
        return _json(values)
    return "|".join("<omit>" if v == "" else _json(v) for v in values) or "<none>"


def _calls_text(calls: Any, *, expected: bool = False) -> str:
    if not calls:
        return "(no call)"
    parts = []
    for call in calls:
        if isinstance(call, dict) and "name" in call:
            args = call.get("arguments") or {}
            show = _acceptable if expected else _json
            parts.append(f"{call['name']}({', '.join(f'{k}={show(v)}' for k, v in args.items())})")
        else:
            parts.append(_json(call))
    return "; ".join(parts)


def _query(trace: Trace | None) -> str:
    if trace is None:
        return ""
    value = trace.task.input
    if isinstance(value, list):
        users = [m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        value = users[-1] if users else value
    if value is None:
        return ""
    return value if isinstance(value, str) else _json(value)


def _is_failure(sample: SampleRow) -> bool:
    if sample.error:
        return True
    return any(
        m.value is not None and m.value < 1.0 for m in sample.metrics if m.metric in CALL_METRICS
    )


def _failure(sample: SampleRow) -> dict[str, Any]:
    """One failing sample for the failures view: what was asked, expected, predicted, wrong."""
    details: dict[str, Any] = {}
    for name in (VALUE_METRIC, *CALL_METRICS):
        details = sample.details.get(name) or {}
        if details:
            break
    trace = sample.trace()
    metadata = trace.metadata if trace is not None else {}
    expected = details.get("expected")
    if expected is None and trace is not None and trace.task.expected_calls is not None:
        expected = [call.model_dump(mode="json") for call in trace.task.expected_calls]
    error = ", ".join(str(e) for e in details.get("errors") or [])
    notes = [
        str(note)
        for note in (
            details.get("run_error"),
            details.get("bfcl_error"),
            metadata.get("parse_error"),
            sample.error,
        )
        if note
    ]
    if notes:
        error = f"{error} ({'; '.join(notes)})" if error else "; ".join(notes)
    return {
        "id": sample.trace_id,
        "query": _query(trace),
        "expected": _calls_text(expected, expected=True),
        "predicted": _calls_text(details.get("predicted")),
        "error": error or "-",
        "error_type": details.get("error_type"),
        "raw_output": details.get("raw_output", metadata.get("raw_output")),
    }


_COLUMNS = ("id", "query", "expected", "predicted", "error")


@toolcall_app.command()
def failures(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    db: DbOption = Path("agentgauge.db"),
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many.")] = 20,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json", callback=output_file, help="Write every failing sample (untruncated)."
        ),
    ] = None,
) -> None:
    """Show the failing samples of a run: query, expected and predicted calls, errors."""
    from rich.table import Table
    from rich.text import Text

    from agentgauge.report.export import write_json
    from agentgauge.store import Store, StoreError

    if not db.exists():
        raise _usage_error(f"no store at {db}")
    try:
        with Store(db) as store:
            run = store.get_run(run_id)
            samples = list(store.iter_samples(run.id, with_trace=True))
    except StoreError as exc:
        raise _usage_error(str(exc)) from None
    if run.kind != "toolcall":
        raise _usage_error(f"run {run.id} is not a tool-calling run (its kind: {run.kind})")
    failing = [_failure(s) for s in samples if _is_failure(s)]
    table = Table(show_lines=True)
    for key in _COLUMNS:
        # ids and errors wrap rather than lose their end to an ellipsis
        table.add_column(key, overflow="fold")
    for row in failing[:limit]:
        # Text, not markup: model output is shown as it is
        table.add_row(*(Text(_short(row[key])) for key in _COLUMNS))
    console.print(f"run {run.id}: {len(failing)} of {len(samples)} samples failed")
    by_type = Counter(row["error_type"] or "-" for row in failing)
    if by_type:
        console.print(
            "by error: " + ", ".join(f"{name} {n}" for name, n in by_type.most_common()),
            highlight=False,
        )
    if failing:
        console.print(table)
    if len(failing) > limit:
        console.print(f"… {len(failing) - limit} more (use --limit)")
    if json_out is not None:
        write_json({"run_id": run.id, "n_samples": len(samples), "failures": failing}, json_out)
        console.print(f"wrote {json_out}")
