"""Images: OCR'd and laid out as scanned PDF pages, a frame a page with its confidence; an
image too large to decode fails at once, before any pixel is decoded."""

from __future__ import annotations

import io
import struct
import time
import zlib
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError
from rag_pipeline.core.ingest.formats.image import MAX_PIXELS, ImageFormat
from rag_pipeline.core.ingest.pdf_ocr import OcrSettings, tesseract_version

IMAGE = ImageFormat()
needs_tesseract = pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed")


def whiteboard(lines: list[str], size: tuple[int, int] = (1400, 400)) -> Image.Image:
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=48)
    for number, line in enumerate(lines):
        draw.text((60, 60 + 100 * number), line, fill=0, font=font)
    return image


def encoded(image: Image.Image, kind: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=kind, **options)
    return buffer.getvalue()


def huge_png(width: int, height: int) -> bytes:
    """A valid 1-bit PNG of ``width`` x ``height`` white pixels, compressed row by row."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    compressor = zlib.compressobj(9)
    row = b"\x00" + b"\xff" * ((width + 7) // 8)
    pixels = b"".join(compressor.compress(row * 1000) for _ in range(height // 1000))
    pixels += compressor.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0))
            + chunk(b"IDAT", pixels) + chunk(b"IEND", b""))


@needs_tesseract
def test_a_photographed_whiteboard_is_read_with_its_confidence():
    data = encoded(whiteboard(["Whiteboard: ship the gauges", "by Friday, then review costs."]),
                   "PNG", dpi=(300, 300))
    extracted = IMAGE.extract(data, "board")
    assert extracted.canonical_text == "Whiteboard: ship the gauges by Friday, then review costs.\n"
    assert (extracted.title, extracted.anchors) == ("board", (Anchor(0, 58, "page=1"),))
    facts = dict(extracted.notes)
    assert (facts["pages"], facts["ocr_pages"]) == ("1", "1")
    confidence = float(facts["ocr_mean_confidence"])
    assert facts["ocr_page_confidence"] == f"1={confidence:.1f}" and confidence > 80
    # The frame as a typed page record (its confidence unrounded; the note rounds it).
    assert [(p.page, p.source, round(p.ocr_confidence, 1), p.chars, p.flagged)
            for p in extracted.pages] == [(1, "ocr", confidence, 58, False)]
    assert IMAGE.fragment(extracted.anchors, 10, 20) == "#page=1"


@needs_tesseract
def test_each_tiff_frame_is_a_page_and_jpeg_reads_too():
    first, second = whiteboard(["First page of notes"]), whiteboard(["Second page of notes"])
    tiff = encoded(first, "TIFF", save_all=True, append_images=[second])
    extracted = IMAGE.extract(tiff, "scan")
    text = extracted.canonical_text
    assert [(a.locator, text[a.start:a.end].strip()) for a in extracted.anchors] == [
        ("page=1", "First page of notes"), ("page=2", "Second page of notes")]
    assert IMAGE.fragment(extracted.anchors, text.index("Second"), len(text)) == "#page=2"
    jpeg = IMAGE.extract(encoded(first, "JPEG", quality=90), "photo")
    assert jpeg.canonical_text == "First page of notes\n"


def test_a_20000_by_20000_image_fails_at_once_without_decoding(tmp_path: Path):
    data = huge_png(20_000, 20_000)  # Planted: 400 million pixels in about 50 KB
    (tmp_path / "poster.png").write_bytes(data)
    (tmp_path / "note.md").write_bytes(b"# Note\n\nStill read.\n")
    started = time.perf_counter()
    records = extract_corpus(tmp_path).records
    assert time.perf_counter() - started < 5  # the header is read, no pixel is
    assert [(r.document_id, r.status, r.error) for r in records] == [
        ("note.md", "ok", None),
        ("poster.png", "failed", f"over the limit of {MAX_PIXELS} pixels per image, never decoded "
                                 "(Image size (400000000 pixels) exceeds limit of 178956970 pixels, "
                                 "could be decompression bomb DOS attack.)"),
    ]


def test_an_image_over_the_limit_but_under_pillows_fails_on_its_size():
    data = huge_png(10_000, 8_000)  # Planted: 80 million pixels, under Pillow's own refusal
    with pytest.raises(ExtractionError, match=f"^10000 x 8000 pixels: over the limit of {MAX_PIXELS} "
                                              "pixels per image, never decoded$"):
        IMAGE.extract(data, "wide")


def web_diagram() -> bytes:
    """A flowchart exported for a web page: 12-pixel labels in rounded boxes, no resolution
    declared (Debian Policy's package-state diagrams are drawn so)."""
    image = Image.new("L", (520, 300), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=12)
    draw.text((120, 10), "Installation of foo", fill=0, font=font)
    for (x, y), label in (((20, 40), "preinst install"), ((260, 40), "postrm abort-install"),
                          ((20, 160), "postinst configure"), ((260, 220), "Exit with error message")):
        draw.rounded_rectangle((x, y, x + 220, y + 34), radius=8, outline=0, width=1)
        draw.text((x + 10, y + 9), label, fill=0, font=font)
    return encoded(image, "PNG")


@needs_tesseract
def test_a_screen_image_with_small_labels_is_read_at_twice_its_size():
    # Planted: at its own size Tesseract read "preinst install" as "{erent intt )".
    extracted = IMAGE.extract(web_diagram(), "install")
    assert extracted.canonical_text == ("Installation of foo\n\n[ preinst install ) [ postrm "
                                        "abort-install\n\n[ postinst configure ) [ Exit with "
                                        "error message\n")
    assert extracted.anchors == (Anchor(0, 114, "page=1"),)


@needs_tesseract
def test_a_screen_image_with_large_letters_keeps_its_own_size_reading():
    # Planted: 48-pixel letters and no declared resolution, a screen image read at both sizes.
    data = encoded(whiteboard(["Whiteboard: ship the gauges", "by Friday, then review costs."]), "PNG")
    extracted = IMAGE.extract(data, "board")
    assert extracted.canonical_text == "Whiteboard: ship the gauges by Friday, then review costs.\n"


def test_bytes_that_are_no_image_fail_with_the_same_reason_each_run():
    # A mail's "image/png" attachment holding the words "PNG here": Pillow's message named the
    # buffer's memory address, so the reason changed on every run.
    with pytest.raises(ExtractionError) as raised:
        IMAGE.extract(b"PNG here", "attachment-1")
    assert str(raised.value) == ("unreadable image: not a picture format Pillow knows (it starts "
                                 "b'PNG here')")


def _ocr_clock(monkeypatch, seen: list[str], step: float) -> None:
    """A fake OCR engine on a fake clock: each page read costs ``step`` seconds, or the page's
    time limit when that is less (then it fails as Tesseract killed at its limit does)."""
    from rag_pipeline.core.ingest import pdf_ocr
    from rag_pipeline.core.ingest.pdf_pages import PageSource, PageText, TextRun

    clock = [0.0]
    monkeypatch.setattr(pdf_ocr.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr("rag_pipeline.core.ingest.formats.image.tesseract_version", lambda: "5")
    monkeypatch.setattr("rag_pipeline.core.ingest.pdf_extract.tesseract_version", lambda: "5")

    def read(rendered, settings, timeout_s):
        seen.append(f"{rendered.index}:{timeout_s:g}")
        if timeout_s < step:
            clock[0] += timeout_s
            raise ExtractionError(f"OCR of page {rendered.index + 1} took over {timeout_s:g} s")
        clock[0] += step
        run = TextRun(rendered.index, "Read by OCR.", 10, 80, 10, 20, 10)
        return PageText(rendered.index, rendered.width, rendered.height, (run,), PageSource.OCR, 90.0)

    monkeypatch.setattr(pdf_ocr, "read_rendered", read)


def test_a_folder_of_images_and_scans_shares_one_ocr_budget_per_run(monkeypatch, tmp_path: Path):
    from rag_pipeline.core.ingest.formats import format_named
    from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf, scanned_pdf

    seen: list[str] = []
    _ocr_clock(monkeypatch, seen, step=10.0)
    budget = format_named("image").budget
    assert format_named("pdf").budget is budget  # one budget for every format that OCRs
    monkeypatch.setattr(budget, "seconds", 25.0)  # Planted: a tiny per-run budget
    (tmp_path / "a-scan.pdf").write_bytes(scanned_pdf(plain_pdf([["A scanned page."]])))
    board = encoded(whiteboard(["Whiteboard"]), "PNG", dpi=(300, 300))
    for number in range(1, 5):
        (tmp_path / f"board-{number}.png").write_bytes(board)
    spent = ("failed", "the run's OCR time of 25 s is spent (the per-run limit); the document "
                       "is read by the next run")
    records = extract_corpus(tmp_path).records
    assert [(r.document_id, r.status, r.error) for r in records] == [
        ("a-scan.pdf", "ok", None),
        ("board-1.png", "ok", None),
        ("board-2.png", *spent),  # its page was cut at the 5 s the run had left
        ("board-3.png", *spent),
        ("board-4.png", *spent),
    ]
    assert seen == ["0:25", "0:15", "0:5"]  # nothing started once the budget was spent
    assert budget.spent == 25.0
    # The next run reads on where this one stopped; the documents read stay read.
    seen.clear()
    again = extract_corpus(tmp_path, records).records
    assert [(r.document_id, r.status, r.error) for r in again] == [
        ("a-scan.pdf", "ok", None), ("board-1.png", "ok", None), ("board-2.png", "ok", None),
        ("board-3.png", "ok", None), ("board-4.png", *spent)]
    assert seen == ["0:25", "0:15", "0:5"] and budget.spent == 25.0
    budget.restart()


def test_an_images_frames_are_bounded_by_the_per_document_ocr_time(monkeypatch):
    seen: list[str] = []
    _ocr_clock(monkeypatch, seen, step=10.0)
    frames = [whiteboard([f"Page {n}"]) for n in range(1, 4)]
    tiff = encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    reader = ImageFormat(OcrSettings(document_timeout_s=20, workers=1))
    with pytest.raises(ExtractionError, match=r"^OCR of this document took over 20 s \(the "
                                              r"per-document limit\)$"):
        reader.extract(tiff, "scan")
    assert seen == ["0:20", "1:10"]  # the third frame was never started
