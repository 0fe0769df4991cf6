"""The long table each format's tests build (sixty shifts under a header of three columns) and
the check every format's long table must pass: chunked by the header chunker, each row lands
whole in one chunk whose embedded text carries the table's header, and the table is split."""

from __future__ import annotations

from rag_pipeline.core.chunking.strategies import (
    Chunk,
    ChunkingStrategy,
    chunk_document,
    offset_errors,
)
from rag_pipeline.core.ingest.extracted import Extracted

SHIFT_HEADERS = ("Site", "Lead", "Duration")
SHIFT_COUNT = 60


def shift_rows(count: int = SHIFT_COUNT) -> list[tuple[str, str, str]]:
    """The rows under :data:`SHIFT_HEADERS`: ``("Delta flats N", "Tomas Ruiz", "N hours")``."""
    return [(f"Delta flats {n}", "Tomas Ruiz", f"{n} hours") for n in range(1, count + 1)]


def chunked_under_header(document_id: str, extracted: Extracted, cell_end: str = " |",
                         count: int = SHIFT_COUNT) -> list[Chunk]:
    """The header chunker's chunks of ``extracted``, checked: offsets found, each of the
    ``count`` shift rows (its first cell followed by ``cell_end``, the format's separator) in
    exactly one chunk, that chunk's ``text`` naming every header, and more than one chunk
    holding rows."""
    canonical = extracted.canonical_text
    chunks = chunk_document(document_id, extracted.title, canonical, ChunkingStrategy.HEADER,
                            sections=extracted.sections, tables=extracted.tables)
    assert offset_errors(canonical, chunks) == []
    holding = {n: [c for c in chunks if f"Delta flats {n}{cell_end}" in c.content]
               for n in range(1, count + 1)}
    assert all(len(found) == 1 for found in holding.values())  # rows are never cut
    assert all(all(h in found[0].text for h in SHIFT_HEADERS) for found in holding.values())
    assert len({found[0].chunk_id for found in holding.values()}) > 1  # the table was split
    return chunks
