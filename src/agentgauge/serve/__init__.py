"""Servers that score agents as they run: the live OTLP receiver (:mod:`agentgauge.serve.otlp`)."""
