"""Tool-calling test inputs shared by the dataset and CLI tests: OpenAI-format tools and a
DeepFabric conversation shaped as DeepFabric's own docs produce it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

READ_FILE_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "read",
        "parameters": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}},
            "required": ["file_path"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    },
}


def deepfabric_sample(**extra: Any) -> dict[str, Any]:
    """DeepFabric's minimal evaluator sample (research notes A3), with the tool-call id its docs
    use (``call_0``), which its own 9-character validator rejects; ``extra`` keys override or
    add top-level keys."""
    return {
        "messages": [
            {"role": "system", "content": "You can use tools."},
            {"role": "user", "content": "Show config.json"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": '{"file_path": "config.json"}',
                        },
                    }
                ],
            },
            {"role": "tool", "content": '{"debug": true}', "tool_call_id": "call_0"},
            {"role": "assistant", "content": "debug is true"},
        ],
        "tool_context": {
            "executions": [
                {
                    "function_name": "read_file",
                    "arguments": '{"file_path": "config.json"}',
                    "reasoning": "need file",
                    "result": '{"debug": true}',
                }
            ]
        },
        "tools": [READ_FILE_TOOL],
        "metadata": {"conversation_type": "cot"},
        **extra,
    }


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """Write rows as JSONL (a string row is written as it is, to test bad lines)."""
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path
