"""Tests for ``rag_pipeline.core.retrieval.retriever`` over a tiny real index (real model, no Dagster):
each retriever against a brute-force oracle, the model-key guard, and duplicate collapse."""

from __future__ import annotations

import numpy as np
import pytest

from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec
from rag_pipeline.core.retrieval.fusion import Fusion, min_max_fusion, reciprocal_rank_fusion
from rag_pipeline.core.retrieval.retriever import (
    DenseUnit,
    QueryVector,
    RetrievalSettings,
    Retriever,
    embed_question,
    retrieve,
)
from rag_pipeline.core.retrieval.sentences import best_sentence_distances, partition_sentences
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index

QUESTIONS = [
    "how long before a network call times out",
    "how often should the upgrade command run",
    "which exporter did version 2 remove",
]
TIMEOUTS_QUESTION = QUESTIONS[0]
CONFIG_TIMEOUTS, FAQ_TIMEOUTS = 1, 2  # rows of the planted duplicate paragraph


pytestmark = pytest.mark.slow  # the real model's rankings are the expectations here


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, minilm: ModelSpec) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("retrieval"), load_embedder(minilm))


def question_vector(spec: ModelSpec, question: str) -> QueryVector:
    return embed_question(load_embedder(spec), question)


def no_collapse(retriever: Retriever, **kwargs) -> RetrievalSettings:
    return RetrievalSettings(retriever=retriever, collapse_duplicates=False, **kwargs)


def rrf(**kwargs) -> RetrievalSettings:
    """Hybrid by plain RRF (k = 60, unit weights), no collapse."""
    return no_collapse(Retriever.HYBRID, fusion=Fusion.RRF, dense_weight=1.0, **kwargs)


def brute_force_distances(vectors: np.ndarray, query: np.ndarray) -> list[float]:
    """1 - cosine, row by row, in float64 with explicit norms."""
    q = query.astype(np.float64)
    return [1.0 - float(np.dot(v.astype(np.float64), q)) / float(np.linalg.norm(v) * np.linalg.norm(q))
            for v in vectors]


def test_the_tiny_index_has_the_documented_rows(built: BuiltIndex, minilm: ModelSpec):
    index = built.index
    assert index.chunk_ids == [
        "guide/config.md:27-98", "guide/config.md:113-203", "guide/faq.md:49-139",
        "guide/install.md:55-127", "guide/install.md:143-271", "notes.txt:0-58"]
    assert (index.chunker, index.model_key) == ("header", minilm.key)
    assert index.vectors.shape == (6, 384)
    # The planted duplicate: same content hash, different embedded text.
    assert index.contents[CONFIG_TIMEOUTS] == index.contents[FAQ_TIMEOUTS] == TIMEOUTS_PARAGRAPH
    assert index.content_hashes[CONFIG_TIMEOUTS] == index.content_hashes[FAQ_TIMEOUTS]
    assert index.texts[CONFIG_TIMEOUTS] != index.texts[FAQ_TIMEOUTS]
    assert index.rows_by_content[index.content_hashes[CONFIG_TIMEOUTS]] == (1, 2)


@pytest.mark.parametrize("question", QUESTIONS)
def test_dense_ranking_is_the_brute_force_sort_of_distances(built: BuiltIndex, minilm: ModelSpec,
                                                            question: str):
    index = built.index
    query = question_vector(minilm, question)
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
def test_bm25_ranking_is_the_sort_of_bm25_scores(built: BuiltIndex, minilm: ModelSpec, question: str,
                                                  analyzer: Analyzer):
    index = built.index
    scores = index.bm25[analyzer].scores(question)
    expected = sorted((r for r in range(len(index)) if scores[r] > 0), key=lambda r: (-scores[r], r))
    ranking = retrieve(index, question_vector(minilm, question), question,
                       no_collapse(Retriever.BM25, analyzer=analyzer))
    assert [h.row for h in ranking.hits] == expected
    assert [h.score for h in ranking.hits] == [float(scores[r]) for r in expected]
    # Distances still cover every chunk, and each hit carries its own.
    assert len(ranking.distances) == len(index)
    assert [h.cosine_distance for h in ranking.hits] == [float(ranking.distances[r]) for r in expected]
    assert set(ranking.timings) == {"dense_scan", "bm25"}


@pytest.mark.parametrize("analyzer", list(Analyzer))
def test_bm25_ranking_by_hand(built: BuiltIndex, minilm: ModelSpec, analyzer: Analyzer):
    # Terms of the question: which, exporter, did, version, 2, remove (plain); which, export,
    # did, version, remov (english: "2" is too short, Snowball stems). BM25 indexes the embedded
    # text, header included: notes.txt (row 5) holds version, 2 and exporter (plain) or version,
    # remov and export (english stems "removed" too); faq.md (row 2) holds only "did", in its header
    # "[Frobnicator FAQ > Why did my download stop?]". No other row holds any of them.
    question = QUESTIONS[2]
    ranking = retrieve(built.index, question_vector(minilm, question), question,
                       no_collapse(Retriever.BM25, analyzer=analyzer))
    assert [h.row for h in ranking.hits] == [5, 2]


@pytest.mark.parametrize("question", QUESTIONS)
def test_hybrid_ranking_is_rrf_of_dense_and_bm25(built: BuiltIndex, minilm: ModelSpec, question: str):
    index = built.index
    query = question_vector(minilm, question)
    dense = [h.row for h in retrieve(index, query, question, no_collapse(Retriever.DENSE)).hits]
    bm25 = [h.row for h in retrieve(index, query, question, no_collapse(Retriever.BM25)).hits]
    ranking = retrieve(index, query, question, rrf())
    assert [(h.row, h.score) for h in ranking.hits] == reciprocal_rank_fusion([dense, bm25], k=60)
    assert set(ranking.timings) == {"dense_scan", "bm25", "fusion"}


def test_hybrid_scores_by_hand(built: BuiltIndex, minilm: ModelSpec):
    # Dense order 5, 4, 0, 2, 3, 1 (distances about 0.33, 0.80, 0.82, 0.87, 0.91, 1.04); BM25
    # order 5, 2 (test_bm25_ranking_by_hand). Each score is dense term first, then BM25.
    question = QUESTIONS[2]
    index = built.index
    query = question_vector(minilm, question)
    dense = [h.row for h in retrieve(index, query, question, no_collapse(Retriever.DENSE)).hits]
    assert dense == [5, 4, 0, 2, 3, 1]
    hits = retrieve(index, query, question, rrf(analyzer=Analyzer.PLAIN)).hits
    assert [(h.row, h.score) for h in hits] == [
        (5, 1 / (60 + 1) + 1 / (60 + 1)),
        (2, 1 / (60 + 4) + 1 / (60 + 2)),
        (4, 1 / (60 + 2)),
        (0, 1 / (60 + 3)),
        (3, 1 / (60 + 5)),
        (1, 1 / (60 + 6)),
    ]


def test_hybrid_respects_rrf_k(built: BuiltIndex, minilm: ModelSpec):
    question = QUESTIONS[2]
    hits = retrieve(built.index, question_vector(minilm, question), question,
                    rrf(rrf_k=0)).hits
    assert (hits[0].row, hits[0].score) == (5, 1 / 1 + 1 / 1)


def test_query_vector_of_another_model_is_refused(built: BuiltIndex, minilm: ModelSpec):
    index = built.index
    real = question_vector(minilm, TIMEOUTS_QUESTION)
    # Planted flaw: the very same numbers, stamped with another weights fingerprint. The stamp,
    # not the vector, must trip the model-key check.
    stamped = QueryVector(f"{minilm.name}@00000000", real.vector)
    for retriever in Retriever:
        with pytest.raises(ModelMismatchError) as raised:
            retrieve(index, stamped, TIMEOUTS_QUESTION, RetrievalSettings(retriever=retriever))
        assert str(raised.value) == (
            f"the question was embedded by {minilm.name}@00000000, but partition header x "
            f"{minilm.key} holds vectors of another model: refusing to score across vector spaces")


@pytest.mark.parametrize("retriever", list(Retriever))
def test_duplicate_collapse_keeps_one_hit_naming_both_rows(built: BuiltIndex, minilm: ModelSpec,
                                                           retriever: Retriever):
    index = built.index
    query = question_vector(minilm, TIMEOUTS_QUESTION)
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


def test_duplicate_collapse_on_the_timeouts_question(built: BuiltIndex, minilm: ModelSpec):
    # The config.md copy carries the matching "Timeouts" header and is the closer one.
    hits = retrieve(built.index, question_vector(minilm, TIMEOUTS_QUESTION), TIMEOUTS_QUESTION).hits
    assert (hits[0].row, hits[0].locations) == (CONFIG_TIMEOUTS, (CONFIG_TIMEOUTS, FAQ_TIMEOUTS))
    assert len(hits) == 5
    assert FAQ_TIMEOUTS not in [h.row for h in hits]


# --- candidate settings --------------------------------------------------------------------------


def test_weighted_rrf_and_min_max_fusion_through_retrieve(built: BuiltIndex, minilm: ModelSpec):
    question = QUESTIONS[2]
    index = built.index
    query = question_vector(minilm, question)
    dense_ranking = retrieve(index, query, question, no_collapse(Retriever.DENSE))
    bm25_ranking_ = retrieve(index, query, question, no_collapse(Retriever.BM25))
    dense = [h.row for h in dense_ranking.hits]
    bm25 = [h.row for h in bm25_ranking_.hits]
    weighted = retrieve(index, query, question, no_collapse(Retriever.HYBRID, fusion=Fusion.RRF,
                                                            dense_weight=2.0))
    assert [(h.row, h.score) for h in weighted.hits] == reciprocal_rank_fusion(
        [dense, bm25], k=60, weights=[2.0, 1.0])
    minmax = retrieve(index, query, question, no_collapse(Retriever.HYBRID, fusion=Fusion.MIN_MAX,
                                                          dense_weight=1.0))
    assert [(h.row, h.score) for h in minmax.hits] == min_max_fusion(
        [[(h.row, h.score) for h in dense_ranking.hits], [(h.row, h.score) for h in bm25_ranking_.hits]])
    # The default: min-max fusion, the dense list weighted 2, the code analyzer.
    default = retrieve(index, query, question, no_collapse(Retriever.HYBRID))
    code_bm25 = retrieve(index, query, question, no_collapse(Retriever.BM25))
    assert code_bm25.hits == bm25_ranking_.hits  # default analyzer on both sides
    assert [(h.row, h.score) for h in default.hits] == min_max_fusion(
        [[(h.row, h.score) for h in dense_ranking.hits], [(h.row, h.score) for h in code_bm25.hits]],
        weights=[2.0, 1.0])
    # The gate's distances stay the question's own, whatever the fusion.
    assert [h.cosine_distance for h in minmax.hits] == [
        float(dense_ranking.distances[h.row]) for h in minmax.hits]


def test_feedback_runs_a_second_pass(built: BuiltIndex, minilm: ModelSpec):
    question = QUESTIONS[2]
    index = built.index
    query = question_vector(minilm, question)
    plain = retrieve(index, query, question, no_collapse(Retriever.HYBRID))
    # Rocchio with beta 0 moves nothing; RM3 with lambda 1 keeps the original query: the
    # second pass must give back the first pass exactly.
    same = retrieve(index, query, question, no_collapse(
        Retriever.HYBRID, rocchio_docs=3, rocchio_beta=0.0, rm3_docs=3, rm3_weight=1.0))
    # (Rocchio renormalises the float32 query: scores agree to float32 precision.)
    assert [h.row for h in same.hits] == [h.row for h in plain.hits]
    assert [h.score for h in same.hits] == pytest.approx([h.score for h in plain.hits], abs=1e-6)
    assert "feedback" in same.timings
    moved = retrieve(index, query, question, no_collapse(Retriever.HYBRID, rocchio_docs=2,
                                                         rocchio_beta=1.0, rm3_docs=2))
    assert np.array_equal(moved.distances, plain.distances)
    assert sorted(h.row for h in moved.hits) == sorted(h.row for h in plain.hits)


def test_sentence_scoring_needs_a_sentence_index(built: BuiltIndex, minilm: ModelSpec):
    index = built.index
    question = QUESTIONS[0]
    query = question_vector(minilm, question)
    settings = no_collapse(Retriever.DENSE, dense_unit=DenseUnit.SENTENCE)
    with pytest.raises(ValueError, match="needs this partition's sentence vectors"):
        retrieve(index, query, question, settings)
    embedder = load_embedder(minilm)
    sentences = partition_sentences(index.model_key, index.texts, index.contents, embedder.embed)
    ranking = retrieve(index, query, question, settings, sentences)
    best = best_sentence_distances(sentences, query.vector)
    assert [h.row for h in ranking.hits] == np.lexsort((np.arange(len(best)), best)).tolist()
    either = retrieve(index, query, question, no_collapse(
        Retriever.DENSE, dense_unit=DenseUnit.CHUNK_OR_SENTENCE), sentences)
    assert [h.score for h in either.hits] == pytest.approx(
        sorted((1.0 - float(min(b, d)) for b, d in zip(best, ranking.distances, strict=True)),
               reverse=True), abs=1e-6)
