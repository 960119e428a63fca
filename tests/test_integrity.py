"""Redaction never corrupts data: BFCL ``live_multiple`` and ``live_simple`` scored with their
own ground truth store traces that read back as traces (arguments named like secrets keep
their lists of acceptable values), and every command and viewer page that re-reads them works."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.io.jsonl import ReadError
from agentgauge.model import Task
from agentgauge.store import Store
from agentgauge.toolcall.bfcl import reference_calls
from agentgauge.toolcall.formats.bfcl import read_bfcl
from viewer_server import viewer

runner = CliRunner()
CATEGORIES = ("live_multiple", "live_simple")
# the argument names of these two sets that name a secret (read from the data by hand)
SECRET_ARGUMENTS = {"password", "api_key", "access_token", "token", "nextToken"}


def _tasks(root: Path, category: str) -> list[Task]:
    name = f"BFCL_v4_{category}.json"
    tasks = list(read_bfcl(root / name, root / "possible_answer" / name))
    assert not any(isinstance(t, ReadError) for t in tasks)
    return [t for t in tasks if isinstance(t, Task)]


@pytest.fixture(scope="module")
def scored(
    shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, dict[str, str], dict[str, Task]]]:
    root = shared_data / "bfcl"
    work = tmp_path_factory.mktemp("bfcl")
    db = work / "ag.db"
    runs: dict[str, str] = {}
    tasks: dict[str, Task] = {}
    for category in CATEGORIES:
        found = _tasks(root, category)
        tasks.update((t.id, t) for t in found)
        preds = work / f"{category}.jsonl"
        preds.write_text(
            "".join(
                json.dumps(
                    {
                        "id": t.id,
                        "result": [
                            {c.name: c.arguments}
                            for c in reference_calls(t.tools, t.expected_calls or [])
                        ],
                    }
                )
                + "\n"
                for t in found
            ),
            encoding="utf-8",
        )
        name = f"BFCL_v4_{category}.json"
        result = runner.invoke(
            app,
            ["toolcall", "score", "--dataset", str(root / name),
             "--answers", str(root / "possible_answer" / name), "--predictions", str(preds),
             "--format", "bfcl", "--db", str(db), "--jobs", "1", "--no-progress",
             "--html", str(work / f"{category}.html"), "--json", str(work / f"{category}.json")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert (work / f"{category}.html").stat().st_size > 0
        runs[category] = json.loads((work / f"{category}.json").read_text())["run_id"]
    yield db, runs, tasks


def _redacted(values: list[Any]) -> list[Any]:
    return ["***" if isinstance(v, str) and v else v for v in values]


def test_stored_traces_read_back_with_every_expected_value_kept(
    scored: tuple[Path, dict[str, str], dict[str, Task]],
) -> None:
    db, runs, tasks = scored
    secret_named = 0
    with Store(db) as store:
        for run_id in runs.values():
            for row in store.iter_samples(run_id, with_trace=True):
                trace = row.trace()  # validates as the model it was written from
                assert trace is not None
                original = tasks[trace.task.id]
                assert trace.task.tools == original.tools
                expected = []
                for call in original.expected_calls or []:
                    arguments = {
                        name: _redacted(values) if name in SECRET_ARGUMENTS else values
                        for name, values in call.arguments.items()
                    }
                    secret_named += sum(name in SECRET_ARGUMENTS for name in call.arguments)
                    expected.append(call.model_copy(update={"arguments": arguments}))
                assert trace.task.expected_calls == expected
    # live_multiple's postgres passwords, API keys and tokens; live_simple's nextToken lists
    assert secret_named == 28


def test_reports_and_failures_read_the_stored_runs(
    scored: tuple[Path, dict[str, str], dict[str, Task]], tmp_path: Path
) -> None:
    db, runs, _ = scored
    for run_id in runs.values():
        shown = runner.invoke(
            app, ["show", run_id, "--db", str(db), "--html", str(tmp_path / f"{run_id}.html")]
        )
        assert shown.exit_code == 0, shown.output
        failures = runner.invoke(
            app,
            [
                "toolcall",
                "failures",
                run_id,
                "--db",
                str(db),
                "--json",
                str(tmp_path / f"{run_id}.json"),
            ],
        )
        assert failures.exit_code == 0, failures.output
        doc = json.loads((tmp_path / f"{run_id}.json").read_text())
        assert doc["failures"]  # the ground truth fails where BFCL's own rules cannot pass it


def test_every_viewer_sample_page_answers(
    scored: tuple[Path, dict[str, str], dict[str, Task]],
) -> None:
    db, runs, _ = scored
    with Store(db) as store:
        keys = [(run_id, row.key) for run_id in runs.values() for row in store.iter_samples(run_id)]
    assert len(keys) == 1053 + 258

    with viewer(db) as url:

        def fetch(item: tuple[str, str]) -> int:
            query = urllib.parse.urlencode({"run": item[0], "key": item[1]})
            with urllib.request.urlopen(f"{url}api/sample?{query}", timeout=60) as response:
                doc = json.load(response)
            assert doc["key"] == item[1]
            return int(response.status)

        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(fetch, keys))
    assert set(statuses) == {200}


def test_a_long_trace_is_read_a_page_of_steps_at_a_time(tmp_path: Path) -> None:
    steps = [{"index": i, "kind": "llm", "content": f"step {i}"} for i in range(5000)]
    trace = {"id": "long", "task": {"id": "t"}, "output": "done", "steps": steps}
    data = tmp_path / "long.jsonl"
    data.write_text(json.dumps(trace) + "\n")
    db = tmp_path / "s.db"
    result = runner.invoke(
        app, ["evaluate", str(data), "--db", str(db), "--jobs", "1", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        (run,) = store.list_runs()
        (row,) = store.iter_samples(run.id)
    with viewer(db) as url:

        def page(offset: int) -> dict[str, Any]:
            query = urllib.parse.urlencode({"run": run.id, "key": row.key, "steps_offset": offset})
            with urllib.request.urlopen(f"{url}api/sample?{query}", timeout=60) as response:
                return dict(json.load(response)["trace"])

        first, last = page(0), page(4000)
    assert (first["steps_total"], first["steps_offset"], len(first["steps"])) == (5000, 0, 2000)
    assert [s["index"] for s in last["steps"]] == list(range(4000, 5000))


def test_a_token_count_too_large_to_sum_is_a_located_error(tmp_path: Path) -> None:
    good = {"id": "g", "task": {"id": "t"}, "output": "ok", "usage": {"input_tokens": 3}}
    huge = {**good, "id": "h", "usage": {"input_tokens": int("9" * 4000), "cost_usd": 1}}
    data = tmp_path / "t.jsonl"
    data.write_text(json.dumps(good) + "\n" + json.dumps(huge) + "\n")
    db, out = tmp_path / "s.db", tmp_path / "r.json"
    args = ["evaluate", str(data), "--db", str(db), "--jobs", "1", "--no-progress"]
    result = runner.invoke(app, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert [s["id"] for s in doc["samples"]] == ["g"]
    (error,) = doc["errors"]
    assert (error["line"], error["field"]) == (2, "usage.input_tokens")
    # the stored run reads back: its summary sums what it holds
    shown = runner.invoke(app, ["show", doc["run_id"], "--db", str(db)])
    assert shown.exit_code == 0 and "Traceback" not in shown.output
