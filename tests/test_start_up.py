"""What the short commands import: ``agentgauge evaluate`` on a small file scores, stores and
prints its run without importing the libraries and modules that other commands, other
formats or other metrics need (their import is most of a short command's time). Checked on
the modules a whole process holds when the command is done, not on a clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from agentgauge.store import Store

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo_traces.jsonl"

_RUN = """
import json, sys
from agentgauge.cli import main

out, sys.argv = sys.argv[1], ["agentgauge", *sys.argv[2:]]
try:
    main()
finally:
    # the trace records whose own validator was built (a Trace's holds its parts' schemas)
    records = vars(sys.modules.get("agentgauge.model", sys))
    built = [
        f"validator:{name}"
        for name, record in records.items()
        if isinstance(record, type)
        and "__pydantic_validator__" in vars(record)
        and type(vars(record)["__pydantic_validator__"]).__name__ != "MockValSer"
    ]
    with open(out, "w") as f:
        json.dump(sorted([*sys.modules, *built]), f)
"""

NOT_FOR_A_BEHAVIOUR_RUN = {
    # the summary of a few samples resamples them without numpy
    "numpy",
    # a run of one batch is scored in the command's own process: no pool; a built-in suite
    # is no TOML file
    "multiprocessing",
    "concurrent.futures",
    "ctypes",
    "tomllib",
    # libraries of other extras and commands
    "scipy",
    "sklearn",
    "pandas",
    "pyarrow",
    "torch",
    "transformers",
    "networkx",
    "pydantic_ai",
    "openai",
    "optuna",
    "ray",
    "httpx",
    # typer's pydantic adapters: the command's plain values are coerced without them
    "typer._adapters",
    # agentgauge's modules of other commands, formats and metrics
    "agentgauge.cli.toolcall",
    "agentgauge.cli.judge",
    "agentgauge.cli.review",
    "agentgauge.cli.tuning",
    "agentgauge.io.otel",
    "agentgauge.io.tau2",
    "agentgauge.io.openai_chat",
    "agentgauge.judges.client",
    "agentgauge.metrics.judge",
    "agentgauge.metrics.text",
    "agentgauge.metrics.graph",
    "agentgauge.report.html",
    "agentgauge.documents.compare",
    # a distributed run's results
    "agentgauge.results.dataset",
    "agentgauge.results.parquet",
    "agentgauge.workflows.pairwise",
    "agentgauge.toolcall",
}


def _within(modules: set[str], packages: set[str]) -> list[str]:
    """The modules that are one of ``packages`` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def _modules_after(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``agentgauge ARGS`` in a fresh interpreter, and the modules it had imported at its end."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(out), *args],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "120", "AGENTGAUGE_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, set(json.loads(out.read_text()))


def _priced(n: int) -> str:
    """The first ``n`` demo traces without their recorded costs: their tokens are priced."""
    traces = [json.loads(line) for line in DEMO.read_text().splitlines()[:n]]
    for trace in traces:
        del trace["usage"]["cost_usd"]
    return "".join(json.dumps(trace) + "\n" for trace in traces)


def test_evaluate_on_a_small_file_imports_only_what_the_behaviour_suite_needs(
    tmp_path: Path,
) -> None:
    small = tmp_path / "small.jsonl"
    small.write_text(_priced(3))
    runs = []
    for db in ("a.db", "b.db"):
        done, modules = _modules_after(tmp_path, "evaluate", str(small), "--db", db)
        assert done.returncode == 0, done.stderr
        assert "composite" in done.stdout and "3 samples" in done.stdout
        runs.append((done.stdout.split("cost (USD)")[1].split("\n")[0], modules))
    (first_cost, first), (cost, modules) = runs
    assert first_cost == cost and "$" in cost
    # the first run read the models' prices from genai-prices and kept them: the second did
    # not import it
    assert "genai_prices" in first and "genai_prices" not in modules
    # what the run did need was imported
    assert {"agentgauge.cli.evaluate", "agentgauge.metrics.behavior", "agentgauge.io.native"} <= (
        modules
    )
    assert _within(modules, NOT_FOR_A_BEHAVIOUR_RUN) == []
    # the traces were validated by the Trace's validator alone: its parts built none of theirs
    assert sorted(m for m in modules if m.startswith("validator:")) == ["validator:Trace"]


def test_show_and_the_format_check_import_no_other_command(tmp_path: Path) -> None:
    small = tmp_path / "small.jsonl"
    small.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:2]))
    subprocess.run(
        [sys.executable, "-m", "agentgauge", "evaluate", str(small), "--db", "a.db"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    with Store(tmp_path / "a.db") as store:
        (run,) = store.list_runs(5)
    done, modules = _modules_after(tmp_path, "show", run.id, "--db", "a.db")
    assert done.returncode == 0, done.stderr
    assert "composite" in done.stdout
    assert _within(modules, {"agentgauge.cli.evaluate", "agentgauge.cli.toolcall", "scipy"}) == []
    # an unknown format is told with every format's name (each importer is imported then)
    done, modules = _modules_after(tmp_path, "evaluate", str(small), "--format", "nat")
    assert done.returncode == 2
    assert "'native'" in done.stderr and "'otel'" in done.stderr and "'tau2'" in done.stderr
    assert "agentgauge.io.tau2" in modules


def test_what_a_command_is_given_is_still_checked_as_typer_checks_it(tmp_path: Path) -> None:
    # an unset option costs no coercion (None, as typer makes it); a given one is coerced
    # and checked by typer as before
    from typer.testing import CliRunner

    from agentgauge.cli import app

    small = tmp_path / "small.jsonl"
    small.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:3]))
    runner = CliRunner()
    db = str(tmp_path / "a.db")
    for option, value in (("--batch-size", "0"), ("--jobs", "0"), ("--shard-mb", "x")):
        done = runner.invoke(app, ["evaluate", str(small), "--db", db, option, value])
        assert done.exit_code == 2, done.output
        assert option in done.output and "Invalid value" in done.output
    done = runner.invoke(
        app, ["evaluate", str(small), "--db", db, "--batch-size", "2", "--no-progress"]
    )
    assert done.exit_code == 0, done.output
    assert "3 samples" in done.output
    with Store(tmp_path / "a.db") as store:
        (run,) = store.list_runs(5)
        assert run.n_samples == 3
    # unset, the paths are none: --resume alone continues a run from its own files
    done = runner.invoke(app, ["evaluate", "--resume", run.id, "--db", db, "--no-progress"])
    assert done.exit_code == 0, done.output


def test_plain_values_are_coerced_as_typers_own_adapters_coerce_them(tmp_path: Path) -> None:
    # each parameter kind of the commands, given values of every sort: where the command line
    # coerces a value itself, the result (type included) is what typer's adapter makes of it;
    # the rest (and every error) is left to typer
    import typer.main
    from typer.core import build_runtime_param

    from agentgauge.cli._common import _NOT_PLAIN, Command, _plain_value

    app = typer.Typer()

    @app.command(cls=Command)
    def command(
        paths: Annotated[list[str] | None, typer.Argument()] = None,
        text: str = "a",
        count: Annotated[int, typer.Option(min=1)] = 3,
        share: Annotated[float, typer.Option(min=0.001, max=10)] = 2,
        loose: float = 1.5,
        clamped: Annotated[int, typer.Option(min=0, max=5, clamp=True)] = 1,
        where: Path = Path("x"),
        existing: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
        files: Annotated[list[Path] | None, typer.Option()] = None,
    ) -> None: ...

    cli = typer.main.get_command(app)
    ctx = cli.make_context("command", [])
    (tmp_path / "f.txt").write_text("x")
    values = [
        *("abc", "", "7", " 7", "-", "b.db", str(tmp_path), str(tmp_path / "f.txt")),
        *(str(tmp_path / "none"), 0, 1, 5, 7, -1, 64, 2**60, 1.5, 0.0005, 11.0, 1e300),
        *(float("nan"), float("inf"), True, ("a", "b"), ["x", str(tmp_path)], (), (1, 2)),
        *(Path("p"),),
    ]

    def outcome(coerce: Any, *args: Any, **kwargs: Any) -> tuple[str, object, object]:
        try:
            value = coerce(*args, **kwargs)
        except Exception as exc:
            return ("error", type(exc).__name__, str(exc))
        return ("value", type(value), value)

    plain = 0
    for param in cli.params:
        typers = build_runtime_param(param.type_descriptor)
        for value in values:
            ours = outcome(_plain_value, param, value, ctx)
            if ours[0] == "value" and ours[2] is _NOT_PLAIN:
                continue
            plain += 1
            theirs = outcome(typers.coerce, value, param=param, ctx=ctx)
            assert ours == theirs, (param.name, value)
    assert plain >= 40


def test_a_typer_that_describes_its_parameters_otherwise_coerces_every_value_itself() -> None:
    # the plain coercion reads typer's description of a parameter; where a typer release
    # describes it otherwise (fields missing), every value goes to typer's own coercion
    from types import SimpleNamespace

    from agentgauge.cli._common import _NOT_PLAIN, _plain_value

    info = SimpleNamespace(parser=None, clamp=False, min=None, max=None, path_type=None)
    described = SimpleNamespace(annotation=str, file_annotation=None, parameter_info=info)
    assert _plain_value(SimpleNamespace(type_descriptor=described), "abc", None) == "abc"
    for missing in ("annotation", "file_annotation"):
        older = SimpleNamespace(**{k: v for k, v in vars(described).items() if k != missing})
        assert _plain_value(SimpleNamespace(type_descriptor=older), "abc", None) is _NOT_PLAIN
    del info.clamp
    assert _plain_value(SimpleNamespace(type_descriptor=described), "abc", None) is _NOT_PLAIN
    assert _plain_value(SimpleNamespace(), "abc", None) is _NOT_PLAIN
