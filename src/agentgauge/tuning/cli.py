"""``agentgauge run``, ``tune`` and ``impact``."""

import typer


def register_tuning_commands(app: typer.Typer) -> None:
    """Add the agent-run and tuning commands to the main app."""
