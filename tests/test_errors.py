"""One exception root: every error agentgauge raises on purpose derives from AgentgaugeError,
and the command reports any of them in one line with exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge.agents.chat import ChatError
from agentgauge.agents.protocol import AgentLoadError
from agentgauge.api import TraceReadError
from agentgauge.cli import app
from agentgauge.config import SuiteError
from agentgauge.engine import EngineError
from agentgauge.errors import AgentgaugeError
from agentgauge.http import RequestFailed, ResponseError, TransientError
from agentgauge.metrics.base import MetricOptionError, UnknownMetricError
from agentgauge.registry import UnknownNameError
from agentgauge.store import Store, StoreError
from agentgauge.toolcall.bfcl import BfclUnsupported
from agentgauge.tuning.agent_run import TuningError
from agentgauge.tuning.space import ParameterError
from agentgauge.workflows.review_runs import ReviewError
from agentgauge.workflows.toolcall_runs import ToolcallError

ERRORS = [
    AgentLoadError,
    BfclUnsupported,
    ChatError,
    EngineError,
    MetricOptionError,
    ParameterError,
    RequestFailed,
    ResponseError,
    ReviewError,
    StoreError,
    SuiteError,
    ToolcallError,
    TraceReadError,
    TransientError,
    TuningError,
    UnknownMetricError,
    UnknownNameError,
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: e.__name__)
def test_every_error_has_the_one_root(error: type[Exception]) -> None:
    assert issubclass(error, AgentgaugeError)


def test_the_root_keeps_the_builtin_bases_callers_catch() -> None:
    assert issubclass(SuiteError, ValueError) and issubclass(ParameterError, ValueError)
    assert issubclass(StoreError, RuntimeError) and issubclass(UnknownMetricError, KeyError)
    assert issubclass(UnknownNameError, ValueError)
    unknown = UnknownMetricError("metric", "x", ["b", "a"])
    assert str(unknown) == "unknown metric 'x'; known metrics: a, b"  # not KeyError's repr


def test_a_command_reports_an_error_from_the_library_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    Store(db).close()
    result = CliRunner().invoke(app, ["show", "nope", "--db", str(db)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"error: {db}: no run 'nope'\n"


def test_the_console_script_reports_it_the_same_way(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    Store(db).close()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "show", "nope", "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == f"error: {db}: no run 'nope'\n"
