"""agentgauge: evaluate LLM agents and tool-calling models."""

__version__ = "0.1.0"
