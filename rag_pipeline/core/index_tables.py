"""Builds the index tables (documents, chunks, embeddings, BM25 statistics) as Arrow tables.

Each function takes what its table is made from and returns the table plus the figures a run
reports. Nothing here knows where tables are stored or who calls it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rag_pipeline.core.analyzers import Analyzer
from rag_pipeline.core.bm25 import build_bm25_tables
from rag_pipeline.core.chunking import (
    ChunkingSettings,
    ChunkingStrategy,
    chunk_document,
    offset_errors,
)
from rag_pipeline.core.documents import DocumentRecord
from rag_pipeline.core.invariants import vector_matrix
from rag_pipeline.core.models import ModelMismatchError, TextEmbedder
from rag_pipeline.core.versions import PIPELINE_VERSION
from rag_pipeline.core.wordpieces import WordpieceCounter

DOCUMENTS_SCHEMA = pa.schema([
    ("document_id", pa.string()), ("path", pa.string()), ("title", pa.string()),
    ("canonical_text", pa.large_string()), ("n_chars", pa.int64()),
    ("content_sha256", pa.string()), ("format", pa.string()), ("extractor", pa.string()),
    ("extractor_version", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("page_starts", pa.list_(pa.int64())), ("pipeline_version", pa.string()),
])


def documents_table(records: Sequence[DocumentRecord]) -> pa.Table:
    return pa.table({
        "document_id": [r.document_id for r in records], "path": [r.path for r in records],
        "title": [r.title for r in records],
        "canonical_text": [r.canonical_text for r in records],
        "n_chars": [len(r.canonical_text) for r in records],
        "content_sha256": [r.content_sha256 for r in records],
        "format": [r.format for r in records], "extractor": [r.extractor for r in records],
        "extractor_version": [r.extractor_version for r in records],
        "status": [r.status for r in records], "error": [r.error for r in records],
        "page_starts": [list(r.page_starts) for r in records],
        "pipeline_version": [r.pipeline_version for r in records],
    }, schema=DOCUMENTS_SCHEMA)


def document_records(table: pa.Table) -> list[DocumentRecord]:
    return [DocumentRecord(
        document_id=row["document_id"], path=row["path"], title=row["title"],
        canonical_text=row["canonical_text"], content_sha256=row["content_sha256"],
        format=row["format"], extractor=row["extractor"],
        extractor_version=row["extractor_version"], status=row["status"], error=row["error"],
        page_starts=tuple(row["page_starts"] or ()), pipeline_version=row["pipeline_version"],
    ) for row in table.to_pylist()]


class OffsetError(Exception):
    """A chunk's content is not exactly ``canonical[from:to]``: a bug, never a data problem."""


@dataclass(frozen=True)
class ChunkStats:
    chunks: int
    truncated: int
    embedded_wordpieces: int
    header_wordpieces: int

    @property
    def header_share(self) -> float:
        return self.header_wordpieces / self.embedded_wordpieces if self.embedded_wordpieces else 0.0


def chunks_table(documents: Sequence[DocumentRecord], strategy: ChunkingStrategy,
                 counter: WordpieceCounter,
                 settings: ChunkingSettings | None = None) -> tuple[pa.Table, ChunkStats]:
    """Chunks every ``ok`` document; word-pieces are counted on ``text`` (what is embedded)."""
    chunks = []
    for doc in documents:
        if not doc.ok:
            continue
        doc_chunks = chunk_document(doc.document_id, doc.title, doc.canonical_text, strategy,
                                    settings, doc.page_starts)
        bad = offset_errors(doc.canonical_text, doc_chunks)
        if bad:
            raise OffsetError(f"{len(bad)} chunk(s) of {doc.document_id} do not slice exactly: "
                              f"{bad[:3]}")
        chunks.extend(doc_chunks)
    wordpieces = counter.count([c.text for c in chunks])
    headers = counter.count_plain([c.header for c in chunks]) if strategy.header else [0] * len(chunks)
    table = pa.table({
        "chunk_id": [c.chunk_id for c in chunks],
        "document_id": [c.document_id for c in chunks],
        "ordinal": pa.array([c.ordinal for c in chunks], pa.int32()),
        "section": [c.section for c in chunks],
        "header": [c.header for c in chunks],
        "text": [c.text for c in chunks],
        "content": [c.content for c in chunks],
        "from": pa.array([c.start for c in chunks], pa.int64()),
        "to": pa.array([c.end for c in chunks], pa.int64()),
        "content_sha256": [c.content_sha256 for c in chunks],
        "text_sha256": [c.text_sha256 for c in chunks],
        "wordpieces": pa.array(wordpieces, pa.int32()),
        "header_wordpieces": pa.array(headers, pa.int32()),
        "truncated": [counter.truncated(n) for n in wordpieces],
        "tokenizer": [counter.spec.key] * len(chunks),
        "pipeline_version": [PIPELINE_VERSION] * len(chunks),
    })
    stats = ChunkStats(len(chunks), sum(counter.truncated(n) for n in wordpieces),
                       sum(wordpieces), sum(headers))
    return table, stats


@dataclass(frozen=True)
class EmbeddingStats:
    """``reused``: vectors taken from the partition's previous version; ``shared``: from another
    chunker's partition of the same model (the same text, embedded once per model)."""

    embedded: int
    reused: int
    removed: int
    seconds: float
    shared: int = 0

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


def _stored_vectors(table: pa.Table, key: str, name: str, fingerprint: str) -> dict[str, np.ndarray]:
    """``text_sha256 -> vector`` of a stored partition, refused unless every row is stamped
    with the model that is embedding now."""
    if not table.num_rows:
        return {}
    fingerprints = set(table.column("model_fingerprint").to_pylist())
    names = set(table.column("model_name").to_pylist())
    if fingerprints != {fingerprint} or names != {name}:
        raise ModelMismatchError(
            f"the stored partition holds vectors of {sorted(names)}@{sorted(fingerprints)}, "
            f"not {key}: vector spaces are never mixed")
    return dict(zip(table.column("text_sha256").to_pylist(), vector_matrix(table), strict=True))


def embeddings_table(chunks: pa.Table, previous: pa.Table | None, embedder: TextEmbedder,
                     progress: Callable[[int, int], None] | None = None,
                     shared: Sequence[pa.Table] = (),
                     ) -> tuple[pa.Table, EmbeddingStats]:
    """One unit vector per chunk. A chunk whose embedded text (by sha256) already has a vector
    in ``previous``, or in ``shared`` (the same model's partitions of other chunkers), reuses
    it; only new texts go through the model, batched by their ``wordpieces`` when the chunks
    carry that column."""
    spec = embedder.spec
    reusable: dict[str, np.ndarray] = {}
    if previous is not None:
        reusable.update(_stored_vectors(previous, spec.key, spec.name, spec.fingerprint))
    own = set(reusable)
    for table in shared:
        for sha, vector in _stored_vectors(table, spec.key, spec.name, spec.fingerprint).items():
            reusable.setdefault(sha, vector)
    texts = chunks.column("text").to_pylist()
    shas = chunks.column("text_sha256").to_pylist()
    wordpieces = (chunks.column("wordpieces").to_pylist() if "wordpieces" in chunks.column_names
                  else None)
    missing = sorted({sha: i for i, sha in enumerate(shas) if sha not in reusable}.items())
    started = time.perf_counter()
    if missing:
        options = {"wordpieces": [wordpieces[i] for _, i in missing]} if wordpieces else {}
        fresh = embedder.embed([texts[i] for _, i in missing], progress=progress, **options)
        reusable.update({sha: vector for (sha, _), vector in zip(missing, fresh, strict=True)})
    seconds = time.perf_counter() - started
    vectors = np.stack([reusable[sha] for sha in shas]).astype(np.float32) if shas else \
        np.zeros((0, spec.dimension), np.float32)
    n = len(shas)
    table = pa.table({
        "chunk_id": chunks.column("chunk_id"),
        "text_sha256": chunks.column("text_sha256"),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()),
                                                    spec.dimension),
        "model_name": [spec.name] * n,
        "model_fingerprint": [spec.fingerprint] * n,
        "dimension": pa.array([spec.dimension] * n, pa.int32()),
        "pipeline_version": [PIPELINE_VERSION] * n,
    })
    fresh_shas = {sha for sha, _ in missing}
    previous_shas = set(previous.column("text_sha256").to_pylist()) if previous is not None else set()
    stats = EmbeddingStats(embedded=len(missing),
                           reused=sum(1 for sha in shas if sha not in fresh_shas and sha in own),
                           removed=len(previous_shas - set(shas)), seconds=seconds,
                           shared=sum(1 for sha in shas if sha not in fresh_shas and sha not in own))
    return table, stats


BM25_TABLES = ("bm25_terms", "bm25_chunks", "bm25_postings", "bm25_params")


def bm25_stats_tables(chunks: pa.Table,
                      analyzers: Sequence[Analyzer] = tuple(Analyzer)) -> dict[str, pa.Table]:
    """The BM25 tables of a chunker, one block of rows per analyzer (column ``analyzer``).
    BM25 indexes each chunk's ``text``, the same text the dense side embeds."""
    ids = chunks.column("chunk_id").to_pylist()
    texts = chunks.column("text").to_pylist()
    parts: dict[str, list[pa.Table]] = {name: [] for name in BM25_TABLES}
    for analyzer in analyzers:
        built = build_bm25_tables(ids, texts, analyzer)
        for name, table in zip(BM25_TABLES, (built.terms, built.chunks, built.postings,
                                             built.params), strict=True):
            parts[name].append(table.append_column(
                "analyzer", pa.array([analyzer.value] * table.num_rows, pa.string())))
    return {name: pa.concat_tables(tables) for name, tables in parts.items()}
