"""agentgauge: evaluate LLM agents and tool-calling models.

The Python API::

    import agentgauge as ag
    result = ag.evaluate(ag.load_traces("traces.jsonl"), suite="behavior")
    print(result.aggregate["composite"])

The names below are imported on first use, so that ``import agentgauge`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgauge._lazy import lazy_exports
from agentgauge._version import __version__

_EXPORTS: dict[str, str] = {
    "RunResult": "agentgauge.api",
    "TraceReadError": "agentgauge.api",
    "compare": "agentgauge.api",
    "evaluate": "agentgauge.api",
    "load_traces": "agentgauge.api",
    "score": "agentgauge.api",
    "Suite": "agentgauge.config",
    "SuiteError": "agentgauge.config",
    "load_suite": "agentgauge.config",
    "ReadError": "agentgauge.io.jsonl",
    "Metric": "agentgauge.metrics.base",
    "MetricResult": "agentgauge.metrics.base",
    "metric": "agentgauge.metrics.base",
    "Difficulty": "agentgauge.model",
    "ExpectedCall": "agentgauge.model",
    "MessageType": "agentgauge.model",
    "Step": "agentgauge.model",
    "StepKind": "agentgauge.model",
    "Task": "agentgauge.model",
    "ToolCall": "agentgauge.model",
    "ToolSpec": "agentgauge.model",
    "Trace": "agentgauge.model",
    "Usage": "agentgauge.model",
    "assert_passes": "agentgauge.pytest_plugin",
    "Summary": "agentgauge.stats",
    "Store": "agentgauge.store",
}

# assert_passes needs pytest, which a star import must not require: it is reached by name only
__all__ = ["__version__", *(name for name in _EXPORTS if name != "assert_passes")]

if TYPE_CHECKING:
    from agentgauge.api import RunResult as RunResult
    from agentgauge.api import TraceReadError as TraceReadError
    from agentgauge.api import compare as compare
    from agentgauge.api import evaluate as evaluate
    from agentgauge.api import load_traces as load_traces
    from agentgauge.api import score as score
    from agentgauge.config import Suite as Suite
    from agentgauge.config import SuiteError as SuiteError
    from agentgauge.config import load_suite as load_suite
    from agentgauge.io.jsonl import ReadError as ReadError
    from agentgauge.metrics.base import Metric as Metric
    from agentgauge.metrics.base import MetricResult as MetricResult
    from agentgauge.metrics.base import metric as metric
    from agentgauge.model import Difficulty as Difficulty
    from agentgauge.model import ExpectedCall as ExpectedCall
    from agentgauge.model import MessageType as MessageType
    from agentgauge.model import Step as Step
    from agentgauge.model import StepKind as StepKind
    from agentgauge.model import Task as Task
    from agentgauge.model import ToolCall as ToolCall
    from agentgauge.model import ToolSpec as ToolSpec
    from agentgauge.model import Trace as Trace
    from agentgauge.model import Usage as Usage
    from agentgauge.pytest_plugin import assert_passes as assert_passes
    from agentgauge.stats import Summary as Summary
    from agentgauge.store import Store as Store


__getattr__ = lazy_exports(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
