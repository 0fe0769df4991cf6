"""One chunker x model partition built and published in a single process.

``rag-pipeline index`` builds a partition through Dagster, one asset at a time; benchmarks and
tests that need a whole served partition without a daemon build it here, with the same table
functions, the same warehouse writes (each table recording the inputs it was built from) and
the same publication.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_pipeline.core.chunking import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.generations import publish
from rag_pipeline.core.index_tables import (
    ChunkStats,
    EmbeddingStats,
    bm25_stats_tables,
    chunks_table,
    documents_table,
    embeddings_table,
)
from rag_pipeline.core.ingest import DocumentRecord
from rag_pipeline.core.models import TextEmbedder
from rag_pipeline.core.table_names import CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.warehouse import Warehouse
from rag_pipeline.core.wordpieces import wordpiece_counter

__all__ = ["PartitionBuild", "build_partition"]


@dataclass(frozen=True)
class PartitionBuild:
    """What building the partition measured: its chunks and its embedding run."""

    chunks: ChunkStats
    embedding: EmbeddingStats


def build_partition(warehouse: Warehouse, records: Sequence[DocumentRecord],
                    strategy: ChunkingStrategy, embedder: TextEmbedder,
                    settings: ChunkingSettings | None = None,
                    progress: Callable[[int, int], None] | None = None) -> PartitionBuild:
    """Writes the documents, ``strategy``'s chunks (with ``settings``), their vectors by
    ``embedder`` and the BM25 tables into ``warehouse``, then publishes the
    ``strategy x embedder.spec`` generation.

    Args:
        warehouse: Where the tables go.
        records: The extracted documents.
        strategy: The chunker.
        embedder: The model (or a stand-in) whose key names the partition.
        settings: Chunking settings (default: the chunker's defaults).
        progress: Called as ``progress(done, total)`` while texts are embedded.
    """
    spec = embedder.spec
    documents = warehouse.write(DOCUMENTS, documents_table(records))
    partition = {"chunker": strategy.value}
    chunks, chunk_stats = chunks_table(records, strategy, wordpiece_counter(spec), settings)
    versions = {DOCUMENTS: documents,
                CHUNKS: warehouse.write(CHUNKS, chunks, partition,
                                        inputs={DOCUMENTS: documents.file})}
    built_from = {CHUNKS: versions[CHUNKS].file}
    embeddings, embedding_stats = embeddings_table(chunks, None, embedder, progress=progress)
    versions[EMBEDDINGS] = warehouse.write(EMBEDDINGS, embeddings, {**partition, "model": spec.key},
                                           inputs=built_from)
    for name, table in bm25_stats_tables(chunks).items():
        versions[name] = warehouse.write(name, table, partition, inputs=built_from)
    publish(warehouse, strategy.value, spec.key, versions)
    return PartitionBuild(chunk_stats, embedding_stats)
