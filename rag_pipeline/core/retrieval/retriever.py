"""Ranks a partition's chunks for a question: dense, BM25, or both fused by RRF.

The question must be embedded by the model that built the partition (same name and weights
fingerprint); a vector from any other model is refused, never scored.

The dense side finds its rows by one of two paths (:class:`~rag_pipeline.core.index.ann.DensePath`):
the exact scan of every vector, or, when the partition has an ANN index and at least
``crossover`` chunks, the index's shortlist rescored with the float32 vectors
(:mod:`rag_pipeline.core.index.ann`). Either way every distance a hit carries is exact; the ranking
says which path served (``Ranking.path``, and the timing ``dense_scan`` or ``dense_ann``).

With ``readable`` (:class:`~rag_pipeline.core.index.access.Readable`, the rows one principal may
read), every list is ranked within those rows: BM25 sums only their postings, the exact scan
measures only them, the ANN index's shortlist holds only them, and duplicates collapse over
readable copies only; fusion, the gate and every distance then see readable chunks alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np

from rag_pipeline.core.embedding.models import ModelMismatchError, TextEmbedder
from rag_pipeline.core.index.ann import CROSSOVER_ROWS, DensePath, choose_path
from rag_pipeline.core.index.bm25 import Bm25List
from rag_pipeline.core.retrieval.choices import DEFAULT_ANALYZER, Retriever
from rag_pipeline.core.retrieval.dense import cosine_distances, top_k
from rag_pipeline.core.retrieval.feedback import rm3_query, rocchio_vector
from rag_pipeline.core.retrieval.fusion import RRF_K, Fusion, min_max_fusion, reciprocal_rank_fusion
from rag_pipeline.core.retrieval.identifiers import RankedCodes, names_identifiers, ranked_codes
from rag_pipeline.core.retrieval.sentences import SentenceIndex, best_sentence_distances
from rag_pipeline.core.text.analyzers import Analyzer

if TYPE_CHECKING:
    from rag_pipeline.core.index.access import Readable
    from rag_pipeline.core.index.store import PartitionIndex


class DenseUnit(StrEnum):
    """What the dense side scores a chunk by: its own vector, its closest sentence's vector
    (``core/retrieval/sentences.py``), or the closer of the two."""

    CHUNK = "chunk"
    SENTENCE = "sentence"
    CHUNK_OR_SENTENCE = "chunk_or_sentence"


@dataclass(frozen=True)
class RetrievalSettings:
    """How a question is ranked; every default is the measured production setting (issue 11:
    code analyzer, min-max fusion with the dense list weighted 2; README, "Evaluation").

    Attributes:
        retriever: Dense, BM25, or both fused.
        analyzer: The BM25 analyzer.
        depth: How many of each list enter fusion (and how long a ranking is returned).
        rrf_k: The RRF constant (Cormack et al. 2009).
        collapse_duplicates: One hit per distinct content.
        fusion: Reciprocal rank fusion, or a convex combination of min-max normalised scores.
        dense_weight: The dense list's weight in fusion.
        bm25_weight: The BM25 list's weight in fusion.
        rm3_docs: Feedback chunks for RM3 on the BM25 side (0: off), from the first pass.
        rm3_terms: Expansion terms RM3 keeps.
        rm3_weight: The original query's share in the RM3 query (lambda).
        rocchio_docs: Feedback chunks for Rocchio on the dense side (0: off), from the first pass.
        rocchio_beta: The feedback centroid's weight in Rocchio.
        dense_unit: Chunk vector, best sentence, or the closer of the two.
        dense_path: Force the exact scan or the ANN index (None: automatic, by ``crossover``).
        crossover: The partition size from which the ANN index serves, when it has one.
    """

    retriever: Retriever = Retriever.HYBRID
    analyzer: Analyzer = DEFAULT_ANALYZER
    depth: int = 100
    rrf_k: int = RRF_K
    collapse_duplicates: bool = True
    fusion: Fusion = Fusion.MIN_MAX
    dense_weight: float = 2.0
    bm25_weight: float = 1.0
    rm3_docs: int = 0
    rm3_terms: int = 10
    rm3_weight: float = 0.5
    rocchio_docs: int = 0
    rocchio_beta: float = 0.5
    dense_unit: DenseUnit = DenseUnit.CHUNK
    dense_path: DensePath | None = None
    crossover: int = CROSSOVER_ROWS

    @property
    def feedback(self) -> bool:
        return self.rm3_docs > 0 or self.rocchio_docs > 0


@dataclass(frozen=True)
class QueryVector:
    """A question's embedding, stamped with the model that produced it."""

    model_key: str
    vector: np.ndarray


def embed_question(embedder: TextEmbedder, question: str) -> QueryVector:
    return QueryVector(embedder.spec.key, embedder.embed_query(question))


@dataclass(frozen=True)
class Hit:
    """A ranked chunk (by row in the partition) with its cosine distance to the question.
    ``locations`` lists every row in the partition holding the same content (itself first);
    ``identifier`` is an identifier the question names that the chunk holds verbatim
    (:mod:`.identifiers`), ``""`` when it holds none; ``unheld`` the codes the question names
    that no hit holds beside their look-alikes, ``names_held`` whether a hit holds another code
    it names (both the same on every hit of a ranking: the gate refuses a question naming
    unheld record numbers alone)."""

    row: int
    score: float
    cosine_distance: float
    locations: tuple[int, ...]
    identifier: str = ""
    unheld: tuple[str, ...] = ()
    names_held: bool = False


@dataclass
class Ranking:
    """The hits, and how the dense side found them.

    Attributes:
        hits: Best first.
        distances: The exact path's distance to every chunk; None on the ANN path, which
            measures only its shortlist (and each hit's own distance).
        timings: Seconds per stage; the dense stage is ``dense_scan`` or ``dense_ann``.
        path: Which dense path served.
    """

    hits: list[Hit]
    distances: np.ndarray | None
    timings: dict[str, float] = field(default_factory=dict)
    path: DensePath = DensePath.EXACT


@dataclass(frozen=True)
class DenseList:
    """The dense side's rows, best first, with the distances they are ranked by."""

    rows: np.ndarray
    distances: np.ndarray

    @classmethod
    def of_scan(cls, distances: np.ndarray, depth: int, readable: Readable | None = None) -> DenseList:
        if readable is None:
            rows = top_k(distances, depth)
            return cls(rows, distances[rows])
        within = distances[readable.rows]
        order = top_k(within, depth)
        return cls(readable.rows[order], within[order])

    def pairs(self) -> list[tuple[int, float]]:
        return list(zip(self.rows.tolist(), self.distances.tolist(), strict=True))


def dense_path(index: PartitionIndex, settings: RetrievalSettings) -> DensePath:
    """The path that serves ``settings`` on this partition: forced, or automatic by size; the
    ANN index only ranks chunk vectors, so a sentence-level ``dense_unit`` always scans. The
    index is opened only when it may serve (asked for by name, or a partition of at least
    ``crossover`` chunks)."""
    if settings.dense_path is DensePath.EXACT or settings.dense_unit is not DenseUnit.CHUNK:
        if settings.dense_path is DensePath.ANN:
            raise ValueError(f"partition {index.chunker} x {index.model_key} has no ANN index for "
                             f"dense_unit {settings.dense_unit.value}: use the exact path")
        return DensePath.EXACT
    if settings.dense_path is DensePath.ANN:
        if index.ann is None:
            raise ValueError(f"partition {index.chunker} x {index.model_key} has no ANN index for "
                             f"dense_unit {settings.dense_unit.value}: use the exact path")
        return DensePath.ANN
    if len(index) < settings.crossover:
        return DensePath.EXACT
    return choose_path(len(index), index.ann is not None and index.ann.trusted, settings.crossover)


def _timed(timings: dict[str, float], name: str, fn: Callable):
    started = time.perf_counter()
    value = fn()
    timings[name] = time.perf_counter() - started
    return value


def collapse_duplicates(rows: list[int], scores: list[float], index: PartitionIndex,
                        readable: Readable | None = None) -> list[tuple[int, float, tuple[int, ...]]]:
    """Keeps the first (best) row of each distinct content; it carries every row of the
    partition that holds the same content (every readable one, with ``readable``), so four
    kept sources are four different passages."""
    if not rows:
        return []
    contents = index.rows_by_content
    groups = contents.group_of_row[np.asarray(rows, np.int64)]  # integers: no hash read per row
    _, first = np.unique(groups, return_index=True)
    kept = np.sort(first).tolist()
    shared = contents.shared(groups[kept]).tolist()  # the other rows are read only for these
    out = []
    for at, twinned in zip(kept, shared, strict=True):
        row = rows[at]
        twins = (row,)
        if twinned:
            twins += tuple(r for r in contents.rows_of_row(row)
                           if r != row and (readable is None or readable.mask[r]))
        out.append((row, scores[at], twins))
    return out


GATHER_SELECTIVITY = 0.25
"""Below this share of readable rows the exact scan gathers the readable vectors and measures
only them; above it, one product over the whole matrix costs less than the gather."""


def _scan(vectors: np.ndarray, vector: np.ndarray, readable: Readable | None) -> np.ndarray:
    """Every row's cosine distance to ``vector``; with ``readable``, NaN for every other row."""
    if readable is None:
        return cosine_distances(vectors, vector)
    out = np.full(len(readable.mask), np.nan, np.float32)
    if len(readable) == 0:
        return out
    if readable.selectivity < GATHER_SELECTIVITY:
        out[readable.rows] = cosine_distances(vectors[readable.rows], vector)
    else:
        scanned = cosine_distances(vectors, vector)
        out[readable.rows] = scanned[readable.rows]
    return out


def _dense_rank_distances(index: PartitionIndex, vector: np.ndarray, distances: np.ndarray,
                          settings: RetrievalSettings,
                          sentences: SentenceIndex | None) -> np.ndarray:
    """The distances the dense list is ranked by (the chunk's own, or its best sentence's)."""
    if settings.dense_unit is DenseUnit.CHUNK:
        return distances
    if sentences is None or sentences.model_key != index.model_key or sentences.n_rows != len(index):
        raise ValueError(f"dense_unit {settings.dense_unit.value} needs this partition's "
                         "sentence vectors (SentenceIndex of the same model and rows)")
    best = best_sentence_distances(sentences, vector)
    if settings.dense_unit is DenseUnit.SENTENCE:
        return best
    return np.minimum(best, distances)


def _fuse(dense: DenseList, bm25: list[tuple[int, float]],
          settings: RetrievalSettings) -> list[tuple[int, float]]:
    weights = (settings.dense_weight, settings.bm25_weight)
    if settings.fusion is Fusion.MIN_MAX:
        return min_max_fusion([[(r, 1.0 - d) for r, d in dense.pairs()], bm25], weights)
    return reciprocal_rank_fusion([dense.rows.tolist(), [r for r, _ in bm25]], settings.rrf_k, weights)


def _one_pass(dense: DenseList | None, bm25: Bm25List | None,
              settings: RetrievalSettings, timings: dict[str, float]) -> list[tuple[int, float]]:
    """``(row, score)`` best first, at most ``depth``."""
    if settings.retriever is Retriever.DENSE:
        return [(r, 1.0 - d) for r, d in dense.pairs()]
    pairs = list(zip(bm25.rows.tolist(), bm25.scores.tolist(), strict=True))
    if settings.retriever is Retriever.BM25:
        return pairs
    fused = _timed(timings, "fusion", lambda: _fuse(dense, pairs, settings))
    return fused[:settings.depth]


def bm25_top(index: PartitionIndex, question: str, settings: RetrievalSettings,
             readable: Readable | None = None) -> Bm25List:
    """The question's BM25 list as :func:`retrieve` ranks it (its analyzer, its depth, within
    ``readable``): what a caller may compute beside the question's embedding and hand over as
    ``bm25``."""
    return index.bm25[settings.analyzer].top(question, settings.depth,
                                             None if readable is None else readable.mask)


def retrieve(index: PartitionIndex, query: QueryVector, question: str,
             settings: RetrievalSettings | None = None,
             sentences: SentenceIndex | None = None, bm25: Bm25List | None = None,
             readable: Readable | None = None) -> Ranking:
    """Ranks the partition's chunks for the question. On the exact path ``distances`` covers
    every chunk and holds the question's own cosine distances to each chunk vector (what the
    refusal signals read), whatever the ranking used; on the ANN path only the shortlist is
    measured. A hit's ``cosine_distance`` is exact on both. ``sentences`` is needed only for a
    ``dense_unit`` other than ``chunk``; ``bm25``, when given, is :func:`bm25_top` of the same
    question and settings, already computed (its time is then the caller's to report), within
    the same ``readable``. With ``readable``, ``distances`` holds NaN for every row the
    principal may not read (nothing is measured over them)."""
    settings = settings or RetrievalSettings()
    if query.model_key != index.model_key:
        raise ModelMismatchError(
            f"the question was embedded by {query.model_key}, but partition "
            f"{index.chunker} x {index.model_key} holds vectors of another model: refusing to "
            "score across vector spaces")
    timings: dict[str, float] = {}
    path = dense_path(index, settings)
    uses_dense = settings.retriever in (Retriever.DENSE, Retriever.HYBRID)
    uses_bm25 = settings.retriever in (Retriever.BM25, Retriever.HYBRID)

    def dense_list(vector: np.ndarray) -> tuple[DenseList | None, np.ndarray | None]:
        """The dense ranking for ``vector`` and, on the exact path, every chunk's distance."""
        if path is DensePath.ANN:
            if not uses_dense:
                return None, None
            rows, ranked = index.ann.search(index.vectors, vector, settings.depth, readable=readable)
            return DenseList(rows, ranked), None
        scanned = _scan(index.vectors, vector, readable)
        if not uses_dense:
            return None, scanned
        ranked_by = _dense_rank_distances(index, vector, scanned, settings, sentences)
        return DenseList.of_scan(ranked_by, settings.depth, readable), scanned

    dense, distances = _timed(timings, f"dense_{'ann' if path is DensePath.ANN else 'scan'}",
                              lambda: dense_list(query.vector))
    scorer = index.bm25[settings.analyzer]
    if uses_bm25 and bm25 is None:
        bm25 = _timed(timings, "bm25", lambda: bm25_top(index, question, settings, readable))
    ranked = _one_pass(dense, bm25, settings, timings)
    if settings.feedback and ranked:
        started = time.perf_counter()
        if uses_bm25 and settings.rm3_docs > 0:
            top = ranked[:settings.rm3_docs]
            terms = rm3_query(question, [index.texts[r] for r, _ in top],
                              [max(score, 0.0) for _, score in top], settings.analyzer,
                              settings.rm3_terms, settings.rm3_weight)
            bm25 = scorer.top_terms(terms, settings.depth, None if readable is None else readable.mask)
        if uses_dense and settings.rocchio_docs > 0:
            top_rows = [r for r, _ in ranked[:settings.rocchio_docs]]
            moved = rocchio_vector(query.vector, index.vectors[top_rows], settings.rocchio_beta)
            dense, _ = dense_list(moved)
        ranked = _one_pass(dense, bm25, settings, timings)
        timings["feedback"] = time.perf_counter() - started
    rows = [row for row, _ in ranked]
    row_scores = [score for _, score in ranked]
    if settings.collapse_duplicates:
        collapsed = collapse_duplicates(rows, row_scores, index, readable)
    else:
        collapsed = [(r, s, (r,)) for r, s in zip(rows, row_scores, strict=True)]
    if distances is not None:
        own = [float(distances[row]) for row, _, _ in collapsed]
    else:
        hit_rows = np.array([row for row, _, _ in collapsed], np.int64)
        own = (1.0 - index.vectors[hit_rows] @ query.vector.astype(np.float32)).tolist()
    codes = RankedCodes([""] * len(collapsed), (), False)
    if names_identifiers(question):  # the hits' texts are read only for a question naming some
        # The embedded text: a code in the document's title or the section's (a mail's
        # subject, a postmortem's heading) is held by the passages under it.
        texts = [index.texts[row] for row, _, _ in collapsed]
        codes = ranked_codes(question, texts, [index.document_ids[row] for row, _, _ in collapsed])
    hits = [Hit(row, score, d, locations, identifier, codes.unheld, codes.any_held)
            for (row, score, locations), d, identifier in zip(collapsed, own, codes.held, strict=True)]
    return Ranking(hits, distances, timings, path)
