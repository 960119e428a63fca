"""Agreement of a review's aspect scores with the human reviewers' (beyond the spec).

When a generated review carries PeerRead aspect scores (``RECOMMENDATION``, ``ORIGINALITY``,
...), each aspect is compared with the **mean of the human reviewers' scores** of the same
paper: over all reviewed papers, the mean absolute error (scikit-learn) and Spearman's rank
correlation (scipy, ties get average ranks) between the generated score and that mean.

The **human ceiling** gives the same figures for the humans themselves, leave-one-out: every
human reviewer of a paper with at least two reviewers is compared, in turn, with the mean of
the *other* reviewers of that paper. A generated review that reaches the ceiling agrees with
the reviewers as well as they agree with each other. All scores are on PeerRead's 1–5 scale
(the loader maps ICLR's 1–10 recommendation onto it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.stats import spearmanr
from sklearn.metrics import mean_absolute_error

from agentgauge.review.loader import ASPECTS

__all__ = [
    "AgreementFigures",
    "AspectAgreement",
    "ScoredReview",
    "agreement_table",
    "aspect_agreement",
    "leave_one_out",
]

ScoredReview = tuple[Mapping[str, float], Sequence[Mapping[str, float]]]
"""A review's aspect scores and the aspect scores of the reviews it is compared with."""

_MIN_SPEARMAN_N = 3


class AgreementFigures(BaseModel):
    """Agreement on one aspect.

    Args:
        n: how many (review, paper) pairs had the aspect on both sides.
        mae: mean absolute error against the other reviewers' mean; None when n = 0.
        spearman: Spearman's rho; None when n < 3 or either side is constant.
        spearman_p: the two-sided p-value of rho; None with it.
    """

    model_config = ConfigDict(extra="forbid")

    n: int
    mae: float | None = None
    spearman: float | None = None
    spearman_p: float | None = None


class AspectAgreement(BaseModel):
    """A generated review set's agreement on one aspect, beside the human ceiling."""

    model_config = ConfigDict(extra="forbid")

    aspect: str
    generated: AgreementFigures
    human_ceiling: AgreementFigures


def _pairs(reviews: Iterable[ScoredReview], aspect: str) -> tuple[list[float], list[float]]:
    predicted: list[float] = []
    target: list[float] = []
    for scores, others in reviews:
        if aspect not in scores:
            continue
        other_values = [o[aspect] for o in others if aspect in o]
        if not other_values:
            continue
        predicted.append(float(scores[aspect]))
        target.append(float(np.mean(other_values)))
    return predicted, target


def _figures(predicted: Sequence[float], target: Sequence[float]) -> AgreementFigures:
    n = len(predicted)
    if n == 0:
        return AgreementFigures(n=0)
    mae = float(mean_absolute_error(target, predicted))
    if n < _MIN_SPEARMAN_N or len(set(predicted)) < 2 or len(set(target)) < 2:
        return AgreementFigures(n=n, mae=mae)
    result = spearmanr(predicted, target)
    return AgreementFigures(
        n=n, mae=mae, spearman=float(result.statistic), spearman_p=float(result.pvalue)
    )


def aspect_agreement(
    reviews: Iterable[ScoredReview], aspects: Sequence[str] = ASPECTS
) -> dict[str, AgreementFigures]:
    """MAE and Spearman of each aspect against the mean of the compared reviews' scores.

    Args:
        reviews: for each evaluated review, its aspect scores and the aspect scores of the
            human reviews of the same paper (one dict per human reviewer). A pair counts for an
            aspect when the review and at least one human give it.
        aspects: the aspects to report, in order.

    Returns:
        ``{aspect: AgreementFigures}`` for every aspect asked for (``n = 0`` when none scored).
    """
    materialised = list(reviews)
    return {aspect: _figures(*_pairs(materialised, aspect)) for aspect in aspects}


def leave_one_out(human_scores: Iterable[Sequence[Mapping[str, float]]]) -> Iterator[ScoredReview]:
    """Each human review of each paper against the other human reviews of that paper.

    Args:
        human_scores: per paper, the aspect scores of its human reviews; papers with fewer
            than two reviews yield nothing.
    """
    for paper in human_scores:
        if len(paper) < 2:
            continue
        for i, scores in enumerate(paper):
            yield scores, [*paper[:i], *paper[i + 1 :]]


def agreement_table(
    generated: Iterable[ScoredReview],
    human_scores: Iterable[Sequence[Mapping[str, float]]],
    aspects: Sequence[str] = ASPECTS,
) -> list[AspectAgreement]:
    """The generated reviews' agreement per aspect beside the leave-one-out human ceiling.

    Args:
        generated: each generated review's scores with its paper's human reviews' scores.
        human_scores: per paper (the same papers), its human reviews' scores, for the ceiling.
        aspects: the aspects to report; aspects nobody scored are left out.
    """
    ours = aspect_agreement(generated, aspects)
    ceiling = aspect_agreement(leave_one_out(human_scores), aspects)
    return [
        AspectAgreement(aspect=a, generated=ours[a], human_ceiling=ceiling[a])
        for a in aspects
        if ours[a].n or ceiling[a].n
    ]
