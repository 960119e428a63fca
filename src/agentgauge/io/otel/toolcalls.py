"""A tool execution's call, whoever recorded its parts, and the coordination tools that are
handoffs rather than calls of a tool.

The arguments come from wherever the run recorded them: the tool span (attributes, events,
log records, as the conventions read them), else the model's own call of the tool (matched
by tool call id, else by name); a bare value stands for the tool's single parameter when its
schema has exactly one; a framework's wrapper (``{"args": [], "kwargs": {...}}``) is
unwrapped; the tool's schema is never taken for its arguments.
"""

from __future__ import annotations

import re
from typing import Any

from agentgauge.model import ToolCall, ToolSpec

__all__ = ["HANDOFF_TOOLS", "handoff_target", "normalised", "resolve_arguments"]

HANDOFF_TOOLS: dict[str, str] = {
    "transfer_to_agent": "agent_name",  # Google ADK
    "handoff_to_agent": "agent_name",  # strands-agents Swarm
    "handoff": "to_agent",  # LlamaIndex AgentWorkflow
    "delegate_work_to_coworker": "coworker",  # CrewAI
    "ask_question_to_coworker": "coworker",  # CrewAI
    "delegate_task_to_member": "member_id",  # Agno Team
}
"""The frameworks' coordination tools (by normalised name) and the argument that names the
agent taking over. A tool named ``transfer_to_<agent>`` (openai-agents, AutoGen, Swarm) or
``handoff to <agent>`` (openai-agents' handoff as OpenInference names it) names it itself."""

_PREFIXES = ("transfer_to_", "handoff_to_")


def normalised(name: str) -> str:
    """A name compared loosely: lowercase words joined by ``_`` (``Weather agent`` ->
    ``weather_agent``).

    Args:
        name: an agent's or a tool's name.
    """
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def handoff_target(tool: str, arguments: dict[str, Any]) -> tuple[bool, str | None]:
    """Whether a tool is a coordination tool, and the agent it hands over to (None when the
    call does not say).

    Args:
        tool: the tool's name.
        arguments: the call's arguments.
    """
    key = normalised(tool)
    argument = HANDOFF_TOOLS.get(key)
    if argument is not None:
        target = arguments.get(argument)
        return True, target if isinstance(target, str) and target else None
    for prefix in _PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            return True, tool[len(prefix) :].strip() or None
    return False, None


def _properties(spec: ToolSpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    properties = spec.parameters.get("properties")
    return properties if isinstance(properties, dict) else None


def _unwrapped(value: dict[str, Any], properties: dict[str, Any] | None) -> dict[str, Any]:
    """A framework's record of a call (``{"args": [], "kwargs": {...}}``, with or without
    flags of its own beside them) as the keyword arguments; a tool whose parameters are
    named ``kwargs`` keeps them as they are."""
    inner = value.get("kwargs")
    if not isinstance(inner, dict) or value.get("args"):
        return value
    if properties is not None and "kwargs" in properties:
        return value
    return inner


def _is_schema(value: dict[str, Any], spec: ToolSpec | None) -> bool:
    """Whether a recorded value is the tool's schema (or its properties), not a call's."""
    if spec is not None and value in (spec.parameters, _properties(spec)):
        return True
    return (
        bool(value) and value.get("type") == "object" and isinstance(value.get("properties"), dict)
    )


def resolve_arguments(
    recorded: Any, spec: ToolSpec | None, requested: ToolCall | None
) -> tuple[dict[str, Any], Any]:
    """A tool call's arguments, and the recorded value when none of the rules could read it
    (else None).

    Args:
        recorded: what the tool's own record holds (a JSON object, a bare value, None).
        spec: the tool's schema, when the run records it.
        requested: the model's call of this tool (matched by id, else by name).
    """
    properties = _properties(spec)
    if isinstance(recorded, dict):
        recorded = _unwrapped(recorded, properties)
        if _is_schema(recorded, spec):
            recorded = None
    if isinstance(recorded, dict) and recorded:
        return recorded, None
    if requested is not None and requested.arguments:
        return requested.arguments, None
    if isinstance(recorded, str | int | float | bool) and properties and len(properties) == 1:
        return {next(iter(properties)): recorded}, None
    if isinstance(recorded, dict) or recorded is None:
        return {}, None
    return {}, recorded
