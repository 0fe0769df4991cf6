"""Tests for ``rag_pipeline.core.retrieval.feedback``: RM3 weights and Rocchio vectors by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rag_pipeline.core.retrieval.feedback import rm3_query, rocchio_vector
from rag_pipeline.core.text.analyzers import Analyzer


def test_rm3_by_hand():
    # Feedback weights 3/4 and 1/4. P(w|d1): gamma 2/3, alpha 1/3; P(w|d2): delta 1.
    # P(w|R): gamma 1/2, alpha 1/4, delta 1/4; the top 2 are gamma, then alpha (ties by term).
    expanded = rm3_query("alpha beta", ["gamma gamma alpha", "delta"], [3.0, 1.0],
                         Analyzer.ENGLISH, n_terms=2, original_weight=0.5)
    assert expanded == pytest.approx({
        "alpha": 0.5 * 0.5 + 0.5 * 0.25 / 0.75,
        "beta": 0.5 * 0.5,
        "gamma": 0.5 * 0.5 / 0.75,
    }, abs=1e-12)
    assert sum(expanded.values()) == pytest.approx(1.0, abs=1e-12)


def test_rm3_zero_scores_weigh_feedback_uniformly():
    expanded = rm3_query("alpha", ["gamma", "delta"], [0.0, 0.0], Analyzer.ENGLISH, n_terms=2,
                         original_weight=0.0)
    assert expanded == {"alpha": 0.0, "gamma": 0.5, "delta": 0.5}


def test_rm3_rejects_bad_arguments():
    with pytest.raises(ValueError, match="2 feedback texts, 1 scores"):
        rm3_query("a", ["x", "y"], [1.0], Analyzer.ENGLISH)
    with pytest.raises(ValueError, match=r"original_weight must lie in \[0, 1\]"):
        rm3_query("a", ["x"], [1.0], Analyzer.ENGLISH, original_weight=1.5)
    with pytest.raises(ValueError, match="n_terms must be at least 1"):
        rm3_query("a", ["x"], [1.0], Analyzer.ENGLISH, n_terms=0)


def test_rocchio_by_hand():
    query = np.array([1.0, 0.0], np.float32)
    feedback = np.array([[0.0, 1.0], [0.0, 1.0]], np.float32)
    moved = rocchio_vector(query, feedback, beta=1.0)
    assert moved.dtype == np.float32
    assert moved.tolist() == pytest.approx([2 ** -0.5, 2 ** -0.5], abs=1e-7)
    assert rocchio_vector(query, feedback[:0], beta=1.0).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="beta must be non-negative"):
        rocchio_vector(query, feedback, beta=-0.1)
