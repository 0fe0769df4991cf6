"""One row of the ``documents`` table, and the statuses a row can have."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rag_pipeline.core.ingest.extracted import Anchor, DocumentPage, Section, TableSpan
from rag_pipeline.core.storage.versions import PIPELINE_VERSION


class DocumentStatus(StrEnum):
    """``ok``: read; ``failed``: a format should read it and could not (``error`` says why);
    ``skipped``: no format reads files of its kind (``error`` says which kind)."""

    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class DocumentRecord:
    """One row of the ``documents`` table: a file's canonical text and structure, or why it
    failed.

    ``sections``, ``anchors`` and ``tables`` are spans of ``canonical_text`` (see
    :class:`~rag_pipeline.core.ingest.extracted.Extracted`); ``notes`` are the extractor's
    per-document facts; ``source_fingerprint`` is the source entry's fingerprint when it was
    read (:class:`~rag_pipeline.core.ingest.sources.Entry`), so an unchanged entry is not opened
    again; ``pages`` a paged document's page records.
    """

    document_id: str
    path: str
    title: str
    canonical_text: str
    content_sha256: str
    format: str
    extractor: str
    extractor_version: str
    status: str
    error: str | None
    sections: tuple[Section, ...] = ()
    anchors: tuple[Anchor, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    pipeline_version: str = PIPELINE_VERSION
    tables: tuple[TableSpan, ...] = ()
    source_fingerprint: str = ""
    pages: tuple[DocumentPage, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == DocumentStatus.OK.value

    @property
    def failed(self) -> bool:
        return self.status == DocumentStatus.FAILED.value

    @property
    def skipped(self) -> bool:
        return self.status == DocumentStatus.SKIPPED.value
