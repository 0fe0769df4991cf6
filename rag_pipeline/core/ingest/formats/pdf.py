"""PDF: the text layer page by page, through pypdf; each page is an anchor cited ``#page=N``."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from rag_pipeline.core.ingest.extracted import Anchor, Extracted, ExtractionError, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.library import library_version


def extract_pdf(data: bytes, stem: str) -> Extracted:
    """Text layer page by page, pages joined by a blank line; page ``N`` is the anchor
    ``page=N`` over its text."""
    import io

    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ExtractionError("encrypted PDF: no password is configured")
        pages = [(page.extract_text() or "").replace("\r\n", "\n") for page in reader.pages]
        meta_title = reader.metadata.title if reader.metadata else None
    except ExtractionError:
        raise
    except Exception as exc:  # pypdf raises many types for damaged files; each is a reason
        raise ExtractionError(f"unreadable PDF: {type(exc).__name__}: {exc}") from exc
    if not any(page.strip() for page in pages):
        raise ExtractionError(f"no text layer in {len(pages)} page(s) (scanned PDF?)")
    anchors, parts, offset = [], [], 0
    for number, page in enumerate(pages, start=1):
        parts.append(page.strip("\n"))
        anchors.append(Anchor(offset, offset + len(parts[-1]), f"page={number}"))
        offset += len(parts[-1]) + 2
    canonical = "\n\n".join(parts) + "\n"
    first_line = next((line.strip() for line in canonical.splitlines() if line.strip()), stem)
    return Extracted(title=(meta_title or first_line or stem).strip(), canonical_text=canonical,
                     anchors=tuple(anchors))


def page_of(anchors: Sequence[Anchor], offset: int) -> int:
    """1-based page holding character ``offset``: the last page anchor starting at or before it
    (page 1 when there is none)."""
    starts = [anchor.start for anchor in anchors]
    index = bisect_right(starts, offset) - 1
    return int(anchors[index].locator.removeprefix("page=")) if index >= 0 else 1


class PdfFormat(DocumentFormat):
    """``.pdf`` files; chunks never span two pages, so a page fragment names the only page."""

    name = "pdf"
    suffixes = (".pdf",)
    cut_at_anchors = True

    def extractor(self) -> Extractor:
        return Extractor("pdf-pypdf", f"2+pypdf-{library_version('pypdf')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        return extract_pdf(data, stem)

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#page=N`` (RFC 8118) for the page the span starts on; ``#char=`` without pages."""
        if not anchors:
            return super().fragment(anchors, start, end)
        return f"#page={page_of(anchors, start)}"
