"""A live OTLP/HTTP receiver: an app exporting its spans here is evaluated as it runs.

The receiver listens on ``/v1/traces`` and ``/v1/logs`` (OTLP/HTTP, JSON or protobuf, gzip
or not), buffers the spans of each trace, and closes a trace when its root span arrives (or
when no span of it came for ``idle_timeout_s``). Closed traces become agent runs as the
importer makes them (:class:`agentgauge.io.otel.SpanStream`: stacked records merged, bare model
calls joined), are scored with the suite and written to the store as one live run, sample by
sample, while the app goes on.

Point an app at it with ``OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318``.
"""

from __future__ import annotations

import gzip
import json
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentgauge.config import Suite
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import ReadError
from agentgauge.io.otel import DEFAULT_TASK_ID_ATTRIBUTE, GroupBy, SpanStream
from agentgauge.io.otel.wire.protobuf import decode_request
from agentgauge.model import Trace
from agentgauge.store import Store

__all__ = ["DEFAULT_PORT", "LiveRun", "ReceiverError", "ReceiverSettings"]

DEFAULT_PORT = 4318
"""OTLP/HTTP's port."""

_PATHS = ("/v1/traces", "/v1/logs")
_END = object()


class ReceiverError(AgentgaugeError):
    """The receiver cannot start (the address is taken, the store cannot be opened)."""


@dataclass(frozen=True)
class ReceiverSettings:
    """Where the receiver listens and how it closes traces.

    Args:
        host: the address to listen on.
        port: the port; 0 picks a free one.
        idle_timeout_s: a trace whose root span never came is closed after this long without
            a new span.
        group_by: ``trace`` or ``conversation`` (as for the importer).
        task_id_attribute: the span attribute that holds the task id.
    """

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    idle_timeout_s: float = 30.0
    group_by: GroupBy = "trace"
    task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE


def _body(handler: BaseHTTPRequestHandler) -> Any:
    """A request's export request as its OTLP/JSON dict (JSON or protobuf, gzip or not)."""
    data = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    if handler.headers.get("Content-Encoding", "").lower() == "gzip":
        data = gzip.decompress(data)
    if "protobuf" in handler.headers.get("Content-Type", ""):
        return decode_request(data)
    return json.loads(data)


class LiveRun:
    """The receiver and the live run it scores into.

    Args:
        suite: the metrics traces are scored with.
        db: the SQLite store the run goes to.
        settings: where to listen and how to close traces.
    """

    def __init__(self, suite: Suite, db: str | Path, settings: ReceiverSettings) -> None:
        self._suite = suite
        self._db = str(db)
        self._settings = settings
        self._items: queue.Queue[Any] = queue.Queue()
        self._lock = threading.Lock()
        self._requests = 0
        self._stop = threading.Event()
        self._stream = SpanStream(
            "otlp",
            group_by=settings.group_by,
            task_id_attribute=settings.task_id_attribute,
        )
        try:
            self._server = ThreadingHTTPServer((settings.host, settings.port), self._handler())
        except OSError as exc:
            where = f"{settings.host}:{settings.port}"
            raise ReceiverError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        self._server.daemon_threads = True
        port = self._server.server_address[1]
        self.url = f"http://{settings.host}:{port}"
        """The base URL apps export to (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
        self._run_id: str | None = None
        self._error: BaseException | None = None
        self._threads = [
            threading.Thread(target=self._server.serve_forever, daemon=True),
            threading.Thread(target=self._close_idle, daemon=True),
            threading.Thread(target=self._evaluate, daemon=True),
        ]

    def start(self) -> LiveRun:
        """Start listening and scoring; returns itself."""
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> str:
        """Stop listening, score the traces still open, finish the run; returns its id.

        Raises:
            ReceiverError: when scoring failed (the store could not be written).
        """
        self._server.shutdown()
        self._stop.set()
        with self._lock:
            for item in self._stream.finish():
                self._items.put(item)
        self._items.put(_END)
        for thread in self._threads:
            thread.join()
        self._server.server_close()
        if self._error is not None or self._run_id is None:
            raise ReceiverError(f"the live run could not be scored: {self._error}")
        return self._run_id

    def _take(self, path: str, doc: Any, binary: bool) -> None:
        with self._lock:
            self._requests += 1
            if path == "/v1/logs":
                items: Iterator[Trace | ReadError] = self._stream.add_logs(doc, self._requests)
            else:
                now = time.monotonic()
                items = self._stream.add(doc, self._requests, now, binary=binary)
            for item in items:
                self._items.put(item)

    def _close_idle(self) -> None:
        idle = self._settings.idle_timeout_s
        while not self._stop.wait(min(1.0, idle / 4)):
            with self._lock:
                for item in self._stream.close_idle(time.monotonic() - idle):
                    self._items.put(item)

    def _queued(self) -> Iterator[Trace | ReadError]:
        while (item := self._items.get()) is not _END:
            yield item

    def _evaluate(self) -> None:
        options = EvaluateOptions(
            kind="live",
            sources=[self.url],
            extra_config={"format": "otlp", "receiver": self.url},
            jobs=1,
            batch_size=1,
            progress=False,
        )
        try:
            with Store(self._db) as store:  # its own connection: SQLite's are per thread
                self._run_id = evaluate(self._queued(), self._suite, store=store, options=options)
        except Exception as exc:  # reported by stop(); the receiver keeps answering
            self._error = exc
            for _ in self._queued():
                pass  # drain, so that stop() does not wait on a full queue

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        live = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass  # the command prints what matters; no access log

            def _reply(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                path = self.path.split("?", 1)[0]
                if path not in _PATHS:
                    self._reply(
                        404, b'{"message": "use /v1/traces or /v1/logs"}', "application/json"
                    )
                    return
                try:
                    doc = _body(self)
                except (ValueError, OSError, ImportError) as exc:
                    message = json.dumps({"message": f"cannot read the request: {exc}"})
                    self._reply(400, message.encode(), "application/json")
                    return
                binary = "protobuf" in self.headers.get("Content-Type", "")
                live._take(path, doc, binary)
                # an empty Export*ServiceResponse: full success
                if binary:
                    self._reply(200, b"", "application/x-protobuf")
                else:
                    self._reply(200, b"{}", "application/json")

        return Handler
