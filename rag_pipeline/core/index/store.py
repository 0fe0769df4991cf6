"""One index partition (chunker x model) loaded for querying: its served generation.

Chunks, their vectors (as one float32 matrix, rows aligned with the chunks), the BM25 scorers
of both analyzers and the documents' titles, paths and page maps, all from the files of one
published generation (:mod:`rag_pipeline.core.index.generations`). The cache key is the generation,
so a newly published one is picked up without restarting, and a loaded one never changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rag_pipeline.core.index.ann import AnnIndex
from rag_pipeline.core.index.ann_index import open_ann_index
from rag_pipeline.core.index.bm25 import Bm25Scorer, Bm25Tables, build_bm25_tables
from rag_pipeline.core.index.generations import Generation, current_generation, current_generations
from rag_pipeline.core.index.invariants import vector_matrix
from rag_pipeline.core.ingest import Anchor
from rag_pipeline.core.storage.table_names import ANN_INDEX, BM25_TABLES, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline.core.text.analyzers import Analyzer


class UnknownPartitionError(Exception):
    """The requested chunker or model has no built partition."""


@dataclass(frozen=True)
class DocumentInfo:
    document_id: str
    title: str
    path: str
    format: str
    anchors: tuple[Anchor, ...]


@dataclass(frozen=True)
class PartitionIndex:
    chunker: str
    model_key: str
    model_name: str
    model_fingerprint: str
    generation: str
    published_at: str
    chunk_ids: list[str]
    document_ids: list[str]
    sections: list[str]
    contents: list[str]
    texts: list[str]
    starts: np.ndarray
    ends: np.ndarray
    content_hashes: list[str]
    vectors: np.ndarray
    bm25: dict[Analyzer, Bm25Scorer]
    documents: dict[str, DocumentInfo]
    rows_by_content: dict[str, tuple[int, ...]]
    """Every row holding a content (by ``content_sha256``), in partition order."""
    ann: AnnIndex | None = None
    """The generation's ANN index over ``vectors`` (checked against them), if it has one."""

    def __len__(self) -> int:
        return len(self.chunk_ids)


def _read_dictionary_encoded(warehouse: Warehouse, file: str) -> pa.Table:
    """The table file with its string columns dictionary-encoded, as Parquet stores them: a chunk
    id or term repeated on every posting is decoded once, not once per row (load speed at scale)."""
    path = warehouse.full_path(file)
    schema = pq.read_schema(path, filesystem=warehouse.fs)
    return pq.read_table(path, filesystem=warehouse.fs,
                         read_dictionary=[f.name for f in schema if pa.types.is_string(f.type)])


def _bm25_scorers(bm25_tables: list[pa.Table], chunker: str, chunk_order: list[str],
                  texts: list[str]) -> dict[Analyzer, Bm25Scorer]:
    """One scorer per analyzer, from the generation's four BM25 tables; an analyzer an older
    index has no statistics for is built in memory from the chunk texts."""
    scorers = {}
    for analyzer in Analyzer:
        parts = [t.filter(pc.equal(t.column("analyzer"), analyzer.value)).drop_columns(["analyzer"])
                 for t in bm25_tables]
        stored = Bm25Tables(*parts)
        if stored.params.num_rows == 0:
            stored = build_bm25_tables(chunk_order, texts, analyzer)
        scorer = Bm25Scorer.from_tables(stored, analyzer)
        if scorer.chunk_ids != chunk_order:
            raise IndexNotBuiltError(f"BM25 statistics of {chunker} are out of date with its "
                                     "chunks: re-run `rag-pipeline index`")
        scorers[analyzer] = scorer
    return scorers


def served_generation(warehouse: Warehouse, chunker: str, model_key: str) -> Generation:
    """The published generation of a partition, or a clear error naming what is built."""
    generation = current_generation(warehouse, chunker, model_key)
    if generation is not None:
        return generation
    published = current_generations(warehouse)
    if not published:
        raise IndexNotBuiltError("no index built yet: run `rag-pipeline index` first")
    chunkers = sorted({g.chunker for g in published})
    if chunker not in chunkers:
        raise UnknownPartitionError(f"no published index for chunker {chunker!r}; published: "
                                    f"{chunkers}")
    models = sorted(g.model for g in published if g.chunker == chunker)
    raise UnknownPartitionError(f"no published index for {chunker} x {model_key!r}; published "
                                f"models: {models}")


def load_partition(data_dir: Path, chunker: str, model_key: str,
                   location: str | None = None) -> PartitionIndex:
    """The partition's served generation, from the process cache when it is already loaded.
    Reading ``CURRENT.json`` is the only I/O when nothing was published since."""
    warehouse = Warehouse(Path(data_dir), location)
    for attempt in range(3):
        generation = served_generation(warehouse, chunker, model_key)
        try:
            return _load(str(Path(data_dir).resolve()), warehouse.location, generation)
        except FileNotFoundError:
            # A generation two publishes old may be collected between reading CURRENT.json
            # and its files; the newer CURRENT.json is then whole.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@lru_cache(maxsize=4)
def _load(data_dir: str, location: str, generation: Generation) -> PartitionIndex:
    warehouse = Warehouse(Path(data_dir), location)
    missing = generation.missing_tables()
    if missing:
        raise IndexNotBuiltError(f"generation {generation.id} of {generation.chunker} x "
                                 f"{generation.model} has no {', '.join(missing)}: re-run "
                                 "`rag-pipeline index`")
    files = generation.files
    chunks = warehouse.read_file(files[CHUNKS])
    embeddings = warehouse.read_file(files[EMBEDDINGS])
    chunker, model_key = generation.chunker, generation.model
    chunk_ids = chunks.column("chunk_id").to_pylist()
    row_of = {c: i for i, c in enumerate(embeddings.column("chunk_id").to_pylist())}
    missing = [c for c in chunk_ids if c not in row_of]
    if missing:
        raise IndexNotBuiltError(f"{len(missing)} chunks of {chunker} have no vector in "
                                 f"{model_key} (generation {generation.id}): re-run "
                                 "`rag-pipeline index`")
    stamps = {(n, f) for n, f in zip(embeddings.column("model_name").to_pylist(),
                                     embeddings.column("model_fingerprint").to_pylist(), strict=True)}
    if len(stamps) > 1:
        raise IndexNotBuiltError(f"partition {chunker} x {model_key} mixes models: {sorted(stamps)}")
    (model_name, fingerprint), = stamps or {tuple(model_key.split("@", 1))}
    if f"{model_name}@{fingerprint}" != model_key:
        raise IndexNotBuiltError(f"partition {model_key} holds vectors stamped {model_name}@{fingerprint}")
    documents = {
        row["document_id"]: DocumentInfo(row["document_id"], row["title"], row["path"],
                                         row["format"],
                                         tuple(Anchor(**a) for a in row["anchors"] or ()))
        for row in warehouse.read_file(files[DOCUMENTS], columns=[
            "document_id", "title", "path", "format", "anchors", "status"]).to_pylist()
        if row["status"] == "ok"}
    order = np.fromiter((row_of[c] for c in chunk_ids), np.int64, len(chunk_ids))
    matrix = vector_matrix(embeddings)
    # Stored in chunk order (every build writes them so): no reordered copy of the matrix.
    vectors = matrix if np.array_equal(order, np.arange(len(order))) else np.ascontiguousarray(matrix[order])
    ann = open_ann_index(warehouse, files[ANN_INDEX], vectors) if ANN_INDEX in files else None
    texts = chunks.column("text").to_pylist()
    content_hashes = chunks.column("content_sha256").to_pylist()
    rows_by_content: dict[str, list[int]] = {}
    for row, content_hash in enumerate(content_hashes):
        rows_by_content.setdefault(content_hash, []).append(row)
    return PartitionIndex(
        chunker=chunker, model_key=model_key, model_name=model_name, model_fingerprint=fingerprint,
        generation=generation.id, published_at=generation.published_at,
        chunk_ids=chunk_ids, document_ids=chunks.column("document_id").to_pylist(),
        sections=chunks.column("section").to_pylist(), contents=chunks.column("content").to_pylist(),
        texts=texts,
        starts=chunks.column("from").to_numpy(), ends=chunks.column("to").to_numpy(),
        content_hashes=content_hashes,
        vectors=vectors,
        bm25=_bm25_scorers([_read_dictionary_encoded(warehouse, files[name]) for name in BM25_TABLES],
                           chunker, chunk_ids, texts),
        documents=documents,
        rows_by_content={h: tuple(rows) for h, rows in rows_by_content.items()},
        ann=ann,
    )
