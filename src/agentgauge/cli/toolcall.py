"""``agentgauge toolcall ...``: score recorded predictions, run a model, inspect failures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from agentgauge.cli._common import (
    DbOption,
    HtmlOption,
    JsonOption,
    check_choice,
    console,
    err_console,
    optional_number,
    output_file,
    score_level,
    usage_error,
    write_outputs,
)
from agentgauge.cli.toolcall_failures import failures
from agentgauge.toolcall.formats import TURNS
from agentgauge.toolcall.matching import VALUE_ACCURACY_MODES

if TYPE_CHECKING:
    from agentgauge.config import Suite
    from agentgauge.toolcall.formats import Turns
    from agentgauge.toolcall.runs import ModelRun

toolcall_app = typer.Typer(
    help="Evaluate tool-calling models.", no_args_is_help=True, rich_markup_mode=None
)


DatasetOpt = Annotated[
    Path, typer.Option("--dataset", help="Dataset file (JSONL; BFCL: its question file).")
]
AnswersOpt = Annotated[
    Path | None, typer.Option("--answers", help="BFCL possible-answer file for the dataset.")
]
FormatOpt = Annotated[
    str,
    typer.Option("--format", help="Dataset format: deepfabric, openai, bfcl, or a plugin's."),
]
TurnsOpt = Annotated[
    str,
    typer.Option(
        "--turns",
        help="Conversations: a sample per assistant turn (all, ids <id>#<n>) or the last "
        "turn only (last, ids <id>).",
    ),
]
ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode",
        help=f"value_accuracy mode: {', '.join(VALUE_ACCURACY_MODES)} (default: the format's).",
    ),
]
ParserOpt = Annotated[
    str, typer.Option("--parser", help="How answers are read: auto (detect) or a parser's name.")
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


def _suite(fmt: str, mode: str | None, weights: str | None, parser: str) -> Suite:
    """The suite to score with, once the format, the mode and the parser are checked."""
    from agentgauge.toolcall.formats import FORMATS
    from agentgauge.toolcall.parsers import PARSERS
    from agentgauge.toolcall.runs import toolcall_suite

    check_choice("--format", fmt, FORMATS)
    if mode is not None:
        check_choice("--mode", mode, VALUE_ACCURACY_MODES)
    check_choice("--parser", parser, PARSERS)
    return toolcall_suite(mode or FORMATS.get(fmt).value_mode, weights)


def _turns(turns: str) -> Turns:
    check_choice("--turns", turns, TURNS)
    return cast("Turns", turns)


def _report(
    db: Path, run_id: str, json_out: Path | None, html_out: Path | None, fail_under: float | None
) -> None:
    from agentgauge.report.export import write_result_json
    from agentgauge.store import Store
    from agentgauge.toolcall.runs import add_verdict, count_unanswered

    with Store(db) as store:
        if json_out is not None:
            write_result_json(store, run_id, json_out, sample_hook=add_verdict)
            console.print(f"wrote {json_out}")
        console.print(f"run id: {run_id}  (agentgauge toolcall failures {run_id} --db {db})")
        unanswered = count_unanswered(store, run_id)
    if unanswered:
        console.print(
            f"[yellow]{unanswered} samples have no answer from the model[/] (no prediction, or "
            "a failed request): each scores 0 on every metric (error type run_error)."
        )
    write_outputs(db, run_id, json_out=None, csv_out=None, html_out=html_out, fail_under=fail_under)


@toolcall_app.command()
def score(
    dataset: DatasetOpt,
    predictions: Annotated[
        Path, typer.Option("--predictions", help='Predictions JSONL: {"id", "result"} per line.')
    ],
    fmt: FormatOpt,
    answers: AnswersOpt = None,
    turns: TurnsOpt = "all",
    mode: ModeOpt = None,
    parser: ParserOpt = "auto",
    weights: WeightsOpt = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOpt = None,
    fail_under: FailUnderOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Score recorded predictions against a dataset.

    The run is stored and reported like any other.
    """
    from agentgauge.store import Store
    from agentgauge.toolcall.runs import check_scorable, load_dataset, score_predictions

    suite = _suite(fmt, mode, weights, parser)
    samples = _turns(turns)
    if not predictions.is_file():
        raise usage_error(f"no such file: {predictions}")
    data = load_dataset(dataset, fmt, answers, samples)
    check_scorable(data, suite)
    with Store(db) as store:
        run_id = score_predictions(
            data, predictions, suite, store=store, parser=parser, jobs=jobs, progress=progress
        )
    _report(db, run_id, json_out, html_out, fail_under)


def _print_run_summary(run: ModelRun) -> None:
    latency = run.median_latency_s
    median = "n/a" if latency is None else f"{latency:.2f} s"
    tokens = f"{run.tokens('input_tokens')}/{run.tokens('output_tokens')}"
    console.print(
        f"wrote {run.out}: {len(run.predictions)} samples sent, {len(run.failed)} failed "
        f"requests, median latency {median}, tokens in/out {tokens}"
    )
    for p in run.failed[:5]:
        console.print(f"  {p.id}: {p.error}", highlight=False, markup=False)


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
    turns: TurnsOpt = "all",
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
    parser: ParserOpt = "auto",
    weights: WeightsOpt = None,
    json_out: JsonOption = None,
    html_out: HtmlOption = None,
    db: DbOption = Path("agentgauge.db"),
    jobs: JobsOpt = None,
    fail_under: FailUnderOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Send each sample to a model, then score its answers.

    The answers are written to --out as they come; --no-score stops there.
    """
    from dataclasses import replace

    from agentgauge.store import Store
    from agentgauge.toolcall.runner import EndpointConfig, HttpChatBackend, RunSettings
    from agentgauge.toolcall.runs import load_dataset, run_model, score_predictions

    suite = _suite(fmt, mode, weights, parser) if do_score else None
    if api_key_env is not None and not os.environ.get(api_key_env):
        raise usage_error(f"--api-key-env: environment variable {api_key_env} is not set")
    config = EndpointConfig(
        base_url=_endpoint(endpoint),
        model=model,
        api_key_env=api_key_env or "OPENAI_API_KEY",
        temperature=optional_number("--temperature", temperature, float),
        seed=optional_number("--seed", seed, int),
        max_tokens=max_tokens,
    )
    data = load_dataset(dataset, fmt, answers, _turns(turns))
    data = replace(data, tasks=data.tasks[:limit]) if limit is not None else data
    settings = RunSettings(concurrency=concurrency, timeout_s=timeout, max_retries=max_retries)
    backend = HttpChatBackend(config, concurrency=concurrency)
    if not backend.has_api_key:
        err_console.print(f"no API key in ${config.api_key_env}: sending none", highlight=False)
    answered = run_model(data.tasks, backend, out, settings, resume=resume, progress=progress)
    _print_run_summary(answered)
    if suite is None:
        return
    runner = {**config.model_dump(mode="json"), **settings.model_dump(mode="json")}
    with Store(db) as store:
        run_id = score_predictions(
            data,
            out,
            suite,
            store=store,
            parser=parser,
            jobs=jobs,
            progress=progress,
            extra_config={"endpoint": backend.url, "model": model, "runner": runner},
        )
    _report(db, run_id, json_out, html_out, fail_under)


def _endpoint(url: str) -> str:
    """``--endpoint``'s check: an http(s) URL."""
    from agentgauge.http import chat_completions_url

    try:
        chat_completions_url(url)
    except ValueError as exc:
        raise usage_error(f"--endpoint: {exc}") from None
    return url


toolcall_app.command()(failures)
