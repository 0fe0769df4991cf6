"""Tests for ``rag_pipeline.core.index.bm25`` and ``rag_pipeline.core.text.analyzers``: hand-computed
Lucene BM25 on a 3-document corpus, and oracle comparisons against bm25s and rank_bm25."""

from __future__ import annotations

import math

import bm25s
import numpy as np
import pyarrow as pa
import pytest
from bm25s.stopwords import STOPWORDS_EN
from rank_bm25 import BM25Okapi

from rag_pipeline.core.index.bm25 import Bm25Scorer, Bm25Tables, build_bm25_tables, lucene_idf, ranked
from rag_pipeline.core.text.analyzers import ENGLISH_STOPWORDS, Analyzer, analyze

# Plain terms: d0 [the cat sat on the mat] (6) | d1 [the dog sat] (3) | d2 [cats and dogs play] (4)
# N = 3, avgdl = 13/3.
TOY_IDS = ["d0", "d1", "d2"]
TOY_TEXTS = ["The cat sat on the mat.", "The dog sat.", "Cats and dogs play."]

IDF_DF1 = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # ln(8/3)
IDF_DF2 = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # ln(1.6)


def norm(dl: float) -> float:
    """k1 * (1 - b + b * dl / avgdl) for the toy corpus."""
    return 1.2 * (1 - 0.75 + 0.75 * dl / (13 / 3))


# --- analyzers ------------------------------------------------------------------------------

SENTENCE = "The Runners were running quickly, aren't they? Café 3.11 and x_y_z!"


def test_plain_analyzer_tokens():
    # Lower case, runs of [a-z0-9]: the apostrophe, "é", "." and "_" all split.
    assert analyze(SENTENCE, Analyzer.PLAIN) == [
        "the", "runners", "were", "running", "quickly", "aren", "t", "they", "caf", "3", "11",
        "and", "x", "y", "z"]


def test_english_analyzer_tokens():
    # Words of 2+ word characters ("t" and "3" go; "café" and "x_y_z" stay whole); stop words
    # "the", "they", "and" dropped; Snowball stems: runners -> runner, running -> run,
    # quickly -> quick.
    assert analyze(SENTENCE, Analyzer.ENGLISH) == [
        "runner", "were", "run", "quick", "aren", "café", "11", "x_y_z"]


def test_english_stop_words_are_bm25s_english_list():
    assert len(ENGLISH_STOPWORDS) == 33
    assert ENGLISH_STOPWORDS == frozenset(STOPWORDS_EN)


# --- hand-computed ----------------------------------------------------------------------------


def test_lucene_idf_by_hand():
    assert lucene_idf(1, 3) == pytest.approx(math.log(8 / 3), rel=1e-12)
    assert lucene_idf(1, 3) == pytest.approx(0.9808292530117262, rel=1e-12)
    assert lucene_idf(2, 3) == pytest.approx(0.47000362924573563, rel=1e-12)
    # A term in every document: ln(1 + 0.5 / 3.5) = ln(8/7), small but never negative.
    assert lucene_idf(3, 3) == pytest.approx(math.log(8 / 7), rel=1e-12)


def test_tables_hold_the_hand_counted_statistics():
    tables = build_bm25_tables(TOY_IDS, TOY_TEXTS, Analyzer.PLAIN)
    assert tables.terms.column("term").to_pylist() == [
        "and", "cat", "cats", "dog", "dogs", "mat", "on", "play", "sat", "the"]
    assert tables.terms.column("df").to_pylist() == [1, 1, 1, 1, 1, 1, 1, 1, 2, 2]
    assert tables.terms.column("idf").to_pylist() == pytest.approx([IDF_DF1] * 8 + [IDF_DF2] * 2, rel=1e-12)
    assert tables.chunks.to_pylist() == [
        {"chunk_id": "d0", "length": 6}, {"chunk_id": "d1", "length": 3}, {"chunk_id": "d2", "length": 4}]
    d0 = [(r["term"], r["tf"]) for r in tables.postings.to_pylist() if r["chunk_id"] == "d0"]
    assert d0 == [("cat", 1), ("mat", 1), ("on", 1), ("sat", 1), ("the", 2)]
    assert tables.postings.num_rows == 5 + 3 + 4
    params = tables.params.to_pylist()[0]
    assert params["k1"] == 1.2 and params["b"] == 0.75 and params["n_chunks"] == 3
    assert params["avg_length"] == pytest.approx(13 / 3, rel=1e-12)
    assert params["tokenizer"] == "lowercase; tokens [a-z0-9]+; no stop words; no stemming"


def test_single_term_scores_by_hand():
    scorer = Bm25Scorer.from_tables(build_bm25_tables(TOY_IDS, TOY_TEXTS, Analyzer.PLAIN), Analyzer.PLAIN)
    # "cat": only d0 (tf 1, dl 6): ln(8/3) * 1 / (1 + 1.2 * (0.25 + 0.75 * 18/13)) = 0.3852199...
    expected_cat = IDF_DF1 * 1 / (1 + norm(6))
    assert expected_cat == pytest.approx(0.3852199483127626, rel=1e-12)
    assert scorer.scores("cat").tolist() == pytest.approx([expected_cat, 0.0, 0.0], rel=1e-12)
    # "the": d0 tf 2 dl 6 -> ln(1.6) * 2 / (2 + norm(6)) = 0.2650779...;
    #        d1 tf 1 dl 3 -> ln(1.6) * 1 / (1 + norm(3)) = 0.2444018...
    expected_the = [IDF_DF2 * 2 / (2 + norm(6)), IDF_DF2 * 1 / (1 + norm(3)), 0.0]
    assert expected_the == pytest.approx([0.2650779687719984, 0.24440188720778253, 0.0], rel=1e-12)
    assert scorer.scores("THE").tolist() == pytest.approx(expected_the, rel=1e-12)
    # A query term asked twice counts twice; unknown terms add nothing.
    assert scorer.scores("cat cat unicorn").tolist() == pytest.approx([2 * expected_cat, 0, 0], rel=1e-12)
    assert scorer.scores("unicorn").tolist() == [0.0, 0.0, 0.0]
    assert scorer.scores("").tolist() == [0.0, 0.0, 0.0]


# --- oracles ----------------------------------------------------------------------------------

ORACLE_TEXTS = [
    "The cat sat on the mat.",
    "A dog chased the cat around the garden, and the cat ran up a tree.",
    "Dogs and cats are common household pets.",
    "The quick brown fox jumps over the lazy dog.",
    "Cats sleep for most of the day, and cats purr when they are content.",
    "Python's list.sort() sorts a list in place; sorted() returns a new list.",
    "Running runners ran quickly around the running track.",
    "Gardens need water, sun and patience.",
]
ORACLE_IDS = [f"c{i}" for i in range(len(ORACLE_TEXTS))]
ORACLE_QUERIES = [
    "cat",
    "cats and dogs",
    "the cat the cat",  # repeated terms
    "running dog garden",
    "sorted list list",  # repeated term
    "quick fox unicorn",  # one term outside the vocabulary
]


@pytest.mark.parametrize("analyzer", list(Analyzer))
def test_scores_equal_bm25s_lucene(analyzer):
    tokens = [analyze(text, analyzer) for text in ORACLE_TEXTS]
    oracle = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    oracle.index(tokens, show_progress=False)
    scorer = Bm25Scorer.from_tables(build_bm25_tables(ORACLE_IDS, ORACLE_TEXTS, analyzer), analyzer)
    for query in ORACLE_QUERIES:
        query_tokens = analyze(query, analyzer)
        expected = np.asarray(oracle.get_scores(query_tokens), dtype=np.float64)
        assert expected.max() > 0, query
        np.testing.assert_allclose(scorer.scores(query), expected, rtol=1e-6, atol=0, err_msg=query)


def test_repeated_query_term_doubles_the_bm25s_score():
    tokens = [analyze(text, Analyzer.PLAIN) for text in ORACLE_TEXTS]
    oracle = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    oracle.index(tokens, show_progress=False)
    scorer = Bm25Scorer.from_tables(build_bm25_tables(ORACLE_IDS, ORACLE_TEXTS, Analyzer.PLAIN),
                                    Analyzer.PLAIN)
    np.testing.assert_allclose(scorer.scores("list list"), 2 * oracle.get_scores(["list"]), rtol=1e-6)


@pytest.mark.parametrize("query", ["cat", "running", "cats purr"])
def test_ranking_agrees_with_rank_bm25(query):
    # rank_bm25's BM25Okapi uses idf = ln((N - df + 0.5) / (df + 0.5)) (negative above N/2, then
    # floored at epsilon * mean idf) and a (k1 + 1) factor, so its scores differ from Lucene's.
    # For one query term, both are a positive constant times the same tf/length curve, so the
    # order is the same; for "cats purr" (both terms rare, df <= 2 of 8) it was checked to agree
    # too. Only the order is compared; stable argsort breaks the ties at 0 by index for both.
    tokens = [analyze(text, Analyzer.PLAIN) for text in ORACLE_TEXTS]
    okapi = BM25Okapi(tokens, k1=1.2, b=0.75)
    scorer = Bm25Scorer.from_tables(build_bm25_tables(ORACLE_IDS, ORACLE_TEXTS, Analyzer.PLAIN),
                                    Analyzer.PLAIN)
    ours = scorer.scores(query)
    theirs = okapi.get_scores(analyze(query, Analyzer.PLAIN))
    assert ours.max() > 0
    assert np.argsort(-ours, kind="stable").tolist() == np.argsort(-theirs, kind="stable").tolist()


def test_scorer_from_dictionary_encoded_tables_equals_the_plain_one():
    # The partition loader reads the string columns dictionary-encoded; the matrix must not change.
    import pyarrow.compute as pc

    tables = build_bm25_tables(ORACLE_IDS, ORACLE_TEXTS, Analyzer.ENGLISH)
    encoded = Bm25Tables(*(t.cast(pa.schema([
        pa.field(f.name, pa.dictionary(pa.int32(), pa.string())) if pa.types.is_string(f.type) else f
        for f in t.schema])) for t in (tables.terms, tables.chunks, tables.postings, tables.params)))
    assert pa.types.is_dictionary(encoded.postings.schema.field("term").type)
    plain = Bm25Scorer.from_tables(tables, Analyzer.ENGLISH)
    scorer = Bm25Scorer.from_tables(encoded, Analyzer.ENGLISH)
    assert scorer.chunk_ids == plain.chunk_ids and scorer.term_index == plain.term_index
    assert (scorer.matrix != plain.matrix).nnz == 0
    assert pc.count(encoded.postings.column("chunk_id")).as_py() == plain.matrix.nnz


def test_a_posting_of_an_unknown_chunk_is_an_error():
    tables = build_bm25_tables(TOY_IDS, TOY_TEXTS, Analyzer.PLAIN)
    # Planted flaw: the chunk list lost its first chunk, whose postings remain.
    broken = Bm25Tables(tables.terms, tables.chunks.slice(1), tables.postings, tables.params)
    missing = tables.postings.column("chunk_id").to_pylist().count(TOY_IDS[0])
    with pytest.raises(ValueError,
                       match=rf"^{missing} BM25 postings name a chunk missing from the statistics$"):
        Bm25Scorer.from_tables(broken, Analyzer.PLAIN)
def test_term_scores_match_scores_for_the_same_terms():
    texts = ["alpha beta beta", "beta gamma", "gamma delta alpha"]
    scorer = Bm25Scorer.from_tables(build_bm25_tables(["a", "b", "c"], texts, Analyzer.PLAIN),
                                    Analyzer.PLAIN)
    # A query asking beta twice is a bag {alpha: 1, beta: 2}; unknown terms are ignored.
    assert scorer.term_scores({"alpha": 1.0, "beta": 2.0, "zzz": 5.0}).tolist() == (
        scorer.scores("alpha beta beta").tolist())
    halves = scorer.term_scores({"alpha": 0.5}).tolist()
    assert halves == [s / 2 for s in scorer.scores("alpha").tolist()]
    assert scorer.term_scores({"zzz": 1.0}).tolist() == [0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def zipf_scorer() -> Bm25Scorer:
    # 6,000 chunks of 12 to 40 words drawn from a Zipfian vocabulary of 400 words: a few words
    # occur in most chunks (long posting lists), most in few, as in real text.
    rng = np.random.default_rng(11)
    words = [f"w{i:03d}" for i in range(400)]
    p = 1.0 / np.arange(1, 401) ** 1.1
    texts = [" ".join(rng.choice(words, rng.integers(12, 41), p=p / p.sum())) for _ in range(6_000)]
    ids = [f"c{i}" for i in range(6_000)]
    return Bm25Scorer.from_tables(build_bm25_tables(ids, texts, Analyzer.PLAIN), Analyzer.PLAIN)


def _full_ranking(scores: np.ndarray, depth: int) -> np.ndarray:
    positive = np.flatnonzero(scores > 0)
    return positive[np.lexsort((positive, -scores[positive]))][:depth]


def test_top_is_the_full_ranking_bit_for_bit_from_the_floor_of_one_term(zipf_scorer):
    rng = np.random.default_rng(12)
    floored = 0
    for _ in range(150):
        # A rare word or two beside common ones (the case pruning is for), or common ones only.
        query = " ".join([f"w{i:03d}" for i in rng.integers(100, 400, rng.integers(0, 3))]
                         + [f"w{i:03d}" for i in rng.integers(0, 10, rng.integers(1, 4))])
        scores = zipf_scorer.scores(query)
        for depth in (1, 10, 100):
            top = zipf_scorer.top(query, depth)
            expected = _full_ranking(scores, depth)
            np.testing.assert_array_equal(top.rows, expected)
            np.testing.assert_array_equal(top.scores, scores[expected])  # the same floats, not close ones
            floored += zipf_scorer._bound_rows(*zipf_scorer._query_terms(query), depth) is not None
    # Most rankings started from one term's floor, so the equality above checks that path (not
    # only the sort of every matching row).
    assert floored >= 300


def test_top_of_unknown_terms_or_depth_zero_is_empty(zipf_scorer):
    assert zipf_scorer.top("nothing known here", 10).rows.tolist() == []
    assert zipf_scorer.top("w001 w300", 0).rows.tolist() == []


def test_top_terms_is_the_ranking_of_term_scores(zipf_scorer):
    weights = {"w000": 0.5, "w250": 1.5, "w003": 0.25, "absent": 3.0}
    scores = zipf_scorer.term_scores(weights)
    top = zipf_scorer.top_terms(weights, 20)
    np.testing.assert_array_equal(top.rows, _full_ranking(scores, 20))
    np.testing.assert_array_equal(top.scores, scores[top.rows])


def test_ranking_drops_zero_scores_and_breaks_ties_by_row():
    scores = np.array([0.0, 2.0, 1.0, 2.0, -0.5, 1.0])
    assert ranked(scores, 10).rows.tolist() == [1, 3, 2, 5]
    assert ranked(scores, 3).rows.tolist() == [1, 3, 2]
