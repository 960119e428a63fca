"""What every ``agentgauge`` command shares: the consoles, common options, usage errors and
the run outputs (summary, JSON, CSV, HTML, ``--fail-under``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_args, get_origin

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand

from agentgauge._atomic import clashing_output
from agentgauge.errors import did_you_mean

if TYPE_CHECKING:
    from agentgauge.store import Store

_N = TypeVar("_N", int, float)

console = Console()
err_console = Console(stderr=True)


class VerdictExit(typer.Exit):
    """A non-zero exit that is a verdict, not a failure (``--fail-under``, ``--fail-if-worse``):
    the command did its work, and the files it wrote stay."""


def _argument_usage(param: Any) -> str:
    name = param.metavar or (param.name or "").upper()
    if not param.required:
        name = f"[{name}]"
    return f"{name}..." if param.nargs != 1 else name


_NOT_PLAIN = object()
"""What :func:`_plain_value` returns for a value it leaves to typer's own coercion."""


_PARAMETER_INFO_READ = ("parser", "clamp", "min", "max", "path_type")
"""What :func:`_plain_leaf` reads of typer's description of a parameter."""


def _plain_leaf(annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """One value coerced as typer's pydantic adapter coerces it, for the plain cases (a
    ``str``, an in-range ``int``/``float``, a ``Path``): the same result without building the
    adapter; :data:`_NOT_PLAIN` for any other (typer then coerces it, with its messages)."""
    kind = type(value)
    if annotation is str:
        return value if kind is str else _NOT_PLAIN
    if annotation is int or annotation is float:
        # exact numbers only (never a bool, a string or a float for an int); the range is
        # typer's ge/le constraint, checked again by typer (with its message) when outside
        if info.clamp or not (kind is int or (annotation is float and kind is float)):
            return _NOT_PLAIN
        if annotation is float and not (math.isfinite(value) and abs(value) <= 2**53):
            return _NOT_PLAIN
        if (info.min is not None and not value >= info.min) or (
            info.max is not None and not value <= info.max
        ):
            return _NOT_PLAIN
        return annotation(value)
    if annotation is Path and kind is str and info.path_type in (None, Path):
        try:
            from typer._param_types import coerce_cli_path
        except ImportError:  # a typer that checks paths elsewhere: its own coercion
            return _NOT_PLAIN
        # typer's adapter makes the text a Path (Path(text)), then checks it here, naming
        # the text in its messages: the Path's own text must be the same
        path = Path(value)
        if str(path) == value:
            return coerce_cli_path(path, info, path_type=Path, param=param, ctx=ctx)
    return _NOT_PLAIN


def _plain_value(param: Any, value: Any, ctx: Any) -> Any:
    """A parameter's value coerced without typer's adapter (:func:`_plain_leaf`), a list of
    them for ``list[...]``; :data:`_NOT_PLAIN` when typer must coerce it."""
    descriptor: Any = getattr(param, "type_descriptor", None)
    info: Any = getattr(descriptor, "parameter_info", None)
    # the typer this was made against describes a parameter so; any other typer coerces alone
    if not all(hasattr(info, name) for name in _PARAMETER_INFO_READ) or not all(
        hasattr(descriptor, name) for name in ("annotation", "file_annotation")
    ):
        return _NOT_PLAIN
    if descriptor.file_annotation is not None or info.parser is not None:
        return _NOT_PLAIN
    annotation = descriptor.annotation
    if get_origin(annotation) is list:
        items = get_args(annotation)
        if len(items) != 1 or not isinstance(value, (list, tuple)):
            return _NOT_PLAIN
        coerced = [_plain_leaf(items[0], info, item, param, ctx) for item in value]
        return _NOT_PLAIN if any(item is _NOT_PLAIN for item in coerced) else coerced
    if get_origin(annotation) is not None:
        return _NOT_PLAIN
    return _plain_leaf(annotation, info, value, param, ctx)


class _CoercedWhenSet:
    """Typer's coercion of one parameter, built only when needed. Typer builds a pydantic
    TypeAdapter for each parameter of the command it runs (imported and built, a good part
    of a short command's start-up); a parameter left unset (None) is None, or an empty tuple
    when it takes several values, as typer makes it, and a plain value (text, a number in its
    range, a path) is coerced as typer's adapter would (:func:`_plain_value`), with no
    adapter."""

    def __init__(self, param: Any) -> None:
        self._param = param

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        plain = _plain_value(self._param, value, ctx)
        if plain is not _NOT_PLAIN:
            return plain
        self._param._runtime_param = None  # typer's own, built on this first value
        return self._param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def defer_coercion(command: Any, ctx: Any) -> None:
    """Give each parameter of a command (its help option included) whose typer coercion is
    not built yet a :class:`_CoercedWhenSet` (with the typer versions that build pydantic
    adapters, lazily, in a private slot; nothing is done with others).

    Args:
        command: the click command or group about to parse its arguments.
        ctx: its context.
    """
    for param in command.get_params(ctx):
        if getattr(param, "_runtime_param", False) is None and callable(
            getattr(param, "get_runtime_param", None)
        ):
            param._runtime_param = _CoercedWhenSet(param)


class Command(TyperCommand):
    """A command whose help writes its arguments as the documentation does
    (``compare [OPTIONS] RUN_A RUN_B``, ``evaluate [OPTIONS] [PATHS]...``): by name, in
    brackets when optional, without a type tag. (Typer's click is its own: parameters are
    told apart by their ``param_type_name``, as typer does.) Its unset and plain parameters
    cost no pydantic adapter (:func:`defer_coercion`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        defer_coercion(self, ctx)
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        arguments = [p for p in self.get_params(ctx) if p.param_type_name == "argument"]
        return pieces + [_argument_usage(p) for p in arguments]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                help_text = getattr(param, "help", None) or ""
                if param.required:
                    help_text = f"{help_text}  [required]".strip()
                arguments.append((_argument_usage(param), help_text))
            elif (record := param.get_help_record(ctx)) is not None:
                options.append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


def output_file(value: Path | None) -> Path | None:
    """An output option's check, run before the command does any work: the file's folder
    must exist (a typo there used to cost a finished run's report)."""
    if value is not None and not value.parent.is_dir():
        raise typer.BadParameter(f"the folder {str(value.parent)!r} does not exist")
    return value


def score_level(value: float | None) -> float | None:
    """A score threshold's check (``--fail-under``): a number within [0, 1], not NaN (against
    which every comparison is false, so a gate would always pass)."""
    if value is not None and not 0.0 <= value <= 1.0:
        raise typer.BadParameter(f"expected a score within [0, 1], got {value}")
    return value


def significance_level(value: float) -> float:
    """``--alpha``'s check: a probability strictly between 0 and 1."""
    if not 0.0 < value < 1.0:
        raise typer.BadParameter(f"expected a significance level in (0, 1), got {value}")
    return value


def optional_number(option: str, text: str, kind: Callable[[str], _N]) -> _N | None:
    """A number option that may be ``none`` (send no value): None for ``none``, else the
    finite non-negative number; a usage error naming the option otherwise.

    Args:
        option: the option's name, for the message.
        text: its value.
        kind: ``int`` or ``float``.
    """
    if text.strip().lower() == "none":
        return None
    try:
        value = kind(text)
    except ValueError:
        raise usage_error(f"{option}: {text!r} is neither a number nor 'none'") from None
    if not math.isfinite(value) or value < 0:
        raise usage_error(f"{option}: {text!r} is not a finite non-negative number")
    return value


DbOption = Annotated[Path, typer.Option("--db", help="SQLite results store.")]
SuiteOption = Annotated[str, typer.Option("--suite", help="Built-in suite name or suite TOML.")]
JsonOption = Annotated[
    Path | None, typer.Option("--json", callback=output_file, help="Write the results JSON here.")
]
CsvOption = Annotated[
    Path | None, typer.Option("--csv", callback=output_file, help="Write a per-sample CSV here.")
]
HtmlOption = Annotated[
    Path | None, typer.Option("--html", callback=output_file, help="Write an HTML report here.")
]

JudgeOption = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="Judge model: a pydantic-ai model string (openai:gpt-4o-mini), or the model name "
        "at --judge-url.",
    ),
]
JudgeUrlOption = Annotated[
    str | None,
    typer.Option("--judge-url", help="OpenAI-compatible base URL of the judge model."),
]
JudgeKeyEnvOption = Annotated[
    str | None,
    typer.Option(
        "--judge-api-key-env",
        help="Environment variable holding the judge's API key (default: the provider's own).",
    ),
]

JudgeSamplesOption = Annotated[
    int | None,
    typer.Option(
        "--judge-samples",
        min=1,
        max=100,
        help="Ask each judgment this many times: the value is their mean (majority for "
        "pass/fail), their spread the judge's measured noise ([judge] samples).",
    ),
]


OverwriteOption = Annotated[
    bool, typer.Option("--overwrite", help="Replace output files that exist.")
]
KeepSecretsOption = Annotated[
    bool,
    typer.Option(
        "--keep-secrets",
        help="Write the traces' credentials as they are (by default they are hidden, as in "
        "the store and the reports).",
    ),
]
NameOption = Annotated[
    str | None, typer.Option("--name", help="A name for the run (runs and view show it).")
]
TagOption = Annotated[
    list[str] | None, typer.Option("--tag", help="A tag for the run; repeat for more.")
]


def label_run(store: Store, run_id: str, name: str | None, tags: list[str] | None) -> None:
    """Give a recorded run the ``--name`` and ``--tag`` of its command.

    Args:
        store: the store holding the run.
        run_id: the run.
        name: ``--name``, if given.
        tags: ``--tag`` values, if any.
    """
    if name is not None or tags:
        store.label_run(run_id, name=name, tags=tags or [])


def usage_error(message: str) -> typer.Exit:
    """Print a usage error and return the exit (code 2) to raise.

    Args:
        message: what is wrong, naming the option, file or key.
    """
    # one line whatever the terminal's width: a log or a grep gets the whole message; its
    # brackets ("[judge] model", a file's "[x]") are text, not markup
    err_console.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def check_choice(option: str, value: str, choices: Iterable[str]) -> None:
    """A usage error unless an option's value is one of its choices (the names a registry
    knows, say).

    Args:
        option: the option's name, for the message.
        value: its value.
        choices: the values it takes, in the order to list them.
    """
    if isinstance(choices, Container) and value in choices:
        return  # a registry finds a known name without listing (importing) every entry
    names = list(choices)
    if value not in names:
        known = [repr(name) for name in names]
        listed = " or ".join([", ".join(known[:-1]), known[-1]] if len(known) > 1 else known)
        raise usage_error(f"{option} must be {listed}, not {value!r}{did_you_mean(value, names)}")


def refuse_clashes(
    outputs: Mapping[str, Path | None],
    *,
    inputs: Iterable[Path] = (),
    store: Path | None = None,
    overwrite: bool,
) -> None:
    """A usage error, before any work, when an output is a folder, would overwrite the store,
    an input or another output, or exists and ``--overwrite`` was not given.

    Args:
        outputs: each output option (``--json``...) and its path (None when not given).
        inputs: the files the command reads.
        store: the ``--db`` store, when the command opens one.
        overwrite: whether existing files may be replaced (``--overwrite``).
    """
    problem = clashing_output(outputs, inputs, store, overwrite=overwrite)
    if problem is not None:
        raise usage_error(problem)


def require_store(db: Path) -> None:
    """A usage error unless the store a reading command names exists (opening it would
    create an empty one).

    Args:
        db: the ``--db`` path.
    """
    if not db.exists():
        raise usage_error(f"no store at {db}")


def not_a_file(path: Path) -> str:
    """The message for an input path that is not a file.

    Args:
        path: the path given.
    """
    if path.is_dir():
        return f"{path} is a folder: give the trace files in it (e.g. {path}/*.jsonl)"
    return f"no such file: {path}"


EXIT_GATE_FAILED = 3
"""The exit status of a run that fails one of its suite's ``[gates]``."""


def write_outputs(
    store_path: Path,
    run_id: str,
    *,
    json_out: Path | None,
    csv_out: Path | None,
    html_out: Path | None,
    fail_under: float | None,
    extra: dict[str, object] | None = None,
    gates: bool = True,
    store: Store | None = None,
) -> None:
    """Print the summary, write the requested files, apply ``--fail-under`` and the suite's
    gates.

    Args:
        store_path: the store holding the run.
        run_id: the run.
        json_out: where to write the JSON document, if anywhere.
        csv_out: where to write the CSV table, if anywhere.
        html_out: where to write the HTML report, if anywhere.
        fail_under: exit 1 when the mean composite is below this.
        extra: top-level keys a domain adds to the JSON document.
        gates: exit :data:`EXIT_GATE_FAILED` when a gate of the suite fails (whatever
            ``fail_under`` says); False for a command that shows a run already made.
        store: the store at ``store_path`` when the command has it open (it stays open);
            by default it is opened here.
    """
    from agentgauge.documents.summary import fail_under_check, judge_noise, run_aggregate
    from agentgauge.report.terminal import print_summary

    with _opened(store_path, store) as store:
        # the files first: whatever happens on the terminal, the run's outputs are written
        written = []
        # each writer imported when its file is asked for (the HTML report's modules are many)
        if json_out:
            from agentgauge.report.export import write_result_json

            write_result_json(store, run_id, json_out, extra=extra)
            written.append(json_out)
        if csv_out:
            from agentgauge.report.export import write_csv

            write_csv(store, run_id, csv_out)
            written.append(csv_out)
        if html_out:
            from agentgauge.report.html import write_html

            write_html(store, run_id, html_out)
            written.append(html_out)
        print_summary(store, run_id, console)
        for path in written:
            console.print(f"wrote {path}", markup=False, highlight=False)
        below = False
        if fail_under is not None:
            mean = run_aggregate(store, run_id)["composite"].mean
            noise = judge_noise(store, run_id)
            failure = fail_under_check(mean, fail_under, noise.get("composite_se"))
            if failure is not None:
                err_console.print(f"[red]{escape(failure)}[/]", highlight=False)
                below = True
        if gates:
            exit_if_gates_failed(store_path, run_id, store=store)
    if below:
        raise VerdictExit(1)


def exit_if_gates_failed(store_path: Path, run_id: str, *, store: Store | None = None) -> None:
    """Exit :data:`EXIT_GATE_FAILED` when the run fails a gate of its suite (the summary has
    said which).

    Args:
        store_path: the store holding the run.
        run_id: the run.
        store: the store at ``store_path`` when the command has it open (it stays open).
    """
    from agentgauge.documents.summary import gates_failed

    with _opened(store_path, store) as store:
        failed = gates_failed(store, store.get_run(run_id))
    if failed:
        raise VerdictExit(EXIT_GATE_FAILED)


def _opened(path: Path, store: Store | None) -> AbstractContextManager[Store]:
    """The store given, left open; else the store at ``path``, closed on leaving."""
    if store is not None:
        return nullcontext(store)
    from agentgauge.store import Store

    return Store(path)
