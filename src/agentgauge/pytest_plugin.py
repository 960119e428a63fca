"""The pytest plugin: gate a test on the scores of an agent's traces.

Installing agentgauge registers it (entry point ``pytest11``). It gives

- :func:`assert_passes`, which scores traces with a suite and fails the test with a table of
  the failing samples and their reasons;
- the fixture ``agentgauge_eval``, which scores traces and returns the
  :class:`~agentgauge.api.RunResult`;
- the option ``--agentgauge-db PATH``, which records every run of both in that SQLite store
  (with the test's id in the run's metadata) instead of keeping it in memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from agentgauge.api import RunResult
    from agentgauge.config import Suite
    from agentgauge.io.jsonl import ReadError
    from agentgauge.model import Trace
    from agentgauge.store import SampleRow

__all__ = ["assert_passes"]

_MAX_ROWS = 20
_MAX_REASON = 120


@dataclass
class _Session:
    """A configured pytest session: its store option and the test running now."""

    config: pytest.Config
    db: str | None
    test: str | None = None


# one entry per configured session, innermost last (pytester runs sessions inside a session)
_sessions: list[_Session] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentgauge")
    group.addoption(
        "--agentgauge-db",
        metavar="PATH",
        default=None,
        help="Record the runs of assert_passes and agentgauge_eval in this SQLite store "
        "(default: kept in memory).",
    )


def pytest_configure(config: pytest.Config) -> None:
    _sessions.append(_Session(config, config.getoption("agentgauge_db")))


def pytest_unconfigure(config: pytest.Config) -> None:
    _sessions[:] = [s for s in _sessions if s.config is not config]


def pytest_runtest_setup(item: pytest.Item) -> None:
    for session in _sessions:
        if session.config is item.config:
            session.test = item.nodeid


def _evaluate(
    traces: Iterable[Trace | ReadError], suite: str | Suite = "behavior", *, jobs: int = 1
) -> RunResult:
    from agentgauge.api import evaluate

    session = _sessions[-1] if _sessions else None
    store = session.db if session else None
    test = session.test if session else None
    return evaluate(
        traces, suite, store=store, jobs=jobs, metadata={"test": test} if test else None
    )


@pytest.fixture
def agentgauge_eval() -> Callable[..., RunResult]:
    """Score traces with a suite: ``agentgauge_eval(traces, suite="behavior", jobs=1)``
    returns the run's :class:`~agentgauge.api.RunResult` (recorded in ``--agentgauge-db``
    when given)."""
    return _evaluate


@dataclass
class _Failure:
    """Why one sample fails: the checks it fails and what its metrics say."""

    failing: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def _short(text: str) -> str:
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"


def _check_sample(
    sample: SampleRow,
    min_composite: float | None,
    per_metric: Mapping[str, float],
    weights: Mapping[str, float],
    flipped: frozenset[str],
) -> _Failure:
    out = _Failure()
    values, errors, reasons = sample.values, sample.metric_errors, sample.reasons
    for name, error in errors.items():
        out.failing.append(f"{name} raised")
        out.reasons.append(f"{name}: {_short(error)}")
    comp = sample.composite
    if min_composite is not None and (comp is None or comp < min_composite):
        out.failing.append(
            "no composite" if comp is None else f"composite {comp:.3f} < {min_composite:g}"
        )
        weighted = [n for n in values if weights.get(n) and n not in errors]
        if comp is None:
            # why none of its weighted metrics has a value
            out.reasons += [f"{n}: {_short(reasons.get(n) or 'no value')}" for n in weighted]
        else:
            # what cost the composite: its weighted metrics below full marks, lowest first
            scored = {
                n: 1.0 - v if n in flipped else v for n in weighted if (v := values[n]) is not None
            }
            lowest = sorted((v, n) for n, v in scored.items() if v < 1.0)[:3]
            if lowest:
                out.reasons.append("lowest: " + ", ".join(f"{n} {v:.2f}" for v, n in lowest))
    for name, threshold in per_metric.items():
        value = values.get(name)
        if name in errors:
            continue
        if value is None:
            out.failing.append(f"{name} not measured")
            out.reasons.append(f"{name}: {_short(reasons.get(name) or 'no value')}")
        elif value > threshold if name in flipped else value < threshold:
            sign = ">" if name in flipped else "<"
            out.failing.append(f"{name} {value:.3f} {sign} {threshold:g}")
            # the metric's reason, else its evidence
            details = sample.details.get(name)
            evidence = reasons.get(name) or (json.dumps(details, default=str) if details else "")
            if evidence:
                out.reasons.append(f"{name}: {_short(evidence)}")
    return out


def _table(rows: list[list[str]]) -> str:
    from agentgauge.io.jsonl import printable

    cells = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]) - 1)]
    return "\n".join(
        "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in cells
    )


def assert_passes(
    traces: Iterable[Trace | ReadError] | RunResult,
    suite: str | Suite = "behavior",
    *,
    min_composite: float | None = None,
    per_metric: Mapping[str, float] | None = None,
) -> RunResult:
    """Score traces with a suite and fail unless every sample passes.

    A sample fails when a metric raised on it, when its composite is below ``min_composite``
    (or it has none), or when a metric of ``per_metric`` is below its threshold (above it,
    for a lower-is-better metric) or was not measured. The failure lists the failing samples,
    worst first: id, task, composite, the checks they fail and their metrics' reasons.

    Args:
        traces: the traces, or a run already scored (then ``suite`` is not used).
        suite: a built-in suite's name, a suite TOML file or a :class:`~agentgauge.Suite`.
        min_composite: the lowest composite a sample may have.
        per_metric: metric -> the lowest value a sample may have (the highest, for a
            lower-is-better metric).

    Returns:
        The run, for more checks.

    Raises:
        AssertionError: a failing sample, a record that is not a trace, or no sample at all.
        ValueError: a metric of ``per_metric`` that the suite does not compute.
    """
    __tracebackhide__ = True
    from agentgauge.api import RunResult
    from agentgauge.metrics.base import lower_is_better

    result = traces if isinstance(traces, RunResult) else _evaluate(traces, suite)
    thresholds = dict(per_metric or {})
    run = result.run
    unknown = sorted(set(thresholds) - set(run.metric_order))
    if unknown:
        raise ValueError(
            f"per_metric: {unknown[0]!r} is not a metric of the suite {run.suite!r} "
            f"(its metrics: {', '.join(run.metric_order)})"
        )
    flipped = lower_is_better(result.metric_names)
    failures = [
        (sample, _check_sample(sample, min_composite, thresholds, run.weights, flipped))
        for sample in result.samples
    ]
    failed = [(s, f) for s, f in failures if f.failing]
    if not failed and not result.read_errors and result.samples:
        return result
    raise AssertionError(_report(result, failed, min_composite, thresholds, flipped))


def _report(
    result: RunResult,
    failed: list[tuple[SampleRow, _Failure]],
    min_composite: float | None,
    per_metric: Mapping[str, float],
    flipped: frozenset[str],
) -> str:
    """The failure's message: the checks, then the failing samples worst first."""
    checks = [] if min_composite is None else [f"composite >= {min_composite:g}"]
    checks += [f"{n} {'<=' if n in flipped else '>='} {t:g}" for n, t in per_metric.items()]
    checks.append("no metric error")
    lines = [
        f"{len(failed)} of {len(result.samples)} samples fail (suite {result.run.suite}: "
        f"{', '.join(checks)}; run {result.run_id})"
    ]
    if not result.samples:
        lines[0] = f"no sample was scored (suite {result.run.suite}; run {result.run_id})"
    failed = sorted(failed, key=lambda sf: (sf[0].composite is not None, sf[0].composite or 0.0))
    if failed:
        rows = [["sample", "task", "composite", "fails", "reasons"]]
        for sample, failure in failed[:_MAX_ROWS]:
            comp = sample.composite
            rows.append(
                [
                    sample.trace_id,
                    sample.task_id,
                    "—" if comp is None else f"{comp:.3f}",
                    ", ".join(failure.failing),
                    "; ".join(dict.fromkeys(failure.reasons)),  # each reason once
                ]
            )
        lines.append(_table(rows))
        if len(failed) > _MAX_ROWS:
            lines.append(f"... and {len(failed) - _MAX_ROWS} more failing samples")
    if result.read_errors:
        lines.append(f"records that are not traces ({len(result.read_errors)}):")
        lines += [f"  {e}" for e in result.read_errors[:_MAX_ROWS]]
    return "\n".join(lines)
