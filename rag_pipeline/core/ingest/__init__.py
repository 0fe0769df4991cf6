"""The ingest stage: corpus files to document records (canonical text, sections, anchors).

Each format is one module in :mod:`rag_pipeline.core.ingest.formats`; this package reads the
files safely (:mod:`.reading`), walks the corpus and reuses unchanged records (:mod:`.corpus`)
and defines the row every format's document becomes (:mod:`.records`).

The names below are imported from their modules when first used, so that importing one light
module of the stage (:mod:`.extracted`, say) does not load every format's libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_pipeline.core.ingest.corpus import (
        ExtractionResult,
        discover,
        document_id_for,
        extract_corpus,
        extract_document,
    )
    from rag_pipeline.core.ingest.extracted import (
        Anchor,
        Extracted,
        ExtractionError,
        Extractor,
        Section,
        TableSpan,
    )
    from rag_pipeline.core.ingest.formats import REGISTRY, DocumentFormat, format_for, format_named
    from rag_pipeline.core.ingest.reading import (
        DEFAULT_MAX_DOCUMENT_BYTES,
        ExtractionSettings,
        read_document_bytes,
    )
    from rag_pipeline.core.ingest.records import DocumentRecord, DocumentStatus

_HOMES = {
    "corpus": ("ExtractionResult", "discover", "document_id_for", "extract_corpus",
               "extract_document"),
    "extracted": ("Anchor", "Extracted", "ExtractionError", "Extractor", "Section", "TableSpan"),
    "formats": ("REGISTRY", "DocumentFormat", "format_for", "format_named"),
    "reading": ("DEFAULT_MAX_DOCUMENT_BYTES", "ExtractionSettings", "read_document_bytes"),
    "records": ("DocumentRecord", "DocumentStatus"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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
    "TableSpan",
    "discover",
    "document_id_for",
    "extract_corpus",
    "extract_document",
    "format_for",
    "format_named",
    "read_document_bytes",
]
