"""The one build path of the index: each stage written from its inputs, checked, published.

The Dagster assets (one stage per asset, with its metadata and its check results) and the
single-process build (:mod:`rag_pipeline.core.index.partition_build`) call the same functions,
so the rules live here once:

- **reading the corpus** (:func:`read_documents`): unchanged documents reused, and nothing
  written when the corpus is gone, empty or far smaller than before;
- **vector reuse** (:func:`reusable_vectors`): a run reuses the partition's latest vectors only
  if they pass the blocking checks now, else the served generation's;
- **the blocking checks** of chunks (:func:`chunk_checks`) and embeddings
  (:func:`embedding_checks`): a failure stops publication (the assets fail their step, the
  single-process build raises :class:`BlockingCheckError`);
- **publication** (:func:`publish_partition`): the latest tables become the partition's served
  generation, old files are collected;
- **the DuckDB snapshot**: every write a reader sees (:func:`write_documents`,
  :func:`publish_partition`) brings ``rag.duckdb`` up to date.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.config.access import AccessPolicy
from rag_pipeline.core.embedding.drift import DriftReport, drift_check
from rag_pipeline.core.embedding.model_key import ModelKey
from rag_pipeline.core.embedding.models import ModelSpec, TextEmbedder
from rag_pipeline.core.embedding.vector_cache import VectorCache
from rag_pipeline.core.embedding.wordpieces import KnownWordpieces, WordpieceCounter, wordpiece_counter
from rag_pipeline.core.index.access_table import access_table
from rag_pipeline.core.index.builders import (
    ChunkStats,
    EmbeddingStats,
    bm25_stats_tables,
    chunks_table,
    document_pages_table,
    document_records,
    documents_table,
    embeddings_table,
    source_entries_table,
)
from rag_pipeline.core.index.generations import (
    GarbageStats,
    Generation,
    collect_garbage,
    current_generation,
    kept_table_files,
    publish,
)
from rag_pipeline.core.index.invariants import (
    duplicate_ids,
    offset_mismatches,
    uncovered_by_document,
    vector_norm_errors,
)
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.index.tables import CHUNKER, MODEL, RULES_INPUT, latest_tables
from rag_pipeline.core.ingest import DocumentRecord, ExtractionResult, ExtractionSettings, extract_corpus
from rag_pipeline.core.ingest.reconcile import (
    DEFAULT_MAX_SHRINK,
    Reconciliation,
    check_corpus_kept,
    reconciliation_table,
)
from rag_pipeline.core.ingest.sources.base import Source
from rag_pipeline.core.storage.table_names import (
    ACCESS,
    CHUNKS,
    DOCUMENT_PAGES,
    DOCUMENTS,
    EMBEDDINGS,
    RECONCILIATION,
    SOURCE_ENTRIES,
)
from rag_pipeline.core.storage.warehouse import TableVersion, Warehouse

__all__ = ["BlockingCheckError", "build_access", "ChunkChecks", "ChunksBuild", "DocumentsWrite",
           "EmbeddingChecks", "EmbeddingsBuild", "Publication", "build_bm25", "build_chunks",
           "build_embeddings", "chunk_checks", "embedding_checks", "publish_partition",
           "reusable_vectors", "write_documents"]

EMBEDDING_COLUMNS = ["chunk_id", "text", "text_sha256", "wordpieces"]
"""The chunks' columns the embeddings stage reads."""


class BlockingCheckError(Exception):
    """A blocking check failed: the generation is not published."""


@dataclass(frozen=True)
class DocumentsWrite:
    """The documents table and its PDF pages, as written."""

    version: TableVersion
    pages: pa.Table
    previous: TableVersion | None

    @property
    def changed(self) -> bool:
        return self.previous is None or self.previous.digest != self.version.digest


def write_documents(warehouse: Warehouse, records: Sequence[DocumentRecord],
                    report: Reconciliation | None = None) -> DocumentsWrite:
    """Writes ``documents`` and ``document_pages`` from ``records`` (and the run's
    ``reconciliation`` report when given) and refreshes the snapshot."""
    previous = warehouse.version(DOCUMENTS)
    version = warehouse.write(DOCUMENTS, documents_table(records))
    pages = document_pages_table(records)
    warehouse.write(DOCUMENT_PAGES, pages)
    warehouse.write(SOURCE_ENTRIES, source_entries_table(records))
    if report is not None:
        warehouse.write(RECONCILIATION, reconciliation_table(report, version.written_at))
    publish_query_db(warehouse)
    return DocumentsWrite(version, pages, previous)


@dataclass(frozen=True)
class DocumentsRead:
    """A reading of the corpus (its records and reconciliation) and the documents as written."""

    result: ExtractionResult
    written: DocumentsWrite


def read_documents(warehouse: Warehouse, source: Source, settings: ExtractionSettings,
                   max_shrink: float = DEFAULT_MAX_SHRINK, allow_shrink: bool = False,
                   ) -> DocumentsRead:
    """Reads ``source`` against the latest documents (their unchanged records reused), and
    writes what it read (:func:`write_documents`) unless the corpus is gone, empty or far
    smaller than before.

    Raises:
        CorpusShrankError: Nothing written (:func:`~rag_pipeline.core.ingest.reconcile.
            check_corpus_kept`).
    """
    previous = warehouse.version(DOCUMENTS)
    before = document_records(warehouse.read_file(previous.file),
                              warehouse.read_or_none(SOURCE_ENTRIES)) if previous is not None else []
    result = extract_corpus(source, before, settings)
    check_corpus_kept(result.report, sum(r.ok for r in before), len(result.ok), len(result.records),
                      max_shrink, allow_shrink)
    return DocumentsRead(result, write_documents(warehouse, result.records, result.report))


@dataclass(frozen=True)
class ChunkChecks:
    """The chunks' blocking checks: every chunk quotes its document exactly, ids are unique,
    no non-blank character of an ok document outside its heading lines is dropped."""

    mismatches: list[str]
    duplicates: list[str]
    uncovered: dict[str, int]

    @property
    def failed(self) -> list[str]:
        """The names of the failed checks."""
        return [name for name, ok in (("offsets_slice_exactly", not self.mismatches),
                                      ("chunk_ids_unique", not self.duplicates),
                                      ("covers_every_character", not self.uncovered)) if not ok]


def chunk_checks(documents: pa.Table, chunks: pa.Table) -> ChunkChecks:
    return ChunkChecks(offset_mismatches(documents, chunks), duplicate_ids(chunks),
                       uncovered_by_document(documents, chunks))


@dataclass(frozen=True)
class ChunksBuild:
    """One chunker's chunks as written, what they were cut from, and their checks."""

    version: TableVersion
    documents_version: TableVersion
    table: pa.Table
    stats: ChunkStats
    added: int
    removed: int
    checks: ChunkChecks
    counted: int = 0
    """Texts and headers whose word-pieces were counted (the others' came from the previous rows)."""


def build_chunks(warehouse: Warehouse, strategy: ChunkingStrategy, tokenizer: ModelSpec,
                 settings: ChunkingSettings | None = None) -> ChunksBuild:
    """Cuts the latest documents with ``strategy`` (word-pieces counted by ``tokenizer``),
    writes the chunker's ``chunks`` recording the documents file, and checks what was stored."""
    documents_version = warehouse.require_version(DOCUMENTS)
    documents = warehouse.read_file(documents_version.file)
    partition = {CHUNKER: strategy.value}
    previous = warehouse.read_or_none(CHUNKS, partition, columns=[
        "chunk_id", "text_sha256", "wordpieces", "header", "header_wordpieces", "tokenizer"])
    counter = _known_counts(wordpiece_counter(tokenizer), previous)
    table, stats = chunks_table(document_records(documents), strategy, counter, settings)
    version = warehouse.write(CHUNKS, table, partition, inputs={DOCUMENTS: documents_version.file})
    stored = warehouse.read_file(version.file)
    old_ids = set(previous.column("chunk_id").to_pylist()) if previous is not None else set()
    new_ids = set(table.column("chunk_id").to_pylist())
    return ChunksBuild(version, documents_version, table, stats, len(new_ids - old_ids),
                       len(old_ids - new_ids), chunk_checks(documents, stored), counter.counted)


def _known_counts(counter: WordpieceCounter, previous: pa.Table | None) -> KnownWordpieces:
    """``counter`` given the word-pieces the chunker's previous rows counted with the same
    tokenizer (a text cut again is not counted again)."""
    texts: dict[str, int] = {}
    plain: dict[str, int] = {}
    if previous is not None:
        rows = previous.filter(pc.equal(previous.column("tokenizer"), counter.spec.key))
        texts = dict(zip(rows.column("text_sha256").to_pylist(),
                         rows.column("wordpieces").to_pylist(), strict=True))
        plain = dict(zip(rows.column("header").to_pylist(),
                         rows.column("header_wordpieces").to_pylist(), strict=True))
    return KnownWordpieces(counter, texts, plain)


def build_bm25(warehouse: Warehouse, chunker: str,
               ) -> tuple[TableVersion, dict[str, tuple[TableVersion, pa.Table]]]:
    """Writes the chunker's four BM25 tables from its latest chunks, each recording the chunks
    file; returns that chunks version and each table's version and rows."""
    partition = {CHUNKER: chunker}
    chunks_version = warehouse.require_version(CHUNKS, partition)
    chunks = warehouse.read_file(chunks_version.file, columns=["chunk_id", "text"])
    written = {name: (warehouse.write(name, table, partition, inputs={CHUNKS: chunks_version.file}),
                      table)
               for name, table in bm25_stats_tables(chunks).items()}
    return chunks_version, written


def build_access(warehouse: Warehouse, chunker: str, policy: AccessPolicy) -> TableVersion:
    """Writes the chunker's ``access`` table: the readers of each of its latest chunks under
    ``policy`` (:func:`~rag_pipeline.core.index.access_table.access_table`), recording the
    chunks file and the rules' digest. Reads two columns of the chunks and the ids of the
    documents they were cut from; nothing is extracted, chunked or embedded."""
    partition = {CHUNKER: chunker}
    chunks_version = warehouse.require_version(CHUNKS, partition)
    chunks = warehouse.read_file(chunks_version.file, columns=["chunk_id", "document_id"])
    # Every document the chunks were cut from, whatever its status: a container's failed
    # member still narrows the container's readers.
    cut_from = chunks_version.inputs.get(DOCUMENTS)
    corpus = [] if cut_from is None else warehouse.read_file(
        cut_from, columns=["document_id"]).column("document_id").to_pylist()
    table = access_table(chunks, policy, corpus)
    return warehouse.write(ACCESS, table, partition,
                           inputs={CHUNKS: chunks_version.file, RULES_INPUT: policy.digest})


@dataclass(frozen=True)
class EmbeddingChecks:
    """The embeddings' blocking checks on a table: unit vectors of the model's dimension, one
    model stamp, and stored vectors that agree with the model now (:func:`drift_check`)."""

    key: str
    dimension: int
    norm_errors: dict
    models_seen: list[str]
    drift: DriftReport

    @property
    def failed(self) -> list[str]:
        """The names of the failed checks."""
        return [name for name, ok in (
            ("vectors_unit_length", not self.norm_errors),
            ("one_model_per_partition", self.models_seen in ([self.key], [])),
            ("vectors_match_model", self.drift.passed)) if not ok]


def embedding_checks(table: pa.Table, chunks: pa.Table, embedder: TextEmbedder) -> EmbeddingChecks:
    spec = embedder.spec
    models_seen = sorted({str(ModelKey(n, f)) for n, f in zip(
        table.column("model_name").to_pylist(), table.column("model_fingerprint").to_pylist(),
        strict=True)})
    return EmbeddingChecks(spec.key, spec.dimension, vector_norm_errors(table, spec.dimension),
                           models_seen, drift_check(table, chunks, embedder))


def _current_rows(table: pa.Table, chunks: pa.Table) -> pa.Table:
    """The rows of an embeddings table whose chunk text is still current."""
    current = set(zip(chunks.column("chunk_id").to_pylist(),
                      chunks.column("text_sha256").to_pylist(), strict=True))
    mask = [pair in current for pair in zip(table.column("chunk_id").to_pylist(),
                                            table.column("text_sha256").to_pylist(), strict=True)]
    return table.filter(pa.array(mask, pa.bool_()))


def reusable_vectors(warehouse: Warehouse, partition: dict[str, str], chunks: pa.Table,
                     embedder: TextEmbedder) -> pa.Table | None:
    """The vectors a run may reuse: the partition's latest table if its rows still current
    pass the blocking checks now (a run killed before publishing left good ones), else the
    served generation's, so vectors that failed a check are never carried into a new table."""
    latest = warehouse.read_or_none(EMBEDDINGS, partition)
    if latest is not None and not embedding_checks(_current_rows(latest, chunks), chunks,
                                                   embedder).failed:
        return latest
    served = current_generation(warehouse, partition[CHUNKER], partition[MODEL])
    return warehouse.read_file(served.files[EMBEDDINGS]) if served is not None else None


@dataclass(frozen=True)
class EmbeddingsBuild:
    """One chunker x model's vectors as written, what they came from, and their checks."""

    version: TableVersion
    chunks_version: TableVersion
    table: pa.Table
    stats: EmbeddingStats
    checks: EmbeddingChecks
    write_seconds: float = 0.0
    """Writing the table and dropping the checkpoints it covers."""


def build_embeddings(warehouse: Warehouse, chunker: str, embedder: TextEmbedder,
                     progress: Callable[[int, int], None] | None = None,
                     tabulate: Callable[..., tuple[pa.Table, EmbeddingStats]] = embeddings_table,
                     ) -> EmbeddingsBuild:
    """Embeds the chunker's latest chunks into the ``chunker x embedder.spec`` partition:
    unchanged texts reuse vectors (:func:`reusable_vectors`, then the model's other partitions
    and checkpoints), fresh vectors are checkpointed as they come, the table is written
    recording the chunks file, and the stored table is checked.

    Args:
        progress: Called as ``progress(done, total)`` while texts are embedded.
        tabulate: What makes the table (:func:`~rag_pipeline.core.index.builders.embeddings_table`;
            another engine may stand in, with its signature).
    """
    spec = embedder.spec
    partition = {CHUNKER: chunker, MODEL: spec.key}
    chunks_version = warehouse.require_version(CHUNKS, {CHUNKER: chunker})
    chunks = warehouse.read_file(chunks_version.file, columns=EMBEDDING_COLUMNS)
    cache = VectorCache(warehouse, spec)
    previous = reusable_vectors(warehouse, partition, chunks, embedder)
    known = cache.known(skip_chunker=chunker)
    wanted = set(chunks.column("text_sha256").to_pylist()) - known.keys() - set(
        previous.column("text_sha256").to_pylist() if previous is not None else ())
    if wanted:  # the kept generations' manifests are listed only for texts still without one
        known.update(cache.kept(kept_table_files(warehouse, EMBEDDINGS, spec.key), wanted))
    table, stats = tabulate(chunks, previous, embedder, progress, known=known,
                            checkpoint=cache.checkpoint)
    writing = time.perf_counter()
    version = warehouse.write(EMBEDDINGS, table, partition, inputs={CHUNKS: chunks_version.file})
    cache.drop_covered(set(table.column("text_sha256").to_pylist()))
    write_seconds = time.perf_counter() - writing
    stored = warehouse.read_file(version.file)
    return EmbeddingsBuild(version, chunks_version, table, stats,
                           embedding_checks(stored, chunks, embedder), write_seconds)


@dataclass(frozen=True)
class Publication:
    """A partition's publication: the served generation, whether it is new, what was collected."""

    generation: Generation
    is_new: bool
    garbage: GarbageStats


def publish_partition(warehouse: Warehouse, chunker: str, model: str,
                      versions: Mapping[str, TableVersion] | None = None,
                      rules: str | None = None) -> Publication:
    """Publishes the partition's latest tables (or exactly ``versions``) as its served
    generation under ``rules`` (the ``[access]`` digest, None: none declared; see
    :mod:`rag_pipeline.core.index.tables`), collects the files no kept generation names, and
    refreshes the snapshot."""
    # The snapshot holding the new generation is in place before the pointer moves to it, so
    # a reader never sees a pointer whose tables the snapshot lacks; should the pointer then
    # fail to move, the snapshot is brought back to what is served.
    generation, is_new = publish(warehouse, chunker, model,
                                 latest_tables(warehouse, chunker, model, rules) if versions is None
                                 else versions,
                                 before_pointer=lambda g: publish_query_db(warehouse, g),
                                 rules=rules,
                                 undo_before_pointer=lambda: publish_query_db(warehouse))
    garbage = collect_garbage(warehouse)
    publish_query_db(warehouse)
    return Publication(generation, is_new, garbage)
