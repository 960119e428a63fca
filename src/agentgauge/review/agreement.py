"""Agreement of a review's aspect scores with the human reviewers' (beyond the spec).

When a generated review carries PeerRead aspect scores (``RECOMMENDATION``, ``ORIGINALITY``,
...), each aspect is compared with the **mean of the human reviewers' scores** of the same
paper: over all reviewed papers, the mean absolute error and Spearman's rank correlation
between the generated score and that mean (:func:`agentgauge.stats.agreement`).

The **human ceiling** gives the same figures for the humans themselves, leave-one-out: every
human reviewer of a paper with at least two reviewers is compared, in turn, with the mean of
the *other* reviewers of that paper. A generated review that reaches the ceiling agrees with
the reviewers as well as they agree with each other. All scores are on PeerRead's 1–5 scale
(the loader maps ICLR's 1–10 recommendation onto it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from agentgauge.review.loader import ASPECTS
from agentgauge.stats import ScoredItem, against_others, agreement, leave_one_out

__all__ = [
    "AgreementFigures",
    "AspectAgreement",
    "ScoredReview",
    "agreement_table",
    "aspect_agreement",
]

ScoredReview = ScoredItem
"""A review's aspect scores and the aspect scores of the reviews it is compared with."""


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


def _figures(predicted: Sequence[float], target: Sequence[float]) -> AgreementFigures:
    found = agreement(predicted, target)
    return AgreementFigures(
        n=found.n, mae=found.mae, spearman=found.spearman, spearman_p=found.spearman_p
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
    return {aspect: _figures(*against_others(materialised, aspect)) for aspect in aspects}


def agreement_table(
    generated: Iterable[ScoredReview],
    human_scores: Iterable[Sequence[Mapping[str, float]]],
    aspects: Sequence[str] = ASPECTS,
) -> list[AspectAgreement]:
    """The generated reviews' agreement per aspect beside the leave-one-out human ceiling.

    Args:
        generated: each generated review's scores with its paper's human reviews' scores.
        human_scores: per paper (the same papers), its human reviews' scores, for the ceiling
            (:func:`agentgauge.stats.leave_one_out`).
        aspects: the aspects to report; aspects nobody scored are left out.
    """
    ours = aspect_agreement(generated, aspects)
    ceiling = aspect_agreement(leave_one_out(human_scores), aspects)
    return [
        AspectAgreement(aspect=a, generated=ours[a], human_ceiling=ceiling[a])
        for a in aspects
        if ours[a].n or ceiling[a].n
    ]
