"""The ``ann_index`` table of a chunker x model partition: its inverted-file index and what it was
built from.

One row per partition: the index file (``part-<sha256>.faiss``, content-named beside the table's
Parquet file, immutable; called the graph file below, as the column is), the row count, the
vectors' fingerprint, the cell count and calibrated ``nprobe`` and the recall measured at build,
written with ``inputs={embeddings: <file>}``, so a generation publishes it only beside the
embeddings file it was built from (``core/index/tables.py``); a model change is another
partition and builds another graph. The graph's keys are rows in chunk order, the order the
served partition's vectors are in (:func:`vectors_in_chunk_order`). On load the index is opened
memory-mapped (on an object store it is copied once into a local cache folder first) and checked
against the generation's vectors: count and fingerprint.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rag_pipeline.core.embedding.vectors import vector_matrix
from rag_pipeline.core.index.ann import AnnIndex, AnnMismatchError
from rag_pipeline.core.index.mapped import mapped_table, mapped_vectors
from rag_pipeline.core.storage.table_names import ANN_INDEX, CHUNKS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, TableVersion, Warehouse

__all__ = ["GRAPH_SUFFIX", "INDEX_SUFFIXES", "AnnBuild", "ann_graph_files", "ann_index_whole",
           "build_ann_index", "graph_damage",
           "open_ann_index", "vectors_in_chunk_order"]

GRAPH_SUFFIX = ".faiss"
INDEX_SUFFIXES = (GRAPH_SUFFIX, ".usearch")
"""Index files garbage collection knows: this version's, and the HNSW graphs of earlier ones."""
CACHE_DIR = "ann_cache"
"""Under the data folder: graphs copied from an object store, by content name."""


def vectors_in_chunk_order(chunk_ids: list[str], embeddings: pa.Table) -> np.ndarray:
    """The embeddings' vectors as one float32 matrix whose row ``i`` is chunk ``chunk_ids[i]``'s;
    a chunk without a vector is an error."""
    row_of = {c: i for i, c in enumerate(embeddings.column("chunk_id").to_pylist())}
    missing = [c for c in chunk_ids if c not in row_of]
    if missing:
        raise IndexNotBuiltError(f"{len(missing)} chunks have no vector (first: {missing[0]}): re-run "
                                 "`rag-pipeline index`")
    return np.ascontiguousarray(vector_matrix(embeddings)[[row_of[c] for c in chunk_ids]])


def mapped_in_chunk_order(warehouse: Warehouse, chunks_file: str, embeddings_file: str) -> np.ndarray:
    """:func:`vectors_in_chunk_order` of two table files, memory-mapped
    (:func:`rag_pipeline.core.index.mapped.mapped_vectors`): no copy of the matrix in memory."""
    chunk_ids = mapped_table(warehouse, chunks_file, ["chunk_id"]).column("chunk_id").combine_chunks()
    vector_ids = mapped_table(warehouse, embeddings_file, ["chunk_id"]).column("chunk_id").combine_chunks()
    found = pc.index_in(chunk_ids, value_set=vector_ids)
    if found.null_count:
        first = chunk_ids.filter(found.is_null())[0].as_py()
        raise IndexNotBuiltError(f"{found.null_count} chunks have no vector (first: {first}): re-run "
                                 "`rag-pipeline index`")
    order = found.to_numpy().astype(np.int64)
    in_order = len(order) == len(vector_ids) and np.array_equal(order, np.arange(len(order)))
    return mapped_vectors(warehouse, embeddings_file, None if in_order else order)


@dataclass(frozen=True)
class AnnBuild:
    """What building a partition's graph wrote and measured."""

    version: TableVersion
    rows: int
    graph_bytes: int
    seconds: float
    reused: bool = False
    """The partition's index was already built from these embeddings: nothing was rebuilt (an
    index trained on several threads need not be byte-identical, so rebuilding could publish anew)."""


def _table(graph_file: str, index: AnnIndex, dimension: int, seconds: float) -> pa.Table:
    return pa.table({
        "graph": [graph_file], "rows": pa.array([index.rows], pa.int64()),
        "fingerprint": [index.fingerprint],
        "dimension": pa.array([dimension], pa.int32()),
        "nlist": pa.array([index.nlist], pa.int32()),
        "nprobe": pa.array([index.nprobe], pa.int32()),
        "build_seconds": pa.array([seconds], pa.float64()),
        "measured_recall": pa.array([index.measured_recall], pa.float64()),
    })


def _empty_table(dimension: int) -> pa.Table:
    """The table of a partition without vectors: no graph file (``graph`` empty), 0 rows."""
    return pa.table({
        "graph": [""], "rows": pa.array([0], pa.int64()), "fingerprint": [""],
        "dimension": pa.array([dimension], pa.int32()), "nlist": pa.array([0], pa.int32()),
        "nprobe": pa.array([0], pa.int32()),
        "build_seconds": pa.array([0.0], pa.float64()),
        "measured_recall": pa.array([None], pa.float64()),
    })


def _graph_name(digest: str) -> str:
    return f"part-{digest[:16]}{GRAPH_SUFFIX}"


def graph_damage(warehouse: Warehouse, graph_file: str) -> str | None:
    """Why the graph file is not the one its table names, or None when it is whole: a graph is
    named by the digest of its bytes when it is built (``part-<sha256 prefix>.faiss``), so a
    truncated or altered file no longer matches its name. A missing file is not damage here
    (:class:`FileNotFoundError` when it is opened)."""
    raw = warehouse.get_bytes(graph_file)
    if raw is None or not Path(graph_file).name.startswith("part-"):
        return None
    if _graph_name(hashlib.sha256(raw).hexdigest()) != Path(graph_file).name:
        return (f"the ANN index file {warehouse.full_path(graph_file)} is damaged ({len(raw)} "
                "bytes whose digest does not match its name): the exact scan serves until the "
                "next `rag-pipeline index` rebuilds it")
    return None


_WHOLE_GRAPHS: dict[tuple[str, int], bool] = {}
"""Graph files found whole or not, by their path and size: a process planning again and again
(the sensor) reads each graph once (a build reads it again: :func:`build_ann_index`)."""


def ann_index_whole(warehouse: Warehouse, table_file: str) -> bool:
    """Whether an ``ann_index`` table file and the graph it names are what
    :func:`build_ann_index` would reuse: readable, and its graph there and whole (or a partition
    without vectors). A damaged one is rebuilt by the next embeddings run."""
    return _reusable(warehouse, table_file, remember=True) is not None


def _reusable(warehouse: Warehouse, table_file: str, remember: bool) -> tuple[dict, int] | None:
    """The row of an ``ann_index`` table file and its graph's size in bytes (0 for a partition
    without vectors) when both can be reused, else None: the table readable, not an HNSW graph
    of an earlier version (no ``nprobe``), and its graph there and whole. With ``remember``, a
    graph's digest is checked once per path and size (:data:`_WHOLE_GRAPHS`); a build checks
    it again."""
    row = _readable_row(warehouse, table_file)
    if row is None:
        return None
    if row["rows"] == 0 and not row["graph"]:
        return row, 0
    size = warehouse.get_file_size(row["graph"])
    if size is None or "nprobe" not in row:
        return None
    key = (warehouse.full_path(row["graph"]), size)
    if not remember or key not in _WHOLE_GRAPHS:
        _WHOLE_GRAPHS[key] = graph_damage(warehouse, row["graph"]) is None
    return (row, size) if _WHOLE_GRAPHS[key] else None


def _readable_row(warehouse: Warehouse, table_file: str) -> dict | None:
    """The one row of an ``ann_index`` table file, or None when the file cannot be read."""
    try:
        return warehouse.read_file(table_file).to_pylist()[0]
    except (OSError, pa.ArrowException, IndexError):
        return None


def build_ann_index(warehouse: Warehouse, chunker: str, model: str,
                    embeddings: TableVersion, threads: int = 0) -> AnnBuild:
    """Builds the partition's graph from the embeddings file (rows in the order of the chunks it
    was built from), writes the graph file and then the ``ann_index`` table; when the latest
    table was built from this very embeddings file and its graph is there, reuses it.

    Args:
        warehouse: Where the tables are.
        chunker: The partition's chunker.
        model: The partition's model key.
        embeddings: The embeddings version to index (its ``inputs`` name the chunks file).
        threads: Build threads (0: every core).
    """
    partition = {"chunker": chunker, "model": model}
    previous = warehouse.version(ANN_INDEX, partition)
    if previous is not None and previous.inputs == {EMBEDDINGS: embeddings.file}:
        reusable = _reusable(warehouse, previous.file, remember=False)
        if reusable is not None:
            row, size = reusable
            return AnnBuild(previous, int(row["rows"]), size, 0.0, reused=True)
    chunks_file = embeddings.inputs.get(CHUNKS)
    if chunks_file is None:
        raise IndexNotBuiltError(f"embeddings {embeddings.file} do not name the chunks they were "
                                 "built from: re-run `rag-pipeline index`")
    vectors = mapped_in_chunk_order(warehouse, chunks_file, embeddings.file)
    if len(vectors) == 0:
        # A partition without chunks (a corpus emptied, or whose every document failed): no
        # graph to build; its table says so and the partition is published empty.
        version = warehouse.write(ANN_INDEX, _empty_table(vectors.shape[1]), partition,
                                  inputs={EMBEDDINGS: embeddings.file})
        return AnnBuild(version, 0, 0, 0.0)
    started = time.perf_counter()
    index = AnnIndex.build(vectors, threads=threads)
    seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="ann-") as tmp:
        path = Path(tmp) / f"graph{GRAPH_SUFFIX}"
        index.save(path)
        raw = path.read_bytes()
    graph_file = (f"{warehouse.partition_dir(ANN_INDEX, partition)}/"
                  f"{_graph_name(hashlib.sha256(raw).hexdigest())}")
    if warehouse.get_file_size(graph_file) != len(raw) or graph_damage(warehouse, graph_file):
        warehouse.put_bytes(graph_file, raw)
    version = warehouse.write(ANN_INDEX, _table(graph_file, index, vectors.shape[1], seconds), partition,
                              inputs={EMBEDDINGS: embeddings.file})
    return AnnBuild(version, index.rows, len(raw), seconds)


def _local_graph(warehouse: Warehouse, graph_file: str) -> Path:
    """A local path of the graph: the file itself, or its copy in the cache folder."""
    if warehouse.local:
        return Path(warehouse.full_path(graph_file))
    cached = warehouse.data_dir / CACHE_DIR / Path(graph_file).name
    if not cached.is_file():
        raw = warehouse.get_bytes(graph_file)
        if raw is None:
            raise FileNotFoundError(graph_file)
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.tmp")
        tmp.write_bytes(raw)
        tmp.replace(cached)
    return cached


def open_ann_index(warehouse: Warehouse, table_file: str, vectors: np.ndarray) -> AnnIndex | None:
    """The generation's index, memory-mapped and checked against the partition's ``vectors``
    (:class:`rag_pipeline.core.index.ann.AnnMismatchError` when it was built from others or its
    file is damaged, checked before it is mapped: :func:`graph_damage`); none
    when the table describes an HNSW graph of an earlier version of this project (the exact scan
    then serves, and the next ``rag-pipeline index`` builds the inverted file), or a partition
    without vectors."""
    row = warehouse.read_file(table_file).to_pylist()[0]
    if "nprobe" not in row:
        return None  # an HNSW graph of an earlier version: the scan serves until `index` rebuilds it
    if not row["graph"]:
        return None  # a partition without vectors: nothing to search
    if warehouse.get_file_size(row["graph"]) is None:
        raise FileNotFoundError(warehouse.full_path(row["graph"]))
    damage = graph_damage(warehouse, row["graph"])
    if damage is not None:
        raise AnnMismatchError(damage)
    index = AnnIndex.open(_local_graph(warehouse, row["graph"]), rows=int(row["rows"]),
                          fingerprint=row["fingerprint"], nprobe=int(row["nprobe"]),
                          measured_recall=row.get("measured_recall"))
    index.check_serves(vectors)
    return index


def ann_graph_files(warehouse: Warehouse, table_files: set[str]) -> set[str]:
    """The graph files named by those of ``table_files`` that are ``ann_index`` files (what
    garbage collection must keep beside them)."""
    graphs = {warehouse.read_file(f, columns=["graph"]).column("graph")[0].as_py()
              for f in table_files if f.startswith(f"{ANN_INDEX}/")}
    return {graph for graph in graphs if graph}
