"""Every import inside the package goes to its own layer or a lower one, as CONTRIBUTING.md
lists the layers, and no import closes a loop: between two top-level folders or modules of
``agentgauge``, or between two modules. Lazy imports inside functions and ``TYPE_CHECKING``
imports count like any other."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "agentgauge"


def _layers(contributing: str) -> dict[str, int]:
    """``top-level name -> layer``, from the numbered list under "## Layers"."""
    section = contributing.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers: dict[str, int] = {}
    for number, names in re.findall(r"^(\d+)\. (.+)$", section, flags=re.MULTILINE):
        for name in re.findall(r"`([\w.]+)`", names):
            layers[name] = int(number)
    return layers


def _contributing_layers() -> dict[str, int]:
    return _layers((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    """The top-level folder or module of ``module``; ``__init__`` for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules(package: Path) -> dict[str, Path]:
    return {_module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def _imports(path: Path, module: str, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """The package's modules that ``path`` imports, anywhere in it, with their lines: the
    longest imported name that is a module (``from agentgauge.io import jsonl`` imports
    ``agentgauge.io.jsonl``; ``from agentgauge.io.jsonl import ReadError`` too)."""
    top = module.split(".")[0]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]

    def resolved(name: str) -> str | None:
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            if ".".join(parts[:end]) in modules:
                return ".".join(parts[:end])
        return None

    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            # ``from X import name``: the submodule ``X.name`` when there is one
            names = [
                f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name.split(".")[0] == top and (target_module := resolved(name)) is not None:
                found.append((target_module, node.lineno))
    return found


def _graph(package: Path) -> nx.DiGraph:
    """``module -> module`` for every import of the package's modules (``where`` on each edge:
    the first ``module:line`` that imports it)."""
    modules = _modules(package)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for target, line in _imports(path, module, modules):
            if target != module and not graph.has_edge(module, target):
                graph.add_edge(module, target, where=f"{module}:{line}")
    return graph


def _unit_graph(graph: nx.DiGraph) -> nx.DiGraph:
    """The module graph folded onto top-level folders and modules (``where``: the imports that
    make each edge)."""
    units = nx.DiGraph()
    units.add_nodes_from(_unit(m) for m in graph)
    for a, b, data in graph.edges(data=True):
        ua, ub = _unit(a), _unit(b)
        if ua != ub:
            if not units.has_edge(ua, ub):
                units.add_edge(ua, ub, where=[])
            units[ua][ub]["where"].append(f"{data['where']} -> {b}")
    return units


def _loops(graph: nx.DiGraph) -> list[str]:
    """One line per strongly connected group of the graph: its members and one loop through
    them, each step with the import that makes it."""
    out = []
    for group in sorted(nx.strongly_connected_components(graph), key=sorted):
        if len(group) < 2:
            continue
        cycle = nx.find_cycle(graph.subgraph(group))
        steps = []
        for a, b in cycle:
            where = graph[a][b]["where"]
            steps.append(f"{a} -> {b} ({where[0] if isinstance(where, list) else where})")
        out.append(f"{sorted(group)}: " + "; ".join(steps))
    return out


def test_contributing_lists_every_folder_and_module_once() -> None:
    layers = _contributing_layers()
    units = {_unit(m) for m in _modules(PACKAGE)}
    assert not units - set(layers), f"missing from CONTRIBUTING.md's layers: {units - set(layers)}"
    assert not set(layers) - units, f"not in the package: {set(layers) - units}"


def test_no_import_runs_upward() -> None:
    layers = _contributing_layers()
    upward = [
        f"{data['where']} (layer {layers[_unit(a)]}) imports {b} (layer {layers[_unit(b)]})"
        for a, b, data in _graph(PACKAGE).edges(data=True)
        if layers[_unit(b)] > layers[_unit(a)]
    ]
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_no_two_folders_depend_on_each_other() -> None:
    loops = _loops(_unit_graph(_graph(PACKAGE)))
    assert not loops, "folders or top-level modules that import each other:\n" + "\n".join(loops)


def test_no_two_modules_import_each_other() -> None:
    loops = _loops(_graph(PACKAGE))
    assert not loops, "modules that import each other:\n" + "\n".join(loops)


def test_the_checks_see_loops_and_upward_imports(tmp_path: Path) -> None:
    """A package made for the purpose: ``low`` imports ``high`` lazily inside a function and
    under TYPE_CHECKING, ``high`` imports ``low`` at the top; ``high.a`` and ``high.b``
    import each other through ``from . import``."""
    package = tmp_path / "agentgauge"
    for folder in ("low", "high"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "low" / "x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from agentgauge.high.a import A\n"
        "def f():\n"
        "    from agentgauge.high import b\n"
    )
    (package / "high" / "a.py").write_text("from agentgauge.low.x import f\nfrom . import b\n")
    (package / "high" / "b.py").write_text("def g():\n    from .a import A\n")
    graph = _graph(package)
    assert set(graph.edges) == {
        ("agentgauge.low.x", "agentgauge.high.a"),
        ("agentgauge.low.x", "agentgauge.high.b"),
        ("agentgauge.high.a", "agentgauge.low.x"),
        ("agentgauge.high.a", "agentgauge.high.b"),
        ("agentgauge.high.b", "agentgauge.high.a"),
    }
    assert graph["agentgauge.low.x"]["agentgauge.high.b"]["where"] == "agentgauge.low.x:5"
    (unit_loop,) = _loops(_unit_graph(graph))
    assert unit_loop.startswith("['high', 'low']: ")
    (module_loop,) = _loops(graph)
    assert module_loop.startswith(
        "['agentgauge.high.a', 'agentgauge.high.b', 'agentgauge.low.x']: "
    )
    layers = _layers("## Layers\n1. `low`\n2. `high`, `__init__`\n")
    upward = [(a, b) for a, b in graph.edges if layers[_unit(b)] > layers[_unit(a)]]
    assert sorted(upward) == [
        ("agentgauge.low.x", "agentgauge.high.a"),
        ("agentgauge.low.x", "agentgauge.high.b"),
    ]


def test_a_subfolder_is_part_of_its_folder() -> None:
    assert _unit("agentgauge.io.otel.wire.otlp") == "io"
    assert _unit("agentgauge.store") == "store"
    assert _unit("agentgauge") == "__init__"


def test_top_layer_rules() -> None:
    """Only ``__main__`` imports the command line; nothing imports the public API package."""
    offending = []
    for a, b, data in _graph(PACKAGE).edges(data=True):
        if _unit(b) == "cli" and _unit(a) not in ("cli", "__main__"):
            offending.append(f"{data['where']} imports the command line ({b})")
        if b == "agentgauge":
            offending.append(f"{data['where']} imports the public API package")
    assert not offending, "\n".join(offending)
