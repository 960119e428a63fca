"""Bundled simulation domains: an environment, its scenarios and a scripted agent each.

``agentgauge simulate --domain orders`` plays the order desk's scenarios
(:mod:`agentgauge.simulate.domains.orders`); its scripted agent
(:mod:`agentgauge.simulate.domains.orders_agent`) plays the agent without any model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DOMAINS", "Domain"]


@dataclass(frozen=True)
class Domain:
    """A bundled domain.

    Args:
        env: its environment (``module:factory``).
        scenarios: its scenario file.
        scripted_agent: its scripted agent (``module:factory``), which calls no model.
        description: one line.
    """

    env: str
    scenarios: Path
    scripted_agent: str
    description: str


DOMAINS: dict[str, Domain] = {
    "orders": Domain(
        env="agentgauge.simulate.domains.orders:OrderDesk",
        scenarios=Path(__file__).with_name("orders_scenarios.jsonl"),
        scripted_agent="agentgauge.simulate.domains.orders_agent:DeskAgent",
        description="an order-management desk: cancellations, returns, exchanges, addresses",
    )
}
"""The bundled domains by name."""
