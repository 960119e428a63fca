"""Which module registers each built-in metric, and the metrics that share a suite's tables.

The metric registry imports a built-in metric's module only when that metric is looked up (a
suite names it), so that a command scoring the behaviour metrics never imports the judges, the
text models or networkx; listing the metrics imports every module. A test checks this table
against what the modules register.
"""

from __future__ import annotations

__all__ = ["BUILTIN_METRICS", "JUDGE_METRICS", "TEXT_METRICS"]

BUILTIN_METRICS: dict[str, str] = {
    "cosine": "agentgauge.metrics.text",
    "jaccard": "agentgauge.metrics.text",
    "semantic": "agentgauge.metrics.text",
    "output_similarity": "agentgauge.metrics.text",
    "task_success": "agentgauge.metrics.text",
    "time_taken": "agentgauge.metrics.text",
    "technical_accuracy": "agentgauge.metrics.judge",
    "constructiveness": "agentgauge.metrics.judge",
    "planning_judge": "agentgauge.metrics.judge",
    "rubric": "agentgauge.metrics.agent_judges",
    "goal_accuracy": "agentgauge.metrics.agent_judges",
    "trajectory_judge": "agentgauge.metrics.agent_judges",
    "accuracy": "agentgauge.metrics.behavior",
    "exact_match": "agentgauge.metrics.behavior",
    "efficiency": "agentgauge.metrics.behavior",
    "safety": "agentgauge.metrics.behavior",
    "tool_usage": "agentgauge.metrics.behavior",
    "coherence": "agentgauge.metrics.behavior",
    "adaptability": "agentgauge.metrics.behavior",
    "failure_attribution": "agentgauge.metrics.attribution",
    "cost_efficiency": "agentgauge.metrics.cost",
    "path_convergence": "agentgauge.metrics.graph",
    "tool_selection_accuracy": "agentgauge.metrics.graph",
    "communication_overhead": "agentgauge.metrics.graph",
    "coordination_centrality": "agentgauge.metrics.graph",
    "task_distribution_balance": "agentgauge.metrics.graph",
    "tool_efficiency": "agentgauge.metrics.graph",
    "coordination_quality": "agentgauge.metrics.graph",
    "end_state": "agentgauge.metrics.simulation",
    "actions": "agentgauge.metrics.simulation",
    "communicated": "agentgauge.metrics.simulation",
    "reward": "agentgauge.metrics.simulation",
    "policy_compliance": "agentgauge.metrics.simulation",
    "user_fidelity": "agentgauge.metrics.simulator",
    "simulator_fault": "agentgauge.metrics.simulator",
    "user_simulator_quality": "agentgauge.metrics.simulator",
    "tool_selection": "agentgauge.metrics.toolcall",
    "parameter_accuracy": "agentgauge.metrics.toolcall",
    "execution_success": "agentgauge.metrics.toolcall",
    "abstention": "agentgauge.metrics.toolcall",
    "response_quality": "agentgauge.metrics.toolcall",
    "value_accuracy": "agentgauge.metrics.toolcall",
    "trajectory_match": "agentgauge.metrics.trajectory",
    "tool_correctness": "agentgauge.metrics.trajectory",
    "tool_call_accuracy": "agentgauge.metrics.trajectory",
    # former names of planning_judge (its module declares them)
    "planning_rationality": "agentgauge.metrics.judge",
    "planning_rational": "agentgauge.metrics.judge",
}
"""``name -> module`` of every built-in metric and former metric name."""

JUDGE_METRICS = frozenset(
    {
        "technical_accuracy",
        "constructiveness",
        "planning_judge",
        # former names of planning_judge, still in the runs stored under them
        "planning_rationality",
        "planning_rational",
        "rubric",
        "goal_accuracy",
        "trajectory_judge",
        "failure_attribution",
        "user_simulator_quality",
    }
)
"""The metrics that take :class:`JudgeSettings` options (a suite's ``[judge]`` table)."""

TEXT_METRICS = frozenset({"cosine", "jaccard", "semantic", "output_similarity", "task_success"})
"""The reference-based metrics that share a suite's ``[text]`` table (model, layers, weights)."""
