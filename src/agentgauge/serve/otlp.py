"""A live OTLP/HTTP receiver: an app exporting its spans here is evaluated as it runs.

The receiver listens on ``/v1/traces`` and ``/v1/logs`` (OTLP/HTTP, JSON or protobuf, gzip
or not), buffers the spans of each trace, and closes a trace when its root span arrives (or
when no span of it came for ``idle_timeout_s``). Closed traces become agent runs as the
importer makes them (:class:`agentgauge.io.otel.SpanStream`: stacked records merged, bare model
calls joined), are scored with the suite and written to the store as one live run, sample by
sample, while the app goes on.

What it answers 200 it has stored: each request is written to the store (its secrets redacted,
as a stored trace's are) before the answer, and a request that cannot be written is answered
503, so the exporter retries it. A receiver killed in any way loses nothing it acknowledged:
``serve --resume RUN`` reads the stored requests again, scores the traces the run does not hold
yet, and goes on receiving.

Only what an OTLP exporter sends is taken: a POST of OTLP JSON or protobuf, at most
``max_request_bytes`` (after gzip), with the receiver's own address in ``Host`` and no foreign
``Origin`` (a web page cannot post traces, nor read answers through a rebound name), and the
``Authorization: Bearer <token>`` when the receiver has a token, which it must have when it
listens beyond this machine.

Which traces are scored, the rolling summary of their scores and the gates on it are a
:class:`~agentgauge.serve.online.Monitor`'s (sampling, filters, window, gates); the summary is
answered as JSON at ``GET /v1/summary`` and kept in the store for the viewer.

Point an app at it with ``OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318``.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import queue
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentgauge._safe import DECODE_ERRORS, DecodeError, describe
from agentgauge.config import Suite
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import ReadError
from agentgauge.io.otel import DEFAULT_TASK_ID_ATTRIBUTE, GroupBy, SpanStream
from agentgauge.io.otel.wire.documents import decode_document
from agentgauge.io.otel.wire.protobuf import decode_request
from agentgauge.model import Trace
from agentgauge.serve.online import Monitor
from agentgauge.store import Store

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_PORT",
    "LiveRun",
    "ReceiverError",
    "ReceiverSettings",
]

DEFAULT_PORT = 4318
"""OTLP/HTTP's port."""

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""The largest request body taken, after gzip (OTLP exporters send a few MB at most)."""

_PATHS = ("/v1/traces", "/v1/logs")
_SUMMARY = "/v1/summary"
_CONTENT_TYPES = {"application/json": False, "application/x-protobuf": True}
_LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")
_SPOOL = "otlp"  # the records stream that holds the requests of a live run
_END = object()
_DRAINED = 4  # a body up to this many times the cap is read before it is refused
# a body that is not OTLP: not JSON, nested too deeply, not a protobuf request, no protobuf
_UNREADABLE: tuple[type[BaseException], ...] = (DecodeError, *DECODE_ERRORS, ImportError)


class ReceiverError(AgentgaugeError):
    """The receiver cannot start (the address is taken, the store cannot be opened, a token is
    missing) or its run could not be scored."""


@dataclass(frozen=True)
class ReceiverSettings:
    """Where the receiver listens, what it takes and how it closes traces.

    Args:
        host: the address to listen on.
        port: the port; 0 picks a free one.
        idle_timeout_s: a trace whose root span never came is closed after this long without
            a new span.
        group_by: ``trace`` or ``conversation`` (as for the importer).
        task_id_attribute: the span attribute that holds the task id.
        token: the bearer token a request must carry; required when ``host`` is not a
            loopback address.
        max_request_bytes: the largest request body taken (after gzip); larger ones are
            answered 413.
        resume: the id of a live run to continue (its stored requests are read again).
    """

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    idle_timeout_s: float = 30.0
    group_by: GroupBy = "trace"
    task_id_attribute: str = DEFAULT_TASK_ID_ATTRIBUTE
    token: str | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    resume: str | None = None


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only.

    Args:
        host: an address or ``localhost``.
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Refused(Exception):
    """A request answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Server(ThreadingHTTPServer):
    # a burst of exporters connecting at once waits in the queue instead of being reset
    request_queue_size = 1024
    daemon_threads = True


class _Spool:
    """Writes each request to the store before it is answered: one thread owns the store's
    connection, a handler waits for its request to be committed."""

    def __init__(self, db: str, run_id: str) -> None:
        self._db = db
        self._run_id = run_id
        self._requests: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._write, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._requests.put(_END)
        self._thread.join()

    def put(self, record: dict[str, Any]) -> None:
        """Write ``record``; returns once it is committed.

        Raises:
            OSError: it could not be written (the store's error, as its message).
        """
        done = threading.Event()
        outcome: list[BaseException] = []
        self._requests.put((record, done, outcome))
        done.wait()
        if outcome:
            raise OSError(str(outcome[0]))

    def _write(self) -> None:
        store: Store | None = None
        try:
            while (item := self._requests.get()) is not _END:
                record, done, outcome = item
                try:
                    if store is None:
                        store = Store(self._db)
                    store.append_record(self._run_id, _SPOOL, record)
                except Exception as exc:  # answered 503: the exporter sends it again
                    outcome.append(exc)
                done.set()
        finally:
            if store is not None:
                store.close()


class LiveRun:
    """The receiver and the live run it scores into.

    Args:
        suite: the metrics traces are scored with.
        db: the SQLite store the run goes to.
        settings: where to listen, what to take and how to close traces.
        on_error: told once, in words, when requests can no longer be stored or scored (the
            receiver answers them 503 from then on).
        monitor: which traces are scored, their rolling summary and its gates; every closed
            trace is scored, and counted, when None.

    Raises:
        ReceiverError: the address is taken, the store cannot be opened or written, the run to
            resume is not a live run, or a token is missing for a non-loopback address.
    """

    def __init__(
        self,
        suite: Suite,
        db: str | Path,
        settings: ReceiverSettings,
        on_error: Callable[[str], None] | None = None,
        monitor: Monitor | None = None,
    ) -> None:
        if not is_loopback(settings.host) and not settings.token:
            raise ReceiverError(
                f"listening on {settings.host} lets other machines send traces: give a --token "
                "(or AGENTGAUGE_RECEIVER_TOKEN) that they must send as 'Authorization: Bearer'"
            )
        self._suite = suite
        self._db = str(db)
        self._settings = settings
        self._on_error = on_error
        self.monitor = monitor or Monitor()
        """What the run counts, its rolling summary and its gates."""
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
            self._server = _Server((settings.host, settings.port), self._handler())
        except OSError as exc:
            where = f"{settings.host}:{settings.port}"
            raise ReceiverError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        port = self._server.server_address[1]
        self.url = f"http://{settings.host}:{port}"
        """The base URL apps export to (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
        try:
            self._run_id, self._replay, self._scored = self._open_run()
        except ReceiverError:
            self._server.server_close()
            raise
        self._hosts = {f"{name}:{port}" for name in (*_LOCAL_NAMES, settings.host)}
        self._origins = {f"http://{host}" for host in self._hosts}
        self._spool = _Spool(self._db, self._run_id)
        self._error: BaseException | None = None
        self._failure: str | None = None
        self._threads = [
            threading.Thread(target=self._server.serve_forever, daemon=True),
            threading.Thread(target=self._close_idle, daemon=True),
            threading.Thread(target=self._evaluate, daemon=True),
        ]

    @property
    def run_id(self) -> str:
        """The live run's id."""
        return self._run_id

    def _open_run(self) -> tuple[str, list[dict[str, Any]], set[str]]:
        """The run to score into, created now (so that each request can be stored before it is
        answered) or reopened; the requests it stored, and the ids of the traces it holds."""
        resume = self._settings.resume
        try:
            with Store(self._db) as store:
                if resume is None:
                    config = {
                        "suite": self._suite.model_dump(mode="json"),
                        "format": "otlp",
                        "receiver": self.url,
                    }
                    run_id = store.create_run(
                        kind="live", suite=self._suite.name, config=config, sources=[self.url]
                    )
                    return run_id, [], set()
                run = store.get_run(resume)
                if run.kind != "live":
                    raise ReceiverError(f"run {run.id} is a {run.kind} run, not a live one")
                scored = {s.trace_id for s in store.iter_samples(run.id) if s.trace_id}
                return run.id, store.records(run.id, _SPOOL), scored
        except ReceiverError:
            raise
        except Exception as exc:  # not a database, a folder that cannot be written, no run
            raise ReceiverError(f"cannot use the store {self._db}: {exc}") from None

    def start(self) -> LiveRun:
        """Read the requests a resumed run stored, then start listening and scoring; returns
        itself."""
        for record in self._replay:
            self._take(record["path"], record["doc"], bool(record.get("binary")))
        self._replay = []
        self._spool.start()
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
                self._queue(item)
        self._items.put(_END)
        for thread in self._threads:
            thread.join()
        self._spool.stop()
        self._server.server_close()
        if self._error is not None:
            raise ReceiverError(f"the live run could not be scored: {self._error}")
        return self._run_id

    def _queue(self, item: Trace | ReadError) -> None:
        if isinstance(item, Trace) and not self.monitor.keep(item):
            return  # not in the sample, or filtered out
        # a resumed run holds some of the traces its stored requests make again
        if isinstance(item, Trace) and item.id in self._scored:
            return
        self._items.put(item)

    def _take(
        self, path: str, doc: Any, binary: bool, replaced: list[tuple[str | int, ...]] | None = None
    ) -> None:
        with self._lock:
            self._requests += 1
            if path == "/v1/logs":
                items: Iterator[Trace | ReadError] = self._stream.add_logs(
                    doc, self._requests, replaced=replaced or ()
                )
            else:
                now = time.monotonic()
                self.monitor.watch(doc)
                items = self._stream.add(
                    doc, self._requests, now, binary=binary, replaced=replaced or ()
                )
            for item in items:
                self._queue(item)

    def _receive(
        self, path: str, doc: Any, binary: bool, replaced: list[tuple[str | int, ...]]
    ) -> None:
        """Store a request, then take its spans.

        Raises:
            _Refused: 503 when it cannot be stored or the run can no longer be scored.
        """
        if self._failure is not None:
            raise _Refused(503, self._failure)
        if path == "/v1/traces" and self._settings.group_by == "trace":
            # traces outside the sample are dropped here, before they cost any work; a
            # conversation's traces are sampled once it is assembled (its root trace id)
            doc = self.monitor.screen(doc)
        try:
            self._spool.put({"path": path, "binary": binary, "doc": doc})
        except OSError as exc:
            self._fail(f"the request cannot be stored: {exc}")
            raise _Refused(503, f"the request cannot be stored: {exc}") from None
        self._take(path, doc, binary, replaced)

    def _fail(self, message: str) -> None:
        if self._failure is None:
            self._failure = message
            if self._on_error is not None:
                self._on_error(message)

    def _close_idle(self) -> None:
        idle = self._settings.idle_timeout_s
        while not self._stop.wait(min(1.0, idle / 4)):
            with self._lock:
                for item in self._stream.close_idle(time.monotonic() - idle):
                    self._queue(item)

    def _queued(self) -> Iterator[Trace | ReadError]:
        while (item := self._items.get()) is not _END:
            yield item

    def _evaluate(self) -> None:
        options = EvaluateOptions(
            run_id=self._run_id,
            resume=True,
            kind="live",
            jobs=1,
            batch_size=1,
            progress=False,
            on_written=self.monitor.on_written,
        )
        try:
            with Store(self._db) as store:  # its own connection: SQLite's are per thread
                evaluate(self._queued(), self._suite, store=store, options=options)
                self.monitor.write_snapshot(store, self._run_id)
        except Exception as exc:  # reported by stop(); new requests are answered 503
            self._error = exc
            self._fail(f"the live run cannot be scored: {exc}")
            for _ in self._queued():
                pass  # drain, so that stop() does not wait on a full queue

    def _check(self, handler: BaseHTTPRequestHandler) -> tuple[str, bool]:
        """The path of an acceptable request and whether it is protobuf.

        Raises:
            _Refused: a request the receiver does not take.
        """
        path = handler.path.split("?", 1)[0]
        if path not in _PATHS:
            raise _Refused(404, "use /v1/traces or /v1/logs")
        self._check_caller(handler)
        headers = handler.headers
        kind = headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if kind not in _CONTENT_TYPES:
            raise _Refused(415, "send OTLP as application/json or application/x-protobuf")
        return path, _CONTENT_TYPES[kind]

    def _check_caller(self, handler: BaseHTTPRequestHandler) -> None:
        """Refuse a request from a foreign name or web page, or without the token.

        Raises:
            _Refused: 403 or 401.
        """
        headers = handler.headers
        if is_loopback(self._settings.host) and headers.get("Host") not in self._hosts:
            raise _Refused(403, "the Host header does not name this receiver")
        origin = headers.get("Origin")
        if origin is not None and origin not in self._origins:
            raise _Refused(403, "requests from web pages are not taken")
        token = self._settings.token
        if token is not None:
            sent = headers.get("Authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
                raise _Refused(401, "a bearer token is required")

    def _read(
        self, handler: BaseHTTPRequestHandler, binary: bool
    ) -> tuple[Any, list[tuple[str | int, ...]]]:
        """The request's export request as its OTLP/JSON dict, and the paths of the strings
        read with a lone surrogate replaced (the request is stored as it is read).

        Raises:
            _Refused: too large (413) or unreadable (400).
        """
        cap = self._settings.max_request_bytes
        try:
            size = int(handler.headers.get("Content-Length") or "")
        except ValueError:
            raise _Refused(411, "a Content-Length is required") from None
        if size < 0 or size > cap:
            if 0 < size <= _DRAINED * cap:
                # read and dropped, so that the client is still reading when the answer comes
                left = size
                while left > 0 and (chunk := handler.rfile.read(min(1 << 16, left))):
                    left -= len(chunk)
            raise _Refused(413, f"the request is larger than {cap} bytes")
        data = handler.rfile.read(size)
        if handler.headers.get("Content-Encoding", "").lower() == "gzip":
            data = _gunzip(data, cap)
        try:
            if binary:
                return decode_request(data), []
            return decode_document(data.decode("utf-8"))
        except _UNREADABLE as exc:
            raise _Refused(400, f"cannot read the request: {describe(exc)}") from None

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
                binary = False
                try:
                    path, binary = live._check(self)
                    doc, replaced = live._read(self, binary)
                    live._receive(path, doc, binary, replaced)
                except _Refused as refused:
                    # what was not read of the body would be taken for the next request
                    self.close_connection = True
                    message = json.dumps({"message": str(refused)}).encode()
                    with contextlib.suppress(OSError):  # a client that stopped listening
                        self._reply(refused.status, message, "application/json")
                    return
                # an empty Export*ServiceResponse: full success
                if binary:
                    self._reply(200, b"", "application/x-protobuf")
                else:
                    self._reply(200, b"{}", "application/json")

            def do_GET(self) -> None:
                self.close_connection = True
                if self.path.split("?", 1)[0] != _SUMMARY:
                    body = b'{"message": "POST OTLP to /v1/traces; GET /v1/summary"}'
                    self._reply(405, body, "application/json")
                    return
                try:
                    live._check_caller(self)
                except _Refused as refused:
                    message = json.dumps({"message": str(refused)}).encode()
                    self._reply(refused.status, message, "application/json")
                    return
                summary = {"run_id": live.run_id, **live.monitor.snapshot()}
                self._reply(200, json.dumps(summary).encode(), "application/json")

        return Handler


def _gunzip(data: bytes, cap: int) -> bytes:
    """``data`` decompressed, refused past ``cap`` bytes (a small gzip bomb would otherwise take
    gigabytes) or when it is not gzip.

    Raises:
        _Refused: 413 or 400.
    """
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, cap + 1)
    except zlib.error as exc:
        raise _Refused(400, f"cannot read the request: not gzip ({exc})") from None
    if len(out) > cap or inflater.unconsumed_tail:
        raise _Refused(413, f"the request is larger than {cap} bytes once decompressed")
    if not inflater.eof:
        raise _Refused(400, "cannot read the request: the gzip data is cut short")
    return out
