"""Shards/s of the Ray engine with one and two one-CPU workers on this machine, and the sizing
they imply for 10 M and 100 M chunks (workers, hours, memory per worker, Parquet part sizes).

``.venv/bin/python -m rag_pipeline.benchmarks.ray_scaling`` (``--texts``, ``--shard-texts``).

Each configuration starts its own loopback cluster (:mod:`rag_pipeline.core.embedding.compute.
local_cluster`), embeds the texts once to load the model on every worker (timed apart), then
once more timed: shards/s and chunks/s per worker. The texts are the shipped chunk texts of the
bundled corpus (``calibration_texts.jsonl``), repeated with a suffix so each is distinct.
Memory per worker is the largest resident set of a worker process; a Parquet part is a shard's
vectors as the vector cache writes them (zstd). The projection assumes the measured
two-worker efficiency holds per added worker (one CPU each), which a real cluster must confirm.
"""

from __future__ import annotations

import argparse
import io
import os
import time
from collections.abc import Sequence

import numpy as np

from rag_pipeline.benchmarks import go_offline
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.embedding.compute import ComputeSettings, Engine
from rag_pipeline.core.embedding.compute.local_cluster import LocalCluster, local_cluster
from rag_pipeline.core.embedding.models import calibration_set
from rag_pipeline.core.index.builders import GROUP_ROUNDS, checkpoint_group_texts
from rag_pipeline.project_paths import PROJECT_ROOT

SHARD_TEXTS = ComputeSettings().shard_texts
"""Texts per shard of the projection: ``[compute] shard_texts``' default."""


def _texts(count: int) -> list[str]:
    base = calibration_set().texts()
    return [f"{base[i % len(base)]} ({i // len(base)})" for i in range(count)]


def _worker_rss(cluster: LocalCluster) -> int:
    import psutil

    groups = {p.pid for p in cluster.processes}
    rss = 0
    for process in psutil.process_iter(["pid", "cmdline", "memory_info"]):
        cmdline = process.info["cmdline"] or []
        try:  # a worker leads a process group of its own; its raylet is in the node's
            if cmdline and cmdline[0].startswith("ray::") and "Agent" not in cmdline[0] and any(
                    os.getpgid(parent.pid) in groups for parent in process.parents()):
                rss = max(rss, process.info["memory_info"].rss)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return rss


def part_bytes(vectors: np.ndarray, spec) -> int:
    """Bytes of one shard's vectors as a Parquet part (the vector cache's columns, zstd)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(vectors)
    table = pa.table({
        "text_sha256": pa.array([f"{i:064x}" for i in range(n)]),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()),
                                                    spec.dimension),
        "model_name": [spec.name] * n, "model_fingerprint": [spec.fingerprint] * n})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.tell()


def measure(workers: int, texts: list[str], shard_texts: int) -> dict:
    import ray

    from rag_pipeline.core.embedding.compute.ray_engine import RayEmbedder

    spec = declared_models()[0]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    with local_cluster(workers, env) as cluster:
        embedder = RayEmbedder(spec, ComputeSettings(Engine.RAY, cluster.address, shard_texts))
        started = time.perf_counter()
        embedder.embed(texts[: shard_texts * workers * 2])  # every worker loads the model
        warm = time.perf_counter() - started
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        seconds = time.perf_counter() - started
        shards = sum(1 for _ in range(0, len(texts), shard_texts))
        rss = _worker_rss(cluster)
        ray.shutdown()
    return {"workers": workers, "seconds": seconds, "warm_seconds": warm, "shards": shards,
            "shards_per_s": shards / seconds, "chunks_per_s": len(texts) / seconds,
            "nodes": len(embedder.nodes), "rss_bytes": rss,
            "part_bytes": part_bytes(vectors[:shard_texts], spec), "load": os.getloadavg()[0]}


def projection(per_worker: float, efficiency: float, chunks: int, workers: int) -> float:
    """Hours for ``chunks`` on ``workers`` one-CPU workers at ``per_worker`` chunks/s each,
    scaled by the measured efficiency of adding workers."""
    return chunks / (per_worker * workers * efficiency) / 3600


def main(argv: Sequence[str] | None = None) -> None:
    go_offline()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--shard-texts", type=int, default=32)
    args = parser.parse_args(argv)
    texts = _texts(args.texts)
    rows = [measure(1, texts, args.shard_texts), measure(2, texts, args.shard_texts)]
    print(f"{len(texts)} texts, {args.shard_texts} per shard; load average (1 min) at the end of "
          "each measure")
    print("| workers | nodes used | shards/s | chunks/s | per worker | worker RSS | a shard as Parquet "
          "| load |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['workers']} | {r['nodes']} | {r['shards_per_s']:.3f} | {r['chunks_per_s']:.1f} | "
              f"{r['chunks_per_s'] / r['workers']:.1f} | {r['rss_bytes'] / 2**20:.0f} MiB | "
              f"{r['part_bytes'] / 1024:.0f} KiB | {r['load']:.1f} |")
    one, two = rows
    efficiency = two["chunks_per_s"] / (2 * one["chunks_per_s"])
    per_worker = one["chunks_per_s"]
    bytes_per_chunk = one["part_bytes"] / args.shard_texts
    print(f"two-worker efficiency {efficiency:.2f}; {bytes_per_chunk:.0f} bytes per chunk in a part")
    print(f"Parquet parts: an embeddings run's checkpoint groups, {GROUP_ROUNDS} x workers x "
          f"{SHARD_TEXTS} texts a shard (the default shard_texts)")
    print("| chunks | workers | hours | Parquet parts | vectors on disk |")
    print("|--:|--:|--:|--:|--:|")
    for chunks in (10_000_000, 100_000_000):
        for workers in (16, 64, 256):
            hours = projection(per_worker, min(efficiency, 1.0), chunks, workers)
            part = checkpoint_group_texts(workers * SHARD_TEXTS)
            print(f"| {chunks:,} | {workers} | {hours:.1f} | {-(-chunks // part):,} x "
                  f"{part * bytes_per_chunk / 2**20:.1f} MiB | "
                  f"{chunks * bytes_per_chunk / 2**30:.1f} GiB |")


if __name__ == "__main__":
    main()
