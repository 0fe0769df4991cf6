"""Images (``.png``, ``.jpg``, ``.tif``...): read by the same OCR and layout as a scanned PDF page.

Opened by Pillow (MIT-CMU), which reads only the header before anything is decoded: an image
whose frame has more than :data:`MAX_PIXELS` pixels fails with its size at once (a 20,000 x
20,000 image would need 400 MB as grey pixels before Tesseract even starts), and so does a
multi-page TIFF with more frames than ``OcrSettings.max_pages``. Each frame is decoded as
grey (a blank one is never OCR'd) and becomes a
:class:`~rag_pipeline.core.ingest.pdf_ocr.RenderedPage` at its resolution (the file's own DPI
when it declares a plausible one, else 300); the frames go through
:func:`~rag_pipeline.core.ingest.pdf_ocr.ocr_rendered`, the path a PDF's scanned pages take:
the same Tesseract call, ``workers`` frames at once, each bounded per page, per document
(``document_timeout_s``) and per run by the :class:`~rag_pipeline.core.ingest.pdf_ocr.OcrBudget`
the image and PDF formats share, so a folder of many images stops OCR where the run's budget
ends (each later image fails with that reason). The lines are laid out by
:func:`~rag_pipeline.core.ingest.pdf_layout.lay_out`, exactly as for a PDF page. A frame is a page:
anchors ``page=N``, cited ``#page=N``, the OCR confidence of each in the notes
(``ocr_page_confidence``, ``ocr_mean_confidence``) and in the ``document_pages`` table, a
frame under the confidence floor flagged. A screen image (:func:`is_screen_image`: a
screenshot, a web diagram) is read again at twice its size and the reading with the larger
confidence mass kept: small labels that read as noise at their own size read as words at
twice it.
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
    BLANK_LEVEL,
    MISSING_TESSERACT,
    OcrBudget,
    OcrSettings,
    RenderedPage,
    ocr_rendered,
    tesseract_version,
)
from rag_pipeline.core.ingest.pdf_pages import PageText

MAX_PIXELS = 50_000_000
"""Pixels of one frame: a 300 dpi scan of an A3 page is 17.4 million, a 48-megapixel photo
48 million; more is not a picture of text."""

_DEFAULT_DPI = 300
SCREEN_DPI = 150
"""A frame declaring at most this resolution, or none, is a screen image (a screenshot, a
diagram exported for a web page) when it is also under :data:`SCREEN_SIDE` pixels a side."""
SCREEN_SIDE = 1600
"""The longest side under which a screen image is enlarged for OCR (see :func:`upscale_of`)."""


def _declared_dpi(image: object) -> int:
    declared = image.info.get("dpi")
    try:
        return round(float(declared[0])) if declared else 0
    except (TypeError, ValueError, IndexError):
        return 0


def _dpi(image: object) -> int:
    dpi = _declared_dpi(image)
    return dpi if 72 <= dpi <= 1200 else _DEFAULT_DPI


def is_screen_image(image: object) -> bool:
    """No declared resolution or at most :data:`SCREEN_DPI`, and the longest side under
    :data:`SCREEN_SIDE` pixels: a screenshot or a web diagram, whose text may be too small
    for OCR at its own size.

    Tesseract is trained on text about 20 pixels high (a 10-point line at 300 dpi); a web
    diagram's 12-pixel labels read as noise at their own size ("preinst install" came out as
    "(reins instan") or not at all, and as the words at twice it; a banner's 40-pixel letters
    read at their own size and not at twice it. So a screen image is read at both sizes and
    the reading with the larger confidence mass (mean word confidence times characters read)
    is kept.
    """
    return _declared_dpi(image) <= SCREEN_DPI and max(image.size) < SCREEN_SIDE


def _weight(page: PageText) -> float:
    """A reading's confidence mass: its mean word confidence times the characters it read."""
    return (page.ocr_confidence or 0.0) * sum(len(run.text.strip()) for run in page.runs)


def render_frame(image: object, index: int, factor: int = 1) -> RenderedPage:
    """Frame ``index`` of an open image as a page for Tesseract: grey PGM at the frame's
    resolution (enlarged ``factor`` times by Lanczos resampling), its size in points at that
    resolution; no image for a blank frame.

    Raises:
        ExtractionError: The frame is over :data:`MAX_PIXELS`, or cannot be decoded.
    """
    from PIL import Image

    try:
        image.seek(index)
        width, height = image.size
        if width * height > MAX_PIXELS:
            raise ExtractionError(f"frame {index + 1}: {width} x {height} pixels, over the limit "
                                  f"of {MAX_PIXELS}, never decoded")
        dpi = _dpi(image)
        grey = image.convert("L")
        darkest, _ = grey.getextrema()
        if darkest >= BLANK_LEVEL:
            return RenderedPage(index, width / (dpi / 72), height / (dpi / 72), None, dpi / 72)
        if factor > 1:
            grey = grey.resize((width * factor, height * factor), Image.LANCZOS)
        scale = dpi * factor / 72
        buffer = io.BytesIO()
        grey.save(buffer, format="PPM")
    except (OSError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        raise ExtractionError(f"unreadable image: frame {index + 1}: "
                              f"{type(exc).__name__}: {exc}") from exc
    return RenderedPage(index, width * factor / scale, height * factor / scale, buffer.getvalue(),
                        scale)


class ImageFormat(DocumentFormat):
    """Raster images of text: scans, photographed whiteboards, screenshots."""

    name = "image"
    suffixes = (".png", ".jpg", ".jpeg", ".tif", ".tiff")

    def __init__(self, ocr: OcrSettings | None = None, budget: OcrBudget | None = None) -> None:
        self.ocr = ocr or OcrSettings()
        self.budget = budget or OcrBudget(self.ocr.run_timeout_s)

    def start_run(self) -> None:
        """A new run may spend its OCR seconds again (the budget may be shared with PDF)."""
        self.budget.restart()

    def extractor(self) -> Extractor:
        tesseract = tesseract_version() or "absent"
        return Extractor("image-tesseract", f"8+pillow-{library_version('pillow')}+tesseract-{tesseract}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Every frame OCR'd and laid out as a scanned PDF's pages (the module docstring).

        Raises:
            ExtractionError: Not an image Pillow reads, a frame over :data:`MAX_PIXELS`, more
                frames than the OCR page limit, no Tesseract, an OCR failure, an OCR time
                limit passed (per page, document or run), or no text.
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
        except Image.UnidentifiedImageError as exc:  # its text names the buffer's address
            raise ExtractionError(f"unreadable image: not a picture format Pillow knows (it "
                                  f"starts {data[:8]!r})") from exc
        except (OSError, ValueError) as exc:
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
            read = ocr_rendered(lambda index: render_frame(image, index), range(frames),
                                self.ocr, self.budget)
            if is_screen_image(image):
                try:
                    again = ocr_rendered(lambda index: render_frame(image, index, 2),
                                         range(frames), self.ocr, self.budget)
                except ExtractionError:  # out of OCR time: the first reading stands
                    again = {}
                read.update({index: page for index, page in again.items()
                             if _weight(page) > _weight(read[index])})
        pages = [read[index] for index in range(frames)]
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
