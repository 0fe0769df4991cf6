"""Tests for ``rag_pipeline.core.index.access`` and the filtered searches it feeds: labels per row
from a policy, BM25 / exact scan / ANN ranked within the readable rows (each against an oracle
that ranks a partition holding only those rows), k hits whenever k readable rows match, and
duplicates that collapse over readable copies only."""

from __future__ import annotations

import numpy as np
import pytest

from rag_pipeline.benchmarks.ann_libraries import clustered_unit_vectors, near_questions
from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.config.access import AccessPolicy, AccessRule
from rag_pipeline.core.index.access import AccessLabels, Readable, labelled, readable_rows
from rag_pipeline.core.index.ann import FILTER_EXACT_SELECTIVITY, AnnIndex, exact_top_k, recall_at_k
from rag_pipeline.core.index.bm25 import Bm25Scorer, build_bm25_tables, ranked
from rag_pipeline.core.retrieval.retriever import (
    RetrievalSettings,
    Retriever,
    embed_question,
    retrieve,
)
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

TIMEOUTS_QUESTION = "how long before a network call times out"
# Rows of the tiny index (index_builder.DUPLICATED_DOCS): 0-1 guide/config.md, 2 guide/faq.md,
# 3-4 guide/install.md, 5 notes.txt.
POLICY = AccessPolicy((
    AccessRule("guide/faq.md", ("staff",)),
    AccessRule("guide/config.md", ("eng",)),
    AccessRule("guide/**", ("eng", "staff")),
))  # notes.txt: no rule, nobody


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("access"), hashed_embedder)


def test_rows_are_labelled_by_their_documents_first_matching_rule(built: BuiltIndex):
    labels = AccessLabels.of(built.index.document_ids, POLICY)
    assert [sorted(labels.readers_of_row(r)) for r in range(6)] == [
        ["eng"], ["eng"], ["staff"], ["eng", "staff"], ["eng", "staff"], []]
    assert sorted(d for d, readers in labels.documents.items() if not readers) == ["notes.txt"]
    assert labels.readable(frozenset({"staff"})).rows.tolist() == [2, 3, 4]
    assert labels.readable(frozenset({"eng"})).rows.tolist() == [0, 1, 3, 4]
    assert labels.readable(frozenset({"nobody"})).rows.tolist() == []
    assert labels.may_read("guide/faq.md", frozenset({"eng"})) is False
    assert labels.may_read("notes.txt", None) is True


def test_a_document_asked_for_by_name_has_its_rules_matched_whether_held_or_not(
        built: BuiltIndex, monkeypatch: pytest.MonkeyPatch):
    # An attacker timed a 404: an unreadable document's took longer than a missing one's.
    labels = AccessLabels.of(built.index.document_ids, POLICY)
    matched: list[str] = []
    readers_of = AccessPolicy.readers_of

    def counting(policy: AccessPolicy, document_id: str, documents=frozenset()):
        matched.append(document_id)
        return readers_of(policy, document_id, documents)

    monkeypatch.setattr(AccessPolicy, "readers_of", counting)
    asked = ["guide/faq.md", "guide/missing.md", "notes.txt", "secret/none.md"]
    assert [labels.may_open(d, frozenset({"staff"})) for d in asked] == [
        labels.may_read(d, frozenset({"staff"})) for d in asked] == [True, True, False, False]
    assert matched == [*asked, "guide/missing.md", "secret/none.md"]  # may_read: unheld only
    assert labels.may_open("notes.txt", None) is True
    # A name longer than any corpus holds is no document, its rules unmatched (found by an
    # attack: 16 KB of slashes listed 8,000 enclosing names, 128 MB).
    assert labels.may_open("guide/" + "/" * 5000 + "x.md", frozenset({"staff"})) is False
    assert len(matched) == 6


def test_labelling_shares_every_array_and_no_groups_reads_everything(built: BuiltIndex):
    index = labelled(built.index, POLICY)
    assert index.vectors is built.index.vectors and index.bm25 is built.index.bm25
    assert labelled(built.index, POLICY) is index  # cached per generation and rule digest
    assert readable_rows(index, None) is None
    assert readable_rows(built.index, frozenset({"eng"})) is None  # unlabelled: no [access]
    assert labelled(index, None).access is None


def test_the_shared_paragraph_is_served_from_the_readable_copy_only(built: BuiltIndex,
                                                                   hashed_embedder: HashedEmbedder):
    index = labelled(built.index, POLICY)
    settings = AskSettings(cut=1.5)
    everyone = ask(TIMEOUTS_QUESTION, index, hashed_embedder, settings)
    first = everyone.citations[0]
    assert (first.quote, sorted(first.locations)) == (
        TIMEOUTS_PARAGRAPH, ["guide/config.md#char=113,203", "guide/faq.md#char=49,139"])
    for groups, document, fragment in ((frozenset({"staff"}), "guide/faq.md", "#char=49,139"),
                                       (frozenset({"eng"}), "guide/config.md", "#char=113,203")):
        answer = ask(TIMEOUTS_QUESTION, index, hashed_embedder, settings, groups=groups)
        top = answer.citations[0]
        assert (top.document_id, top.quote, top.locations) == (document, TIMEOUTS_PARAGRAPH,
                                                               (document + fragment,))
        readable = {d for d, r in index.access.documents.items() if set(r) & groups}
        assert {c.document_id for c in answer.citations} <= readable
    nobody = ask(TIMEOUTS_QUESTION, index, hashed_embedder, settings, groups=frozenset({"x"}))
    assert (nobody.answered, nobody.citations, nobody.closest_distance) == (False, [], None)


@pytest.mark.parametrize("retriever", list(Retriever))
@pytest.mark.parametrize("groups", [{"staff"}, {"eng"}, {"eng", "staff"}])
def test_every_retriever_ranks_within_the_readable_rows(built: BuiltIndex, hashed_embedder,
                                                        retriever: Retriever, groups: set[str]):
    index = labelled(built.index, POLICY)
    readable = index.access.readable(frozenset(groups))
    query = embed_question(hashed_embedder, "network call timeout upgrade exporter")
    settings = RetrievalSettings(retriever=retriever, collapse_duplicates=False)
    ranking = retrieve(index, query, "network call timeout upgrade exporter", settings,
                       readable=readable)
    assert {h.row for h in ranking.hits} <= set(readable.rows.tolist())
    if retriever is not Retriever.BM25:
        assert len(ranking.hits) == len(readable)  # every readable row, none other
    distances = ranking.distances
    assert np.isnan(distances[~readable.mask]).all()
    assert np.isfinite(distances[readable.mask]).all()


def test_filtered_bm25_equals_bm25_over_the_readable_chunks_alone():
    texts = [f"alpha {'beta ' * (i % 5)}gamma{i % 7} delta{i % 3}" for i in range(300)]
    ids = [f"c{i}" for i in range(300)]
    scorer = Bm25Scorer.from_tables(build_bm25_tables(ids, texts, Analyzer.CODE), Analyzer.CODE)
    mask = np.arange(300) % 10 == 3
    got = scorer.top("beta gamma3 delta1", 20, readable=mask)
    # Oracle: the full index's scores (same idf: statistics stay the corpus's) kept on readable rows.
    full = scorer.scores("beta gamma3 delta1")
    expected = ranked(np.where(mask, full, 0.0), 20)
    assert got.rows.tolist() == expected.rows.tolist()
    assert np.allclose(got.scores, expected.scores)
    assert mask[got.rows].all() and len(got.rows) == 20


@pytest.fixture(scope="module")
def ann_corpus() -> tuple[np.ndarray, np.ndarray, AnnIndex]:
    vectors = clustered_unit_vectors(6_000, seed=3)
    return vectors, near_questions(vectors, 100, seed=4), AnnIndex.build(vectors, threads=1)


@pytest.mark.parametrize("selectivity", [0.5, 0.1, 0.01])
def test_filtered_ann_recall_at_10_against_the_exact_filtered_scan(ann_corpus, selectivity: float):
    vectors, questions, index = ann_corpus
    mask = np.random.default_rng(7).random(len(vectors)) < selectivity
    readable = Readable.of_mask(mask)
    recalls = []
    for question in questions:
        rows, distances = index.search(vectors, question, 10, readable=readable)
        assert mask[rows].all() and len(rows) == 10
        exact = readable.rows[exact_top_k(vectors[readable.rows], question[None, :], 10)[0]]
        recalls.append(recall_at_k(rows, exact))
        assert np.allclose(distances, 1.0 - vectors[rows] @ question, atol=1e-6)
    assert float(np.mean(recalls)) >= 0.99
    assert (selectivity < FILTER_EXACT_SELECTIVITY) == (selectivity == 0.01)


def test_a_filtered_search_returns_every_readable_row_when_fewer_than_k(ann_corpus):
    vectors, questions, index = ann_corpus
    mask = np.zeros(len(vectors), bool)
    mask[[5, 900, 4000]] = True
    rows, _ = index.search(vectors, questions[0], 10, readable=Readable.of_mask(mask))
    assert sorted(rows.tolist()) == [5, 900, 4000]
    nothing = Readable.of_mask(np.zeros(len(vectors), bool))
    empty, _ = index.search(vectors, questions[0], 10, readable=nothing)
    assert empty.tolist() == []
