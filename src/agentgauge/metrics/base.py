"""The metric protocol, the result type and the registry.

A metric reads one :class:`~agentgauge.model.Trace` and returns a :class:`MetricResult`:
a value in [0, 1], or ``None`` with a reason when it does not apply or cannot be measured.
Metrics are registered by name with :func:`metric`; third-party packages add theirs through
the entry-point group ``agentgauge.metrics``.

Example::

    @metric("answer_length", description="1.0 when the answer is at most 200 characters")
    def answer_length(trace: Trace, *, limit: int = 200) -> MetricResult:
        text = str(trace.output or "")
        return MetricResult(value=1.0 if len(text) <= limit else 0.0, details={"chars": len(text)})
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from agentgauge.errors import AgentgaugeError
from agentgauge.metrics._catalog import BUILTIN_METRICS
from agentgauge.model import Trace
from agentgauge.registry import Registry, UnknownNameError, keyword_options

__all__ = [
    "ENTRY_POINT_GROUP",
    "METRICS",
    "BatchMetric",
    "Metric",
    "MetricInfo",
    "MetricOptionError",
    "MetricResult",
    "MetricSetupError",
    "UnknownMetricError",
    "create_metric",
    "get_metric_info",
    "list_metrics",
    "load_plugins",
    "lower_is_better",
    "metric",
    "score_many",
    "shared_per_trace",
    "sharing_per_trace",
]

ENTRY_POINT_GROUP = "agentgauge.metrics"

_T = TypeVar("_T")
_SHARED: ContextVar[dict[tuple[Any, tuple[Hashable, ...], int], tuple[Trace, Any]] | None] = (
    ContextVar("agentgauge_shared_per_trace", default=None)
)


@contextmanager
def sharing_per_trace() -> Iterator[None]:
    """Lets the metrics scored inside share what they work out about each trace
    (:func:`shared_per_trace`). The engine scores each batch inside, where the traces are
    neither changed nor freed; outside, every metric reads the trace as it is at that moment,
    so that a trace changed between two calls is scored anew."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared_per_trace(trace: Trace, make: Callable[..., _T], *options: Hashable) -> _T:
    """``make(trace, *options)``, made once per trace for all the metrics that ask with the
    same ``make`` and options inside :func:`sharing_per_trace`, and made afresh each time
    outside it.

    Args:
        trace: the trace.
        make: what to work out about it (the same function for everything that shares it).
        options: the rest of ``make``'s arguments, hashable (metrics with other options share
            nothing).
    """
    memo = _SHARED.get()
    if memo is None:
        return make(trace, *options)
    key = (make, options, id(trace))  # the entry holds the trace: its id is no other's meanwhile
    entry = memo.get(key)
    if entry is not None and entry[0] is trace:
        made: _T = entry[1]
        return made
    made = make(trace, *options)
    memo[key] = (trace, made)
    return made


class MetricResult:
    """The outcome of one metric on one trace.

    A plain class with slots rather than a pydantic model: metrics create one per trace and
    per metric, on the hot path. Its details may be worked out only when first read
    (:meth:`explained`), so that a caller that reads the values alone does not pay for them.

    Args:
        value: the score in [0, 1]; ``None`` when the metric does not apply or could not be
            measured, in which case ``reason`` must say why.
        details: sub-scores and evidence, JSON-serialisable.
        reason: a short human-readable explanation.
    """

    __slots__ = ("_details", "_explain", "reason", "value")
    __match_args__ = ("value", "details", "reason")

    value: float | None
    reason: str | None

    def __init__(
        self,
        value: float | None,
        details: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> None:
        self.value = value
        self._details: dict[str, Any] = {} if details is None else details
        self._explain: Callable[[], dict[str, Any]] | None = None
        self.reason = reason
        if type(value) is float and 0.0 <= value <= 1.0:  # most results: kept as they are
            return
        if value is None:
            if not reason:
                raise ValueError("a metric result without a value needs a reason")
            return
        value = float(value)
        if not 0.0 <= value <= 1.0:  # also rejects NaN
            raise ValueError(f"metric value {self.value!r} is outside [0, 1]")
        self.value = value

    @classmethod
    def missing(cls, reason: str, **details: Any) -> MetricResult:
        """A result for a metric that does not apply or could not be measured."""
        return cls(None, details, reason)

    @classmethod
    def explained(
        cls, value: float | None, explain: Callable[[], dict[str, Any]], reason: str | None = None
    ) -> MetricResult:
        """A result whose details ``explain()`` makes when they are first read (once): what it
        reads must stay as it is until then.

        Args:
            value: the score in [0, 1], or ``None`` with a reason.
            explain: makes the details, JSON-serialisable.
            reason: a short human-readable explanation.
        """
        result = cls(value, None, reason)
        result._explain = explain
        return result

    @property
    def details(self) -> dict[str, Any]:
        """Sub-scores and evidence, JSON-serialisable."""
        explain = self._explain
        if explain is not None:
            self._details = explain()
            self._explain = None
        return self._details

    @details.setter
    def details(self, details: dict[str, Any]) -> None:
        self._details = details
        self._explain = None

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, MetricResult)
        return (self.value, self.details, self.reason) == (other.value, other.details, other.reason)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"MetricResult(value={self.value!r}, details={self.details!r}, reason={self.reason!r})"
        )

    def __reduce__(self) -> tuple[type[MetricResult], tuple[Any, ...]]:
        return (MetricResult, (self.value, self.details, self.reason))


@runtime_checkable
class Metric(Protocol):
    """Scores one trace. ``name`` is the registry key and the weight key."""

    name: str

    def score(self, trace: Trace) -> MetricResult: ...


@runtime_checkable
class BatchMetric(Metric, Protocol):
    """A metric that is cheaper over many traces at once (models, judges)."""

    def score_batch(self, traces: Sequence[Trace]) -> list[MetricResult]: ...


class UnknownMetricError(UnknownNameError, KeyError):
    """Raised for a metric name that is not registered."""


class MetricOptionError(AgentgaugeError, ValueError):
    """Raised for an option a metric does not take, or a value it refuses."""


class MetricSetupError(AgentgaugeError, RuntimeError):
    """A metric that cannot work where it runs (a missing extra), found before a run; the
    message is one line naming what to install or change."""


@dataclass(frozen=True)
class MetricInfo:
    """What the registry knows about a metric."""

    name: str
    factory: Callable[..., Metric]
    description: str
    higher_is_better: bool
    options: dict[str, Any]


class _FunctionMetric:
    """Adapts ``fn(trace, **options) -> MetricResult`` to the Metric protocol."""

    def __init__(self, name: str, fn: Callable[..., MetricResult], options: dict[str, Any]):
        self.name = name
        # called for every trace: the function itself, its options bound once
        self.score: Callable[[Trace], MetricResult] = (
            functools.partial(fn, **options) if options else fn
        )


def metric(
    name: str, *, description: str = "", higher_is_better: bool = True
) -> Callable[[Any], Any]:
    """Register a metric under ``name``.

    Decorates either a class whose constructor takes the metric's options as keyword
    arguments and whose instances follow :class:`Metric`, or a function
    ``fn(trace, **options) -> MetricResult``.

    Args:
        name: registry key, also the key of the metric's weight in a suite.
        description: one line shown by ``agentgauge metrics``.
        higher_is_better: False for metrics where lower is better. The value is reported as
            it is; a composite, a tuning objective and a comparison verdict read it as
            ``1 − value`` (see :func:`lower_is_better`).
    """

    def info(obj: Any) -> MetricInfo:
        if inspect.isclass(obj):
            options = keyword_options(obj.__init__)

            def class_factory(**opts: Any) -> Metric:
                instance = cast(Metric, obj(**opts))
                instance.name = name
                return instance

            factory: Callable[..., Metric] = class_factory
        elif callable(obj):
            options = keyword_options(obj)

            def function_factory(**opts: Any) -> Metric:
                return _FunctionMetric(name, obj, opts)

            factory = function_factory
        else:
            raise TypeError(f"@metric({name!r}) decorates a class or a function, not {obj!r}")
        doc = description or (inspect.getdoc(obj) or "").split("\n", 1)[0]
        return MetricInfo(name, factory, doc, higher_is_better, options)

    return METRICS.decorator(name, info, description=description)


METRICS: Registry[MetricInfo] = Registry(
    "metric",
    ENTRY_POINT_GROUP,
    builtins=("agentgauge.metrics",),
    adopt=lambda name, obj: metric(name)(obj),
    error=UnknownMetricError,
    index=BUILTIN_METRICS,
)
"""Every metric by name: the built-in ones and those of the ``agentgauge.metrics`` entry
points (a class or function decorated with :func:`metric`, or an undecorated one, then
registered under the entry point's name)."""


def load_plugins() -> None:
    """Import the built-in metric modules and the ``agentgauge.metrics`` entry points once."""
    METRICS.load()


def list_metrics() -> list[MetricInfo]:
    """Every registered metric, sorted by name."""
    return sorted((e.value for e in METRICS.entries()), key=lambda info: info.name)


def get_metric_info(name: str) -> MetricInfo:
    """The registry entry for ``name``.

    Args:
        name: a registered metric name.

    Raises:
        UnknownMetricError: naming the metric and the known ones.
    """
    return METRICS.get(name)


def lower_is_better(names: Iterable[str]) -> frozenset[str]:
    """The metrics among ``names`` registered with ``higher_is_better=False``.

    Args:
        names: metric names; names the registry does not know count as higher-is-better.
    """
    infos = {n: METRICS.find(n) for n in names}
    return frozenset(
        n for n, info in infos.items() if info is not None and not info.higher_is_better
    )


def create_metric(name: str, options: dict[str, Any] | None = None) -> Metric:
    """Build the metric ``name`` with ``options``.

    Args:
        name: a registered metric name.
        options: keyword options of the metric; unknown keys are an error.

    Raises:
        UnknownMetricError: for an unregistered name.
        MetricOptionError: for an option the metric does not take, or a value it refuses.
    """
    info = get_metric_info(name)
    options = dict(options or {})
    unknown = sorted(set(options) - set(info.options))
    if unknown:
        raise MetricOptionError(
            f"metric {name!r} has no option {unknown[0]!r}; its options: "
            + (", ".join(sorted(info.options)) or "none")
        )
    for key, value in options.items():
        if (problem := _type_mismatch(info.options[key], value)) is not None:
            raise MetricOptionError(f"metric {name!r}: option {key!r}: {problem}")
    try:
        return info.factory(**options)
    except (TypeError, ValueError) as exc:
        raise MetricOptionError(f"metric {name!r}: {exc}") from exc


def _type_mismatch(default: Any, value: Any) -> str | None:
    """Why ``value`` cannot stand where the option's ``default`` does (None when it can).

    Options are checked against their default's type, so that a suite file's ``"abc"`` for a
    number is named as such instead of failing later inside the metric.
    """
    if default is None or value is None:
        return None
    if isinstance(default, bool):
        expected, ok = "true or false", isinstance(value, bool)
    elif isinstance(default, int | float):
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and (isinstance(value, int) or math.isfinite(value))
        )
        expected = "a finite number"
    elif isinstance(default, str):
        expected, ok = "a string", isinstance(value, str)
    elif isinstance(default, list | tuple):
        expected, ok = "a list", isinstance(value, list | tuple)
    elif isinstance(default, dict):
        expected, ok = "a table", isinstance(value, dict)
    else:
        return None
    return None if ok else f"expected {expected}, got {value!r}"


def score_many(metric_obj: Metric, traces: Sequence[Trace]) -> list[MetricResult]:
    """Score ``traces`` with ``metric_obj``, in one batch when the metric supports it."""
    if isinstance(metric_obj, BatchMetric):
        results = metric_obj.score_batch(traces)
        if len(results) != len(traces):
            raise RuntimeError(
                f"metric {metric_obj.name!r} returned {len(results)} results for "
                f"{len(traces)} traces"
            )
        return results
    return [metric_obj.score(t) for t in traces]
