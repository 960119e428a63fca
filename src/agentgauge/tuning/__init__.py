"""Agent runs and parameter tuning."""
