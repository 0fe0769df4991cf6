"""Checks of the index's invariants, run against the stored tables (not the code's intent)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rag_pipeline.core.chunking.strategies import uncovered_characters
from rag_pipeline.core.embedding.vectors import vector_matrix
from rag_pipeline.core.ingest import DocumentStatus, Section
from rag_pipeline.core.ingest.formats import chunked_format


def offset_mismatches(documents: pa.Table, chunks: pa.Table) -> list[str]:
    """Chunk ids whose stored ``content`` is not ``canonical_text[from:to]`` of its document."""
    canonical = dict(zip(documents.column("document_id").to_pylist(),
                         documents.column("canonical_text").to_pylist(), strict=True))
    bad = []
    for chunk_id, document_id, start, end, content in zip(
            *(chunks.column(c).to_pylist() for c in
              ("chunk_id", "document_id", "from", "to", "content")), strict=True):
        text = canonical.get(document_id)
        if text is None or text[start:end] != content:
            bad.append(chunk_id)
    return bad


def duplicate_ids(chunks: pa.Table) -> list[str]:
    ids = chunks.column("chunk_id").to_pylist()
    seen, dups = set(), []
    for chunk_id in ids:
        if chunk_id in seen:
            dups.append(chunk_id)
        seen.add(chunk_id)
    return dups


def uncovered_by_document(documents: pa.Table, chunks: pa.Table) -> dict[str, int]:
    """Per ``ok`` document of a chunked format (not an archive's member list), non-blank
    characters inside its sections' bodies (outside heading lines) that no chunk covers."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for document_id, start, end in zip(*(chunks.column(c).to_pylist()
                                         for c in ("document_id", "from", "to")), strict=True):
        spans.setdefault(document_id, []).append((start, end))
    missing = {}
    for row in documents.to_pylist():
        if row["status"] != DocumentStatus.OK or not chunked_format(row["format"]):
            continue
        sections = [Section(**s) for s in row.get("sections") or ()]
        count = len(uncovered_characters(row["canonical_text"], spans.get(row["document_id"], []),
                                         sections))
        if count:
            missing[row["document_id"]] = count
    return missing


def vector_norm_errors(embeddings: pa.Table, dimension: int, tolerance: float = 1e-4) -> dict:
    """Rows whose vector is not of ``dimension`` or not unit length (within ``tolerance``)."""
    width = embeddings.column("vector").type.list_size
    if width != dimension:
        return {"wrong_dimension": width}
    norms = np.linalg.norm(vector_matrix(embeddings), axis=1)
    off = np.abs(norms - 1.0) > tolerance
    return {"not_unit_length": int(off.sum())} if off.any() else {}
