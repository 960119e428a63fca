"""The root of agentgauge's errors.

Every error the package raises on purpose (a suite, store, agent, parameter or dataset that
cannot be used) derives from :class:`AgentgaugeError`, so that a caller catches them all in
one place; the ``agentgauge`` command reports one as ``error: ...`` and exits with status 2.
"""

from __future__ import annotations

__all__ = ["AgentgaugeError"]


class AgentgaugeError(Exception):
    """An error agentgauge raises on purpose; its message says what is wrong and where."""
