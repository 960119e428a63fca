"""The viewer on a free port of 127.0.0.1, in a thread of the test process, over a store holding
the demo run, a second run of the same tasks, and a run whose traces carry hostile content."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.web.app import serving

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo_traces.jsonl"

HOSTILE = [
    "<script>window.__pwned = 1; alert('script')</script>",
    "<img src=x onerror=\"window.__pwned = 2; alert('img')\">",
    "</script><script>window.__pwned = 3; alert('close')</script>",
    "<a href=\"javascript:window.__pwned = 4; alert('link')\">click me</a>",
]
"""Trace content that would run a script if a page put it in as markup."""

SECRET = "sk-live-VIEWERSECRET123456"


def hostile_traces(path: Path) -> Path:
    """Three traces whose every field shows :data:`HOSTILE` content, and a leaked key."""
    lines = []
    for i, text in enumerate(HOSTILE[:3]):
        lines.append(
            {
                "id": f"evil-{i}{text[:12]}",
                "task": {"id": text, "input": text, "category": text, "expected_output": text},
                "output": text,
                "agent": text,
                "steps": [
                    {"index": 0, "kind": "llm", "agent": text, "content": HOSTILE[3]},
                    {
                        "index": 1,
                        "kind": "tool_call",
                        "agent": "a",
                        "tool_call": {"name": text, "arguments": {"q": text, "api_key": SECRET}},
                    },
                    {"index": 2, "kind": "tool_result", "result": {"html": text}, "error": text},
                    {
                        "index": 3,
                        "kind": "message",
                        "agent": text,
                        "recipient": "b",
                        "message_type": "handoff",
                        "content": f"use {SECRET}",
                    },
                ],
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def record_runs(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store with the demo run, the demo run again with other timings (``--seed`` changes
    only durations and tokens), and the hostile run; returns the store and the three run ids
    in that order."""
    db = tmp_path / "viewer.db"
    other = tmp_path / "demo_b.jsonl"
    generator = DEMO.parent / "generate_demo.py"
    subprocess.run(
        [sys.executable, str(generator), "--out", str(other), "--seed", "11"],
        check=True,
        capture_output=True,
    )
    ids = []
    for source in (DEMO, other, hostile_traces(tmp_path / "hostile.jsonl")):
        out = tmp_path / f"{source.stem}.json"
        args = ["evaluate", str(source), "--db", str(db), "--jobs", "1", "--no-progress"]
        result = CliRunner().invoke(app, [*args, "--json", str(out)])
        assert result.exit_code == 0, result.output
        ids.append(json.loads(out.read_text())["run_id"])
    return db, ids


def viewer(db: Path) -> AbstractContextManager[str]:
    """Serve the viewer of ``db``; yields its URL."""
    return serving(db)
