"""Tests for ``rag_pipeline.core.evaluation.evaluate``: one small ``evaluate`` over a tiny real
index whose 60-character chunks destroy one planted needle, and the ANN path checked against the
exact one."""

from __future__ import annotations

import math

import pytest

from rag_pipeline.core.chunking.strategies import ChunkingSettings
from rag_pipeline.core.config.gold_file import GoldLine, OodKind, OodLine
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.evaluation.catalogue import RunKey
from rag_pipeline.core.evaluation.evaluate import (
    AnnCheck,
    BM25Lists,
    PairedRow,
    RankRow,
    ann_check,
    evaluate,
    rows_holding,
)
from rag_pipeline.core.evaluation.gate_sweep import (
    CUT_RULE,
    RULE_BUDGET,
    RULE_RIGHT_OUTCOMES,
    SWEEP_CUTS,
    GateCvRow,
    SweepRow,
)
from rag_pipeline.core.evaluation.gold import GoldError, validate_gold
from rag_pipeline.core.index.ann import AnnIndex
from rag_pipeline.core.retrieval.dense import cosine_distances, top_k
from rag_pipeline.core.retrieval.retriever import (
    QueryVector,
    RetrievalSettings,
    Retriever,
)
from rag_pipeline_tests.core.index_builder import TIMEOUTS_PARAGRAPH, BuiltIndex, build_index, topic_docs
from rag_pipeline_tests.fake_embedder import HashedEmbedder

# --- evaluate over a tiny real index -------------------------------------------------------------

NOTES_NEEDLE = "Version 2 removed the legacy XML exporter."  # 42 characters: fits a 60-char chunk
UPGRADE_NEEDLE = "Run the upgrade command twice when the lock file is older than a week."  # 70 characters

GOLD = [
    GoldLine("q1", NOTES_NEEDLE, "which exporter did version 2 remove", "where did the xml export go in v2"),
    # Planted flaw: 70 characters cannot sit whole in a chunk of at most 60, so the needle is in
    # the corpus exactly once yet no chunk holds it: must be listed as destroyed, never found.
    GoldLine("q2", UPGRADE_NEEDLE, "when should I run the upgrade command twice",
             "upgrade fails when my lock file is old, what now"),
    # Planted flaw: the Timeouts paragraph is in config.md and faq.md: must be a gold error.
    GoldLine("q3", TIMEOUTS_PARAGRAPH, "how long before a network call times out", "downloads die"),
]
OOD = [
    OodLine("o1", "what changed in version 3", OodKind.NEAR),  # closest chunk at about 0.641
    OodLine("o2", "how do I configure a proxy for network calls", OodKind.NEAR),  # about 0.683
    OodLine("o3", "what is the capital of france", OodKind.OFF),  # about 0.948
]


@pytest.fixture(scope="module")
def small_chunks(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("evaluation"), hashed_embedder,
                       settings=ChunkingSettings(target_chars=60, overlap_chars=0))


def test_bm25_lists_are_made_once_per_question_analyzer_and_depth(small_chunks: BuiltIndex):
    from rag_pipeline.core.retrieval.retriever import RetrievalSettings, Retriever, bm25_top
    from rag_pipeline.core.text.analyzers import Analyzer

    lists = BM25Lists({"header": small_chunks.index}, {"header": None})
    hybrid = RetrievalSettings()
    made = lists.of("header", "upgrade lock file", hybrid)
    expected = bm25_top(small_chunks.index, "upgrade lock file", hybrid)
    assert (made.rows.tolist(), made.scores.tolist()) == (expected.rows.tolist(),
                                                          expected.scores.tolist())
    assert made.rows.size > 0
    # The BM25 retriever and hybrid without duplicate collapse share hybrid's list.
    assert lists.of("header", "upgrade lock file", RetrievalSettings(retriever=Retriever.BM25)) \
        is made
    assert lists.of("header", "upgrade lock file",
                    RetrievalSettings(collapse_duplicates=False)) is made
    other = next(a for a in Analyzer if a is not hybrid.analyzer)
    assert lists.of("header", "upgrade lock file", RetrievalSettings(analyzer=other)) is not made
    assert lists.of("header", "upgrade lock file", RetrievalSettings(depth=5)) is not made
    assert lists.of("header", "upgrade lock file",
                    RetrievalSettings(retriever=Retriever.DENSE)) is None


def test_rows_holding_on_60_character_chunks(small_chunks: BuiltIndex):
    index = small_chunks.index
    assert index.contents[11] == "Release notes.\n\nVersion 2 removed the legacy XML exporter."
    # The upgrade sentence is cut at a word end into two chunks; neither holds all of it.
    assert (index.contents[8], index.contents[9]) == (
        "Run the upgrade command twice when the lock file is older", "than a week.")
    timeouts_half = "Every network call gives up after seventeen seconds"
    assert rows_holding(index, [NOTES_NEEDLE, "Release notes. Version 2", UPGRADE_NEEDLE,
                                timeouts_half]) == {
        NOTES_NEEDLE: frozenset({11}),
        # White space is collapsed on the content side too.
        "Release notes. Version 2": frozenset({11}),
        UPGRADE_NEEDLE: frozenset(),
        # Both copies of the Timeouts paragraph's first half.
        timeouts_half: frozenset({2, 4}),
    }


def wilson_by_hand(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.fixture(scope="module")
def small_chunks_real(tmp_path_factory: pytest.TempPathFactory, minilm: ModelSpec) -> BuiltIndex:
    return build_index(tmp_path_factory.mktemp("evaluation-real"), load_embedder(minilm),
                       settings=ChunkingSettings(target_chars=60, overlap_chars=0))


@pytest.mark.slow
def test_evaluate_on_a_tiny_index(small_chunks_real: BuiltIndex, minilm: ModelSpec):
    # The real model's distances decide the sweep below.
    small_chunks = small_chunks_real
    queries, errors = validate_gold(GOLD, small_chunks.canonical)
    assert errors == [GoldError("q3", "needle found 2 times in the corpus, not once")]
    assert [q.query_id for q in queries] == ["q1/question", "q1/ticket", "q2/question", "q2/ticket"]
    runs = [RunKey("header", Retriever.HYBRID), RunKey("header", Retriever.DENSE)]
    report = evaluate({"header": small_chunks.index}, load_embedder(minilm), queries, OOD, errors, runs)

    assert (report.queries, report.ood_queries, report.gold_errors) == (4, 3, errors)
    assert report.destroyed == {"header": ["q2"]}
    # q1's chunk ranks first for both phrasings (distances about 0.33 and 0.27); q2 has no chunk.
    assert report.ranks == [
        RankRow("header", retriever, query_id, query_id[:2], query_id[3:], rank)
        for retriever in ("hybrid", "dense")
        for query_id, rank in (("q1/question", 1), ("q1/ticket", 1), ("q2/question", None),
                               ("q2/ticket", None))]

    # Every run is summarised over all queries, then per style: each style has one found
    # query (q1) and one destroyed (q2), so every row has recall 1/2 and the same MRR.
    assert [(s.chunker, s.retriever, s.style, s.queries, s.mrr, s.destroyed)
            for s in report.summary] == [
        ("header", retriever, style, n, 0.5, 1) for retriever in ("hybrid", "dense")
        for style, n in (("all", 4), ("question", 2), ("ticket", 2))]
    for row in report.summary:
        n = row.queries
        low, high = wilson_by_hand(n // 2, n)
        assert row.recall == {1: 1 / 2, 4: 1 / 2, 8: 1 / 2, 20: 1 / 2}
        for k in (1, 4, 8, 20):
            assert row.ci95[k] == pytest.approx((low, high), abs=1e-9)
    assert report.paired == [PairedRow("header/hybrid", "header/dense", style, k, 0, 0, 1.0)
                             for style in ("all", "question", "ticket") for k in (4, 8, 20)]

    # Every in-domain query's closest hit is under 0.45: q1 answers from its needle's chunk
    # (correct), q2 from some other chunk (wrong: its needle was destroyed). Out of domain, o1
    # gets through from cut 0.65 and o2 from cut 0.7; o3 never does.
    bluffs = {0.65: 1, 0.675: 1, 0.7: 2, 0.725: 2, 0.75: 2}
    assert report.sweep == [
        SweepRow(cut, 2, 2, 0, bluffs.get(cut, 0), bluffs.get(cut, 0), 0, ood_total=3)
        for cut in SWEEP_CUTS]
    # Right outcomes 5 for every cut up to 0.625: the tie goes to the lowest cut.
    assert report.recommended_cut == 0.45
    assert report.cut_rule == CUT_RULE

    # Folds by line id (q1: 0, q2: 1) and by OOD id (o1: 0, o2: 1, o3: 0). Chosen on fold 1
    # (q2 is wrong at any cut, o2 bluffs from 0.7): right outcomes peak from 0.45, the lowest
    # cut, which answers q1 twice (correct) and refuses o1 (0.641) on fold 0. Chosen on fold 0
    # (q1 correct, o1 bluffs from 0.65): 0.45 again; fold 1 answers q2 twice (wrong), refuses o2.
    today = report.gate_cv[0]
    assert today == GateCvRow("top_distance", RULE_RIGHT_OUTCOMES, 0.45, 0.45, 4, 0, 2, 3, 0)
    # Then every signal under the refusal-budget rule (no best_sentence: no sentence vectors).
    signals = ("gap", "standout", "agreement", "vocabulary", "coverage")
    assert [(r.signal, r.rule, r.in_total, r.ood_total) for r in report.gate_cv[1:7]] == [
        (s, RULE_BUDGET, 4, 3) for s in ("top_distance", *signals)]
    # Then top_distance + w * each other signal, w chosen per fold.
    assert [r.signal.split(" (w ")[0] for r in report.gate_cv[7:]] == [
        f"top_distance+w*{s}" for s in signals]


def test_evaluate_without_the_production_run_has_no_sweep(small_chunks: BuiltIndex,
                                                          hashed_embedder: HashedEmbedder):
    queries, errors = validate_gold(GOLD[:2], small_chunks.canonical)
    report = evaluate({"header": small_chunks.index}, hashed_embedder, queries, OOD, errors,
                      [RunKey("header", Retriever.BM25)])
    assert (report.sweep, report.recommended_cut, report.paired, report.gate_cv) == (
        [], None, [], [])
    assert [(s.retriever, s.style, s.recall[20], s.destroyed) for s in report.summary] == [
        ("bm25", "all", 0.5, 1), ("bm25", "question", 0.5, 1), ("bm25", "ticket", 0.5, 1)]


def test_evaluate_reports_the_ann_path_against_the_exact_one(small_chunks: BuiltIndex,
                                                             hashed_embedder: HashedEmbedder):
    queries, errors = validate_gold(GOLD[:2], small_chunks.canonical)
    assert small_chunks.index.ann is not None  # every built partition has its graph
    report = evaluate({"header": small_chunks.index}, hashed_embedder, queries, OOD, errors,
                      [RunKey("header", Retriever.BM25)])
    # Every query, gold and out-of-domain, on both paths; on a partition this small the
    # shortlist holds every row, so the paths agree exactly.
    assert report.ann == [AnnCheck("header", len(queries) + len(OOD), 10, 1.0, 1.0,
                                   len(queries) + len(OOD))]
    assert "ann_check" in report.timings
    without = evaluate({"header": small_chunks.index.with_ann(None)}, hashed_embedder, queries,
                       OOD, errors, [RunKey("header", Retriever.BM25)])
    assert without.ann == [] and "ann_check" not in without.timings


@pytest.fixture(scope="module")
def topics(tmp_path_factory: pytest.TempPathFactory, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    """240 chunks: more than the shortlist of 10 x 10 rows."""
    return build_index(tmp_path_factory.mktemp("evaluation_ann"), hashed_embedder, docs=topic_docs())


def test_ann_check_counts_a_missed_row(topics: BuiltIndex, hashed_embedder: HashedEmbedder):
    index = topics.index
    question = "how long before a network call times out"
    vector = QueryVector(hashed_embedder.spec.key, hashed_embedder.embed_query(question))
    exact_top = top_k(cosine_distances(index.vectors, vector.vector), 9)
    # Planted flaw: the graph is built with the exact top row's vector replaced by its opposite,
    # so the walk never shortlists that row: recall@9 must drop to 8/9 and the kept sources
    # differ. (At 10 the row the walk takes instead ties the 10th, one text twice: as good.)
    flawed = index.vectors.copy()
    flawed[exact_top[0]] = -flawed[exact_top[0]]
    graph = AnnIndex.build(flawed, threads=1)
    check = ann_check("header", index.with_ann(graph), [vector], [question],
                      RetrievalSettings(retriever=Retriever.DENSE, depth=10), k=9)
    assert (check.queries, check.k, check.dense_recall, check.worst_recall, check.same_sources) == (
        1, 9, 8 / 9, 8 / 9, 0)
