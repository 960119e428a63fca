"""Tool-calling runs as library calls: the summary of a model run, the suite's options."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgauge.config import SuiteError
from agentgauge.toolcall.runner import Prediction
from agentgauge.workflows.toolcall_runs import (
    ModelRun,
    ToolcallError,
    parse_weights,
    toolcall_suite,
)


def test_a_model_run_summarises_its_predictions(tmp_path: Path) -> None:
    run = ModelRun(
        tmp_path / "p.jsonl",
        [
            Prediction(id="a", result="x", latency_s=0.3, usage={"input_tokens": 10}),
            Prediction(id="b", result="y", latency_s=0.1, usage={"output_tokens": 4}),
            Prediction(id="c", error="HTTP 500"),
            Prediction(id="d", result="z", latency_s=0.2, usage={"input_tokens": 5}),
        ],
    )
    assert [p.id for p in run.failed] == ["c"]
    assert run.median_latency_s == 0.2  # of 0.1, 0.2, 0.3
    assert (run.tokens("input_tokens"), run.tokens("output_tokens")) == (15, 4)
    assert ModelRun(tmp_path / "p.jsonl", []).median_latency_s is None


def test_the_suite_takes_the_mode_and_replaces_the_weights() -> None:
    suite = toolcall_suite("lenient", "tool_selection=1, parameter_accuracy=3")
    assert suite.options["value_accuracy"] == {"mode": "lenient"}
    assert suite.weights == {"tool_selection": 1.0, "parameter_accuracy": 3.0}
    assert parse_weights("a=0.5,,b=2") == {"a": 0.5, "b": 2.0}
    for text, message in [
        ("tool_selection", "is not metric=weight"),
        ("tool_selection=inf", "is not a number"),
        (",", "no metric=weight pair"),
    ]:
        with pytest.raises(ToolcallError, match=message):
            parse_weights(text)
    with pytest.raises(SuiteError, match="fluency"):
        toolcall_suite("strict", "fluency=1")
