"""Simulated conversations: a simulated user (scripted or a model) talks with an agent over a
stateful tool environment; each conversation is a multi-turn Trace scored like tau2-bench
(end state x actions x communicated), with pass^k over trials, and the simulated user is
checked too (``agentgauge simulate``, ``docs/simulate.md``)."""
