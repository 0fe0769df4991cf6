"""Partition load and BM25 ranking at 1x, 10x and 100x the corpus (synthetic copies).

Run after ``make index``: ``.venv/bin/python -m rag_pipeline.benchmarks.scale``.

Each factor ``f`` writes, into a temporary folder, the served partition's tables repeated ``f``
times: copy ``i`` prefixes document and chunk ids with ``copy<i>/``, gives each chunk its own
content hash (so copies are not collapsed as duplicates), nudges the vectors (seeded noise,
renormalised) and scales the BM25 statistics (``df * f``, ``N * f``, idf recomputed); the
copies are published as a generation. Then it times, in a fresh process per factor,
``load_partition`` (wall and CPU seconds: on a shared machine the CPU time is the steadier
figure) and, over the bundled questions, the BM25 scores and the ranking of the matching rows:
a full sort of every matching row against the top-k selection the service uses.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rag_pipeline.core.generations import publish
from rag_pipeline.core.table_names import (
    BM25_CHUNKS,
    BM25_PARAMS,
    BM25_POSTINGS,
    BM25_TABLES,
    BM25_TERMS,
    CHUNKS,
    DOCUMENTS,
    EMBEDDINGS,
)
from rag_pipeline.core.warehouse import Warehouse
from rag_pipeline.project_paths import DEFAULT_DATA_DIR

NOISE = 0.01
SEED = 0


def _prefixed(column: pa.ChunkedArray, copy: int) -> pa.ChunkedArray:
    if copy == 0:
        return column
    return pc.binary_join_element_wise(pa.scalar(f"copy{copy:03d}/"), column, "")


def _repeat(table: pa.Table, factor: int, id_columns: tuple[str, ...], extra=None) -> pa.Table:
    parts = []
    for copy in range(factor):
        part = table
        for name in id_columns:
            index = part.schema.get_field_index(name)
            part = part.set_column(index, name, _prefixed(part.column(name), copy))
        if extra is not None:
            part = extra(part, copy)
        parts.append(part)
    return pa.concat_tables(parts).combine_chunks()


def write_copies(source: Path, target: Path, chunker: str, model_key: str, factor: int) -> None:
    """The partition's tables (and the documents) repeated ``factor`` times under ``target``,
    published there as a generation."""
    src, dst = Warehouse(source), Warehouse(target)
    by_chunker = {"chunker": chunker}
    versions = {DOCUMENTS: dst.write(DOCUMENTS, _repeat(src.read(DOCUMENTS), factor, ("document_id",)))}

    def own_hash(part: pa.Table, copy: int) -> pa.Table:
        i = part.schema.get_field_index("content_sha256")
        return part.set_column(i, "content_sha256", _prefixed(part.column(i), copy))

    versions[CHUNKS] = dst.write(
        CHUNKS, _repeat(src.read(CHUNKS, by_chunker), factor, ("chunk_id", "document_id"), own_hash),
        by_chunker, inputs={DOCUMENTS: versions[DOCUMENTS].file})
    built_from = {CHUNKS: versions[CHUNKS].file}
    rng = np.random.default_rng(SEED)

    def nudged(part: pa.Table, copy: int) -> pa.Table:
        if copy == 0:
            return part
        i = part.schema.get_field_index("vector")
        width = part.column(i).type.list_size
        vectors = np.asarray(part.column(i).combine_chunks().flatten().to_numpy(), np.float32)
        vectors = vectors.reshape(-1, width) + rng.normal(0, NOISE, (part.num_rows, width)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), width)
        return part.set_column(i, part.schema.field(i), column)

    partition = {**by_chunker, "model": model_key}
    versions[EMBEDDINGS] = dst.write(
        EMBEDDINGS, _repeat(src.read(EMBEDDINGS, partition), factor, ("chunk_id",), nudged), partition,
        inputs=built_from)
    tables = {name: src.read(name, by_chunker) for name in BM25_TABLES}
    params = tables[BM25_PARAMS]
    n_of = dict(zip(params.column("analyzer").to_pylist(), params.column("n_chunks").to_pylist(),
                    strict=True))
    terms = tables[BM25_TERMS]
    df = pc.multiply(terms.column("df"), factor)
    n = np.array([n_of[a] * factor for a in terms.column("analyzer").to_pylist()], np.float64)
    df_np = df.to_numpy().astype(np.float64)
    idf = np.log(1.0 + (n - df_np + 0.5) / (df_np + 0.5))
    terms = terms.set_column(terms.schema.get_field_index("df"), "df", df)
    terms = terms.set_column(terms.schema.get_field_index("idf"), "idf", pa.array(idf, pa.float64()))
    params = params.set_column(params.schema.get_field_index("n_chunks"), "n_chunks",
                               pc.multiply(params.column("n_chunks"), factor))
    versions[BM25_TERMS] = dst.write(BM25_TERMS, terms, by_chunker, inputs=built_from)
    versions[BM25_PARAMS] = dst.write(BM25_PARAMS, params, by_chunker, inputs=built_from)
    for name in (BM25_CHUNKS, BM25_POSTINGS):
        versions[name] = dst.write(name, _repeat(tables[name], factor, ("chunk_id",)), by_chunker,
                                   inputs=built_from)
    publish(dst, chunker, model_key, versions)


def full_sort_ranking(scores: np.ndarray, depth: int) -> np.ndarray:
    """The former ranking: every matching row sorted, then cut to ``depth``."""
    positive = np.flatnonzero(scores > 0)
    return positive[np.lexsort((positive, -scores[positive]))][:depth]


def measure(data_dir: Path, chunker: str, model_key: str, depth: int) -> dict:
    """Runs in a fresh process: load time, then BM25 timings over the bundled questions."""
    from rag_pipeline.benchmarks.serve_load import questions
    from rag_pipeline.core.index_store import load_partition
    from rag_pipeline.core.retrieval import DEFAULT_ANALYZER, bm25_ranking

    started, cpu = time.perf_counter(), time.process_time()
    index = load_partition(data_dir, chunker, model_key)
    load_s, load_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    scorer = index.bm25[DEFAULT_ANALYZER]
    score_ms, sort_ms, topk_ms, matching = [], [], [], []
    for question in questions():
        t = time.perf_counter()
        scores = scorer.scores(question)
        score_ms.append((time.perf_counter() - t) * 1000)
        matching.append(int((scores > 0).sum()))
        t = time.perf_counter()
        expected = full_sort_ranking(scores, depth)
        sort_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        got = bm25_ranking(scores, depth)
        topk_ms.append((time.perf_counter() - t) * 1000)
        if not np.array_equal(got, expected):
            raise AssertionError(f"top-k ranking differs from the full sort for {question!r}")
    return {"chunks": len(index), "load_s": load_s, "load_cpu_s": load_cpu_s,
            "score_ms": statistics.median(score_ms),
            "sort_ms": statistics.median(sort_ms), "topk_ms": statistics.median(topk_ms),
            "matching": statistics.median(matching)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--chunker", default="header")
    parser.add_argument("--model", default=None, help="Model key (default: the first declared).")
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from rag_pipeline.core.project_config import declared_models

    model_key = args.model or declared_models()[0].key
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.chunker, model_key, args.depth)))
        return
    print(f"{'factor':>6s} {'chunks':>8s} {'write s':>8s} {'load s':>8s} {'load cpu s':>10s} "
          f"{'cpu us/chunk':>12s} "
          f"{'matching':>9s} {'scores ms':>9s} {'sort ms':>8s} {'top-k ms':>8s}")
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        for factor in args.factors:
            target = Path(tmp) / f"x{factor}"
            started = time.perf_counter()
            write_copies(args.data_dir, target, args.chunker, model_key, factor)
            write_s = time.perf_counter() - started
            out = subprocess.run(
                [sys.executable, "-m", "rag_pipeline.benchmarks.scale", "--chunker", args.chunker,
                 "--model", model_key, "--depth", str(args.depth), "--measure", str(target)],
                check=True, capture_output=True, text=True).stdout
            m = json.loads(out.strip().splitlines()[-1])
            print(f"{factor:6d} {m['chunks']:8d} {write_s:8.1f} {m['load_s']:8.2f} {m['load_cpu_s']:10.2f} "
                  f"{m['load_cpu_s'] / m['chunks'] * 1e6:12.1f} {m['matching']:9.0f} {m['score_ms']:9.2f} "
                  f"{m['sort_ms']:8.2f} {m['topk_ms']:8.2f}")


if __name__ == "__main__":
    main()
