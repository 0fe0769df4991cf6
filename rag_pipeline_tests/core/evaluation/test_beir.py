"""The BEIR reader and harness on a toy dataset written in the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.evaluation.beir import load_beir, run_beir, run_beir_candidates
from rag_pipeline.core.evaluation.catalogue import CANDIDATES
from rag_pipeline.core.retrieval.retriever import RetrievalSettings
from rag_pipeline_tests.fake_embedder import HashedEmbedder

DOCS = [
    {"_id": "d1", "title": "Volcanoes", "text": "Basalt lava flows from shield volcanoes.", "metadata": {}},
    {"_id": "d2", "title": "Tides", "text": "The moon's gravity raises ocean tides.", "metadata": {}},
    {"_id": "d3", "title": "", "text": "Penguins huddle to survive the antarctic winter.", "metadata": {}},
    {"_id": "d4", "title": "Coffee", "text": "Arabica beans grow at high altitude.", "metadata": {}},
]
QUERIES = [
    # Planted: metadata holds the gold evidence; the harness must read only `text`.
    {"_id": "q1", "text": "what makes ocean tides", "metadata": {"evidence": "d4 basalt lava"}},
    {"_id": "q2", "text": "how do penguins survive winter", "metadata": {}},
    {"_id": "q3", "text": "an unjudged query about coffee", "metadata": {}},
]


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    folder = tmp_path / "toy"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES),
                                          encoding="utf-8")
    # BEIR's qrels end lines in CRLF, like the shared SciFact copy.
    (folder / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\r\nq1\td2\t1\r\nq2\td3\t1\r\n")
    return folder


def test_load_beir_reads_judged_queries_text_only(toy: Path):
    dataset = load_beir(toy)
    assert dataset.name == "toy"
    assert dataset.doc_ids == ["d1", "d2", "d3", "d4"]
    assert dataset.doc_texts[0] == "Volcanoes Basalt lava flows from shield volcanoes."
    assert dataset.doc_texts[2] == "Penguins huddle to survive the antarctic winter."
    assert (dataset.query_ids, dataset.query_texts) == (
        ["q1", "q2"], ["what makes ocean tides", "how do penguins survive winter"])
    assert dataset.qrels == {"q1": {"d2": 1}, "q2": {"d3": 1}}


def test_load_beir_names_the_missing_file(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="is not a BEIR dataset: corpus.jsonl is missing"):
        load_beir(tmp_path)


def test_run_beir_scores_every_retriever(toy: Path, hashed_embedder: HashedEmbedder):
    report = run_beir(load_beir(toy), hashed_embedder, cache_dir=None, k1_values=(1.2, 1.5))
    assert (report.queries, report.documents) == (2, 4)
    assert [(r.retriever, r.analyzer, r.k1) for r in report.rows] == [
        ("dense", None, None),
        ("bm25", "plain", 1.2), ("hybrid", "plain", 1.2),
        ("bm25", "english", 1.2), ("hybrid", "english", 1.2),
        ("bm25", "code", 1.2), ("hybrid", "code", 1.2),
        ("bm25", "plain", 1.5), ("hybrid", "plain", 1.5),
        ("bm25", "english", 1.5), ("hybrid", "english", 1.5),
        ("bm25", "code", 1.5), ("hybrid", "code", 1.5)]
    # Each query's words occur in its relevant document only ("tides", "penguins"): BM25 ranks
    # it first, so nDCG@10, Recall@100 and MRR@10 are all exactly 1.
    for row in report.rows:
        if row.retriever == "bm25":
            assert (row.ndcg_at_10, row.recall_at_100, row.mrr_at_10) == (1.0, 1.0, 1.0)
        assert row.recall_at_100 == 1.0  # four documents: every list holds them all


def test_candidates_run_through_retrieve_and_before_reproduces_the_rrf_row(toy: Path, minilm):
    dataset = load_beir(toy)
    embedder = load_embedder(minilm)
    report = run_beir(dataset, embedder, cache_dir=None)
    rows = run_beir_candidates(dataset, embedder, {"before": CANDIDATES["before"],
                                                   "default": RetrievalSettings()})
    assert [(r.retriever, r.analyzer, r.k1) for r in rows] == [
        ("hybrid[before]", "english", 1.2), ("hybrid[default]", "code", 1.2)]
    (rrf_english,) = [r for r in report.rows if (r.retriever, r.analyzer) == ("hybrid", "english")]
    # The same fusion through retrieve() (no collapse, depth 1000) gives the same scores.
    assert (rows[0].ndcg_at_10, rows[0].recall_at_100, rows[0].mrr_at_10) == (
        rrf_english.ndcg_at_10, rrf_english.recall_at_100, rrf_english.mrr_at_10)
