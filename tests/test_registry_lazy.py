"""The metric registry's index of built-in names: each name's module registers it, a lookup
imports that module alone, a listing imports them all."""

from __future__ import annotations

import subprocess
import sys

from agentgauge.metrics._catalog import BUILTIN_METRICS
from agentgauge.metrics.base import METRICS


def test_the_index_names_the_module_of_every_builtin_metric_and_former_name() -> None:
    registered = {e.name: e.module for e in METRICS.entries() if e.origin == "built-in"}
    former = dict.fromkeys(METRICS._aliases, "agentgauge.metrics.judge")
    assert {**registered, **former} == BUILTIN_METRICS


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_a_lookup_imports_the_metric_module_alone_and_a_listing_imports_all() -> None:
    looked_up = _modules_after(
        "from agentgauge.metrics.base import create_metric, lower_is_better\n"
        "create_metric('accuracy'); lower_is_better(['efficiency', 'safety'])"
    )
    assert "agentgauge.metrics.behavior" in looked_up
    assert not looked_up & {
        "agentgauge.metrics.judge",
        "agentgauge.metrics.text",
        "agentgauge.metrics.graph",
        "agentgauge.judges.client",
        "networkx",
    }
    listed = _modules_after("from agentgauge.metrics.base import list_metrics\nlist_metrics()")
    assert {f"agentgauge.metrics.{m}" for m in ("judge", "text", "graph", "simulator")} <= listed


def test_a_former_name_is_found_through_its_module() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore",
            "-c",
            "from agentgauge.metrics.base import METRICS\n"
            "print(METRICS.current_name('planning_rationality'), "
            "METRICS.get('planning_rational').name)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["planning_judge", "planning_judge"]


def test_the_importer_index_names_the_module_that_registers_each_format() -> None:
    from agentgauge.io.importers import BUILTIN_IMPORTERS, IMPORTERS

    builtin = {e.name for e in IMPORTERS.entries() if e.origin == "built-in"}
    assert set(BUILTIN_IMPORTERS) == builtin
    for module in set(BUILTIN_IMPORTERS.values()):
        # the module alone, in a fresh interpreter: what its import registers
        registered = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import {module}\nfrom agentgauge.io.importers import IMPORTERS\n"
                "print(' '.join(IMPORTERS._entries))",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        named = {name for name, where in BUILTIN_IMPORTERS.items() if where == module}
        assert named <= set(registered), module


def test_the_executor_index_names_the_module_that_registers_each_executor() -> None:
    from agentgauge.engine import EXECUTORS

    builtin = {e.name: e.module for e in EXECUTORS.entries() if e.origin == "built-in"}
    assert builtin == EXECUTORS._index
