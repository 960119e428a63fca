"""Tool-calling dataset formats: a format's name -> the reader that streams a file's Tasks.

One module of this package per format; a module registers its reader with
:func:`dataset_format`, so adding a format is adding one module. Other packages add theirs
through the ``agentgauge.formats`` entry-point group. A reader streams its file and turns a
bad line into a :class:`~agentgauge.io.jsonl.ReadError` naming the file, the line and the
field; reading goes on. Two keyword options reach the readers that take them: ``answers``,
the second file a format keeps its expected calls in (BFCL's possible answers), and ``turns``,
which assistant turns of a conversation become tasks (:data:`Turns`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from agentgauge.registry import Registry, keyword_options
from agentgauge.toolcall.matching import ValueAccuracyMode

if TYPE_CHECKING:
    from agentgauge.io.jsonl import ReadError
    from agentgauge.model import Task

__all__ = [
    "FORMATS",
    "TURNS",
    "DatasetFormatInfo",
    "DatasetReader",
    "Turns",
    "dataset_format",
]

DatasetReader: TypeAlias = "Callable[..., Iterator[Task | ReadError]]"
"""``read(path, **options)``: ``answers=`` for a format with an answers file, ``turns=`` for
one of conversations."""

Turns = Literal["all", "last"]
"""Which assistant turns of a conversation become tasks: ``all`` (one task ``<id>#<n>`` a turn)
or ``last`` (one task ``<id>``)."""

TURNS: tuple[Turns, ...] = get_args(Turns)


@dataclass(frozen=True)
class DatasetFormatInfo:
    """What the registry knows about a dataset format.

    Args:
        name: the format's name (``--format``).
        read: the reader.
        value_mode: the ``value_accuracy`` mode its samples are scored in unless one is asked.
        options: the reader's keyword options (``answers``, ``turns``) and their defaults.
    """

    name: str
    read: DatasetReader
    value_mode: ValueAccuracyMode
    options: dict[str, Any]


def dataset_format(
    name: str, *, value_mode: ValueAccuracyMode = "strict", description: str = ""
) -> Callable[[DatasetReader], DatasetReader]:
    """Register a dataset reader under ``name``.

    Args:
        name: the format's name.
        value_mode: see :class:`DatasetFormatInfo`.
        description: one line for ``agentgauge plugins`` (default: the reader's docstring's
            first line).
    """

    def info(read: DatasetReader) -> DatasetFormatInfo:
        return DatasetFormatInfo(name, read, value_mode, keyword_options(read))

    return FORMATS.decorator(name, info, description=description)


FORMATS: Registry[DatasetFormatInfo] = Registry(
    "dataset format",
    "agentgauge.formats",
    builtins=("agentgauge.toolcall.formats",),
    adopt=lambda name, obj: dataset_format(name)(obj),
)
"""Every dataset format by name: this package's modules and the ``agentgauge.formats``
entry points."""
