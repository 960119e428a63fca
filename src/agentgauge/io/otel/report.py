"""What an import read, per source format: traces, steps, tool calls, merged duplicate spans,
skipped spans with the reason, and the records that could not be read; and per trace, what
its record lacks (``metadata["missing"]``, see :data:`MISSING`).

The span importers name each Trace's format in ``metadata["source_format"]`` (``otlp-json``,
``sdk-json``, ``otlp-proto``, ``jaeger``, ``tempo``) and count what they merged or skipped;
other importers' traces are counted under the format they were read as.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgauge.io.jsonl import ReadError
from agentgauge.model import Trace

__all__ = ["FORMAT_NAMES", "MISSING", "FormatTally", "ImportReport"]

FORMAT_NAMES = {
    "otlp-json": "OTLP/JSON (file-exporter lines, whole requests)",
    "sdk-json": "OTel SDK span lists (console exporter)",
    "otlp-proto": "OTLP protobuf",
    "jaeger": "Jaeger query-API JSON",
    "tempo": "Tempo trace JSON",
    "openai-agents": "OpenAI Agents SDK trace export",
    "langsmith": "LangSmith runs",
    "langfuse": "Langfuse trace export",
    "mlflow": "MLflow trace JSON",
}
"""The span formats, as the report and its hints name them."""

_SPAN_FORMATS_OF = {
    "otel": tuple(FORMAT_NAMES),
    "otlp-json": ("otlp-json", "sdk-json"),
    "otlp-proto": ("otlp-proto",),
    "jaeger": ("jaeger",),
    "tempo": ("tempo",),
    "openai-agents": ("openai-agents",),
    "langsmith": ("langsmith",),
    "langfuse": ("langfuse",),
    "mlflow": ("mlflow",),
}

MISSING = {
    "tool_arguments": "tool calls without arguments",
    "unread_arguments": "tool arguments that could not be read",
    "output": "no output",
    "model_call": "no model call",
    "unknown_spans": "spans of an unknown kind that recorded a model's usage or a tool call",
}
"""What a trace's record may lack, by the key the span importers count it under in
``metadata["missing"]``."""

_SHOWN = 10  # traces listed one by one; the others are counted

SKIP_REASONS = {
    "unmapped_spans": "no step for this kind of span",
    "duplicate_spans": "the same span id seen twice (the first kept)",
}
"""Why spans made no step, by the Trace metadata key that counts them."""


@dataclass
class FormatTally:
    """The counts of one source format.

    Args:
        files: the files that held traces of this format.
        traces: traces read.
        steps: their steps.
        tool_calls: their tool calls.
        merged: spans folded into another record of the same call.
        skipped: spans that made no step, by ``(reason, span kind or name)``.
    """

    files: set[str] = field(default_factory=set)
    traces: int = 0
    steps: int = 0
    tool_calls: int = 0
    merged: int = 0
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)


class ImportReport:
    """Counts what an importer yields while it is read.

    Args:
        trace_format: the format the files are read as (``--format``).
    """

    def __init__(self, trace_format: str) -> None:
        self.trace_format = trace_format
        self.formats: dict[str, FormatTally] = {}
        self.errors: Counter[str] = Counter()  # file -> records that could not be read
        self.incomplete: list[tuple[str, dict[str, int]]] = []  # (trace id, what it lacks)

    def watch(
        self, read: Callable[[str | Path], Iterator[Trace | ReadError]]
    ) -> Callable[[str | Path], Iterator[Trace | ReadError]]:
        """The importer ``read``, counting what it yields.

        Args:
            read: the importer of the files' format.
        """

        def counted(path: str | Path) -> Iterator[Trace | ReadError]:
            for item in read(path):
                self.add(item, str(path))
                yield item

        return counted

    def add(self, item: Trace | ReadError, source: str) -> None:
        """Count one item an importer yielded.

        Args:
            item: a Trace or a ReadError.
            source: the file it came from.
        """
        if isinstance(item, ReadError):
            self.errors[source] += 1
            return
        meta: dict[str, Any] = item.metadata
        name = str(meta.get("source_format") or self.trace_format)
        tally = self.formats.setdefault(name, FormatTally())
        tally.files.add(source)
        tally.traces += 1
        tally.steps += len(item.steps)
        tally.tool_calls += len(item.tool_calls)
        tally.merged += int(meta.get("merged_spans") or 0)
        missing = meta.get("missing")
        if isinstance(missing, dict) and missing:
            self.incomplete.append((item.id, {str(k): int(v) for k, v in missing.items()}))
        for key, reason in SKIP_REASONS.items():
            counts = meta.get(key)
            if isinstance(counts, dict):
                for kind, n in counts.items():
                    tally.skipped[(reason, str(kind))] += int(n)
            elif isinstance(counts, int):
                tally.skipped[(reason, "span")] += counts

    @property
    def traces(self) -> int:
        """Traces read, all formats together."""
        return sum(t.traces for t in self.formats.values())

    def rows(self) -> list[list[str]]:
        """One row per format: format, files, traces, steps, tool calls, merged, skipped."""
        out = []
        for name, tally in sorted(self.formats.items()):
            skipped = sum(tally.skipped.values())
            out.append(
                [
                    name,
                    str(len(tally.files)),
                    str(tally.traces),
                    str(tally.steps),
                    str(tally.tool_calls),
                    str(tally.merged),
                    str(skipped),
                ]
            )
        return out

    def skipped_lines(self) -> list[str]:
        """The skipped spans, one line per reason: the kinds of span and their counts."""
        by_reason: dict[str, Counter[str]] = {}
        for tally in self.formats.values():
            for (reason, kind), n in tally.skipped.items():
                by_reason.setdefault(reason, Counter())[kind] += n
        return [
            f"skipped spans, {reason}: " + ", ".join(f"{kind} ({n})" for kind, n in kinds.items())
            for reason, kinds in by_reason.items()
        ]

    @property
    def complete(self) -> bool:
        """Whether every record was read and no trace lacks anything."""
        return not self.errors and not self.incomplete

    def missing_lines(self) -> list[str]:
        """One line per trace that lacks something (the first few), then the totals."""
        if not self.incomplete:
            return []
        lines = [
            f"trace {trace_id}: "
            + ", ".join(f"{MISSING.get(key, key)} ({n})" for key, n in missing.items())
            for trace_id, missing in self.incomplete[:_SHOWN]
        ]
        if len(self.incomplete) > _SHOWN:
            lines.append(f"... and {len(self.incomplete) - _SHOWN} more traces")
        totals: Counter[str] = Counter()
        for _, missing in self.incomplete:
            totals.update({key: 1 for key in missing})
        lines.append(
            f"{len(self.incomplete)} of {self.traces} traces lack something: "
            + ", ".join(f"{MISSING.get(key, key)} in {n}" for key, n in totals.items())
        )
        return lines

    def no_trace_hint(self, other_formats: list[str]) -> str:
        """What to tell a user when no trace came out: the formats the files were read as and
        the other formats there are.

        Args:
            other_formats: the names of the other importers.
        """
        tried = [FORMAT_NAMES[f] for f in _SPAN_FORMATS_OF.get(self.trace_format, ())]
        read_as = ", ".join(tried) if tried else f"the {self.trace_format} format"
        others = ", ".join(f for f in other_formats if f != self.trace_format)
        return f"no trace was imported: the files were read as {read_as}. Other formats: {others}."
