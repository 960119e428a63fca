"""The root of agentgauge's errors.

Every error the package raises on purpose (a suite, store, agent, parameter or dataset that
cannot be used) derives from :class:`AgentgaugeError`, so that a caller catches them all in
one place; the ``agentgauge`` command reports one as ``error: ...`` and exits with status 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["AgentgaugeError", "did_you_mean"]


class AgentgaugeError(Exception):
    """An error agentgauge raises on purpose; its message says what is wrong and where."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to a mistyped one (difflib's
    similarity of 0.6 or more), to put after the error's subject; empty when none is close.

    Args:
        name: the name given.
        known: the names it could have meant.
    """
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
