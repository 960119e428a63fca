"""Tool-calling datasets and recorded predictions -> Tasks and Traces.

Readers stream their file and turn a bad line into an :class:`~agentgauge.io.jsonl.ReadError`
naming the file, the line and the field; reading goes on.

- ``deepfabric``: DeepFabric conversations (``messages``, or ``conversations`` in its older
  layout; ``tools`` in OpenAI format, ``tool_context.executions``). Any tool-call id and extra
  keys are accepted (DeepFabric's own validator rejects ids such as ``call_0`` that its docs use).
- ``openai``: chat conversations whose assistant messages carry ``tool_calls``, with ``tools``.
- ``bfcl``: a BFCL question file and its possible-answer file, aligned by ``id``. A multi-turn
  file (``BFCL_v4_multi_turn_*``) takes its functions from the ``multi_turn_func_doc`` folder
  beside it; its tasks keep the initial state and the per-turn ground truth for the multi-turn
  checker (:mod:`agentgauge.toolcall.bfcl_multiturn`), and their expected calls are the ground
  truth's calls in order.

A conversation gives one task per assistant turn, ``<id>#<n>``: each assistant message that
calls tools or answers in text, ``n`` counting every assistant message from 1 (``turns="last"``:
only the last of them, as ``<id>``). The task's input is the conversation before that message
(earlier calls and tool results included), its expected calls the message's ``tool_calls`` (none:
the model should answer without a call), its reference answer the message's text (the
conversation's ``final_answer`` for the last turn). A DeepFabric conversation whose messages carry
no call expects ``tool_context.executions[0]`` at its first turn, as DeepFabric's own evaluator
does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from agentgauge.io.jsonl import (
    RawLine,
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
from agentgauge.model import (
    JSON,
    ExpectedCall,
    Step,
    StepKind,
    Task,
    ToolCall,
    ToolSpec,
    Trace,
    Usage,
)
from agentgauge.toolcall.bfcl_multiturn import (
    MULTI_TURN_KEY,
    CallInputError,
    ParsedCall,
    is_multi_turn,
    named_arguments,
    parse_call,
    parse_result,
)
from agentgauge.toolcall.parsers import Positional, parse_tool_calls

__all__ = [
    "DatasetFormat",
    "Turns",
    "prediction_to_trace",
    "read_bfcl",
    "read_conversations",
    "read_dataset",
    "read_predictions",
]

DatasetFormat = Literal["deepfabric", "openai", "bfcl"]
Turns = Literal["all", "last"]

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
    # DeepFabric's older layout names the messages "conversations"
    messages: list[_Message] = Field(
        min_length=1, validation_alias=AliasChoices("messages", "conversations")
    )
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


class _MultiTurnQuestion(_Loose):
    id: str
    question: list[list[dict[str, JSON]]]
    initial_config: dict[str, JSON] = Field(default_factory=dict)
    involved_classes: list[str] = Field(min_length=1)
    path: list[str] = Field(default_factory=list)
    missed_function: dict[str, list[str]] = Field(default_factory=dict)


class _MultiTurnAnswer(_Loose):
    id: str
    ground_truth: list[list[str]]


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


def _prompt_message(message: _Message) -> dict[str, JSON]:
    """A message as sent again in a later turn's prompt (tool-call arguments as JSON text)."""
    sent: dict[str, JSON] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        sent["tool_calls"] = [
            {
                **({"id": call.id} if call.id is not None else {}),
                "type": "function",
                "function": {
                    "name": call.function.name,
                    "arguments": call.function.arguments
                    if isinstance(call.function.arguments, str)
                    else json.dumps(call.function.arguments or {}),
                },
            }
            for call in message.tool_calls
        ]
    for key in ("tool_call_id", "name"):
        value = (message.model_extra or {}).get(key)
        if isinstance(value, str):
            sent[key] = value
    return sent


def _turn_calls(conv: _Conversation, index: int) -> list[ExpectedCall]:
    calls = (conv.messages[index].tool_calls or []) if index < len(conv.messages) else []
    return [
        _expected(
            call.function.name,
            _decoded_arguments(
                call.function.arguments, f"messages[{index}].tool_calls[{j}].function.arguments"
            ),
        )
        for j, call in enumerate(calls)
    ]


def _conversation_tasks(
    conv: _Conversation, fmt: DatasetFormat, line: int, turns: Turns
) -> list[Task]:
    """One task per assistant message that calls tools or answers (numbered among all the
    assistant messages from 1); only the last one for ``turns="last"``."""
    base_id = str(conv.id) if conv.id is not None else f"line-{line}"
    messages = conv.messages
    assistant = [i for i, m in enumerate(messages) if m.role == "assistant"]
    chosen = [
        (n, i)
        for n, i in enumerate(assistant, start=1)
        if messages[i].tool_calls or message_text(messages[i].content)
    ]
    if not chosen:  # nothing to score yet: the assistant's first turn
        chosen = [(1, assistant[0] if assistant else len(messages))]
    executions = conv.tool_context.executions if conv.tool_context else []
    fallback: list[ExpectedCall] = []
    if fmt == "deepfabric" and executions and not any(m.tool_calls for m in messages):
        # DeepFabric's own evaluator expects the first execution at the first turn
        first = executions[0]
        field = "tool_context.executions[0].arguments"
        fallback = [_expected(first.function_name, _decoded_arguments(first.arguments, field))]
    tools = [_tool_spec(t, f"tools[{i}]") for i, t in enumerate(conv.tools or [])]
    metadata: dict[str, JSON] = {"source": fmt, "conversation_id": base_id}
    if conv.metadata:
        metadata["dataset_metadata"] = conv.metadata
    tasks = []
    for n, i in chosen[-1:] if turns == "last" else chosen:
        expected = _turn_calls(conv, i) or (fallback if (n, i) == chosen[0] else [])
        if (n, i) == chosen[-1] and conv.final_answer:
            reference = conv.final_answer
        elif expected or i == len(messages):
            reference = None
        else:
            reference = message_text(messages[i].content)
        user = next(
            (message_text(m.content) for m in reversed(messages[:i]) if m.role == "user"), None
        )
        tasks.append(
            Task(
                id=f"{base_id}#{n}" if turns == "all" else base_id,
                input=[_prompt_message(m) for m in messages[:i]],
                description=user or "",
                expected_output=reference,
                tools=tools,
                expected_calls=expected,
                reference_trajectory=[e.function_name for e in executions] or None,
                metadata={**metadata, "turn": n},
            )
        )
    return tasks


def read_conversations(
    path: str | Path, fmt: DatasetFormat, turns: Turns = "all"
) -> Iterator[Task | ReadError]:
    """Stream DeepFabric or OpenAI-format conversations as Tasks, one per assistant turn.

    Args:
        path: a JSONL file (optionally ``.gz``), one conversation per line.
        fmt: ``deepfabric`` or ``openai``.
        turns: ``all``: a task ``<id>#<n>`` per assistant message that calls tools or answers,
            ``n`` counting every assistant message from 1; ``last``: only the last of them,
            as ``<id>``.
    """
    for raw in iter_raw_lines(path):
        conv = validate_line(_Conversation, raw)
        if isinstance(conv, ReadError):
            yield conv
            continue
        try:
            yield from _conversation_tasks(conv, fmt, raw.line, turns)
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


def _answer_calls(answer: _BfclAnswer) -> list[ExpectedCall]:
    calls = []
    for j, entry in enumerate(answer.ground_truth):
        if len(entry) != 1:
            raise _LineError(f"ground_truth[{j}]", "expected one function")
        name, params = next(iter(entry.items()))
        calls.append(ExpectedCall(name=name, arguments=params))
    return calls


def _multi_turn_answer(answer: _MultiTurnAnswer) -> list[list[ParsedCall]]:
    turns = []
    for t, turn in enumerate(answer.ground_truth):
        calls = []
        for j, text in enumerate(turn):
            try:
                calls += parse_call(text)
            except CallInputError as exc:
                raise _LineError(f"ground_truth[{t}][{j}]", exc.message) from None
        turns.append(calls)
    return turns


_Answer = list[ExpectedCall] | tuple[list[list[str]], list[list[ParsedCall]]]


def _read_answers(
    path: Path, multi_turn: bool
) -> tuple[dict[str, tuple[int, _Answer]], list[ReadError]]:
    """Possible answers by id, with their line numbers."""
    answers: dict[str, tuple[int, _Answer]] = {}
    errors: list[ReadError] = []
    for raw in iter_raw_lines(path):
        answer: _MultiTurnAnswer | _BfclAnswer | ReadError = (
            validate_line(_MultiTurnAnswer, raw) if multi_turn else validate_line(_BfclAnswer, raw)
        )
        if isinstance(answer, ReadError):
            errors.append(answer)
            continue
        if answer.id in answers:
            errors.append(ReadError(raw.source, raw.line, "id", f"duplicate id {answer.id!r}"))
            continue
        try:
            if isinstance(answer, _MultiTurnAnswer):
                answers[answer.id] = (raw.line, (answer.ground_truth, _multi_turn_answer(answer)))
            else:
                answers[answer.id] = (raw.line, _answer_calls(answer))
        except _LineError as exc:
            errors.append(ReadError(raw.source, raw.line, exc.field, exc.message))
    return answers, errors


# BFCL's class -> its file in multi_turn_func_doc/ (bfcl_eval's MULTI_TURN_FUNC_DOC_FILE_MAPPING),
# so that multi-turn questions are read without bfcl-eval installed.
_FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
    "WebSearchAPI": "web_search.json",
    "MemoryAPI_kv": "memory_kv.json",
    "MemoryAPI_vector": "memory_vector.json",
    "MemoryAPI_rec_sum": "memory_rec_sum.json",
}


def _func_docs(folder: Path, name: str) -> list[ToolSpec]:
    """The functions of BFCL class ``name`` from ``multi_turn_func_doc/``."""
    file = _FUNC_DOC_FILES.get(name)
    if file is None:
        raise _LineError("involved_classes", f"unknown BFCL class {name!r}")
    path = folder / file
    if not path.is_file():
        raise _LineError("involved_classes", f"the function docs of {name} are missing: {path}")
    docs: list[ToolSpec] = []
    for raw in iter_raw_lines(path):
        doc = validate_line(ChatFunction, raw)
        if isinstance(doc, ReadError):
            raise _LineError("involved_classes", f"function docs of {name}: {doc}")
        docs.append(
            ToolSpec(name=doc.name, description=doc.description, parameters=doc.parameters or {})
        )
    return docs


def _multi_turn_task(
    question: _MultiTurnQuestion,
    answer: tuple[list[list[str]], list[list[ParsedCall]]],
    category: str,
    docs: Callable[[str], list[ToolSpec]],
) -> Task:
    tools = [tool for name in question.involved_classes for tool in docs(name)]
    ground_truth, calls = answer
    user = next(
        (m.get("content") for turn in question.question for m in turn if m.get("role") == "user"),
        None,
    )
    return Task(
        id=question.id,
        input=question.question,
        description=user if isinstance(user, str) else "",
        category=category,
        tools=tools,
        expected_calls=[
            _expected(c.name, named_arguments(c, tools)) for turn in calls for c in turn
        ],
        metadata={
            "source": "bfcl",
            MULTI_TURN_KEY: {
                "initial_config": question.initial_config,
                "involved_classes": question.involved_classes,
                "ground_truth": ground_truth,
                "missed_function": question.missed_function,
                "path": question.path,
            },
        },
    )


def _is_multi_turn_file(path: Path) -> bool:
    """BFCL's own test: ``multi_turn`` in the category (from the file name, else the first id)."""
    match = _BFCL_FILE.match(path.name)
    if match:
        return "multi_turn" in match.group("category")
    first = next(iter_raw_lines(path), None)
    if not isinstance(first, RawLine):
        return False
    try:
        data = json.loads(first.text)
    except json.JSONDecodeError:
        return False
    key = data.get("id") if isinstance(data, dict) else None
    return isinstance(key, str) and "multi_turn" in key.rsplit("_", 1)[0]


def read_bfcl(path: str | Path, answers: str | Path | None = None) -> Iterator[Task | ReadError]:
    """Stream a BFCL question file as Tasks, expected calls from its possible-answer file.

    Args:
        path: ``BFCL_v4_<category>.json`` (JSON Lines despite the name).
        answers: ``possible_answer/BFCL_v4_<category>.json``; questions and answers are paired
            by ``id``. Without it, only irrelevance categories can be read (no call expected).
            A multi-turn file reads its functions from ``multi_turn_func_doc/`` beside it.
    """
    question_path = Path(path)
    multi_turn = _is_multi_turn_file(question_path)
    known: dict[str, tuple[int, _Answer]] | None = None
    if answers is not None:
        known, errors = _read_answers(Path(answers), multi_turn)
        yield from errors
    docs = cache(partial(_func_docs, question_path.parent / "multi_turn_func_doc"))
    seen: set[str] = set()
    category: str | None = None
    for raw in iter_raw_lines(question_path):
        question: _MultiTurnQuestion | _BfclQuestion | ReadError = (
            validate_line(_MultiTurnQuestion, raw)
            if multi_turn
            else validate_line(_BfclQuestion, raw)
        )
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
        if isinstance(question, _MultiTurnQuestion) and isinstance(expected, tuple):
            try:
                yield _multi_turn_task(question, expected, category, docs)
            except _LineError as exc:
                yield ReadError(raw.source, raw.line, exc.field, exc.message)
            continue
        assert isinstance(question, _BfclQuestion) and isinstance(expected, list)
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
    path: str | Path,
    format: DatasetFormat,
    *,
    answers: str | Path | None = None,
    turns: Turns = "all",
) -> Iterator[Task | ReadError]:
    """Stream a tool-calling dataset as Tasks.

    Args:
        path: the dataset (JSONL).
        format: ``deepfabric``, ``openai`` or ``bfcl``.
        answers: BFCL's possible-answer file (``bfcl`` only).
        turns: which assistant turns of a conversation become tasks, ``all`` or ``last``
            (``deepfabric`` and ``openai``; see :func:`read_conversations`).
    """
    if format == "bfcl":
        if turns != "all":
            raise ValueError("turns are chosen for conversations only, not with format 'bfcl'")
        return read_bfcl(path, answers)
    if answers is not None:
        raise ValueError(f"an answers file is only read with format 'bfcl', not {format!r}")
    return read_conversations(path, format, turns)


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

    A BFCL multi-turn answer (turns of steps of calls) gives its calls in order and its last
    text as the output; an answer that cannot be read gives no call and its ``parse_error``.

    Args:
        task: the task the prediction answers.
        result: a decoded call list, raw model text, an OpenAI message or response, a BFCL
            multi-turn result; None when the model gave no answer.
        positional: how positional arguments of Python-style calls are named (see
            :func:`~agentgauge.toolcall.parsers.parse_tool_calls`).
        run_error: why the model gave no answer (a failed request, no prediction); every
            tool-calling metric then scores the sample 0.
        duration_s: the request's latency.
        usage: the request's token usage.
    """
    if is_multi_turn(task) and result is not None:
        output, steps, metadata = _multi_turn_steps(task, result)
    else:
        parsed = parse_tool_calls(result, task.tools, positional=positional)
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
