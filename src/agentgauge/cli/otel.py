"""OpenTelemetry both ways: ``agentgauge serve --otlp`` scores an app's traces as it runs,
``agentgauge export-otel`` writes a run's scores back as OTLP logs."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Annotated

import typer

from agentgauge.cli._common import (
    DbOption,
    NameOption,
    OverwriteOption,
    SuiteOption,
    TagOption,
    console,
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
    name: NameOption = None,
    tags: TagOption = None,
) -> None:
    """Receive the spans of a running app and score each agent run as it ends.

    Point the app at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318. The runs go to
    the store as one live run; Ctrl-C stops the receiver and prints the run's summary.
    """
    from agentgauge.config import load_suite
    from agentgauge.serve.otlp import LiveRun, ReceiverSettings
    from agentgauge.store import Store

    if not otlp:
        raise usage_error("serve receives OTLP spans: give --otlp")
    if group_by not in ("trace", "conversation"):
        raise usage_error(f"--group-by must be 'trace' or 'conversation', not {group_by!r}")
    if idle_timeout <= 0:
        raise usage_error(f"--idle-timeout must be above 0, not {idle_timeout}")
    settings = ReceiverSettings(
        host=host,
        port=port,
        idle_timeout_s=idle_timeout,
        group_by="trace" if group_by == "trace" else "conversation",
    )
    live = LiveRun(load_suite(suite), db, settings).start()
    console.print(f"receiving OTLP on {live.url}/v1/traces; Ctrl-C to stop", highlight=False)
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()
    run_id = live.stop()
    with Store(db) as store:
        label_run(store, run_id, name, tags)
    write_outputs(db, run_id, json_out=None, csv_out=None, html_out=None, fail_under=None)


def export_otel(
    run_id: Annotated[str, typer.Argument(help="The run whose scores to write.")],
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
