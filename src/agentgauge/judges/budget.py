"""What a judge metric may spend: live calls and known cost, against ``max_calls`` and
``max_cost_usd``.

Cache hits are free; only calls that reach the model count. A cost budget needs the cost of
every call: once one is unknown, the budget cannot be enforced and further calls are refused
with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentgauge.judges.settings import JudgeSettings

__all__ = ["JudgeSpend"]


@dataclass
class JudgeSpend:
    """What a judge metric has spent so far (live calls only), against its budget.

    Args:
        calls: live calls started.
        cost_usd: their known cost.
        cost_unknown: True once a call's cost could not be determined.
    """

    calls: int = 0
    cost_usd: float = 0.0
    cost_unknown: bool = False

    def reserve(self, settings: JudgeSettings) -> str | None:
        """Count one more live call, or say why the budget refuses it (then nothing is counted).

        Args:
            settings: the judge settings holding ``max_calls`` and ``max_cost_usd``.
        """
        if settings.max_calls is not None and self.calls >= settings.max_calls:
            return f"judge budget exhausted: max_calls={settings.max_calls} reached"
        if settings.max_cost_usd is not None:
            if self.cost_unknown:
                return (
                    f"judge budget cannot be enforced: max_cost_usd={settings.max_cost_usd} but "
                    f"the cost of {settings.model_id} is unknown (set price_per_1k_input_tokens "
                    "and price_per_1k_output_tokens)"
                )
            if self.cost_usd >= settings.max_cost_usd:
                return (
                    f"judge budget exhausted: max_cost_usd={settings.max_cost_usd} reached "
                    f"(spent {self.cost_usd:.6f})"
                )
        self.calls += 1
        return None

    def add_cost(self, cost_usd: float | None) -> None:
        """Add the cost of a finished call; None marks the spend as unknown from now on.

        Args:
            cost_usd: the call's cost, or None when it could not be determined.
        """
        if cost_usd is None:
            self.cost_unknown = True
        else:
            self.cost_usd += cost_usd
