"""Writing output files so that a failure never destroys one.

Every file agentgauge writes (results JSON, CSV, HTML, traces, predictions) is written to a
temporary file in the same folder and renamed over the target once complete: a crash, a full
disk or Ctrl-C leaves the previous file as it was, never a truncated one. Before a command does
any work, :func:`clashing_output` finds an output that would overwrite the store, an input or
another output.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

__all__ = ["atomic_path", "clashing_output"]


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
    outputs: Mapping[str, Path | None], inputs: Iterable[Path] = (), store: Path | None = None
) -> str | None:
    """Why one of ``outputs`` cannot be written (it is the store, an input or another output),
    or None when none clashes.

    Args:
        outputs: each output option (e.g. ``--json``) and its path, None when not given.
        inputs: the files the command reads.
        store: the results store (its ``-wal`` and ``-shm`` files count as the store).
    """
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
    return None


def _key(path: Path) -> tuple[int, int] | str:
    """A path as one file: an existing file by its device and inode (a hard or symbolic link
    is the file it names), another by its path with links and ``..`` resolved."""
    try:
        info = path.stat()
    except OSError:
        return os.path.realpath(path)
    return (info.st_dev, info.st_ino)
