"""BFCL: a question file and its possible-answer file, aligned by ``id``.

A multi-turn file (``BFCL_v4_multi_turn_*``) takes its functions from the ``multi_turn_func_doc``
folder beside it; its tasks keep the initial state and the per-turn ground truth for the
multi-turn checker (:mod:`agentgauge.toolcall.bfcl_multiturn`), and their expected calls are the
ground truth's calls in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import cache, partial
from pathlib import Path

from pydantic import Field

from agentgauge._safe import DECODE_ERRORS
from agentgauge.io.jsonl import RawLine, ReadError, iter_raw_lines, validate_line
from agentgauge.io.openai_chat import ChatFunction, Loose
from agentgauge.model import JSON, ExpectedCall, Task, ToolSpec
from agentgauge.toolcall.bfcl_multiturn import (
    MULTI_TURN_KEY,
    CallInputError,
    ParsedCall,
    named_arguments,
    parse_call,
)
from agentgauge.toolcall.formats import dataset_format
from agentgauge.toolcall.formats._conversations import LineError, expected_call

__all__ = ["read_bfcl"]

_BFCL_FILE = re.compile(r"^BFCL_v\d+_(?P<category>.+)\.json$")


class _BfclQuestion(Loose):
    id: str
    question: list[list[dict[str, JSON]]]
    function: list[ChatFunction]


class _BfclAnswer(Loose):
    id: str
    ground_truth: list[dict[str, dict[str, list[JSON]]]]


class _MultiTurnQuestion(Loose):
    id: str
    question: list[list[dict[str, JSON]]]
    initial_config: dict[str, JSON] = Field(default_factory=dict)
    involved_classes: list[str] = Field(min_length=1)
    path: list[str] = Field(default_factory=list)
    missed_function: dict[str, list[str]] = Field(default_factory=dict)


class _MultiTurnAnswer(Loose):
    id: str
    ground_truth: list[list[str]]


def _bfcl_category(path: Path, first_id: str) -> str:
    match = _BFCL_FILE.match(path.name)
    if match:
        return match.group("category")
    return first_id.rsplit("_", 1)[0]


def _answer_calls(answer: _BfclAnswer) -> list[ExpectedCall]:
    calls = []
    for j, entry in enumerate(answer.ground_truth):
        if len(entry) != 1:
            raise LineError(f"ground_truth[{j}]", "expected one function")
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
                raise LineError(f"ground_truth[{t}][{j}]", exc.message) from None
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
        except LineError as exc:
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
        raise LineError("involved_classes", f"unknown BFCL class {name!r}")
    path = folder / file
    if not path.is_file():
        raise LineError("involved_classes", f"the function docs of {name} are missing: {path}")
    docs: list[ToolSpec] = []
    for raw in iter_raw_lines(path):
        doc = validate_line(ChatFunction, raw)
        if isinstance(doc, ReadError):
            raise LineError("involved_classes", f"function docs of {name}: {doc}")
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
            expected_call(c.name, named_arguments(c, tools)) for turn in calls for c in turn
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
    except DECODE_ERRORS:
        return False
    key = data.get("id") if isinstance(data, dict) else None
    return isinstance(key, str) and "multi_turn" in key.rsplit("_", 1)[0]


@dataset_format(
    "bfcl", value_mode="bfcl", description="BFCL question files (--answers: possible answers)"
)
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
            except LineError as exc:
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
