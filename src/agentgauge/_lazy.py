"""Names a package exports but imports on first use (so that importing it stays cheap)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict[str, Any], exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module's ``__getattr__``: each name of ``exports`` is imported from its module when
    first asked for, then kept in the module (the next access does not come here).

    Args:
        namespace: the module's ``globals()``.
        exports: each exported name -> the module that defines it.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
