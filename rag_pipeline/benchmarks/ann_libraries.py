"""usearch against faiss-cpu: HNSW graphs and the project's inverted file, build time, recall and
latency on vectors shaped like ours.

Run: ``.venv/bin/python -m rag_pipeline.benchmarks.ann_libraries --size 100000``.

The vectors are seeded and shaped like the index's: 384 dimensions, L2-normalised, clustered
(one centre per 100 vectors, as chunks of one topic sit together), and the questions are
vectors near held-in ones (a question close to a passage). Each library builds an HNSW graph
with the same degree (M = 16) and construction depth (128); every question asks for a
shortlist of 100 (10 x k), which is then rescored with the float32 vectors, as
:mod:`rag_pipeline.core.index.ann` does. Recall@10 is against the exact scan (``core/retrieval/dense.py``);
latency is per question on one thread, the build on two.

The last rows are the index the project serves (:class:`rag_pipeline.core.index.ann.AnnIndex`:
faiss's inverted file over 8-bit codes, its ``nprobe`` calibrated at build), searched at its
calibrated ``nprobe`` and at twice that (the ``ef`` column then says ``nprobe``).

Measured on these vectors (README, "Approximate search"): usearch over int8 builds fastest and
its rescored shortlist keeps recall@10 at 1.0, with the smallest index; faiss's own int8
(``HNSWSQ8``) is as fast to search but slower to build. On the scale benchmark's 1.3 M copies,
where the graphs' recall fell to 0.76, the inverted file keeps it at 0.996 or more.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

DIMENSION = 384
QUESTIONS = 200
K = 10
SHORTLIST = 100
CONNECTIVITY = 16
EXPANSION_ADD = 128


def clustered_unit_vectors(n: int, seed: int = 0, dimension: int = DIMENSION,
                           per_cluster: int = 100, spread: float = 0.4) -> np.ndarray:
    """``n`` seeded unit vectors around ``n / per_cluster`` random centres (float32)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(n // per_cluster, 1), dimension)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.normal(0, spread / np.sqrt(dimension), (n, dimension)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), n)] + noise
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def near_questions(vectors: np.ndarray, count: int, seed: int = 1, noise: float = 0.02) -> np.ndarray:
    """``count`` unit vectors each near one of ``vectors`` (seeded)."""
    rng = np.random.default_rng(seed)
    picked = vectors[rng.choice(len(vectors), count, replace=False)]
    moved = picked + rng.normal(0, noise, picked.shape).astype(np.float32)
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


@dataclass(frozen=True)
class LibraryRun:
    name: str
    build_s: float
    ef: int
    raw_recall: float
    rescored_recall: float
    p50_ms: float
    p99_ms: float


def _recall(got: list[np.ndarray], exact: np.ndarray) -> float:
    from rag_pipeline.core.index.ann import recall_at_k

    return float(np.mean([recall_at_k(np.asarray(g), e) for g, e in zip(got, exact, strict=True)]))


def _rescored(vectors: np.ndarray, question: np.ndarray, keys: np.ndarray) -> np.ndarray:
    keys = keys[keys >= 0].astype(np.int64)
    return keys[np.argsort(-(vectors[keys] @ question), kind="stable")]


def _measure(name: str, build: Callable[[], object], set_ef: Callable[[object, int], None],
             search: Callable[[object, np.ndarray], np.ndarray], vectors: np.ndarray,
             questions: np.ndarray, exact: np.ndarray) -> list[LibraryRun]:
    started = time.perf_counter()
    index = build()
    build_s = time.perf_counter() - started
    runs = []
    for ef in (64, 128):
        set_ef(index, ef)
        raw, rescored, latency = [], [], []
        for question in questions:
            started = time.perf_counter()
            keys = search(index, question)
            rescored.append(_rescored(vectors, question, keys))
            latency.append(time.perf_counter() - started)
            raw.append(keys)
        runs.append(LibraryRun(name, build_s, ef, _recall(raw, exact), _recall(rescored, exact),
                               float(np.median(latency) * 1000), float(np.percentile(latency, 99) * 1000)))
    return runs


def compare(size: int) -> list[LibraryRun]:
    """Every library and storage type on the same seeded vectors and questions."""
    import faiss
    from usearch.index import Index

    from rag_pipeline.core.index.ann import AnnIndex

    vectors = clustered_unit_vectors(size)
    questions = near_questions(vectors, QUESTIONS)
    exact = np.argsort(-(questions @ vectors.T), axis=1, kind="stable")[:, :K]
    int8, scale = int8_codes(vectors)

    def usearch_build(data: np.ndarray, dtype: str) -> Callable[[], object]:
        def build() -> object:
            index = Index(ndim=DIMENSION, metric="cos", dtype=dtype, connectivity=CONNECTIVITY,
                          expansion_add=EXPANSION_ADD)
            index.add(np.arange(size), data, threads=2)
            return index
        return build

    def usearch_ef(index, ef: int) -> None:
        index.expansion_search = ef

    def faiss_build(make: Callable[[], object]) -> Callable[[], object]:
        def build() -> object:
            faiss.omp_set_num_threads(2)
            index = make()
            index.hnsw.efConstruction = EXPANSION_ADD
            if not index.is_trained:
                index.train(vectors)
            index.add(vectors)
            faiss.omp_set_num_threads(1)
            return index
        return build

    def faiss_ef(index, ef: int) -> None:
        index.hnsw.efSearch = ef

    def faiss_search(index, q: np.ndarray) -> np.ndarray:
        return index.search(q[None], SHORTLIST)[1][0]

    runs = []
    runs += _measure("usearch int8", usearch_build(int8, "i8"), usearch_ef,
                     lambda ix, q: ix.search(int8_codes(q[None], scale)[0][0], SHORTLIST, threads=1).keys,
                     vectors, questions, exact)
    runs += _measure("usearch float32", usearch_build(vectors, "f32"), usearch_ef,
                     lambda ix, q: ix.search(q, SHORTLIST, threads=1).keys, vectors, questions, exact)
    runs += _measure("faiss HNSWSQ8", faiss_build(lambda: faiss.IndexHNSWSQ(
        DIMENSION, faiss.ScalarQuantizer.QT_8bit, CONNECTIVITY, faiss.METRIC_INNER_PRODUCT)),
        faiss_ef, faiss_search, vectors, questions, exact)
    runs += _measure("faiss HNSWFlat", faiss_build(lambda: faiss.IndexHNSWFlat(
        DIMENSION, CONNECTIVITY, faiss.METRIC_INNER_PRODUCT)), faiss_ef, faiss_search,
        vectors, questions, exact)
    probed: dict[str, AnnIndex] = {}

    def ivf_build() -> object:
        probed["calibrated"] = AnnIndex.build(vectors, threads=2)
        return probed["calibrated"]

    def ivf_nprobe(index: AnnIndex, ef: int) -> None:  # ef 64: the calibrated nprobe, 128: twice it
        probed["now"] = replace(index, nprobe=index.nprobe * (1 if ef == 64 else 2))

    ivf_runs = _measure("faiss IVF-SQ8 (ours)", ivf_build, ivf_nprobe,
                        lambda ix, q: probed["now"].search(vectors, q, SHORTLIST)[0],
                        vectors, questions, exact)
    nprobe = probed["calibrated"].nprobe
    runs += [replace(run, ef=nprobe * (1 if run.ef == 64 else 2)) for run in ivf_runs]
    return runs


def int8_codes(vectors: np.ndarray, scale: float | None = None) -> tuple[np.ndarray, float]:
    """int8 codes ``round(v * scale)`` clipped to [-127, 127], one scale for every dimension
    (default ``127 / max |v|``: cosine is scale-invariant, so the codes differ from the vectors
    only by rounding; usearch's own float-to-int8 mapping assumes values in [-1, 1] and keeps 3
    bits of a 384-d unit vector's components)."""
    if scale is None:
        peak = float(np.abs(vectors).max()) if vectors.size else 0.0
        scale = 127.0 / peak if peak > 0 else 1.0
    return np.clip(np.rint(vectors * np.float32(scale)), -127, 127).astype(np.int8), float(scale)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args(argv)
    print(f"{'library':20s} {'build s':>8s} {'ef/nprobe':>9s} {'raw R@10':>9s} {'rescored R@10':>13s} "
          f"{'p50 ms':>7s} {'p99 ms':>7s}")
    for run in compare(args.size):
        print(f"{run.name:20s} {run.build_s:8.1f} {run.ef:9d} {run.raw_recall:9.4f} "
              f"{run.rescored_recall:13.4f} {run.p50_ms:7.2f} {run.p99_ms:7.2f}")


if __name__ == "__main__":
    main()
