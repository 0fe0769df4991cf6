"""A citation of a paged document as its page: a PDF's page drawn by PDFium (pypdfium2), an
image's frame (a scan, a photographed whiteboard, each frame of a TIFF a page), the quote's
boxes on it.

The page image is a PNG served by ``/page-images/{id}?page=N``; the view places it with the
quoted characters' boxes over it (PDFium's character boxes, one rectangle per line, in
fractions of the page so they scale with the image), and links to the previous and next page.
The quote is found on the page by its letters and digits, so the layout's repairs (joined
hyphenations, dropped running heads, small capitals) do not hide it. A scanned page (no text
layer) and an image are read by OCR again, as the run read them, the first time a page is
shown: the boxes are the words Tesseract found (:func:`~rag_pipeline.core.ingest.pdf_ocr.
page_words`). :data:`PAGED` says how each paged format counts, draws and OCRs its pages.
"""

from __future__ import annotations

import html
import io
import threading
from collections.abc import Callable
from dataclasses import dataclass

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.formats.pdf import last_page_of, page_of
from rag_pipeline.core.ingest.pdf_ocr import (
    OcrSettings,
    RenderedPage,
    WordBox,
    page_words,
    render_page,
    tesseract_version,
)
from rag_pipeline.core.runtime.recent import Recent
from rag_pipeline.service.views.base import (
    Original,
    View,
    ViewError,
    ViewRequest,
    locate,
    normalised,
    occurrences_before,
    path_url,
)
from rag_pipeline.service.views.text import without_original_view

RENDER_SCALE = 2.0
"""Pixels per point of the page image (144 dpi: sharp on a high-density screen)."""
QUOTE_ID = ' id="quote"'
MAX_PAGE_PIXELS = 4096
"""The longer side of a page image at most, whatever the page's size."""


@dataclass(frozen=True)
class Box:
    """A highlighted rectangle in fractions of the page's width and height, from its top left."""

    left: float
    top: float
    width: float
    height: float


def _pdf_pages(data: bytes) -> int:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(data)
    try:
        return len(pdf)
    finally:
        pdf.close()


def _image_frames(data: bytes) -> int:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return getattr(image, "n_frames", 1)


def check_page(page: int, pages: int, name: str) -> None:
    if not 1 <= page <= pages:
        raise ViewError(422, f"page {page} is out of range: {name} has {pages} "
                             f"page{'s' if pages != 1 else ''} (1 to {pages})")


RENDERED_PAGES = 32
"""Page images kept (by the document's sha256 and the page)."""
_RENDERED: Recent[tuple[str, int], bytes] = Recent(RENDERED_PAGES)


def _render_pdf_page(data: bytes, page: int) -> bytes:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(data)
    try:
        handle = pdf[page - 1]
        width, height = handle.get_size()
        scale = min(RENDER_SCALE, MAX_PAGE_PIXELS / max(width, height, 1.0))
        image = handle.render(scale=scale).to_pil()
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=False)
        return out.getvalue()
    finally:
        pdf.close()


def _render_image_frame(data: bytes, page: int) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image.seek(page - 1)
        image.thumbnail((MAX_PAGE_PIXELS, MAX_PAGE_PIXELS))  # before its colours are widened
        frame = image.convert("RGB")
    out = io.BytesIO()
    frame.save(out, format="PNG", optimize=False)
    return out.getvalue()


def _pdf_ocr_rendering(data: bytes, index: int, settings: OcrSettings) -> RenderedPage:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(data)
    try:
        return render_page(pdf, index, settings)
    finally:
        pdf.close()


def _image_ocr_rendering(data: bytes, index: int, settings: OcrSettings) -> RenderedPage:
    from PIL import Image

    from rag_pipeline.core.ingest.formats.image import is_screen_image, render_frame

    with Image.open(io.BytesIO(data)) as image:
        return render_frame(image, index, 2 if is_screen_image(image) else 1)


@dataclass(frozen=True)
class Paged:
    """How a paged format's document is shown page by page.

    Attributes:
        count: Its number of pages, from its bytes.
        png: Page N (1-based) drawn as a PNG, at most :data:`MAX_PAGE_PIXELS` a side.
        ocr_rendering: Page index (0-based) rendered for Tesseract as a corpus run renders it.
        text_layer: Its pages may have text of their own (a PDF), boxed without OCR.
    """

    count: Callable[[bytes], int]
    png: Callable[[bytes, int], bytes]
    ocr_rendering: Callable[[bytes, int, OcrSettings], RenderedPage]
    text_layer: bool


PAGED: dict[str, Paged] = {
    "pdf": Paged(_pdf_pages, _render_pdf_page, _pdf_ocr_rendering, True),
    "image": Paged(_image_frames, _render_image_frame, _image_ocr_rendering, False),
}
"""The paged formats by name: their views are pages, and ``/page-images`` draws them."""


def page_count(original: Original, format_name: str) -> int:
    """The pages of ``original``, a document of the paged format ``format_name``."""
    return PAGED[format_name].count(original.data)


DRAWS_AT_ONCE = 2
"""Pages drawn at once (an image's frame is decoded whole: up to 50 million pixels, hundreds of
MB while it is drawn)."""
_DRAWING = threading.BoundedSemaphore(DRAWS_AT_ONCE)
DRAW_WAIT_SECONDS = 5.0
"""How long a page waits for a drawing to end before it is refused as busy (503)."""


def page_png(original: Original, page: int, format_name: str = "pdf") -> bytes:
    """Page ``page`` (1-based) of ``original``, a document of the paged format ``format_name``,
    as a PNG (cached by its bytes' sha256 and the page); at most :data:`DRAWS_AT_ONCE` drawn at
    once.

    Raises:
        ViewError: The page is out of range (422), or the pages drawn at once stayed busy for
            :data:`DRAW_WAIT_SECONDS` (503).
    """
    paged = PAGED[format_name]
    check_page(page, paged.count(original.data), original.name)
    key = (original.sha256, page)
    found = _RENDERED.get(key)
    if found is None:
        if not _DRAWING.acquire(timeout=DRAW_WAIT_SECONDS):
            raise ViewError(503, f"the service is drawing {DRAWS_AT_ONCE} other pages: retry in a "
                                 "moment")
        try:
            found = paged.png(original.data, page)
        finally:
            _DRAWING.release()
        _RENDERED.put(key, found)
    return found


def quote_boxes(data: bytes, page: int, quote: str, before: int = 0) -> list[Box] | None:
    """One box per line of the page's characters that hold ``quote`` (none when it is not
    found), after ``before`` other places of the page holding it; None when the page has no
    text layer (a scan)."""
    import ctypes

    import pypdfium2
    import pypdfium2.raw as raw

    pdf = pypdfium2.PdfDocument(data)
    try:
        handle = pdf[page - 1]
        width, height = (float(v) for v in handle.get_size())
        textpage = handle.get_textpage()
        count = raw.FPDFText_CountChars(textpage.raw)
        if count <= 0:
            return None
        chars = "".join(chr(raw.FPDFText_GetUnicode(textpage.raw, i)) for i in range(count))
        letters, where = normalised(chars)
        found = locate(letters, normalised(quote)[0], before)
        if found is None:
            return []
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        lines: list[list[float]] = []
        for i in range(where[found[0]], where[found[1]] + 1):
            if chars[i].isspace():
                continue
            raw.FPDFText_GetCharBox(textpage.raw, i, ctypes.byref(left), ctypes.byref(right),
                                    ctypes.byref(bottom), ctypes.byref(top))
            box = [left.value, height - top.value, right.value, height - bottom.value]
            line = lines[-1] if lines else None
            if line and abs((line[1] + line[3]) / 2 - (box[1] + box[3]) / 2) < 0.5 * max(
                    line[3] - line[1], 1.0) and box[0] >= line[0] - 2:
                line[0], line[1] = min(line[0], box[0]), min(line[1], box[1])
                line[2], line[3] = max(line[2], box[2]), max(line[3], box[3])
            else:
                lines.append(box)
        pad = 1.5
        return [Box(round((x0 - pad) / width, 5), round((y0 - pad) / height, 5),
                    round((x1 - x0 + 2 * pad) / width, 5), round((y1 - y0 + 2 * pad) / height, 5))
                for x0, y0, x1, y1 in lines]
    finally:
        pdf.close()


OCR_PAGES = 32
"""Scanned pages whose words are kept (by the document's sha256 and the page)."""
_OCR_WORDS: Recent[tuple[str, int], tuple[WordBox, ...]] = Recent(OCR_PAGES)
VIEW_OCR_SETTINGS = OcrSettings(page_timeout_s=30.0)
"""A run's OCR settings (the same words), a page given 30 s while a reader waits."""
_OCR_AT_ONCE = threading.BoundedSemaphore(1)
"""One page is OCR'd for a view at a time (a few seconds of a core each); a view finding it busy
does not wait (a thread of the service each), and says so: views of many scanned pages at once
leave the threads and the other cores to the questions."""
OCR_BUSY = ("Another view's page is being read by OCR: reload in a few seconds to see the quote "
            "boxed on this one.")


def ocr_quote_boxes(original: Original, page: int, quote: str, before: int = 0,
                    format_name: str = "pdf") -> list[Box] | None:
    """One box per line of the words OCR reads on the scanned ``page`` of ``original`` (a
    document of the paged format ``format_name``) that hold ``quote``, after ``before`` other
    places of the page holding it; none when it is not found, when Tesseract is not installed
    or fails; None when another view's page is being OCR'd (:data:`OCR_BUSY`)."""
    if not quote or tesseract_version() is None:
        return []
    key = (original.sha256, page)
    words = _OCR_WORDS.get(key)
    if words is None:
        if not _OCR_AT_ONCE.acquire(blocking=False):
            return None
        try:
            rendering = PAGED[format_name].ocr_rendering(original.data, page - 1, VIEW_OCR_SETTINGS)
            words = page_words(rendering, VIEW_OCR_SETTINGS)
        except (ExtractionError, OSError, ValueError, EOFError):
            return []
        finally:
            _OCR_AT_ONCE.release()
        _OCR_WORDS.put(key, words)
    owner: list[int] = []
    for number, word in enumerate(words):
        owner.extend([number] * (len(word.text) + 1))
    letters, where = normalised(" ".join(word.text for word in words))
    found = locate(letters, normalised(quote)[0], before)
    if found is None:
        return []
    lines: list[list] = []
    for word in words[owner[where[found[0]]]:owner[where[found[1]]] + 1]:
        if lines and lines[-1][0] == word.line:
            line = lines[-1]
            line[1:] = [min(line[1], word.left), min(line[2], word.top), max(line[3], word.right),
                        max(line[4], word.bottom)]
        else:
            lines.append([word.line, word.left, word.top, word.right, word.bottom])
    pad = 0.002
    return [Box(round(x0 - pad, 5), round(y0 - pad, 5), round(x1 - x0 + 2 * pad, 5),
                round(y1 - y0 + 2 * pad, 5)) for _, x0, y0, x1, y1 in lines]


def _page_quote(request: ViewRequest, page: int) -> str:
    """The part of the quote that lies on ``page`` (its page anchors), else ``""``."""
    pieces = [request.text[max(a.start, request.start):min(a.end, request.end)]
              for a in request.info.anchors if a.locator == f"page={page}"
              and a.start < request.end and a.end > request.start]
    return " ".join(pieces)


def _page_quote_before(request: ViewRequest, page: int) -> int:
    """How many times the quote's part on ``page`` occurs on that page before it."""
    spans = [a for a in request.info.anchors if a.locator == f"page={page}"
             and a.start < request.end and a.end > request.start]
    if not spans:
        return 0
    start = max(spans[0].start, request.start)
    return occurrences_before(request.text, start, min(spans[0].end, request.end), spans[0].start)


def page_view(request: ViewRequest) -> View:
    """The cited page (or ``page``) of a paged document as an image with the quote's boxes and
    page links."""
    original = request.original
    if original is None:
        return without_original_view(request)
    name = request.info.format
    pages = page_count(original, name)
    cited = page_of(request.info.anchors, request.start) if request.info.anchors else 1
    page = request.page if request.page is not None else cited
    check_page(page, pages, request.info.document_id)
    quote, before = _page_quote(request, page), _page_quote_before(request, page)
    boxes = quote_boxes(original.data, page, quote, before) if PAGED[name].text_layer else None
    busy = False
    if boxes is None:
        boxes = ocr_quote_boxes(original, page, quote, before, name)
        busy, boxes = boxes is None, boxes or []
    image = path_url("/page-images/", request.info.document_id) + f"?page={page}"
    # The boxes are drawn over the image; the first also holds the quote as text for a screen
    # reader (the view moves the focus there) and for a search of the page.
    spoken = html.escape(" ".join(_page_quote(request, page).split()))
    marks = "".join(
        f'<div class="box"{QUOTE_ID if i == 0 else ""} style="left:{b.left * 100:.3f}%;'
        f'top:{b.top * 100:.3f}%;width:{b.width * 100:.3f}%;height:{b.height * 100:.3f}%">'
        + (f'<span class="visually-hidden">Quoted on this page: {spoken}</span>' if i == 0 else "")
        + "</div>" for i, b in enumerate(boxes))
    note = ""
    if _page_quote(request, page) and not boxes:
        note = OCR_BUSY if busy else "The quoted text could not be located on the page image."
    last = last_page_of(request.info.anchors, request.start, request.end) if request.info.anchors else cited
    if boxes and last > page:
        note = (f"The quote goes on to page {last}: the next page"
                f"{'s box' if last > page + 1 else ' boxes'} the rest.")
    body = (f'<figure class="page"><div class="sheet-of-paper"><img id="page-image" '
            f'src="{html.escape(image)}" alt="page {page} of {html.escape(request.info.title)}">'
            f"{marks}</div></figure>")
    if page == cited:
        label = f"page {page} of {pages}"
    elif cited < page <= last:
        label = f"page {page} of {pages} (the quote begins on page {cited})"
    else:
        where = f"pages {cited}-{last}" if last > cited else f"page {cited}"
        label = f"page {page} of {pages} (the quote is on {where})"
    return View(label, body, PAGE_VIEW, note)


PAGE_VIEW = "pdf"
"""The kind of a page's view (the page's CSS class)."""


def page_navigation(request: ViewRequest, view: View) -> str:
    """Previous / next page links for a page's view (the quoted span kept)."""
    original = request.original
    if original is None or view.kind != PAGE_VIEW:
        return ""
    pages = page_count(original, request.info.format)
    page = request.page or (page_of(request.info.anchors, request.start) if request.info.anchors else 1)
    base = request.quote_link
    links = []
    if page > 1:
        links.append(f'<a rel="prev" id="prev-page" href="{html.escape(base)}&amp;page={page - 1}">'
                     f"&larr; page {page - 1}</a>")
    if page < pages:
        links.append(f'<a rel="next" id="next-page" href="{html.escape(base)}&amp;page={page + 1}">'
                     f"page {page + 1} &rarr;</a>")
    return f'<nav class="pages">{" ".join(links)}</nav>'
