"""Tests for the ANN path of ``rag_pipeline.core.retrieval.retriever``: the automatic choice, the path the
ranking names, and the same hits with the same exact distances as the exact scan (hashed
stand-in embedder: the model is not the point here)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rag_pipeline.core.index.ann import AnnIndex, DensePath
from rag_pipeline.core.retrieval.dense import cosine_distances
from rag_pipeline.core.retrieval.retriever import (
    DenseUnit,
    RetrievalSettings,
    Retriever,
    dense_path,
    embed_question,
    retrieve,
)
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index, topic_docs
from rag_pipeline_tests.fake_embedder import HashedEmbedder

QUESTIONS = ["how long before a network call times out", "which exporter writes spreadsheets",
             "where are the cache files kept", "how do I rotate the log file"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltIndex:
    built = build_index(tmp_path_factory.mktemp("ann"), HashedEmbedder(), docs=topic_docs())
    return replace(built, index=built.index.with_ann(AnnIndex.build(built.index.vectors, threads=1)))


def test_the_partition_is_large_enough_for_a_shortlist(built: BuiltIndex):
    assert len(built.index) == 240


@pytest.mark.parametrize("retriever", list(Retriever))
@pytest.mark.parametrize("question", QUESTIONS)
def test_ann_path_gives_the_exact_paths_hits(built: BuiltIndex, retriever: Retriever, question: str):
    query = embed_question(HashedEmbedder(), question)
    exact = retrieve(built.index, query, question, RetrievalSettings(
        retriever=retriever, depth=10, dense_path=DensePath.EXACT))
    ann = retrieve(built.index, query, question, RetrievalSettings(
        retriever=retriever, depth=10, dense_path=DensePath.ANN))
    assert (exact.path, ann.path) == (DensePath.EXACT, DensePath.ANN)
    assert [h.row for h in ann.hits] == [h.row for h in exact.hits]
    assert [h.locations for h in ann.hits] == [h.locations for h in exact.hits]
    np.testing.assert_allclose([h.cosine_distance for h in ann.hits],
                               [h.cosine_distance for h in exact.hits], atol=1e-6)
    assert ann.distances is None
    assert exact.distances is not None and len(exact.distances) == 240


def test_timings_name_the_path(built: BuiltIndex):
    question = QUESTIONS[0]
    query = embed_question(HashedEmbedder(), question)
    ann = retrieve(built.index, query, question, RetrievalSettings(dense_path=DensePath.ANN))
    exact = retrieve(built.index, query, question, RetrievalSettings())
    assert set(ann.timings) == {"dense_ann", "bm25", "fusion"}
    assert set(exact.timings) == {"dense_scan", "bm25", "fusion"}


def test_hit_distances_on_the_ann_path_are_the_scans(built: BuiltIndex):
    question = QUESTIONS[2]
    query = embed_question(HashedEmbedder(), question)
    ranking = retrieve(built.index, query, question, RetrievalSettings(
        retriever=Retriever.BM25, dense_path=DensePath.ANN, collapse_duplicates=False))
    scan = cosine_distances(built.index.vectors, query.vector)
    assert ranking.hits
    np.testing.assert_allclose([h.cosine_distance for h in ranking.hits],
                               [scan[h.row] for h in ranking.hits], atol=1e-6)


def test_rocchio_feedback_on_the_ann_path_matches_the_scan(built: BuiltIndex):
    question = QUESTIONS[1]
    query = embed_question(HashedEmbedder(), question)
    settings = RetrievalSettings(retriever=Retriever.DENSE, depth=10, rocchio_docs=3)
    exact = retrieve(built.index, query, question, replace(settings, dense_path=DensePath.EXACT))
    ann = retrieve(built.index, query, question, replace(settings, dense_path=DensePath.ANN))
    assert [h.row for h in ann.hits] == [h.row for h in exact.hits]


@pytest.mark.parametrize(("crossover", "expected"), [(241, DensePath.EXACT), (240, DensePath.ANN)])
def test_automatic_choice_by_size(built: BuiltIndex, crossover: int, expected: DensePath):
    assert dense_path(built.index, RetrievalSettings(crossover=crossover)) is expected


def test_a_graph_whose_measured_recall_is_under_the_floor_never_serves_automatically(
        built: BuiltIndex):
    # Planted: the graph's build measured recall 0.42 (the 100x scale run's figure).
    untrusted = built.index.with_ann(replace(built.index.ann, measured_recall=0.42))
    assert dense_path(untrusted, RetrievalSettings(crossover=1)) is DensePath.EXACT
    assert dense_path(untrusted, RetrievalSettings(dense_path=DensePath.ANN)) is DensePath.ANN


def test_sentence_unit_always_scans(built: BuiltIndex):
    assert dense_path(built.index, RetrievalSettings(
        crossover=1, dense_unit=DenseUnit.SENTENCE)) is DensePath.EXACT


def test_forcing_ann_without_an_index_is_an_error(built: BuiltIndex):
    without = built.index.with_ann(None)
    assert dense_path(without, RetrievalSettings(crossover=1)) is DensePath.EXACT
    with pytest.raises(ValueError, match="has no ANN index for dense_unit chunk"):
        dense_path(without, RetrievalSettings(dense_path=DensePath.ANN))
