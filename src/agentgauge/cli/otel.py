"""OpenTelemetry both ways: ``agentgauge serve --otlp`` scores an app's traces as it runs,
``agentgauge export-otel`` writes a run's scores back as OTLP logs."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from agentgauge.cli._common import (
    DbOption,
    NameOption,
    OverwriteOption,
    SuiteOption,
    TagOption,
    console,
    err_console,
    label_run,
    output_file,
    refuse_clashes,
    require_store,
    usage_error,
    write_outputs,
)


def serve(
    otlp: Annotated[
        bool, typer.Option("--otlp", help="Receive OTLP/HTTP spans (JSON or protobuf).")
    ] = False,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one).")] = 4318,
    suite: SuiteOption = "behavior",
    db: DbOption = Path("agentgauge.db"),
    idle_timeout: Annotated[
        float, typer.Option(help="Close a trace whose root never came after this many seconds.")
    ] = 30.0,
    group_by: Annotated[
        str, typer.Option(help="One run per 'trace' id or per 'conversation'.")
    ] = "trace",
    token: Annotated[
        str | None,
        typer.Option(
            envvar="AGENTGAUGE_RECEIVER_TOKEN",
            help="Take only requests with 'Authorization: Bearer TOKEN' (required with a --host "
            "other machines reach).",
        ),
    ] = None,
    resume: Annotated[
        str | None, typer.Option(help="Continue this live run (after a crash or a kill).")
    ] = None,
    sample: Annotated[
        float,
        typer.Option(help="Score this share of the traces, by trace id (as OTel samplers do)."),
    ] = 1.0,
    service: Annotated[
        list[str] | None, typer.Option(help="Score only the traces of this service (repeat).")
    ] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(help="Score only the traces in which this agent ran (repeat)."),
    ] = None,
    attribute: Annotated[
        list[str] | None,
        typer.Option(
            help="Score only the traces with a span or resource attribute KEY=VALUE (repeat: "
            "all of them)."
        ),
    ] = None,
    window: Annotated[
        int, typer.Option(min=1, help="The rolling summary's size: the last N scored traces.")
    ] = 100,
    gate: Annotated[
        list[str] | None,
        typer.Option(
            help="METRIC=FLOOR: fire when the metric's rolling mean falls below FLOOR "
            "('composite' or a metric of the suite; repeat)."
        ),
    ] = None,
    gate_min_n: Annotated[
        int, typer.Option(min=1, help="Values a rolling mean needs before its gate can fire.")
    ] = 20,
    webhook: Annotated[
        str | None, typer.Option(help="POST each gate that fires, as JSON, to this URL.")
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            help="Stop after N traces received, or after a time (30s, 5m, 2h); exit 1 if a gate "
            "fired."
        ),
    ] = None,
    name: NameOption = None,
    tags: TagOption = None,
) -> None:
    """Receive the spans of a running app and score each agent run as it ends.

    Point the app at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318. The runs go to
    the store as one live run; each request is stored before it is answered. Ctrl-C or SIGTERM
    stops the receiver, scores the traces still open and prints the run's summary; --resume
    continues a run whose receiver was killed.

    --sample and the filters choose the traces scored; the rolling summary of the last --window
    of them is answered as JSON at GET /v1/summary and shown by the viewer. A --gate fires when
    a rolling mean falls below its floor: a line on stderr, a POST to --webhook, and exit 1 when
    the receiver stops with --until.
    """
    from agentgauge.config import load_suite
    from agentgauge.serve.online import Monitor, Selection, parse_attribute, parse_gate
    from agentgauge.serve.otlp import LiveRun, ReceiverSettings, is_loopback
    from agentgauge.store import Store

    if not otlp:
        raise usage_error("serve receives OTLP spans: give --otlp")
    if group_by not in ("trace", "conversation"):
        raise usage_error(f"--group-by must be 'trace' or 'conversation', not {group_by!r}")
    if idle_timeout <= 0:
        raise usage_error(f"--idle-timeout must be above 0, not {idle_timeout}")
    if not 0.0 < sample <= 1.0:
        raise usage_error(f"--sample must be in (0, 1], not {sample}")
    stop_after = _until(until)
    scoring = load_suite(suite)
    try:
        gates = tuple(parse_gate(g) for g in gate or [])
        attributes = tuple(parse_attribute(a) for a in attribute or [])
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    unknown = [
        g.metric for g in gates if g.metric != "composite" and g.metric not in scoring.metrics
    ]
    if unknown:
        raise usage_error(
            f"--gate {unknown[0]}: not a metric of suite {scoring.name!r} "
            f"({', '.join(scoring.metrics)}, or composite)"
        )
    monitor = Monitor(
        selection=Selection(sample, tuple(service or ()), tuple(agent or ()), attributes),
        window=window,
        gates=gates,
        min_n=gate_min_n,
        webhook=webhook,
        log=lambda line: err_console.print(f"[red]{escape(line)}[/]", highlight=False),
    )
    settings = ReceiverSettings(
        host=host,
        port=port,
        idle_timeout_s=idle_timeout,
        group_by="trace" if group_by == "trace" else "conversation",
        token=token or None,
        resume=resume,
    )

    def say(message: str) -> None:
        err_console.print(
            f"[red]error:[/] {escape(message)}; answering 503 until stopped", highlight=False
        )

    live = LiveRun(scoring, db, settings, on_error=say, monitor=monitor).start()
    if not is_loopback(host):
        err_console.print(
            f"[yellow]warning:[/] listening on {escape(host)}: other machines can reach the "
            "receiver; it takes only requests that carry the token",
            highlight=False,
        )
    console.print(
        f"receiving OTLP on {live.url}/v1/traces into run {live.run_id}; Ctrl-C to stop",
        highlight=False,
    )
    started = time.monotonic()
    with contextlib.suppress(KeyboardInterrupt), _stopped_by_sigterm():
        while not _reached(stop_after, live.monitor.counts.received, time.monotonic() - started):
            time.sleep(0.1)
    run_id = live.stop()
    with Store(db) as store:
        label_run(store, run_id, name, tags)
    write_outputs(
        db, run_id, json_out=None, csv_out=None, html_out=None, fail_under=None, gates=False
    )
    counts = live.monitor.counts
    console.print(
        f"received {counts.received} traces: {counts.scored} scored, {counts.not_sampled} not "
        f"in the sample (--sample {sample}), {counts.filtered_out} filtered out",
        highlight=False,
    )
    if live.monitor.fired:
        err_console.print(
            f"[red]{len(live.monitor.fired)} gates fired[/] (the run's 'gates' records)",
            highlight=False,
        )
        if stop_after is not None:
            raise typer.Exit(1)


def _until(text: str | None) -> tuple[str, float] | None:
    """``--until`` as ("traces", N) or ("seconds", S)."""
    if text is None:
        return None
    value = text.strip().lower()
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(value[-1:]) if value else None
    try:
        if scale is not None:
            seconds = float(value[:-1]) * scale
            if seconds > 0:
                return "seconds", seconds
        elif int(value) > 0:
            return "traces", float(int(value))
    except ValueError:
        pass
    raise usage_error(f"--until takes a number of traces or a time (30s, 5m, 2h), not {text!r}")


def _reached(until: tuple[str, float] | None, received: int, elapsed_s: float) -> bool:
    if until is None:
        return False
    kind, limit = until
    return received >= limit if kind == "traces" else elapsed_s >= limit


@contextlib.contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM (a service manager, a container stopping) stops the receiver as Ctrl-C does:
    the traces still open are scored before it exits."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def export_otel(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The run whose scores to write.")],
    out: Annotated[Path, typer.Option(callback=output_file, help="OTLP/JSON logs file to write.")],
    db: DbOption = Path("agentgauge.db"),
    overwrite: OverwriteOption = False,
) -> None:
    """Write a run's scores as gen_ai.evaluation.result events (OTLP/JSON logs), each
    parented to the span of the run it evaluates, to load into your own backend."""
    import time

    from agentgauge.report.otel_export import write_evaluation_events
    from agentgauge.store import Store

    require_store(db)
    refuse_clashes({"--out": out}, store=db, overwrite=overwrite)
    with Store(db) as store:
        n = write_evaluation_events(store, run_id, out, time.time_ns())
    console.print(f"wrote {n} evaluation events to {out}", highlight=False)
