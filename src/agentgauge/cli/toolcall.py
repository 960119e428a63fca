"""``agentgauge toolcall ...``: score recorded predictions, run a model, inspect failures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from agentgauge.cli._common import (
    Command,
    DbOption,
    HtmlOption,
    JsonOption,
    NameOption,
    OverwriteOption,
    TagOption,
    check_choice,
    console,
    err_console,
    optional_number,
    output_file,
    refuse_clashes,
    usage_error,
)
from agentgauge.cli.toolcall_failures import failures
from agentgauge.cli.toolcall_scoring import (
    FailUnderOpt,
    JobsOpt,
    ModeOpt,
    ParserOpt,
    ProgressOpt,
    Scoring,
    WeightsOpt,
    scoring_suite,
)
from agentgauge.toolcall.formats import TURNS

if TYPE_CHECKING:
    from agentgauge.toolcall.formats import Turns
    from agentgauge.toolcall.runner import EndpointConfig
    from agentgauge.workflows.toolcall_runs import ModelRun

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


def _turns(turns: str) -> Turns:
    check_choice("--turns", turns, TURNS)
    return cast("Turns", turns)


@toolcall_app.command(cls=Command)
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
    name: NameOption = None,
    tags: TagOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Score recorded predictions against a dataset.

    The run is stored and reported like any other.
    """
    from agentgauge.workflows.toolcall_runs import check_scorable, load_dataset

    suite = scoring_suite(fmt, mode, weights, parser)
    samples = _turns(turns)
    inputs = [dataset, predictions, *([answers] if answers else [])]
    refuse_clashes(
        {"--json": json_out, "--html": html_out}, inputs=inputs, store=db, overwrite=overwrite
    )
    if not predictions.is_file():
        raise usage_error(f"no such file: {predictions}")
    data = load_dataset(dataset, fmt, answers, samples)
    check_scorable(data, suite)
    scoring = Scoring(db, parser, jobs, progress, json_out, html_out, fail_under, name, tags)
    scoring.run(data, predictions, suite)


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


@toolcall_app.command(cls=Command)
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
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out file.")] = False,
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
    name: NameOption = None,
    tags: TagOption = None,
) -> None:
    """Send each sample to a model, then score its answers.

    The answers are written to --out as they come; --no-score stops there.
    """
    from dataclasses import replace

    from agentgauge.toolcall.runner import HttpChatBackend, RunSettings
    from agentgauge.workflows.toolcall_runs import load_dataset, run_model

    suite = scoring_suite(fmt, mode, weights, parser) if do_score else None
    if out.exists() and not (resume or overwrite):
        raise usage_error(
            f"{out} exists: --overwrite replaces it, --resume keeps its answered lines"
        )
    config = _endpoint_config(endpoint, model, api_key_env, temperature, seed, max_tokens)
    outputs = {"--out": out, "--json": json_out, "--html": html_out}
    inputs = [dataset, *([answers] if answers else [])]
    refuse_clashes(outputs, inputs=inputs, store=db, overwrite=overwrite or resume)
    data = load_dataset(dataset, fmt, answers, _turns(turns))
    data = replace(data, tasks=data.tasks[:limit]) if limit is not None else data
    settings = RunSettings(concurrency=concurrency, timeout_s=timeout, max_retries=max_retries)
    backend = HttpChatBackend(config, concurrency=concurrency)
    if not backend.has_api_key:
        err_console.print(f"no API key in ${config.api_key_env}: sending none", highlight=False)
    answered = run_model(data.tasks, backend, out, settings, resume=resume, progress=progress)
    _print_run_summary(answered)
    failed = _every_request_failed(answered)
    if suite is not None:
        runner = {**config.model_dump(mode="json"), **settings.model_dump(mode="json")}
        scoring = Scoring(db, parser, jobs, progress, json_out, html_out, fail_under, name, tags)
        extra = {"endpoint": backend.url, "model": model, "runner": runner}
        scoring.run(data, out, suite, extra, failed=failed)
    if failed:
        raise typer.Exit(1)


def _every_request_failed(run: ModelRun) -> bool:
    """Whether no sample got an answer (a wrong URL, model or key): said on the terminal; the
    run is then marked failed and the command exits 1."""
    if not run.predictions or len(run.failed) < len(run.predictions):
        return False
    err_console.print(
        "[red]every request failed:[/] the run is marked failed; check --endpoint, --model and "
        "the API key"
    )
    err_console.print(f"  first error: {run.failed[0].error}", markup=False, highlight=False)
    return True


def _endpoint_config(
    endpoint: str,
    model: str,
    api_key_env: str | None,
    temperature: str,
    seed: str,
    max_tokens: int | None,
) -> EndpointConfig:
    """The model endpoint ``run``'s options describe, once they are checked."""
    from agentgauge.http import chat_completions_url
    from agentgauge.toolcall.runner import EndpointConfig

    if api_key_env is not None and not os.environ.get(api_key_env):
        raise usage_error(f"--api-key-env: environment variable {api_key_env} is not set")
    try:
        chat_completions_url(endpoint)
    except ValueError as exc:
        raise usage_error(f"--endpoint: {exc}") from None
    return EndpointConfig(
        base_url=endpoint,
        model=model,
        api_key_env=api_key_env or "OPENAI_API_KEY",
        temperature=optional_number("--temperature", temperature, float),
        seed=optional_number("--seed", seed, int),
        max_tokens=max_tokens,
    )


toolcall_app.command(cls=Command)(failures)
