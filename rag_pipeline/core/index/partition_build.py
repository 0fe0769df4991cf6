"""One chunker x model partition built and published in a single process.

``rag-pipeline index`` builds a partition through Dagster, one asset at a time; benchmarks and
tests that need a whole served partition without a daemon build it here, with the same table
functions, the same warehouse writes (each table recording the inputs it was built from) and
the same publication.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.embedding.wordpieces import wordpiece_counter
from rag_pipeline.core.index import generation_table
from rag_pipeline.core.index.ann_index import build_ann_index
from rag_pipeline.core.index.builders import (
    ChunkStats,
    EmbeddingStats,
    bm25_stats_tables,
    chunks_table,
    documents_table,
    embeddings_table,
)
from rag_pipeline.core.index.generations import publish
from rag_pipeline.core.ingest import DocumentRecord
from rag_pipeline.core.storage.table_names import ANN_INDEX, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import TableVersion, Warehouse

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
    """Writes every table of the ``strategy x embedder.spec`` generation
    (:data:`rag_pipeline.core.index.GENERATION_TABLES`: the documents, ``strategy``'s chunks
    with ``settings``, their vectors by ``embedder``, the BM25 tables and the ANN index over the
    vectors) into ``warehouse``,
    each in its declared partition and recording the input it was built from, then publishes
    the generation.

    Args:
        warehouse: Where the tables go.
        records: The extracted documents.
        strategy: The chunker.
        embedder: The model (or a stand-in) whose key names the partition.
        settings: Chunking settings (default: the chunker's defaults).
        progress: Called as ``progress(done, total)`` while texts are embedded.
    """
    spec = embedder.spec
    model = spec.key

    def write(name: str, table: pa.Table, built_from: TableVersion | None) -> TableVersion:
        declared = generation_table(name)
        inputs = {declared.built_from: built_from.file} if built_from is not None else None
        return warehouse.write(name, table, declared.scope.partition(strategy.value, model),
                               inputs=inputs)

    documents = write(DOCUMENTS, documents_table(records), None)
    chunks, chunk_stats = chunks_table(records, strategy, wordpiece_counter(spec), settings)
    versions = {DOCUMENTS: documents, CHUNKS: write(CHUNKS, chunks, documents)}
    embeddings, embedding_stats = embeddings_table(chunks, None, embedder, progress=progress)
    versions[EMBEDDINGS] = write(EMBEDDINGS, embeddings, versions[CHUNKS])
    for name, table in bm25_stats_tables(chunks).items():
        versions[name] = write(name, table, versions[CHUNKS])
    versions[ANN_INDEX] = build_ann_index(warehouse, strategy.value, model, versions[EMBEDDINGS]).version
    publish(warehouse, strategy.value, model, versions)
    return PartitionBuild(chunk_stats, embedding_stats)
