"""Behaviour metrics (accuracy, efficiency, safety, tool_usage, coherence, adaptability)."""
