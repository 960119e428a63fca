"""Read PeerRead: papers, their human reviews and aspect scores, in PeerRead's own layout.

The layout is ``<venue>/<split>/reviews/<id>.json`` with, when present,
``<venue>/<split>/parsed_pdfs/<id>.pdf.json`` (the output of science-parse). A PeerRead
checkout (``data/<venue>/...``), its ``data`` folder, a single venue or any folder in that
layout works: every ``reviews`` folder found below the root is read, its parent naming the
split and its grandparent the venue.

What the real files hold, and how it is read:

- aspect scores are strings (ACL 2017, CoNLL 2016) or integers (ICLR 2017); both become floats
  on PeerRead's 1–5 scale. ICLR's RECOMMENDATION is on a 1–10 scale and is mapped linearly onto
  1–5 (``1 + (x − 1)·4/9``); the value as written in the file is kept in ``raw_scores``;
- the meta-review flag is ``is_meta_review`` (ACL, often null) or ``IS_META_REVIEW`` (ICLR);
- ICLR files list each entry twice: identical entries are kept once;
- ICLR mixes official reviews with public comments and the programme committee's decision;
  :attr:`PeerReadReview.is_human_review` keeps the entries that carry a review text and at
  least one aspect score (the official reviews);
- arXiv papers have no reviews, only an ``accepted`` label.

Reading streams one paper at a time. A file that cannot be read becomes a
:class:`~agentgauge.io.jsonl.ReadError` naming the file (``line`` is the JSON syntax error's
line, 0 when the error concerns the file as a whole) and the field, and reading goes on; a
single bad score is reported the same way and dropped from its review, the paper is kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentgauge._safe import DECODE_ERRORS, describe
from agentgauge.io.jsonl import ReadError
from agentgauge.model import Task

__all__ = [
    "ASPECTS",
    "DEFAULT_SCALES",
    "PeerReadCorpus",
    "PeerReadPaper",
    "PeerReadReview",
    "iter_peerread",
    "load_peerread",
    "read_paper_file",
]

ASPECTS: tuple[str, ...] = (
    "RECOMMENDATION",
    "ORIGINALITY",
    "SOUNDNESS_CORRECTNESS",
    "SUBSTANCE",
    "CLARITY",
    "IMPACT",
    "MEANINGFUL_COMPARISON",
    "APPROPRIATENESS",
    "REPLICABILITY",
    "REVIEWER_CONFIDENCE",
)
"""PeerRead's numeric aspects (PRESENTATION_FORMAT is a label and is kept apart)."""

DEFAULT_SCALES: dict[str, dict[str, tuple[float, float]]] = {
    "iclr": {"RECOMMENDATION": (1.0, 10.0)},
}
"""Aspects not on PeerRead's 1–5 scale, by venue-name prefix: ``{prefix: {aspect: (lo, hi)}}``."""

_TARGET_SCALE = (1.0, 5.0)
_META_KEYS = ("is_meta_review", "IS_META_REVIEW")
# submission copies carry line numbers in the margin, which science-parse keeps as lines
_MARGIN_NUMBERS = re.compile(r"^[ \t]*\d+(?:[ \t]+\d+)*[ \t]*(?:\n|$)", re.MULTILINE)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PeerReadReview(_Frozen):
    """One entry of a paper's ``reviews`` list.

    Args:
        comments: the review text.
        is_meta_review: the file's ``is_meta_review`` / ``IS_META_REVIEW`` (null → False).
        scores: numeric aspects on the 1–5 scale.
        raw_scores: the same aspects exactly as written in the file (string or number).
        presentation_format: ACL/CoNLL's ``PRESENTATION_FORMAT`` (``Poster``, ``Oral ...``).
        title: ICLR's entry title.
        author: ICLR's ``OTHER_KEYS`` (e.g. ``ICLR 2017 conference AnonReviewer1``).
        date: ICLR's ``DATE``.
    """

    comments: str = ""
    is_meta_review: bool = False
    scores: dict[str, float] = Field(default_factory=dict)
    raw_scores: dict[str, str | int | float] = Field(default_factory=dict)
    presentation_format: str | None = None
    title: str | None = None
    author: str | None = None
    date: str | None = None

    @property
    def is_human_review(self) -> bool:
        """True for a reviewer's review: not a meta-review, a non-blank text, some score."""
        return not self.is_meta_review and bool(self.comments.strip()) and bool(self.scores)


class PeerReadPaper(_Frozen):
    """A paper with its reviews.

    Args:
        paper_id: the file's ``id`` (as a string), else the file name.
        venue: the venue folder, e.g. ``acl_2017``.
        split: the split folder, e.g. ``train``.
        title: the paper's title.
        abstract: the paper's abstract.
        accepted: the acceptance label where the venue gives one (ICLR, arXiv), else None.
        reviews: every distinct entry of the file's ``reviews`` list, in file order.
        duplicates_dropped: how many entries repeated an earlier one exactly.
        excerpt: the parsed PDF's text (section headings and texts, without the margin line
            numbers of submission copies), cut to the loader's ``excerpt_chars``; ``""``
            without a parsed PDF.
        source: the review file's path.
    """

    paper_id: str
    venue: str
    split: str
    title: str = ""
    abstract: str = ""
    accepted: bool | None = None
    reviews: list[PeerReadReview] = Field(default_factory=list)
    duplicates_dropped: int = 0
    excerpt: str = ""
    source: str = ""

    @property
    def human_reviews(self) -> list[PeerReadReview]:
        """The reviewers' reviews (see :attr:`PeerReadReview.is_human_review`)."""
        return [r for r in self.reviews if r.is_human_review]

    def to_task(self) -> Task:
        """The :class:`~agentgauge.model.Task` of reviewing this paper.

        References are the human reviews' texts (a text repeated by two entries counts once);
        ``metadata["human_scores"]`` lists the matching reviews' 1–5 aspect scores in the
        same order. See ``docs/review_text.md`` for the convention.
        """
        references: list[str] = []
        human_scores: list[dict[str, float]] = []
        for review in self.human_reviews:
            if review.comments in references:
                continue
            references.append(review.comments)
            human_scores.append(dict(review.scores))
        return Task(
            id=f"{self.venue}/{self.split}/{self.paper_id}",
            description=f"Write a peer review of the paper {self.title!r}.",
            input={
                "paper_id": self.paper_id,
                "venue": self.venue,
                "split": self.split,
                "title": self.title,
                "abstract": self.abstract,
                "excerpt": self.excerpt,
            },
            references=references,
            category="peer_review",
            metadata={
                "accepted": self.accepted,
                "human_scores": human_scores,
                "venue": self.venue,
                "split": self.split,
            },
        )


class PeerReadCorpus(BaseModel):
    """Everything read from a folder at once (see :func:`load_peerread`)."""

    papers: list[PeerReadPaper]
    errors: list[ReadError]

    def counts(self) -> dict[tuple[str, str], tuple[int, int]]:
        """``{(venue, split): (papers, reviews)}`` where reviews counts every distinct entry."""
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for paper in self.papers:
            papers, reviews = out.get((paper.venue, paper.split), (0, 0))
            out[(paper.venue, paper.split)] = (papers + 1, reviews + len(paper.reviews))
        return out


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def _review_dirs(root: Path) -> list[Path]:
    found = [p for p in root.glob("**/reviews") if p.is_dir()]
    if root.name == "reviews" and root.is_dir():
        found.append(root)
    return sorted(found, key=lambda p: p.parts)


def _scale_for(
    venue: str, scales: Mapping[str, Mapping[str, tuple[float, float]]]
) -> dict[str, tuple[float, float]]:
    merged: dict[str, tuple[float, float]] = {}
    for prefix, aspects in scales.items():
        if venue.lower().startswith(prefix.lower()):
            merged.update(aspects)
    return merged


def _parse_score(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError(f"expected a number, got {raw!r}")
    if isinstance(raw, int | float):
        return float(raw)
    if isinstance(raw, str):
        return float(raw.strip())
    raise ValueError(f"expected a number or a numeric string, got {raw!r}")


def _read_review(
    entry: Any,
    where: str,
    scales: Mapping[str, tuple[float, float]],
    errors: list[ReadError],
    source: str,
) -> PeerReadReview:
    if not isinstance(entry, dict):
        raise _FileError(where, f"expected an object, got {type(entry).__name__}")
    scores: dict[str, float] = {}
    raw_scores: dict[str, str | int | float] = {}
    for aspect in ASPECTS:
        raw = entry.get(aspect)
        if raw is None or raw == "":
            continue
        try:
            value = _parse_score(raw)
            lo, hi = scales.get(aspect, _TARGET_SCALE)
            if not lo <= value <= hi:
                raise ValueError(f"{raw!r} is outside the scale {lo:g}–{hi:g}")
        except DECODE_ERRORS as exc:  # a 400-digit score overflows a float
            errors.append(ReadError(source, 0, f"{where}.{aspect}", describe(exc)))
            continue
        t_lo, t_hi = _TARGET_SCALE
        scores[aspect] = t_lo + (value - lo) * (t_hi - t_lo) / (hi - lo)
        raw_scores[aspect] = raw
    meta = next((entry[k] for k in _META_KEYS if entry.get(k) is not None), False)
    comments = entry.get("comments") or ""
    if not isinstance(comments, str):
        raise _FileError(f"{where}.comments", f"expected a string, got {type(comments).__name__}")
    return PeerReadReview(
        comments=comments,
        is_meta_review=bool(meta),
        scores=scores,
        raw_scores=raw_scores,
        presentation_format=_optional_str(entry.get("PRESENTATION_FORMAT")),
        title=_optional_str(entry.get("TITLE")),
        author=_optional_str(entry.get("OTHER_KEYS")),
        date=_optional_str(entry.get("DATE")),
    )


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


class _FileError(Exception):
    def __init__(self, field: str | None, message: str, line: int = 0):
        super().__init__(message)
        self.field = field
        self.message = message
        self.line = line


def _read_excerpt(
    review_file: Path, paper_id: str, excerpt_chars: int | None, errors: list[ReadError]
) -> str:
    folder = review_file.parent.parent / "parsed_pdfs"
    parsed = folder / f"{review_file.stem}.pdf.json"
    if not parsed.is_file():
        parsed = folder / f"{paper_id}.pdf.json"
    if not parsed.is_file():
        return ""
    try:
        data = json.loads(parsed.read_text(encoding="utf-8"))
        sections = data["metadata"]["sections"] or []
    except json.JSONDecodeError as exc:
        errors.append(ReadError(str(parsed), exc.lineno, None, f"not valid JSON: {exc.msg}"))
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(ReadError(str(parsed), 0, None, f"cannot read: {exc}"))
        return ""
    except DECODE_ERRORS as exc:
        errors.append(ReadError(str(parsed), 0, None, describe(exc)))
        return ""
    except (KeyError, TypeError):
        errors.append(ReadError(str(parsed), 0, "metadata.sections", "missing"))
        return ""
    parts: list[str] = []
    for section in sections if isinstance(sections, list) else []:
        if isinstance(section, dict):
            parts.extend(str(section[k]) for k in ("heading", "text") if section.get(k))
    joined = _MARGIN_NUMBERS.sub("", "\n\n".join(parts)).strip()
    return joined if excerpt_chars is None else joined[:excerpt_chars]


def read_paper_file(
    review_file: str | Path,
    *,
    venue: str | None = None,
    split: str | None = None,
    scales: Mapping[str, Mapping[str, tuple[float, float]]] = DEFAULT_SCALES,
    excerpt_chars: int | None = None,
) -> tuple[PeerReadPaper | None, list[ReadError]]:
    """Read one ``reviews/<id>.json`` file.

    Args:
        review_file: the file.
        venue: the venue name; default the grandparent folder of ``reviews``.
        split: the split name; default the parent folder of ``reviews``.
        scales: aspects not on the 1–5 scale, by venue prefix (see :data:`DEFAULT_SCALES`).
        excerpt_chars: cut the parsed-PDF text to this many characters; None keeps it whole.

    Returns:
        The paper (None when the file cannot be read) and the errors met, each naming the file
        and the field.
    """
    path = Path(review_file)
    venue = venue if venue is not None else path.parent.parent.parent.name
    split = split if split is not None else path.parent.parent.name
    source = str(path)
    errors: list[ReadError] = []
    try:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise _FileError(None, f"not valid JSON: {exc.msg}", exc.lineno) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise _FileError(None, f"cannot read: {exc}") from None
        except DECODE_ERRORS as exc:
            raise _FileError(None, describe(exc)) from None
        if not isinstance(data, dict):
            raise _FileError(None, f"expected a JSON object, got {type(data).__name__}")
        entries = data.get("reviews", [])
        if not isinstance(entries, list):
            raise _FileError("reviews", f"expected a list, got {type(entries).__name__}")
        accepted = data.get("accepted")
        if accepted is not None and not isinstance(accepted, bool):
            raise _FileError("accepted", f"expected true/false/null, got {accepted!r}")
        venue_scales = _scale_for(venue, scales)
        seen: set[str] = set()
        reviews: list[PeerReadReview] = []
        for i, entry in enumerate(entries):
            key = json.dumps(entry, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            reviews.append(_read_review(entry, f"reviews[{i}]", venue_scales, errors, source))
        paper_id = str(data.get("id") if data.get("id") is not None else path.stem)
        paper = PeerReadPaper(
            paper_id=paper_id,
            venue=venue,
            split=split,
            title=str(data.get("title") or ""),
            abstract=str(data.get("abstract") or ""),
            accepted=accepted,
            reviews=reviews,
            duplicates_dropped=len(entries) - len(reviews),
            excerpt=_read_excerpt(path, paper_id, excerpt_chars, errors),
            source=source,
        )
    except _FileError as exc:
        errors.append(ReadError(source, exc.line, exc.field, exc.message))
        return None, errors
    except DECODE_ERRORS as exc:  # a value of the paper too large or too deep to use
        errors.append(ReadError(source, 0, None, describe(exc)))
        return None, errors
    return paper, errors


def iter_peerread(
    root: str | Path,
    *,
    venues: Iterable[str] | None = None,
    splits: Iterable[str] | None = None,
    scales: Mapping[str, Mapping[str, tuple[float, float]]] = DEFAULT_SCALES,
    excerpt_chars: int | None = None,
) -> Iterator[PeerReadPaper | ReadError]:
    """Stream the papers below ``root``, one file at a time, with the errors met on the way.

    Args:
        root: a PeerRead checkout, its ``data`` folder, or any folder in PeerRead's layout.
        venues: keep only these venue folders (e.g. ``["acl_2017"]``); None keeps all.
        splits: keep only these splits (e.g. ``["train", "test"]``); None keeps all.
        scales: aspects not on the 1–5 scale, by venue prefix (see :data:`DEFAULT_SCALES`).
        excerpt_chars: cut the parsed-PDF text to this many characters; None keeps it whole.

    Raises:
        FileNotFoundError: when ``root`` is not a folder or holds no ``reviews`` folder.
    """
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"{base}: not a folder")
    dirs = _review_dirs(base)
    if not dirs:
        raise FileNotFoundError(f"{base}: no '<venue>/<split>/reviews' folder below it")
    venue_set = None if venues is None else set(venues)
    split_set = None if splits is None else set(splits)
    for reviews_dir in dirs:
        split, venue = reviews_dir.parent.name, reviews_dir.parent.parent.name
        if (venue_set is not None and venue not in venue_set) or (
            split_set is not None and split not in split_set
        ):
            continue
        for review_file in sorted(reviews_dir.glob("*.json"), key=_natural_key):
            paper, errors = read_paper_file(
                review_file, venue=venue, split=split, scales=scales, excerpt_chars=excerpt_chars
            )
            yield from errors
            if paper is not None:
                yield paper


def load_peerread(
    root: str | Path,
    *,
    venues: Iterable[str] | None = None,
    splits: Iterable[str] | None = None,
    scales: Mapping[str, Mapping[str, tuple[float, float]]] = DEFAULT_SCALES,
    excerpt_chars: int | None = None,
) -> PeerReadCorpus:
    """Read every paper below ``root`` at once (arguments as in :func:`iter_peerread`)."""
    papers: list[PeerReadPaper] = []
    errors: list[ReadError] = []
    for item in iter_peerread(
        root, venues=venues, splits=splits, scales=scales, excerpt_chars=excerpt_chars
    ):
        if isinstance(item, ReadError):
            errors.append(item)
        else:
            papers.append(item)
    return PeerReadCorpus(papers=papers, errors=errors)
