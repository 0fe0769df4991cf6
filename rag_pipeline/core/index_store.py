"""One index partition (chunker x model) loaded for querying, once per process.

Chunks, their vectors (as one float32 matrix, rows aligned with the chunks), the BM25 scorers
of both analyzers and the documents' titles, paths and page maps. The cache key includes the
files' modification times, so a re-index is picked up without restarting.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from rag_pipeline.core.analyzers import Analyzer
from rag_pipeline.core.bm25 import Bm25Scorer, Bm25Tables, build_bm25_tables
from rag_pipeline.core.index_tables import BM25_TABLES
from rag_pipeline.core.invariants import vector_matrix
from rag_pipeline.core.warehouse import IndexNotBuiltError, Warehouse


class UnknownPartitionError(Exception):
    """The requested chunker or model has no built partition."""


@dataclass(frozen=True)
class DocumentInfo:
    document_id: str
    title: str
    path: str
    format: str
    page_starts: tuple[int, ...]


@dataclass(frozen=True)
class PartitionIndex:
    chunker: str
    model_key: str
    model_name: str
    model_fingerprint: str
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

    def __len__(self) -> int:
        return len(self.chunk_ids)


def _bm25_scorers(warehouse: Warehouse, chunker: str, chunk_order: list[str],
                  texts: list[str]) -> dict[Analyzer, Bm25Scorer]:
    """One scorer per analyzer, from the chunker's BM25 tables (each file read once); an
    analyzer an older index has no statistics for is built in memory from the chunk texts."""
    tables = [warehouse.read(name, {"chunker": chunker}) for name in BM25_TABLES]
    scorers = {}
    for analyzer in Analyzer:
        parts = [t.filter(pc.equal(t.column("analyzer"), analyzer.value)).drop_columns(["analyzer"])
                 for t in tables]
        stored = Bm25Tables(*parts)
        if stored.params.num_rows == 0:
            stored = build_bm25_tables(chunk_order, texts, analyzer)
        scorer = Bm25Scorer.from_tables(stored, analyzer)
        if scorer.chunk_ids != chunk_order:
            raise IndexNotBuiltError(f"BM25 statistics of {chunker} are out of date with its "
                                     "chunks: re-run `rag-pipeline index`")
        scorers[analyzer] = scorer
    return scorers


def _signature(warehouse: Warehouse, chunker: str, model_key: str) -> tuple:
    paths = [warehouse.part_path("chunks", {"chunker": chunker}),
             warehouse.part_path("embeddings", {"chunker": chunker, "model": model_key}),
             warehouse.part_path("documents")]
    paths += [warehouse.part_path(name, {"chunker": chunker}) for name in BM25_TABLES]
    return tuple(p.stat().st_mtime_ns if p.is_file() else None for p in paths)


def load_partition(data_dir: Path, chunker: str, model_key: str) -> PartitionIndex:
    """The partition, from the process cache when its files are unchanged."""
    warehouse = Warehouse(data_dir)
    return _load(str(Path(data_dir).resolve()), chunker, model_key,
                 _signature(warehouse, chunker, model_key))


@lru_cache(maxsize=8)
def _load(data_dir: str, chunker: str, model_key: str, signature: tuple) -> PartitionIndex:
    warehouse = Warehouse(Path(data_dir))
    if not warehouse.exists("documents"):
        raise IndexNotBuiltError("no index built yet: run `rag-pipeline index` first")
    built_chunkers = sorted(p["chunker"] for p in warehouse.partitions("chunks"))
    if chunker not in built_chunkers:
        raise UnknownPartitionError(f"no chunks for chunker {chunker!r}; built: {built_chunkers}")
    built_models = sorted(p["model"] for p in warehouse.partitions("embeddings")
                          if p["chunker"] == chunker)
    if model_key not in built_models:
        raise UnknownPartitionError(f"no embeddings for {chunker} x {model_key!r}; built models: "
                                    f"{built_models}")
    chunks = warehouse.read("chunks", {"chunker": chunker})
    embeddings = warehouse.read("embeddings", {"chunker": chunker, "model": model_key})
    chunk_ids = chunks.column("chunk_id").to_pylist()
    row_of = {c: i for i, c in enumerate(embeddings.column("chunk_id").to_pylist())}
    missing = [c for c in chunk_ids if c not in row_of]
    if missing:
        raise IndexNotBuiltError(f"{len(missing)} chunks of {chunker} have no vector in "
                                 f"{model_key}: re-run `rag-pipeline index`")
    stamps = {(n, f) for n, f in zip(embeddings.column("model_name").to_pylist(),
                                     embeddings.column("model_fingerprint").to_pylist(), strict=True)}
    if len(stamps) != 1:
        raise IndexNotBuiltError(f"partition {chunker} x {model_key} mixes models: {sorted(stamps)}")
    (model_name, fingerprint), = stamps
    if f"{model_name}@{fingerprint}" != model_key:
        raise IndexNotBuiltError(f"partition {model_key} holds vectors stamped {model_name}@{fingerprint}")
    vectors = vector_matrix(embeddings)[[row_of[c] for c in chunk_ids]]
    documents = {
        row["document_id"]: DocumentInfo(row["document_id"], row["title"], row["path"],
                                         row["format"], tuple(row["page_starts"] or ()))
        for row in warehouse.read("documents", columns=[
            "document_id", "title", "path", "format", "page_starts", "status"]).to_pylist()
        if row["status"] == "ok"}
    rows_by_content: dict[str, list[int]] = {}
    for row, content_hash in enumerate(chunks.column("content_sha256").to_pylist()):
        rows_by_content.setdefault(content_hash, []).append(row)
    return PartitionIndex(
        chunker=chunker, model_key=model_key, model_name=model_name, model_fingerprint=fingerprint,
        chunk_ids=chunk_ids, document_ids=chunks.column("document_id").to_pylist(),
        sections=chunks.column("section").to_pylist(), contents=chunks.column("content").to_pylist(),
        texts=chunks.column("text").to_pylist(),
        starts=chunks.column("from").to_numpy(), ends=chunks.column("to").to_numpy(),
        content_hashes=chunks.column("content_sha256").to_pylist(),
        vectors=np.ascontiguousarray(vectors),
        bm25=_bm25_scorers(warehouse, chunker, chunk_ids, chunks.column("text").to_pylist()),
        documents=documents,
        rows_by_content={h: tuple(rows) for h, rows in rows_by_content.items()},
    )
