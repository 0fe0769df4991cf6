"""Tests for ``rag_pipeline.core.evaluation.catalogue``: the default runs and their labels, the
candidates against ``before``, and the pairs compared only where both sides ran."""

from __future__ import annotations

from rag_pipeline.core.evaluation.catalogue import (
    CANDIDATES,
    RunKey,
    candidate_pairs,
    candidate_run,
    candidate_runs,
    default_pairs,
    default_runs,
)
from rag_pipeline.core.retrieval.fusion import Fusion
from rag_pipeline.core.retrieval.retriever import DEFAULT_ANALYZER, RetrievalSettings, Retriever
from rag_pipeline.core.text.analyzers import Analyzer


def test_default_runs_and_their_labels():
    # The default analyzer (code) goes unnamed; the first other one (plain) is named in the label.
    assert DEFAULT_ANALYZER is Analyzer.CODE
    runs = default_runs(["blind", "header"])
    assert [r.label for r in runs] == [
        "blind/dense", "blind/bm25", "blind/hybrid",
        "header/dense", "header/bm25", "header/hybrid",
        "header/bm25[plain]", "header/hybrid[plain]", "header/hybrid[no-collapse]"]
    assert RunKey("header", Retriever.DENSE, Analyzer.PLAIN).label == "header/dense"
    settings = RunKey("header", Retriever.HYBRID, Analyzer.ENGLISH, collapse=False).settings()
    assert (settings.retriever, settings.analyzer, settings.collapse_duplicates) == (
        Retriever.HYBRID, Analyzer.ENGLISH, False)
    assert RunKey("header", Retriever.HYBRID, Analyzer.ENGLISH).label == "header/hybrid[english]"


def test_candidates_are_measured_against_before():
    assert CANDIDATES["before"] == RetrievalSettings(Retriever.HYBRID, Analyzer.ENGLISH,
                                                     fusion=Fusion.RRF, dense_weight=1.0)
    # The adopted default is the candidate code+minmax-dense2 (collapse and depth unchanged).
    assert CANDIDATES["code+minmax-dense2"] == RetrievalSettings()
    runs = [RunKey("header", Retriever.HYBRID), *candidate_runs("header")]
    assert runs[1] == candidate_run("header", "before")
    assert runs[1].label == "header/hybrid[before]"
    pairs = candidate_pairs(runs)
    assert [(a.label, b.label) for a, b in pairs[:2]] == [
        ("header/hybrid", "header/hybrid[before]"), ("header/hybrid[code]", "header/hybrid[before]")]
    assert len(pairs) == len(CANDIDATES)  # the default, and every candidate but before itself


def test_default_pairs_only_where_both_sides_ran():
    pairs = default_pairs(default_runs(["blind", "header"]))
    assert [(a.label, b.label) for a, b in pairs] == [
        ("header/hybrid", "blind/hybrid"),
        ("header/hybrid", "header/dense"),
        ("header/hybrid", "header/bm25"),
        ("header/hybrid", "header/hybrid[no-collapse]"),
        ("header/bm25[plain]", "header/bm25"),
        ("header/hybrid[plain]", "header/hybrid"),
    ]
    assert default_pairs([RunKey("blind", Retriever.HYBRID)]) == []
