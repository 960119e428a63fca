"""scikit-learn's English stop words, without importing scikit-learn."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

__all__ = ["english_stop_words"]


@cache
def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop words. Their module imports nothing, but importing it through
    the package runs scikit-learn's own set-up, a second or two of every run's start: the file
    is loaded alone, and through the package only if that fails."""
    package = importlib.util.find_spec("sklearn")
    folders = package.submodule_search_locations if package is not None else None
    if folders:
        path = Path(folders[0], "feature_extraction", "_stop_words.py")
        spec = importlib.util.spec_from_file_location("_sklearn_english_stop_words", path)
        try:
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return frozenset(module.ENGLISH_STOP_WORDS)
        except (OSError, AttributeError):  # another layout of the package
            pass
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)
