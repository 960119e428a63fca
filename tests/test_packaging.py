"""The distribution as `make dist` builds it: a wheel that carries its version from the one
place it is written, the metadata a package index shows (licence, classifiers, links), the
files the package needs at run time, and a README that installs what exists."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib.metadata import distribution
from pathlib import Path, PurePath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from typer.testing import CliRunner

from agentgauge._version import __version__
from agentgauge.cli import app
from test_extras import JUDGE_EXTRA, JUDGED, PEERREAD, TEXT_EXTRA, paper_review

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built as `make dist` builds it (offline, no isolated environment), from a copy
    of what the build reads, so that the checkout gets no build folder."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out)],
        cwd=source,
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("agentgauge-*.whl")
    return built


def _metadata(wheel: Path) -> tuple[list[str], dict[str, list[str]]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (info,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        message = Parser().parsestr(archive.read(info).decode("utf-8"))
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return names, fields


def test_the_wheel_carries_the_version_that_the_command_prints(wheel: Path) -> None:
    _, fields = _metadata(wheel)
    assert fields["Version"] == [__version__]
    assert wheel.name == f"agentgauge-{__version__}-py3-none-any.whl"
    printed = CliRunner().invoke(app, ["--version"])
    assert printed.output == f"agentgauge {__version__}\n"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]  # written once, in agentgauge/_version.py
    assert project["project"]["dynamic"] == ["version"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"\n## {__version__} " in changelog


def test_the_wheel_has_what_an_index_shows_and_what_the_package_reads(wheel: Path) -> None:
    names, fields = _metadata(wheel)
    assert fields["License-Expression"] == ["Apache-2.0"]
    assert {"Typing :: Typed", "Programming Language :: Python :: 3.11"} <= set(
        fields["Classifier"]
    )
    assert any(c.startswith("Development Status :: ") for c in fields["Classifier"])
    links = dict(link.split(", ", 1) for link in fields["Project-URL"])
    assert set(links) == {"Homepage", "Documentation", "Changelog", "Issues"}
    assert fields["Description-Content-Type"] == ["text/markdown"]
    assert fields["Requires-Python"] == [">=3.11"]
    extras = set(fields["Provides-Extra"])
    assert {"text", "judge", "tune", "ray", "otel", "view", "dev", "all"} <= extras
    # every file of the package, its data included (py.typed, the front-end's assets, the
    # secret scanner's rules): an installed wheel reads them
    package = ROOT / "src" / "agentgauge"
    shipped = {
        path.relative_to(package.parent).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert {"agentgauge/py.typed", "agentgauge/documents/static/app.js"} <= shipped
    assert shipped - set(names) == set()
    licences = [n.split("/licenses/", 1)[1] for n in names if "/licenses/" in n]
    # ours, and those of the third-party files the package ships
    assert sorted(licences) == [
        "LICENSE",
        "src/agentgauge/data/gitleaks_LICENSE.txt",
        "src/agentgauge/documents/static/chart.js-LICENSE.md",
    ]
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    )
    assert b"agentgauge = agentgauge.cli:main" in entry_points
    twine = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert twine.returncode == 0, twine.stdout + twine.stderr


def test_the_readme_installs_what_exists() -> None:
    """agentgauge is not on an index: every install command of the README's "Install" section
    installs the checkout or a wheel that `make dist` wrote, with extras that exist."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^pip install (.+?)(?:\s+#.*)?$", section, flags=re.MULTILINE)
    assert commands
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    for command in commands:
        target = command.strip("'\"")
        assert re.match(
            r"^(\.|dist/agentgauge-\*\.whl|\"?\$\(echo dist/agentgauge-\*\.whl\))", target
        ), f"pip install {command}: not the checkout or a built wheel"
        named = re.search(r"\[([\w,]+)\]", command)
        if named:
            assert set(named.group(1).split(",")) <= extras
    assert "make dist" in section
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    dist = makefile.split("\ndist:", 1)[1].split("\n\n", 1)[0]
    assert "-m build --no-isolation" in dist and "twine check --strict" in dist
    assert "dist" not in makefile.split("\ntest:", 1)[1].split("\n", 1)[0]


@pytest.fixture(scope="module")
def core_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel and the core dependencies only, as ``pip install
    agentgauge-*.whl`` leaves it: no extra's package can be imported there. The dependencies
    (the closure of ``[project] dependencies`` by their own metadata) are linked from this
    environment, so it is made offline in a second; pip installs the wheel itself."""
    venv = tmp_path_factory.mktemp("core") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    todo, seen = [Requirement(r) for r in project["dependencies"]], set()
    while todo:
        requirement = todo.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        dist = distribution(requirement.name)
        for top in {PurePath(str(f)).parts[0] for f in dist.files or []} - {"..", "__pycache__"}:
            if not (site / top).exists():
                (site / top).symlink_to(Path(str(dist.locate_file(top))))
        for line in dist.requires or []:
            needed = Requirement(line)
            wanted = ("", *requirement.extras)  # and what the extras asked for bring
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in wanted):
                todo.append(needed)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )  # fmt: skip
    return venv


def _in_venv(
    venv: Path, command: str, *args: str | Path, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``COMMAND ARGS`` from the venv's ``bin``, with nothing of this checkout on the path."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environment.update(HF_HUB_OFFLINE="1", COLUMNS="200", OPENAI_API_KEY="sk-set")
    return subprocess.run(
        [str(venv / "bin" / command), *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_wheel_runs_in_a_venv_without_extras(core_venv: Path, tmp_path: Path) -> None:
    """The acceptance of a release: the wheel in a fresh venv prints its version and scores the
    demo traces as the checkout does; a judge or a text metric names the extra to install."""
    extras = ["torch", "transformers", "pydantic_ai", "optuna", "ray", "starlette"]
    probe = f"import importlib.util as u; print([u.find_spec(m) for m in {extras!r}])"
    done = _in_venv(core_venv, "python", "-c", probe, cwd=tmp_path)
    assert done.stdout == f"{[None] * len(extras)}\n", done.stderr
    probe = "import agentgauge; print(agentgauge.__file__)"
    located = _in_venv(core_venv, "python", "-c", probe, cwd=tmp_path).stdout.strip()
    assert Path(located).is_relative_to(core_venv)  # the wheel's files, not the checkout's

    done = _in_venv(core_venv, "agentgauge", "--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"agentgauge {__version__}\n"

    demo = ROOT / "examples" / "demo_traces.jsonl"
    installed, here = tmp_path / "installed.json", tmp_path / "here.json"
    args = ["evaluate", demo, "--db", tmp_path / "r.db", "--no-progress"]
    done = _in_venv(core_venv, "agentgauge", *args, "--json", installed, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    checkout = CliRunner().invoke(app, [*map(str, args), "--json", str(here), "--name", "here"])
    assert checkout.exit_code == 0, checkout.output
    got, expected = json.loads(installed.read_text()), json.loads(here.read_text())
    assert got["status"] == "completed" and len(got["samples"]) == 72
    assert got["aggregate"] == expected["aggregate"]

    suite = tmp_path / "judged.toml"
    suite.write_text(JUDGED, encoding="utf-8")
    args = ["evaluate", demo, "--suite", suite, "--db", tmp_path / "j.db"]
    done = _in_venv(core_venv, "agentgauge", *args, cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (2, f"error: {JUDGE_EXTRA}")

    reviews = paper_review(tmp_path)
    args = ["review", "evaluate", "--reviews", reviews, "--peerread", PEERREAD]
    done = _in_venv(core_venv, "agentgauge", *args, "--db", tmp_path / "t.db", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (2, TEXT_EXTRA)
