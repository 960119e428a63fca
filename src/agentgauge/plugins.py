"""What can be named where agentgauge takes a name: every extension point's entries, built in or
added by installed packages through their entry points."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgauge.engine import EXECUTORS
from agentgauge.io.importers import IMPORTERS
from agentgauge.io.otel.conventions import CONVENTIONS
from agentgauge.metrics.base import METRICS
from agentgauge.registry import Registry
from agentgauge.toolcall.formats import FORMATS
from agentgauge.toolcall.parsers import PARSERS
from agentgauge.tuning.tuner import TUNERS

__all__ = ["EXTENSION_POINTS", "ExtensionPoint", "Plugin", "describe_plugins"]

EXTENSION_POINTS: dict[str, Registry[Any]] = {
    "metrics": METRICS,
    "importers": IMPORTERS,
    "conventions": CONVENTIONS,
    "formats": FORMATS,
    "parsers": PARSERS,
    "tuners": TUNERS,
    "executors": EXECUTORS,
}
"""Each extension point's registry, by the name ``agentgauge plugins`` lists it under."""


@dataclass(frozen=True)
class Plugin:
    """One name an extension point knows.

    Args:
        name: the name to give (``--format NAME``, a suite's metric, ...).
        origin: ``built-in``, the distribution (the installed package) that provides it, or
            the module that registered it while running.
        description: one line.
    """

    name: str
    origin: str
    description: str


@dataclass(frozen=True)
class ExtensionPoint:
    """One extension point and what it holds.

    Args:
        kind: ``metrics``, ``importers``, ``conventions``, ``formats``, ``parsers``,
            ``tuners`` or ``executors``.
        group: the entry-point group packages register theirs under.
        plugins: its entries, built-in ones first.
    """

    kind: str
    group: str
    plugins: list[Plugin]


def describe_plugins() -> list[ExtensionPoint]:
    """Every extension point with its entries, once the installed plugins are loaded (a plugin
    that cannot be loaded is left out with a warning)."""
    return [
        ExtensionPoint(
            kind,
            registry.group,
            [Plugin(e.name, e.origin, e.description) for e in registry.entries()],
        )
        for kind, registry in EXTENSION_POINTS.items()
    ]
