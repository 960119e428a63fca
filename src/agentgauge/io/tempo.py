"""Grafana Tempo's trace API JSON: ``{"batches": [...]}``, OTLP resource spans under their older
key names (``instrumentationLibrarySpans``) with ids in base64 (protobuf's JSON mapping). The
span reader reads them as OTLP/JSON."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from agentgauge.io.importers import importer
from agentgauge.io.jsonl import ReadError
from agentgauge.io.span_options import DEFAULT_TASK_ID_ATTRIBUTE, GroupBy
from agentgauge.model import Trace

__all__ = ["read_tempo"]


@importer("tempo", description="Tempo's trace API JSON (batches)")
def read_tempo(
    path: str | Path,
    *,
    group_by: GroupBy = "trace",
    task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
    log_files: Sequence[str | Path] = (),
) -> Iterator[Trace | ReadError]:
    """Stream the agent runs of a Tempo trace export (``batches`` or ``resourceSpans``) as Traces.

    Args:
        path: the file, gzip-compressed or not.
        group_by: as for :func:`agentgauge.io.otel.read_otel`.
        task_id_attribute: as for :func:`agentgauge.io.otel.read_otel`.
        log_files: as for :func:`agentgauge.io.otel.read_otel`.
    """
    from agentgauge.io.otel import read_otel

    return read_otel(
        path,
        group_by=group_by,
        task_id_attribute=task_id_attribute,
        log_files=log_files,
        span_format="tempo",
    )
