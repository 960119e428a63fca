"""Agents to run and tune: the agent protocol, a tool-using chat agent over any
OpenAI-compatible endpoint, and a SIMULATED agent for demos and tests."""
