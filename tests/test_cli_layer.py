"""The command line is the top layer: no library module imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import agentgauge

PACKAGE = Path(agentgauge.__file__).parent


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_library_module_imports_the_command_line() -> None:
    cli = PACKAGE / "cli"
    library = [p for p in PACKAGE.rglob("*.py") if cli not in p.parents]
    assert len(library) > 50  # the walk found the package
    upward = {
        str(p.relative_to(PACKAGE)): sorted(
            n for n in _imported(p) if n == "agentgauge.cli" or n.startswith("agentgauge.cli.")
        )
        for p in library
    }
    # __main__ is the command's own entry point
    assert {k: v for k, v in upward.items() if v and k != "__main__.py"} == {}
    assert upward["__main__.py"] == ["agentgauge.cli", "agentgauge.cli.main"]
