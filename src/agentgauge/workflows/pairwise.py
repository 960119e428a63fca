"""Pairwise judging of stored runs: which run's answers does a judge prefer, with position bias
controlled?

Each task (or trace id) that two runs share is judged in both orders under anonymous labels
(:func:`agentgauge.judges.pairwise.judge_pair`): an answer wins the pair only when both orders
name it; orders that disagree make the pair ``inconsistent``. For each pair of runs:

- **position consistency** = the share of judged pairs whose two orders agree (wins and ties);
- **B's win rate** over A = ``(B wins + ½·(ties + inconsistent)) / pairs``: an inconsistent
  pair counts as a tie, never as a win; with its 95% bootstrap interval over the pairs;
- the **conclusion**: ``no reliable preference`` when the consistency is below the floor
  (:data:`CONSISTENCY_FLOOR`, 0.6 by default: below it the judge's choices follow the
  position more than the answers, and no win rate it gives can be trusted); else ``B
  preferred`` / ``A preferred`` when the interval lies above / below 0.5, else ``no
  significant preference``.

With more than two runs, every pair of runs is judged and the outcomes (inconsistent ones as
ties) give **Bradley–Terry** strengths with 95% bootstrap intervals
(:func:`agentgauge.stats.bradley_terry`).

The result is recorded with the candidate run of each pair (stream ``pairwise``), where
``agentgauge compare A B`` finds it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

from agentgauge.judges.budget import JudgeSpend
from agentgauge.judges.client import JudgeSession, run_sync
from agentgauge.judges.cost import judge_spend
from agentgauge.judges.pairwise import PairOutcome, judge_pair
from agentgauge.judges.settings import JudgeSettings
from agentgauge.model import Trace
from agentgauge.stats import bradley_terry, mean_ci
from agentgauge.store import Store

__all__ = ["CONSISTENCY_FLOOR", "NO_RELIABLE_PREFERENCE", "pairwise_runs", "stored_pairwise"]

CONSISTENCY_FLOOR = 0.6
"""The default position-consistency floor below which a comparison gives no preference."""

NO_RELIABLE_PREFERENCE = "no reliable preference"

_SCORE = {"A": 0.0, "B": 1.0, "tie": 0.5, "inconsistent": 0.5}


def _traces(store: Store, run_id: str, by: str) -> dict[str, Trace]:
    """The run's traces by task id (its first trace of each task) or by trace id."""
    out: dict[str, Trace] = {}
    for row in store.iter_samples(run_id, with_trace=True):
        trace = row.trace()
        if trace is None:
            continue
        key = row.task_id if by == "task" else row.trace_id
        out.setdefault(key, trace)
    return out


def _conclusion(consistency: float | None, ci: tuple[float, float] | None, floor: float) -> str:
    if consistency is None or consistency < floor:
        return NO_RELIABLE_PREFERENCE
    if ci is not None and ci[0] > 0.5:
        return "B preferred"
    if ci is not None and ci[1] < 0.5:
        return "A preferred"
    return "no significant preference"


def _summary(
    run_a: str, run_b: str, keys: Sequence[str], outcomes: Sequence[PairOutcome], floor: float
) -> dict[str, Any]:
    judged = [o.outcome for o in outcomes if o.outcome is not None]
    counts = {name: judged.count(name) for name in ("A", "B", "tie", "inconsistent")}
    consistent = counts["A"] + counts["B"] + counts["tie"]
    consistency = consistent / len(judged) if judged else None
    scores = [_SCORE[o] for o in judged]
    win_rate = sum(scores) / len(scores) if scores else None
    ci = mean_ci(scores) if len(scores) >= 2 else None
    return {
        "run_a": run_a,
        "run_b": run_b,
        "n": len(judged),
        "wins_a": counts["A"],
        "wins_b": counts["B"],
        "ties": counts["tie"],
        "inconsistent": counts["inconsistent"],
        "failed": len(outcomes) - len(judged),
        "consistency": consistency,
        "consistency_floor": floor,
        "win_rate_b": win_rate,
        "ci_low": None if ci is None else ci[0],
        "ci_high": None if ci is None else ci[1],
        "conclusion": _conclusion(consistency, ci, floor),
        "errors": sorted({o.error for o in outcomes if o.error})[:5],
        "samples": [
            {
                "key": key,
                "outcome": o.outcome,
                "a_first": o.a_first,
                "b_first": o.b_first,
                "reasons": list(o.reasons) if o.reasons else None,
                "error": o.error,
            }
            for key, o in zip(keys, outcomes, strict=True)
        ],
    }


async def _judge_all(
    settings: JudgeSettings,
    criteria: str,
    jobs: Sequence[tuple[Trace, Trace]],
) -> list[PairOutcome]:
    async with JudgeSession(settings, JudgeSpend()) as session:
        return list(await asyncio.gather(*(judge_pair(session, criteria, a, b) for a, b in jobs)))


def pairwise_runs(
    store: Store,
    run_ids: Sequence[str],
    criteria: str,
    settings: JudgeSettings,
    *,
    by: str = "task",
    floor: float = CONSISTENCY_FLOOR,
    record: bool = True,
) -> dict[str, Any]:
    """Judge the runs' answers pairwise, each pair of runs on the tasks they share.

    Args:
        store: the store holding the runs.
        run_ids: two runs (baseline first) or more (a unique prefix is accepted).
        criteria: what a better answer is.
        settings: the judge settings (``model`` set).
        by: pair samples by ``task`` id or by trace ``id``.
        floor: the position-consistency floor.
        record: record each pair's result with its candidate run.

    Returns:
        ``{"criteria", "model", "by", "consistency_floor", "pairs": [{"run_a", "run_b", "n",
        "wins_a", "wins_b", "ties", "inconsistent", "failed", "consistency", "win_rate_b",
        "ci_low", "ci_high", "conclusion", "samples"}], "bradley_terry": {"runs",
        "strengths", "ci_low", "ci_high", "n"} | None, "usage"}``.

    Raises:
        ValueError: fewer than two runs, a run named twice, or an empty criteria.
    """
    if not criteria.strip():
        raise ValueError("--criteria: say what makes one answer better than another")
    runs = [store.get_run(r).id for r in run_ids]
    if len(runs) < 2 or len(set(runs)) < len(runs):
        raise ValueError("give at least two different runs")
    traces = {run: _traces(store, run, by) for run in runs}
    plan: list[tuple[str, str, list[str]]] = []
    jobs: list[tuple[Trace, Trace]] = []
    for run_a, run_b in itertools.combinations(runs, 2):
        keys = sorted(set(traces[run_a]) & set(traces[run_b]))
        plan.append((run_a, run_b, keys))
        jobs += [(traces[run_a][k], traces[run_b][k]) for k in keys]
    outcomes = iter(run_sync(_judge_all(settings, criteria.strip(), jobs)))
    pairs = []
    all_outcomes: list[PairOutcome] = []
    bt_outcomes: list[tuple[int, int, float]] = []
    for run_a, run_b, keys in plan:
        got = [next(outcomes) for _ in keys]
        all_outcomes += got
        pairs.append(_summary(run_a, run_b, keys, got, floor))
        ia, ib = runs.index(run_a), runs.index(run_b)
        bt_outcomes += [(ib, ia, _SCORE[o.outcome]) for o in got if o.outcome is not None]
    bt = None
    if len(runs) > 2 and bt_outcomes:
        fit = bradley_terry(len(runs), bt_outcomes)
        bt = {
            "runs": runs,
            "strengths": fit.strengths,
            "ci_low": fit.ci_low,
            "ci_high": fit.ci_high,
            "n": fit.n,
        }
    calls = [c for o in all_outcomes for c in o.calls]
    doc = {
        "criteria": criteria.strip(),
        "model": settings.model_id,
        "by": by,
        "consistency_floor": floor,
        "pairs": pairs,
        "bradley_terry": bt,
        "usage": judge_spend([{"judge_samples": {"calls": calls}}]) if calls else None,
    }
    if record:
        for pair in pairs:
            head = {k: v for k, v in doc.items() if k not in ("pairs", "bradley_terry")}
            store.append_record(pair["run_b"], "pairwise", {**head, **pair})
    return doc


def stored_pairwise(store: Store, run_a: str, run_b: str) -> dict[str, Any] | None:
    """The latest pairwise result recorded for B against A, or None.

    Args:
        store: the store.
        run_a: the baseline run's full id.
        run_b: the candidate run's full id.
    """
    found = [r for r in store.records(run_b, "pairwise") if r.get("run_a") == run_a]
    return found[-1] if found else None
