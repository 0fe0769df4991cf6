"""The ``access`` table: the readers of every served chunk, queryable in DuckDB.

One partition per chunker: ``chunk_id``, ``document_id``, ``readers`` (the groups that may read
the chunk, sorted; empty: nobody) and ``rules`` (the digest of the ``[access]`` rules that
labelled it). It is built from the chunks the newest generation of the chunker serves and
records that chunks file and the rules digest as its inputs, so a rule edit or a new chunks
file makes it stale (:func:`stale_access`) and :func:`write_access_labels` re-labels from the
stored chunks alone: nothing is extracted or embedded again, the vector files stay as they are.
The served index labels its rows with the same rules at load
(:func:`rag_pipeline.core.index.access.labelled`), so the table and the service agree.
"""

from __future__ import annotations

import pyarrow as pa

from rag_pipeline.core.config.access import AccessPolicy
from rag_pipeline.core.index.generations import Generation, current_generations
from rag_pipeline.core.storage.table_names import ACCESS, CHUNKS
from rag_pipeline.core.storage.warehouse import Warehouse

__all__ = ["RULES_INPUT", "access_table", "stale_access", "write_access_labels"]

RULES_INPUT = "rules"
"""The input key under which the table records the rules' digest."""


def access_table(chunks: pa.Table, policy: AccessPolicy) -> pa.Table:
    """``chunk_id``, ``document_id``, ``readers``, ``rules`` of every chunk."""
    documents = chunks.column("document_id").to_pylist()
    by_document = {d: list(policy.readers_of(d)) for d in set(documents)}
    return pa.table({
        "chunk_id": chunks.column("chunk_id"),
        "document_id": chunks.column("document_id"),
        "readers": pa.array([by_document[d] for d in documents], pa.list_(pa.string())),
        "rules": pa.array([policy.digest] * len(documents), pa.string()),
    })


def _served_chunks(warehouse: Warehouse) -> dict[str, Generation]:
    """The newest served generation of every chunker (whose chunks DuckDB shows)."""
    newest: dict[str, Generation] = {}
    for generation in sorted(current_generations(warehouse), key=lambda g: g.published_at):
        newest[generation.chunker] = generation
    return newest


def stale_access(warehouse: Warehouse, policy: AccessPolicy) -> list[str]:
    """The chunkers whose ``access`` partition is missing, or labels other chunks or other rules
    than the served chunks and ``policy``."""
    stale = []
    for chunker, generation in sorted(_served_chunks(warehouse).items()):
        version = warehouse.version(ACCESS, {"chunker": chunker})
        wanted = {CHUNKS: generation.files[CHUNKS], RULES_INPUT: policy.digest}
        if version is None or dict(version.inputs) != wanted:
            stale.append(chunker)
    return stale


def write_access_labels(warehouse: Warehouse, policy: AccessPolicy) -> list[str]:
    """Writes the ``access`` partition of every stale chunker; returns those chunkers."""
    stale = stale_access(warehouse, policy)
    served = _served_chunks(warehouse)
    for chunker in stale:
        file = served[chunker].files[CHUNKS]
        chunks = warehouse.read_file(file, columns=["chunk_id", "document_id"])
        warehouse.write(ACCESS, access_table(chunks, policy), {"chunker": chunker},
                        inputs={CHUNKS: file, RULES_INPUT: policy.digest})
    return stale
