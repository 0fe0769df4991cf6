"""The chunk-target benchmark: its labels, its pairing of ranks, its tables, and one tiny run."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.benchmarks.chunk_targets import (
    BASELINE_TARGET,
    measure,
    paired_against_baseline,
    ranks_of,
    summary_markdown,
    target_label,
    target_run,
)
from rag_pipeline.core.config.gold_file import GoldLine
from rag_pipeline.core.evaluation.evaluate import EvalReport, PairedRow, RankRow, SummaryRow
from rag_pipeline.core.evaluation.gold import validate_gold
from rag_pipeline.core.index.ann import DensePath
from rag_pipeline.core.index.builders import ChunkStats
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.retrieval.retriever import RetrievalSettings
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder


def test_targets_are_scored_with_the_default_retriever_against_512():
    assert BASELINE_TARGET == 512
    assert target_label(384) == "header@384"
    assert target_run(256).label == "header@256/hybrid"
    # The default retriever, scored on the exact dense path as every evaluation run is.
    assert target_run(256).settings() == RetrievalSettings(dense_path=DensePath.EXACT)


def _rank(chunker: str, query: str, style: str, rank: int | None) -> RankRow:
    return RankRow(chunker, "hybrid", f"{query}/{style}", query, style, rank)


# Four queries, in scoring order q1/question, q1/ticket, q2/question, q2/ticket.
RANKS = [
    _rank("header@256", "q1", "question", 1), _rank("header@256", "q1", "ticket", 3),
    _rank("header@256", "q2", "question", None), _rank("header@256", "q2", "ticket", 9),
    _rank("header@512", "q1", "question", 2), _rank("header@512", "q1", "ticket", None),
    _rank("header@512", "q2", "question", 4), _rank("header@512", "q2", "ticket", 30),
]
STYLES = ["question", "ticket", "question", "ticket"]


def test_ranks_of_one_chunker_in_query_order():
    assert ranks_of(RANKS, "header@256") == [1, 3, None, 9]
    assert ranks_of(RANKS, "header@512") == [2, None, 4, 30]
    assert ranks_of(RANKS, "header@384") == []


def test_paired_against_baseline_at_4_and_20_per_style():
    report = EvalReport(4, 0, [], {}, RANKS, [], [], [], None, "")
    rows = paired_against_baseline(report, [256, 512], 512, STYLES)
    a, b = "header@256/hybrid", "header@512/hybrid"
    # k = 4: 256 finds q1/ticket (3) where 512 does not (None); 512 finds q2/question (4) where
    # 256 does not. k = 20: 256 also wins q2/ticket (9 against 30). One-sided discordance 1-0
    # gives p = 1.0, 2-0 gives 0.5, and 1-1 gives 1.0 (exact two-sided binomial).
    assert rows == [
        PairedRow(a, b, "all", 4, 1, 1, 1.0), PairedRow(a, b, "all", 20, 2, 1, 1.0),
        PairedRow(a, b, "question", 4, 0, 1, 1.0), PairedRow(a, b, "question", 20, 0, 1, 1.0),
        PairedRow(a, b, "ticket", 4, 1, 0, 1.0), PairedRow(a, b, "ticket", 20, 2, 0, 0.5),
    ]
    # The baseline is never compared with itself.
    assert paired_against_baseline(report, [512], 512, STYLES) == []


def test_summary_markdown():
    stats = {256: ChunkStats(chunks=10, truncated=1, embedded_wordpieces=900, header_wordpieces=90)}
    row = SummaryRow("header@256", "hybrid", "ticket", 2, {1: 0.5, 4: 0.5, 8: 1.0, 20: 1.0},
                     {1: (0.1, 0.9), 4: (0.09453, 0.90547), 8: (0.342, 1.0), 20: (0.342, 1.0)},
                     0.75, 1)
    assert summary_markdown(stats, [row], {"header@256": ["q7"]}, 256) == (
        "| target | chunks | over 256 wp | destroyed | style | n | R@4 [95% CI] | R@20 [95% CI] "
        "| MRR |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "| 256 | 10 | 1 | 1 | ticket | 2 | 0.500 [0.095, 0.905] | 1.000 [0.342, 1.000] | 0.750 |")


GOLD = [
    GoldLine("q1", "Version 2 removed the legacy XML exporter.",  # 42 characters
             "which exporter did version 2 remove", "where did the xml export go in v2"),
    # 70 and 72 characters: whole at 512, cut at word ends by a 66-character target, so both
    # are destroyed there and never found.
    GoldLine("q2", "Run the upgrade command twice when the lock file is older than a week.",
             "when should I run the upgrade command twice",
             "upgrade fails when my lock file is old, what now"),
    GoldLine("q3", "The configuration file lives in the home folder and is written in TOML.",
             "where does the configuration file live", "cant find my settings"),
]


def test_measure_on_the_tiny_corpus(tmp_path: Path, hashed_embedder: HashedEmbedder):
    records = extract_corpus(write_corpus(tmp_path / "corpus", TINY_DOCS)).records
    queries, errors = validate_gold(GOLD, {r.document_id: r.canonical_text for r in records})
    measured = measure(records, queries, errors, [66, 512], 512, hashed_embedder, tmp_path / "w")
    # At 512 one chunk per section (five sections); at 66 the four sections over 66 characters
    # are cut in two.
    assert {t: (s.chunks, s.truncated) for t, s in measured.stats.items()} == {
        66: (9, 0), 512: (5, 0)}
    assert measured.report.destroyed == {"header@66": ["q2", "q3"], "header@512": []}
    assert ranks_of(measured.report.ranks, "header@66") == [1, 1, None, None, None, None]
    assert ranks_of(measured.report.ranks, "header@512") == [1, 1, 1, 1, 1, 2]
    assert [(r.chunker, r.style, r.recall[4], r.destroyed) for r in measured.report.summary] == [
        ("header@66", "all", 2 / 6, 2), ("header@66", "question", 1 / 3, 2),
        ("header@66", "ticket", 1 / 3, 2), ("header@512", "all", 1.0, 0),
        ("header@512", "question", 1.0, 0), ("header@512", "ticket", 1.0, 0)]
    assert [(r.style, r.k, r.wins, r.losses, r.p) for r in measured.paired] == [
        ("all", 4, 0, 4, 0.125), ("all", 20, 0, 4, 0.125), ("question", 4, 0, 2, 0.5),
        ("question", 20, 0, 2, 0.5), ("ticket", 4, 0, 2, 0.5), ("ticket", 20, 0, 2, 0.5)]
    with pytest.raises(ValueError, match=r"the baseline 512 is not among the targets \[66\]"):
        measure(records, queries, errors, [66], 512, hashed_embedder, tmp_path / "x")
