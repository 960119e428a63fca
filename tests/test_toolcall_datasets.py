"""Dataset readers (DeepFabric, OpenAI conversations, BFCL) and predictions -> Traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentgauge.config import load_suite
from agentgauge.engine import score_traces
from agentgauge.io.jsonl import ReadError
from agentgauge.model import ExpectedCall, StepKind, Task, Trace, Usage
from agentgauge.toolcall.datasets import read_dataset, read_predictions
from agentgauge.toolcall.formats.bfcl import read_bfcl
from toolcall_samples import READ_FILE_TOOL, deepfabric_sample, write_jsonl


def test_deepfabric_sample_with_call_0_id_and_extra_keys(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "df.jsonl",
        [
            deepfabric_sample(
                id="sample-7", question="Show config.json", agent_context={"mode": "x"}
            )
        ],
    )
    task, answer = list(read_dataset(path, "deepfabric"))
    assert isinstance(task, Task) and isinstance(answer, Task)
    assert task.id == "sample-7#1"
    assert task.input == [
        {"role": "system", "content": "You can use tools."},
        {"role": "user", "content": "Show config.json"},
    ]
    assert task.expected_calls == [
        ExpectedCall(name="read_file", arguments={"file_path": ["config.json"]})
    ]
    assert [t.name for t in task.tools] == ["read_file"]
    assert task.tools[0].parameters["required"] == ["file_path"]
    assert task.expected_output is None
    assert task.reference_trajectory == ["read_file"]
    assert task.description == "Show config.json"
    # the final answer is the second turn: the call and its result are in its prompt
    assert answer.id == "sample-7#2" and answer.expected_calls == []
    assert answer.expected_output == "debug is true"
    assert answer.input == [
        *task.input,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"file_path": "config.json"}'},
                }
            ],
        },
        {"role": "tool", "content": '{"debug": true}', "tool_call_id": "call_0"},
    ]


def test_deepfabric_falls_back_to_tool_context(tmp_path: Path) -> None:
    sample = deepfabric_sample()
    sample["messages"] = [
        {"role": "user", "content": "Show config.json"},
        {"role": "assistant", "content": "Let me check."},
    ]
    sample["final_answer"] = "debug is true"
    [task] = list(read_dataset(write_jsonl(tmp_path / "df.jsonl", [sample]), "deepfabric"))
    assert isinstance(task, Task) and task.id == "line-1#1"
    assert task.expected_calls == [
        ExpectedCall(name="read_file", arguments={"file_path": ["config.json"]})
    ]
    assert task.expected_output == "debug is true"


def test_conversation_expecting_no_call(tmp_path: Path) -> None:
    sample = {
        "id": 3,
        "messages": [
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": "4"},
        ],
        "tools": [READ_FILE_TOOL],
    }
    [task] = list(read_dataset(write_jsonl(tmp_path / "oa.jsonl", [sample]), "openai"))
    assert isinstance(task, Task)
    assert task.id == "3#1" and task.expected_calls == [] and task.expected_output == "4"


def test_openai_conversation_with_parallel_calls(tmp_path: Path) -> None:
    sample = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo and Rome?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "function": {"name": "w", "arguments": {"city": "Oslo"}}},
                    {"id": "b", "function": {"name": "w", "arguments": '{"city": "Rome"}'}},
                ],
            },
        ],
        "tools": [{"name": "w", "parameters": {"type": "object", "properties": {}}}],
    }
    [task] = list(read_dataset(write_jsonl(tmp_path / "oa.jsonl", [sample]), "openai"))
    assert isinstance(task, Task)
    assert [(c.name, c.arguments) for c in task.expected_calls or []] == [
        ("w", {"city": ["Oslo"]}),
        ("w", {"city": ["Rome"]}),
    ]
    assert task.description == "Weather in Oslo and Rome?"


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _two_question_chat() -> dict[str, Any]:
    """An OpenAI chat with two user questions: a call and its answer, then two parallel calls
    after an empty assistant message, and the final answer."""
    return {
        "id": "chat-1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [_call("a", "w", city="Oslo")]},
            {"role": "tool", "tool_call_id": "a", "content": "rain"},
            {"role": "assistant", "content": "Rain in Oslo."},
            {"role": "user", "content": "And Rome and Paris?"},
            {"role": "assistant", "content": ""},
            {
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [_call("b", "w", city="Rome"), _call("c", "w", city="Paris")],
            },
            {"role": "tool", "tool_call_id": "b", "content": "sun"},
            {"role": "tool", "tool_call_id": "c", "content": "fog"},
            {"role": "assistant", "content": "Sun in Rome, fog in Paris."},
        ],
        "tools": [{"name": "w", "parameters": {"type": "object", "properties": {}}}],
    }


def test_a_chat_gives_a_sample_per_assistant_turn(tmp_path: Path) -> None:
    chat = _two_question_chat()
    tasks = list(read_dataset(write_jsonl(tmp_path / "oa.jsonl", [chat]), "openai"))
    assert all(isinstance(t, Task) for t in tasks)
    by_id = {t.id: t for t in tasks if isinstance(t, Task)}
    # the empty assistant message (the third) is counted, and gives no sample
    assert list(by_id) == ["chat-1#1", "chat-1#2", "chat-1#4", "chat-1#5"]
    expected = {
        key: [(c.name, c.arguments) for c in t.expected_calls or []] for key, t in by_id.items()
    }
    assert expected == {
        "chat-1#1": [("w", {"city": ["Oslo"]})],
        "chat-1#2": [],
        "chat-1#4": [("w", {"city": ["Rome"]}), ("w", {"city": ["Paris"]})],
        "chat-1#5": [],
    }
    assert {k: t.expected_output for k, t in by_id.items()} == {
        "chat-1#1": None,
        "chat-1#2": "Rain in Oslo.",
        "chat-1#4": None,
        "chat-1#5": "Sun in Rome, fog in Paris.",
    }
    assert {k: len(t.input) for k, t in by_id.items()} == {
        "chat-1#1": 2,
        "chat-1#2": 4,
        "chat-1#4": 7,
        "chat-1#5": 10,
    }
    fourth = by_id["chat-1#4"]
    assert fourth.description == "And Rome and Paris?"
    assert fourth.metadata["turn"] == 4 and fourth.metadata["conversation_id"] == "chat-1"
    assert isinstance(fourth.input, list) and fourth.input[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "a",
                "type": "function",
                "function": {"name": "w", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert fourth.input[3] == {"role": "tool", "content": "rain", "tool_call_id": "a"}

    [last] = list(read_dataset(write_jsonl(tmp_path / "l.jsonl", [chat]), "openai", turns="last"))
    assert isinstance(last, Task) and last.id == "chat-1"
    assert last.input == by_id["chat-1#5"].input and last.expected_calls == []
    assert last.metadata["turn"] == 5


def test_deepfabric_conversations_layout(tmp_path: Path) -> None:
    sample = deepfabric_sample(id="old")
    sample["conversations"] = sample.pop("messages")
    tasks = list(read_dataset(write_jsonl(tmp_path / "df.jsonl", [sample]), "deepfabric"))
    current = list(
        read_dataset(
            write_jsonl(tmp_path / "new.jsonl", [deepfabric_sample(id="old")]), "deepfabric"
        )
    )
    assert tasks == current and [t.id for t in tasks if isinstance(t, Task)] == ["old#1", "old#2"]
    del sample["conversations"][1]["role"]
    [error] = list(read_dataset(write_jsonl(tmp_path / "bad.jsonl", [sample]), "deepfabric"))
    assert isinstance(error, ReadError) and error.field == "conversations[1].role"


def test_turns_are_chosen_for_conversations_only(shared_data: Path) -> None:
    bfcl = shared_data / "bfcl"
    with pytest.raises(ValueError, match="conversations only"):
        read_dataset(bfcl / "BFCL_v4_irrelevance.json", "bfcl", turns="last")


def test_bad_lines_name_file_line_and_field_and_reading_goes_on(tmp_path: Path) -> None:
    bad_args = deepfabric_sample()
    bad_args["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{"file_path": '
    no_role = deepfabric_sample()
    del no_role["messages"][1]["role"]
    path = write_jsonl(
        tmp_path / "df.jsonl",
        ["{not json", {"tools": []}, bad_args, no_role, [1, 2], deepfabric_sample(id="ok")],
    )
    items = list(read_dataset(path, "deepfabric"))
    errors = [i for i in items if isinstance(i, ReadError)]
    assert [(e.source, e.line, e.field) for e in errors] == [
        (str(path), 1, None),
        (str(path), 2, "messages"),
        (str(path), 3, "messages[2].tool_calls[0].function.arguments"),
        (str(path), 4, "messages[1].role"),
        (str(path), 5, None),
    ]
    assert isinstance(items[-1], Task) and items[-1].id == "ok#2"


def _bfcl_lines(shared_data: Path, category: str, n: int) -> tuple[list[str], list[str]]:
    root = shared_data / "bfcl"
    name = f"BFCL_v4_{category}.json"
    questions = (root / name).read_text().splitlines()[:n]
    answers = (root / "possible_answer" / name).read_text().splitlines()[:n]
    return questions, answers


def test_bfcl_answers_are_aligned_by_id(shared_data: Path, tmp_path: Path) -> None:
    questions, answers = _bfcl_lines(shared_data, "parallel", 4)
    q = write_jsonl(tmp_path / "BFCL_v4_parallel.json", questions)
    a = write_jsonl(tmp_path / "answers.json", answers[::-1])  # reversed order
    tasks = [t for t in read_bfcl(q, a) if isinstance(t, Task)]
    assert [t.id for t in tasks] == [f"parallel_{i}" for i in range(4)]
    assert tasks[0].category == "parallel"
    assert [(c.name, c.arguments) for c in tasks[0].expected_calls or []] == [
        ("spotify.play", {"artist": ["Taylor Swift"], "duration": [20]}),
        ("spotify.play", {"artist": ["Maroon 5"], "duration": [15]}),
    ]
    assert tasks[0].tools[0].parameters["type"] == "dict"  # BFCL type names kept
    assert tasks[0].input == json.loads(questions[0])["question"][0]


def test_bfcl_mismatched_files_are_reported(shared_data: Path, tmp_path: Path) -> None:
    questions, answers = _bfcl_lines(shared_data, "simple_python", 3)
    q = write_jsonl(tmp_path / "BFCL_v4_simple_python.json", [questions[0], questions[2]])
    bad_answer = json.dumps({"id": "x", "ground_truth": [{"f": {"a": 1}}]})  # not a value list
    a = write_jsonl(tmp_path / "answers.json", [answers[0], bad_answer, answers[1]])
    items = list(read_bfcl(q, a))
    errors = [(e.source, e.line, e.field, e.message) for e in items if isinstance(e, ReadError)]
    assert errors[0][:3] == (str(a), 2, "ground_truth[0].f.a")
    assert errors[1] == (str(q), 2, "id", "no possible answer with id 'simple_python_2'")
    assert errors[2] == (str(a), 3, "id", "possible answer 'simple_python_1' has no question")
    assert [t.id for t in items if isinstance(t, Task)] == ["simple_python_0"]


def test_bfcl_irrelevance_needs_no_answers(shared_data: Path) -> None:
    root = shared_data / "bfcl"
    first = next(iter(read_bfcl(root / "BFCL_v4_irrelevance.json")))
    assert isinstance(first, Task) and first.expected_calls == []
    needs = next(iter(read_bfcl(root / "BFCL_v4_simple_python.json")))
    assert isinstance(needs, ReadError) and "possible-answer" in needs.message


def test_predictions_become_traces(tmp_path: Path) -> None:
    tasks = {
        t.id: t
        for t in read_dataset(
            write_jsonl(
                tmp_path / "df.jsonl",
                [deepfabric_sample(id=f"s{i}") for i in range(6)],
            ),
            "deepfabric",
        )
        if isinstance(t, Task) and t.id.endswith("#1")
    }
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"file_path": "config.json"}'},
            }
        ],
    }
    path = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {
                "id": "s0#1",
                "result": message,
                "latency_s": 0.25,
                "usage": {"input_tokens": 10, "output_tokens": 3},
                "attempts": 1,
                "finish_reason": "tool_calls",
            },
            {"id": "s1#1", "result": [{"read_file": {"file_path": "config.json"}}]},
            {
                "id": "s2#1",
                "result": "Reading.<tool_call>"
                + json.dumps({"name": "read_file", "arguments": {"file_path": "x"}})
                + "</tool_call>",
            },
            {"id": "s3#1", "result": "read_file(file_path="},
            {"id": "s4#1", "attempts": 5, "error": "HTTP 503: overloaded (after 5 attempts)"},
            {"id": "nope", "result": []},
            {"id": "s0#1", "result": []},
            {"result": []},
            {"id": "s5#1"},  # neither result nor error
        ],
    )
    items = list(read_predictions(path, tasks, include_missing=True))
    traces = {i.id: i for i in items if isinstance(i, Trace)}
    errors = [(e.line, e.field) for e in items if isinstance(e, ReadError)]
    assert errors == [(6, "id"), (7, "id"), (8, "id"), (9, "result")]
    s0 = traces["s0#1"]
    assert [s.kind for s in s0.steps] == [StepKind.tool_call]
    assert s0.tool_calls[0].id == "call_9" and s0.tool_calls[0].arguments == {
        "file_path": "config.json"
    }
    assert s0.duration_s == 0.25 and s0.usage == Usage(input_tokens=10, output_tokens=3)
    assert s0.metadata == {"raw_output": message, "parse_error": None, "parse_format": "openai"}
    assert traces["s1#1"].metadata["parse_format"] == "bfcl"
    assert (
        traces["s2#1"].output == "Reading." and traces["s2#1"].metadata["parse_format"] == "hermes"
    )
    assert traces["s3#1"].tool_calls == [] and traces["s3#1"].metadata["parse_error"]
    assert traces["s4#1"].metadata["run_error"] == "HTTP 503: overloaded (after 5 attempts)"
    assert traces["s5#1"].metadata["run_error"] == "no prediction"

    samples = {s.trace_id: s for s in score_traces(list(traces.values()), load_suite("toolcall"))}
    assert {k: s.values["execution_success"] for k, s in samples.items()} == {
        "s0#1": 1.0,
        "s1#1": 1.0,
        "s2#1": 1.0,  # types right, value wrong: the spec does not compare values
        "s3#1": 0.0,
        "s4#1": 0.0,
        "s5#1": 0.0,
    }
    assert {k: s.values["value_accuracy"] for k, s in samples.items()} == {
        "s0#1": 1.0,
        "s1#1": 1.0,
        "s2#1": 0.0,
        "s3#1": 0.0,
        "s4#1": 0.0,
        "s5#1": 0.0,
    }
    assert samples["s3#1"].details["value_accuracy"]["error_type"] == "parse_error"
    assert samples["s4#1"].details["tool_selection"]["error_type"] == "run_error"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"id": "s0", "result": [], "latency_s": -1}, "latency_s"),
        ({"id": "s0", "result": [], "latency_s": float("inf")}, "latency_s"),
        ({"id": "s0", "result": [], "usage": {"input_tokens": "many"}}, "usage"),
        ({"id": "s0", "result": [], "usage": {"input_tokens": 10**30}}, "usage"),
    ],
)
def test_a_bad_runner_field_is_left_out_and_the_answer_scored(
    tmp_path: Path, line: dict[str, Any], field: str
) -> None:
    task = Task(id="s0", expected_calls=[])
    path = write_jsonl(tmp_path / "p.jsonl", [line])
    warning, trace = list(read_predictions(path, {"s0": task}))
    assert isinstance(warning, ReadError) and warning.warning
    assert (warning.line, warning.field) == (1, field)
    assert "it is left out, the answer scored" in warning.message
    # the answer (no call: right for a task that expects none) is there, without the value
    assert isinstance(trace, Trace) and trace.usage is None and trace.duration_s is None
    assert "run_error" not in trace.metadata
