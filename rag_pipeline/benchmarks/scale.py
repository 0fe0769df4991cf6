"""The served partition at 1x, 10x, 100x and 1000x the corpus (synthetic copies): build, disk,
load, memory, question latency exact vs ANN, recall, BM25 ranking.

Run after ``make index``: ``.venv/bin/python -m rag_pipeline.benchmarks.scale --factors 1 10 100 1000``.

Each factor ``f`` writes, into a temporary folder (``--keep DIR``: ``DIR/x<f>``, reused when
already built), the served partition's tables repeated ``f`` times, streamed copy by copy: copy
``i`` prefixes document and chunk ids with ``copy<i>/``, gives each chunk its own content hash (so
copies are not collapsed as duplicates), nudges every copy's vectors (seeded isotropic noise sized
so two copies of a chunk lie the source's median nearest-neighbour distance apart, renormalised;
:func:`write_copies`) and scales the BM25 statistics (``df * f``, ``N * f``, idf recomputed); the
copies' ANN index is built (``core/index/ann_index.py``, timed) and everything is published as a
generation. The timed part below runs holding ``--lock`` (``flock``). Then, in a fresh process per
factor, it times ``load_partition`` (wall and CPU seconds: on a shared machine the CPU time is the
steadier figure) and records the process's memory (resident set after the load and its peak),
then, over the bundled questions embedded once by the model, ranks each on the exact path and on
the ANN path (``retrieve`` with the production settings, ``dense_path`` forced) for their p50/p99
and the ANN dense top 10's recall against the exact one, and times BM25 both ways: every chunk's
score then a sort of every matching row (``bm25 full``) and the top-k the service uses
(``bm25 top``, ``Bm25Scorer.top``), checking that they give the same rows and scores bit for
bit. Last, it starts ``rag-pipeline serve`` on the copies (127.0.0.1) and asks every question over
HTTP, one client (``--requests``, after a warm-up): p50/p99 of the round trips, the path
``/status`` names and the server's resident memory (its own and its mapped pages); with ``--swap``
a new generation is then published while 4 clients ask (:func:`swap_under_load`). The last line
summarises the largest factor.

Some 530 lines in one module because it is one benchmark read top to bottom (the copies, the
in-process timings, the HTTP round, the swap); the server pieces come from ``serve_load``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rag_pipeline.benchmarks import offline_env
from rag_pipeline.core.index.ann_index import build_ann_index
from rag_pipeline.core.index.generations import current_generation, publish
from rag_pipeline.core.index.mapped import MAP_CACHE_DIR
from rag_pipeline.core.runtime.processes import stop_process
from rag_pipeline.core.storage.table_names import (
    ANN_INDEX,
    BM25_CHUNKS,
    BM25_PARAMS,
    BM25_POSTINGS,
    BM25_TABLES,
    BM25_TERMS,
    CHUNKS,
    DOCUMENTS,
    EMBEDDINGS,
)
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.project_paths import DEFAULT_DATA_DIR

SEED = 0
NEIGHBOUR_QUANTILE = 0.5
"""Two copies of a chunk lie as far apart as this quantile of the source's nearest-neighbour
distances (the median: 0.17 on the bundled corpus; a quarter of its chunks have a neighbour
within 0.03, so the former fixed noise of 0.01 per dimension, copies 0.037 apart, made every
chunk a cluster of near-duplicates the size of the factor)."""


def _prefixed(column: pa.ChunkedArray, copy: int) -> pa.ChunkedArray:
    if copy == 0:
        return column
    return pc.binary_join_element_wise(pa.scalar(f"copy{copy:03d}/"), column, "")


def _copies(table: pa.Table, factor: int, id_columns: tuple[str, ...], extra=None) -> Iterator[pa.Table]:
    """The table's ``factor`` copies one at a time (copy ``i``'s ids prefixed ``copy<i>/``), so
    a 1000x table is streamed to its file, never held whole."""
    for copy in range(factor):
        part = table
        for name in id_columns:
            index = part.schema.get_field_index(name)
            part = part.set_column(index, name, _prefixed(part.column(name), copy))
        if extra is not None:
            part = extra(part, copy)
        yield part


def nudge_sigma(distance: float, width: int) -> float:
    """The per-dimension noise whose two nudged copies of a unit vector lie ``distance`` apart
    (cosine distance): ``1 - 1 / (1 + width * sigma^2)`` for isotropic noise."""
    return math.sqrt((1.0 / (1.0 - distance) - 1.0) / width)


def nearest_other_distances(vectors: np.ndarray, block: int = 4_096) -> np.ndarray:
    """Each vector's cosine distance to its nearest other vector (exact duplicates, distance
    below 1e-4, left out)."""
    out = np.empty(len(vectors), np.float64)
    for start in range(0, len(vectors), block):
        scores = vectors[start:start + block] @ vectors.T
        scores[scores > 1 - 1e-4] = -2.0
        out[start:start + block] = 1.0 - scores.max(axis=1)
    return out


@dataclass(frozen=True)
class CopiesBuild:
    """What writing one factor's copies cost: table writes, the ANN build, bytes on disk."""

    write_s: float
    ann_s: float
    disk_bytes: int
    graph_bytes: int
    nudge_sigma: float
    neighbour_distance: float


def _disk_bytes(target: Path) -> int:
    return sum(f.stat().st_size for f in (target / "warehouse").rglob("*") if f.is_file())


def write_copies(source: Path, target: Path, chunker: str, model_key: str, factor: int) -> CopiesBuild:
    """The partition's tables (and the documents) repeated ``factor`` times under ``target``,
    with their ANN index, published there as a generation.

    Every copy's vectors (the first included, from 2x on) are nudged by isotropic noise sized so
    that two copies of a chunk lie as far apart as a real chunk lies from its nearest other
    chunk in the source partition (the median of those distances): copies of one chunk are then
    as close to each other as real neighbours are, and no stored vector is the common centre
    of the others (:data:`NEIGHBOUR_QUANTILE`; README, "Approximate search")."""
    started = time.perf_counter()
    src, dst = Warehouse(source), Warehouse(target)
    by_chunker = {"chunker": chunker}
    documents = src.read(DOCUMENTS)
    versions = {DOCUMENTS: dst.write_parts(DOCUMENTS, documents.schema,
                                           _copies(documents, factor, ("document_id",)))}

    def own_hash(part: pa.Table, copy: int) -> pa.Table:
        i = part.schema.get_field_index("content_sha256")
        return part.set_column(i, "content_sha256", _prefixed(part.column(i), copy))

    chunks = src.read(CHUNKS, by_chunker)
    versions[CHUNKS] = dst.write_parts(
        CHUNKS, chunks.schema, _copies(chunks, factor, ("chunk_id", "document_id"), own_hash),
        by_chunker, inputs={DOCUMENTS: versions[DOCUMENTS].file})
    built_from = {CHUNKS: versions[CHUNKS].file}
    partition = {**by_chunker, "model": model_key}
    embeddings = src.read(EMBEDDINGS, partition)
    width = embeddings.column("vector").type.list_size
    base = np.asarray(embeddings.column("vector").combine_chunks().flatten().to_numpy(),
                      np.float32).reshape(-1, width)
    neighbour = float(np.quantile(nearest_other_distances(base), NEIGHBOUR_QUANTILE))
    sigma = nudge_sigma(neighbour, width) if factor > 1 else 0.0
    rng = np.random.default_rng(SEED)

    def nudged(part: pa.Table, copy: int) -> pa.Table:
        if sigma == 0.0:
            return part
        i = part.schema.get_field_index("vector")
        vectors = base + rng.normal(0, sigma, base.shape).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), width)
        return part.set_column(i, part.schema.field(i), column)

    versions[EMBEDDINGS] = dst.write_parts(
        EMBEDDINGS, embeddings.schema, _copies(embeddings, factor, ("chunk_id",), nudged), partition,
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
        versions[name] = dst.write_parts(name, tables[name].schema,
                                         _copies(tables[name], factor, ("chunk_id",)), by_chunker,
                                         inputs=built_from)
    write_s = time.perf_counter() - started
    ann = build_ann_index(dst, chunker, model_key, versions[EMBEDDINGS])
    versions[ANN_INDEX] = ann.version
    publish(dst, chunker, model_key, versions)
    return CopiesBuild(write_s, ann.seconds, _disk_bytes(target), ann.graph_bytes, sigma, neighbour)


def publish_section_edit(data_dir: Path, chunker: str, model_key: str) -> str:
    """Publishes a new generation of the served partition: its chunks file rewritten (streamed)
    with the first chunk's section heading edited, every other table the served one, re-pointed
    at the new chunks (none of them reads a section: BM25 and the vectors use ``text``). A
    serving process must map the whole new chunks file to swap. Returns the new generation's
    id."""
    from rag_pipeline.core.index.generations import current_generation
    from rag_pipeline.core.index.mapped import parquet_batches

    warehouse = Warehouse(data_dir)
    served = current_generation(warehouse, chunker, model_key)
    old_chunks = warehouse.version(CHUNKS, {"chunker": chunker})
    names = pq.read_schema(warehouse.full_path(served.files[CHUNKS])).names

    def edited() -> Iterator[pa.Table]:
        for n, batch in enumerate(parquet_batches(warehouse, served.files[CHUNKS], names)):
            part = pa.Table.from_batches([batch])
            if n == 0:
                i = part.schema.get_field_index("section")
                sections = part.column(i).to_pylist()
                part = part.set_column(i, "section", pa.array([f"{sections[0]} (edited)"] + sections[1:],
                                                              pa.string()))
            yield part

    schema = pq.read_schema(warehouse.full_path(served.files[CHUNKS]))
    chunks = warehouse.write_parts(CHUNKS, schema, edited(), {"chunker": chunker}, old_chunks.inputs)
    versions = {CHUNKS: chunks}
    for name, file in served.files.items():
        if name == CHUNKS:
            continue
        version = next(v for v in warehouse.versions(name) if v.file == file)
        inputs = {k: (chunks.file if k == CHUNKS else f) for k, f in version.inputs.items()}
        versions[name] = replace(version, inputs=inputs)
    generation, _ = publish(warehouse, chunker, model_key, versions)
    return generation.id


@dataclass(frozen=True)
class SwapRound:
    requests: int
    errors: int
    generations: dict[str, int]
    publish_s: float
    swap_s: float
    before: str
    after: str


def swap_under_load(data_dir: Path, chunker: str, model_key: str, port: int, clients: int,
                    timeout_s: float) -> SwapRound:
    """``clients`` keep asking while :func:`publish_section_edit` publishes a new generation;
    they stop a few seconds after ``/status`` names it (or at ``timeout_s``)."""
    from rag_pipeline.benchmarks import serve_load

    before = json.loads(serve_load._get(port, "/status")[1])["generation"]
    keep_going, rounds = threading.Event(), []
    keep_going.set()
    asking = threading.Thread(target=lambda: rounds.append(serve_load.run_round(
        port, clients, 0, timeout_s, serve_load.questions(), keep_going)))
    asking.start()
    started = time.perf_counter()
    try:
        after = publish_section_edit(data_dir, chunker, model_key)
        publish_s = time.perf_counter() - started
        while time.perf_counter() - started < timeout_s:
            if json.loads(serve_load._get(port, "/status", 30.0)[1])["generation"] == after:
                break
            time.sleep(0.5)
        swap_s = time.perf_counter() - started
        time.sleep(3.0)
    finally:
        keep_going.clear()
        asking.join()
    r = rounds[0]
    served = json.loads(serve_load._get(port, "/status")[1])["generation"]
    return SwapRound(len(r.latencies_ms), sum(r.errors.values()), dict(r.generations), publish_s,
                     swap_s if served == after else math.inf, before, served)


def full_sort_ranking(scores: np.ndarray, depth: int) -> np.ndarray:
    """The former ranking: every matching row sorted, then cut to ``depth``."""
    positive = np.flatnonzero(scores > 0)
    return positive[np.lexsort((positive, -scores[positive]))][:depth]


def _memory_mb() -> tuple[float, float]:
    """This process's resident set and its peak (``VmRSS``, ``VmHWM``), in MB."""
    return _status_mb(os.getpid())


def _status_fields(pid: int) -> dict[str, float]:
    """``/proc/<pid>/status`` sizes in MB (``VmRSS``, ``VmHWM``, ``RssAnon``, ``RssFile``...)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":" in line)
    return {k: int(v.split()[0]) / 1024 for k, v in fields.items() if v.strip().endswith("kB")}


def _status_mb(pid: int) -> tuple[float, float]:
    fields = _status_fields(pid)
    return fields["VmRSS"], fields["VmHWM"]


@contextmanager
def _held(lock: Path | None) -> Iterator[None]:
    """``flock`` on ``lock`` (none: nothing held), so timed runs of helpers never overlap."""
    if lock is None:
        yield
        return
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _p(values: list[float], q: float) -> float:
    from rag_pipeline.benchmarks.serve_load import percentile

    return percentile(values, q)


def measure(data_dir: Path, chunker: str, model_key: str, depth: int) -> dict:
    """Runs in a fresh process: load time and memory, exact vs ANN over the bundled questions,
    then BM25 timings."""
    from rag_pipeline.benchmarks.serve_load import questions
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.embedding.embedder import load_embedder
    from rag_pipeline.core.index.ann import DensePath, recall_at_k
    from rag_pipeline.core.index.store import load_partition
    from rag_pipeline.core.retrieval.retriever import (
        DEFAULT_ANALYZER,
        QueryVector,
        RetrievalSettings,
        Retriever,
        retrieve,
    )

    started, cpu = time.perf_counter(), time.process_time()
    index = load_partition(data_dir, chunker, model_key)
    load_s, load_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    loaded_mb, load_peak_mb = _memory_mb()
    pool = questions()
    spec = next(m for m in declared_models() if m.key == model_key)
    vectors = load_embedder(spec).embed(pool)
    settings = RetrievalSettings(depth=depth)
    paths: dict[DensePath, list[float]] = {DensePath.EXACT: [], DensePath.ANN: []}
    recalls = []
    for question, vector in zip(pool, vectors, strict=True):
        query = QueryVector(model_key, vector)
        for path, times in paths.items():
            t = time.perf_counter()
            retrieve(index, query, question, replace(settings, dense_path=path))
            times.append((time.perf_counter() - t) * 1000)
        dense = RetrievalSettings(retriever=Retriever.DENSE, depth=10, collapse_duplicates=False)
        exact = retrieve(index, query, question, replace(dense, dense_path=DensePath.EXACT))
        ann = retrieve(index, query, question, replace(dense, dense_path=DensePath.ANN))
        recalls.append(recall_at_k(np.array([h.row for h in ann.hits]),
                                   np.array([h.row for h in exact.hits])))
    scorer = index.bm25[DEFAULT_ANALYZER]
    score_ms, sort_ms, topk_ms, matching = [], [], [], []
    for question in pool:
        t = time.perf_counter()
        scores = scorer.scores(question)
        score_ms.append((time.perf_counter() - t) * 1000)
        matching.append(int((scores > 0).sum()))
        t = time.perf_counter()
        expected = full_sort_ranking(scores, depth)
        sort_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        got = scorer.top(question, depth)
        topk_ms.append((time.perf_counter() - t) * 1000)
        if not (np.array_equal(got.rows, expected) and np.array_equal(got.scores, scores[expected])):
            raise AssertionError(f"the served top-k differs from the full sort for {question!r}")
    rss_mb, peak_mb = _memory_mb()
    return {"chunks": len(index), "load_s": load_s, "load_cpu_s": load_cpu_s,
            "loaded_mb": loaded_mb, "load_peak_mb": load_peak_mb, "rss_mb": rss_mb, "peak_mb": peak_mb,
            "exact_p50": _p(paths[DensePath.EXACT], 50), "exact_p99": _p(paths[DensePath.EXACT], 99),
            "ann_p50": _p(paths[DensePath.ANN], 50), "ann_p99": _p(paths[DensePath.ANN], 99),
            "recall": float(np.mean(recalls)), "worst_recall": float(min(recalls)),
            "score_ms": statistics.median(score_ms),
            "sort_ms": statistics.median(sort_ms), "topk_ms": statistics.median(topk_ms),
            "topk_p99": _p(topk_ms, 99),
            "matching": statistics.median(matching)}


@dataclass(frozen=True)
class HttpRound:
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    dense_path: str
    rss_mb: float
    ready_s: float
    anon_mb: float
    """Of the resident set, the process's own memory (heap, arrays)."""
    file_mb: float
    """Of the resident set, mapped file pages (shared, evictable: the maps and the graph)."""


def over_http(data_dir: Path, chunker: str, requests: int, ready_timeout: float,
              query_backend: str, swap: tuple[str, int] | None = None) -> tuple[HttpRound, SwapRound | None]:
    """``rag-pipeline serve --query-backend query_backend`` on ``data_dir``: one client asks
    ``requests`` questions; with ``swap`` (model key, clients), then a new generation is
    published while that many clients ask (:func:`swap_under_load`)."""
    from rag_pipeline.benchmarks import serve_load

    port = serve_load.free_port()
    env = offline_env()
    command = [sys.executable, "-c", "from rag_pipeline.cli import main; main()", "--data-dir",
               str(data_dir), "serve", "--host", serve_load.HOST, "--port", str(port), "--chunker",
               chunker, "--poll", "5", "--query-backend", query_backend]
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        try:
            started = time.perf_counter()
            serve_load.READY_TIMEOUT_S = ready_timeout
            serve_load.wait_ready(port, server)
            ready_s = time.perf_counter() - started
            status = json.loads(serve_load._get(port, "/status")[1])
            pool = serve_load.questions()
            serve_load.run_round(port, 1, 20, 120.0, pool)
            r = serve_load.run_round(port, 1, requests, 600.0, pool)
            memory = _status_fields(server.pid)
            swapped = None if swap is None else swap_under_load(data_dir, chunker, swap[0], port, swap[1],
                                                                ready_timeout)
        finally:
            stop_process(server, 20)
    if not r.latencies_ms:
        raise SystemExit(f"no answer over HTTP: {dict(r.errors)}")
    return HttpRound(_p(r.latencies_ms, 50), _p(r.latencies_ms, 99), len(r.latencies_ms),
                     sum(r.errors.values()), status["dense_path"], memory["VmRSS"], ready_s,
                     memory["RssAnon"], memory["RssFile"] + memory.get("RssShmem", 0.0)), swapped


def check_kept_ann(target: Path, chunker: str, model_key: str) -> None:
    """Stops with a clear error when kept copies were published without this version's ANN index
    (none, or an HNSW graph of an earlier version): their figures would be the scan's."""
    warehouse = Warehouse(target)
    generation = current_generation(warehouse, chunker, model_key)
    table = None if generation is None else generation.files.get(ANN_INDEX)
    if table is None or "nprobe" not in warehouse.read_file(table).column_names:
        raise SystemExit(f"error: the copies kept in {target} have no ANN index of this version: "
                         f"remove {target} to rebuild them")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--chunker", default="header")
    parser.add_argument("--model", default=None, help="Model key (default: the first declared).")
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--requests", type=int, default=300, help="HTTP questions per factor.")
    parser.add_argument("--ready-timeout", type=float, default=900.0,
                        help="Seconds a server may take to load before it counts as failed.")
    parser.add_argument("--query-backend", default="onnxruntime",
                        choices=["onnxruntime", "openvino", "model"],
                        help="How the server embeds questions (serve --query-backend).")
    parser.add_argument("--keep", type=Path,
                        help="Keep each factor's copies in this folder (x<factor>/) and reuse "
                             "the ones already built there (their build figures are kept beside).")
    parser.add_argument("--lock", type=Path,
                        help="Hold this file's lock (flock) while timing (loads, questions, HTTP).")
    parser.add_argument("--swap", action="store_true",
                        help="After the HTTP round, publish a new generation (a chunks file with one "
                             "section edited) while clients ask, and count failed requests.")
    parser.add_argument("--swap-clients", type=int, default=4)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from rag_pipeline.core.config.keys import declared_models

    model_key = args.model or declared_models()[0].key
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.chunker, model_key, args.depth)))
        return
    print(f"{'factor':>6s} {'chunks':>8s} {'sigma':>6s} {'write s':>8s} {'ann s':>7s} {'disk GB':>7s} "
          f"{'maps GB':>7s} {'graph GB':>8s} {'load s':>7s} {'load cpu':>8s} {'rss GB':>6s} "
          f"{'peak GB':>7s} {'exact p50/p99':>14s} {'ann p50/p99':>12s} {'R@10':>6s} {'bm25 full':>9s} "
          f"{'bm25 top':>8s} {'http p50/p99':>13s} {'path':>5s} {'serve GB':>8s} {'anon/file':>9s}",
          flush=True)
    first = last = None
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        for factor in args.factors:
            target = (args.keep or Path(tmp)) / f"x{factor}"
            record = target / "build.json"
            if args.keep is not None and record.is_file():
                check_kept_ann(target, args.chunker, model_key)
                built = CopiesBuild(**json.loads(record.read_text()))
            else:
                built = write_copies(args.data_dir, target, args.chunker, model_key, factor)
                record.write_text(json.dumps(asdict(built)))
            with _held(args.lock):
                out = subprocess.run(
                    [sys.executable, "-m", "rag_pipeline.benchmarks.scale", "--chunker", args.chunker,
                     "--model", model_key, "--depth", str(args.depth), "--measure", str(target)],
                    check=True, capture_output=True, text=True).stdout
                m = json.loads(out.strip().splitlines()[-1])
                http, swapped = over_http(target, args.chunker, args.requests, args.ready_timeout,
                                          args.query_backend,
                                          (model_key, args.swap_clients) if args.swap else None)
            maps = sum(f.stat().st_size for f in (target / MAP_CACHE_DIR).rglob("*") if f.is_file())
            gb = 1024 ** 3
            print(f"{factor:5d}x {m['chunks']:8d} {built.nudge_sigma:6.4f} {built.write_s:8.1f} "
                  f"{built.ann_s:7.1f} {built.disk_bytes / gb:7.2f} {maps / gb:7.2f} "
                  f"{built.graph_bytes / gb:8.3f} {m['load_s']:7.2f} "
                  f"{m['load_cpu_s']:8.2f} {m['rss_mb'] / 1024:6.2f} {m['peak_mb'] / 1024:7.2f} "
                  f"{m['exact_p50']:6.2f}/{m['exact_p99']:7.2f} {m['ann_p50']:5.2f}/{m['ann_p99']:6.2f} "
                  f"{m['recall']:6.4f} {m['score_ms'] + m['sort_ms']:9.2f} {m['topk_ms']:8.2f} "
                  f"{http.p50_ms:6.2f}/{http.p99_ms:6.2f} {http.dense_path:>5s} "
                  f"{http.rss_mb / 1024:8.2f} {http.anon_mb / 1024:4.2f}/{http.file_mb / 1024:4.2f}  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            if swapped is not None:
                print(f"       swap under load ({args.swap_clients} clients): {swapped.requests} answered, "
                      f"{swapped.errors} failed; generation {swapped.before} -> {swapped.after}, "
                      f"published in {swapped.publish_s:.1f} s, served {swapped.swap_s:.1f} s after the "
                      f"publish began; answers by generation {swapped.generations}", flush=True)
            last = (factor, m, built, http, maps)
            first = first or last
            if args.keep is None:
                shutil.rmtree(target)
    if last is None:
        return
    factor, m, built, http, maps = last
    per_million = 1e6 / m["chunks"]
    disk = (built.disk_bytes + maps) / 1024 ** 3 * per_million
    memory = http.rss_mb / 1024 * per_million
    build_min = (built.write_s + built.ann_s) / 60 * per_million
    print(f"per million chunks (measured at {factor}x): disk {disk:.2f} GB (tables, index and "
          f"mapped copies), serving memory "
          f"{memory:.2f} GB, build (tables + ANN) {build_min:.1f} min; ANN index build alone "
          f"{built.ann_s / 60 * per_million:.1f} min")
    if first[0] != factor:
        slope = (http.rss_mb - first[3].rss_mb) / 1024 / (m["chunks"] - first[1]["chunks"]) * 1e6
        print(f"serving memory above the {first[0]}x server ({first[3].rss_mb / 1024:.2f} GB: model, "
              f"runtimes, libraries): {slope:.2f} GB per million chunks")
    for millions in (10, 100):
        print(f"on paper, {millions} M chunks: disk {disk * millions:.0f} GB, serving memory "
              f"{memory * millions:.0f} GB, build {build_min * millions / 60:.1f} h on this machine")
    print(f"{factor}x: {m['chunks']} chunks, ann recall@10 {m['recall']:.3f}, p50 {http.p50_ms:.1f} ms, "
          f"p99 {http.p99_ms:.1f} ms, memory {http.rss_mb / 1024:.1f} GB")


if __name__ == "__main__":
    main()
