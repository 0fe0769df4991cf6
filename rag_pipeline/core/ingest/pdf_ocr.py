"""Text for PDF pages that have none: the page rasterised by PDFium, read by Tesseract.

Tesseract (Debian ``tesseract-ocr`` and ``tesseract-ocr-eng``; ``.ci/setup`` installs them)
runs as a subprocess with TSV output, so every recognised word comes with its box and its
confidence (0-100). Each Tesseract line becomes one :class:`TextRun` in page points, so an
OCR page goes through the same layout (running heads, paragraphs, hyphens) as a text page.
"""

from __future__ import annotations

import csv
import io
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.pdf_pages import PageSource, PageText, TextRun

if TYPE_CHECKING:
    import pypdfium2

DEFAULT_CONFIDENCE_FLOOR = 60.0
"""A page whose mean word confidence is under this is flagged: at Tesseract's 60 roughly one
word in three or four is wrong, too many for a quote to be trusted."""

MISSING_TESSERACT = ("page(s) without a text layer need OCR, but tesseract is not installed "
                     "(apt-get install tesseract-ocr tesseract-ocr-eng)")


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

    Raises:
        ValueError: If a number is out of range.
    """

    dpi: int = 300
    language: str = "eng"
    page_timeout_s: float = 120.0
    max_pages: int = 100
    confidence_floor: float = DEFAULT_CONFIDENCE_FLOOR

    def __post_init__(self) -> None:
        if not 72 <= self.dpi <= 600:
            raise ValueError(f"dpi must be in [72, 600], got {self.dpi}")
        if self.page_timeout_s <= 0:
            raise ValueError(f"page_timeout_s must be positive, got {self.page_timeout_s}")
        if self.max_pages < 0:
            raise ValueError(f"max_pages must be >= 0, got {self.max_pages}")
        if not 0 <= self.confidence_floor <= 100:
            raise ValueError(f"confidence_floor must be in [0, 100], got {self.confidence_floor}")


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


def _tesseract_tsv(png: bytes, settings: OcrSettings, page_number: int) -> str:
    binary = shutil.which("tesseract")
    if binary is None:
        raise ExtractionError(MISSING_TESSERACT)
    try:
        done = subprocess.run([binary, "stdin", "stdout", "-l", settings.language, "--dpi",
                               str(settings.dpi), "tsv"], input=png, capture_output=True,
                              timeout=settings.page_timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ExtractionError(f"OCR of page {page_number} took over {settings.page_timeout_s:g} s "
                              "(the per-page limit)") from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ExtractionError(f"tesseract failed on page {page_number}: "
                              f"{reason[-1] if reason else f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "replace")


def runs_from_tsv(tsv: str, index: int, scale: float) -> tuple[tuple[TextRun, ...], float | None]:
    """Tesseract's TSV as one run per recognised line and the mean word confidence.

    Args:
        tsv: Tesseract's ``tsv`` output (a header row, then one row per layout element; words
            are level 5 with a confidence of 0-100).
        index: The page's 0-based index.
        scale: Points per pixel (72 / dpi).

    Returns:
        The lines as runs, top to bottom, and the mean confidence of their words (``None``
        when Tesseract found no word).
    """
    lines: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("level") != "5" or not (row.get("text") or "").strip():
            continue
        if float(row["conf"]) < 0:
            continue
        lines.setdefault((row["block_num"], row["par_num"], row["line_num"]), []).append(row)
    runs: list[TextRun] = []
    confidences: list[float] = []
    for words in lines.values():
        lefts = [int(w["left"]) for w in words]
        rights = [int(w["left"]) + int(w["width"]) for w in words]
        tops = [int(w["top"]) for w in words]
        bottoms = [int(w["top"]) + int(w["height"]) for w in words]
        height = statistics.median(int(w["height"]) for w in words)
        text = " ".join(w["text"].strip() for w in words)
        confidences.extend(float(w["conf"]) for w in words)
        runs.append(TextRun(index, text, round(min(lefts) * scale, 2), round(max(rights) * scale, 2),
                            round(min(tops) * scale, 2), round(statistics.median(bottoms) * scale, 2),
                            round(height * scale, 1)))
    runs.sort(key=lambda run: (run.baseline, run.x0))
    mean = round(statistics.fmean(confidences), 2) if confidences else None
    return tuple(runs), mean


def ocr_page(pdf: pypdfium2.PdfDocument, index: int, settings: OcrSettings) -> PageText:
    """Page ``index`` rasterised at ``settings.dpi`` and read by Tesseract.

    Raises:
        ExtractionError: Tesseract is missing, failed, or ran over the per-page time limit.
    """
    page = pdf[index]
    width, height = page.get_size()
    image = page.render(scale=settings.dpi / 72, grayscale=True).to_pil()
    page.close()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    tsv = _tesseract_tsv(buffer.getvalue(), settings, index + 1)
    runs, confidence = runs_from_tsv(tsv, index, 72 / settings.dpi)
    return PageText(index, float(width), float(height), runs, PageSource.OCR,
                    confidence if confidence is not None else 0.0)
