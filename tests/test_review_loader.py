"""The PeerRead loader on the real ACL 2017 / CoNLL 2016 files and on ICLR/arXiv-shaped folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentgauge.io.jsonl import ReadError
from agentgauge.review.loader import (
    ASPECTS,
    PeerReadPaper,
    iter_peerread,
    load_peerread,
    read_paper_file,
)


@pytest.fixture(scope="module")
def peerread(shared_data: Path) -> Path:
    return shared_data / "peerread"


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_counts_per_venue_and_split_match_the_json(peerread: Path) -> None:
    expected: dict[tuple[str, str], tuple[int, int]] = {}
    for file in peerread.glob("*/*/reviews/*.json"):
        venue, split = file.parts[-4], file.parts[-3]
        entries = json.loads(file.read_text(encoding="utf-8"))["reviews"]
        distinct = len({json.dumps(e, sort_keys=True) for e in entries})
        papers, reviews = expected.get((venue, split), (0, 0))
        expected[(venue, split)] = (papers + 1, reviews + distinct)

    corpus = load_peerread(peerread)

    assert corpus.errors == []
    assert corpus.counts() == expected
    assert expected[("acl_2017", "train")][0] == 123  # PROVENANCE.md's figure
    assert sum(p for p, _ in expected.values()) == 159


def test_string_scores_become_floats_and_the_raw_strings_are_kept(peerread: Path) -> None:
    file = peerread / "acl_2017" / "train" / "reviews" / "104.json"
    raw = json.loads(file.read_text(encoding="utf-8"))["reviews"]

    paper, errors = read_paper_file(file)

    assert errors == [] and paper is not None
    assert paper.paper_id == "104" and paper.venue == "acl_2017" and paper.split == "train"
    assert len(paper.reviews) == len(raw)
    for review, entry in zip(paper.reviews, raw, strict=True):
        numeric = {a: entry[a] for a in ASPECTS if a in entry}
        assert all(isinstance(v, str) for v in numeric.values())
        assert review.raw_scores == numeric
        assert review.scores == {a: float(v) for a, v in numeric.items()}
        assert review.presentation_format == entry["PRESENTATION_FORMAT"]
        assert review.comments == entry["comments"]


def test_null_meta_flags_and_missing_aspects_on_the_real_data(peerread: Path) -> None:
    raw_entries = [
        entry
        for file in sorted(peerread.glob("acl_2017/*/reviews/*.json"))
        for entry in json.loads(file.read_text(encoding="utf-8"))["reviews"]
    ]
    lacking_impact = sum("IMPACT" not in e for e in raw_entries)
    assert lacking_impact > 0  # the quirk PROVENANCE.md names

    reviews = [r for p in load_peerread(peerread, venues=["acl_2017"]).papers for r in p.reviews]

    assert len(reviews) == len(raw_entries)
    assert all(e["is_meta_review"] is None for e in raw_entries)
    assert not any(r.is_meta_review for r in reviews)
    assert sum("IMPACT" not in r.scores for r in reviews) == lacking_impact
    assert all(1.0 <= v <= 5.0 for r in reviews for v in r.scores.values())


def test_integer_ids_are_read_as_strings(peerread: Path) -> None:
    file = peerread / "acl_2017" / "dev" / "reviews" / "37.json"
    assert json.loads(file.read_text(encoding="utf-8"))["id"] == 37

    paper, _ = read_paper_file(file)

    assert paper is not None and paper.paper_id == "37"


def test_parsed_pdfs_give_an_excerpt_without_margin_numbers(peerread: Path) -> None:
    corpus = load_peerread(peerread, venues=["acl_2017"], splits=["test"])
    with_text = {p.paper_id: p for p in corpus.papers if p.excerpt}
    assert sorted(with_text) == ["148", "49"]
    parsed = json.loads(
        (peerread / "acl_2017/test/parsed_pdfs/49.pdf.json").read_text(encoding="utf-8")
    )
    first_real_section = next(s for s in parsed["metadata"]["sections"] if s["heading"])

    excerpt = with_text["49"].excerpt

    assert excerpt.startswith(first_real_section["heading"])
    assert "\n011\n" not in excerpt and "\n012\n" not in excerpt
    short = load_peerread(peerread, venues=["acl_2017"], splits=["test"], excerpt_chars=100)
    assert [p.excerpt for p in short.papers if p.paper_id == "49"] == [excerpt[:100]]


def test_to_task_follows_the_convention(peerread: Path) -> None:
    paper, _ = read_paper_file(peerread / "acl_2017" / "train" / "reviews" / "104.json")
    assert paper is not None

    task = paper.to_task()

    assert task.id == "acl_2017/train/104"
    assert task.references == [r.comments for r in paper.reviews]
    assert task.metadata["human_scores"] == [r.scores for r in paper.reviews]
    assert isinstance(task.input, dict)
    assert task.input["title"] == paper.title and task.input["abstract"] == paper.abstract
    assert task.metadata["accepted"] is None


def _iclr_entries() -> list[dict[str, Any]]:
    return [
        {"IS_META_REVIEW": True, "comments": "Accept: the reviewers liked it."},
        {
            "DATE": "02 May 2017",
            "TITLE": "Source code",
            "IS_META_REVIEW": False,
            "comments": "Is the code released?",
            "OTHER_KEYS": "(anonymous)",
        },
        {
            "OTHER_KEYS": "ICLR 2017 conference AnonReviewer1",
            "TITLE": "Solid work",
            "comments": "The method is simple and the results are strong.",
            "ORIGINALITY": 4,
            "IS_META_REVIEW": False,
            "RECOMMENDATION": 8,
            "REVIEWER_CONFIDENCE": 4,
        },
        {
            "OTHER_KEYS": "ICLR 2017 conference AnonReviewer2",
            "comments": "Unclear baselines.",
            "IS_META_REVIEW": False,
            "RECOMMENDATION": 1,
            "CLARITY": 2,
        },
        {
            "OTHER_KEYS": "ICLR 2017 conference AnonReviewer3",
            "comments": "",
            "IS_META_REVIEW": False,
            "CLARITY": 3,
        },
    ]


def test_iclr_duplicates_scale_and_entry_kinds(tmp_path: Path) -> None:
    entries = _iclr_entries()
    _write(
        tmp_path / "iclr_2017" / "train" / "reviews" / "304.json",
        {"id": "304", "title": "T", "abstract": "A", "accepted": True, "reviews": entries * 2},
    )

    corpus = load_peerread(tmp_path)

    assert corpus.errors == []
    (paper,) = corpus.papers
    assert paper.accepted is True
    assert len(paper.reviews) == len(entries) and paper.duplicates_dropped == len(entries)
    assert [r.is_meta_review for r in paper.reviews] == [True, False, False, False, False]
    humans = paper.human_reviews
    assert [h.author for h in humans] == [
        "ICLR 2017 conference AnonReviewer1",
        "ICLR 2017 conference AnonReviewer2",
    ]
    assert humans[0].scores["RECOMMENDATION"] == pytest.approx(1 + 7 * 4 / 9)
    assert humans[0].raw_scores["RECOMMENDATION"] == 8
    assert humans[1].scores["RECOMMENDATION"] == 1.0
    assert humans[0].scores["ORIGINALITY"] == 4.0  # other aspects are already on 1-5
    assert paper.to_task().references == [h.comments for h in humans]


def test_papers_without_reviews_keep_their_label(tmp_path: Path) -> None:
    _write(
        tmp_path / "data" / "arxiv.cs.cl_2007-2017" / "test" / "reviews" / "1105.1072.json",
        {"id": "1105.1072", "title": "T", "abstract": "A", "reviews": [], "accepted": False},
    )

    (paper,) = [p for p in iter_peerread(tmp_path) if isinstance(p, PeerReadPaper)]

    assert paper.venue == "arxiv.cs.cl_2007-2017" and paper.split == "test"
    assert paper.reviews == [] and paper.accepted is False
    assert paper.to_task().references == []


def test_malformed_files_are_reported_and_reading_goes_on(tmp_path: Path) -> None:
    reviews = tmp_path / "iclr_2017" / "dev" / "reviews"
    reviews.mkdir(parents=True)
    (reviews / "1.json").write_text('{"id": "1",\n "reviews": [}', encoding="utf-8")
    _write(reviews / "2.json", {"id": "2", "reviews": {"not": "a list"}})
    _write(
        reviews / "3.json",
        {
            "id": "3",
            "reviews": [
                {"comments": "ok", "RECOMMENDATION": "N/A", "CLARITY": "4"},
                {"comments": "too high", "RECOMMENDATION": 11},
            ],
        },
    )
    _write(reviews / "4.json", {"id": "4", "reviews": []})

    items = list(iter_peerread(tmp_path))

    errors = [i for i in items if isinstance(i, ReadError)]
    papers = [i for i in items if isinstance(i, PeerReadPaper)]
    assert [p.paper_id for p in papers] == ["3", "4"]
    assert [(Path(e.source).name, e.line, e.field) for e in errors] == [
        ("1.json", 2, None),
        ("2.json", 0, "reviews"),
        ("3.json", 0, "reviews[0].RECOMMENDATION"),
        ("3.json", 0, "reviews[1].RECOMMENDATION"),
    ]
    assert "outside the scale 1–10" in errors[3].message
    assert papers[0].reviews[0].scores == {"CLARITY": 4.0}
    assert papers[0].reviews[1].scores == {}


def test_reading_streams_one_file_at_a_time(tmp_path: Path) -> None:
    reviews = tmp_path / "acl_2017" / "train" / "reviews"
    _write(reviews / "1.json", {"id": "1", "reviews": []})
    _write(reviews / "2.json", {"id": "2", "reviews": []})

    stream = iter_peerread(tmp_path)
    first = next(stream)
    (reviews / "2.json").write_text("not json", encoding="utf-8")  # after the first was read
    rest = list(stream)

    assert isinstance(first, PeerReadPaper) and first.paper_id == "1"
    assert len(rest) == 1 and isinstance(rest[0], ReadError)


def test_filters_and_missing_root(peerread: Path, tmp_path: Path) -> None:
    corpus = load_peerread(peerread, venues=["conll_2016"], splits=["dev", "test"])
    assert set(corpus.counts()) == {("conll_2016", "dev"), ("conll_2016", "test")}
    with pytest.raises(FileNotFoundError, match="no '<venue>/<split>/reviews' folder"):
        load_peerread(tmp_path)
