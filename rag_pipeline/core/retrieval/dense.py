"""Exact dense retrieval over unit vectors.

With unit-length vectors, cosine similarity is the dot product and cosine distance is
``1 - dot = ||a - b||^2 / 2``; the scan is one matrix-vector product over the whole partition.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController


def cosine_distances(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``1 - matrix @ query`` for unit rows and a unit query: cosine distance in [0, 2]."""
    if matrix.shape[1] != query.shape[0]:
        raise ValueError(f"query has {query.shape[0]} dimensions, the index {matrix.shape[1]}")
    with _blas().limit(limits=1):
        # A plain array: the product over a memory-mapped matrix (a numpy.memmap subclass) is
        # of the subclass too, and every later read of one element pays its indexing.
        return 1.0 - np.asarray(matrix @ query.astype(np.float32))


@cache
def _blas() -> ThreadpoolController:
    """numpy's BLAS pool, pinned to one thread around the scan: a matrix-vector product gains
    nothing from more, and idle BLAS threads keep spinning after it, fighting torch's threads
    for the cores (question embedding p90 95 ms -> 9 ms on two cores)."""
    return ThreadpoolController().select(user_api="blas")


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
