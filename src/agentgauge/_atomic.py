"""Writing output files so that a failure never destroys one.

Every file agentgauge writes (results JSON, CSV, HTML, traces, predictions) is written to a
temporary file in the same folder and renamed over the target once complete: a crash, a full
disk or Ctrl-C leaves the previous file as it was, never a truncated one. While a command runs
inside :func:`kept_until_success`, a file it replaces is kept aside and put back if the command
fails, so that a failed command leaves every existing output exactly as it was. Before a
command does any work, :func:`clashing_output` finds an output that would overwrite the store,
an input or another output, or a folder.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path

__all__ = ["Replaced", "atomic_path", "clashing_output", "kept_until_success"]


class Replaced:
    """The files a command replaced, each with the copy of what it held before."""

    def __init__(self) -> None:
        self._kept: dict[Path, Path] = {}

    def keep(self, target: Path) -> None:
        """Set aside what ``target`` holds before it is first replaced (a hard link: no copy
        where the file system has them)."""
        if target in self._kept or not target.is_file():
            return
        copy = target.with_name(f".{secrets.token_hex(4)}.{target.name}.kept")
        try:
            os.link(target, copy)
        except OSError:
            shutil.copy2(target, copy)
        self._kept[target] = copy

    def restore(self) -> None:
        """Put every replaced file back as it was."""
        for target, copy in self._kept.items():
            with suppress(OSError):
                os.replace(copy, target)
        self._kept.clear()

    def forget(self) -> None:
        """Drop the copies: the replacements stay."""
        for copy in self._kept.values():
            with suppress(OSError):
                copy.unlink()
        self._kept.clear()


_replaced: ContextVar[Replaced | None] = ContextVar("replaced", default=None)


@contextmanager
def kept_until_success() -> Iterator[Replaced]:
    """Keep aside every file that :func:`atomic_path` replaces in the block; the caller decides
    at the end: :meth:`Replaced.restore` when the command failed. Copies not restored are
    dropped when the block ends."""
    replaced = Replaced()
    token = _replaced.set(replaced)
    try:
        yield replaced
    finally:
        _replaced.reset(token)
        replaced.forget()


@contextmanager
def atomic_path(path: str | Path, *, keep_partial: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` to write instead; renamed over ``path`` when the block
    ends without an error, removed otherwise.

    The temporary name ends like ``path`` (``.jsonl.gz`` stays ``.gz``), so a writer that
    picks a compression from the name picks the same one.

    Args:
        path: the output file.
        keep_partial: on an error, put what was written in place when it is not empty (a
            predictions file that ``--resume`` continues), instead of keeping the old file.
    """
    target = Path(path)
    temporary = target.with_name(f".{secrets.token_hex(4)}.{target.name}")
    try:
        try:
            yield temporary
            _fsync(temporary)
            _copy_mode(target, temporary)
            replaced = _replaced.get()
            if replaced is not None:
                replaced.keep(target)
            os.replace(temporary, target)
        except OSError as exc:
            if exc.filename not in (None, str(temporary)):
                raise
            # the user knows the file they named, not the temporary one
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
    except BaseException:
        if keep_partial and temporary.is_file() and temporary.stat().st_size > 0:
            with suppress(OSError):
                _copy_mode(target, temporary)
                os.replace(temporary, target)
        with suppress(OSError):
            temporary.unlink()
        raise


def _fsync(path: Path) -> None:
    """Flush the file to the disk: a full disk fails here, before the rename, not after."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_mode(target: Path, temporary: Path) -> None:
    """The permissions the target had, or the usual ones for a new file."""
    if target.exists():
        os.chmod(temporary, target.stat().st_mode & 0o7777)
        return
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)


def clashing_output(
    outputs: Mapping[str, Path | None],
    inputs: Iterable[Path] = (),
    store: Path | None = None,
    *,
    overwrite: bool = True,
) -> str | None:
    """Why one of ``outputs`` cannot be written (it is a folder, the store, an input or another
    output, or a file that exists when ``overwrite`` is False), or None when none clashes.

    Args:
        outputs: each output option (e.g. ``--json``) and its path, None when not given.
        inputs: the files the command reads.
        store: the results store (its ``-wal`` and ``-shm`` files count as the store).
        overwrite: whether an existing file may be replaced.
    """
    for option, out in outputs.items():
        if out is not None and out.is_dir():
            return f"{option} {out} is a folder: name a file to write"
    taken: dict[tuple[int, int] | str, str] = {}
    if store is not None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            taken[_key(Path(f"{store}{suffix}"))] = f"the store {store}"
    for source in inputs:
        taken.setdefault(_key(source), f"the input {source}")
    for option, out in outputs.items():
        if out is None:
            continue
        key = _key(out)
        if key in taken:
            return f"{option} {out} is {taken[key]}: it would be overwritten; choose another file"
        taken[key] = f"the file of {option}"
    if not overwrite:
        for option, out in outputs.items():
            if out is not None and out.exists():
                return f"{option} {out} exists: --overwrite replaces it"
    return None


def _key(path: Path) -> tuple[int, int] | str:
    """A path as one file: an existing file by its device and inode (a hard or symbolic link
    is the file it names), another by its path with links and ``..`` resolved."""
    try:
        info = path.stat()
    except OSError:
        return os.path.realpath(path)
    return (info.st_dev, info.st_ino)
