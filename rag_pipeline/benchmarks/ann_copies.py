"""Recall on synthetic copies: recall@10 of the ANN index (rescored exactly) against the exact
scan, by nudge and by the cells scanned, on the served partition's vectors.

Run after ``make index``::

    .venv/bin/python -m rag_pipeline.benchmarks.ann_copies --factor 100 --nprobe 8 16 32 64

It builds the copies ``scale.py`` would (``--hub``: the former nudge, noise around the
unmodified original; ``--sigma`` overrides the noise per dimension, default the one sized from
the median nearest-neighbour distance), one index over them with the project's parameters
(:class:`rag_pipeline.core.index.ann.AnnIndex`), and asks the bundled questions (embedded by
the model) at each ``--nprobe``: the index's shortlist rescored with the float32 vectors, against
the exact top 10. It prints the copies' distances (copy to original, copy to copy), the index's
calibrated ``nprobe`` and measured recall and, per ``nprobe``, recall@10 and ms a question.
(This module measured the HNSW graph the project served before; README, "Approximate search",
keeps those figures.)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag_pipeline.benchmarks.scale import NEIGHBOUR_QUANTILE, SEED, nearest_other_distances, nudge_sigma
from rag_pipeline.project_paths import DEFAULT_DATA_DIR

HUB_NOISE = 0.01
"""The former nudge: seeded noise of 0.01 per dimension around each unmodified original."""


def copies(base: np.ndarray, factor: int, sigma: float, hub: bool) -> np.ndarray:
    """``factor`` nudged copies of ``base`` (with ``hub``, the first is ``base`` itself)."""
    rng = np.random.default_rng(SEED)
    out = [base] if hub else []
    for _ in range(len(out), factor):
        v = base + rng.normal(0, sigma, base.shape).astype(np.float32)
        out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    return np.ascontiguousarray(np.concatenate(out), np.float32)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--chunker", default="header")
    parser.add_argument("--factor", type=int, default=100)
    parser.add_argument("--sigma", type=float, default=None)
    parser.add_argument("--hub", action="store_true",
                        help="The former nudge (noise 0.01 around the original).")
    parser.add_argument("--nprobe", type=int, nargs="+", default=[8, 16, 32, 64])
    args = parser.parse_args(argv)
    from rag_pipeline.benchmarks.serve_load import questions
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.embedding.embedder import load_embedder
    from rag_pipeline.core.index.ann import AnnIndex, recall_at_k
    from rag_pipeline.core.index.store import load_partition
    from rag_pipeline.core.retrieval.dense import top_k

    spec = declared_models()[0]
    base = np.asarray(load_partition(args.data_dir, args.chunker, spec.key).vectors, np.float32)
    neighbour = float(np.quantile(nearest_other_distances(base), NEIGHBOUR_QUANTILE))
    sigma = args.sigma if args.sigma is not None else (
        HUB_NOISE if args.hub else nudge_sigma(neighbour, base.shape[1]))
    matrix = copies(base, args.factor, sigma, args.hub)
    n = len(base)
    nudged = matrix[n:] if args.hub else matrix
    if len(nudged) < 2 * n:
        raise SystemExit(f"error: --factor {args.factor} makes fewer than two nudged copies")
    first, second = nudged[:n], nudged[n:2 * n]
    print(f"{len(matrix)} vectors ({args.factor} copies, sigma {sigma:.4f}, hub {args.hub}); source "
          f"median nearest-neighbour distance {neighbour:.4f}; copy to original "
          f"{np.median(1 - (first * base).sum(axis=1)):.4f}, copy to copy "
          f"{np.median(1 - (first * second).sum(axis=1)):.4f}", flush=True)
    queries = np.asarray(load_embedder(spec).embed(questions()), np.float32)
    exact = [top_k(1.0 - matrix @ q, 10) for q in queries]
    started = time.perf_counter()
    index = AnnIndex.build(matrix)
    print(f"index built in {time.perf_counter() - started:.1f} s: {index.nlist} cells, calibrated "
          f"nprobe {index.nprobe}, measured recall@10 {index.measured_recall:.4f}", flush=True)
    for nprobe in args.nprobe:
        probed = replace(index, nprobe=nprobe)
        started = time.perf_counter()
        found = [probed.search(matrix, q, 10)[0] for q in queries]
        ms = (time.perf_counter() - started) * 1000 / len(queries)
        recall = float(np.mean([recall_at_k(f, e) for f, e in zip(found, exact, strict=True)]))
        print(f"nprobe {nprobe:4d}: recall@10 {recall:.4f}, {ms:.2f} ms a question", flush=True)


if __name__ == "__main__":
    main()
