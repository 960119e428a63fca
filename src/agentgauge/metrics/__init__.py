"""Built-in metrics. Importing this package registers them; heavy libraries (torch, judges)
are imported lazily inside the metrics that need them."""

from agentgauge.metrics import (
    agent_judges,  # noqa: F401
    attribution,  # noqa: F401
    behavior,  # noqa: F401
    cost,  # noqa: F401
    graph,  # noqa: F401
    judge,  # noqa: F401
    simulation,  # noqa: F401
    simulator,  # noqa: F401
    text,  # noqa: F401
    toolcall,  # noqa: F401
    trajectory,  # noqa: F401
)
from agentgauge.metrics.base import (
    BatchMetric,
    Metric,
    MetricResult,
    create_metric,
    list_metrics,
    metric,
)

__all__ = ["BatchMetric", "Metric", "MetricResult", "create_metric", "list_metrics", "metric"]
