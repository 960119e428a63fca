"""Named registries: the mechanics shared by every extension point.

Each extension point (metrics, importers, dataset formats, output parsers, tuners, executors)
keeps one :class:`Registry`. Its own module registers the built-in entries with a decorator;
other packages add theirs through an entry-point group, read lazily, once, on the first
lookup. A plugin that cannot be loaded is reported with a :class:`PluginWarning` and left
out; the other entries stay usable. A registry given an index of its built-in names imports
only the module that registers a name looked up; a listing, or a name the index does not
have, imports the others and reads the entry points.

An entry point names an object its module registers when it is imported (decorated), or an
undecorated one, which the extension point then registers under the entry point's name.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from agentgauge.errors import AgentgaugeError, did_you_mean

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "BUILTIN",
    "DeprecatedNameWarning",
    "Entry",
    "PluginWarning",
    "Registry",
    "UnknownNameError",
    "keyword_options",
]

T = TypeVar("T")
S = TypeVar("S")

BUILTIN = "built-in"
"""The origin of the entries agentgauge itself registers."""

# The distributions whose entry points are being loaded (innermost last): what a plugin's
# module registers while it is imported comes from that distribution, whichever registry
# it goes to.
_loading: list[str] = []


class UnknownNameError(AgentgaugeError, ValueError):
    """A name no entry of a registry has; the message names the known ones.

    Args:
        kind: what the registry holds, singular (``metric``, ``trace format``).
        name: the name looked up.
        known: the registered names.
    """

    def __init__(self, kind: str, name: str, known: Sequence[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = tuple(sorted(known))
        super().__init__(
            f"unknown {kind} {name!r}{did_you_mean(name, self.known)}; known {kind}s: "
            f"{', '.join(self.known)}"
        )

    def __str__(self) -> str:
        # a subclass that is also a KeyError would otherwise print the message quoted
        return str(self.args[0])


class DeprecatedNameWarning(FutureWarning):
    """A name that was renamed: it is still accepted, as its new name."""


class PluginWarning(UserWarning):
    """A third-party plugin that could not be loaded (the rest of agentgauge still works)."""


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered name.

    Args:
        name: the registry key.
        value: what the extension point keeps for it (a function, a class, an info record).
        origin: ``built-in``, the distribution whose entry point provided it, or the module
            that registered it at run time.
        description: one line for listings.
        module: the module that registered it.
    """

    name: str
    value: T
    origin: str
    description: str
    module: str


def keyword_options(target: Callable[..., Any], skip: int = 1) -> dict[str, Any]:
    """The options a registered callable takes: its keyword parameters and their defaults.

    Args:
        target: a function, or a class's ``__init__``.
        skip: leading parameters that are not options (the trace, the path, ``self``).
    """
    params = list(inspect.signature(target).parameters.values())[skip:]
    return {
        p.name: (None if p.default is inspect.Parameter.empty else p.default)
        for p in params
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def _is_builtin(module: str) -> bool:
    return module == "agentgauge" or module.startswith("agentgauge.")


def _origin(source: object) -> str:
    module = getattr(source, "__module__", None) or ""
    if _is_builtin(module):
        return BUILTIN
    if _loading:
        return _loading[-1]
    return module or "unknown"


def _distribution(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else ep.value.split(":", 1)[0]


@contextmanager
def _loading_from(distribution: str) -> Iterator[None]:
    _loading.append(distribution)
    try:
        yield
    finally:
        _loading.pop()


def _import_builtin(module_name: str) -> None:
    """Import a module of built-in entries; a package's public modules are imported too, so
    that adding an entry to a package is adding one module."""
    import pkgutil  # here: a lookup through the index lists no package

    module = importlib.import_module(module_name)
    for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
        if not info.name.startswith("_"):
            importlib.import_module(f"{module_name}.{info.name}")


class Registry(Generic[T]):
    """Names -> entries of one extension point.

    Args:
        kind: what it holds, singular, for messages (``metric``, ``trace format``).
        group: the entry-point group other packages register under.
        builtins: the modules (or packages) whose import registers the built-in entries.
        adopt: registers an undecorated object an entry point names, under that name
            (usually the extension point's decorator).
        error: the exception raised for an unknown name.
        index: ``name -> module`` of built-in names (former names included): looking one up
            imports that module alone. An entry point cannot take a name it holds.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        *,
        builtins: Sequence[str],
        adopt: Callable[[str, Any], object],
        error: Callable[[str, str, Sequence[str]], UnknownNameError] = UnknownNameError,
        index: Mapping[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._builtins = tuple(builtins)
        self._adopt = adopt
        self._error = error
        self._index = dict(index or {})
        self._entries: dict[str, Entry[T]] = {}
        self._aliases: dict[str, str] = {}
        self._loaded = False
        self._imported: set[str] = set()  # the index's modules imported (looked up per line)
        self.version = 0
        """Bumped by every registration, so that what was built from entries can be rebuilt."""

    def add(self, name: str, value: T, *, source: object, description: str = "") -> None:
        """Register ``value`` under ``name`` (a later registration replaces an earlier one).

        Args:
            name: the key users give.
            value: what the extension point keeps.
            source: the decorated object; its module tells where the entry comes from.
            description: one line for listings; by default the first line of the source's
                docstring.
        """
        doc = description or (inspect.getdoc(source) or "").split("\n", 1)[0]
        module = getattr(source, "__module__", None) or "unknown"
        self._entries[name] = Entry(name, value, _origin(source), doc, module)
        self.version += 1

    def alias(self, old: str, new: str) -> None:
        """Accept ``old``, a former name, as ``new``: lookups find ``new``'s entry, listings
        show ``new`` only, and :meth:`current_name` warns.

        Args:
            old: the former name.
            new: the registered name it became.
        """
        self._aliases[old] = new
        self.version += 1

    def current_name(self, name: str) -> str:
        """``name``, or the name it became when it is a former name (with a one-line
        :class:`DeprecatedNameWarning`): for what users write, such as suite files.

        Args:
            name: any name.
        """
        self._load_for(name)
        new = self._aliases.get(name)
        if new is None:
            return name
        warnings.warn(
            f"the {self.kind} {name!r} is now called {new!r}; the old name is deprecated",
            DeprecatedNameWarning,
            stacklevel=2,
        )
        return new

    def decorator(
        self, name: str, entry: Callable[[S], T] | None = None, *, description: str = ""
    ) -> Callable[[S], S]:
        """A decorator that registers what it decorates under ``name`` and returns it as it is:
        what each extension point's own decorator (``@importer``, ``@tuner``, ...) hands out.

        Args:
            name: the key users give.
            entry: makes what the extension point keeps from the decorated object (a record;
                it raises TypeError for an object of the wrong kind); None keeps the object.
            description: one line for listings; by default the first line of the decorated
                object's docstring.
        """

        def register(obj: S) -> S:
            value = cast(T, obj) if entry is None else entry(obj)
            self.add(name, value, source=obj, description=description)
            return obj

        return register

    def load(self) -> None:
        """Import the built-in modules, then the entry points of :attr:`group` (once)."""
        if self._loaded:
            return
        self._loaded = True
        # importlib.metadata is imported here: a lookup through the index never needs it
        from importlib.metadata import entry_points

        for module_name in self._builtins:
            _import_builtin(module_name)
        for ep in entry_points(group=self.group):
            self._load_entry_point(ep)

    def _load_for(self, name: str) -> None:
        """Import what registers ``name``: its module alone when the index names one,
        everything (:meth:`load`) otherwise."""
        if self._loaded:
            return
        module = self._index.get(name)
        if module is None:
            self.load()
        elif module not in self._imported:
            importlib.import_module(module)
            self._imported.add(module)

    def _load_entry_point(self, ep: EntryPoint) -> None:
        distribution = _distribution(ep)
        if ep.name in self._index:
            # a lookup of a built-in name never reads the entry points: it stays built-in
            warnings.warn(
                f"the {self.kind} plugin {ep.name!r} ({ep.value}) of {distribution} is left "
                f"out: {ep.name!r} is a built-in {self.kind}",
                PluginWarning,
                stacklevel=2,
            )
            return
        try:
            with _loading_from(distribution):
                obj = ep.load()
                if ep.name not in self._entries:
                    self._adopt(ep.name, obj)
        except Exception as exc:  # a broken plugin must not take the others down
            warnings.warn(
                f"the {self.kind} plugin {ep.name!r} ({ep.value}) of {distribution} could not "
                f"be loaded and is left out: {type(exc).__name__}: {exc}",
                PluginWarning,
                stacklevel=2,
            )
            return
        entry = self._entries.get(ep.name)
        if entry is not None and entry.origin not in (BUILTIN, distribution):
            # its module was imported before the entry point was read: the entry point names
            # the distribution that provides it
            self._entries[ep.name] = replace(entry, origin=distribution)

    def get(self, name: str) -> T:
        """The entry registered as ``name``.

        Args:
            name: a registered name, or a former name (:meth:`alias`).

        Raises:
            UnknownNameError: naming ``name`` and the known names.
        """
        self._load_for(name)
        entry = self._entries.get(self._aliases.get(name, name))
        if entry is None:
            self.load()
            raise self._error(self.kind, name, list(self._entries))
        return entry.value

    def find(self, name: str) -> T | None:
        """The entry registered as ``name``, None when there is none.

        Args:
            name: any name.
        """
        self._load_for(name)
        entry = self._entries.get(self._aliases.get(name, name))
        return None if entry is None else entry.value

    def entries(self) -> list[Entry[T]]:
        """Every entry: the built-in ones in the order of their modules, then the others, each
        in the order they were registered."""
        self.load()
        return sorted(self._entries.values(), key=self._rank)

    def _rank(self, entry: Entry[T]) -> int:
        for i, module in enumerate(self._builtins):
            if entry.module == module or entry.module.startswith(module + "."):
                return i
        return len(self._builtins)

    def names(self) -> list[str]:
        """Every registered name, in the order of :meth:`entries`."""
        return [entry.name for entry in self.entries()]

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self._load_for(name)
        else:
            self.load()
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load()
        return len(self._entries)
