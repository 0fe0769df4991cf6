"""Approximate dense search: an inverted file over 8-bit codes, its shortlist rescored exactly.

The index (IVF: Jégou, Douze & Schmid, "Product quantization for nearest neighbor search", TPAMI
2011, section on the inverted file; built by faiss, MIT) splits the partition's unit vectors into
``nlist`` cells by k-means and stores each vector in its cell as an 8-bit code (faiss's scalar
quantiser: per-dimension ranges learnt from the vectors). A question ranks the cells' centroids,
scans every code of its ``nprobe`` closest cells for a shortlist of ``SHORTLIST_FACTOR x k``
rows, and the shortlist is then rescored with the partition's own float32 vectors, so every
distance a caller sees (the gate, the citations, fusion) is the exact ``1 - v . q`` of
:mod:`rag_pipeline.core.retrieval.dense`; only which rows make the shortlist is approximate, and
that is measured as recall against the exact scan.

``nprobe`` is chosen when the index is built (:func:`calibrate_nprobe`): the smallest of
:data:`NPROBES` whose recall@10 against the exact scan reaches :data:`CALIBRATION_RECALL` on
calibration questions (:func:`calibration_questions`: sums of a few stored vectors, whose
neighbours lie in several cells, as a real question's often do). The same figure, measured on
other seeded questions, is the index's ``measured_recall``; an index serves by itself only when
it reaches :data:`MIN_SELF_RECALL`.

Refusal signals and the shortlist (``core/answer/refusal.py``): ``top_distance`` (the gate's),
``gap`` (the 10th distance), ``agreement`` (dense top 10) and ``coverage`` (dense top 4) read
only ranks inside the shortlist, exactly rescored. ``standout`` reads the mean and standard
deviation of the distances to *every* chunk: it is measured by the evaluation, which scores on
the exact path, and is no signal the service's gate reads.

Why an inverted file and not the HNSW graph this module held before (usearch, int8, M 16): on
the scale benchmark's 1,275,000 chunks the graph's rescored recall@10 was 0.763 at ef 512 (16.6
ms for the whole in-process retrieve) where this index reaches 0.996 at its calibrated nprobe of
16 (1.3 ms for the search and rescoring; README, "Approximate search"); it also builds faster
(167 s against 244 s) and takes less room (0.47 against 0.63 GB).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from rag_pipeline.core.index.access import Readable

# faiss is imported only where an index is built or opened: the CLI imports this module through
# retrieval, and a native library loaded before pyarrow's S3 filesystem first connects has left
# every S3 request failing with NETWORK_CONNECTION (seen with usearch, this module's former
# library; the deployment test's CLI step covers it).

__all__ = [
    "CALIBRATION_RECALL",
    "CROSSOVER_ROWS",
    "EXACT_RANKS",
    "MIN_SELF_RECALL",
    "NPROBES",
    "SHORTLIST_FACTOR",
    "AnnIndex",
    "AnnMismatchError",
    "DensePath",
    "calibrate_nprobe",
    "calibration_questions",
    "choose_path",
    "list_count",
    "recall_at_k",
    "vectors_fingerprint",
]

NPROBES = (8, 16, 32, 64, 128, 256, 512)
"""The cell counts a build tries, smallest first, when it calibrates ``nprobe``."""
CALIBRATION_RECALL = 0.995
"""The recall@10 the calibration asks of the chosen ``nprobe``."""
MIXED_ROWS = 4
"""Stored rows summed into one calibration question (:func:`calibration_questions`)."""
ROWS_PER_CENTROID = 39
"""faiss's floor of training vectors per centroid: fewer cells than ``rows / 39`` are never asked for."""
TRAINING_ROWS_PER_CENTROID = 64
"""Vectors sampled per cell to train the k-means (seeded; all of them when there are fewer)."""
SHORTLIST_FACTOR = 10
"""Rows fetched from the index per row that must be right, then rescored exactly."""
EXACT_RANKS = 10
"""The ranks the shortlist is sized for: ``SHORTLIST_FACTOR x min(k, EXACT_RANKS)`` rows (at least
``k``). The gate, the citations and every refusal signal read the top 10 at most; a deeper dense
list (fusion's depth of 100) takes its lower ranks from the same shortlist."""
MIN_SELF_RECALL = 0.99
"""An index serves automatically only when its build measured at least this recall@10 against
the exact scan; below it the exact scan serves, whatever the size."""
SELF_CHECK_QUERIES = 200
"""Calibration questions a build asks (seeded; another seed measures ``measured_recall``)."""
CROSSOVER_ROWS = 30_000
"""Below this many chunks the exact scan serves: it is as fast as the index there and has
nothing to miss (measured on this machine, README, "Approximate search")."""


FILTER_EXACT_SELECTIVITY = 0.05
"""Below this share of readable rows a filtered search scans the readable rows exactly: the
cells would have to be scanned nearly all to find enough readable codes, and the exact scan of
so few rows costs less (measured by :mod:`rag_pipeline.benchmarks.access`)."""


def _exact_within(vectors: np.ndarray, query: np.ndarray, rows: np.ndarray,
                  k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` of ``rows`` (ascending) closest to ``query``, exactly, closest first."""
    distances = 1.0 - vectors[rows] @ query
    order = np.lexsort((rows, distances))[:k]
    return rows[order], distances[order]


class AnnMismatchError(Exception):
    """An ANN index that was not built from the vectors it is asked to serve."""


class DensePath(StrEnum):
    """How the dense side found its rows: a scan of every vector, or the index's shortlist."""

    EXACT = "exact"
    ANN = "ann"


def choose_path(rows: int, has_ann: bool, crossover: int = CROSSOVER_ROWS) -> DensePath:
    """The exact scan below ``crossover`` rows or without a trusted index (one whose measured
    recall reached :data:`MIN_SELF_RECALL`), the index from there on."""
    return DensePath.ANN if has_ann and rows >= crossover else DensePath.EXACT


def list_count(rows: int) -> int:
    """The number of cells for ``rows`` vectors: ``2 sqrt(rows)`` (faiss's guidance is 4 to 16
    ``sqrt(rows)`` for its own flat scans; fewer, larger cells suit a scan of 8-bit codes that
    costs little per row), at most ``rows / 39`` so every centroid trains on enough vectors, at
    least 1. 1,275,000 rows: 2,258 cells of 565 rows on average."""
    return max(1, min(round(2 * math.sqrt(rows)), rows // ROWS_PER_CENTROID))


def calibration_questions(vectors: np.ndarray, count: int, seed: int, mix: int = MIXED_ROWS) -> np.ndarray:
    """``count`` seeded questions without a model: each the renormalised sum of ``mix`` stored
    rows drawn at random (with replacement).

    A question that draws on several chunks at once is the hard case for cells: its neighbours
    lie in several of them. Measured on the scale benchmark's 1,275,000 chunks, the recall of
    mixes of 4 at nprobe 8, 16, 32, 64 (0.982, 0.9985, 0.9995, 0.9995) follows the bundled
    questions' own (0.986, 0.996, 0.999, 1.0), where stored vectors moved by isotropic noise to
    the questions' distance, or midpoints of two rows, reach 0.998 to 1.0 already at 8 and would
    calibrate too few cells.
    """
    matrix = np.asarray(vectors, np.float32)
    picked = np.random.default_rng(seed).integers(0, len(matrix), (count, mix))
    mixed = matrix[picked.ravel()].reshape(count, mix, -1).sum(axis=1)
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    return mixed / np.where(norms > 0, norms, 1.0)


FINGERPRINT_ROWS = 4_096


def vectors_fingerprint(vectors: np.ndarray, rows: int = FINGERPRINT_ROWS) -> str:
    """BLAKE2b of the matrix's shape and of ``rows`` evenly spaced float32 rows (first and last
    included), in row order: another partition, model, order or size changes it, and it costs
    the same at any size (hashing all of 1.3 M vectors takes 8 s on this machine, on every
    load). Which exact vectors an index was built from is the table's job: it records the
    embeddings and chunks files (content-named, immutable) and the generation must name the
    same ones."""
    # Indexed on the matrix itself: a mapped FileRows reads these rows without mapping them.
    matrix = vectors if isinstance(vectors, np.ndarray) else np.asarray(vectors, np.float32)
    picked = np.unique(np.linspace(0, len(matrix) - 1, min(len(matrix), rows)).round().astype(np.int64))
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.asarray(matrix.shape, np.int64).tobytes())
    digest.update(np.ascontiguousarray(matrix[picked], np.float32).tobytes())
    return digest.hexdigest()


TIE_TOLERANCE = 1e-6
"""Cosine similarities this close are one: the same vector (a repeated chunk) scored twice."""


def recall_at_k(approximate: np.ndarray, exact: np.ndarray, vectors: np.ndarray | None = None,
                query: np.ndarray | None = None) -> float:
    """The share of the exact top ``k`` rows that the approximate top ``k`` holds
    (``k = len(exact)``); 1.0 when both are empty. Given the ``vectors`` and the ``query``, a
    row as close to the query as the exact top ``k``'s farthest counts too: rows of equal
    scores (a repeated chunk's copies) are one answer, and which of them an exact top ``k``
    cut through them holds is arbitrary."""
    if len(exact) == 0:
        return 1.0
    found = approximate[:len(exact)]
    held = len(set(found.tolist()) & set(exact.tolist()))
    if vectors is not None and query is not None:
        similarity = np.asarray(vectors[np.concatenate([exact, found])], np.float32) @ np.asarray(
            query, np.float32)
        farthest = similarity[:len(exact)].min()
        held = int((similarity[len(exact):] >= farthest - TIE_TOLERANCE).sum())
    return min(held, len(exact)) / len(exact)


def exact_top_k(vectors: np.ndarray, questions: np.ndarray, k: int, block: int = 65_536) -> np.ndarray:
    """Each question's exact top ``k`` rows, in no particular order: one scan of ``vectors`` in
    blocks (the oracle recall is measured against)."""
    matrix = np.asarray(vectors, np.float32)
    queries = np.asarray(questions, np.float32)
    k = min(k, len(matrix))
    rows, scores = [], []
    for start in range(0, len(matrix), block):
        part = queries @ matrix[start:start + block].T
        keep = np.argpartition(-part, k - 1, axis=1)[:, :k] if part.shape[1] > k else \
            np.broadcast_to(np.arange(part.shape[1]), part.shape)
        rows.append(keep + start)
        scores.append(np.take_along_axis(part, keep, axis=1))
    candidates, candidate_scores = np.concatenate(rows, axis=1), np.concatenate(scores, axis=1)
    best = np.argpartition(-candidate_scores, k - 1, axis=1)[:, :k]
    return np.take_along_axis(candidates, best, axis=1)


def _mean_recall(index: AnnIndex, vectors: np.ndarray, questions: np.ndarray, exact: np.ndarray,
                 k: int) -> float:
    """Mean recall@``k`` of ``index``'s answers to ``questions`` against their ``exact`` top ``k``
    (a row tied with the exact top ``k``'s counts: :func:`recall_at_k`)."""
    return float(np.mean([recall_at_k(index.search(vectors, q, k)[0], e, vectors, q)
                          for q, e in zip(questions, exact, strict=True)]))


def self_recall(index: AnnIndex, vectors: np.ndarray, queries: int = SELF_CHECK_QUERIES,
                k: int = EXACT_RANKS, seed: int = 1) -> float:
    """Mean recall@``k`` of ``index`` against the exact scan, asked with ``queries`` calibration
    questions (:func:`calibration_questions`, ``seed``)."""
    questions = calibration_questions(vectors, queries, seed)
    return _mean_recall(index, vectors, questions, exact_top_k(vectors, questions, k), k)


def calibrate_nprobe(index: AnnIndex, vectors: np.ndarray, queries: int = SELF_CHECK_QUERIES,
                     target: float = CALIBRATION_RECALL, seed: int = 0) -> tuple[int, dict[int, float]]:
    """The smallest of :data:`NPROBES` (at most the cell count) whose recall@10 on
    ``queries`` calibration questions (``seed``) reaches ``target``; the largest tried when none
    does (its index then measures below :data:`MIN_SELF_RECALL` and the scan serves).

    Returns:
        The chosen ``nprobe`` and the recall measured at each one tried.
    """
    questions = calibration_questions(vectors, queries, seed)
    exact = exact_top_k(vectors, questions, EXACT_RANKS)
    tried: dict[int, float] = {}
    candidates = [p for p in NPROBES if p < index.nlist] + [min(index.nlist, NPROBES[-1])]
    for nprobe in dict.fromkeys(candidates):
        tried[nprobe] = _mean_recall(replace(index, nprobe=nprobe), vectors, questions, exact, EXACT_RANKS)
        if tried[nprobe] >= target:
            return nprobe, tried
    return max(tried), tried


@contextmanager
def _omp_threads(threads: int) -> Iterator[None]:
    """faiss's OpenMP threads for this thread's calls (``omp_set_num_threads`` is per thread),
    restored after."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


@dataclass(frozen=True)
class AnnIndex:
    """An inverted file over a partition's 8-bit codes, tied to the float32 vectors it was built
    from (rows in the same order: an id in the index is a row)."""

    ivf: Any
    """The faiss ``IndexIVFScalarQuantizer`` (inner product, 8-bit codes; ids are rows)."""
    rows: int
    fingerprint: str
    nprobe: int
    """Cells scanned per question (chosen by :func:`calibrate_nprobe` at build)."""
    measured_recall: float | None = None
    """Recall@10 against the exact scan measured when the index was built (:func:`self_recall`);
    none for an index whose table does not record it, which then never serves automatically."""

    @property
    def nlist(self) -> int:
        """The index's cell count."""
        return int(self.ivf.nlist)

    @property
    def trusted(self) -> bool:
        """Whether the index may serve without being asked for by name."""
        return self.measured_recall is not None and self.measured_recall >= MIN_SELF_RECALL

    @classmethod
    def build(cls, vectors: np.ndarray, *, threads: int = 0, seed: int = 0) -> AnnIndex:
        """Trains the cells on a seeded sample of the unit vectors, adds every vector as its 8-bit
        code, calibrates ``nprobe`` and measures the recall (``threads`` 0: every core)."""
        import os

        import faiss

        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or len(matrix) == 0:
            raise ValueError(f"an ANN index needs a non-empty matrix of vectors, got shape {matrix.shape}")
        n, width = matrix.shape
        nlist = list_count(n)
        training = min(n, nlist * TRAINING_ROWS_PER_CENTROID)
        sample = matrix if training == n else matrix[np.sort(
            np.random.default_rng(seed).choice(n, training, replace=False))]
        with _omp_threads(threads or os.cpu_count() or 1):
            ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(width), width, nlist,
                                                faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
            ivf.cp.seed = seed
            ivf.train(np.ascontiguousarray(sample))
            for start in range(0, n, 65_536):
                block = np.ascontiguousarray(matrix[start:start + 65_536])
                ivf.add_with_ids(block, np.arange(start, start + len(block), dtype=np.int64))
        built = cls(ivf, n, vectors_fingerprint(matrix), nprobe=1)
        nprobe, _ = calibrate_nprobe(built, matrix)
        built = replace(built, nprobe=nprobe)
        return replace(built, measured_recall=self_recall(built, matrix))

    def save(self, path: Path) -> None:
        """Writes the index (codes, cells, centroids) to ``path``; rows, fingerprint, ``nprobe``
        are the caller's to store beside it (the ``ann_index`` table)."""
        import faiss

        faiss.write_index(self.ivf, str(path))

    @classmethod
    def open(cls, path: Path, *, rows: int, fingerprint: str, nprobe: int,
             measured_recall: float | None = None) -> AnnIndex:
        """Memory-maps a saved index read-only (a cell's codes are read as a question scans it)."""
        import faiss

        try:
            ivf = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        except RuntimeError as error:
            raise AnnMismatchError(f"{path} is not a faiss index: {str(error).splitlines()[0]}") from None
        if not isinstance(ivf, faiss.IndexIVFScalarQuantizer):
            raise AnnMismatchError(f"{path} holds a {type(ivf).__name__}, not an IndexIVFScalarQuantizer")
        if ivf.ntotal != rows:
            raise AnnMismatchError(f"the ANN index {path} holds {ivf.ntotal} vectors, its table says {rows}")
        # A mapped index's cells are faiss's OnDiskInvertedLists, which start 32 threads at
        # every search to prefetch the cells it will scan: 1.3 ms a search, constant, where the
        # scan of 32 cells of 1,275 codes takes 0.06 ms. The page cache does the prefetching.
        cells = faiss.downcast_InvertedLists(ivf.invlists)
        if isinstance(cells, faiss.OnDiskInvertedLists):
            cells.prefetch_nthread = 0
        return cls(ivf, rows, fingerprint, nprobe, measured_recall)

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
               shortlist_factor: int = SHORTLIST_FACTOR,
               readable: Readable | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows closest to ``query`` among the index's shortlist (``shortlist_factor x
        min(k, EXACT_RANKS)`` rows, at least ``k``, from ``nprobe`` cells), closest first (ties by
        row), with their exact cosine distances from the float32 ``vectors``.

        With ``readable``, the shortlist holds readable rows only: faiss scans the cells with an
        ID selector over the readable rows' bitmap (an unreadable code is never a candidate), at
        ``nprobe / selectivity`` cells (so about as many readable codes are scanned as without a
        filter); below :data:`FILTER_EXACT_SELECTIVITY`, or when the cells hold fewer readable
        rows than the shortlist wants, the readable rows are scanned exactly instead."""
        import faiss

        if k <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        wanted = min(self.rows, max(min(k, EXACT_RANKS) * shortlist_factor, k))
        question = np.ascontiguousarray(query, np.float32)[None, :]
        if readable is not None:
            if len(readable) == 0:
                return np.zeros(0, np.int64), np.zeros(0, np.float32)
            wanted = min(wanted, len(readable))
            if readable.selectivity < FILTER_EXACT_SELECTIVITY:
                return _exact_within(vectors, question[0], readable.rows, k)
            nprobe = min(self.nlist, max(self.nprobe, math.ceil(self.nprobe / readable.selectivity)))
            bitmap = readable.bitmap()
            selector = faiss.IDSelectorBitmap(len(readable.mask), faiss.swig_ptr(bitmap))
            with _omp_threads(1):
                _, found = self.ivf.search(question, wanted, params=faiss.SearchParametersIVF(
                    nprobe=nprobe, sel=selector))
            rows = found[0][(found[0] >= 0) & (found[0] < self.rows)]
            if len(rows) < wanted:
                return _exact_within(vectors, question[0], readable.rows, k)
        else:
            with _omp_threads(1):
                _, found = self.ivf.search(question, wanted,
                                           params=faiss.SearchParametersIVF(nprobe=self.nprobe))
            rows = found[0][(found[0] >= 0) & (found[0] < self.rows)]
        rows = np.sort(rows)  # rows in file order: the rescoring reads the mapped vectors forwards
        distances = 1.0 - vectors[rows] @ question[0]
        order = np.lexsort((rows, distances))[:k]
        return rows[order], distances[order]
