"""Fusing ranked lists: reciprocal rank fusion (ranks only) and a convex combination of
min-max normalised scores (score-aware).

Reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009):
``score(d) = sum over rankings r containing d of w_r / (k + rank_r(d))``, rank 1-based, k = 60,
every weight 1 unless given (weighted RRF).

Convex combination (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval",
ACM TOIS 2023): each list's scores are min-max normalised over the list itself,
``(s - min) / (max - min)``, and ``score(d) = sum_r w_r * norm_r(d)``, 0 where ``d`` is not in
list ``r``; a list whose scores are all equal normalises to 1 for each of its items.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from enum import StrEnum
from typing import TypeVar

RRF_K = 60

__all__ = ["RRF_K", "Fusion", "min_max_fusion", "reciprocal_rank_fusion"]

T = TypeVar("T", bound=Hashable)


class Fusion(StrEnum):
    """``rrf``: (weighted) reciprocal rank fusion. ``minmax``: convex combination of min-max
    normalised scores."""

    RRF = "rrf"
    MIN_MAX = "minmax"


def _check_weights(n_lists: int, weights: Sequence[float] | None) -> Sequence[float]:
    if weights is None:
        return [1.0] * n_lists
    if len(weights) != n_lists:
        raise ValueError(f"{len(weights)} weights for {n_lists} lists")
    if any(w < 0 for w in weights):
        raise ValueError(f"weights must be non-negative, got {list(weights)}")
    return weights


def _best_first(scores: dict[T, float]) -> list[tuple[T, float]]:
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[T]], k: int = RRF_K,
                           weights: Sequence[float] | None = None) -> list[tuple[T, float]]:
    """Fused ``(item, score)`` pairs, best first; ties keep the order of first appearance.

    Args:
        rankings: Ranked lists, best first.
        k: The RRF constant, non-negative.
        weights: One non-negative weight per list (default: 1 each).
    """
    if k < 0:
        raise ValueError(f"k must be non-negative, got {k}")
    weights = _check_weights(len(rankings), weights)
    scores: dict[T, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return _best_first(scores)


def min_max_fusion(scored: Sequence[Sequence[tuple[T, float]]],
                   weights: Sequence[float] | None = None) -> list[tuple[T, float]]:
    """Convex combination of min-max normalised scores, best first; ties keep the order of
    first appearance.

    Args:
        scored: Per list, ``(item, score)`` pairs (higher is better).
        weights: One non-negative weight per list (default: 1 each).
    """
    weights = _check_weights(len(scored), weights)
    fused: dict[T, float] = {}
    for pairs, weight in zip(scored, weights, strict=True):
        if not pairs:
            continue
        values = [score for _, score in pairs]
        low, high = min(values), max(values)
        for item, score in pairs:
            norm = (score - low) / (high - low) if high > low else 1.0
            fused[item] = fused.get(item, 0.0) + weight * norm
    return _best_first(fused)
