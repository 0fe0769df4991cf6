"""PDF: laid out by PDFium (pypdfium2), scanned pages read by Tesseract; cited ``#page=N``.

The layout (:mod:`rag_pipeline.core.ingest.pdf_layout`) drops running heads, feet, page
numbers and contents pages, joins paragraphs across page breaks, resolves line-end hyphens
and labels the text with the outline's sections (else headings found by type size). Pages
without a text layer are OCR'd (:mod:`rag_pipeline.core.ingest.pdf_ocr`). Chunks may span a
page break; a chunk cites the page it starts on, and the chunks table records both that
page and its last one (:meth:`PdfFormat.page_span`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from rag_pipeline.core.ingest.extracted import Anchor, Extracted, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.locator import PageLocator
from rag_pipeline.core.ingest.pdf_extract import PdfReading, read_pdf
from rag_pipeline.core.ingest.pdf_ocr import OcrBudget, OcrSettings, tesseract_version


def page_of(anchors: Sequence[Anchor], offset: int) -> int:
    """1-based page holding character ``offset``: the last page anchor starting at or before it
    (page 1 when there is none)."""
    starts = [anchor.start for anchor in anchors]
    index = bisect_right(starts, offset) - 1
    return PageLocator.parse(anchors[index].locator).page if index >= 0 else 1


def last_page_of(anchors: Sequence[Anchor], start: int, end: int) -> int:
    """1-based last page of ``canonical_text[start:end]``: the highest page among the anchors
    it overlaps (a footnote moved after a paragraph that runs on to the next page has its own
    page's anchor after that page's, so the last anchor is not always the last page); the page
    of ``start`` when it overlaps none."""
    overlapped = [PageLocator.parse(anchor.locator).page for anchor in anchors
                  if anchor.start < max(end, start + 1) and anchor.end > start]
    return max(overlapped, default=page_of(anchors, start))


def reading_notes(reading: PdfReading) -> tuple[tuple[str, str], ...]:
    """The per-document facts shown in ``status`` and the run's metadata.

    ``pages`` (the page count), ``dropped_lines`` (running heads, feet, page numbers),
    ``toc_pages`` (contents and index pages dropped, and ``toc_page_numbers`` which),
    ``footnotes`` moved, ``sections_from`` (``outline``, ``font`` or ``none``); with OCR,
    ``ocr_pages``, ``ocr_mean_confidence``, ``ocr_page_confidence`` (``page=confidence``
    pairs, ``-`` where Tesseract found no word) and, when any page is under the floor,
    ``low_confidence_pages`` with ``ocr_confidence_floor``; ``pages_without_text`` when OCR
    found no word on many pages (:data:`EMPTY_PAGES_SHARE`).
    """
    layout = reading.layout
    notes = [("pages", str(len(reading.pages))), ("dropped_lines", str(layout.dropped_lines)),
             ("toc_pages", str(len(layout.toc_pages)))]
    if layout.toc_pages:
        notes.append(("toc_page_numbers", ",".join(map(str, layout.toc_pages))))
    notes += [("footnotes", str(layout.footnotes)), ("sections_from", layout.sections_from)]
    ocr = reading.ocr_pages
    if ocr:
        mean = reading.mean_ocr_confidence
        notes += [("ocr_pages", str(len(ocr))),
                  ("ocr_mean_confidence", "-" if mean is None else f"{mean:.1f}"),
                  ("ocr_page_confidence", " ".join(
                      f"{p.page}={'-' if p.ocr_confidence is None else f'{p.ocr_confidence:.1f}'}"
                      for p in ocr))]
    if reading.low_confidence_pages:
        notes += [("low_confidence_pages", ",".join(map(str, reading.low_confidence_pages))),
                  ("ocr_confidence_floor", f"{reading.confidence_floor:g}")]
    if reading.unreadable_pages:
        notes.append(("pages_unreadable", ",".join(map(str, reading.unreadable_pages))))
    empty = [page.page for page in ocr if page.ocr_confidence is None]
    if len(empty) > max(1, EMPTY_PAGES_SHARE * len(reading.pages)):
        notes.append(("pages_without_text", ",".join(map(str, empty))))
    return tuple(notes)


EMPTY_PAGES_SHARE = 0.1
"""Pages with no text layer where OCR finds no word either, over this share of a PDF's pages
(and more than one), are a caveat (``pages_without_text``): a book's few blank pages are not,
a manual whose pages draw only rules (a PDF broken when it was made) is."""


class PdfFormat(DocumentFormat):
    """``.pdf`` files; a chunk may run over a page break and cites the page it starts on."""

    name = "pdf"
    suffixes = (".pdf",)
    cut_at_anchors = False

    def __init__(self, ocr: OcrSettings | None = None, budget: OcrBudget | None = None) -> None:
        self.ocr = ocr or OcrSettings()
        self.budget = budget or OcrBudget(self.ocr.run_timeout_s)

    def start_run(self) -> None:
        """A new run may spend its OCR seconds again (the budget may be shared with images)."""
        self.budget.restart()

    def extractor(self) -> Extractor:
        """``pdf-pdfium+tesseract``, versioned by both: installing Tesseract re-extracts PDFs."""
        tesseract = tesseract_version() or "absent"
        return Extractor("pdf-pdfium+tesseract",
                         f"19+pypdfium2-{library_version('pypdfium2')}+tesseract-{tesseract}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        reading = read_pdf(data, stem, self.ocr, self.budget)
        layout = reading.layout
        return Extracted(title=layout.title, canonical_text=layout.canonical_text,
                         sections=layout.sections, anchors=layout.anchors,
                         notes=reading_notes(reading), pages=reading.pages, tables=layout.tables)

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#page=N`` (RFC 8118) for the page the span starts on; ``#char=`` without pages."""
        if not anchors:
            return super().fragment(anchors, start, end)
        return PageLocator(page_of(anchors, start)).fragment

    def page_span(self, anchors: Sequence[Anchor], start: int, end: int) -> tuple[int, int] | None:
        """(the page the span starts on, the one it cites; its last page); ``None`` without
        page anchors."""
        if not anchors:
            return None
        first = page_of(anchors, start)
        return first, max(first, last_page_of(anchors, start, end))
