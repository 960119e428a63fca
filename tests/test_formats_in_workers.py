"""Every input format is read where it is scored: ``evaluate --jobs 2`` stores exactly what
``--jobs 1`` stores (every row of every table, in the same order), and what the format's own
reader reads (the same Traces, the same located errors)."""

from __future__ import annotations

import json
import pickle
import re
import sqlite3
from pathlib import Path
from typing import Any

from agentgauge.config import Suite
from agentgauge.engine import EvaluateOptions, FileRun, evaluate_files
from agentgauge.io.importers import IMPORTERS, get_importer
from agentgauge.io.jsonl import ReadError
from agentgauge.io.otel.stream import PendingRun
from agentgauge.model import Trace
from agentgauge.store import Store

TESTS = Path(__file__).parent
SPAN_FILES = [
    TESTS / "data" / "otel" / name
    for name in ("single_agent.json", "with_logs.json", "malformed.json", "adk.json")
] + [
    TESTS / "fixtures" / "otel" / name
    for name in (
        "layered.jsonl",
        "openai_v2.jsonl",
        "openai_agents.jsonl",
        "pydantic_ai.jsonl",
        "openllmetry.jsonl",
        "openinference_openai.jsonl",
    )
]
SUITE = Suite(
    name="formats",
    metrics=["tool_call_accuracy", "tool_efficiency", "safety"],
    weights={"tool_call_accuracy": 1.0, "tool_efficiency": 1.0},
)
_TRACE_ID = re.compile(r'"([0-9a-f]{30})[0-9a-f]{2}"')


def _cycle() -> str:
    """An OTLP/JSON line of two spans whose parent links form a cycle, one with a negative
    token count: the run is read with a warning for each (found while it is assembled)."""

    def span(span_id: str, parent: str, name: str, attributes: dict[str, Any]) -> dict[str, Any]:
        return {
            "traceId": "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0",
            "spanId": span_id,
            "parentSpanId": parent,
            "name": name,
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": [{"key": k, "value": v} for k, v in attributes.items()],
        }

    chat = {
        "gen_ai.operation.name": {"stringValue": "chat"},
        "gen_ai.request.model": {"stringValue": "gpt-4o"},
        "gen_ai.usage.input_tokens": {"intValue": "-3"},
    }
    agent = {"gen_ai.operation.name": {"stringValue": "invoke_agent"}}
    spans = [
        span("a0a0a0a0a0a0a0a0", "b0b0b0b0b0b0b0b0", "chat gpt-4o", chat),
        span("b0b0b0b0b0b0b0b0", "a0a0a0a0a0a0a0a0", "invoke_agent bot", agent),
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def _interleaved_spans(path: Path, copies: int = 3) -> Path:
    """The span fixtures' lines, ``copies`` times with their own trace ids, dealt out in turn
    (one line of each file, then the next): each run's spans lie apart, among other runs'."""
    files = [[line for line in f.read_text().splitlines() if line.strip()] for f in SPAN_FILES]
    files.append([_cycle()])
    queues = [
        [_TRACE_ID.sub(lambda m, k=k: f'"{m.group(1)}{k:02x}"', line) for line in lines]
        for k in range(copies)
        for lines in files
    ]
    out = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    path.write_text("\n".join(out) + "\n")
    return path


def _stored(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the run stored, in a fixed order (the run's id left out)."""
    with sqlite3.connect(db) as conn:
        return {
            table: [row[1:] for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}")]
            for table, order in (
                ("samples", "seq"),
                ("run_metrics", "metric"),
                ("sample_metrics", "sample_key, part"),
                ("read_errors", "source, line"),
            )
        }


def _evaluate(path: Path, trace_format: str, jobs: int, db: Path) -> list[Trace]:
    with Store(db) as store:
        run_id = evaluate_files(
            FileRun(SUITE, [path], trace_format),
            store=store,
            options=EvaluateOptions(jobs=jobs, progress=False, batch_size=3),
        )
        return [
            Trace.model_validate_json(row.trace_json)
            for row in store.iter_samples(run_id, with_trace=True)
            if row.trace_json is not None
        ]


def _read(path: Path, trace_format: str) -> tuple[list[Trace], set[tuple[str, int]]]:
    items = list(get_importer(trace_format)(path))
    traces = [item for item in items if isinstance(item, Trace)]
    errors = {(e.source, e.line) for e in items if isinstance(e, ReadError)}
    return traces, errors


def test_span_files_are_assembled_in_the_workers_as_in_one_process(tmp_path: Path) -> None:
    spans = _interleaved_spans(tmp_path / "spans.jsonl")
    # the reading only groups each run's spans: their assembly is left to the workers
    items = list(IMPORTERS.get("otel").items([spans]))
    assert sum(isinstance(item, PendingRun) for item in items) > 20
    assert not any(isinstance(item, Trace) for item in items)

    one = _evaluate(spans, "otel", 1, tmp_path / "1.db")
    two = _evaluate(spans, "otel", 2, tmp_path / "2.db")
    stored = _stored(tmp_path / "1.db")
    assert stored == _stored(tmp_path / "2.db")
    # what the importer reads on its own: the same runs, in the same order, the same errors
    traces, errors = _read(spans, "otel")
    assert one == two == traces
    assert {(source, line) for source, line, *_ in stored["read_errors"]} == errors
    assert [row[4] for row in stored["samples"]] == [t.id for t in traces]  # trace ids
    # the warnings found while the runs were assembled (in the workers) are stored too
    messages = [row[3] for row in stored["read_errors"]]
    # (a line's problems are one message: the cycle, and the token count as "1 more")
    assert sum("form a cycle" in m and m.endswith("(and 1 more)") for m in messages) == 3


def test_chats_are_read_in_the_workers_as_in_one_process(tmp_path: Path) -> None:
    chat = {
        "messages": [
            {"role": "user", "content": "weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."},
        ],
        "expected_messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "x", "function": {"name": "weather", "arguments": "{}"}}],
            }
        ],
    }
    lines = [json.dumps({**chat, "id": f"chat-{k}"}) for k in range(40)]
    lines[7] = json.dumps({"messages": [{"role": "wizard", "content": "hi"}]})
    lines[19] = "{not json"
    lines[23] = json.dumps({"id": "surrogate", "messages": [{"role": "user", "content": "\ud800"}]})
    chats = tmp_path / "chats.jsonl"
    chats.write_text("\n".join(lines) + "\n")

    one = _evaluate(chats, "openai-chat", 1, tmp_path / "1.db")
    two = _evaluate(chats, "openai-chat", 2, tmp_path / "2.db")
    stored = _stored(tmp_path / "1.db")
    assert stored == _stored(tmp_path / "2.db")
    traces, errors = _read(chats, "openai-chat")
    assert one == two == traces
    assert {(source, line) for source, line, *_ in stored["read_errors"]} == errors
    assert [line for _, line, *_ in stored["read_errors"]] == [8, 20, 24]


def test_a_pending_run_sent_pickled_makes_the_same_trace_and_warnings(tmp_path: Path) -> None:
    spans = _interleaved_spans(tmp_path / "spans.jsonl", copies=1)
    runs = [item for item in IMPORTERS.get("otel").items([spans]) if isinstance(item, PendingRun)]
    assert any(span.events for run in runs for span in (o.span for o in run.observations))
    cycle = next(run for run in runs if run.id.startswith("c0c0"))
    for observation in cycle.observations:  # values read before it is sent, a warning with them
        observation.usage  # noqa: B018
    assert sum(len(o.problems) for o in cycle.observations) == 1
    for run in runs:
        sent = pickle.loads(pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL))
        assert [o.span for o in sent.observations] == [o.span for o in run.observations]
        assert [o._values for o in sent.observations] == [o._values for o in run.observations]
        assert list(sent.items()) == list(run.items())
    warnings = [e.message for e in cycle.items() if isinstance(e, ReadError)]
    assert len(warnings) == 1 and "token count of -3" in warnings[0]
