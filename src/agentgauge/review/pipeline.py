"""The review domain end to end: from PeerRead papers and generated reviews to Traces, and from
scored samples back to per-paper figures and aspect agreement.

A generated review becomes one :class:`~agentgauge.model.Trace` following the convention of
``docs/review_text.md``: its task is :meth:`PeerReadPaper.to_task` of its paper (the paper in
``input``, the human reviews in ``references``, their aspect scores in
``metadata["human_scores"]``) and its ``output`` is ``{"review": text, "scores": {...}}``. When
the generated line carries the agent's own trace, that trace's steps, timing and usage are kept
(Tier 3 and the planning judge read them) and its task contributes what the agent was meant to
do (``tools``, ``expected_calls``, ``reference_trajectory``, ``optimal_tools``).

The **human baseline** evaluates each human review as if it were generated, against the other
reviews of its paper (leave-one-out), through the same metrics; papers with fewer than two
distinct human reviews have nothing to compare and are skipped.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentgauge.io.jsonl import RawLine, ReadError, iter_raw_lines, validate_line
from agentgauge.model import Task, Trace
from agentgauge.review.agreement import AspectAgreement, ScoredReview, agreement_table
from agentgauge.review.loader import ASPECTS, PeerReadPaper
from agentgauge.scoring import Thresholds, recommendation
from agentgauge.store import SampleRow

__all__ = [
    "GeneratedReview",
    "PaperIndex",
    "aspect_labels",
    "baseline_traces",
    "generated_scores",
    "human_comparison",
    "human_thresholds",
    "parse_generated_line",
    "per_paper",
    "read_generated",
    "review_agreement",
    "review_trace",
]

_SCORE_RANGE = (1.0, 5.0)
# what the agent was meant to do comes from its own trace's task; the paper gives the rest
_AGENT_TASK_FIELDS = ("tools", "expected_calls", "reference_trajectory", "optimal_tools")


class GeneratedReview(BaseModel):
    """One line of a generated-reviews file (``GEN.jsonl``).

    Args:
        paper_id: the paper: its PeerRead id (``"104"``) when that is unique among the papers
            read, else ``"<venue>/<split>/<id>"`` (the task id).
        review: the review text.
        scores: PeerRead aspect scores on the 1–5 scale (``RECOMMENDATION``, ``ORIGINALITY``...).
        duration_s: the time the agent took, in seconds (overrides the trace's).
        trace: the agent's trace (steps, timing, usage) for Tier 3 and the planning judge.
    """

    model_config = ConfigDict(extra="forbid")

    paper_id: str | int
    review: str
    scores: dict[str, float] | None = None
    duration_s: float | None = Field(default=None, ge=0)
    trace: Trace | None = None

    @field_validator("review")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the review is empty: there is nothing to score")
        return value

    @field_validator("scores", mode="before")
    @classmethod
    def _check_scores(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        for aspect, score in value.items():
            if aspect not in ASPECTS:
                raise ValueError(f"unknown aspect {aspect!r}; PeerRead's: {', '.join(ASPECTS)}")
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise ValueError(f"{aspect}: expected a number, got {score!r}")
            lo, hi = _SCORE_RANGE
            # an int is compared as it is: math.isfinite would overflow on a huge one
            if not ((isinstance(score, int) or math.isfinite(score)) and lo <= score <= hi):
                raise ValueError(f"{aspect}: {score!r} is outside PeerRead's {lo:g}–{hi:g} scale")
        return value


class PaperIndex:
    """Papers by task id (``venue/split/id``) and by bare PeerRead id.

    Args:
        papers: the papers read from PeerRead.
    """

    def __init__(self, papers: Iterable[PeerReadPaper]) -> None:
        self._by_task: dict[str, PeerReadPaper] = {}
        self._by_id: dict[str, list[PeerReadPaper]] = defaultdict(list)
        for paper in papers:
            self._by_task[_task_id(paper)] = paper
            self._by_id[paper.paper_id].append(paper)

    def __len__(self) -> int:
        return len(self._by_task)

    def resolve(self, ref: str) -> PeerReadPaper:
        """The paper named ``ref``.

        Args:
            ref: a task id ``venue/split/id`` or a bare PeerRead id.

        Raises:
            KeyError: naming the paper when it is unknown or its bare id is ambiguous.
        """
        if ref in self._by_task:
            return self._by_task[ref]
        found = self._by_id.get(ref, [])
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(_task_id(p) for p in found)
            raise KeyError(f"paper id {ref!r} is ambiguous ({names}); give venue/split/id")
        raise KeyError(f"no paper {ref!r} among the {len(self)} PeerRead papers read")


def _task_id(paper: PeerReadPaper) -> str:
    return f"{paper.venue}/{paper.split}/{paper.paper_id}"


def _output(review: str, scores: Mapping[str, float] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"review": review}
    if scores:
        out["scores"] = dict(scores)
    return out


def review_trace(
    paper: PeerReadPaper,
    review: str,
    *,
    trace_id: str,
    scores: Mapping[str, float] | None = None,
    duration_s: float | None = None,
    agent_trace: Trace | None = None,
) -> Trace:
    """The Trace of one generated review of ``paper``.

    Args:
        paper: the reviewed paper.
        review: the generated review text.
        trace_id: the sample's id.
        scores: the review's aspect scores (1–5).
        duration_s: seconds the agent took; None keeps the agent trace's timing.
        agent_trace: the agent's own trace, whose steps, timing, usage and agent are kept; its
            original id goes to ``metadata["agent_trace_id"]``.
    """
    task = paper.to_task()
    output = _output(review, scores)
    if agent_trace is None:
        return Trace(id=trace_id, task=task, output=output, duration_s=duration_s)
    own = agent_trace.task
    task = task.model_copy(update={f: getattr(own, f) for f in _AGENT_TASK_FIELDS})
    update: dict[str, Any] = {
        "id": trace_id,
        "task": task,
        "output": output,
        "metadata": {**agent_trace.metadata, "agent_trace_id": agent_trace.id},
    }
    if duration_s is not None:
        update["duration_s"] = duration_s
    return agent_trace.model_copy(update=update)


def parse_generated_line(raw: RawLine | ReadError, papers: PaperIndex) -> Trace | ReadError:
    """One ``GEN.jsonl`` line as a Trace, or a ReadError naming the file, line and field.

    Args:
        raw: the line.
        papers: the PeerRead papers the reviews refer to.
    """
    generated = validate_line(GeneratedReview, raw)
    if isinstance(generated, ReadError):
        return generated
    try:
        paper = papers.resolve(str(generated.paper_id))
    except KeyError as exc:
        return ReadError(raw.source, raw.line, "paper_id", str(exc.args[0]))
    return review_trace(
        paper,
        generated.review,
        trace_id=f"{_task_id(paper)}#L{raw.line}",
        scores=generated.scores,
        duration_s=generated.duration_s,
        agent_trace=generated.trace,
    )


def read_generated(path: str | Path, papers: PaperIndex) -> Iterator[Trace | ReadError]:
    """Stream a ``GEN.jsonl`` file as Traces; bad lines come out as ReadError, reading goes on.

    Args:
        path: the file (``.gz`` accepted).
        papers: the PeerRead papers the reviews refer to.
    """
    for raw in iter_raw_lines(path):
        yield parse_generated_line(raw, papers)


def baseline_traces(papers: Iterable[PeerReadPaper]) -> Iterator[Trace]:
    """The leave-one-out human baseline: each human review against the paper's other reviews.

    The held-out review is the output (with its aspect scores), the task's references and
    ``metadata["human_scores"]`` are the remaining reviews, ``metadata["held_out"]`` is its
    position among the paper's distinct human reviews. Papers with fewer than two distinct
    human reviews yield nothing.

    Args:
        papers: the PeerRead papers.
    """
    for paper in papers:
        task = paper.to_task()
        references = task.references
        scores = _human_scores(task)
        if len(references) < 2:
            continue
        for i, review in enumerate(references):
            others = [*references[:i], *references[i + 1 :]]
            other_scores = [*scores[:i], *scores[i + 1 :]]
            metadata = {**task.metadata, "human_scores": other_scores, "held_out": i}
            held_out = task.model_copy(update={"references": others, "metadata": metadata})
            yield Trace(
                id=f"{task.id}#human{i}",
                task=held_out,
                output=_output(review, scores[i]),
                agent="human reviewer",
            )


def aspect_labels(
    papers: Iterable[PeerReadPaper], aspects: Mapping[str, str]
) -> tuple[list[Trace], list[dict[str, Any]]]:
    """PeerRead's aspect scores as a judge's calibration set: one trace per paper (the paper
    as the output to assess) and one label per human reviewer and aspect.

    The labels are ``{"trace_id", "metric", "score", "rater"}`` lines for
    ``agentgauge judge calibrate``; each distinct human review of a paper is a rater, so that
    papers with several reviewers give the humans' leave-one-out ceiling.

    Args:
        papers: the PeerRead papers.
        aspects: PeerRead aspect (``CLARITY``...) -> the name of the judge metric that scores
            it.
    """
    traces: list[Trace] = []
    labels: list[dict[str, Any]] = []
    for paper in papers:
        task_id = _task_id(paper)
        scored = [found for found in _human_scores(paper.to_task()) if found]
        if not any(aspect in s for s in scored for aspect in aspects):
            continue
        traces.append(
            Trace(
                id=task_id,
                task=Task(
                    id=task_id,
                    description="Assess the scientific paper submitted for review.",
                    category="peer_review",
                ),
                output={"title": paper.title, "abstract": paper.abstract, "text": paper.excerpt},
            )
        )
        for i, scores in enumerate(scored, 1):
            labels += [
                {"trace_id": task_id, "metric": metric, "score": scores[a], "rater": f"r{i}"}
                for a, metric in aspects.items()
                if a in scores
            ]
    return traces, labels


def _human_scores(task: Task) -> list[dict[str, float]]:
    raw = task.metadata.get("human_scores")
    if not isinstance(raw, list):
        return []
    return [
        {k: float(v) for k, v in item.items() if isinstance(v, int | float)}
        for item in raw
        if isinstance(item, dict)
    ]


def generated_scores(trace: Trace) -> dict[str, float]:
    """The aspect scores a trace's review carries (``output["scores"]``), else ``{}``.

    Args:
        trace: a review trace.
    """
    output = trace.output
    if not isinstance(output, dict) or not isinstance(output.get("scores"), dict):
        return {}
    scores = output["scores"]
    assert isinstance(scores, dict)
    return {
        k: float(v)
        for k, v in scores.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def review_agreement(
    traces: Iterable[Trace], papers: Iterable[PeerReadPaper]
) -> list[AspectAgreement]:
    """Aspect agreement of the traces' reviews with their papers' human reviewers, beside the
    leave-one-out human ceiling over ``papers``.

    Args:
        traces: review traces (their ``output["scores"]`` against
            ``task.metadata["human_scores"]``).
        papers: the papers of the ceiling (those the traces review).
    """
    generated: list[ScoredReview] = [(generated_scores(t), _human_scores(t.task)) for t in traces]
    ceiling = [_human_scores(p.to_task()) for p in papers]
    return agreement_table(generated, ceiling)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def per_paper(
    samples: Sequence[SampleRow], thresholds: Thresholds | None = None
) -> list[dict[str, Any]]:
    """Per-paper figures from the stored samples of a run.

    Args:
        samples: the run's samples; one paper is one task id.
        thresholds: the suite's recommendation cut-offs.

    Returns:
        One entry per paper, in first-seen order: ``task_id``, ``n_samples``, the mean of each
        metric and of the composite over the samples that have one, the mean coverage, and the
        recommendation (label and weight) of the mean composite.
    """
    groups: dict[str, list[SampleRow]] = defaultdict(list)
    for sample in samples:
        groups[sample.task_id].append(sample)
    out = []
    for task_id, group in groups.items():
        values = [s.values for s in group]
        names = sorted({name for v in values for name in v})
        composite = _mean([s.composite for s in group])
        entry: dict[str, Any] = {
            "task_id": task_id,
            "n_samples": len(group),
            "metrics": {n: _mean([v.get(n) for v in values]) for n in names},
            "composite": composite,
            "coverage": _mean([s.coverage for s in group]),
            "recommendation": None,
            "recommendation_weight": None,
        }
        if composite is not None:
            label, weight = recommendation(composite, thresholds)
            entry["recommendation"] = label
            entry["recommendation_weight"] = weight
        out.append(entry)
    return out


def human_comparison(
    generated: Sequence[SampleRow], human: Sequence[SampleRow], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """The generated reviews beside the human reviewers, metric by metric: the mean of each
    metric and of the composite over the samples that have one.

    Args:
        generated: the samples of the generated reviews.
        human: the samples of the held-out human reviews of the same papers.
        metrics: the suite's metric names, in order.

    Returns:
        One row per metric then one for ``composite``: ``metric``, ``generated`` and ``human``
        (means, None without a value) and ``n_generated``, ``n_human`` (samples with a value).
    """

    def row(name: str, pick: Any) -> dict[str, Any]:
        ours = [v for v in (pick(s) for s in generated) if v is not None]
        theirs = [v for v in (pick(s) for s in human) if v is not None]
        return {
            "metric": name,
            "generated": _mean(ours),
            "human": _mean(theirs),
            "n_generated": len(ours),
            "n_human": len(theirs),
        }

    rows = [row(m, lambda s, m=m: s.values.get(m)) for m in metrics]
    return [*rows, row("composite", lambda s: s.composite)]


def human_thresholds(similarities: Sequence[float], composites: Sequence[float]) -> dict[str, Any]:
    """Thresholds derived from the human leave-one-out baseline (``--thresholds human``).

    ``task_success``'s confidence threshold is the median of the human reviews' weighted
    similarity (``output_similarity``): half the human reviews succeed. The recommendation
    cut-offs are the quartiles of the human composites (scored with that threshold):
    ``accept`` the upper quartile, ``weak_accept`` the median, ``weak_reject`` the lower
    quartile, by linear interpolation between the sorted values.

    Args:
        similarities: the held-out human reviews' ``output_similarity`` values.
        composites: their composites; empty to derive the confidence threshold alone.

    Raises:
        ValueError: no similarity to derive from.
    """
    if not similarities:
        raise ValueError("no human review has an output_similarity value to derive from")
    out: dict[str, Any] = {"confidence_threshold": statistics.median(similarities)}
    if composites:
        low, mid, high = (
            statistics.quantiles(composites, n=4, method="inclusive")
            if len(composites) > 1
            else [composites[0]] * 3
        )
        out["recommendation"] = {"accept": high, "weak_accept": mid, "weak_reject": low}
    return out
