"""Every import inside the package goes to its own layer or a lower one, as CONTRIBUTING.md
lists the layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "agentgauge"


def _layers() -> dict[str, int]:
    """``module prefix -> layer``, from the numbered list under CONTRIBUTING.md's "Layers"."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers: dict[str, int] = {}
    for number, names in re.findall(r"^(\d+)\. (.+)$", section, flags=re.MULTILINE):
        for name in re.findall(r"`([\w.]+)`", names):
            layers[name] = int(number)
    return layers


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer_of(module: str, layers: dict[str, int]) -> int | None:
    """The layer of the longest listed prefix of ``module`` (``agentgauge.review.pipeline``
    before ``agentgauge.review``); the package itself is ``__init__``."""
    relative = module.removeprefix("agentgauge").removeprefix(".") or "__init__"
    parts = relative.split(".")
    for end in range(len(parts), 0, -1):
        layer = layers.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def _imports(path: Path, module: str) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target != "agentgauge":
                found.append((target, node.lineno))
                continue
            # ``from agentgauge import model`` imports a submodule, not the public API
            for alias in node.names:
                submodule = (PACKAGE / alias.name).is_dir() or (
                    PACKAGE / f"{alias.name}.py"
                ).exists()
                found.append((f"agentgauge.{alias.name}" if submodule else target, node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] == "agentgauge"]


def test_contributing_lists_every_module() -> None:
    layers = _layers()
    unlisted = [
        _module_name(path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if _layer_of(_module_name(path), layers) is None
    ]
    assert not unlisted, f"modules missing from CONTRIBUTING.md's layer list: {unlisted}"


def test_no_import_runs_upward() -> None:
    layers = _layers()
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        own = _layer_of(module, layers)
        assert own is not None
        for target, line in _imports(path, module):
            layer = _layer_of(target, layers)
            if layer is not None and layer > own:
                upward.append(f"{module}:{line} (layer {own}) imports {target} (layer {layer})")
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    layers = _layers()
    source = tmp_path / "store.py"
    source.write_text(
        "from agentgauge.cli import app\n"
        "from agentgauge import model, evaluate\n"
        "import agentgauge\n"
    )
    targets = [name for name, _ in _imports(source, "agentgauge.store")]
    assert targets == ["agentgauge.cli", "agentgauge.model", "agentgauge", "agentgauge"]
    assert _layer_of("agentgauge", layers) == max(layers.values())
    assert _layer_of("agentgauge.cli", layers) > _layer_of("agentgauge.store", layers)
    assert _layer_of("agentgauge.model", layers) < _layer_of("agentgauge.store", layers)


def test_top_layer_rules() -> None:
    """Only ``__main__`` imports the command line; nothing imports the public API package."""
    offending = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for target, line in _imports(path, module):
            to_cli = target == "agentgauge.cli" or target.startswith("agentgauge.cli.")
            if (
                to_cli
                and not module.startswith("agentgauge.cli")
                and module != "agentgauge.__main__"
            ):
                offending.append(f"{module}:{line} imports the command line ({target})")
            if target == "agentgauge":
                offending.append(f"{module}:{line} imports the public API package")
    assert not offending, "\n".join(offending)
