"""Models' flat token prices kept between processes, so that a short command pricing the
models it has met before does not import genai-prices (its price tables and HTTP client are a
large part of such a command's start).

What is kept is what :mod:`agentgauge.usage` read from genai-prices' bundled data for a model
name: its flat rates per million tokens (input, output, cache read) as exact decimals, or that
it has none. The file is named after the installed genai-prices data, so that another version
starts a file of its own; a price that genai-prices gives for a period of time only (a
conditional price) is not kept; and while a program has installed its own genai-prices data
(``UpdatePrices``, ``set_custom_snapshot``) nothing is read or written. A file that cannot be
read or written is passed over: the prices are then read from genai-prices, as without it.

The folder is ``AGENTGAUGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentgauge``, else
``~/.cache/agentgauge``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import secrets
import sys
from contextlib import suppress
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeAlias

__all__ = ["MISSING", "Rates", "cache_folder", "keep_rates", "kept_rates"]

Rates: TypeAlias = "tuple[Decimal, Decimal, Decimal] | tuple[()] | None"
"""A model's flat rates (input, output, cache read per million tokens); ``()`` when its price
is not flat; None when genai-prices has no price for it."""

MISSING = object()
"""What :func:`kept_rates` returns for a model whose rates are not kept."""


def cache_folder() -> Path:
    """The folder of agentgauge's caches (see the module's description)."""
    chosen = os.environ.get("AGENTGAUGE_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "agentgauge"


@functools.cache
def _file() -> Path | None:
    """The file of the installed genai-prices data's rates; None without genai-prices."""
    spec = importlib.util.find_spec("genai_prices")  # a top-level package: found, not run
    if spec is None or spec.origin is None:
        return None
    package = Path(spec.origin).parent
    try:
        stamp = "-".join(
            f"{s.st_size:x}{s.st_mtime_ns:x}"
            for s in (package.joinpath(name).stat() for name in ("data.py", "types.py"))
        )
        folder = cache_folder()
    except (OSError, RuntimeError):  # RuntimeError: no home folder to put it in
        return None
    return folder / f"genai-prices-rates-{stamp}.json"


def _bundled_data_in_use() -> bool:
    """Whether genai-prices prices with its bundled data (no program has installed other)."""
    snapshot = sys.modules.get("genai_prices.data_snapshot")
    return snapshot is None or getattr(snapshot, "_custom_snapshot", MISSING) is None


def _read(path: Path) -> dict[str, Any]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


@functools.cache
def _kept() -> dict[str, Any]:
    """The file's entries, read once per process (empty when there is no readable file)."""
    path = _file()
    return {} if path is None else _read(path)


def _decode(entry: Any) -> Any:
    if entry is None:
        return None
    if isinstance(entry, list) and not entry:
        return ()
    if isinstance(entry, list) and len(entry) == 3 and all(isinstance(v, str) for v in entry):
        try:
            return tuple(Decimal(v) for v in entry)
        except ArithmeticError:
            return MISSING
    return MISSING


def kept_rates(model: str) -> Rates | object:
    """The rates kept for ``model``, or :data:`MISSING`.

    Args:
        model: the model's name as the trace gives it.
    """
    if not _bundled_data_in_use():
        return MISSING
    entries = _kept()
    return _decode(entries[model]) if model in entries else MISSING


def keep_rates(model: str, rates: Rates) -> None:
    """Keep ``model``'s rates for later processes (in this process, they are known from now).

    Args:
        model: the model's name as the trace gives it.
        rates: what genai-prices' bundled data gives for it, valid whatever the date.
    """
    path = _file()
    if path is None or not _bundled_data_in_use():
        return
    entry = None if rates is None else [str(v) for v in rates]
    _kept()[model] = entry
    # what other processes kept meanwhile stays; the whole file is renamed into place, so that
    # a reader never sees half of it
    entries = {**_read(path), model: entry}
    temporary = path.with_name(f".{secrets.token_hex(4)}.{path.name}")
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(entries, sort_keys=True), encoding="utf-8")
        os.replace(temporary, path)
    with suppress(OSError):
        temporary.unlink(missing_ok=True)
