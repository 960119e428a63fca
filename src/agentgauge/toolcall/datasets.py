"""Tool-calling datasets and recorded predictions -> Tasks and Traces.

Readers stream their file and turn a bad line into an :class:`~agentgauge.io.jsonl.ReadError`
naming the file, the line and the field; reading goes on.

- ``deepfabric``: DeepFabric conversations (``messages``, ``tools`` in OpenAI format,
  ``tool_context.executions``). Any tool-call id and extra keys are accepted (DeepFabric's own
  validator rejects ids such as ``call_0`` that its docs use).
- ``openai``: chat conversations whose assistant messages carry ``tool_calls``, with ``tools``.
- ``bfcl``: a BFCL question file and its possible-answer file, aligned by ``id``.

For the conversation formats the task's input is the conversation up to its first assistant
message, and the expected calls are that message's ``tool_calls`` (none: the model should not
call a tool); DeepFabric samples whose messages carry no call fall back to
``tool_context.executions[0]``, as DeepFabric's own evaluator does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgauge.io.jsonl import (
    ReadError,
    error_message,
    field_path,
    invalid_json,
    iter_raw_lines,
    validate_line,
    validation_read_error,
)
from agentgauge.io.openai_chat import (
    ChatFunction,
    ChatTool,
    decode_arguments,
    message_text,
    tool_spec,
)
from agentgauge.model import JSON, ExpectedCall, Step, StepKind, Task, ToolSpec, Trace, Usage
from agentgauge.toolcall.parsers import Positional, parse_tool_calls

__all__ = [
    "DatasetFormat",
    "prediction_to_trace",
    "read_bfcl",
    "read_conversations",
    "read_dataset",
    "read_predictions",
]

DatasetFormat = Literal["deepfabric", "openai", "bfcl"]

_BFCL_FILE = re.compile(r"^BFCL_v\d+_(?P<category>.+)\.json$")


class _LineError(Exception):
    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


# --------------------------------------------------------------------------- input shapes


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Function(_Loose):
    name: str
    arguments: str | dict[str, JSON] | None = None


class _MessageToolCall(_Loose):
    id: str | None = None
    function: _Function


class _Message(_Loose):
    role: str
    content: JSON = None
    tool_calls: list[_MessageToolCall] | None = None


class _Execution(_Loose):
    function_name: str
    arguments: str | dict[str, JSON] | None = None


class _ToolContext(_Loose):
    executions: list[_Execution] = Field(default_factory=list)


class _Conversation(_Loose):
    id: str | int | None = None
    messages: list[_Message] = Field(min_length=1)
    tools: list[ChatTool] | None = None
    tool_context: _ToolContext | None = None
    final_answer: str | None = None
    metadata: dict[str, JSON] | None = None


class _BfclQuestion(_Loose):
    id: str
    question: list[list[dict[str, JSON]]]
    function: list[ChatFunction]


class _BfclAnswer(_Loose):
    id: str
    ground_truth: list[dict[str, dict[str, list[JSON]]]]


# --------------------------------------------------------------------------- helpers


def _decoded_arguments(raw: str | dict[str, JSON] | None, field: str) -> dict[str, JSON]:
    try:
        return decode_arguments(raw)
    except ValueError as exc:
        raise _LineError(field, str(exc)) from None


def _expected(name: str, arguments: Mapping[str, JSON]) -> ExpectedCall:
    return ExpectedCall(name=name, arguments={k: [v] for k, v in arguments.items()})


def _tool_spec(tool: ChatTool, field: str) -> ToolSpec:
    try:
        return tool_spec(tool)
    except ValueError as exc:
        raise _LineError(field, str(exc)) from None


# --------------------------------------------------------------------------- conversations


def _conversation_task(conv: _Conversation, fmt: DatasetFormat, line: int) -> Task:
    first_assistant = next(
        (i for i, m in enumerate(conv.messages) if m.role == "assistant"), len(conv.messages)
    )
    prompt = [{"role": m.role, "content": m.content} for m in conv.messages[:first_assistant]]
    expected: list[ExpectedCall] = []
    if first_assistant < len(conv.messages):
        calls = conv.messages[first_assistant].tool_calls or []
        for j, call in enumerate(calls):
            field = f"messages[{first_assistant}].tool_calls[{j}].function.arguments"
            expected.append(
                _expected(call.function.name, _decoded_arguments(call.function.arguments, field))
            )
    executions = conv.tool_context.executions if conv.tool_context else []
    if fmt == "deepfabric" and not expected and executions:
        field = "tool_context.executions[0].arguments"
        first = executions[0]
        expected = [_expected(first.function_name, _decoded_arguments(first.arguments, field))]
    answers = [
        message_text(m.content) for m in conv.messages[first_assistant:] if m.role == "assistant"
    ]
    reference = conv.final_answer or next((a for a in reversed(answers) if a), None)
    user = next((message_text(m.content) for m in conv.messages if m.role == "user"), None)
    metadata: dict[str, JSON] = {"source": fmt}
    if conv.metadata:
        metadata["dataset_metadata"] = conv.metadata
    return Task(
        id=str(conv.id) if conv.id is not None else f"line-{line}",
        input=prompt,
        description=user or "",
        expected_output=reference,
        tools=[_tool_spec(t, f"tools[{i}]") for i, t in enumerate(conv.tools or [])],
        expected_calls=expected,
        reference_trajectory=[e.function_name for e in executions] or None,
        metadata=metadata,
    )


def read_conversations(path: str | Path, fmt: DatasetFormat) -> Iterator[Task | ReadError]:
    """Stream DeepFabric or OpenAI-format conversations as Tasks.

    Args:
        path: a JSONL file (optionally ``.gz``), one conversation per line.
        fmt: ``deepfabric`` or ``openai``.
    """
    for raw in iter_raw_lines(path):
        conv = validate_line(_Conversation, raw)
        if isinstance(conv, ReadError):
            yield conv
            continue
        try:
            yield _conversation_task(conv, fmt, raw.line)
        except _LineError as exc:
            yield ReadError(raw.source, raw.line, exc.field, exc.message)
        except ValidationError as exc:
            yield validation_read_error(raw.source, raw.line, exc)


# --------------------------------------------------------------------------- BFCL


def _bfcl_category(path: Path, first_id: str) -> str:
    match = _BFCL_FILE.match(path.name)
    if match:
        return match.group("category")
    return first_id.rsplit("_", 1)[0]


def _read_answers(
    path: Path,
) -> tuple[dict[str, tuple[int, list[ExpectedCall]]], list[ReadError]]:
    """Possible answers by id, with their line numbers."""
    answers: dict[str, tuple[int, list[ExpectedCall]]] = {}
    errors: list[ReadError] = []
    for raw in iter_raw_lines(path):
        answer = validate_line(_BfclAnswer, raw)
        if isinstance(answer, ReadError):
            errors.append(answer)
            continue
        if answer.id in answers:
            errors.append(ReadError(raw.source, raw.line, "id", f"duplicate id {answer.id!r}"))
            continue
        calls = []
        for j, entry in enumerate(answer.ground_truth):
            if len(entry) != 1:
                errors.append(
                    ReadError(raw.source, raw.line, f"ground_truth[{j}]", "expected one function")
                )
                break
            name, params = next(iter(entry.items()))
            calls.append(ExpectedCall(name=name, arguments=params))
        else:
            answers[answer.id] = (raw.line, calls)
    return answers, errors


def read_bfcl(path: str | Path, answers: str | Path | None = None) -> Iterator[Task | ReadError]:
    """Stream a BFCL question file as Tasks, expected calls from its possible-answer file.

    Args:
        path: ``BFCL_v4_<category>.json`` (JSON Lines despite the name).
        answers: ``possible_answer/BFCL_v4_<category>.json``; questions and answers are paired
            by ``id``. Without it, only irrelevance categories can be read (no call expected).
    """
    question_path = Path(path)
    known: dict[str, tuple[int, list[ExpectedCall]]] | None = None
    if answers is not None:
        known, errors = _read_answers(Path(answers))
        yield from errors
    seen: set[str] = set()
    category: str | None = None
    for raw in iter_raw_lines(question_path):
        question = validate_line(_BfclQuestion, raw)
        if isinstance(question, ReadError):
            yield question
            continue
        category = category or _bfcl_category(question_path, question.id)
        if question.id in seen:
            yield ReadError(raw.source, raw.line, "id", f"duplicate id {question.id!r}")
            continue
        seen.add(question.id)
        if known is not None:
            found = known.pop(question.id, None)
            if found is None:
                yield ReadError(
                    raw.source, raw.line, "id", f"no possible answer with id {question.id!r}"
                )
                continue
            expected = found[1]
        elif "irrelevance" in category:
            expected = []
        else:
            yield ReadError(
                raw.source, raw.line, None, f"category {category!r} needs its possible-answer file"
            )
            continue
        messages = [m for turn in question.question for m in turn]
        user = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        yield Task(
            id=question.id,
            input=messages,
            description=user if isinstance(user, str) else "",
            category=category,
            tools=[
                ToolSpec(name=f.name, description=f.description, parameters=f.parameters or {})
                for f in question.function
            ],
            expected_calls=expected,
            metadata={"source": "bfcl"},
        )
    if known and answers is not None:
        for orphan, (line, _) in known.items():
            yield ReadError(str(answers), line, "id", f"possible answer {orphan!r} has no question")


def read_dataset(
    path: str | Path, format: DatasetFormat, *, answers: str | Path | None = None
) -> Iterator[Task | ReadError]:
    """Stream a tool-calling dataset as Tasks.

    Args:
        path: the dataset (JSONL).
        format: ``deepfabric``, ``openai`` or ``bfcl``.
        answers: BFCL's possible-answer file (``bfcl`` only).
    """
    if format == "bfcl":
        return read_bfcl(path, answers)
    if answers is not None:
        raise ValueError(f"an answers file is only read with format 'bfcl', not {format!r}")
    return read_conversations(path, format)


# --------------------------------------------------------------------------- predictions


def prediction_to_trace(
    task: Task,
    result: Any,
    *,
    positional: Positional = "schema",
    run_error: str | None = None,
    duration_s: float | None = None,
    usage: Usage | None = None,
) -> Trace:
    """The Trace of one recorded prediction: its calls as ``tool_call`` steps, its text answer
    as ``output``, the raw result and any parse error in ``metadata``.

    Args:
        task: the task the prediction answers.
        result: a decoded call list, raw model text, an OpenAI message or response; None when
            the model gave no answer.
        positional: how positional arguments of Python-style calls are named (see
            :func:`~agentgauge.toolcall.parsers.parse_tool_calls`).
        run_error: why the model gave no answer (a failed request, no prediction); every
            tool-calling metric then scores the sample 0.
        duration_s: the request's latency.
        usage: the request's token usage.
    """
    parsed = parse_tool_calls(result, task.tools, positional=positional)
    steps = [
        Step(index=i, kind=StepKind.tool_call, id=call.id, tool_call=call)
        for i, call in enumerate(parsed.calls)
    ]
    metadata: dict[str, JSON] = {
        "raw_output": result,
        "parse_error": parsed.error,
        "parse_format": parsed.format,
    }
    if run_error is not None:
        metadata["run_error"] = run_error
    return Trace(
        id=task.id,
        task=task,
        output=parsed.text,
        steps=steps,
        duration_s=duration_s,
        usage=usage,
        metadata=metadata,
    )


def _prediction_trace(
    task: Task, data: dict[str, Any], positional: Positional
) -> Trace | ReadError | str:
    """The trace of one predictions line, or the field at fault."""
    latency = data.get("latency_s")
    if latency is not None and (
        isinstance(latency, bool) or not isinstance(latency, int | float) or latency < 0
    ):
        return "latency_s"
    raw_usage = data.get("usage")
    try:
        usage = Usage.model_validate(raw_usage) if raw_usage is not None else None
    except ValidationError:
        return "usage"
    error = data.get("error")
    if "result" not in data and not error:
        return "result"
    return prediction_to_trace(
        task,
        data.get("result"),
        positional=positional,
        run_error=str(error) if error and "result" not in data else None,
        duration_s=float(latency) if latency is not None else None,
        usage=usage,
    )


def read_predictions(
    path: str | Path,
    tasks: Mapping[str, Task],
    *,
    positional: Positional = "schema",
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
        except json.JSONDecodeError as exc:
            yield invalid_json(raw.source, raw.line, exc)
            continue
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
        try:
            made = _prediction_trace(tasks[key], data, positional)
        except ValidationError as exc:
            err = exc.errors()[0]
            made = ReadError(
                raw.source, raw.line, "result", f"{field_path(err['loc'])}: {error_message(err)}"
            )
        if isinstance(made, str):
            yield ReadError(raw.source, raw.line, made, _BAD_PREDICTION_FIELD[made])
            continue
        seen.add(key)
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
