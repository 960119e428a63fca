"""Built-in metrics. Each module registers its metrics when it is imported: the registry
imports a metric's module when a suite names it, and every module for a listing; heavy
libraries (torch, judges) are imported lazily inside the metrics that need them."""

from agentgauge.metrics.base import (
    BatchMetric,
    Metric,
    MetricResult,
    create_metric,
    list_metrics,
    metric,
)

__all__ = ["BatchMetric", "Metric", "MetricResult", "create_metric", "list_metrics", "metric"]
