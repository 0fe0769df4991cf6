"""Tests for ``core.retrieval.dense``: distances against brute force, top-k against a full sort."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag_pipeline.core.retrieval.dense import cosine_distances, top_k


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def brute_force_top(distances: np.ndarray, k: int) -> list[int]:
    """Full sort by (distance, index): the order top_k promises."""
    return sorted(range(len(distances)), key=lambda i: (distances[i], i))[:k]


def test_cosine_distance_by_hand():
    matrix = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    query = np.array([1.0, 0.0], dtype=np.float32)
    # 1 - cos: same direction 0, orthogonal 1, opposite 2, and 1 - 0.6.
    np.testing.assert_allclose(cosine_distances(matrix, query), [0.0, 1.0, 2.0, 0.4], atol=1e-7)


def test_cosine_distance_is_half_squared_euclidean_for_unit_vectors():
    rng = np.random.default_rng(7)
    matrix = unit_rows(rng, 50, 16)
    query = unit_rows(rng, 1, 16)[0]
    expected = np.array([np.sum((row.astype(np.float64) - query) ** 2) / 2 for row in matrix])
    np.testing.assert_allclose(cosine_distances(matrix, query), expected, atol=1e-6)


def test_cosine_distance_is_one_minus_brute_force_cosine():
    rng = np.random.default_rng(11)
    matrix = unit_rows(rng, 40, 384)
    query = unit_rows(rng, 1, 384)[0]
    expected = []
    for row in matrix:
        dot = sum(float(a) * float(b) for a, b in zip(row, query, strict=True))
        norms = (sum(float(a) ** 2 for a in row) * sum(float(b) ** 2 for b in query)) ** 0.5
        expected.append(1.0 - dot / norms)
    np.testing.assert_allclose(cosine_distances(matrix, query), expected, atol=1e-6)


def test_dimension_mismatch_raises():
    with pytest.raises(ValueError, match=r"^query has 3 dimensions, the index 4$"):
        cosine_distances(np.zeros((2, 4), np.float32), np.zeros(3, np.float32))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 5, 37, 200, 250])
def test_top_k_equals_full_argsort_on_random_unit_vectors(seed: int, k: int):
    rng = np.random.default_rng(seed)
    matrix = unit_rows(rng, 200, 32)
    query = unit_rows(rng, 1, 32)[0]
    distances = cosine_distances(matrix, query)
    expected = brute_force_top(distances, k)
    got = top_k(distances, k)
    assert got.tolist() == expected
    assert len(got) == min(k, 200)


def test_top_k_ties_broken_by_index_inside_the_top():
    # Planted ties, all inside the top 4: rows 1, 3, 5 share 0.2; rows 0 and 4 share 0.1.
    distances = np.array([0.1, 0.2, 0.9, 0.2, 0.1, 0.2, 0.8], dtype=np.float32)
    assert top_k(distances, 5).tolist() == [0, 4, 1, 3, 5]
    assert top_k(distances, 7).tolist() == [0, 4, 1, 3, 5, 6, 2]
    assert top_k(distances, 99).tolist() == [0, 4, 1, 3, 5, 6, 2]


def test_top_k_ties_at_the_cut_broken_by_index():
    # Rows 2 and 3 tie for first place; with k=1 the lower index must win.
    assert top_k(np.array([1.0, 1.0, 0.0, 0.0]), 1).tolist() == [2]


def test_top_k_of_nothing():
    assert top_k(np.array([0.3, 0.1]), 0).tolist() == []
    assert top_k(np.array([0.3, 0.1]), -2).tolist() == []
    assert top_k(np.zeros(0, np.float32), 3).tolist() == []


def _numpy_blas_threads() -> list[int]:
    """The size of numpy's own BLAS pool (scipy's, loaded by another test, is not the scan's)."""
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas" and "numpy" in Path(lib["filepath"]).parent.name]


class _ThreadsSeen:
    """A stand-in matrix that records numpy's BLAS pool size while the product runs."""

    shape = (1, 2)

    def __init__(self) -> None:
        self.threads: list[int] = []

    def __matmul__(self, query: np.ndarray) -> np.ndarray:
        self.threads += _numpy_blas_threads()
        return np.array([0.25], dtype=np.float32)


def test_the_scan_runs_on_one_blas_thread_and_restores_the_pool():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        matrix = _ThreadsSeen()
        assert cosine_distances(matrix, np.array([1.0, 0.0], dtype=np.float32)).tolist() == [0.75]
        after = _numpy_blas_threads()
    assert matrix.threads == [1]
    assert after == [2]
