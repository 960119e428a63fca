"""Every framework scenario under ``tests/fixtures/frameworks/`` imports as its hand-written
truth says, item by item.

Each scenario folder holds the raw export, byte for byte as the product wrote it, and an
``expected.json`` written by hand from reading that file (never from running this importer):
per run, in import order, the model calls, the tool calls in order (name, arguments, whether
the call failed), the agents, the handoffs, the final output and the token totals. A
``generate`` script per family (``make_<family>.py``) regenerates the files from the real
packages; CI only reads the committed files.

How a Trace is compared with the truth:

- ``model_calls``: the number of ``llm`` steps;
- ``tool_calls``: the ``tool_call`` steps in order, each ``{name, arguments, error}``, where
  ``error`` is whether the call step or its result step (``parent_id`` = the call's id)
  carries an error;
- ``agents``: the sorted distinct ``Step.agent`` values (None left out);
- ``handoffs``: the ``handoff`` steps as ``[agent, recipient]``, in order;
- ``output``: ``Trace.output``, surrounding whitespace stripped when it is text;
- ``input_tokens``/``output_tokens``: the trace's usage by the rule of
  :func:`agentgauge.usage.trace_usage` (its own total, else the sum over its steps).

A scenario whose import is not exact yet carries ``"pending": "<what is still wrong>"``: it runs
as a strict xfail, so that it cannot fail CI while unsupported and fails the day it imports
exactly, until whoever made it exact deletes the key. A scenario without the key must pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentgauge.io.importers import get_importer
from agentgauge.io.jsonl import ReadError
from agentgauge.model import StepKind, Trace
from agentgauge.usage import trace_usage

FRAMEWORKS = Path(__file__).parent / "fixtures" / "frameworks"
ITEMS = (
    "model_calls",
    "tool_calls",
    "agents",
    "handoffs",
    "output",
    "input_tokens",
    "output_tokens",
)


def _scenarios() -> list[Any]:
    params = []
    for expected in sorted(FRAMEWORKS.glob("*/expected.json")):
        truth = json.loads(expected.read_text(encoding="utf-8"))
        marks = []
        if truth.get("pending"):
            marks.append(pytest.mark.xfail(strict=True, reason=str(truth["pending"])))
        params.append(pytest.param(expected.parent, truth, id=expected.parent.name, marks=marks))
    return params


def _tool_calls(trace: Trace) -> list[dict[str, Any]]:
    failed_results = {
        s.parent_id for s in trace.steps if s.kind is StepKind.tool_result and s.error
    }
    calls = []
    for step in trace.steps:
        if step.kind is StepKind.tool_call and step.tool_call is not None:
            error = bool(step.error) or (step.id is not None and step.id in failed_results)
            calls.append(
                {
                    "name": step.tool_call.name,
                    "arguments": step.tool_call.arguments,
                    "error": error,
                }
            )
    return calls


def _output(trace: Trace) -> Any:
    return trace.output.strip() if isinstance(trace.output, str) else trace.output


def recovered(trace: Trace) -> dict[str, Any]:
    """What the import recovered of one run, in the truth file's terms.

    Args:
        trace: the imported run.
    """
    usage = trace_usage(trace)
    return {
        "model_calls": sum(1 for s in trace.steps if s.kind is StepKind.llm),
        "tool_calls": _tool_calls(trace),
        "agents": sorted({s.agent for s in trace.steps if s.agent is not None}),
        "handoffs": [[s.agent, s.recipient] for s in trace.steps if s.kind is StepKind.handoff],
        "output": _output(trace),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }


def _import(folder: Path, truth: dict[str, Any]) -> tuple[list[Trace], list[ReadError]]:
    read = get_importer(truth.get("format") or "otel")
    traces: list[Trace] = []
    errors: list[ReadError] = []
    for item in read(folder / truth["file"]):
        (errors if isinstance(item, ReadError) else traces).append(item)  # type: ignore[arg-type]
    return traces, errors


def _differences(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    lines = []
    for item in ITEMS:
        if item not in want:
            continue
        expected = want[item]
        if item == "output" and isinstance(expected, str):
            expected = expected.strip()
        if got[item] != expected:
            lines.append(f"  {item}:\n    expected {expected!r}\n    imported {got[item]!r}")
    return lines


@pytest.mark.parametrize(("folder", "truth"), _scenarios())
def test_framework_scenario_imports_as_its_truth(folder: Path, truth: dict[str, Any]) -> None:
    traces, errors = _import(folder, truth)
    assert not errors, f"{folder.name}: read errors: {[str(e) for e in errors]}"
    want = truth["traces"]
    problems = []
    if len(traces) != len(want):
        problems.append(f"{len(traces)} traces imported, {len(want)} expected")
    for n, (trace, expected) in enumerate(zip(traces, want, strict=False)):
        lines = _differences(recovered(trace), expected)
        if lines:
            problems.append(f"trace {n} ({trace.id}):\n" + "\n".join(lines))
    assert not problems, f"{folder.name} ({truth.get('framework')}):\n" + "\n".join(problems)


def test_every_scenario_folder_has_its_truth_and_export() -> None:
    folders = [p for p in FRAMEWORKS.iterdir() if p.is_dir() and not p.name.startswith("_")]
    for folder in folders:
        expected = folder / "expected.json"
        assert expected.is_file(), f"{folder.name}: no expected.json"
        truth = json.loads(expected.read_text(encoding="utf-8"))
        assert (folder / truth["file"]).is_file(), f"{folder.name}: {truth['file']} is missing"
        assert set(truth) <= {"file", "format", "framework", "traces", "pending"}, folder.name
        for run in truth["traces"]:
            assert set(run) <= set(ITEMS), f"{folder.name}: unknown items {set(run) - set(ITEMS)}"
