"""A PDF file's bytes to its layout and one record per page: the text layer where there is one,
OCR where there is none.

The steps: open the file with PDFium, read every page's text runs, OCR the pages without any
(at most :attr:`OcrSettings.max_pages`), read the outline, then lay the pages out
(:func:`rag_pipeline.core.ingest.pdf_layout.lay_out`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rag_pipeline.core.ingest.extracted import DocumentPage, ExtractionError
from rag_pipeline.core.ingest.locator import PageLocator
from rag_pipeline.core.ingest.pdf_inflation import check_inflation
from rag_pipeline.core.ingest.pdf_layout import Layout, lay_out
from rag_pipeline.core.ingest.pdf_ocr import (
    MISSING_TESSERACT,
    OcrBudget,
    OcrSettings,
    ocr_pages,
    tesseract_version,
)
from rag_pipeline.core.ingest.pdf_pages import OutlineEntry, PageSource, PageText, outline, page_runs


@dataclass(frozen=True)
class PdfReading:
    """A PDF read: its layout, its pages and what OCR did.

    Attributes:
        layout: The canonical text, sections and anchors.
        pages: One row per page, in order (``flagged``: OCR confidence under the floor).
        low_confidence_pages: 1-based OCR pages whose mean confidence is under the floor.
        confidence_floor: The floor they were judged by.
        unreadable_pages: 1-based pages PDFium could not load (a damaged page tree, a page
            count higher than the pages there are): left out, the others read.
    """

    layout: Layout
    pages: tuple[DocumentPage, ...]
    low_confidence_pages: tuple[int, ...]
    confidence_floor: float
    unreadable_pages: tuple[int, ...] = ()

    @property
    def ocr_pages(self) -> tuple[DocumentPage, ...]:
        return tuple(page for page in self.pages if page.source == PageSource.OCR.value)

    @property
    def mean_ocr_confidence(self) -> float | None:
        scores = [page.ocr_confidence for page in self.ocr_pages if page.ocr_confidence is not None]
        return round(statistics.fmean(scores), 2) if scores else None


MAX_UNREADABLE_PAGES = 100
"""Pages PDFium cannot load that a PDF may have and still be read (a page tree counting a
million pages that are not there fails at once, not after a million tries)."""


def _has_text(page: PageText) -> bool:
    return any(run.text.strip() for run in page.runs)


def read_pdf(data: bytes, stem: str, settings: OcrSettings | None = None,
             budget: OcrBudget | None = None) -> PdfReading:
    """Reads a PDF's bytes.

    Args:
        data: The file's bytes.
        stem: The fall-back title.
        settings: OCR settings; the defaults when ``None``.
        budget: The run's OCR time left, shared by its documents; unbounded when ``None``.

    Raises:
        ExtractionError: Unreadable or encrypted file; streams expanding past
            :data:`~rag_pipeline.core.ingest.pdf_inflation.MAX_INFLATED_BYTES`; pages without
            text and no Tesseract; more pages without text than ``settings.max_pages``; a page
            too large to render; an OCR failure or time-out (per page, document or run); no
            memory; no text at all.
    """
    import pypdfium2

    settings = settings or OcrSettings()
    check_inflation(data)
    try:
        pdf = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise ExtractionError("encrypted PDF: no password is configured") from exc
        if b"%PDF-" not in data[:1024]:  # where readers look for the header
            raise ExtractionError(f"not a PDF: no %PDF- header in its first 1024 bytes (it "
                                  f"begins {data[:8]!r}); rename it to its real type") from exc
        raise ExtractionError(f"unreadable PDF: {message}") from exc
    try:
        pages: list[PageText] = []
        unreadable: list[int] = []
        for i in range(len(pdf)):
            try:
                pages.append(page_runs(pdf, i))
            except pypdfium2.PdfiumError:  # "Failed to load page.": no page there to read
                unreadable.append(i + 1)
                if len(unreadable) > MAX_UNREADABLE_PAGES:
                    raise ExtractionError(
                        f"over {MAX_UNREADABLE_PAGES} of the {len(pdf):,} pages its page tree "
                        "counts cannot be loaded: a damaged PDF") from None
                size = (pages[-1].width, pages[-1].height) if pages else (612.0, 792.0)
                pages.append(PageText(i, *size, ()))
        blank = [page.index for page in pages
                 if not _has_text(page) and page.index + 1 not in unreadable]
        if blank and tesseract_version() is None:
            raise ExtractionError(f"{len(blank)} of {len(pages)} {MISSING_TESSERACT}")
        if len(blank) > settings.max_pages:
            raise ExtractionError(f"{len(blank)} pages without a text layer: over the OCR limit of "
                                  f"{settings.max_pages} pages per document")
        for index, page in ocr_pages(pdf, blank, settings, budget).items():
            pages[index] = page
        entries: tuple[OutlineEntry, ...] = outline(pdf)
        metadata_title = pdf.get_metadata_value("Title") or ""
    except MemoryError as exc:
        raise ExtractionError("out of memory reading the PDF: too large to read") from exc
    finally:
        pdf.close()
    if not any(_has_text(page) for page in pages):
        raise ExtractionError(f"no text in {len(pages)} page(s), not even by OCR")
    layout = lay_out(pages, entries, metadata_title, stem)
    chars = {page.index + 1: 0 for page in pages}
    for anchor in layout.anchors:
        number = PageLocator.parse(anchor.locator).page
        chars[number] += anchor.end - anchor.start
    records = tuple(DocumentPage(page.index + 1, page.source.value, page.ocr_confidence,
                                 chars[page.index + 1],
                                 page.ocr_confidence is not None
                                 and page.ocr_confidence < settings.confidence_floor)
                    for page in pages)
    low = tuple(record.page for record in records if record.flagged)
    return PdfReading(layout, records, low, settings.confidence_floor, tuple(unreadable))
