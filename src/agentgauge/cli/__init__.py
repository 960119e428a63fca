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
from collections.abc import Iterator, MutableMapping
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any, TextIO, cast

import typer
import typer.main
from rich.markup import escape
from typer.core import TyperGroup

from agentgauge._atomic import kept_until_success
from agentgauge._version import __version__
from agentgauge.cli._common import Command, VerdictExit, defer_coercion, err_console, usage_error
from agentgauge.errors import AgentgaugeError
from agentgauge.registry import DeprecatedNameWarning

__all__ = ["app", "main"]


_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("agentgauge.cli.run", "run_command"),
    "simulate": ("agentgauge.cli.simulate", "simulate"),
    "tune": ("agentgauge.cli.tuning", "tune_command"),
    "impact": ("agentgauge.cli.tuning", "impact_command"),
    "evaluate": ("agentgauge.cli.evaluate", "evaluate"),
    "import": ("agentgauge.cli.imports", "import_traces"),
    "serve": ("agentgauge.cli.otel", "serve"),
    "export-otel": ("agentgauge.cli.otel", "export_otel"),
    "runs": ("agentgauge.cli.runs", "runs"),
    "show": ("agentgauge.cli.runs", "show"),
    "compare": ("agentgauge.cli.runs", "compare"),
    "passk": ("agentgauge.cli.runs", "passk"),
    "view": ("agentgauge.cli.view", "view"),
    "metrics": ("agentgauge.cli.catalog", "metrics"),
    "plugins": ("agentgauge.cli.catalog", "plugins"),
    "schema": ("agentgauge.cli.catalog", "schema"),
    "toolcall": ("agentgauge.cli.toolcall", "toolcall_app"),
    "review": ("agentgauge.cli.review", "review_app"),
    "judge": ("agentgauge.cli.judge", "judge_app"),
}
"""Each command's name -> its module and the function (or sub-command group) there, in the
order of the help. A command's module is imported when the command is looked up, so that
``agentgauge evaluate`` does not import what ``toolcall`` or ``judge`` need."""


def _build_command(name: str) -> Any:
    """The click command (or group) of one entry of :data:`_COMMANDS`, its module imported."""
    module, attribute = _COMMANDS[name]
    target = getattr(import_module(module), attribute)
    if isinstance(target, typer.Typer):
        command: Any = typer.main.get_group(target)
    else:
        single = typer.Typer(rich_markup_mode=None, add_completion=False)
        single.command(name, cls=Command)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class _Commands(MutableMapping[str, Any]):
    """The root group's commands: every name known up front, each command built on first
    use (a listing of the names builds none; the help, which shows each one's summary, builds
    them all)."""

    def __init__(self, root: _Root) -> None:
        self._root = root
        self._built: dict[str, Any] = {}
        self._names = list(_COMMANDS)

    def __getitem__(self, name: str) -> Any:
        command = self._built.get(name)
        if command is None:
            if name not in self._names:
                raise KeyError(name)
            command = self._built[name] = _build_command(name)
            if self._root.plain_metavars:
                _plain_metavars(command)
        return command

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command
        if name not in self._names:
            self._names.append(name)

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


class _Root(TyperGroup):
    """The root command group: its commands are built as they are looked up; an
    AgentgaugeError from any command becomes a usage error, and a deprecated name a one-line
    warning."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self)
        self.plain_metavars = False
        """Set by :func:`main`: the commands' help shows values as N, X, PATH or TEXT."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names alone: no command is built for them

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        defer_coercion(self, ctx)
        return super().parse_args(ctx, args)

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


_METAVARS: dict[Any, str] = {int: "N", float: "X", Path: "PATH", str: "TEXT", list[str]: "TEXT"}


def _plain_metavars(command: Any) -> None:
    """Help at 80 columns: an option's value is shown as N, X, PATH or TEXT rather than its
    type (``<int range>``, ``<list[str]>``), so that names and descriptions keep the room
    (the command's own options, then its sub-commands')."""
    _plain_options(command)
    for sub in getattr(command, "commands", {}).values():
        _plain_metavars(sub)


def _plain_options(command: Any) -> None:
    for param in command.params:
        described = getattr(param, "type_descriptor", None)
        if getattr(param, "is_flag", False) or param.metavar is not None or described is None:
            continue
        if not described.is_choice and described.annotation in _METAVARS:
            param.metavar = _METAVARS[described.annotation]


def main() -> None:
    """The console script (``agentgauge``) and ``python -m agentgauge``."""
    command = cast(_Root, typer.main.get_command(app))
    command.plain_metavars = True  # and its commands', each as it is built
    _plain_options(command)
    command()
