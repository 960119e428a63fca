"""A pydantic-ai app instrumented with its own OpenTelemetry instrumentation, for the tests
of the importer and the live receiver: a planner agent delegates to a researcher agent from
a tool; the researcher calls two tools, one of which raises ``ModelRetry``. pydantic-ai's
function model answers from a script (no network).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

ANSWER = "Tides follow the moon."


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The script: the first request of a run calls its agent's tools, the next answers.
    Usage is 100 input tokens per message so far and 10 output tokens."""
    usage = RequestUsage(input_tokens=100 * len(messages), output_tokens=10)
    tools = [t.name for t in info.function_tools]
    if len(messages) > 1:
        return ModelResponse(parts=[TextPart(ANSWER)], usage=usage)
    if "ask_researcher" in tools:
        calls = [ToolCallPart("ask_researcher", {"topic": "tides"}, tool_call_id="c1")]
    else:
        calls = [
            ToolCallPart("lookup", {"term": "tide"}, tool_call_id="c2"),
            ToolCallPart("archive", {}, tool_call_id="c3"),
        ]
    return ModelResponse(parts=calls, usage=usage)


def run_planner(provider: Any) -> None:
    """Run the planner once, its spans going to the OTel tracer provider ``provider``."""

    def instrumented() -> list[Instrumentation]:
        return [Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))]

    researcher = Agent(FunctionModel(_respond), name="researcher", capabilities=instrumented())
    planner = Agent(FunctionModel(_respond), name="planner", capabilities=instrumented())

    @researcher.tool_plain
    def lookup(term: str) -> str:
        """Look a term up."""
        return "the moon pulls the sea"

    @researcher.tool_plain
    def archive() -> str:
        """Search the archive."""
        raise ModelRetry("the archive is offline")

    @planner.tool
    async def ask_researcher(ctx: RunContext[None], topic: str) -> str:
        """Delegate to the researcher."""
        return (await researcher.run(f"Research {topic}", usage=ctx.usage)).output

    assert planner.run_sync("Why are there tides?").output == ANSWER
