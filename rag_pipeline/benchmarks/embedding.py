"""Embedding speed of every declared model against plain ``SentenceTransformer.encode``, and
against this machine's floor, measured in one run.

Run after ``rag-pipeline index``: ``.venv/bin/python -m rag_pipeline.benchmarks.embedding``
(``--chunker``, ``--limit``, ``--rounds``, ``--all-chunkers``).

Every contender embeds the same texts (one chunker's chunk texts), interleaved round by round so
a noisy neighbour slows them all alike; the figure per contender is its median over rounds and
the ratio is taken against plain ``encode`` (batch 32, its own length sort) of the same round.
The floor is the time the encoder's matrix products need at the machine's measured rate: the
FLOPs of the word-pieces actually processed (no padding; per layer ``2 n (4 d^2 + 2 d f) +
4 n^2 d`` for ``n`` word-pieces, width ``d``, feed-forward width ``f``), divided by the rate of
a large fp32 matrix product (numpy, torch or OpenVINO at f32 on a constant weight, the
fastest, measured before and after the contenders: :mod:`rag_pipeline.core.embedding.floor`) or
of an int8 one (an OpenVINO MatMul between two FakeQuantize nodes, the pattern
NNCF writes). The default model's fp32 bulk path also runs on the bulk runtime it did not
keep (ONNX Runtime or OpenVINO: the load keeps the faster here), and its ONNX Runtime path (one
single-thread session per core, a batch each) as one session whose threads share every batch.
Prints chunks/s, the ratio and % of the floor,
plus the cosine between each model's vectors and the reference fp32 vectors, and between two
batchings of the same model (batch independence).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_pipeline.benchmarks import go_offline
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.config.parse import declared_chunkers
from rag_pipeline.core.embedding.embedder import Embedder, load_declared
from rag_pipeline.core.embedding.floor import encoder_flops, fp32_matmul_rate, int8_matmul_rate
from rag_pipeline.core.embedding.models import Precision
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.project_paths import DEFAULT_DATA_DIR


def cpu_int8_support() -> str:
    """The CPU's int8 dot-product instructions, as ``/proc/cpuinfo`` lists them (int8 GEMM is
    fast with VNNI or AMX; with AVX2 alone it runs through 16-bit products and gains little)."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8").split())
    except OSError:
        return "unknown"
    found = [f for f in ("avx512_vnni", "avx_vnni", "amx_int8", "avx512f", "avx2") if f in flags]
    return ", ".join(found) or "none of avx2/avx512/vnni/amx"


@dataclass
class Contender:
    label: str
    run: Callable[[], np.ndarray]
    precision: Precision
    seconds: list[float]
    vectors: np.ndarray | None = None


def _texts(data_dir: Path, chunker: str, limit: int | None) -> tuple[list[str], list[int]]:
    chunks = Warehouse(data_dir).read("chunks", {"chunker": chunker},
                                      columns=["chunk_id", "text", "wordpieces"])
    texts, counts = chunks.column("text").to_pylist(), chunks.column("wordpieces").to_pylist()
    if limit:
        texts, counts = texts[:limit], counts[:limit]
    return texts, counts


def other_runtime_variant(embedder: Embedder) -> tuple[str, Embedder] | None:
    """The embedder on the bulk runtime its load did not keep, with that runtime's name, when
    its texts run on a fp32 bulk path."""
    from rag_pipeline.core.embedding.bulk import BULK_RUNTIMES, bulk_transformer
    from rag_pipeline.core.embedding.export import ONNX_FILE, onnx_dir

    path = embedder.bulk_path
    kept = path.fp32_runtime
    if kept is None or embedder.spec.cache_dir is None:
        return None
    other = next(runtime for runtime in BULK_RUNTIMES if runtime != kept)
    onnx = (onnx_dir(embedder.spec) / ONNX_FILE).read_bytes()
    return other, embedder.on_transformer(bulk_transformer(other, onnx, path.threads)[0])


def shared_session_variant(embedder: Embedder) -> Embedder | None:
    """The embedder on one ONNX Runtime session whose threads share every batch, when its bulk
    path is a bulk runtime on two threads or more: the other way to use ONNX Runtime on the same
    cores than a session per core."""
    from rag_pipeline.core.embedding.bulk import onnx_shared_session
    from rag_pipeline.core.embedding.export import ONNX_FILE, onnx_dir

    path = embedder.bulk_path
    if path.fp32_runtime is None or not path.threads or path.threads < 2 \
            or embedder.spec.cache_dir is None:
        return None
    onnx = (onnx_dir(embedder.spec) / ONNX_FILE).read_bytes()
    return embedder.on_transformer(onnx_shared_session(onnx, path.threads))


def _cosines(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    c = np.sum(a * b, axis=1)
    return float(c.min()), float(c.mean())


def run(data_dir: Path, chunker: str, limit: int | None, rounds: int) -> dict:
    texts, counts = _texts(data_dir, chunker, limit)  # first: no index, nothing else is loaded
    fp32_rate_before, int8_rate_before = fp32_matmul_rate(), int8_matmul_rate()
    models = declared_models()
    embedders = load_declared(models, print)
    reference = embedders[0].model
    window = models[0].max_tokens
    processed = [min(n, window) for n in counts]
    config = json.loads((models[0].path / "config.json").read_text(encoding="utf-8"))
    contenders = [Contender("plain encode (batch 32)", lambda: reference.encode(
        texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False),
        Precision.FP32, [])]
    for embedder in embedders:
        spec = embedder.spec
        contenders.append(Contender(
            f"{spec.key} ({embedder.bulk_path.backend}, batch {spec.batch_size})",
            lambda e=embedder: e.embed(texts, wordpieces=counts), spec.precision, []))
        other = other_runtime_variant(embedder)
        if other is not None:
            contenders.append(Contender(
                f"  the same on {other[0]}-fp32", lambda e=other[1]: e.embed(texts, wordpieces=counts),
                spec.precision, []))
        shared = shared_session_variant(embedder)
        if shared is not None:
            contenders.append(Contender(
                f"  the same, one onnxruntime session of {embedder.bulk_path.threads} threads",
                lambda e=shared: e.embed(texts, wordpieces=counts), spec.precision, []))
    for contender in contenders:  # warm-up, not counted
        contender.vectors = contender.run()
    for _ in range(rounds):
        for contender in contenders:
            started = time.perf_counter()
            contender.run()
            contender.seconds.append(time.perf_counter() - started)
    flops = encoder_flops(processed, config)
    rates = {Precision.FP32: max(fp32_rate_before, fp32_matmul_rate()),
             Precision.INT8: max(int8_rate_before or 0.0, int8_matmul_rate() or 0.0) or None}
    base = contenders[0]
    rows = []
    for contender in contenders:
        ratios = [b / s for b, s in zip(base.seconds, contender.seconds, strict=True)]
        seconds = statistics.median(contender.seconds)
        rate = rates[contender.precision]
        floor = flops / rate if rate else None
        rows.append({
            "contender": contender.label, "median_s": seconds,
            "chunks_per_s": len(texts) / seconds, "ratio_to_encode": statistics.median(ratios),
            "floor_pct": 100 * floor / seconds if floor else None,
            "cosine_to_fp32": _cosines(contender.vectors, base.vectors)})
    batchings = {}
    for embedder in embedders:
        other = embedder.embed(texts, wordpieces=counts, batch_size=max(1, embedder.spec.batch_size // 2 + 1))
        batchings[embedder.spec.key] = _cosines(other, embedder.embed(texts, wordpieces=counts))[0]
    return {"chunker": chunker, "texts": len(texts), "wordpieces": sum(processed),
            "tflop": flops / 1e12, "fp32_gflops": rates[Precision.FP32] / 1e9,
            "int8_gops": rates[Precision.INT8] / 1e9 if rates[Precision.INT8] else None,
            "floor_fp32_chunks_s": len(texts) * rates[Precision.FP32] / flops,
            "floor_int8_chunks_s": (len(texts) * rates[Precision.INT8] / flops
                                    if rates[Precision.INT8] else None),
            "rounds": rounds, "rows": rows, "batch_independence": batchings,
            "cpu_int8": cpu_int8_support()}


def all_chunkers(data_dir: Path) -> dict[str, float]:
    """Seconds to embed every declared chunker's texts: plain ``encode`` of each chunker's texts
    (the old way), against each declared model as the index embeds them (the distinct texts of
    all chunkers, each once per model, batched by word-piece count), interleaved chunker by
    chunker."""
    embedders = load_declared(declared_models(), print)
    reference = embedders[0].model
    totals = {"plain encode, every chunker's texts": 0.0}
    totals.update({e.spec.key: 0.0 for e in embedders})
    seen: set[str] = set()
    for chunker in declared_chunkers():
        texts, counts = _texts(data_dir, chunker.value, None)
        started = time.perf_counter()
        reference.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        totals["plain encode, every chunker's texts"] += time.perf_counter() - started
        new = {t: n for t, n in zip(texts, counts, strict=True) if t not in seen}
        seen.update(new)
        for embedder in embedders:
            started = time.perf_counter()
            embedder.embed(list(new), wordpieces=list(new.values()))
            totals[embedder.spec.key] += time.perf_counter() - started
    return totals


def main(argv: Sequence[str] | None = None) -> None:
    go_offline()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--chunker", default="header")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N chunk texts.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--all-chunkers", action="store_true",
                        help="Also time plain encode vs every declared model over every chunker.")
    args = parser.parse_args(argv)
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError

    try:
        report = run(args.data_dir, args.chunker, args.limit, args.rounds)
    except IndexNotBuiltError as exc:
        sys.exit(f"embedding benchmark: no chunk texts to embed in {args.data_dir}: {exc}")
    int8 = (f", int8 {report['int8_gops']:.0f} GOP/s -> {report['floor_int8_chunks_s']:.0f} chunks/s"
            if report["int8_gops"] else "")
    print(f"{report['texts']} {report['chunker']} chunk texts, {report['wordpieces']:,} word-pieces, "
          f"{report['tflop']:.2f} TFLOP; matmul fp32 {report['fp32_gflops']:.0f} GFLOP/s -> "
          f"floor {report['floor_fp32_chunks_s']:.0f} chunks/s{int8}; median of "
          f"{report['rounds']} interleaved rounds; CPU int8 instructions: {report['cpu_int8']}")
    print(f"| {'contender':58s} | chunks/s | x encode | % floor | min cos fp32 | mean cos |")
    print(f"|{'-' * 60}|---------:|---------:|--------:|-------------:|---------:|")
    for r in report["rows"]:
        floor = f"{r['floor_pct']:.0f} %" if r["floor_pct"] is not None else "-"
        lo, mean = r["cosine_to_fp32"]
        print(f"| {r['contender']:58s} | {r['chunks_per_s']:8.1f} | {r['ratio_to_encode']:7.2f}x | "
              f"{floor:>7s} | {lo:12.5f} | {mean:8.5f} |")
    for key, cosine in report["batch_independence"].items():
        print(f"batch independence {key}: min cosine between two batchings {cosine:.6f}")
    if args.all_chunkers:
        totals = all_chunkers(args.data_dir)
        plain, plain_s = next(iter(totals.items()))
        print(f"all {len(declared_chunkers())} chunkers: {plain} {plain_s:.1f} s")
        for key, seconds in list(totals.items())[1:]:
            print(f"all {len(declared_chunkers())} chunkers: {key}, distinct texts once: "
                  f"{seconds:.1f} s ({seconds / plain_s:.2f} of the time, {plain_s / seconds:.2f}x)")


if __name__ == "__main__":
    main()
