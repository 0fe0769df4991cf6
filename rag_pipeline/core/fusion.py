"""Reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009): ranks only, no scores.

``score(d) = sum over rankings r containing d of 1 / (k + rank_r(d))``, rank 1-based, k = 60.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

RRF_K = 60

__all__ = ["RRF_K", "reciprocal_rank_fusion"]

T = TypeVar("T", bound=Hashable)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[T]], k: int = RRF_K) -> list[tuple[T, float]]:
    """Fused ``(item, score)`` pairs, best first; ties keep the order of first appearance."""
    if k < 0:
        raise ValueError(f"k must be non-negative, got {k}")
    scores: dict[T, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))
