"""Whether an optional extra's packages are there, found before a command needs them, so that
its error names the extra to install instead of ending in a traceback."""

from __future__ import annotations

import importlib.util

__all__ = ["installed"]


def installed(module: str) -> bool:
    """Whether ``module`` can be found for import, without importing it.

    Args:
        module: a top-level module name (``torch``, ``pydantic_ai``).
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        return False
