"""Exact dense retrieval over unit vectors.

With unit-length vectors, cosine similarity is the dot product and cosine distance is
``1 - dot = ||a - b||^2 / 2``; the scan is one matrix-vector product over the whole partition.
"""

from __future__ import annotations

import numpy as np


def cosine_distances(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``1 - matrix @ query`` for unit rows and a unit query: cosine distance in [0, 2]."""
    if matrix.shape[1] != query.shape[0]:
        raise ValueError(f"query has {query.shape[0]} dimensions, the index {matrix.shape[1]}")
    return 1.0 - matrix @ query.astype(np.float32)


def top_k(distances: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` smallest distances, closest first (ties broken by index)."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, len(distances))
    if k < len(distances):
        kth = np.partition(distances, k - 1)[k - 1]
        below = np.flatnonzero(distances < kth)
        tied = np.flatnonzero(distances == kth)[:k - len(below)]
        part = np.concatenate([below, tied])
    else:
        part = np.arange(len(distances))
    return part[np.lexsort((part, distances[part]))]
