"""The openai-chat importer: steps, task, reference trajectory and located errors; and
``agentgauge evaluate --format openai-chat`` with the trajectory metrics, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io import openai_chat
from agentgauge.io.importers import get_importer
from agentgauge.io.jsonl import ReadError
from agentgauge.io.openai_chat import read_openai_chat
from agentgauge.model import ReferenceStep, StepKind, ToolCall, Trace
from agentgauge.store import Store

runner = CliRunner()

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}

CHAT = {
    "id": "chat-1",
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in SF and Paris?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "SF"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_b", "content": "12C"},
        {"role": "tool", "tool_call_id": "call_a", "content": "20C"},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": [{"type": "text", "text": "SF 20C, Paris 12C."}]},
    ],
    "tools": [WEATHER_TOOL],
    "expected_messages": [
        {"role": "user", "content": "Weather in SF and Paris?"},
        {
            "role": "ai",
            "content": "",
            "tool_calls": [
                {"name": "get_weather", "args": {"city": "SF"}, "id": "r1"},
                {"name": "get_weather", "args": {"city": "Paris"}, "id": "r2"},
            ],
        },
        {"role": "tool", "tool_call_id": "r1", "content": "20C"},
        {"role": "tool", "tool_call_id": "r2", "content": "12C"},
        {"role": "assistant", "content": "SF is 20C and Paris 12C."},
    ],
    "metadata": {"model": "m1"},
}


def _write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "chats.jsonl"
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def _read(tmp_path: Path, *lines: Any) -> list[Trace | ReadError]:
    return list(read_openai_chat(_write(tmp_path, *lines)))


def test_messages_become_steps(tmp_path: Path) -> None:
    [trace] = _read(tmp_path, CHAT)
    assert isinstance(trace, Trace)
    got = [(s.index, s.kind, s.id, s.agent, s.parent_id, s.content, s.result) for s in trace.steps]
    assert got == [
        (0, StepKind.message, None, "system", None, "You are helpful.", None),
        (1, StepKind.message, None, "user", None, "Weather in SF and Paris?", None),
        (2, StepKind.llm, "message-2", None, None, "Let me check.", None),
        (3, StepKind.tool_call, "call_a", None, "message-2", None, None),
        (4, StepKind.tool_call, "call_b", None, "message-2", None, None),
        (5, StepKind.tool_result, None, None, "call_b", None, "12C"),
        (6, StepKind.tool_result, None, None, "call_a", None, "20C"),
        # an empty assistant message is still a step
        (7, StepKind.llm, "message-5", None, None, None, None),
        (8, StepKind.llm, "message-6", None, None, "SF 20C, Paris 12C.", None),
    ]
    assert trace.tool_calls == [
        ToolCall(id="call_a", name="get_weather", arguments={"city": "SF"}),
        ToolCall(id="call_b", name="get_weather", arguments={"city": "Paris"}),
    ]
    assert trace.output == "SF 20C, Paris 12C."
    assert trace.metadata == {"model": "m1"}
    # the record is a native trace: it round-trips through the native format
    assert Trace.model_validate_json(trace.model_dump_json()) == trace


def test_expected_messages_become_the_reference(tmp_path: Path) -> None:
    [trace] = _read(tmp_path, CHAT)
    assert isinstance(trace, Trace)
    task = trace.task
    assert task.id == "chat-1"
    assert task.input == [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in SF and Paris?"},
    ]
    assert task.description == "Weather in SF and Paris?"
    assert [t.name for t in task.tools] == ["get_weather"]
    assert task.tools[0].parameters["properties"] == {"city": {"type": "string"}}
    assert task.reference_trajectory == [
        ReferenceStep(role="user", content="Weather in SF and Paris?"),
        ReferenceStep(
            role="assistant",
            tool_calls=[
                ToolCall(id="r1", name="get_weather", arguments={"city": "SF"}),
                ToolCall(id="r2", name="get_weather", arguments={"city": "Paris"}),
            ],
        ),
        ReferenceStep(role="tool", content="20C", tool_call_id="r1"),
        ReferenceStep(role="tool", content="12C", tool_call_id="r2"),
        ReferenceStep(role="assistant", content="SF is 20C and Paris 12C."),
    ]
    assert [(c.name, c.arguments) for c in task.expected_calls or []] == [
        ("get_weather", {"city": ["SF"]}),
        ("get_weather", {"city": ["Paris"]}),
    ]
    assert task.expected_output == "SF is 20C and Paris 12C."
    assert task.reference_tool_names() == ["get_weather", "get_weather"]


def test_no_reference_and_an_empty_one(tmp_path: Path) -> None:
    messages = [{"role": "human", "content": "hi"}, {"type": "ai", "content": "hello"}]
    absent, empty = _read(
        tmp_path, {"messages": messages}, {"messages": messages, "expected_messages": []}
    )
    assert isinstance(absent, Trace) and isinstance(empty, Trace)
    assert absent.id == "line-1" and empty.id == "line-2"
    assert absent.task.reference_trajectory is None and absent.task.expected_calls is None
    assert empty.task.reference_trajectory == [] and empty.task.expected_calls == []
    assert [s.kind for s in absent.steps] == [StepKind.message, StepKind.llm]
    assert absent.output == "hello"


def test_tool_results_without_ids_answer_the_oldest_call(tmp_path: Path) -> None:
    chat = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"function": {"name": "a", "arguments": ""}},
                    {"function": {"name": "b", "arguments": "{bad json"}},
                ],
            },
            {"role": "tool", "content": "A"},
            {"role": "tool", "content": "B"},
        ]
    }
    [trace] = _read(tmp_path, chat)
    assert isinstance(trace, Trace)
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert [s.id for s in calls] == ["message-1:call0", "message-1:call1"]
    assert [s.parent_id for s in results] == ["message-1:call0", "message-1:call1"]
    # the model's malformed arguments are kept, so the call is scored as made
    assert calls[1].tool_call is not None
    assert calls[1].tool_call.arguments == {"_raw": "{bad json"}


def test_bad_lines_are_located_errors(tmp_path: Path) -> None:
    errors = _read(
        tmp_path,
        "not json",
        {"id": "x"},
        {"messages": []},
        {"messages": [{"role": "wizard", "content": "hi"}]},
        {"messages": [{"content": "hi"}]},
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "1"}]}]},
        {
            "messages": [{"role": "user", "content": "q"}],
            "expected_messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}],
                }
            ],
        },
        {"messages": [{"role": "user", "content": "q"}], "tools": [{"description": "nameless"}]},
        CHAT,
    )
    assert isinstance(errors[-1], Trace)
    located = [(e.line, e.field, e.message) for e in errors[:-1] if isinstance(e, ReadError)]
    assert located == [
        (1, None, "invalid JSON: Expecting value at column 1"),
        (2, "messages", "Field required"),
        (3, "messages", "List should have at least 1 item after validation, not 0"),
        (
            4,
            "messages[0].role",
            "unknown role 'wizard'; use one of system, developer, user, human, assistant, ai, tool",
        ),
        (5, "messages[0].role", "a message needs a 'role'"),
        (6, "messages[0].tool_calls[0]", "a tool call needs function.name (or name)"),
        (
            7,
            "expected_messages[0].tool_calls[0].function.arguments",
            "arguments must be a JSON object, got list",
        ),
        (8, "tools[0]", "a tool needs function.name (or name)"),
    ]


def _same_records(made: Any, validated: Any) -> None:
    """Two values equal record for record: the same fields in the same order, the same fields
    given, nothing extra."""
    assert type(made) is type(validated)
    if isinstance(made, BaseModel):
        assert list(made.__dict__) == list(validated.__dict__)
        assert made.model_fields_set == validated.model_fields_set
        assert made.__pydantic_extra__ == validated.__pydantic_extra__ is None
        for name, value in made.__dict__.items():
            _same_records(value, validated.__dict__[name])
    elif isinstance(made, list):
        assert len(made) == len(validated)
        for a, b in zip(made, validated, strict=True):
            _same_records(a, b)
    elif isinstance(made, dict):
        assert list(made) == list(validated)
        for key, value in made.items():
            _same_records(value, validated[key])
    else:
        assert made == validated


def test_a_chat_is_read_into_the_records_validation_makes(tmp_path: Path) -> None:
    # the reader builds a chat's records from values its parser validated, without
    # validating them again: they are exactly the records validation makes
    chat = {**CHAT, "tools": [WEATHER_TOOL, {"name": "flat", "parameters": {"type": "object"}}]}
    [trace] = _read(tmp_path, chat)
    validated = openai_chat._trace(openai_chat._Chat.model_validate(chat), 1)
    _same_records(trace, validated)
    assert trace == Trace.model_validate_json(trace.model_dump_json())

    # the calls it lists as it reads are the steps' own, as the trace and task list them
    for read in (trace, validated):
        made = [(s.tool_call.name, s.tool_call.arguments) for s in read.steps if s.tool_call]
        assert read.calls_made() == tuple(made)
        assert all(c.arguments is a for c, (_, a) in zip(read.calls_made(), made, strict=True))
        assert read.task.reference_trajectory is not None
        steps = read.task.reference_trajectory
        reference = [c for s in steps if isinstance(s, ReferenceStep) for c in s.tool_calls]
        assert reference and read.task.reference_calls() == tuple(
            (c.name, c.arguments) for c in reference
        )
        assert all(
            c.arguments is r.arguments
            for c, r in zip(read.task.reference_calls() or (), reference, strict=True)
        )


def test_arguments_nested_deeper_than_validation_takes_are_a_located_error(
    tmp_path: Path,
) -> None:
    # arguments given as JSON text are decoded by the reader, not by the chat's parser, which
    # bounds the nesting of everything else: too deep for a record, they are an error
    deep = json.dumps({"a": json.loads("[" * 300 + "]" * 300)})
    shallow = json.dumps({"a": json.loads("[" * 150 + "]" * 150)})

    def chat(arguments: str) -> dict[str, Any]:
        call = {"id": "c1", "function": {"name": "f", "arguments": arguments}}
        return {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
            ]
        }

    error, trace = _read(tmp_path, chat(deep), chat(shallow))
    assert isinstance(error, ReadError) and isinstance(trace, Trace)
    assert error.line == 1
    assert error.field is not None and error.field.startswith("arguments.a.list[0]")
    assert error.message == "Recursion error - maximum validation depth exceeded"
    assert trace.tool_calls[0].arguments == json.loads(shallow)


def test_registered_as_an_importer() -> None:
    assert get_importer("openai-chat") is read_openai_chat


def _evaluate(tmp_path: Path, chats: Path, suite: str, jobs: int = 1) -> dict[str, Any]:
    suite_file = tmp_path / "S.toml"
    suite_file.write_text(suite, encoding="utf-8")
    out = tmp_path / f"out-{jobs}.json"
    result = runner.invoke(
        app,
        [
            "evaluate",
            "--format",
            "openai-chat",
            str(chats),
            "--suite",
            str(suite_file),
            "--json",
            str(out),
            "--db",
            str(tmp_path / f"{jobs}.db"),
            "--jobs",
            str(jobs),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return doc


def test_cli_evaluate_openai_chat_with_the_trajectory_metrics(tmp_path: Path) -> None:
    def chat(cid: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        made = [
            {"id": f"{cid}{k}", "function": {"name": n, "arguments": json.dumps(a)}}
            for k, (n, a) in enumerate(calls)
        ]
        return {
            "id": cid,
            "messages": [
                {"role": "user", "content": "Plan my trip"},
                {"role": "assistant", "content": "", "tool_calls": made},
                *[{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in made],
                {"role": "assistant", "content": "Done."},
            ],
            "expected_messages": [
                {"role": "user", "content": "Plan my trip"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"function": {"name": "search", "arguments": '{"city": "Paris"}'}},
                        {
                            "function": {
                                "name": "book",
                                "arguments": '{"hotel": "H1", "time": {"start": "May 1"}}',
                            }
                        },
                    ],
                },
                {"role": "tool", "content": "ok"},
                {"role": "tool", "content": "ok"},
                {"role": "assistant", "content": "Booked."},
            ],
        }

    chats = _write(
        tmp_path,
        # the reference's calls, with another end time for book: book matches on time.start
        chat(
            "same",
            [
                ("search", {"city": "Paris"}),
                ("book", {"hotel": "H1", "time": {"start": "May 1", "end": "May 3"}}),
            ],
        ),
        # book with another hotel, and an extra call
        chat(
            "wrong",
            [
                ("book", {"hotel": "H2", "time": {"start": "May 1"}}),
                ("search", {"city": "Paris"}),
                ("weather", {"city": "Paris"}),
            ],
        ),
        # no call at all
        chat("none", []),
        "{broken",
    )
    suite = """
name = "trajectories"
metrics = ["trajectory_match", "tool_correctness", "tool_call_accuracy"]
[weights]
trajectory_match = 1.0
[options.trajectory_match]
mode = "superset"
args = "exact"
[options.trajectory_match.overrides]
book = ["time.start"]
[options.tool_correctness]
compare = ["name", "input"]
[options.tool_call_accuracy]
strict_order = false
"""
    doc = _evaluate(tmp_path, chats, suite)
    metrics = {s["id"]: s["metrics"] for s in doc["samples"]}
    assert set(metrics) == {"same", "wrong", "none"}
    assert [e["line"] for e in doc["errors"]] == [4]
    for values in metrics.values():
        assert values["trajectory_match"] in (0.0, 1.0)
    # superset with book compared on time.start: "same" makes both reference calls; "wrong"
    # books H2 but on the same start (time.start is all that is compared) and searches Paris;
    # "none" makes no call.
    assert metrics["same"]["trajectory_match"] == 1.0
    assert metrics["wrong"]["trajectory_match"] == 1.0
    assert metrics["none"]["trajectory_match"] == 0.0
    # tool_correctness, compare name + input: "same": search 1.0, book: keys hotel, time (union
    # 2), hotel equal → 1/2, time differs (nested: start equal of union {start, end} → 1/2 · 1/2)
    # → 3/4; (1 + 3/4)/2 = 7/8. "wrong": search 1.0; book: hotel differs, time equal → 1/2;
    # (1 + 1/2)/2 = 3/4. "none": 0.
    assert metrics["same"]["tool_correctness"] == pytest.approx(7 / 8)
    assert metrics["wrong"]["tool_correctness"] == pytest.approx(3 / 4)
    assert metrics["none"]["tool_correctness"] == 0.0
    # tool_call_accuracy, order-free: sorted by name: "same": book (hotel equal, time differs
    # as text → 1/2) and search (1) → (1/2 + 1)/2 = 3/4. "wrong": three calls against two, the
    # name lists differ → 0. "none": 0.
    assert metrics["same"]["tool_call_accuracy"] == pytest.approx(3 / 4)
    assert metrics["wrong"]["tool_call_accuracy"] == 0.0
    assert metrics["none"]["tool_call_accuracy"] == 0.0
    # the composite is trajectory_match alone
    composites = {s["id"]: s["composite"] for s in doc["samples"]}
    assert composites == {"same": 1.0, "wrong": 1.0, "none": 0.0}
    details = {s["id"]: s["details"] for s in doc["samples"]}
    assert "search" in details["none"]["trajectory_match"]["failed"]["why"]


def test_chats_are_read_in_the_workers_as_in_one_process(tmp_path: Path) -> None:
    # each line is parsed where it is scored: the same traces, values and located errors
    # with two workers as with none, and each sample knows its file and line
    chats = _write(
        tmp_path,
        *({**CHAT, "id": f"chat-{k}"} for k in range(6)),
        {"messages": [{"role": "wizard", "content": "hi"}]},
        {**CHAT, "id": "last", "messages": CHAT["messages"][:2]},
    )
    suite = """
name = "chats"
metrics = ["trajectory_match", "tool_call_accuracy", "safety"]
[weights]
trajectory_match = 1.0
"""
    one, two = _evaluate(tmp_path, chats, suite), _evaluate(tmp_path, chats, suite, jobs=2)
    for doc in (one, two):
        assert [e["line"] for e in doc["errors"]] == [7]
    assert [(s["id"], s["metrics"], s["composite"]) for s in one["samples"]] == [
        (s["id"], s["metrics"], s["composite"]) for s in two["samples"]
    ]
    traces = [t for t in read_openai_chat(chats) if isinstance(t, Trace)]
    assert [s["id"] for s in two["samples"]] == [t.id for t in traces]
    with Store(tmp_path / "2.db") as store:
        run = store.list_runs()[0]
        rows = list(store.iter_samples(run.id, with_trace=True))
    assert [(r.source, r.line) for r in rows] == [
        (str(chats), line) for line in (1, 2, 3, 4, 5, 6, 8)
    ]
    # the trace is stored, not the chat it was read from
    stored = [r.trace_json for r in rows]
    assert all(t is not None for t in stored)
    assert [Trace.model_validate_json(t) for t in stored if t is not None] == traces


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        ('{"city": "Paris", "k": [1, {"a": null}]}', {"city": "Paris", "k": [1, {"a": None}]}),
        (' {"a": 1}\n', {"a": 1}),
        ("{}", {}),
        ('{"a": 1}{}', "arguments are not valid JSON: Extra data"),
        ('{"a": 1} x}', "arguments are not valid JSON: Extra data"),
        (
            "{bad}",
            "arguments are not valid JSON: Expecting property name enclosed in double quotes",
        ),
        ('{"a": }', "arguments are not valid JSON: Expecting value"),
        ("[1]", "arguments must be a JSON object, got list"),
        (
            '{"a": ' + "[" * 5000 + "]" * 5000 + "}",
            "arguments cannot be read: invalid JSON: nested too deeply to read",
        ),
    ],
)
def test_arguments_given_as_text_are_read_as_json_reads_them(raw: str, read: Any) -> None:
    if isinstance(read, dict):
        assert openai_chat.decode_arguments(raw) == read == json.loads(raw)
    else:
        with pytest.raises(ValueError) as error:
            openai_chat.decode_arguments(raw)
        assert str(error.value) == read
