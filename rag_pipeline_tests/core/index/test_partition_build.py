"""One partition built and published in one process: every table written from its inputs,
one generation published, the partition loads with the chunks the chunker made."""

from __future__ import annotations

from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.storage.table_names import ANN_INDEX, BM25_TABLES, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder


def test_a_partition_is_built_published_and_loads(tmp_path: Path, hashed_embedder: HashedEmbedder):
    records = extract_corpus(write_corpus(tmp_path / "corpus", TINY_DOCS)).records
    warehouse = Warehouse(tmp_path / "data")
    progress: list[tuple[int, int]] = []
    built = build_partition(warehouse, records, ChunkingStrategy.HEADER, hashed_embedder,
                            ChunkingSettings(target_chars=512), lambda d, t: progress.append((d, t)))
    key = hashed_embedder.spec.key
    generation = current_generation(warehouse, "header", key)
    index = load_partition(tmp_path / "data", "header", key)
    chunks = warehouse.read(CHUNKS, {"chunker": "header"})
    assert generation is not None
    assert sorted(generation.files) == sorted([DOCUMENTS, CHUNKS, EMBEDDINGS, *BM25_TABLES, ANN_INDEX])
    assert len(index) == chunks.num_rows == built.chunks.chunks
    assert progress[-1] == (built.embedding.embedded, built.embedding.embedded)
    # The embeddings and BM25 tables record the chunks file they were built from.
    chunks_file = warehouse.require_version(CHUNKS, {"chunker": "header"}).file
    assert warehouse.require_version(EMBEDDINGS, {"chunker": "header", "model": key}).inputs == {
        CHUNKS: chunks_file}
    # The ANN index records the embeddings file it was built from, and loads with the partition.
    embeddings_file = warehouse.require_version(EMBEDDINGS, {"chunker": "header", "model": key}).file
    assert warehouse.require_version(ANN_INDEX, {"chunker": "header", "model": key}).inputs == {
        EMBEDDINGS: embeddings_file}
    assert index.ann is not None and index.ann.rows == len(index)
