"""Outputs never destroy a file: written beside the target and renamed when complete; an output
that is the store, an input or another output is refused before any work; a full disk or a
folder that cannot be written is one line, and the store stays resumable."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentgauge._atomic import atomic_path
from agentgauge.cli import app
from agentgauge.io.importers import convert
from agentgauge.io.jsonl import ReadError
from agentgauge.model import Task, Trace

runner = CliRunner()


def _traces(path: Path, n: int) -> Path:
    lines = [
        json.dumps({"id": f"r{i}", "task": {"id": f"t{i}"}, "output": "x" * 200}) for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _evaluate(tmp_path: Path, data: Path, *extra: str) -> tuple[int, str]:
    db = tmp_path / "s.db"
    args = ["evaluate", str(data), "--db", str(db), "--jobs", "1", "--no-progress", *extra]
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def test_an_output_on_the_store_is_refused_before_any_work(tmp_path: Path) -> None:
    data = _traces(tmp_path / "t.jsonl", 3)
    assert _evaluate(tmp_path, data)[0] == 0
    store = (tmp_path / "s.db").read_bytes()
    code, output = _evaluate(tmp_path, data, "--csv", str(tmp_path / "s.db"))
    assert code == 2
    assert "--csv" in output and "is the store" in output
    assert (tmp_path / "s.db").read_bytes() == store
    # the store holds the one run of the first call: the refused one never started
    con = sqlite3.connect(tmp_path / "s.db")
    assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


@pytest.mark.parametrize(
    ("option", "target"), [("--json", "t.jsonl"), ("--html", "./sub/../t.jsonl")]
)
def test_an_output_on_an_input_is_refused(
    tmp_path: Path, option: str, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _traces(tmp_path / "t.jsonl", 3)
    (tmp_path / "sub").mkdir()
    before = data.read_bytes()
    monkeypatch.chdir(tmp_path)
    code, output = _evaluate(tmp_path, data, option, target)
    assert code == 2 and "is the input" in output
    assert data.read_bytes() == before


def test_two_outputs_on_one_file_are_refused(tmp_path: Path) -> None:
    data = _traces(tmp_path / "t.jsonl", 3)
    out = str(tmp_path / "o")
    code, output = _evaluate(tmp_path, data, "--json", out, "--html", out)
    assert code == 2 and "--html" in output and "the file of --json" in output
    assert not Path(out).exists()


def test_a_hard_link_to_an_input_is_the_input(tmp_path: Path) -> None:
    data = _traces(tmp_path / "t.jsonl", 3)
    os.link(data, tmp_path / "alias.json")
    code, _ = _evaluate(tmp_path, data, "--json", str(tmp_path / "alias.json"))
    assert code == 2


def test_import_refuses_its_input_and_a_crash_keeps_the_old_out(tmp_path: Path) -> None:
    src = tmp_path / "chats.jsonl"
    src.write_text("{}\n")
    result = runner.invoke(app, ["import", str(src), "--out", str(src), "--format", "openai-chat"])
    assert result.exit_code == 2 and src.read_text() == "{}\n"

    out = tmp_path / "out.jsonl"
    out.write_text("the previous import\n")

    def crashing(path: str | Path) -> list[Trace | ReadError]:
        class Crash(list[Trace | ReadError]):
            def __iter__(self):  # type: ignore[no-untyped-def]
                yield Trace(id="a", task=Task(id="t"))
                raise KeyboardInterrupt  # Ctrl-C while the file is written

        return Crash()

    with pytest.raises(KeyboardInterrupt):
        convert([src], out, crashing)
    assert out.read_text() == "the previous import\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_atomic_path_keeps_the_old_file_and_its_mode_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "o.json"
    target.write_text("old")
    target.chmod(0o640)
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    with atomic_path(target) as temporary:
        temporary.write_text("new")
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.json"]


def _limited(limit: int) -> None:
    """In the child: files may not grow past ``limit`` bytes; the write fails with EFBIG
    instead of the signal that would kill the process (as a full disk does)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_full_disk_is_one_line_keeps_old_outputs_and_the_run_resumes(tmp_path: Path) -> None:
    n = 600
    data = _traces(tmp_path / "t.jsonl", n)
    db, out = tmp_path / "s.db", tmp_path / "o.json"
    out.write_text('{"previous": true}\n')
    cmd = [sys.executable, "-m", "agentgauge", "evaluate", str(data), "--db", str(db)]
    cmd += ["--jobs", "1", "--batch-size", "50", "--no-progress", "--json", str(out), "--overwrite"]
    full = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: _limited(512 * 1024),
    )
    assert full.returncode == 1, full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), full.stderr
    assert "disk is full" in lines[0] and "Traceback" not in full.stderr
    assert out.read_text() == '{"previous": true}\n'
    con = sqlite3.connect(db)
    run_id, status = con.execute("SELECT id, status FROM runs").fetchone()
    partial = con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    con.close()
    assert status in ("running", "failed") and 0 < partial < n
    resumed = subprocess.run(
        [*cmd[:4], "--db", str(db), "--resume", run_id, *cmd[6:]],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(out.read_text())
    assert [s["id"] for s in doc["samples"]] == [f"r{i}" for i in range(n)]


def test_a_folder_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    data = _traces(tmp_path / "t.jsonl", 2)
    if os.geteuid() == 0:
        folder = Path("/sys")  # refused even to root
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    code, output = _evaluate(tmp_path, data, "--json", str(folder / "o.json"))
    assert code == 1
    assert output.strip().splitlines()[-1].startswith("error: cannot write")
    assert "Traceback" not in output


def _demo_store(tmp_path: Path) -> tuple[Path, str, str]:
    """A store with two runs of the same traces."""
    data = _traces(tmp_path / "t.jsonl", 4)
    db = tmp_path / "s.db"
    ids = []
    for _ in range(2):
        out = tmp_path / f"r{len(ids)}.json"
        args = ["evaluate", str(data), "--db", str(db), "--jobs", "1", "--no-progress"]
        assert runner.invoke(app, [*args, "--json", str(out)]).exit_code == 0
        ids.append(json.loads(out.read_text())["run_id"])
    return db, ids[0], ids[1]


@pytest.mark.parametrize(
    "command",
    [
        ["evaluate", "{data}", "--db", "{db}", "--no-progress", "--json", "{out}"],
        ["evaluate", "{data}", "--db", "{db}", "--no-progress", "--csv", "{out}"],
        ["evaluate", "{data}", "--db", "{db}", "--no-progress", "--html", "{out}"],
        ["import", "{data}", "--format", "openai-chat", "--out", "{out}"],
        ["export-otel", "{a}", "--db", "{db}", "--out", "{out}"],
        ["show", "{a}", "--db", "{db}", "--json", "{out}"],
        ["compare", "{a}", "{b}", "--db", "{db}", "--json", "{out}"],
    ],
    ids=lambda c: " ".join(c[:2]) + " " + c[-2],
)
def test_every_command_refuses_an_existing_output_unless_overwrite(
    tmp_path: Path, command: list[str]
) -> None:
    db, a, b = _demo_store(tmp_path)
    data = tmp_path / "t.jsonl"
    if command[0] == "import":
        data = tmp_path / "chats.jsonl"
        data.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    out = tmp_path / "existing.out"
    out.write_text("an earlier result\n")
    args = [part.format(data=data, db=db, out=out, a=a, b=b) for part in command]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2, refused.output
    assert f"{command[-2]} {out} exists: --overwrite replaces it" in refused.output
    assert out.read_text() == "an earlier result\n"
    replaced = runner.invoke(app, [*args, "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    assert out.read_text() != "an earlier result\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_output_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    data = _traces(tmp_path / "t.jsonl", 2)
    for option in ("--json", "--csv", "--html"):
        code, output = _evaluate(tmp_path, data, option, str(tmp_path))
        assert code == 2 and f"{option} {tmp_path} is a folder" in output
    result = runner.invoke(app, ["import", str(data), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "is a folder" in result.output


def test_a_failed_import_leaves_the_existing_out_as_it_was(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"neither": "spans nor runs"}\n')
    out = tmp_path / "traces.jsonl"
    out.write_text("the traces of an expensive agent run\n")
    result = runner.invoke(app, ["import", str(garbage), "--out", str(out), "--overwrite"])
    assert result.exit_code == 1, result.output
    assert out.read_text() == "the traces of an expensive agent run\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_failed_evaluate_restores_its_outputs_and_a_failed_gate_keeps_them(
    tmp_path: Path,
) -> None:
    out = tmp_path / "r.json"
    out.write_text("previous\n")
    garbage = tmp_path / "g.jsonl"
    garbage.write_text("not json\n")
    code, _ = _evaluate(tmp_path, garbage, "--json", str(out), "--overwrite")
    assert code == 1 and out.read_text() == "previous\n"
    # a verdict is not a failure: the report of a run below --fail-under is written
    wrong = {"id": "w", "task": {"id": "t", "expected_output": "yes"}, "output": "no"}
    data = tmp_path / "w.jsonl"
    data.write_text(json.dumps(wrong) + "\n")
    code, _ = _evaluate(tmp_path, data, "--json", str(out), "--overwrite", "--fail-under", "1")
    assert code == 1 and json.loads(out.read_text())["samples"]
