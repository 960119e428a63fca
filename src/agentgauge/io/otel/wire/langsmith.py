"""LangSmith runs: a run tree (a run with its ``child_runs``, as ``Client.read_run(...,
load_child_runs=True)`` gives it) or a list of runs linked by ``parent_run_id`` (as
``Client.list_runs`` gives them), one JSON document or one run per line.

Each run becomes a span of the GenAI conventions, and the span reader does the rest:

- ``llm`` -> ``chat``: the model (``extra.metadata.ls_model_name``, else ``inputs.model``), the
  messages (OpenAI's ``inputs.messages``, or LangChain's, whose serialised messages a chat
  model's run holds as ``inputs.messages[0]``), the answer (``outputs.choices[].message``,
  LangChain's ``outputs.generations[0][].message``, else ``outputs.messages``), the tools
  offered (``inputs.tools``, else ``extra.invocation_params.tools``), the response id, and the
  usage (``usage_metadata`` in the outputs, the answer or the metadata, else OpenAI's
  ``outputs.usage``, else LangChain's ``llm_output.token_usage``);
- ``tool`` -> ``execute_tool`` named ``name``: ``inputs`` are the arguments, ``outputs`` the
  result (a lone ``output`` key unwrapped, and a LangChain tool message's content);
- ``error`` -> the span's status;
- a ``chain`` run that produced messages carrying its own name is an agent, ``invoke_agent``
  named so: LangGraph's prebuilt agent and LangChain's ``create_agent`` name their answers
  after the agent (a graph with its default name ``LangGraph``, or any other chain, is no
  agent);
- ``chain``, ``retriever``, ``prompt``, ``parser``, ``embedding`` runs make no step (a chain
  around the calls makes them one run), but a chain's output messages are kept: the root's
  are the run's answer.
LangChain's messages (serialised ``{lc, id: [..., "AIMessage"], kwargs}``, or a state's
``{type: "ai", content, tool_calls: [{name, args, id}]}``) are read as OpenAI's. Run ids and
trace ids are UUIDs; their hex digits are the span and trace ids.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["is_langsmith", "langsmith_spans", "openai_message"]


def _is_run(doc: Any) -> bool:
    return isinstance(doc, dict) and "run_type" in doc and "id" in doc


def is_langsmith(doc: Any) -> bool:
    """Whether a JSON document is a LangSmith run (tree) or a list of runs.

    Args:
        doc: the parsed document.
    """
    if isinstance(doc, list):
        return bool(doc) and all(_is_run(r) for r in doc)
    return _is_run(doc)


def _uuid_hex(value: Any) -> str | None:
    return str(value).replace("-", "") if value else None


def _metadata(run: dict[str, Any]) -> dict[str, Any]:
    """``extra.metadata``, or nothing when either is not an object."""
    extra = run.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, dict) else None
    return metadata if isinstance(metadata, dict) else {}


_ROLES = {
    "human": "user",
    "HumanMessage": "user",
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessage": "system",
    "tool": "tool",
    "ToolMessage": "tool",
}
"""LangChain's message types (a state's ``type``, a serialised message's class) as roles."""


def openai_message(raw: Any) -> Any:
    """A LangChain message as an OpenAI-style message; any other value as it is.

    Args:
        raw: a serialised LangChain message, a state's message dict, or anything else.
    """
    if not isinstance(raw, dict):
        return raw
    fields, kind = raw, raw.get("type")
    if isinstance(raw.get("kwargs"), dict) and isinstance(raw.get("id"), list) and raw["id"]:
        fields, kind = raw["kwargs"], raw["id"][-1]
    role = _ROLES.get(str(kind))
    if role is None:
        return raw
    message: dict[str, Any] = {"role": role, "content": fields.get("content")}
    if fields.get("name"):
        message["name"] = fields["name"]
    calls = fields.get("tool_calls")
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [
            {
                "id": c.get("id"),
                "type": "function",
                "function": {"name": c.get("name"), "arguments": json.dumps(c.get("args") or {})},
            }
            for c in calls
            if isinstance(c, dict)
        ]
    if role == "tool" and fields.get("tool_call_id"):
        message["tool_call_id"] = fields["tool_call_id"]
    return message


def _messages(value: Any) -> list[Any] | None:
    """A list of messages (LangChain's converted), or None when it is not one."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]  # a chat model's run: one list of messages per prompt
    if not isinstance(value, list):
        return None
    return [openai_message(m) for m in value]


def _answers(outputs: dict[str, Any]) -> list[Any] | None:
    """The answer messages of a model call's outputs."""
    choices = outputs.get("choices")
    if isinstance(choices, list):
        return [c["message"] for c in choices if isinstance(c, dict) and "message" in c]
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations and isinstance(generations[0], list):
        return [
            openai_message(g["message"])
            for g in generations[0]
            if isinstance(g, dict) and isinstance(g.get("message"), dict)
        ]
    return _messages(outputs.get("messages"))


def _answer_usage(outputs: dict[str, Any]) -> Any:
    """``usage_metadata`` on a LangChain answer message."""
    generations = outputs.get("generations")
    if not (isinstance(generations, list) and generations and isinstance(generations[0], list)):
        return None
    for generation in generations[0]:
        message = generation.get("message") if isinstance(generation, dict) else None
        fields = message.get("kwargs", message) if isinstance(message, dict) else None
        if isinstance(fields, dict) and isinstance(fields.get("usage_metadata"), dict):
            return fields["usage_metadata"]
    return None


def _usage(run: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    metadata = _metadata(run)
    usage = (
        outputs.get("usage_metadata") or _answer_usage(outputs) or metadata.get("usage_metadata")
    )
    if isinstance(usage, dict):
        return {
            "gen_ai.usage.input_tokens": usage.get("input_tokens"),
            "gen_ai.usage.output_tokens": usage.get("output_tokens"),
        }
    llm_output = outputs.get("llm_output")
    usage = outputs.get("usage") or (
        llm_output.get("token_usage") if isinstance(llm_output, dict) else None
    )
    if isinstance(usage, dict):
        return {
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
        }
    return {}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _llm_attributes(run: dict[str, Any]) -> dict[str, Any]:
    inputs, outputs = _object(run.get("inputs")), _object(run.get("outputs"))
    metadata = _metadata(run)
    params = _object(_object(run.get("extra")).get("invocation_params"))
    llm_output = _object(outputs.get("llm_output"))
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": metadata.get("ls_model_name") or inputs.get("model"),
        "gen_ai.response.model": outputs.get("model") or llm_output.get("model_name"),
        "gen_ai.response.id": outputs.get("id") or llm_output.get("id"),
        "gen_ai.input.messages": _messages(inputs.get("messages")) or inputs.get("messages"),
        "gen_ai.output.messages": _answers(outputs),
        "gen_ai.tool.definitions": inputs.get("tools") or params.get("tools"),
        **_usage(run, outputs),
    }
    return attrs


def _tool_attributes(run: dict[str, Any]) -> dict[str, Any]:
    outputs = run.get("outputs")
    if isinstance(outputs, dict) and list(outputs) == ["output"]:
        outputs = outputs["output"]
    reply = openai_message(outputs)
    if isinstance(reply, dict) and reply.get("role") == "tool":
        outputs = reply.get("content")  # LangChain's ToolMessage: its content is the result
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": run.get("name"),
        "gen_ai.tool.call.arguments": run.get("inputs"),
        "gen_ai.tool.call.result": outputs,
    }


def _chain_attributes(run: dict[str, Any]) -> dict[str, Any]:
    """A chain: no step, but its output messages; an agent when its answers carry its name."""
    kind = run.get("run_type")
    outputs = _object(run.get("outputs"))
    answer = _messages(outputs.get("messages"))
    attrs: dict[str, Any] = {"langsmith.run_type": kind, "gen_ai.output.messages": answer}
    name = run.get("name")
    if kind == "chain" and answer and name:
        named = any(
            isinstance(m, dict) and m.get("role") == "assistant" and m.get("name") == name
            for m in answer
        )
        if named:
            attrs["gen_ai.operation.name"] = "invoke_agent"
            attrs["gen_ai.agent.name"] = name
            attrs["gen_ai.input.messages"] = _messages(_object(run.get("inputs")).get("messages"))
    return attrs


def _span(run: dict[str, Any]) -> dict[str, Any]:
    kind = run.get("run_type")
    attrs = (
        _llm_attributes(run)
        if kind == "llm"
        else _tool_attributes(run)
        if kind == "tool"
        else _chain_attributes(run)
    )
    error = run.get("error")
    return {
        "traceId": _uuid_hex(run.get("trace_id") or run.get("id")),
        "spanId": _uuid_hex(run.get("id")),
        "parentSpanId": _uuid_hex(run.get("parent_run_id")),
        "name": str(run.get("name") or kind),
        "start_time": run.get("start_time"),
        "end_time": run.get("end_time"),
        "attributes": {k: v for k, v in attrs.items() if v is not None},
        "status": {"code": 2, "message": str(error)} if error else {},
    }


def langsmith_spans(doc: Any) -> list[dict[str, Any]]:
    """The runs of a run tree (or a list of runs) as flattened GenAI spans, parents first.

    Args:
        doc: a run with ``child_runs`` or a list of runs (see :func:`is_langsmith`).
    """
    # a stack, the next run last: depth first, parents first, in a time linear in the runs
    todo = list(reversed(doc)) if isinstance(doc, list) else [doc]
    spans = []
    while todo:
        run = todo.pop()
        spans.append(_span(run))
        children = run.get("child_runs")
        if isinstance(children, list):
            todo += [c for c in reversed(children) if isinstance(c, dict)]
    return spans
