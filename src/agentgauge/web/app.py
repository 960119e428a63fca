"""The viewer's server: a Starlette app over one store, served by uvicorn on 127.0.0.1.

Routes: ``/`` (the page), ``/assets/NAME`` (the shipped front-end), and a JSON API the page
reads: ``api/runs``, ``api/run?id=``, ``api/samples?run=&...`` (one page of samples, filtered
and sorted by the store), ``api/sample?run=&key=`` and ``api/compare?a=&b=&by=``. A request
opens the store for itself (reads run side by side, and a run still being written shows its
samples so far). The documents of a finished run are computed once and kept.
"""

from __future__ import annotations

import math
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentgauge.documents.frontend import ASSETS, SERVER_CSP, asset, server_page
from agentgauge.documents.pages import (
    compare_document,
    run_document,
    run_row,
    sample_document,
    samples_document,
)
from agentgauge.documents.summary import finite
from agentgauge.errors import AgentgaugeError
from agentgauge.store import RunInfo, SampleQuery, Store

__all__ = [
    "HOST",
    "ViewerError",
    "bind",
    "create_app",
    "sample_query",
    "serve",
    "serving",
    "url_of",
]

HOST = "127.0.0.1"
"""The viewer listens on this machine only."""
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
"""The names this machine answers to: the only ``Host`` the viewer serves."""

_MAX_PAGE = 500
_MAX_RANGES = 64
_CACHED = 64
_HEADERS = {
    "Content-Security-Policy": SERVER_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
"""Sent with every response: only the viewer's own scripts run in its page."""


class ViewerError(AgentgaugeError, ValueError):
    """A request the viewer cannot answer: a malformed parameter (HTTP 400)."""


class _Documents:
    """Documents of finished runs, computed once (a run's summary and its comparison are
    the costly reads); a run still running is read anew each time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()

    def get(self, key: tuple[Any, ...], build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        document = build()
        with self._lock:
            self._kept[key] = document
            while len(self._kept) > _CACHED:
                self._kept.popitem(last=False)
        return document


def _state(run: RunInfo) -> tuple[Any, ...]:
    """What identifies a run's stored state: a document built from it stays right while this
    does not change (a resumed run gets another ``finished_at``, a labelled one its name and
    tags)."""
    return (run.id, run.status, run.finished_at, run.n_samples, run.name, tuple(run.tags))


def _number(request: Request, name: str, default: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ViewerError(f"{name} must be an integer, not {text!r}") from None
    return max(0, min(value, high))


def _bound(text: str, what: str) -> float | None:
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ViewerError(f"range: {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ViewerError(f"range: {what} {text!r} is not a finite number")
    return value


def sample_query(params: Any) -> SampleQuery:
    """The samples query of a request's parameters: ``search``, ``recommendation``, ``band``,
    ``error_type``, ``task_id``, ``category``, ``range=METRIC:LOW:HIGH`` (repeatable, a bound
    may be empty), ``sort`` and ``desc=1``.

    Args:
        params: the request's query parameters (a multi-dict).

    Raises:
        ViewerError: a malformed range, or ranges on more than 64 metrics.
    """
    # the ranges of one metric are one range (their intersection): a query has one condition
    # per metric, however many ranges a link repeats
    bounds: dict[str, tuple[float | None, float | None]] = {}
    for text in params.getlist("range"):
        metric, _, limits = text.partition(":")
        low_text, _, high_text = limits.partition(":")
        if not metric:
            raise ViewerError(f"range {text!r} is not METRIC:LOW:HIGH")
        low, high = _bound(low_text, "low"), _bound(high_text, "high")
        old_low, old_high = bounds.get(metric, (None, None))
        bounds[metric] = (
            low if old_low is None else old_low if low is None else max(low, old_low),
            high if old_high is None else old_high if high is None else min(high, old_high),
        )
        if len(bounds) > _MAX_RANGES:
            raise ViewerError(f"at most {_MAX_RANGES} metrics can have a range")
    ranges = [(metric, low, high) for metric, (low, high) in bounds.items()]
    filters = {
        name: params.get(name) or None
        for name in ("search", "recommendation", "band", "error_type", "task_id", "category")
    }
    return SampleQuery(
        **filters,
        ranges=tuple(ranges),
        sort=params.get("sort") or "seq",
        descending=params.get("desc") == "1",
    )


def create_app(db: str | Path) -> Starlette:
    """The viewer's app over one store.

    Args:
        db: the SQLite store.
    """
    path = str(db)
    documents = _Documents()

    def answer(build: Callable[[Store], dict[str, Any]]) -> Response:
        try:
            with Store(path) as store:
                document = finite(build(store))
        except ViewerError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400, headers=_HEADERS)
        except AgentgaugeError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404, headers=_HEADERS)
        return JSONResponse(document, headers={**_HEADERS, "Cache-Control": "no-store"})

    def required(request: Request, name: str) -> str:
        value = request.query_params.get(name)
        if not value:
            raise ViewerError(f"missing parameter {name!r}")
        return value

    def finished(store: Store, *run_ids: str) -> tuple[Any, ...] | None:
        runs = [store.get_run(r) for r in run_ids]
        if any(r.status == "running" for r in runs):
            return None
        return tuple(_state(r) for r in runs)

    def cached(key: tuple[Any, ...] | None, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        return build() if key is None else documents.get(key, build)

    def index(request: Request) -> Response:
        return Response(server_page(path), media_type="text/html; charset=utf-8", headers=_HEADERS)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response("not found", status_code=404, media_type="text/plain", headers=_HEADERS)
        return Response(asset(name), media_type=ASSETS[name], headers=_HEADERS)

    def runs(request: Request) -> Response:
        def build(store: Store) -> dict[str, Any]:
            rows = []
            for run in store.list_runs():
                key = None if run.status == "running" else ("row", *_state(run))
                rows.append(cached(key, partial(run_row, store, run)))
            return {"store": path, "runs": rows}

        return answer(build)

    def run(request: Request) -> Response:
        def build(store: Store) -> dict[str, Any]:
            rid = required(request, "id")
            key = finished(store, rid)
            return cached(key and ("run", *key), lambda: run_document(store, rid))

        return answer(build)

    def samples(request: Request) -> Response:
        def build(store: Store) -> dict[str, Any]:
            return samples_document(
                store,
                required(request, "run"),
                sample_query(request.query_params),
                offset=_number(request, "offset", 0, 10**9),
                limit=_number(request, "limit", 50, _MAX_PAGE),
            )

        return answer(build)

    def sample(request: Request) -> Response:
        return answer(
            lambda store: sample_document(
                store,
                required(request, "run"),
                required(request, "key"),
                steps_offset=_number(request, "steps_offset", 0, 10**9),
            )
        )

    def compare(request: Request) -> Response:
        def build(store: Store) -> dict[str, Any]:
            a, b = required(request, "a"), required(request, "b")
            by = request.query_params.get("by", "task")
            if by not in ("task", "id"):
                raise ViewerError(f"by must be 'task' or 'id', not {by!r}")
            key = finished(store, a, b)
            return cached(
                key and ("compare", by, *key),
                lambda: compare_document(store, a, b, by="task" if by == "task" else "id"),
            )

        return answer(build)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/assets/{name}", static),
            Route("/api/runs", runs),
            Route("/api/run", run),
            Route("/api/samples", samples),
            Route("/api/sample", sample),
            Route("/api/compare", compare),
        ],
        # a page of another site whose name it pointed at this machine (DNS rebinding) names
        # that site in Host: answered 400, it reads no run and no trace
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_NAMES))],
    )


def bind(port: int = 7860) -> socket.socket:
    """A socket bound to 127.0.0.1 and listening, for the viewer.

    Args:
        port: the port; 0 for any free one.

    Raises:
        ViewerError: the port is taken (or not allowed).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        # listening from here on: a browser opened at once waits instead of being refused
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ViewerError(
            f"cannot listen on {HOST}:{port} ({exc.strerror}): give another --port"
        ) from None
    return sock


def url_of(sock: socket.socket) -> str:
    """The viewer's address on a bound socket.

    Args:
        sock: from :func:`bind`.
    """
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}/"


def serve(db: str | Path, sock: socket.socket) -> None:
    """Serve the viewer on a bound socket until interrupted.

    Args:
        db: the SQLite store.
        sock: from :func:`bind`.
    """
    import uvicorn

    config = uvicorn.Config(create_app(db), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


@contextmanager
def serving(db: str | Path, port: int = 0) -> Iterator[str]:
    """Serve the viewer from a background thread while the block runs (a notebook, a test, a
    script that reads pages); yields its URL.

    Args:
        db: the SQLite store.
        port: the port; 0 (the default) for any free one.

    Raises:
        ViewerError: the port is taken, or the server did not start within 20 s.
    """
    import uvicorn

    sock = bind(port)
    server = uvicorn.Server(uvicorn.Config(create_app(db), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise ViewerError("the viewer did not start")
            time.sleep(0.02)
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
