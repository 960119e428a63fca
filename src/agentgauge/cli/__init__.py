"""The ``agentgauge`` command: one module per command family, each command thin (it parses its
options, calls the library, prints).

Any :class:`~agentgauge.errors.AgentgaugeError` a command lets through is reported here, in one
place, as a one-line ``error: ...`` with exit status 2; a former name a user wrote (a metric in a
suite file or ``--weights``) as a one-line ``warning: ...``.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import warnings
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.markup import escape
from typer.core import TyperGroup

from agentgauge._atomic import kept_until_success
from agentgauge._version import __version__
from agentgauge.cli import catalog, evaluate, imports, otel, run, runs, simulate, tuning, view
from agentgauge.cli._common import Command, VerdictExit, err_console, usage_error
from agentgauge.cli.judge import judge_app
from agentgauge.cli.review import review_app
from agentgauge.cli.toolcall import toolcall_app
from agentgauge.errors import AgentgaugeError
from agentgauge.registry import DeprecatedNameWarning

__all__ = ["app", "main"]


class _Root(TyperGroup):
    """The root command group: an AgentgaugeError from any command becomes a usage error, and a
    deprecated name a one-line warning."""

    def invoke(self, ctx: Any) -> Any:
        with kept_until_success() as replaced:
            try:
                return self._invoke(ctx)
            except typer.Exit as exc:
                if exc.exit_code and not isinstance(exc, VerdictExit):
                    replaced.restore()
                raise
            except BaseException:
                # a failed command leaves every output that existed as it was
                replaced.restore()
                raise

    def _invoke(self, ctx: Any) -> Any:
        with warnings.catch_warnings():
            show = warnings.showwarning

            def one_line(
                message: Warning | str,
                category: type[Warning],
                filename: str,
                lineno: int,
                file: TextIO | None = None,
                line: str | None = None,
            ) -> None:
                if issubclass(category, DeprecatedNameWarning):
                    err_console.print(f"warning: {message}", highlight=False, markup=False)
                else:
                    show(message, category, filename, lineno, file, line)

            warnings.showwarning = one_line
            try:
                return super().invoke(ctx)
            except AgentgaugeError as exc:
                raise usage_error(str(exc)) from None
            except (OSError, sqlite3.OperationalError) as exc:
                message = _storage_failure(exc)
                if message is None:
                    raise
                err_console.print(
                    f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True
                )
                raise typer.Exit(1) from None


_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
_DENIED = (errno.EROFS, errno.EACCES, errno.EPERM)
_RESUME = "what was saved is kept: 'agentgauge runs' lists the run, --resume continues it"


def _storage_failure(exc: OSError | sqlite3.OperationalError) -> str | None:
    """One line for a disk that is full or a folder that cannot be written, None for any
    other error (which keeps its traceback: it is a bug to report)."""
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        if "disk is full" in text or "disk I/O error" in text:
            return f"the store cannot be written: the disk is full; {_RESUME}"
        if "readonly" in text or "unable to open" in text:
            return f"the store cannot be written ({text}): check the folder's permissions"
        return None
    where = f" {exc.filename}" if exc.filename else ""
    if exc.errno in _FULL:
        return (
            f"cannot write{where}: the disk is full (or the file size limit is reached); {_RESUME}"
        )
    if exc.errno in _DENIED:
        return f"cannot write{where}: {exc.strerror}; check the folder's permissions"
    return None


app = typer.Typer(
    name="agentgauge",
    cls=_Root,
    help="Evaluate LLM agents and tool-calling models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentgauge {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    allow_download: Annotated[
        bool,
        typer.Option(
            "--allow-download",
            help="Let text metrics download models from the Hugging Face Hub (by default "
            "agentgauge uses installed models only and makes no such request).",
        ),
    ] = False,
) -> None:
    """Evaluate LLM agents and tool-calling models."""
    if not allow_download:
        # set before any model library is imported: they read it once, at import
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


app.command("run", cls=Command)(run.run_command)
app.command("simulate", cls=Command)(simulate.simulate)
app.command("tune", cls=Command)(tuning.tune_command)
app.command("impact", cls=Command)(tuning.impact_command)
app.command("evaluate", cls=Command)(evaluate.evaluate)
app.command("import", cls=Command)(imports.import_traces)
app.command("serve", cls=Command)(otel.serve)
app.command("export-otel", cls=Command)(otel.export_otel)
app.command("runs", cls=Command)(runs.runs)
app.command("show", cls=Command)(runs.show)
app.command("compare", cls=Command)(runs.compare)
app.command("passk", cls=Command)(runs.passk)
app.command("view", cls=Command)(view.view)
app.command("metrics", cls=Command)(catalog.metrics)
app.command("plugins", cls=Command)(catalog.plugins)
app.command("schema", cls=Command)(catalog.schema)
app.add_typer(toolcall_app, name="toolcall")
app.add_typer(review_app, name="review")
app.add_typer(judge_app, name="judge")


_METAVARS: dict[Any, str] = {int: "N", float: "X", Path: "PATH", str: "TEXT", list[str]: "TEXT"}


def _plain_metavars(command: Any) -> None:
    """Help at 80 columns: an option's value is shown as N, X, PATH or TEXT rather than its
    type (``<int range>``, ``<list[str]>``), so that names and descriptions keep the room."""
    for param in command.params:
        described = getattr(param, "type_descriptor", None)
        if getattr(param, "is_flag", False) or param.metavar is not None or described is None:
            continue
        if not described.is_choice and described.annotation in _METAVARS:
            param.metavar = _METAVARS[described.annotation]
    for sub in getattr(command, "commands", {}).values():
        _plain_metavars(sub)


def main() -> None:
    """The console script (``agentgauge``) and ``python -m agentgauge``."""
    command = typer.main.get_command(app)
    _plain_metavars(command)
    command()
