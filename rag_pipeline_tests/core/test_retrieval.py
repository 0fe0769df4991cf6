"""Tests for ``rag_pipeline.core.retrieval`` over a tiny real index (no Dagster): each retriever
against a brute-force oracle, the model-key guard, and duplicate collapse. The oracles hold for
any embedder, so the index is built with the hashed stand-in; what only the real model can show
(which chunk is closest) is in the tests marked slow at the end."""

from __future__ import annotations

import numpy as np
import pytest

from rag_pipeline.core.analyzers import Analyzer
from rag_pipeline.core.embedder import load_embedder
from rag_pipeline.core.fusion import reciprocal_rank_fusion
from rag_pipeline.core.models import ModelMismatchError, ModelSpec, TextEmbedder
from rag_pipeline.core.retrieval import (
    QueryVector,
    RetrievalSettings,
    Retriever,
    bm25_ranking,
    embed_question,
    retrieve,
)
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

QUESTIONS = [
    "how long before a network call times out",
    "how often should the upgrade command run",
    "which exporter did version 2 remove",
]
TIMEOUTS_QUESTION = QUESTIONS[0]
CONFIG_TIMEOUTS, FAQ_TIMEOUTS = 1, 2  # rows of the planted duplicate paragraph


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("retrieval"), hashed_embedder)


def question_vector(embedder: TextEmbedder, question: str) -> QueryVector:
    return embed_question(embedder, question)


def no_collapse(retriever: Retriever, **kwargs) -> RetrievalSettings:
    return RetrievalSettings(retriever=retriever, collapse_duplicates=False, **kwargs)


def brute_force_distances(vectors: np.ndarray, query: np.ndarray) -> list[float]:
    """1 - cosine, row by row, in float64 with explicit norms."""
    q = query.astype(np.float64)
    return [1.0 - float(np.dot(v.astype(np.float64), q)) / float(np.linalg.norm(v) * np.linalg.norm(q))
            for v in vectors]


def test_the_tiny_index_has_the_documented_rows(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    index = built.index
    assert index.chunk_ids == [
        "guide/config.md:27-98", "guide/config.md:113-203", "guide/faq.md:49-139",
        "guide/install.md:26-98", "guide/install.md:114-242", "notes.txt:0-58"]
    assert (index.chunker, index.model_key) == ("header", hashed_embedder.spec.key)
    assert index.vectors.shape == (6, 384)
    # The planted duplicate: same content hash, different embedded text.
    assert index.contents[CONFIG_TIMEOUTS] == index.contents[FAQ_TIMEOUTS] == TIMEOUTS_PARAGRAPH
    assert index.content_hashes[CONFIG_TIMEOUTS] == index.content_hashes[FAQ_TIMEOUTS]
    assert index.texts[CONFIG_TIMEOUTS] != index.texts[FAQ_TIMEOUTS]
    assert index.rows_by_content[index.content_hashes[CONFIG_TIMEOUTS]] == (1, 2)


@pytest.mark.parametrize("question", QUESTIONS)
def test_dense_ranking_is_the_brute_force_sort_of_distances(built: BuiltIndex,
                                                            hashed_embedder: HashedEmbedder, question: str):
    index = built.index
    query = question_vector(hashed_embedder, question)
    ranking = retrieve(index, query, question, no_collapse(Retriever.DENSE))
    brute = brute_force_distances(index.vectors, query.vector)
    expected = sorted(range(len(index)), key=lambda r: (brute[r], r))
    assert [h.row for h in ranking.hits] == expected
    assert [h.score for h in ranking.hits] == pytest.approx([1 - brute[r] for r in expected], abs=1e-6)
    assert [h.cosine_distance for h in ranking.hits] == pytest.approx(
        [brute[r] for r in expected], abs=1e-6)
    assert [h.locations for h in ranking.hits] == [(r,) for r in expected]
    np.testing.assert_allclose(ranking.distances, brute, atol=1e-6)
    assert set(ranking.timings) == {"dense_scan"}
    shallow = retrieve(index, query, question, no_collapse(Retriever.DENSE, depth=2))
    assert [h.row for h in shallow.hits] == expected[:2]


@pytest.mark.parametrize("analyzer", list(Analyzer))
@pytest.mark.parametrize("question", QUESTIONS)
def test_bm25_ranking_is_the_sort_of_bm25_scores(built: BuiltIndex, hashed_embedder: HashedEmbedder,
                                                  question: str, analyzer: Analyzer):
    index = built.index
    scores = index.bm25[analyzer].scores(question)
    expected = sorted((r for r in range(len(index)) if scores[r] > 0), key=lambda r: (-scores[r], r))
    ranking = retrieve(index, question_vector(hashed_embedder, question), question,
                       no_collapse(Retriever.BM25, analyzer=analyzer))
    assert [h.row for h in ranking.hits] == expected
    assert [h.score for h in ranking.hits] == [float(scores[r]) for r in expected]
    # Distances still cover every chunk, and each hit carries its own.
    assert len(ranking.distances) == len(index)
    assert [h.cosine_distance for h in ranking.hits] == [float(ranking.distances[r]) for r in expected]
    assert set(ranking.timings) == {"dense_scan", "bm25"}


@pytest.mark.parametrize("analyzer", list(Analyzer))
def test_bm25_ranking_by_hand(built: BuiltIndex, hashed_embedder: HashedEmbedder, analyzer: Analyzer):
    # Terms of the question: which, exporter, did, version, 2, remove (plain); which, export,
    # did, version, remov (english: "2" is too short, Snowball stems). BM25 indexes the embedded
    # text, header included: notes.txt (row 5) holds version, 2 and exporter (plain) or version,
    # remov and export (english stems "removed" too); faq.md (row 2) holds only "did", in its header
    # "[Frobnicator FAQ > Why did my download stop?]". No other row holds any of them.
    question = QUESTIONS[2]
    ranking = retrieve(built.index, question_vector(hashed_embedder, question), question,
                       no_collapse(Retriever.BM25, analyzer=analyzer))
    assert [h.row for h in ranking.hits] == [5, 2]


def test_bm25_ranking_drops_zero_scores_and_breaks_ties_by_row():
    scores = np.array([0.0, 2.0, 1.0, 2.0, -0.5, 1.0])
    assert bm25_ranking(scores, 10).tolist() == [1, 3, 2, 5]
    assert bm25_ranking(scores, 3).tolist() == [1, 3, 2]
    # The cut falls inside a tie: the lower row of the tied pair is kept.
    assert bm25_ranking(scores, 4).tolist() == [1, 3, 2, 5]
    assert bm25_ranking(np.array([1.0, 3.0, 1.0, 1.0]), 2).tolist() == [1, 0]


@pytest.mark.parametrize("depth", [1, 7, 100, 5000])
def test_bm25_top_k_selection_equals_a_full_sort(depth: int):
    rng = np.random.default_rng(3)
    # Scores rounded to one decimal: many ties, and about a third of the rows do not match.
    scores = np.round(rng.uniform(-1.0, 2.0, 3000), 1).clip(min=0.0)
    positive = [r for r in range(len(scores)) if scores[r] > 0]
    assert bm25_ranking(scores, depth).tolist() == sorted(positive, key=lambda r: (-scores[r], r))[:depth]


@pytest.mark.parametrize("question", QUESTIONS)
def test_hybrid_ranking_is_rrf_of_dense_and_bm25(built: BuiltIndex, hashed_embedder: HashedEmbedder,
                                                 question: str):
    index = built.index
    query = question_vector(hashed_embedder, question)
    dense = [h.row for h in retrieve(index, query, question, no_collapse(Retriever.DENSE)).hits]
    bm25 = [h.row for h in retrieve(index, query, question, no_collapse(Retriever.BM25)).hits]
    ranking = retrieve(index, query, question, no_collapse(Retriever.HYBRID))
    assert [(h.row, h.score) for h in ranking.hits] == reciprocal_rank_fusion([dense, bm25], k=60)
    assert set(ranking.timings) == {"dense_scan", "bm25", "fusion"}


def test_hybrid_scores_by_hand(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    # Dense order (hashed stand-in) 5, 2, 0, 3, 4, 1 (distances about 0.52, 0.89, 0.95, 0.97,
    # 0.97, 1.00); BM25 order 5, 2 (test_bm25_ranking_by_hand). Each score is dense term first,
    # then BM25.
    question = QUESTIONS[2]
    index = built.index
    query = question_vector(hashed_embedder, question)
    dense = [h.row for h in retrieve(index, query, question, no_collapse(Retriever.DENSE)).hits]
    assert dense == [5, 2, 0, 3, 4, 1]
    hits = retrieve(index, query, question, no_collapse(Retriever.HYBRID, analyzer=Analyzer.PLAIN)).hits
    assert [(h.row, h.score) for h in hits] == [
        (5, 1 / (60 + 1) + 1 / (60 + 1)),
        (2, 1 / (60 + 2) + 1 / (60 + 2)),
        (0, 1 / (60 + 3)),
        (3, 1 / (60 + 4)),
        (4, 1 / (60 + 5)),
        (1, 1 / (60 + 6)),
    ]


def test_hybrid_respects_rrf_k(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    question = QUESTIONS[2]
    hits = retrieve(built.index, question_vector(hashed_embedder, question), question,
                    no_collapse(Retriever.HYBRID, rrf_k=0)).hits
    assert (hits[0].row, hits[0].score) == (5, 1 / 1 + 1 / 1)


def test_query_vector_of_another_model_is_refused(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    index = built.index
    real = question_vector(hashed_embedder, TIMEOUTS_QUESTION)
    # Planted flaw: the very same numbers, stamped with another weights fingerprint. The stamp,
    # not the vector, must trip the model-key check.
    stamped = QueryVector(f"{hashed_embedder.spec.name}@00000000", real.vector)
    spec = hashed_embedder.spec
    for retriever in Retriever:
        with pytest.raises(ModelMismatchError) as raised:
            retrieve(index, stamped, TIMEOUTS_QUESTION, RetrievalSettings(retriever=retriever))
        assert str(raised.value) == (
            f"the question was embedded by {spec.name}@00000000, but partition header x "
            f"{spec.key} holds vectors of another model: refusing to score across vector spaces")


@pytest.mark.parametrize("retriever", list(Retriever))
def test_duplicate_collapse_keeps_one_hit_naming_both_rows(built: BuiltIndex, hashed_embedder: HashedEmbedder,
                                                           retriever: Retriever):
    index = built.index
    query = question_vector(hashed_embedder, TIMEOUTS_QUESTION)
    full = retrieve(index, query, TIMEOUTS_QUESTION, no_collapse(retriever)).hits
    collapsed = retrieve(index, query, TIMEOUTS_QUESTION, RetrievalSettings(retriever=retriever)).hits

    # Collapse off: both copies are ranked, each naming only itself.
    twins = [h for h in full if h.row in (CONFIG_TIMEOUTS, FAQ_TIMEOUTS)]
    assert sorted(h.row for h in twins) == [CONFIG_TIMEOUTS, FAQ_TIMEOUTS]
    assert [h.locations for h in twins] == [(twins[0].row,), (twins[1].row,)]

    # Collapse on: the better-ranked copy stays where it was and names both rows, itself first;
    # the other copy is gone; everything else keeps its order and score.
    first, second = twins[0].row, twins[1].row
    assert [(h.row, h.score) for h in collapsed] == [(h.row, h.score) for h in full if h.row != second]
    kept = next(h for h in collapsed if h.row == first)
    assert kept.locations == (first, second)
    assert all(h.locations == (h.row,) for h in collapsed if h.row != first)


def test_duplicate_collapse_on_the_timeouts_question(built: BuiltIndex, hashed_embedder: HashedEmbedder):
    # The config.md copy carries the matching "Timeouts" header and is the closer one.
    hits = retrieve(built.index, question_vector(hashed_embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    assert (hits[0].row, hits[0].locations) == (CONFIG_TIMEOUTS, (CONFIG_TIMEOUTS, FAQ_TIMEOUTS))
    assert len(hits) == 5
    assert FAQ_TIMEOUTS not in [h.row for h in hits]


@pytest.mark.slow
def test_the_real_model_on_the_tiny_index(tmp_path_factory: pytest.TempPathFactory, minilm: ModelSpec):
    # The real model's own order (distances about 0.33, 0.80, 0.82, 0.87, 0.91, 1.04), and the
    # config.md copy of the Timeouts paragraph (matching "Timeouts" header) as the closer twin.
    embedder = load_embedder(minilm)
    index = build_index(tmp_path_factory.mktemp("retrieval-real"), embedder).index
    question = QUESTIONS[2]
    dense = retrieve(index, question_vector(embedder, question), question, no_collapse(Retriever.DENSE))
    assert [h.row for h in dense.hits] == [5, 4, 0, 2, 3, 1]
    hits = retrieve(index, question_vector(embedder, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    assert (hits[0].row, hits[0].locations) == (CONFIG_TIMEOUTS, (CONFIG_TIMEOUTS, FAQ_TIMEOUTS))
