"""Pseudo-relevance feedback: the first pass's top chunks rewrite the query for a second pass.

Two sides, each off by default:

- **RM3 on the BM25 side** (Abdul-Jaleel et al., "UMass at TREC 2004", as Anserini implements
  it): the relevance model ``P(w|R) = sum_d P(w|d) * P(d|q)`` over the feedback chunks, with
  ``P(w|d) = tf(w, d) / |d|`` (the analyzer's terms) and ``P(d|q)`` the chunk's first-pass
  score normalised to sum 1; the ``n_terms`` most probable terms, renormalised, are mixed with
  the original query's term distribution: ``q' = lambda * q + (1 - lambda) * P(.|R)``.
- **Rocchio on the dense side** (Rocchio 1971): ``q' = normalise(q + beta * mean(d))`` over the
  feedback chunks' unit vectors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from rag_pipeline.core.text.analyzers import Analyzer, analyze

__all__ = ["rm3_query", "rocchio_vector"]


def rm3_query(question: str, feedback_texts: Sequence[str], feedback_scores: Sequence[float],
              analyzer: Analyzer, n_terms: int = 10, original_weight: float = 0.5,
              ) -> dict[str, float]:
    """The RM3-expanded query as ``{term: weight}`` (weights sum to 1).

    Args:
        question: The user's question.
        feedback_texts: The first pass's top chunk texts, best first.
        feedback_scores: Their first-pass scores (non-negative; all zero means uniform).
        analyzer: The BM25 analyzer, so expansion terms are index terms.
        n_terms: How many expansion terms to keep.
        original_weight: ``lambda``, the original query's share, in [0, 1].

    Raises:
        ValueError: On mismatched lengths, a negative score, ``n_terms < 1`` or a weight
            outside [0, 1].
    """
    if len(feedback_texts) != len(feedback_scores):
        raise ValueError(f"{len(feedback_texts)} feedback texts, {len(feedback_scores)} scores")
    if any(s < 0 for s in feedback_scores):
        raise ValueError("feedback scores must be non-negative")
    if n_terms < 1:
        raise ValueError(f"n_terms must be at least 1, got {n_terms}")
    if not 0.0 <= original_weight <= 1.0:
        raise ValueError(f"original_weight must lie in [0, 1], got {original_weight}")
    query_terms = Counter(analyze(question, analyzer))
    total_q = sum(query_terms.values())
    original = {t: c / total_q for t, c in query_terms.items()} if total_q else {}
    total_s = sum(feedback_scores)
    doc_weights = ([s / total_s for s in feedback_scores] if total_s > 0
                   else [1.0 / len(feedback_texts)] * len(feedback_texts))
    relevance: dict[str, float] = {}
    for text, weight in zip(feedback_texts, doc_weights, strict=True):
        terms = Counter(analyze(text, analyzer))
        length = sum(terms.values())
        if length == 0:
            continue
        for term, tf in terms.items():
            relevance[term] = relevance.get(term, 0.0) + weight * tf / length
    top = sorted(relevance.items(), key=lambda pair: (-pair[1], pair[0]))[:n_terms]
    top_total = sum(w for _, w in top)
    if top_total == 0:
        return original
    expanded: dict[str, float] = {t: original_weight * w for t, w in original.items()}
    if not original:
        original_weight = 0.0
    for term, weight in top:
        expanded[term] = expanded.get(term, 0.0) + (1.0 - original_weight) * weight / top_total
    return expanded


def rocchio_vector(query: np.ndarray, feedback_vectors: np.ndarray, beta: float) -> np.ndarray:
    """``normalise(q + beta * mean(feedback))``, float32; the query itself when there is no
    feedback vector.

    Raises:
        ValueError: If ``beta`` is negative.
    """
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got {beta}")
    if len(feedback_vectors) == 0:
        return query.astype(np.float32)
    moved = query.astype(np.float64) + beta * feedback_vectors.astype(np.float64).mean(axis=0)
    return (moved / np.linalg.norm(moved)).astype(np.float32)
