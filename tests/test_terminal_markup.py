"""Data is printed as text, never read as rich markup: a suite, a metric or a parameter named
like a markup tag is shown as it is, and the run's files are written before the terminal."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentgauge.cli import app
from toolcall_samples import READ_FILE_TOOL, SEARCH_TOOL, deepfabric_sample, write_jsonl
from toolcall_server import tool_message

runner = CliRunner()
TAG = "[/bold]"


def test_a_suite_named_like_markup_is_shown_and_its_store_stays_usable(tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(f'name = "{TAG}x"\nmetrics = ["accuracy"]\n[weights]\naccuracy = 1\n')
    data = tmp_path / "t.jsonl"
    data.write_text(json.dumps({"id": "a", "task": {"id": "t"}, "output": "x"}) + "\n")
    db, out = tmp_path / "s.db", tmp_path / "o.json"
    args = ["evaluate", str(data), "--suite", str(suite), "--db", str(db), "--no-progress"]
    result = runner.invoke(app, [*args, "--jobs", "1", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert f"suite {TAG}x" in result.output
    doc = json.loads(out.read_text())
    assert doc["suite"] == f"{TAG}x"
    listing = runner.invoke(app, ["runs", "--db", str(db)])
    assert listing.exit_code == 0, listing.output
    assert f"{TAG}x" in listing.output
    shown = runner.invoke(app, ["show", doc["run_id"], "--db", str(db)])
    assert shown.exit_code == 0 and f"suite {TAG}x" in shown.output


def test_a_parameter_named_like_markup_is_shown_by_failures(tmp_path: Path) -> None:
    tools = [READ_FILE_TOOL, SEARCH_TOOL]
    dataset = write_jsonl(tmp_path / "df.jsonl", [deepfabric_sample(id="df", tools=tools)])
    call = tool_message("read_file", {"file_path": "config.json", TAG: 1}, call_id="call_0")
    preds = write_jsonl(tmp_path / "p.jsonl", [{"id": "df", "result": call}])
    db, out = tmp_path / "s.db", tmp_path / "o.json"
    scored = runner.invoke(
        app,
        ["toolcall", "score", "--dataset", str(dataset), "--predictions", str(preds),
         "--format", "deepfabric", "--turns", "last", "--db", str(db), "--jobs", "1",
         "--no-progress",
         "--json", str(out)],
    )  # fmt: skip
    assert scored.exit_code == 0, scored.output
    run_id = json.loads(out.read_text())["run_id"]
    shown = runner.invoke(app, ["toolcall", "failures", run_id, "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert TAG in shown.output
