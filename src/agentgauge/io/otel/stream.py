"""Span documents as they come (a file's, or a live receiver's requests) become Traces:
spans are held per trace until the trace is complete, then observed, grouped into runs and
assembled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from agentgauge._safe import describe, unexpected
from agentgauge.io.importers import importer
from agentgauge.io.jsonl import ReadError, storable_trace, surrogate_note, validation_read_error
from agentgauge.io.otel.assemble import build_trace
from agentgauge.io.otel.conventions import CONVENTIONS, observe
from agentgauge.io.otel.observation import Observation
from agentgauge.io.otel.runs import Runs
from agentgauge.io.otel.wire.documents import is_binary, read_documents
from agentgauge.io.otel.wire.formats import SPAN_FORMATS, SpanFormat, as_otlp
from agentgauge.io.otel.wire.logs import LogEvent, attach_logs, log_events
from agentgauge.io.otel.wire.otlp import SHAPE_ERRORS, line_error, spans_of
from agentgauge.io.otel.wire.span import BadField, Span
from agentgauge.model import Trace

__all__ = ["DEFAULT_TASK_ID_ATTRIBUTE", "GroupBy", "PendingRun", "SpanStream", "read_otel"]

GroupBy = Literal["trace", "conversation"]
"""``trace``: one run per trace id (bare model calls joined into runs); ``conversation``: one
run per conversation id."""

DEFAULT_TASK_ID_ATTRIBUTE = "gen_ai.conversation.id"
"""The span attribute a run's task id is read from by default."""


def _break_cycles(spans: list[Span]) -> list[list[Span]]:
    """Find the cycles in the spans' parent links and break each at its earliest span, which
    becomes a root; returns the cycles found (each in parent order)."""
    by_id = {s.span_id: s for s in spans}
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    cycles = []
    for span in spans:
        path: list[Span] = []
        node: Span | None = span
        while node is not None and state.get(node.span_id) is None:
            state[node.span_id] = 1
            path.append(node)
            node = by_id.get(node.parent_id) if node.parent_id else None
        if node is not None and state.get(node.span_id) == 1:
            cycle = path[next(i for i, s in enumerate(path) if s is node) :]
            cycles.append(cycle)
            first = min(cycle, key=lambda s: (s.start_ns or 0, s.line))
            first.parent_id = None
        for visited in path:
            state[visited.span_id] = 2
    return cycles


def _run_items(
    observations: list[Observation],
    notes: dict[str, Any],
    group_id: str,
    source: str,
    task_id_attribute: str,
) -> Iterator[Trace | ReadError]:
    """A run's Trace, after a warning for each cycle in its parent links (broken to read it)
    and for the values left out of it (one per line); a ReadError instead when the Trace
    cannot be made."""
    spans = [o.span for o in observations]
    line = min(s.line for s in spans)
    problems: dict[int, list[BadField]] = {}
    try:
        for cycle in _break_cycles(spans):
            root = next(s for s in cycle if s.parent_id is None)
            chain = " -> ".join(s.span_id for s in [*cycle, cycle[0]])
            message = (
                f"the parent links of spans {chain} form a cycle; {root.span_id} is read as a root"
            )
            problems.setdefault(root.line, []).append(
                BadField("parentSpanId", message, warning=True)
            )
        trace, replaced = storable_trace(
            build_trace(observations, group_id, task_id_attribute, notes)
        )
    except ValidationError as exc:
        yield validation_read_error(source, line, exc, prefix=f"trace {group_id}")
        return
    except SHAPE_ERRORS as exc:
        yield ReadError(source, line, f"trace {group_id}", describe(exc))
        return
    except Exception as exc:  # the import boundary: a bug costs this trace only
        yield ReadError(source, line, f"trace {group_id}", unexpected(exc))
        return
    for obs in observations:
        if obs.problems:
            problems.setdefault(obs.span.line, []).extend(obs.problems)
    if replaced:
        note = surrogate_note(replaced, prefix=f"trace {trace.id}")
        problems.setdefault(line, []).append(BadField(*note, warning=True))
    for at in sorted(problems):
        yield line_error(source, at, problems[at])
    yield trace


@dataclass
class PendingRun:
    """A run whose spans are grouped, not yet assembled into its Trace: the assembly (most
    of the reading's work) is done where the run is scored (a worker).

    Args:
        observations: the run's observations, one per span.
        notes: its counts for the metadata.
        id: the run's id, which its Trace takes.
        source: the file it was read from, for the errors.
        task_id_attribute: the span attribute that holds the task id.
    """

    observations: list[Observation]
    notes: dict[str, Any]
    id: str
    source: str
    task_id_attribute: str

    def __reduce__(self) -> tuple[Any, ...]:
        # sent to the workers by the thousand: as plain values, which pickle and unpickle in
        # about half the time of the span, event and observation objects
        packed = [o.packed() for o in self.observations]
        return (_unpack_run, (packed, self.notes, self.id, self.source, self.task_id_attribute))

    def items(self) -> Iterator[Trace | ReadError]:
        """The run's warnings (one per line), then its Trace; or the ReadError that says why
        it cannot be made."""
        return _run_items(
            self.observations, self.notes, self.id, self.source, self.task_id_attribute
        )

    def finish(self, warnings: list[ReadError]) -> Trace | ReadError:
        """The run's Trace, or the ReadError that says why it cannot be made; its warnings go
        in ``warnings``.

        Args:
            warnings: where the warnings go.
        """
        *before, last = self.items()
        warnings.extend(item for item in before if isinstance(item, ReadError))
        return last


def _unpack_run(
    packed: list[tuple[Any, ...]], notes: dict[str, Any], id: str, source: str, attribute: str
) -> PendingRun:
    observations = [Observation.unpacked(p) for p in packed]
    return PendingRun(observations, notes, id, source, attribute)


def _finished(items: Iterable[Trace | ReadError | PendingRun]) -> Iterator[Trace | ReadError]:
    """The items with each pending run assembled in place."""
    for item in items:
        if isinstance(item, PendingRun):
            yield from item.items()
        else:
            yield item


def _late(kind: str, trace_id: str) -> BadField:
    return BadField(
        "traceId",
        f"{kind} of trace {trace_id} came after the trace's root span and the trace was "
        "already imported without it",
    )


def _preload_logs(
    paths: Sequence[str | Path],
    stream: SpanStream,
    *,
    same_file: bool = False,
    binary: bool = False,
) -> Iterator[ReadError]:
    """Read the GenAI log records of OTLP logs exports. In the span file itself
    (``same_file``), only the documents that mention ``resourceLogs`` are parsed and what
    is not a logs export is left to the span pass."""
    for path in paths:
        needle = "resourceLogs" if same_file else None
        for item in read_documents(path, needle, binary=binary and same_file):
            if isinstance(item, ReadError):
                if not same_file:
                    yield item
                continue
            line, doc = item.line, item.doc
            if not isinstance(doc, dict) or "resourceLogs" not in doc:
                if not same_file:
                    message = "missing: not an OTLP logs export"
                    yield ReadError(str(path), line, "resourceLogs", message)
                continue
            yield from stream.add_logs(doc, line, str(path), replaced=item.replaced)


class SpanStream:
    """Agent runs assembled from span documents as they come: a file's, or the requests of a
    live receiver.

    A trace is complete when its root span (one without a parent) arrives (with
    ``group_by="trace"``), when it is closed (:meth:`close_idle`) or at the end
    (:meth:`finish`); complete traces become runs (:class:`~agentgauge.io.otel.runs.Runs`)
    and runs become Traces.

    Args:
        source: what the documents come from, for the errors (a file name, a URL).
        group_by: ``trace`` or ``conversation``.
        task_id_attribute: the span attribute that holds the task id.
        span_format: ``auto`` or the one format the documents are in.
        binary: the documents were OTLP protobuf (their format is named so).
    """

    def __init__(
        self,
        source: str,
        *,
        group_by: GroupBy = "trace",
        task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
        span_format: SpanFormat = "auto",
        binary: bool = False,
    ) -> None:
        if group_by not in ("trace", "conversation"):
            raise ValueError(f"group_by must be 'trace' or 'conversation', not {group_by!r}")
        if span_format not in SPAN_FORMATS:
            known = ", ".join(SPAN_FORMATS)
            raise ValueError(f"span_format must be one of {known}, not {span_format!r}")
        self.source = source
        self._group_by = group_by
        self._task_id_attribute = task_id_attribute
        self._span_format = span_format
        self._binary = binary
        self._logs: dict[str, list[LogEvent]] = {}
        self._open: dict[str, list[Span]] = {}
        self._touched: dict[str, float] = {}  # trace id -> when a span of it last came
        self._emitted: set[str] = set()
        self._runs = Runs(by_conversation=group_by == "conversation")

    def add_logs(
        self,
        doc: Any,
        line: int,
        source: str | None = None,
        *,
        replaced: Sequence[tuple[str | int, ...]] = (),
    ) -> Iterator[ReadError]:
        """Keep the GenAI log records of an OTLP logs export for their spans.

        Args:
            doc: the ``{"resourceLogs": [...]}`` document.
            line: where it starts, for the errors.
            source: where it comes from, when not from this stream's source.
            replaced: as for :meth:`add`.
        """
        origin = source or self.source
        try:
            events, errors = log_events(doc, origin, line)
        except Exception as exc:  # the import boundary: a bug costs this document
            events, errors = [], [BadField("", unexpected(exc))]
        for ev in events:
            if ev.trace_id in self._emitted:
                errors.append(_late(f"log record {ev.event.name}", ev.trace_id))
            else:
                self._logs.setdefault(ev.trace_id, []).append(ev)
        if replaced:
            errors.append(BadField(*surrogate_note(list(replaced)), warning=True))
        if errors:
            yield line_error(origin, line, errors)

    def add(
        self,
        doc: Any,
        line: int,
        now: float = 0.0,
        *,
        binary: bool | None = None,
        replaced: Sequence[tuple[str | int, ...]] = (),
    ) -> Iterator[Trace | ReadError]:
        """Take the spans of one document; yields the runs it completes. A document that
        cannot be read is an error of its line, and the stream goes on.

        Args:
            doc: an OTLP/JSON request, a span list, or a document of another span format.
            line: where it starts, for the errors.
            now: the time it arrived (for :meth:`close_idle`).
            binary: the document came as OTLP protobuf (default: as the stream was told).
            replaced: the paths of the strings decoding read with a lone surrogate replaced
                (:func:`~agentgauge._safe.replace_surrogates`): a warning of the line.
        """
        return _finished(self._add(doc, line, now, binary=binary, replaced=replaced))

    def _add(
        self,
        doc: Any,
        line: int,
        now: float = 0.0,
        *,
        binary: bool | None = None,
        replaced: Sequence[tuple[str | int, ...]] = (),
    ) -> Iterator[Trace | ReadError | PendingRun]:
        """:meth:`add`, the runs it completes left to assemble."""
        completed: list[str] = []
        try:
            errors = self._take(doc, line, now, binary, completed)
        except Exception as exc:  # the import boundary: a bug costs this document
            errors = [BadField("", unexpected(exc))]
        if replaced:
            errors.append(BadField(*surrogate_note(list(replaced)), warning=True))
        if errors:
            yield line_error(self.source, line, errors)
        for trace_id in dict.fromkeys(completed):
            yield from self._close(trace_id)

    def _take(
        self, doc: Any, line: int, now: float, binary: bool | None, completed: list[str]
    ) -> list[BadField]:
        """Hold the spans of a document, the traces whose root it holds in ``completed``;
        returns what could not be read."""
        protobuf = self._binary if binary is None else binary
        doc, label, errors = as_otlp(doc, self._span_format)
        spans: list[Span] = []
        if doc is not None:
            spans, bad = spans_of(doc, line)
            errors += bad
        for span in spans:
            span.source_format = "otlp-proto" if protobuf else label
            if span.trace_id in self._emitted:
                errors.append(_late(f"span {span.span_id}", span.trace_id))
                continue
            self._open.setdefault(span.trace_id, []).append(span)
            self._touched[span.trace_id] = now
            if self._group_by == "trace" and span.parent_id is None:
                completed.append(span.trace_id)
        return errors

    def close_idle(self, before: float) -> Iterator[Trace | ReadError]:
        """Close the traces no span of which came since ``before`` (their root never came).

        Args:
            before: a time on the clock given to :meth:`add`.
        """
        for trace_id in [t for t, when in self._touched.items() if when < before]:
            yield from _finished(self._close(trace_id))

    def finish(self) -> Iterator[Trace | ReadError]:
        """Close everything still open: the traces, the runs waiting for more, and the log
        records that matched no span."""
        return _finished(self._finish())

    def _finish(self) -> Iterator[Trace | ReadError | PendingRun]:
        """:meth:`finish`, the runs left to assemble."""
        for trace_id in list(self._open):
            yield from self._close(trace_id)
        for group_id, observations, notes in self._runs.rest():
            yield PendingRun(observations, notes, group_id, self.source, self._task_id_attribute)
        for trace_id, logs in self._logs.items():
            # records from other files may belong to spans elsewhere: only this source's count
            orphans = [ev for ev in logs if ev.source == self.source]
            if orphans:
                yield ReadError(
                    self.source,
                    orphans[0].line,
                    "traceId",
                    f"{len(orphans)} GenAI log records of trace {trace_id} match no span",
                )
        self._logs.clear()

    def _close(self, trace_id: str) -> Iterator[ReadError | PendingRun]:
        self._emitted.add(trace_id)
        self._touched.pop(trace_id, None)
        spans = self._open.pop(trace_id)
        try:
            notes = attach_logs(spans, self._logs.pop(trace_id, []))
            observations = [observe(span) for span in spans]
            runs = list(self._runs.add(trace_id, observations, notes))
        except Exception as exc:  # the import boundary: a bug costs this trace
            yield ReadError(
                self.source, min(s.line for s in spans), f"trace {trace_id}", unexpected(exc)
            )
            return
        for group_id, run, run_notes in runs:
            yield PendingRun(run, run_notes, group_id, self.source, self._task_id_attribute)


def pending_runs(
    path: str | Path,
    *,
    group_by: GroupBy = "trace",
    task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
    log_files: Sequence[str | Path] = (),
    span_format: SpanFormat = "auto",
) -> Iterator[Trace | ReadError | PendingRun]:
    """:func:`read_otel`'s items with each run's spans grouped but not assembled
    (:class:`PendingRun`): the evaluation's workers assemble them, in parallel, and the
    items come in the same order, so the same Traces and errors come of them.

    Args:
        path: as for :func:`read_otel`.
        group_by: as for :func:`read_otel`.
        task_id_attribute: as for :func:`read_otel`.
        log_files: as for :func:`read_otel`.
        span_format: as for :func:`read_otel`.
    """
    binary = span_format == "otlp-proto" or (span_format == "auto" and is_binary(path))
    stream = SpanStream(
        str(path),
        group_by=group_by,
        task_id_attribute=task_id_attribute,
        span_format=span_format,
        binary=binary,
    )
    yield from _preload_logs(log_files, stream)
    # log records are exported apart from the spans, often after them: read them first
    yield from _preload_logs([path], stream, same_file=True, binary=binary)
    for item in read_documents(path, binary=binary):
        if isinstance(item, ReadError):
            yield item
        elif not (isinstance(item.doc, dict) and "resourceLogs" in item.doc):  # logs: read first
            yield from stream._add(item.doc, item.line, replaced=item.replaced)
    yield from stream._finish()


@importer(
    "otel",
    description="OpenTelemetry GenAI / OpenInference spans in any span format, told by content",
    pending=pending_runs,
    prepare=CONVENTIONS.load,
)
def read_otel(
    path: str | Path,
    *,
    group_by: GroupBy = "trace",
    task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
    log_files: Sequence[str | Path] = (),
    span_format: SpanFormat = "auto",
) -> Iterator[Trace | ReadError]:
    """Stream the agent runs of a span file as Traces.

    Args:
        path: the file, gzip-compressed or not: one OTLP/JSON ``ExportTraceServiceRequest`` per
            line (the Collector's file exporter), one or several concatenated JSON documents
            (a whole OTLP/HTTP request, a Tempo ``batches`` export, a Jaeger query-API
            export), a JSON list of spans as the SDKs' console exporters print them, or an OTLP
            protobuf request. OTLP logs exports (``resourceLogs``) in the same file are read
            too: their GenAI events join the spans they name.
        group_by: ``trace`` (one Trace per trace id, emitted once its root span is read) or
            ``conversation`` (one Trace per ``gen_ai.conversation.id`` / ``session.id``, traces
            without one stand alone; holds the file's spans until its end).
        task_id_attribute: the span attribute that holds the task id (searched on the root span
            first, then on every span; ``session.id`` is the fallback); the trace id otherwise.
        log_files: OTLP logs exports written to other files (read first, held in memory).
        span_format: ``auto`` tells the formats apart by their content; ``otlp-json``,
            ``otlp-proto``, ``jaeger``, ``tempo``, ``openai-agents``, ``langsmith``,
            ``langfuse`` or ``mlflow`` reads the file as that format only.
    """
    yield from _finished(
        pending_runs(
            path,
            group_by=group_by,
            task_id_attribute=task_id_attribute,
            log_files=log_files,
            span_format=span_format,
        )
    )


_SPAN_IMPORTERS: dict[SpanFormat, str] = {
    "otlp-json": "OTLP/JSON spans only (file-exporter lines, whole requests, SDK span lists)",
    "otlp-proto": "an OTLP protobuf request (the otel extra)",
    "jaeger": "Jaeger's query-API JSON",
    "tempo": "Tempo's trace API JSON (batches of resource spans)",
    "openai-agents": "the OpenAI Agents SDK's own trace export",
    "langsmith": "LangSmith run trees and run lists",
    "langfuse": "Langfuse trace exports (traces with their observations)",
    "mlflow": "MLflow trace JSON (Trace.to_json(), its UI's and SDK's export)",
}
"""The importers of one span format each (``otel`` tells them all apart)."""


def _span_importer(span_format: SpanFormat) -> Callable[..., Iterator[Trace | ReadError]]:
    """The reader of one span format: :func:`read_otel` told the format."""

    def read(
        path: str | Path,
        *,
        group_by: GroupBy = "trace",
        task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE,
        log_files: Sequence[str | Path] = (),
    ) -> Iterator[Trace | ReadError]:
        return read_otel(
            path,
            group_by=group_by,
            task_id_attribute=task_id_attribute,
            log_files=log_files,
            span_format=span_format,
        )

    read.__doc__ = f"Stream the agent runs of {_SPAN_IMPORTERS[span_format]} as Traces."
    return read


def _span_pending(
    span_format: SpanFormat,
) -> Callable[..., Iterator[Trace | ReadError | PendingRun]]:
    """The pending reader of one span format: :func:`pending_runs` told the format."""

    def pending(path: str | Path) -> Iterator[Trace | ReadError | PendingRun]:
        return pending_runs(path, span_format=span_format)

    return pending


for _format, _description in _SPAN_IMPORTERS.items():
    importer(
        _format, description=_description, pending=_span_pending(_format), prepare=CONVENTIONS.load
    )(_span_importer(_format))
