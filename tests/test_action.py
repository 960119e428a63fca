"""The GitHub Action (action.yml and its scripts under action/) and the workflow docs/ci.md
tells users to copy: the inputs it reads exist, its scripts run, and a push then a pull request
end in one comment on the pull request, posted then updated through GitHub's REST API (a local
server on 127.0.0.1 that answers as GitHub does)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from local_http import serving

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo_traces.jsonl"
MARKER = "<!-- agentgauge-compare -->"


def _action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return loaded


def _workflow() -> dict[str, Any]:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    loaded: dict[str, Any] = yaml.safe_load(block)
    return loaded


def test_the_action_reads_only_inputs_it_declares_and_runs_scripts_that_exist() -> None:
    action = _action()
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    declared = set(action["inputs"])
    used = set(re.findall(r"inputs\.([\w-]+)", text))
    assert used == declared
    assert action["runs"]["using"] == "composite"
    scripts = re.findall(r'"\$GITHUB_ACTION_PATH/(action/[\w.]+)"', text)
    assert sorted(scripts) == ["action/comment.py", "action/compare.sh", "action/evaluate.sh"]
    for script in scripts:
        check = ["bash", "-n"] if script.endswith(".sh") else [sys.executable, "-m", "py_compile"]
        assert subprocess.run([*check, str(ROOT / script)]).returncode == 0
    for step in action["runs"]["steps"]:
        # inputs reach the scripts through the environment, never pasted into a script
        assert "${{" not in step.get("run", ""), step


def test_the_documented_workflow_uses_the_action_as_declared() -> None:
    workflow = _workflow()
    (job,) = workflow["jobs"].values()
    (step,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("agentgauge/")]
    assert re.fullmatch(r"agentgauge/agentgauge@v[\d.]+", step["uses"])
    assert set(step["with"]) <= set(_action()["inputs"])
    assert workflow["permissions"]["pull-requests"] == "write"
    assert set(workflow[True]) == {"push", "pull_request"}  # YAML 1.1 reads "on" as True
    table = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8").split("## Inputs", 1)[1]
    documented = set(re.findall(r"^\| `([\w-]+)` \|", table, flags=re.MULTILINE))
    assert documented == set(_action()["inputs"])


@dataclass
class _GitHub:
    """The pull request's comments as GitHub's API keeps them, and the requests it got."""

    comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)


@contextmanager
def _github_api(state: _GitHub) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> dict[str, Any] | None:
            length = int(self.headers.get("Content-Length") or 0)
            auth = self.headers.get("Authorization")
            state.requests.append((self.command, self.path, auth))
            return json.loads(self.rfile.read(length)) if length else None

        def do_GET(self) -> None:
            self._record()
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            size, page = int(query["per_page"][0]), int(query["page"][0])
            self._reply(200, state.comments[(page - 1) * size : page * size])

        def do_POST(self) -> None:
            body = self._record()
            assert body is not None and self.path == "/repos/owner/repo/issues/7/comments"
            comment = {"id": 1000 + len(state.comments), "body": body["body"]}
            state.comments.append(comment)
            self._reply(201, comment)

        def do_PATCH(self) -> None:
            body = self._record()
            assert body is not None
            comment_id = int(self.path.rsplit("/", 1)[1])
            (comment,) = [c for c in state.comments if c["id"] == comment_id]
            comment["body"] = body["body"]
            self._reply(200, comment)

    with serving(Handler) as base:
        yield base


def _step_path(tmp_path: Path) -> Path:
    """A folder to put first on PATH: ``agentgauge`` and ``python`` as the action's steps find
    them once it has set up Python and installed agentgauge."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, command in (("agentgauge", "-m agentgauge "), ("python", "")):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {command}"$@"\n')
        shim.chmod(0o755)
    return bin_dir


def _step(script: str, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """Run one of the action's scripts as its step does; return what it wrote to
    GITHUB_OUTPUT."""
    output = cwd / "github_output"
    output.write_text("")
    runs = ["python"] if script.endswith(".py") else ["bash"]
    done = subprocess.run(
        [*runs, str(ROOT / "action" / script)],
        cwd=cwd,
        env={**env, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(line.split("=", 1) for line in output.read_text().splitlines())


def test_a_push_then_a_pull_request_end_in_one_updated_comment(tmp_path: Path) -> None:
    bin_dir = _step_path(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    lines = DEMO.read_text(encoding="utf-8").splitlines()[:12]
    (work / "traces.jsonl").write_text("\n".join(lines) + "\n")
    # the pull request's agent lost every fourth answer
    changed = []
    for i, line in enumerate(lines):
        trace = json.loads(line)
        if i % 4 == 0:
            trace["output"] = None
        changed.append(json.dumps(trace))
    (work / "changed.jsonl").write_text("\n".join(changed) + "\n")
    summary = tmp_path / "summary.md"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "AG_DB": str(tmp_path / "store" / "agentgauge.db"),
        "AG_SUITE": "behavior",
        "AG_FORMAT": "native",
        "AG_ARGS": "--jobs 1",
        "GITHUB_REF_NAME": "main",
        "GITHUB_SHA": "0123456789abcdef",
        "GITHUB_REPOSITORY": "owner/repo",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    pushed = _step("evaluate.sh", work, {**env, "AG_TRACES": "traces.jsonl"})
    assert pushed["status"] == "0"

    pull = {**env, "AG_PR_NUMBER": "7", "GITHUB_REF_NAME": "7/merge", "AG_TRACES": "changed.*"}
    state = _GitHub(comments=[{"id": 1, "body": "LGTM"}])
    evaluated = _step("evaluate.sh", work, pull)
    compared = _step(
        "compare.sh",
        work,
        {
            **pull,
            "AG_RUN_ID": evaluated["run-id"],
            "AG_BASE_REF": "main",
            "AG_REPORT_URL": "https://github.invalid/artifacts/1",
        },
    )
    assert compared["base-run-id"] == pushed["run-id"]
    commenting = {**pull, "AG_TOKEN": "ghs_token", "AG_MARKDOWN": compared["markdown"]}
    with _github_api(state) as api:
        for _ in range(2):  # a second push to the pull request updates the comment
            _step("comment.py", work, {**commenting, "GITHUB_API_URL": api})
            assert len(state.comments) == 2  # the user's comment and one of ours
    ours = state.comments[1]
    markdown = Path(compared["markdown"]).read_text(encoding="utf-8")
    assert ours["body"] == markdown and markdown.startswith(MARKER + "\n")
    assert f"against 0123456789abcdef (`{pushed['run-id']}`)" in markdown
    assert "[HTML report of run B](https://github.invalid/artifacts/1)" in markdown
    assert [(method, path.split("?")[0]) for method, path, _ in state.requests] == [
        ("GET", "/repos/owner/repo/issues/7/comments"),
        ("GET", "/repos/owner/repo/issues/7/comments"),
        ("POST", "/repos/owner/repo/issues/7/comments"),
        ("GET", "/repos/owner/repo/issues/7/comments"),
        ("PATCH", "/repos/owner/repo/issues/comments/1001"),
    ]
    assert {auth for _, _, auth in state.requests} == {"Bearer ghs_token"}
    assert summary.read_text(encoding="utf-8").count(MARKER) == 1


def test_a_pull_request_without_a_stored_base_run_says_so(tmp_path: Path) -> None:
    bin_dir = _step_path(tmp_path)
    lines = DEMO.read_text(encoding="utf-8").splitlines()[:4]
    (tmp_path / "traces.jsonl").write_text("\n".join(lines) + "\n")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "AG_DB": str(tmp_path / "agentgauge.db"),
        "AG_SUITE": "behavior",
        "AG_FORMAT": "native",
        "AG_TRACES": "traces.jsonl",
        "AG_ARGS": "--jobs 1",
        "AG_PR_NUMBER": "3",
    }
    evaluated = _step("evaluate.sh", tmp_path, env)
    compared = _step(
        "compare.sh", tmp_path, {**env, "AG_RUN_ID": evaluated["run-id"], "AG_BASE_REF": "main"}
    )
    assert compared["base-run-id"] == "" and compared["status"] == "0"
    text = Path(compared["markdown"]).read_text(encoding="utf-8")
    assert text.startswith(MARKER) and "No run of the base branch `main` is stored yet" in text
