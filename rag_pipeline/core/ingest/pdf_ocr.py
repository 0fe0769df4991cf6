"""Text for PDF pages that have none: the page rasterised by PDFium, read by Tesseract.

Tesseract (Debian ``tesseract-ocr`` and ``tesseract-ocr-eng``; ``.ci/setup`` installs them)
runs as a subprocess with TSV output, so every recognised word comes with its box and its
confidence (0-100). Each Tesseract line becomes one :class:`TextRun` in page points, so an
OCR page goes through the same layout (running heads, paragraphs, hyphens) as a text page.

Every page is bounded before it is rendered: a page larger than PDF's own limit
(:data:`MAX_PAGE_POINTS` a side) fails its document; a page is first rendered as a small
thumbnail, and a blank one is never OCR'd; a page whose pixels at ``dpi`` would pass
``max_page_pixels`` is rendered at the lower resolution that fits. Tesseract runs one
single-threaded process per page, as many at once as ``workers``, and the time OCR may take
is bounded per page, per document and per run (:class:`OcrBudget`).
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.pdf_pages import PageSource, PageText, TextRun
from rag_pipeline.core.ingest.reading import RUN_SPENT
from rag_pipeline.core.ingest.reading_limits import clock_stopped

if TYPE_CHECKING:
    import pypdfium2

DEFAULT_CONFIDENCE_FLOOR = 60.0
"""A page whose mean word confidence is under this is flagged: at Tesseract's 60 roughly one
word in three or four is wrong, too many for a quote to be trusted."""

MISSING_TESSERACT = ("page(s) without a text layer need OCR, but tesseract is not installed "
                     "(apt-get install tesseract-ocr tesseract-ocr-eng)")


PAGE_SEGMENTATION_MODES = frozenset({1, 3, 4, 6, 11, 12})
"""Tesseract's ``--psm`` modes that read a whole page (``tesseract --help-psm``); the others
read one line, word or character, or only detect the script."""


@dataclass(frozen=True)
class OcrSettings:
    """How scanned pages are read.

    Attributes:
        dpi: Rasterisation resolution; 300 is what Tesseract is trained for.
        language: Tesseract language code(s), e.g. ``eng`` or ``eng+deu``.
        page_timeout_s: Tesseract is stopped after this many seconds on one page, and the
            document fails with that reason.
        max_pages: At most this many pages of one document are OCR'd; a document with more
            pages without text fails with that reason instead of taking hours.
        confidence_floor: Pages whose mean word confidence is below it are flagged in the
            document's notes (``low_confidence_pages``).
        max_page_pixels: A page is rendered at ``dpi`` only while that makes at most this
            many pixels (60 million: an A1 sheet at 300 dpi); a larger page is rendered at the
            resolution that fits.
        document_timeout_s: All OCR of one document together; past it the document fails
            with that reason.
        run_timeout_s: All OCR of one corpus run together (:class:`OcrBudget`); past it
            every further document needing OCR fails with that reason, and the run goes on.
        workers: Pages OCR'd at once (one single-threaded Tesseract each); 0 means one per
            CPU core this process may use.
        page_segmentation: Tesseract's page segmentation mode (``--psm``), one of
            :data:`PAGE_SEGMENTATION_MODES`: 3 (the default) finds columns and blocks; 4
            reads the page as one column; 6 as one block of text; 11 and 12 find sparse text
            in any order (diagrams, forms); 1 is 3 with the page turned upright first.

    Raises:
        ValueError: If a number is out of range.
    """

    dpi: int = 300
    language: str = "eng"
    page_timeout_s: float = 120.0
    max_pages: int = 100
    confidence_floor: float = DEFAULT_CONFIDENCE_FLOOR
    max_page_pixels: int = 60_000_000
    document_timeout_s: float = 900.0
    run_timeout_s: float = 3600.0
    workers: int = 0
    page_segmentation: int = 3

    def __post_init__(self) -> None:
        if not 72 <= self.dpi <= 600:
            raise ValueError(f"dpi must be in [72, 600], got {self.dpi}")
        for name in ("page_timeout_s", "document_timeout_s", "run_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_page_pixels < 1_000_000:
            raise ValueError(f"max_page_pixels must be at least 1,000,000, got {self.max_page_pixels}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0, got {self.workers}")
        if self.max_pages < 0:
            raise ValueError(f"max_pages must be >= 0, got {self.max_pages}")
        if self.page_segmentation not in PAGE_SEGMENTATION_MODES:
            raise ValueError(f"page_segmentation must be one of {sorted(PAGE_SEGMENTATION_MODES)}, "
                             f"got {self.page_segmentation}")
        if not 0 <= self.confidence_floor <= 100:
            raise ValueError(f"confidence_floor must be in [0, 100], got {self.confidence_floor}")


MAX_PAGE_POINTS = 14_400.0
"""The largest page side PDF allows (ISO 32000-1, annex C.2: 14,400 units, 200 inches)."""

THUMBNAIL_PIXELS = 250_000
"""A page is first rendered at most this large to see whether anything is drawn on it."""

BLANK_LEVEL = 250
"""A thumbnail whose darkest pixel is this light (0 black, 255 white) is a blank page."""




class OcrBudget:
    """The OCR seconds one corpus run may still spend, shared by its documents (and threads)
    and by every format that OCRs (PDF pages and images draw on one budget).

    Args:
        seconds: The run's budget.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0
        self._lock = threading.Lock()

    def left(self) -> float:
        with self._lock:
            return self.seconds - self.spent

    def spend(self, seconds: float) -> None:
        with self._lock:
            self.spent += seconds

    def restart(self) -> None:
        """A new run: nothing spent yet."""
        with self._lock:
            self.spent = 0.0


def default_workers() -> int:
    """The CPU cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_page_size(width: float, height: float, page_number: int) -> None:
    """Raises ExtractionError for a page larger than PDF allows (:data:`MAX_PAGE_POINTS`)."""
    if not (0 < width <= MAX_PAGE_POINTS and 0 < height <= MAX_PAGE_POINTS):
        raise ExtractionError(
            f"page {page_number} declares {width:,.0f} x {height:,.0f} points, over the "
            f"{MAX_PAGE_POINTS:,.0f} points a side that PDF allows: not rendered")


def render_scale(width: float, height: float, settings: OcrSettings) -> float:
    """Pixels per point: ``dpi / 72``, lowered so the page has at most ``max_page_pixels``."""
    scale = settings.dpi / 72
    pixels = width * height * scale * scale
    if pixels > settings.max_page_pixels:
        scale *= math.sqrt(settings.max_page_pixels / pixels)
    return scale


@cache
def tesseract_version() -> str | None:
    """Tesseract's version (``5.3.0``), or ``None`` when it is not installed."""
    binary = shutil.which("tesseract")
    if binary is None:
        return None
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30,
                              check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    first = (done.stdout or done.stderr).split("\n", 1)[0].split()
    return first[1] if len(first) >= 2 else "unknown"


def tesseract_command(binary: str, settings: OcrSettings, dpi: int) -> list[str]:
    """Tesseract reading an image from stdin, writing TSV to stdout: the LSTM engine
    (``--oem 1``; Debian's ``eng`` model holds no other), the settings' language and page
    segmentation, ``dpi`` the image's resolution."""
    return [binary, "stdin", "stdout", "--oem", "1", "--psm", str(settings.page_segmentation),
            "-l", settings.language, "--dpi", str(dpi), "tsv"]


def _tesseract_tsv(image: bytes, settings: OcrSettings, page_number: int, dpi: int | None = None,
                   timeout_s: float | None = None) -> str:
    """Tesseract's TSV of one image (any format Leptonica reads: PGM, PNG, TIFF); ``dpi`` and
    ``timeout_s`` default to the settings'."""
    dpi = dpi if dpi is not None else settings.dpi
    timeout_s = timeout_s if timeout_s is not None else settings.page_timeout_s
    binary = shutil.which("tesseract")
    if binary is None:
        raise ExtractionError(MISSING_TESSERACT)
    # The child's environment is this process's, with Tesseract held to one thread: pages
    # run side by side instead, which is faster on every core count.
    environment = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(tesseract_command(binary, settings, dpi), input=image,
                              capture_output=True, timeout=timeout_s, check=False, env=environment)
    except subprocess.TimeoutExpired as exc:
        raise ExtractionError(f"OCR of page {page_number} took over {timeout_s:g} s (the "
                              "limit left for the page, its document or the run)") from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ExtractionError(f"tesseract failed on page {page_number}: "
                              f"{reason[-1] if reason else f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "replace")


SIZE_SNAP = 0.25
"""An OCR line whose height is within 25 % of the page's median line height is set in body
type: Tesseract's boxes vary with the letters a line holds (brackets, bars), type sizes do
not. Measured on the scanned bashref twin: 15 % left 402 of 458 needles whole, 25 % 416
(35 % 417, but a section heading is only about 30 % larger than body text)."""


_RISING = frozenset("bdfhklt0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ!?#%&/\\|()[]{}'\"‘’“”")
_FALLING = frozenset("gjpqy,;()[]{}|_$@/\\")

LINE_BOX_LOWEST = {(True, True): 1.0, (True, False): 0.7, (False, True): 0.65, (False, False): 0.44}
"""The least share of its type's full height (ascender to descender) that a line's box
spans, by whether its letters rise above the x-height and fall below the baseline: a line of
x-height letters only (``sions.``; the dot of an i rises by as much as the font wants) may
be as short as 0.44 of its type (Computer Modern's x-height), a line with ascenders but no
descenders 0.7. Measured on the scanned bashref twin (300 dpi): 417 of 453 needles quoted
whole instead of 416."""


def _lowest_share(text: str) -> float:
    """The least share of its type's height a line of ``text`` spans (:data:`LINE_BOX_LOWEST`)."""
    return LINE_BOX_LOWEST[(any(ch in _RISING for ch in text), any(ch in _FALLING for ch in text))]


def _tsv_rows(tsv: str) -> Iterator[tuple[tuple[str, str, str], dict[str, str]]]:
    """Tesseract's TSV rows, each with the key of its line (block, paragraph, line numbers)."""
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        yield (row.get("block_num", ""), row.get("par_num", ""), row.get("line_num", "")), row


def _recognised_word(row: dict[str, str]) -> bool:
    """A word's row (level 5) holding text Tesseract recognised (a confidence of 0 or more)."""
    return (row.get("level") == "5" and bool((row.get("text") or "").strip())
            and float(row["conf"]) >= 0)


def runs_from_tsv(tsv: str, index: int, scale: float) -> tuple[tuple[TextRun, ...], float | None]:
    """Tesseract's TSV as one run per recognised line and the mean word confidence.

    A run's size is its line box's height (level 4 rows), snapped to the page's median when
    within :data:`SIZE_SNAP` of it, so body lines share one size and only real headings stand
    out; a line whose letters do not both rise and fall may be shorter by its
    :data:`LINE_BOX_LOWEST` share and still snap (``sions.`` ending a paragraph stays in it).
    Its baseline is the median bottom of its words.

    Args:
        tsv: Tesseract's ``tsv`` output (a header row, then one row per layout element; lines
            are level 4, words level 5 with a confidence of 0-100).
        index: The page's 0-based index.
        scale: Points per pixel (72 / dpi).

    Returns:
        The lines as runs, top to bottom, and the mean confidence of their words (``None``
        when Tesseract found no word).
    """
    lines: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    heights: dict[tuple[str, str, str], int] = {}
    for key, row in _tsv_rows(tsv):
        if row.get("level") == "4":
            heights[key] = int(row["height"])
        elif _recognised_word(row):
            lines.setdefault(key, []).append(row)
    if not lines:
        return (), None
    line_heights = {key: heights.get(key) or max(int(w["height"]) for w in words)
                    for key, words in lines.items()}
    median = statistics.median(line_heights.values())
    lowest = {key: _lowest_share(" ".join(w["text"] for w in words)) for key, words in lines.items()}
    runs: list[TextRun] = []
    confidences: list[float] = []
    for key, words in lines.items():
        lefts = [int(w["left"]) for w in words]
        rights = [int(w["left"]) + int(w["width"]) for w in words]
        tops = [int(w["top"]) for w in words]
        bottoms = [int(w["top"]) + int(w["height"]) for w in words]
        height = line_heights[key]
        if lowest[key] * (1 - SIZE_SNAP) * median <= height <= (1 + SIZE_SNAP) * median:
            height = median
        text = " ".join(w["text"].strip() for w in words)
        confidences.extend(float(w["conf"]) for w in words)
        runs.append(TextRun(index, text, round(min(lefts) * scale, 2), round(max(rights) * scale, 2),
                            round(min(tops) * scale, 2), round(statistics.median(bottoms) * scale, 2),
                            round(height * scale, 1)))
    runs.sort(key=lambda run: (run.baseline, run.x0))
    return tuple(runs), round(statistics.fmean(confidences), 2)


@dataclass(frozen=True)
class RenderedPage:
    """A page ready for Tesseract: a greyscale PGM, or ``None`` for a blank page."""

    index: int
    width: float
    height: float
    image: bytes | None
    scale: float


def render_page(pdf: pypdfium2.PdfDocument, index: int, settings: OcrSettings) -> RenderedPage:
    """Page ``index`` checked (:func:`check_page_size`), tried as a thumbnail (blank: no
    image), then rendered at :func:`render_scale` as greyscale PGM (no compression to pay for).

    Raises:
        ExtractionError: The page is larger than PDF allows, or there is no memory to render it.
    """
    page = pdf[index]
    try:
        width, height = (float(v) for v in page.get_size())
        check_page_size(width, height, index + 1)
        thumbnail = min(1.0, math.sqrt(THUMBNAIL_PIXELS / (width * height)))
        preview = page.render(scale=thumbnail, grayscale=True).to_pil()
        darkest, _ = preview.getextrema()
        if darkest >= BLANK_LEVEL:
            return RenderedPage(index, width, height, None, 0.0)
        scale = render_scale(width, height, settings)
        image = page.render(scale=scale, grayscale=True).to_pil()
    except MemoryError as exc:
        raise ExtractionError(f"page {index + 1}: out of memory rendering it for OCR") from exc
    finally:
        page.close()
    buffer = io.BytesIO()
    image.save(buffer, format="PPM")
    return RenderedPage(index, width, height, buffer.getvalue(), scale)


def read_rendered(rendered: RenderedPage, settings: OcrSettings, timeout_s: float) -> PageText:
    """Tesseract's reading of a rendered page (nothing for a blank one).

    Raises:
        ExtractionError: Tesseract is missing, failed, or ran over ``timeout_s``.
    """
    if rendered.image is None:
        return PageText(rendered.index, rendered.width, rendered.height, (), PageSource.OCR, None)
    dpi = max(1, round(rendered.scale * 72))
    tsv = _tesseract_tsv(rendered.image, settings, rendered.index + 1, dpi, timeout_s)
    runs, confidence = runs_from_tsv(tsv, rendered.index, 1 / rendered.scale)
    return PageText(rendered.index, rendered.width, rendered.height, runs, PageSource.OCR,
                    confidence)


@dataclass(frozen=True)
class WordBox:
    """A word Tesseract read, with its box in fractions of the page's width and height from its
    top left, and the line it is on (Tesseract's block, paragraph and line numbers)."""

    text: str
    line: tuple[str, str, str]
    left: float
    top: float
    right: float
    bottom: float


def page_words(rendered: RenderedPage, settings: OcrSettings) -> tuple[WordBox, ...]:
    """The words of a rendered page (a PDF's page, an image's frame) as a run's OCR reads them
    (the same Tesseract call), with their boxes: where a view of a scanned page marks a quote.
    None for a blank page (``()``).

    Raises:
        ExtractionError: Tesseract is missing, failed or ran over ``settings.page_timeout_s``.
    """
    if rendered.image is None:
        return ()
    tsv = _tesseract_tsv(rendered.image, settings, rendered.index + 1,
                         max(1, round(rendered.scale * 72)))
    width, height = rendered.width * rendered.scale, rendered.height * rendered.scale
    words: list[WordBox] = []
    for key, row in _tsv_rows(tsv):
        if _recognised_word(row):
            left, top = int(row["left"]), int(row["top"])
            words.append(WordBox(row["text"].strip(), key, left / width, top / height,
                                 (left + int(row["width"])) / width,
                                 (top + int(row["height"])) / height))
    return tuple(words)


def ocr_pages(pdf: pypdfium2.PdfDocument, indexes: list[int], settings: OcrSettings,
              budget: OcrBudget | None = None) -> dict[int, PageText]:
    """A PDF's pages read by OCR (:func:`ocr_rendered` of :func:`render_page`).

    Raises:
        ExtractionError: A page is too large or could not be read, or a time limit ran out
            (the reason names which).
    """
    return ocr_rendered(lambda index: render_page(pdf, index, settings), indexes, settings, budget)


def ocr_rendered(render: Callable[[int], RenderedPage], indexes: Sequence[int],
                 settings: OcrSettings, budget: OcrBudget | None = None) -> dict[int, PageText]:
    """The pages ``render`` makes read by OCR, ``workers`` at once: each page is rendered here,
    in the calling thread (PDFium and Pillow are not thread-safe), while earlier pages are in
    Tesseract. Each page may take the least of ``page_timeout_s``, what is left of
    ``document_timeout_s`` and what is left of the run's ``budget``.

    Raises:
        ExtractionError: A page is too large or could not be read, or a time limit ran out
            (the reason names which).
    """
    from concurrent.futures import Future, ThreadPoolExecutor

    workers = settings.workers or default_workers()
    started = time.monotonic()
    results: dict[int, PageText] = {}

    def timeout() -> float:
        document_left = settings.document_timeout_s - (time.monotonic() - started)
        run_left = budget.left() if budget is not None else math.inf
        if document_left <= 0:
            raise ExtractionError(f"OCR of this document took over {settings.document_timeout_s:g} "
                                  "s (the per-document limit)")
        if run_left <= 0:
            raise run_spent()
        return min(settings.page_timeout_s, document_left, run_left)

    def run_spent() -> ExtractionError:
        return ExtractionError(f"{RUN_SPENT} {budget.seconds:g} s is spent "  # type: ignore[union-attr]
                               "(the per-run limit); the document is read by the next run")

    def read(rendered: RenderedPage, limit: float) -> PageText:
        began = time.monotonic()
        try:
            return read_rendered(rendered, settings, limit)
        except ExtractionError as exc:  # cut short by what was left of the run's budget
            if budget is not None and budget.left() - (time.monotonic() - began) <= 0:
                raise run_spent() from exc
            raise
        finally:
            if budget is not None:
                budget.spend(time.monotonic() - began)

    with clock_stopped(), ThreadPoolExecutor(max_workers=workers) as pool:
        pending: list[Future[PageText]] = []
        try:
            for index in indexes:
                while len(pending) >= workers:
                    page = pending.pop(0).result()
                    results[page.index] = page
                pending.append(pool.submit(read, render(index), timeout()))
            for future in pending:
                page = future.result()
                results[page.index] = page
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return results
