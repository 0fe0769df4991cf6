"""The ingest stage: corpus files to document records (canonical text, sections, anchors).

Each format is one module in :mod:`rag_pipeline.core.ingest.formats`; this package reads the
files safely (:mod:`.reading`), walks the corpus and reuses unchanged records (:mod:`.corpus`)
and defines the row every format's document becomes (:mod:`.records`).
"""

from __future__ import annotations

from rag_pipeline.core.ingest.corpus import (
    ExtractionResult,
    discover,
    document_id_for,
    extract_corpus,
    extract_document,
)
from rag_pipeline.core.ingest.extracted import Anchor, Extracted, ExtractionError, Extractor, Section
from rag_pipeline.core.ingest.formats import REGISTRY, DocumentFormat, format_for, format_named
from rag_pipeline.core.ingest.reading import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    ExtractionSettings,
    read_document_bytes,
)
from rag_pipeline.core.ingest.records import DocumentRecord, DocumentStatus

__all__ = [
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "REGISTRY",
    "Anchor",
    "DocumentFormat",
    "DocumentRecord",
    "DocumentStatus",
    "Extracted",
    "ExtractionError",
    "ExtractionResult",
    "ExtractionSettings",
    "Extractor",
    "Section",
    "discover",
    "document_id_for",
    "extract_corpus",
    "extract_document",
    "format_for",
    "format_named",
    "read_document_bytes",
]
