"""Approximate dense search: an HNSW graph over int8 vectors, its shortlist rescored exactly.

The graph (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
Hierarchical Navigable Small World graphs", TPAMI 2020; built by usearch) holds one int8 code
per chunk: the float32 unit vector times one global scale, rounded. Cosine distance is
invariant to a common scale, so the codes differ from the vectors only by rounding. A question
walks the graph for a shortlist of ``SHORTLIST_FACTOR x k`` rows; the shortlist is then rescored
with the partition's own float32 vectors, so every distance a caller sees (the gate, the
citations, fusion) is the exact ``1 - v . q`` of :mod:`rag_pipeline.core.retrieval.dense`; only which rows
make the shortlist is approximate, and that is measured as recall against the exact scan.

Refusal signals and the shortlist (``core/answer/refusal.py``): ``top_distance`` (the gate's),
``gap`` (the 10th distance), ``agreement`` (dense top 10) and ``coverage`` (dense top 4) read
only ranks inside the shortlist, exactly rescored. ``standout`` reads the mean and standard
deviation of the distances to *every* chunk; those are kept exact without a scan by the
vectors' first and second moments (:class:`DistanceMoments`): ``mean(d) = 1 - c . q`` and
``var(d) = q^T G q - (c . q)^2`` with ``c`` the mean vector and ``G = V^T V / n``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from usearch.index import Index

# usearch is imported only where a graph is built or opened: imported before pyarrow's S3
# filesystem first connects, it leaves every S3 request of the process failing with
# NETWORK_CONNECTION (seen with `rag-pipeline --warehouse s3://... status`, whose CLI imports this
# module through retrieval; the deployment test's CLI step covers it).

__all__ = [
    "CONNECTIVITY",
    "CROSSOVER_ROWS",
    "EXACT_RANKS",
    "EXPANSION_ADD",
    "EXPANSION_SEARCH",
    "SHORTLIST_FACTOR",
    "AnnIndex",
    "AnnMismatchError",
    "DensePath",
    "DistanceMoments",
    "choose_path",
    "quantise",
    "recall_at_k",
    "vectors_fingerprint",
]

CONNECTIVITY = 16
"""HNSW's M: edges per node (usearch's and faiss's default; README, "Approximate search")."""
EXPANSION_ADD = 128
"""Candidate list while building (efConstruction)."""
EXPANSION_SEARCH = 512
"""Candidate list while searching (ef); at least the shortlist. Measured on the 100x copies
(README, "Approximate search"): recall@10 0.85 at 128, 0.91 at 256, 0.94 at 512, 0.95 at 1024
and 0.98 at 2048, the walk and rescoring costing 2.7, 9.5, 15.2, 30.6 and 73.4 ms a question at
a load average of 35-42; past 512 each doubling buys 0.01-0.03 for twice the time."""
SHORTLIST_FACTOR = 10
"""Rows fetched from the graph per row that must be right, then rescored exactly."""
EXACT_RANKS = 10
"""The ranks the shortlist is sized for: ``SHORTLIST_FACTOR x min(k, EXACT_RANKS)`` rows (at least
``k``). The gate, the citations and every refusal signal read the top 10 at most; a deeper dense
list (fusion's depth of 100) takes its lower ranks from the same shortlist instead of walking the
graph ten times as far (measured at 1,275 chunks: a shortlist of 1,000 costs 17 ms, of 100
about 1 ms)."""
MIN_SELF_RECALL = 0.99
"""An index serves automatically only when its own build measured at least this recall@10
against the exact scan (:func:`self_recall`); below it the exact scan serves, whatever the size."""
SELF_CHECK_QUERIES = 200
"""Stored vectors asked of a freshly built graph (seeded choice) to measure its recall."""
CROSSOVER_ROWS = 30_000
"""Below this many chunks the exact scan serves: it is as fast as the graph walk there and has
nothing to miss (measured on this machine, README, "Approximate search")."""
INT8_MAX = 127


class AnnMismatchError(Exception):
    """An ANN index that was not built from the vectors it is asked to serve."""


class DensePath(StrEnum):
    """How the dense side found its rows: a scan of every vector, or the graph's shortlist."""

    EXACT = "exact"
    ANN = "ann"


def choose_path(rows: int, has_ann: bool, crossover: int = CROSSOVER_ROWS) -> DensePath:
    """The exact scan below ``crossover`` rows or without a trusted index (one whose measured
    recall reached :data:`MIN_SELF_RECALL`), the graph from there on."""
    return DensePath.ANN if has_ann and rows >= crossover else DensePath.EXACT


def quantise(vectors: np.ndarray, scale: float | None = None,
             block: int = 65_536) -> tuple[np.ndarray, float]:
    """int8 codes ``round(v * scale)`` clipped to [-127, 127], one scale for every dimension.

    Args:
        vectors: A float matrix (one row per vector; memory-mapped is fine: it is read in blocks).
        scale: The scale to use (a question uses its index's); default ``127 / max |v|``.
        block: Rows converted at a time (bounds the float temporaries).

    Returns:
        The codes and the scale used.
    """
    if scale is None:
        peak = max((float(np.abs(vectors[s:s + block]).max()) for s in range(0, len(vectors), block)),
                   default=0.0) if vectors.size else 0.0
        scale = INT8_MAX / peak if peak > 0 else 1.0
    codes = np.empty(vectors.shape, np.int8)
    for start in range(0, len(vectors), block):
        part = np.asarray(vectors[start:start + block], np.float32) * np.float32(scale)
        codes[start:start + block] = np.clip(np.rint(part), -INT8_MAX, INT8_MAX)
    return codes, float(scale)


FINGERPRINT_ROWS = 4_096


def vectors_fingerprint(vectors: np.ndarray, rows: int = FINGERPRINT_ROWS) -> str:
    """BLAKE2b of the matrix's shape and of ``rows`` evenly spaced float32 rows (first and last
    included), in row order: another partition, model, order or size changes it, and it costs
    the same at any size (hashing all of 1.3 M vectors takes 8 s on this machine, on every
    load). Which exact vectors an index was built from is the table's job: it records the
    embeddings and chunks files (content-named, immutable) and the generation must name the
    same ones."""
    matrix = np.asarray(vectors, dtype=np.float32)
    picked = np.unique(np.linspace(0, len(matrix) - 1, min(len(matrix), rows)).round().astype(np.int64))
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.asarray(matrix.shape, np.int64).tobytes())
    digest.update(np.ascontiguousarray(matrix[picked]).tobytes())
    return digest.hexdigest()


def recall_at_k(approximate: np.ndarray, exact: np.ndarray) -> float:
    """The share of the exact top ``k`` rows that the approximate top ``k`` holds
    (``k = len(exact)``); 1.0 when both are empty."""
    if len(exact) == 0:
        return 1.0
    return len(set(approximate[:len(exact)].tolist()) & set(exact.tolist())) / len(exact)


def self_recall(index: AnnIndex, vectors: np.ndarray, queries: int = SELF_CHECK_QUERIES,
                k: int = EXACT_RANKS, seed: int = 0) -> float:
    """Mean recall@``k`` of ``index`` against the exact scan, asked with ``queries`` of its own
    stored vectors (a seeded choice of rows; every row when there are fewer)."""
    matrix = np.asarray(vectors, np.float32)
    rows = np.arange(len(matrix)) if len(matrix) <= queries else np.sort(
        np.random.default_rng(seed).choice(len(matrix), queries, replace=False))
    k = min(k, len(matrix))
    recalls = []
    for start in range(0, len(rows), 16):
        block = matrix[rows[start:start + 16]]
        scores = block @ matrix.T
        for query, row_scores in zip(block, scores, strict=True):
            exact = np.argpartition(-row_scores, k - 1)[:k]
            found, _ = index.search(matrix, query, k)
            recalls.append(recall_at_k(found, exact))
    return float(np.mean(recalls))


@dataclass(frozen=True)
class DistanceMoments:
    """The first and second moments of a partition's unit vectors: the mean and standard
    deviation of a question's cosine distance to every chunk, without scanning them."""

    centroid: np.ndarray
    """``c = mean(v)``."""
    gram: np.ndarray
    """``G = V^T V / n``."""

    @classmethod
    def of(cls, vectors: np.ndarray, block: int = 65_536) -> DistanceMoments:
        matrix = np.asarray(vectors, np.float32)
        n, width = matrix.shape
        if n == 0:
            raise ValueError("no vectors: their moments are undefined")
        total = np.zeros(width, np.float64)
        gram = np.zeros((width, width), np.float64)
        for start in range(0, n, block):
            part = matrix[start:start + block].astype(np.float64)
            total += part.sum(axis=0)
            gram += part.T @ part
        return cls(total / n, gram / n)

    def mean_and_std(self, query: np.ndarray) -> tuple[float, float]:
        """Mean and (population) standard deviation of ``1 - v . q`` over every vector."""
        q = np.asarray(query, np.float64)
        mean_dot = float(self.centroid @ q)
        variance = float(q @ self.gram @ q) - mean_dot * mean_dot
        return 1.0 - mean_dot, float(np.sqrt(max(variance, 0.0)))


@dataclass(frozen=True)
class AnnIndex:
    """An HNSW graph over a partition's int8 codes, tied to the float32 vectors it was built
    from (rows in the same order: a graph key is a row)."""

    graph: Index
    """The usearch graph (keys are rows)."""
    scale: float
    rows: int
    fingerprint: str
    moments: DistanceMoments
    measured_recall: float | None = None
    """Recall@10 against the exact scan measured when the graph was built (:func:`self_recall`);
    none for a graph whose table does not record it, which then never serves automatically."""

    @property
    def trusted(self) -> bool:
        """Whether the graph may serve without being asked for by name."""
        return self.measured_recall is not None and self.measured_recall >= MIN_SELF_RECALL

    @classmethod
    def build(cls, vectors: np.ndarray, *, connectivity: int = CONNECTIVITY,
              expansion_add: int = EXPANSION_ADD, threads: int = 0) -> AnnIndex:
        """Quantises the unit vectors and links them into a graph (``threads`` 0: every core)."""

        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or len(matrix) == 0:
            raise ValueError(f"an ANN index needs a non-empty matrix of vectors, got shape {matrix.shape}")
        from usearch.index import Index  # imported late: see the note at the top

        codes, scale = quantise(matrix)
        graph = Index(ndim=matrix.shape[1], metric="cos", dtype="i8", connectivity=connectivity,
                      expansion_add=expansion_add, expansion_search=EXPANSION_SEARCH,
                      enable_key_lookups=False)
        graph.add(np.arange(len(matrix), dtype=np.uint64), codes, threads=threads)
        built = cls(graph, scale, len(matrix), vectors_fingerprint(matrix), DistanceMoments.of(matrix))
        return replace(built, measured_recall=self_recall(built, matrix))

    def save(self, path: Path) -> None:
        """Writes the graph (codes included) to ``path``; scale, rows, fingerprint and moments
        are the caller's to store beside it (the ``ann_index`` table)."""
        self.graph.save(str(path))

    @classmethod
    def open(cls, path: Path, *, scale: float, rows: int, fingerprint: str,
             moments: DistanceMoments, measured_recall: float | None = None) -> AnnIndex:
        """Memory-maps a saved graph (pages are read as the walk touches them)."""

        from usearch.index import Index  # imported late: see the note at the top

        graph = Index.restore(str(path), view=True)
        if graph is None:
            raise AnnMismatchError(f"{path} is not a usearch index")
        if len(graph) != rows:
            raise AnnMismatchError(f"the ANN graph {path} holds {len(graph)} vectors, its table says {rows}")
        graph.expansion_search = EXPANSION_SEARCH
        return cls(graph, scale, rows, fingerprint, moments, measured_recall)

    def check_serves(self, vectors: np.ndarray, fingerprint: str | None = None) -> None:
        """Raises :class:`AnnMismatchError` unless the index was built from exactly ``vectors``
        (count, then the fingerprint: given, or computed from ``vectors``)."""
        if len(vectors) != self.rows:
            raise AnnMismatchError(f"the ANN index holds {self.rows} vectors, the partition {len(vectors)}")
        seen = fingerprint if fingerprint is not None else vectors_fingerprint(vectors)
        if seen != self.fingerprint:
            raise AnnMismatchError(f"the ANN index was built from vectors {self.fingerprint}, the "
                                   f"partition holds {seen}: rebuild the index")

    def search(self, vectors: np.ndarray, query: np.ndarray, k: int,
               shortlist_factor: int = SHORTLIST_FACTOR) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows closest to ``query`` among the graph's shortlist (``shortlist_factor x
        min(k, EXACT_RANKS)`` rows, at least ``k``), closest first (ties by row), with their exact
        cosine distances from the float32 ``vectors``."""
        if k <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        wanted = min(self.rows, max(min(k, EXACT_RANKS) * shortlist_factor, k))
        codes, _ = quantise(query[None, :], self.scale)
        found = self.graph.search(codes[0], wanted, threads=1)
        rows = np.asarray(found.keys, dtype=np.int64)
        rows = rows[(rows >= 0) & (rows < self.rows)]
        distances = 1.0 - vectors[rows] @ np.asarray(query, np.float32)
        order = np.lexsort((rows, distances))[:k]
        return rows[order], distances[order]
