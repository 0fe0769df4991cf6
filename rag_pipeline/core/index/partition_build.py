"""One chunker x model partition built and published in a single process.

``rag-pipeline index`` builds a partition through Dagster, one asset at a time; benchmarks and
tests that need a whole served partition without a daemon build it here, stage after stage
through the same functions the assets call (:mod:`rag_pipeline.core.index.build`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.config.access import AccessPolicy
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.index.ann_index import build_ann_index
from rag_pipeline.core.index.build import (
    BlockingCheckError,
    build_access,
    build_bm25,
    build_chunks,
    build_embeddings,
    publish_partition,
    write_documents,
)
from rag_pipeline.core.index.builders import ChunkStats, EmbeddingStats
from rag_pipeline.core.ingest import DocumentRecord
from rag_pipeline.core.storage.warehouse import Warehouse

__all__ = ["PartitionBuild", "build_partition"]


@dataclass(frozen=True)
class PartitionBuild:
    """What building the partition measured: its chunks and its embedding run."""

    chunks: ChunkStats
    embedding: EmbeddingStats


def build_partition(warehouse: Warehouse, records: Sequence[DocumentRecord],
                    strategy: ChunkingStrategy, embedder: TextEmbedder,
                    settings: ChunkingSettings | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    access: AccessPolicy | None = None) -> PartitionBuild:
    """Writes every table of the ``strategy x embedder.spec`` generation
    (:data:`rag_pipeline.core.index.GENERATION_TABLES`: the documents, ``strategy``'s chunks
    with ``settings``, their vectors by ``embedder``, the BM25 tables and the ANN index over the
    vectors, and under ``access`` the readers of every chunk) into ``warehouse`` through the
    build path the assets take (:mod:`rag_pipeline.core.index.build`: the same reuse of
    vectors, the same blocking checks, the same publication and snapshot), then publishes the
    generation.

    Args:
        warehouse: Where the tables go.
        records: The extracted documents.
        strategy: The chunker.
        embedder: The model (or a stand-in) whose key names the partition.
        settings: Chunking settings (default: the chunker's defaults).
        progress: Called as ``progress(done, total)`` while texts are embedded.
        access: The ``[access]`` rules (None: none declared, no ``access`` table).

    Raises:
        BlockingCheckError: a blocking check of the chunks or the vectors failed; nothing is
            published.
    """
    model = embedder.spec.key
    write_documents(warehouse, records)
    chunks = build_chunks(warehouse, strategy, embedder.spec, settings)
    if chunks.checks.failed:
        raise BlockingCheckError(f"{strategy.value}: chunks failed {', '.join(chunks.checks.failed)}")
    build_bm25(warehouse, strategy.value)
    if access is not None:
        build_access(warehouse, strategy.value, access)
    embeddings = build_embeddings(warehouse, strategy.value, embedder, progress)
    if embeddings.checks.failed:
        raise BlockingCheckError(f"{strategy.value} x {model}: embeddings failed "
                                 f"{', '.join(embeddings.checks.failed)}")
    build_ann_index(warehouse, strategy.value, model, embeddings.version)
    publish_partition(warehouse, strategy.value, model,
                      rules=access.digest if access is not None else None)
    return PartitionBuild(chunks.stats, embeddings.stats)
