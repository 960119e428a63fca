"""The `agentgauge` command end to end: real files, a real SQLite store, real processes."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.model import Trace
from agentgauge.store import Store
from report_data import embedded

runner = CliRunner()


@metric("cli_steps")
def _cli_steps(trace: Trace) -> MetricResult:
    return MetricResult(value=min(1.0, len(trace.steps) / 4), details={"n": len(trace.steps)})


def _lines(n: int) -> list[str]:
    return [
        json.dumps(
            {
                "id": f"r{i}",
                "task": {"id": f"t{i}", "input": "<script>alert(1)</script>"},
                "output": f"<img src=x onerror=alert({i})>",
                "steps": [
                    {"index": j, "kind": "llm", "content": "<b>step</b>"} for j in range(i % 5)
                ],
            }
        )
        for i in range(n)
    ]


def _suite(tmp_path: Path, metric_name: str = "cli_steps") -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(f'name = "cli"\nmetrics = ["{metric_name}"]\n[weights]\n{metric_name} = 1\n')
    return path


def test_evaluate_good_and_bad_lines_json_csv_html(tmp_path: Path) -> None:
    lines = _lines(12)
    lines[3] = "{this is not json"
    lines[6] = json.dumps({"id": "no-task", "output": 1})
    data = tmp_path / "traces.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out, csv_out, html = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.html"
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(data),
            "--suite",
            str(_suite(tmp_path)),
            "--db",
            str(tmp_path / "a.db"),
            "--jobs",
            "1",
            "--json",
            str(out),
            "--csv",
            str(csv_out),
            "--html",
            str(html),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert set(doc) >= {"run_id", "suite", "config", "aggregate", "samples", "errors"}
    assert len(doc["samples"]) == 10
    assert [(e["line"], e["field"]) for e in doc["errors"]] == [(4, None), (7, "task")]
    sample = doc["samples"][0]
    assert set(sample) >= {
        "id",
        "task_id",
        "metrics",
        "details",
        "composite",
        "coverage",
        "recommendation",
        "band",
        "error",
    }
    expected = [min(1.0, (i % 5) / 4) for i in range(12) if i not in (3, 6)]
    assert [s["metrics"]["cli_steps"] for s in doc["samples"]] == expected
    agg = doc["aggregate"]
    assert agg["cli_steps"]["n"] == 10
    assert abs(agg["composite"]["mean"] - sum(expected) / 10) < 1e-12
    # mean 4.25 / 10 = 0.425: weak_reject (≥ 0.4) and band poor (< 0.5)
    assert agg["composite"]["recommendation"] == "weak_reject"
    assert agg["composite"]["recommendation_weight"] == -0.7
    assert agg["composite"]["band"] == "poor"
    assert len(csv_out.read_text().strip().splitlines()) == 11
    page = html.read_text()
    report, pages = embedded(page)
    assert report["run"]["run"]["recommendation"] == "weak_reject"
    assert "<script>alert(1)</script>" not in page and "<img src=x" not in page
    # the content is kept, as text for the page to show (escaped where it is embedded)
    first = pages[report["table"]["rows"][0][0]]["trace"]
    assert first["task"]["input"] == "<script>alert(1)</script>"
    assert first["output"] == "<img src=x onerror=alert(0)>"
    # self-contained: nothing is loaded from elsewhere
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page
    # the terminal names both bad lines with their file, line and field
    assert "2 input lines could not be read" in result.output
    assert f"{data}:4: invalid JSON" in result.output
    assert f"{data}:7: task: Field required" in result.output


def test_fail_under_and_usage_errors(tmp_path: Path) -> None:
    data = tmp_path / "t.jsonl"
    data.write_text("\n".join(_lines(5)) + "\n")
    suite = str(_suite(tmp_path))
    db = str(tmp_path / "a.db")

    def gate(threshold: str) -> int:
        args = [
            "evaluate",
            str(data),
            "--suite",
            suite,
            "--db",
            db,
            "--jobs",
            "1",
            "--no-progress",
            "--fail-under",
            threshold,
        ]
        return runner.invoke(app, args).exit_code

    assert gate("0.4") == 0  # mean = (0 + .25 + .5 + .75 + 1) / 5 = 0.5
    assert gate("0.6") == 1
    bad = tmp_path / "bad.toml"
    bad.write_text('metrics = ["cli_steps"]\n[weights]\nclisteps = 1\n')
    res = runner.invoke(app, ["evaluate", str(data), "--suite", str(bad), "--db", db])
    assert res.exit_code == 2 and "clisteps" in res.output
    res = runner.invoke(app, ["evaluate", str(data), "--suite", "nosuch", "--db", db])
    assert res.exit_code == 2 and "nosuch" in res.output
    res = runner.invoke(app, ["evaluate", str(tmp_path / "missing.jsonl"), "--db", db])
    assert res.exit_code == 2
    res = runner.invoke(app, ["evaluate", "--db", db])
    assert res.exit_code == 2 and "at least one trace file" in res.output
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET kind = 'toolcall' WHERE rowid = 1")
        other = con.execute("SELECT id FROM runs WHERE rowid = 1").fetchone()[0]
    res = runner.invoke(app, ["evaluate", "--db", db, "--resume", other])
    assert res.exit_code == 2 and "is a toolcall run" in res.output
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET kind = 'evaluate' WHERE rowid = 1")
    # an output in a folder that does not exist is refused before anything runs
    nowhere = tmp_path / "no_such_folder" / "out.json"
    res = runner.invoke(app, ["evaluate", str(data), "--db", db, "--json", str(nowhere)])
    assert res.exit_code == 2 and "no_such_folder' does not exist" in res.output
    # a bad option value is refused before any run is recorded, whatever the jobs
    bad_value = tmp_path / "bad_value.toml"
    bad_value.write_text('extends = "behavior"\n[options.efficiency]\nmax_steps_ref = "abc"\n')
    for jobs in ("1", "2"):
        args = ["evaluate", str(data), "--suite", str(bad_value), "--db", db, "--jobs", jobs]
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and str(bad_value) in res.output
        assert "option 'max_steps_ref': expected a finite number, got 'abc'" in res.output
    listed = runner.invoke(app, ["runs", "--db", db])
    assert listed.exit_code == 0 and listed.output.count("completed") == 2
    run_id = json.loads(
        json.dumps(
            sqlite3.connect(db).execute("SELECT id FROM runs ORDER BY rowid LIMIT 1").fetchone()[0]
        )
    )
    shown = runner.invoke(app, ["show", run_id[:6], "--db", db])
    assert shown.exit_code == 0 and "cli_steps" in shown.output


def _plugin(tmp_path: Path) -> Path:
    """A third-party metric package exposed through the agentgauge.metrics entry point."""
    root = tmp_path / "plugin"
    dist = root / "slowplug-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: slowplug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[agentgauge.metrics]\nslow_plugin = slowplug:slow\n")
    (root / "slowplug.py").write_text(
        "import time\n"
        "from agentgauge.metrics.base import MetricResult\n"
        "def slow(trace, *, delay: float = 0.004):\n"
        "    time.sleep(delay)\n"
        "    return MetricResult(value=len(trace.steps) / 4)\n"
    )
    return root


def _slow_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a subprocess that sees the slow plugin metric."""
    plugin = _plugin(tmp_path)
    return {**os.environ, "PYTHONPATH": f"{plugin}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _start_slow_run(tmp_path: Path, n: int, db: Path) -> subprocess.Popen[bytes]:
    """An evaluation of n traces with the slow plugin in its own process group, returned once
    at least 200 samples are committed (or it ended)."""
    data = tmp_path / "t.jsonl"
    data.write_text("\n".join(_lines(n)) + "\n")
    suite = str(_suite(tmp_path, "slow_plugin"))
    cmd = [sys.executable, "-m", "agentgauge", "evaluate", str(data), "--suite", suite]
    cmd += ["--db", str(db), "--jobs", "2", "--batch-size", "50", "--no-progress"]
    proc = subprocess.Popen(
        cmd,
        env=_slow_env(tmp_path),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
        try:
            if sqlite3.connect(db).execute("SELECT COUNT(*) FROM samples").fetchone()[0] >= 200:
                break
        except sqlite3.OperationalError:
            continue
    return proc


def test_sigkill_then_resume_scores_every_sample_exactly_once(tmp_path: Path) -> None:
    n = 1500
    db = tmp_path / "k.db"
    env = _slow_env(tmp_path)
    proc = _start_slow_run(tmp_path, n, db)
    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    con = sqlite3.connect(db)
    run_id, status = con.execute("SELECT id, status FROM runs").fetchone()
    partial = con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    con.close()
    assert status == "running" and 0 < partial < n
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "evaluate",
            "--db",
            str(db),
            "--resume",
            run_id,
            "--jobs",
            "2",
            "--batch-size",
            "50",
            "--no-progress",
            "--json",
            str(tmp_path / "out.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads((tmp_path / "out.json").read_text())
    ids = [s["id"] for s in doc["samples"]]
    assert ids == [f"r{i}" for i in range(n)]
    assert doc["status"] == "completed"
    assert [s["metrics"]["slow_plugin"] for s in doc["samples"]] == [(i % 5) / 4 for i in range(n)]


def test_schema_is_the_trace_schema_and_validates_a_line() -> None:
    import jsonschema  # the reference validator (the dev extra)

    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    validator = jsonschema.Draft202012Validator(schema)
    good = json.loads(_lines(1)[0])
    assert list(validator.iter_errors(good)) == []
    assert Trace.model_validate(good).id == good["id"]
    # what the reader refuses, the schema refuses too
    for bad in ({"id": "x"}, {**good, "steps": [{"index": 0, "kind": "dance"}]}):
        assert list(validator.iter_errors(bad)) != []


def test_metrics_lists_every_registered_metric_with_its_direction() -> None:
    result = runner.invoke(app, ["metrics"])
    assert result.exit_code == 0
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if "│" in line}
    for name in ("accuracy", "tool_selection", "semantic", "communication_overhead", "cli_steps"):
        assert name in rows
    assert "lower" in rows["communication_overhead"] and "higher" in rows["accuracy"]


def test_an_unknown_executor_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "t.jsonl"
    data.write_text(_lines(1)[0] + "\n")
    res = runner.invoke(
        app, ["evaluate", str(data), "--db", str(tmp_path / "x.db"), "--executor", "x"]
    )
    assert res.exit_code == 2 and "--executor must be 'local' or 'ray'" in res.output


def test_the_html_report_hides_credentials_found_in_traces(tmp_path: Path) -> None:
    trace = {
        "id": "leaky",
        "task": {"id": "t"},
        "output": {"debug": "connected with password: hunter2"},
        "steps": [
            {"index": 0, "kind": "llm", "content": "use api_key=sk_live_51HxQ2eZvKYlo2C9 now"},
            {
                "index": 1,
                "kind": "tool_call",
                "tool_call": {"name": "login", "arguments": {"token": "tok-abcdef", "user": "ann"}},
            },
            {"index": 2, "kind": "llm", "content": 'sent {"api_key": "sk-live-QUOTEDSECRET1"}'},
            {"index": 3, "kind": "llm", "content": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9x"},
            {
                "index": 4,
                "kind": "llm",
                "content": "keys ghp_ABCDEFGHIJKLMNOPQRSTUV and AKIAABCDEFGHIJKLMNOP",
            },
            {"index": 5, "kind": "llm", "content": 'password: "correct horse battery"'},
            {
                "index": 6,
                "kind": "tool_call",
                "tool_call": {"name": "x", "arguments": {"pass": "pw1-never-shown"}},
            },
        ],
    }
    data = tmp_path / "leaky.jsonl"
    data.write_text(json.dumps(trace) + "\n")
    html = tmp_path / "r.html"
    args = ["evaluate", str(data), "--db", str(tmp_path / "l.db"), "--html", str(html)]
    assert runner.invoke(app, [*args, "--jobs", "1", "--no-progress"]).exit_code == 0
    page = html.read_text()
    embedded_text = json.dumps(embedded(page))
    for secret in (
        "hunter2",
        "sk_live_51HxQ2eZvKYlo2C9",
        "tok-abcdef",
        "QUOTEDSECRET1",
        "eyJhbGciOiJIUzI1NiJ9x",
        "ghp_ABCDEFGHIJKLMNOPQRSTUV",
        "AKIAABCDEFGHIJKLMNOP",
        "battery",
        "pw1-never-shown",
    ):
        assert secret not in page and secret not in embedded_text, secret
    assert "[credential hidden]" in embedded_text and "ann" in embedded_text


def test_a_file_that_is_not_a_store_is_a_usage_error(tmp_path: Path) -> None:
    not_a_store = tmp_path / "notes.db"
    not_a_store.write_text("these are notes, not a database\n")
    for args in (["runs"], ["show", "abc"]):
        done = subprocess.run(
            [sys.executable, "-m", "agentgauge", *args, "--db", str(not_a_store)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert "cannot use as a store: file is not a database" in done.stderr
        assert "Traceback" not in done.stderr


def test_csv_cells_that_a_spreadsheet_would_run_are_made_inert(tmp_path: Path) -> None:
    import csv as csv_module

    lines = [
        json.dumps({"id": '=HYPERLINK("http://x")', "task": {"id": "+cmd|calc"}}),
        json.dumps({"id": "plain", "task": {"id": "t"}}),
    ]
    data = tmp_path / "f.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "f.csv"
    args = ["evaluate", str(data), "--suite", str(_suite(tmp_path)), "--db", str(tmp_path / "f.db")]
    assert runner.invoke(app, [*args, "--csv", str(out), "--jobs", "1"]).exit_code == 0
    rows = list(csv_module.DictReader(out.open()))
    assert [(r["id"], r["task_id"]) for r in rows] == [
        ('\'=HYPERLINK("http://x")', "'+cmd|calc"),
        ("plain", "t"),
    ]
    assert rows[0]["cli_steps"] == "0.0"  # numbers stay numbers


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    proc = _start_slow_run(tmp_path, 1500, db)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    run_id, status = sqlite3.connect(db).execute("SELECT id, status FROM runs").fetchone()
    assert proc.returncode == 130 and status == "running"
    assert f"agentgauge evaluate --resume {run_id}" in err.decode()
    assert "Traceback" not in err.decode()


def test_version() -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"agentgauge {version('agentgauge')}\n"


def test_an_empty_input_is_exit_1_with_a_hint(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    args = ["evaluate", str(empty), "--db", str(tmp_path / "e.db"), "--jobs", "1"]
    result = runner.invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 1
    assert "hint: the input holds no line" in " ".join(result.output.split())


def test_runs_are_named_and_tagged_and_listed_with_their_source(tmp_path: Path) -> None:
    data = tmp_path / "named.jsonl"
    data.write_text("\n".join(_lines(3)) + "\n")
    db = str(tmp_path / "n.db")
    args = ["evaluate", str(data), "--db", db, "--jobs", "1", "--no-progress"]
    labels = ["--name", "baseline-agent-v2", "--tag", "nightly", "--tag", "v2"]
    out = tmp_path / "n.json"
    assert runner.invoke(app, [*args, *labels, "--json", str(out)]).exit_code == 0
    config = json.loads(out.read_text())["config"]
    assert (config["name"], config["tags"]) == (
        "baseline-agent-v2",
        ["nightly", "v2"],
    )
    listed = subprocess.run(
        [sys.executable, "-m", "agentgauge", "runs", "--db", db],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    ).stdout
    # nothing is cut at 80 columns
    assert "…" not in listed and max(len(line) for line in listed.splitlines()) <= 80
    words = listed.split()
    for shown in ("baseline-agent-v2", "#nightly", "#v2", "evaluate", "named.jsonl"):
        assert shown in words, shown


def test_a_gate_rejects_a_leaked_credential_whatever_the_composite(tmp_path: Path) -> None:
    leak = {
        "id": "leak",
        "task": {"id": "t", "input": "Connect", "expected_output": {"status": "connected"}},
        "output": {"status": "connected", "note": "used password: hunter2"},
        "steps": [{"index": 0, "kind": "llm", "agent": "a", "content": "password: hunter2"}],
    }
    data = tmp_path / "leak.jsonl"
    data.write_text(json.dumps(leak) + "\n")
    gated = tmp_path / "gated.toml"
    gated.write_text('name = "gated"\nextends = "behavior"\n[gates]\nsafety = 0.9\n')
    docs = {}
    for suite, status in (("behavior", 0), (str(gated), 3)):
        out = tmp_path / f"{Path(suite).stem}.json"
        args = ["evaluate", str(data), "--suite", suite, "--db", str(tmp_path / "g.db")]
        result = runner.invoke(app, [*args, "--jobs", "1", "--no-progress", "--json", str(out)])
        # a failed gate fails CI: exit 3, also when --fail-under passes
        assert result.exit_code == status, result.output
        docs[suite] = (json.loads(out.read_text()), " ".join(result.output.split()))
        passing = runner.invoke(app, [*args, "--jobs", "1", "--no-progress", "--fail-under", "0.5"])
        assert passing.exit_code == status, passing.output
    (plain, _), (strict, said) = docs["behavior"], docs[str(gated)]
    assert plain["gates_failed"] == {}
    # the output and the step both leak: safety 1.0 x 0.5 x 0.7
    assert plain["samples"][0]["metrics"]["safety"] == pytest.approx(0.35)
    assert plain["samples"][0]["composite"] > 0.8
    assert plain["samples"][0]["recommendation"] == "accept"
    assert "gates" not in plain["samples"][0]["details"]
    assert strict["samples"][0]["recommendation"] == "reject"
    assert strict["samples"][0]["details"]["gates"]["note"] == "safety 0.350 < 0.9"
    assert strict["aggregate"]["composite"]["recommendation"] == "reject"
    assert (
        strict["gates_failed"]
        == strict["aggregate"]["composite"]["gates_failed"]
        == {"safety": {"value": pytest.approx(0.35), "floor": 0.9}}
    )
    # showing the run again is not a new verdict: exit 0
    shown = runner.invoke(app, ["show", strict["run_id"], "--db", str(tmp_path / "g.db")])
    assert shown.exit_code == 0, shown.output
    assert "gate failed: safety 0.350 < 0.9" in " ".join(shown.output.split())
    assert "gate failed: safety 0.350 < 0.9: the run is a reject" in said
    assert "[gates]" in said


def test_missing_extras_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "t.jsonl"
    data.write_text("\n".join(_lines(2)) + "\n")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the 'ray' extra were missing
    monkeypatch.setitem(sys.modules, "starlette", None)  # and the 'view' extra
    args = ["evaluate", str(data), "--db", str(tmp_path / "r.db"), "--executor", "ray"]
    result = runner.invoke(app, [*args, "--no-progress"])
    assert (result.exit_code, result.output) == (
        2,
        "error: the ray executor needs the 'ray' extra: pip install 'agentgauge[ray]'\n",
    )
    viewer = runner.invoke(app, ["view", "--db", str(tmp_path / "r.db")])
    assert (viewer.exit_code, viewer.output) == (
        2,
        "error: the viewer needs starlette, in the 'view' extra: pip install 'agentgauge[view]'\n",
    )


@pytest.mark.parametrize("command", [["tune"], ["toolcall", "run"], ["evaluate"], ["runs"]])
def test_help_at_80_columns_keeps_option_names_whole(command: list[str]) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "agentgauge", *command, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    ).stdout
    assert max(len(line) for line in shown.splitlines()) <= 80
    for clutter in ("<int range>", "<int>", "<str>", "<path>", "<float>", "<bool>", "list[str]"):
        assert clutter not in shown, clutter
    # an option's name and its value stay on their line
    assert not [line for line in shown.splitlines() if line.rstrip().endswith("…")]
    if command == ["tune"]:
        assert "--tasks-per-episode N " in shown


def test_help_names_the_arguments() -> None:
    """compare [OPTIONS] RUN_A RUN_B, not {TEXT} {TEXT}; no type tag beside an argument."""
    for command, usage, first in (
        (["compare"], "compare [OPTIONS] RUN_A RUN_B", "RUN_A  Baseline run id.  [required]"),
        (["evaluate"], "evaluate [OPTIONS] [PATHS]...", "[PATHS]...  JSONL trace files"),
        (["import"], "import [OPTIONS] PATHS...", "PATHS...  Files to import."),
        (["toolcall", "failures"], "failures [OPTIONS] RUN_ID", "RUN_ID  Run id"),
        (["judge", "preview"], "preview [OPTIONS] TRACES", "TRACES  Native JSONL trace file."),
        (["metrics"], "metrics [OPTIONS] [NAME]", "[NAME]  One metric"),
    ):
        shown = runner.invoke(app, [*command, "--help"]).output
        lines = [line.strip() for line in shown.splitlines()]
        assert lines[0].endswith(usage), lines[0]
        arguments = lines[lines.index("Arguments:") + 1]
        assert arguments.startswith(first), arguments
        assert "<" not in shown.split("Options:")[0] and "{" not in lines[0]

    def leaves(group: Any, path: list[str]) -> Iterator[list[str]]:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from leaves(command, [*path, name])
            else:
                yield [*path, name]

    # every command: its arguments by name, never a type in braces or angle brackets
    commands = list(leaves(typer.main.get_command(app), []))
    assert ["judge", "pairwise"] in commands and len(commands) > 20
    for command in commands:
        usage = runner.invoke(app, [*command, "--help"]).output.splitlines()[0]
        assert "{" not in usage and "<" not in usage, usage


def test_metrics_are_listed_whole_in_a_pipe_and_one_by_one() -> None:
    from agentgauge.metrics.base import get_metric_info, list_metrics

    listed = runner.invoke(app, ["metrics", "--json"])
    assert listed.exit_code == 0
    documents = json.loads(listed.output)
    assert [d["name"] for d in documents] == [m.name for m in list_metrics()]
    adaptability = next(d for d in documents if d["name"] == "adaptability")
    options = get_metric_info("adaptability").options
    assert adaptability["options"] == json.loads(json.dumps(options))  # tuples as lists
    # piped (CliRunner is not a terminal) the table folds its cells: no option is cut
    table = runner.invoke(app, ["metrics"]).output
    assert "…" not in table
    one = runner.invoke(app, ["metrics", "adaptability"])
    assert one.exit_code == 0
    lines = one.output.splitlines()
    assert lines[0].startswith("adaptability: ") and lines[0].endswith("(higher is better)")
    assert lines[1:] == [f"  {k} = {v!r}" for k, v in options.items()]
    assert json.loads(runner.invoke(app, ["metrics", "safety", "--json"]).output)["name"] == (
        "safety"
    )
    typo = runner.invoke(app, ["metrics", "acuracy"])
    assert typo.exit_code == 2
    assert "unknown metric 'acuracy' (did you mean 'accuracy'?)" in typo.output


@pytest.mark.parametrize(
    ("suite", "said"),
    [
        ("behaviour", "unknown suite 'behaviour' (did you mean 'behavior'?)"),
        ('metrics = ["acuracy"]', "unknown metric 'acuracy' (did you mean 'accuracy'?)"),
        (
            'extends = "behavior"\n[weights]\nacuracy = 1',
            "unknown weight key 'acuracy' (did you mean 'accuracy'?)",
        ),
        (
            'extends = "behavior"\n[wieghts]\naccuracy = 1',
            "unknown key 'wieghts' (did you mean 'weights'?)",
        ),
        (
            'extends = "behavior"\n[thresholds]\nacept = 0.9',
            "unknown key 'thresholds.acept' (did you mean 'accept'?)",
        ),
        (
            'extends = "behavior"\n[options.accuracy]\nnormalize_string = true',
            "unknown option 'normalize_string' (did you mean 'normalize_strings'?)",
        ),
        ('extends = "behavour"', "extends: unknown suite 'behavour' (did you mean 'behavior'?)"),
        (
            'extends = "behavior"\n[gates]\nsafty = 0.9',
            "unknown metric 'safty' (did you mean 'safety'?)",
        ),
    ],
)
def test_a_misspelt_name_gets_a_did_you_mean(tmp_path: Path, suite: str, said: str) -> None:
    if "\n" in suite or "=" in suite:
        path = tmp_path / "s.toml"
        path.write_text(f'name = "s"\n{suite}\n', encoding="utf-8")
        suite = str(path)
    data = tmp_path / "t.jsonl"
    data.write_text(json.dumps({"id": "a", "task": {"id": "t"}}) + "\n")
    done = runner.invoke(
        app, ["evaluate", str(data), "--suite", suite, "--db", str(tmp_path / "d.db")]
    )
    assert done.exit_code == 2 and said in " ".join(done.output.split())
    wrong_format = runner.invoke(app, ["evaluate", str(data), "--format", "otl"])
    assert "not 'otl' (did you mean 'otel'?)" in " ".join(wrong_format.output.split())


@pytest.mark.parametrize("content", ["", "garbage\nmore garbage\n"])
def test_an_input_with_no_trace_is_a_failed_run(tmp_path: Path, content: str) -> None:
    """An empty or garbage input scores nothing: the run is failed, not a completed run of 0
    samples, and the command exits 1 saying why."""
    data = tmp_path / "t.jsonl"
    data.write_text(content)
    db = tmp_path / "d.db"
    done = runner.invoke(app, ["evaluate", str(data), "--db", str(db), "--no-progress"])
    assert done.exit_code == 1
    with Store(db) as store:
        (run,) = store.list_runs()
    assert (run.status, run.n_samples, run.n_errors) == ("failed", 0, content.count("\n"))
    assert "hint:" in done.output
