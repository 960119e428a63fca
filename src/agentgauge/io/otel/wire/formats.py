"""Every wire format told apart by its content and converted to OTLP/JSON's shape, so that
one span reader (:mod:`.otlp`) reads them all: Jaeger's query API, Tempo's ``batches``, the
OpenAI Agents SDK's export, LangSmith runs, Langfuse downloads and MLflow's trace JSON."""

from __future__ import annotations

from typing import Any, Literal, get_args

from agentgauge.io.otel.wire.jaeger import is_jaeger, jaeger_to_otlp
from agentgauge.io.otel.wire.langfuse import is_langfuse, langfuse_spans
from agentgauge.io.otel.wire.langsmith import is_langsmith, langsmith_spans
from agentgauge.io.otel.wire.mlflow import is_mlflow, mlflow_spans
from agentgauge.io.otel.wire.openai_agents import is_openai_agents, openai_agents_spans
from agentgauge.io.otel.wire.span import BadField

__all__ = ["SPAN_FORMATS", "SpanFormat", "as_otlp"]

SpanFormat = Literal[
    "auto",
    "otlp-json",
    "otlp-proto",
    "jaeger",
    "tempo",
    "openai-agents",
    "langsmith",
    "langfuse",
    "mlflow",
]
SPAN_FORMATS: tuple[str, ...] = get_args(SpanFormat)


def as_otlp(doc: Any, span_format: SpanFormat) -> tuple[Any, str, list[BadField]]:
    """A document of another span format in OTLP/JSON's shape (Jaeger's query API converted,
    Tempo's ``batches`` renamed, OpenAI Agents SDK items, LangSmith runs and Langfuse
    observations as spans) and the name of its format: ``jaeger``, ``tempo``,
    ``openai-agents``, ``langsmith``, ``langfuse``, ``otlp-json`` (requests) or ``sdk-json``
    (span lists), and what could not be converted (all of it, with no document, when it is not
    of the format asked for). ``auto`` tells the formats apart by their keys."""
    if (
        span_format in ("auto", "otlp-json")
        and isinstance(doc, dict)
        and doc.keys() == {"resourceSpans"}
    ):
        return doc, "otlp-json", []  # a request alone (the Collector's lines): no other format
    mlflow = is_mlflow(doc)
    if span_format == "mlflow" and not mlflow:
        message = "missing: not an MLflow trace (info, data.spans) nor a list of them"
        return None, "mlflow", [BadField("data", message)]
    if mlflow and span_format in ("auto", "mlflow"):
        return mlflow_spans(doc), "mlflow", []
    jaeger = is_jaeger(doc)
    request = isinstance(doc, dict) and "resourceSpans" in doc
    tempo = isinstance(doc, dict) and "batches" in doc
    agents = is_openai_agents(doc)
    if span_format == "openai-agents" and not agents:
        message = "missing: not an OpenAI Agents SDK export (object: trace or trace.span)"
        return None, "openai-agents", [BadField("object", message)]
    if agents and span_format in ("auto", "openai-agents"):
        return openai_agents_spans(doc), "openai-agents", []
    langsmith = is_langsmith(doc)
    if span_format == "langsmith" and not langsmith:
        message = "missing: not a LangSmith run (run_type, id) nor a list of runs"
        return None, "langsmith", [BadField("run_type", message)]
    if langsmith and span_format in ("auto", "langsmith"):
        return langsmith_spans(doc), "langsmith", []
    langfuse = is_langfuse(doc)
    if span_format == "langfuse" and not langfuse:
        message = "missing: not a Langfuse export (a trace with observations, or observations)"
        return None, "langfuse", [BadField("observations", message)]
    if langfuse and span_format in ("auto", "langfuse"):
        spans, problems = langfuse_spans(doc)
        return spans, "langfuse", [BadField(where, message) for where, message in problems]
    if span_format == "jaeger" and not jaeger:
        return None, "jaeger", [BadField("data", "missing: not a Jaeger export (data[].spans)")]
    if span_format == "tempo" and not (tempo or request):
        message = "missing: not a Tempo export (batches, resourceSpans)"
        return None, "tempo", [BadField("batches", message)]
    if jaeger and span_format in ("auto", "jaeger"):
        return jaeger_to_otlp(doc), "jaeger", []
    if tempo and span_format in ("auto", "tempo"):
        return {"resourceSpans": doc["batches"]}, "tempo", []
    return (
        doc,
        span_format if span_format == "tempo" else "otlp-json" if request else "sdk-json",
        [],
    )
