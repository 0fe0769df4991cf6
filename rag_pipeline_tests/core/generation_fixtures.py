"""Tiny table versions of one partition, built the way the assets chain them (no model)."""

from __future__ import annotations

import pyarrow as pa

from rag_pipeline.core.storage.table_names import BM25_TABLES, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import TableVersion, Warehouse


def write_partition(warehouse: Warehouse, chunker: str, model: str, n_chunks: int,
                    tag: str = "") -> dict[str, TableVersion]:
    """documents -> chunks -> (BM25 tables, embeddings), each naming the file it was built from."""
    documents = warehouse.write(DOCUMENTS, pa.table({"document_id": [f"doc{tag}.md"],
                                                     "status": ["ok"]}))
    ids = [f"doc{tag}.md:{i}" for i in range(n_chunks)]
    chunks = warehouse.write(CHUNKS, pa.table({"chunk_id": ids}), {"chunker": chunker},
                             inputs={DOCUMENTS: documents.file})
    built_from = {CHUNKS: chunks.file}
    versions = {DOCUMENTS: documents, CHUNKS: chunks}
    for name in BM25_TABLES:
        versions[name] = warehouse.write(name, pa.table({"chunk_id": ids, "table": [name] * n_chunks}),
                                         {"chunker": chunker}, inputs=built_from)
    versions[EMBEDDINGS] = warehouse.write(
        EMBEDDINGS, pa.table({"chunk_id": ids, "x": pa.array(range(n_chunks), pa.int64())}),
        {"chunker": chunker, "model": model}, inputs=built_from)
    return versions
