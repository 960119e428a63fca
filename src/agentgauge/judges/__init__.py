"""LLM-judge machinery shared by every judge metric: the pydantic-ai client
(:mod:`~agentgauge.judges.client`), its settings, the prompt shape and the trace as a judge
sees it (:mod:`~agentgauge.judges.prompts`), the verdict cache in the results store's file
(:mod:`~agentgauge.judges.cache`), the budget and the cost of a call."""
