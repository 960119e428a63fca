"""LangSmith runs: a run tree (a run with its ``child_runs``, as ``Client.read_run(...,
load_child_runs=True)`` gives it) or a list of runs linked by ``parent_run_id`` (as
``Client.list_runs`` gives them), one JSON document or one run per line.

Each run becomes a span of the GenAI conventions, and the span reader does the rest:

- ``llm`` -> ``chat``: the model (``extra.metadata.ls_model_name``, else ``inputs.model``), the
  OpenAI-format ``inputs.messages``, the answer (``outputs.choices[].message``, else
  ``outputs.messages``), the tools offered (``inputs.tools``), the response id, and the usage
  (``usage_metadata`` in the outputs or the metadata, else OpenAI's ``outputs.usage``);
- ``tool`` -> ``execute_tool`` named ``name``: ``inputs`` are the arguments, ``outputs`` the
  result (a lone ``output`` key unwrapped);
- ``error`` -> the span's status;
- ``chain``, ``retriever``, ``prompt``, ``parser``, ``embedding`` runs make no step (a chain
  around the calls makes them one run).
Run ids and trace ids are UUIDs; their hex digits are the span and trace ids.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_langsmith", "langsmith_spans"]


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


def _usage(run: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    metadata = _metadata(run)
    usage = outputs.get("usage_metadata") or metadata.get("usage_metadata")
    if isinstance(usage, dict):
        return {
            "gen_ai.usage.input_tokens": usage.get("input_tokens"),
            "gen_ai.usage.output_tokens": usage.get("output_tokens"),
        }
    usage = outputs.get("usage")
    if isinstance(usage, dict):
        return {
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
        }
    return {}


def _llm_attributes(run: dict[str, Any]) -> dict[str, Any]:
    inputs: dict[str, Any] = run["inputs"] if isinstance(run.get("inputs"), dict) else {}
    outputs: dict[str, Any] = run["outputs"] if isinstance(run.get("outputs"), dict) else {}
    metadata = _metadata(run)
    choices = outputs.get("choices")
    answer = (
        [c["message"] for c in choices if isinstance(c, dict) and "message" in c]
        if isinstance(choices, list)
        else outputs.get("messages")
    )
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": metadata.get("ls_model_name") or inputs.get("model"),
        "gen_ai.response.model": outputs.get("model"),
        "gen_ai.response.id": outputs.get("id"),
        "gen_ai.input.messages": inputs.get("messages"),
        "gen_ai.output.messages": answer,
        "gen_ai.tool.definitions": inputs.get("tools"),
        **_usage(run, outputs),
    }
    return attrs


def _tool_attributes(run: dict[str, Any]) -> dict[str, Any]:
    outputs = run.get("outputs")
    if isinstance(outputs, dict) and list(outputs) == ["output"]:
        outputs = outputs["output"]
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": run.get("name"),
        "gen_ai.tool.call.arguments": run.get("inputs"),
        "gen_ai.tool.call.result": outputs,
    }


def _span(run: dict[str, Any]) -> dict[str, Any]:
    kind = run.get("run_type")
    attrs = (
        _llm_attributes(run)
        if kind == "llm"
        else _tool_attributes(run)
        if kind == "tool"
        else {"langsmith.run_type": kind}
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
