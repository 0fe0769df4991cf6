"""Images (``.png``, ``.jpg``, ``.tif``...): read by the same OCR and layout as a scanned PDF page.

Opened by Pillow (MIT-CMU), which reads only the header before anything is decoded: an image
whose frame has more than :data:`MAX_PIXELS` pixels fails with its size at once (a 20,000 x
20,000 image would need 400 MB as grey pixels before Tesseract even starts), and so does a
multi-page TIFF with more frames than ``OcrSettings.max_pages``. Each frame is decoded as
grey, handed to Tesseract as a PNG with its resolution (the file's own DPI when it declares a
plausible one, else 300), and its lines laid out by
:func:`~rag_pipeline.core.ingest.pdf_layout.lay_out`, exactly as
:mod:`rag_pipeline.core.ingest.pdf_ocr` reads a page without a text layer. A frame is a page:
anchors ``page=N``, cited ``#page=N``, the OCR confidence of each in the notes
(``ocr_page_confidence``, ``ocr_mean_confidence``) and in the ``document_pages`` table, a
frame under the confidence floor flagged.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence

from rag_pipeline.core.ingest.extracted import (
    Anchor,
    DocumentPage,
    Extracted,
    ExtractionError,
    Extractor,
)
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.formats.pdf import last_page_of, page_of
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.locator import PageLocator
from rag_pipeline.core.ingest.pdf_ocr import (
    MISSING_TESSERACT,
    OcrSettings,
    _tesseract_tsv,
    runs_from_tsv,
    tesseract_version,
)
from rag_pipeline.core.ingest.pdf_pages import PageSource, PageText

MAX_PIXELS = 50_000_000
"""Pixels of one frame: a 300 dpi scan of an A3 page is 17.4 million, a 48-megapixel photo
48 million; more is not a picture of text."""

_DEFAULT_DPI = 300


def _dpi(image: object) -> int:
    declared = image.info.get("dpi")
    try:
        dpi = round(float(declared[0])) if declared else 0
    except (TypeError, ValueError, IndexError):
        dpi = 0
    return dpi if 72 <= dpi <= 1200 else _DEFAULT_DPI


def _ocr_frame(frame: object, index: int, settings: OcrSettings) -> PageText:
    """One decoded frame read by Tesseract as a page of ``frame.size`` at its resolution."""
    dpi = _dpi(frame)
    grey = frame.convert("L")
    buffer = io.BytesIO()
    grey.save(buffer, format="PNG", dpi=(dpi, dpi))
    tsv = _tesseract_tsv(buffer.getvalue(), OcrSettings(
        dpi=min(max(dpi, 72), 600), language=settings.language,
        page_timeout_s=settings.page_timeout_s, max_pages=settings.max_pages,
        confidence_floor=settings.confidence_floor), index + 1)
    scale = 72 / dpi
    runs, confidence = runs_from_tsv(tsv, index, scale)
    width, height = frame.size
    return PageText(index, width * scale, height * scale, runs, PageSource.OCR, confidence)


class ImageFormat(DocumentFormat):
    """Raster images of text: scans, photographed whiteboards, screenshots."""

    name = "image"
    suffixes = (".png", ".jpg", ".jpeg", ".tif", ".tiff")

    def __init__(self, ocr: OcrSettings | None = None) -> None:
        self.ocr = ocr or OcrSettings()

    def extractor(self) -> Extractor:
        tesseract = tesseract_version() or "absent"
        return Extractor("image-tesseract", f"1+pillow-{library_version('pillow')}+tesseract-{tesseract}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Every frame OCR'd and laid out as a scanned PDF's pages (the module docstring).

        Raises:
            ExtractionError: Not an image Pillow reads, a frame over :data:`MAX_PIXELS`, more
                frames than the OCR page limit, no Tesseract, an OCR failure, or no text.
        """
        from PIL import Image

        from rag_pipeline.core.ingest.pdf_layout import lay_out

        try:
            with warnings.catch_warnings():  # Pillow warns past 89 million pixels; refused below
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                image = Image.open(io.BytesIO(data))  # the header only: nothing decoded yet
        except Image.DecompressionBombError as exc:  # Pillow's own refusal, past 179 million
            raise ExtractionError(f"over the limit of {MAX_PIXELS} pixels per image, never "
                                  f"decoded ({exc})") from exc
        except (Image.UnidentifiedImageError, OSError, ValueError) as exc:
            raise ExtractionError(f"unreadable image: {type(exc).__name__}: {exc}") from exc
        with image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise ExtractionError(f"{width} x {height} pixels: over the limit of {MAX_PIXELS} "
                                      "pixels per image, never decoded")
            frames = getattr(image, "n_frames", 1)
            if frames > self.ocr.max_pages:
                raise ExtractionError(f"{frames} frames: over the OCR limit of {self.ocr.max_pages} "
                                      "pages per document")
            if tesseract_version() is None:
                raise ExtractionError(f"{frames} of {frames} {MISSING_TESSERACT}")
            pages = []
            for index in range(frames):
                image.seek(index)
                if image.size[0] * image.size[1] > MAX_PIXELS:
                    raise ExtractionError(f"frame {index + 1}: {image.size[0]} x {image.size[1]} "
                                          f"pixels, over the limit of {MAX_PIXELS}, never decoded")
                try:
                    pages.append(_ocr_frame(image, index, self.ocr))
                except (OSError, ValueError, Image.DecompressionBombError) as exc:
                    raise ExtractionError(f"unreadable image: frame {index + 1}: "
                                          f"{type(exc).__name__}: {exc}") from exc
        if not any(run.text.strip() for page in pages for run in page.runs):
            raise ExtractionError(f"no text found by OCR in {frames} frame(s)")
        layout = lay_out(pages, (), "", stem)
        confidences = [page.ocr_confidence for page in pages]
        known = [c for c in confidences if c is not None]
        floor = self.ocr.confidence_floor
        notes = [("pages", str(frames)), ("ocr_pages", str(frames)),
                 ("ocr_mean_confidence", f"{sum(known) / len(known):.1f}" if known else "-"),
                 ("ocr_page_confidence", " ".join(
                     f"{page.index + 1}={'-' if c is None else f'{c:.1f}'}"
                     for page, c in zip(pages, confidences, strict=True)))]
        low = [str(page.index + 1) for page in pages
               if page.ocr_confidence is not None and page.ocr_confidence < floor]
        if low:
            notes += [("low_confidence_pages", ",".join(low)), ("ocr_confidence_floor", f"{floor:g}")]
        chars = {page.index + 1: 0 for page in pages}
        for anchor in layout.anchors:
            chars[PageLocator.parse(anchor.locator).page] += anchor.end - anchor.start
        records = tuple(DocumentPage(page.index + 1, page.source.value, page.ocr_confidence,
                                     chars[page.index + 1], page.ocr_confidence is not None
                                     and page.ocr_confidence < floor) for page in pages)
        return Extracted(title=stem, canonical_text=layout.canonical_text, sections=layout.sections,
                         anchors=layout.anchors, notes=tuple(notes), pages=records)

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#page=N`` of the frame the span starts on, as for PDF."""
        if not anchors:
            return super().fragment(anchors, start, end)
        return f"#page={page_of(anchors, start)}"

    def page_span(self, anchors: Sequence[Anchor], start: int, end: int) -> tuple[int, int] | None:
        """(the frame the span starts on, its last frame), as for PDF."""
        if not anchors:
            return None
        first = page_of(anchors, start)
        return first, max(first, last_page_of(anchors, start, end))
