"""Tool-calling datasets and recorded predictions -> Tasks and Traces.

A dataset is read by its format's reader (:mod:`agentgauge.toolcall.formats`: ``deepfabric``,
``openai``, ``bfcl``, and the plugins'); a predictions file is read against the dataset's
tasks, each answer's tool calls read by an output parser (:mod:`agentgauge.toolcall.parsers`),
a BFCL multi-turn answer by BFCL's own reading (:mod:`agentgauge.toolcall.bfcl_multiturn`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentgauge._safe import DECODE_ERRORS, may_hold_surrogate, replace_surrogates
from agentgauge.io.jsonl import (
    ReadError,
    decode_error,
    error_message,
    field_path,
    iter_raw_lines,
    read_warning,
    surrogate_warning,
)
from agentgauge.model import JSON, Step, StepKind, Task, ToolCall, Trace, Usage
from agentgauge.toolcall.bfcl_multiturn import (
    CallInputError,
    is_multi_turn,
    named_arguments,
    parse_result,
)
from agentgauge.toolcall.formats import FORMATS, Turns
from agentgauge.toolcall.parsers import Positional, parse_tool_calls

__all__ = ["prediction_to_trace", "read_dataset", "read_predictions"]


def _taking(option: str) -> str:
    """The formats whose readers take ``option``, for messages."""
    return ", ".join(e.name for e in FORMATS.entries() if option in e.value.options)


def read_dataset(
    path: str | Path,
    format: str,
    *,
    answers: str | Path | None = None,
    turns: Turns = "all",
) -> Iterator[Task | ReadError]:
    """Stream a tool-calling dataset as Tasks.

    Args:
        path: the dataset.
        format: a registered format: ``deepfabric``, ``openai``, ``bfcl`` or a plugin's.
        answers: the file of expected calls, for a format that keeps them apart (``bfcl``).
        turns: which assistant turns of a conversation become tasks (``all`` or ``last``,
            :data:`~agentgauge.toolcall.formats.Turns`), for the formats that read
            conversations (``deepfabric``, ``openai``).

    Raises:
        UnknownNameError: for an unknown format.
        ValueError: for an answers file, or turns other than ``all``, that the format does not
            read.
    """
    info = FORMATS.get(format)
    options: dict[str, Any] = {}
    if answers is not None:
        if "answers" not in info.options:
            raise ValueError(
                f"an answers file is only read with a format that has one ({_taking('answers')}), "
                f"not {format!r}"
            )
        options["answers"] = answers
    if "turns" in info.options:
        options["turns"] = turns
    elif turns != "all":
        raise ValueError(
            f"turns are chosen for conversations only ({_taking('turns')}), not with format "
            f"{format!r}"
        )
    return info.read(path, **options)


# --------------------------------------------------------------------------- predictions


def prediction_to_trace(
    task: Task,
    result: Any,
    *,
    positional: Positional = "schema",
    parser: str = "auto",
    run_error: str | None = None,
    duration_s: float | None = None,
    usage: Usage | None = None,
) -> Trace:
    """The Trace of one recorded prediction: its calls as ``tool_call`` steps, its text answer
    as ``output``, the raw result and any parse error in ``metadata``.

    A BFCL multi-turn answer (turns of steps of calls) gives its calls in order and its last
    text as the output; an answer that cannot be read gives no call and its ``parse_error``.

    Args:
        task: the task the prediction answers.
        result: a decoded call list, raw model text, an OpenAI message or response, a BFCL
            multi-turn result; None when the model gave no answer.
        positional: how positional arguments of Python-style calls are named (see
            :func:`~agentgauge.toolcall.parsers.parse_tool_calls`).
        parser: the output parser: ``auto`` (detect the format) or a registered one.
        run_error: why the model gave no answer (a failed request, no prediction); every
            tool-calling metric then scores the sample 0.
        duration_s: the request's latency.
        usage: the request's token usage.
    """
    if is_multi_turn(task) and result is not None:
        output, steps, metadata = _multi_turn_steps(task, result)
    else:
        parsed = parse_tool_calls(result, task.tools, format=parser, positional=positional)
        output = parsed.text
        steps = [
            Step(index=i, kind=StepKind.tool_call, id=call.id, tool_call=call)
            for i, call in enumerate(parsed.calls)
        ]
        metadata = {
            "raw_output": result,
            "parse_error": parsed.error,
            "parse_format": parsed.format,
        }
    if run_error is not None:
        metadata["run_error"] = run_error
    return Trace(
        id=task.id,
        task=task,
        output=output,
        steps=steps,
        duration_s=duration_s,
        usage=usage,
        metadata=metadata,
    )


def _multi_turn_steps(task: Task, result: Any) -> tuple[str | None, list[Step], dict[str, JSON]]:
    """A BFCL multi-turn answer's output, steps (text as ``llm``, calls as ``tool_call``) and
    metadata."""
    metadata: dict[str, JSON] = {"raw_output": result, "parse_format": "bfcl_multi_turn"}
    try:
        turns = parse_result(result)
    except CallInputError as exc:
        return (
            None,
            [],
            {**metadata, "parse_error": exc.message, "parse_error_type": exc.error_type},
        )
    steps: list[Step] = []
    output = None
    for step in (step for turn in turns for step in turn):
        if isinstance(step, str):
            output = step
            steps.append(Step(index=len(steps), kind=StepKind.llm, content=step))
            continue
        for call in step:
            tool_call = ToolCall(name=call.name, arguments=named_arguments(call, task.tools))
            steps.append(Step(index=len(steps), kind=StepKind.tool_call, tool_call=tool_call))
    return output, steps, {**metadata, "parse_error": None}


def _prediction_trace(
    task: Task, data: dict[str, Any], positional: Positional, parser: str, left_out: list[str]
) -> Trace | ReadError | str:
    """The trace of one predictions line, or the field at fault; a latency or usage that
    cannot be read is left out (its field added to ``left_out``) and the answer scored."""
    latency = data.get("latency_s")
    if latency is not None and (
        isinstance(latency, bool)
        or not isinstance(latency, int | float)
        or not 0 <= latency < float("inf")
    ):
        left_out.append("latency_s")
        latency = None
    raw_usage = data.get("usage")
    try:
        usage = Usage.model_validate(raw_usage) if raw_usage is not None else None
    except ValidationError:
        left_out.append("usage")
        usage = None
    error = data.get("error")
    if "result" not in data and not error:
        return "result"
    return prediction_to_trace(
        task,
        data.get("result"),
        positional=positional,
        parser=parser,
        run_error=str(error) if error and "result" not in data else None,
        duration_s=float(latency) if latency is not None else None,
        usage=usage,
    )


def read_predictions(
    path: str | Path,
    tasks: Mapping[str, Task],
    *,
    positional: Positional = "schema",
    parser: str = "auto",
    include_missing: bool = False,
) -> Iterator[Trace | ReadError]:
    """Stream a predictions file as Traces to score.

    A line is ``{"id", "result"}`` plus, from the runner, ``latency_s`` (-> ``duration_s``),
    ``usage`` (``input_tokens``, ``output_tokens``), ``attempts``, ``finish_reason``; a line
    with ``error`` and no ``result`` (a request that failed) becomes a trace with
    ``metadata["run_error"]``, which the metrics score 0.

    Args:
        path: predictions JSONL.
        tasks: the dataset's tasks by id.
        positional: how positional arguments of Python-style calls are named.
        parser: the output parser: ``auto`` (detect the format) or a registered one.
        include_missing: after the file, yield a ``run_error = "no prediction"`` trace for
            every task the file did not answer (so that a partial file cannot raise a score).
    """
    seen: set[str] = set()
    for raw in iter_raw_lines(path):
        if isinstance(raw, ReadError):
            yield raw
            continue
        try:
            data = json.loads(raw.text)
        except DECODE_ERRORS as exc:
            yield decode_error(raw.source, raw.line, exc)
            continue
        # a lone surrogate (a model's broken answer) is read as U+FFFD: it is stored and shown
        data, replaced = replace_surrogates(data) if may_hold_surrogate(raw.text) else (data, [])
        if not isinstance(data, dict) or "id" not in data:
            yield ReadError(raw.source, raw.line, "id", "a prediction needs an 'id'")
            continue
        key = str(data["id"])
        if key not in tasks:
            yield ReadError(raw.source, raw.line, "id", f"no task with id {key!r} in the dataset")
            continue
        if key in seen:
            yield ReadError(raw.source, raw.line, "id", f"duplicate prediction for {key!r}")
            continue
        left_out: list[str] = []
        try:
            made = _prediction_trace(tasks[key], data, positional, parser, left_out)
        except ValidationError as exc:
            err = exc.errors()[0]
            made = ReadError(
                raw.source, raw.line, "result", f"{field_path(err['loc'])}: {error_message(err)}"
            )
        except DECODE_ERRORS as exc:  # a model's answer too large or too deep to use
            made = decode_error(raw.source, raw.line, exc)
        if isinstance(made, str):
            yield ReadError(raw.source, raw.line, made, _BAD_PREDICTION_FIELD[made])
            continue
        seen.add(key)
        # one warning a line (the store keeps one): a value left out, else a surrogate replaced
        if left_out:
            more = f" (and {len(left_out) - 1} more)" if len(left_out) > 1 else ""
            field = left_out[0]
            message = f"{_BAD_PREDICTION_FIELD[field]}: it is left out, the answer scored{more}"
            yield read_warning(raw.source, raw.line, field, message)
        elif replaced:
            yield surrogate_warning(raw.source, raw.line, replaced)
        yield made
    if include_missing:
        for key, task in tasks.items():
            if key not in seen:
                yield prediction_to_trace(task, None, run_error="no prediction")


_BAD_PREDICTION_FIELD = {
    "latency_s": "must be a non-negative number",
    "usage": "must be {input_tokens, output_tokens} with non-negative integers",
    "result": "a prediction needs a 'result' (or an 'error' for a failed request)",
}
