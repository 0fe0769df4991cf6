"""Tests for ``rag_pipeline.core.ingest.pdf_ocr``: Tesseract's TSV as runs, settings' bounds."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.pdf_ocr import OcrSettings, runs_from_tsv, tesseract_version
from rag_pipeline.core.ingest.pdf_pages import TextRun

HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"


def row(level: int, line: int, word: int, left: int, top: int, width: int, height: int, conf: float,
        text: str = "") -> str:
    return f"{level}\t1\t1\t1\t{line}\t{word}\t{left}\t{top}\t{width}\t{height}\t{conf}\t{text}"


# Two body lines 40 and 44 pixels high (within 25 % of each other: one size) and a heading line
# 80 pixels high; a level-5 row with conf -1 and empty text (Tesseract's block marker) is skipped.
TSV = "\n".join([
    HEADER,
    row(4, 1, 0, 100, 100, 600, 80, -1),
    row(5, 1, 1, 100, 100, 300, 80, 96.0, "Heading"),
    row(4, 2, 0, 100, 300, 900, 40, -1),
    row(5, 2, 1, 100, 300, 200, 36, 90.0, "Body"),
    row(5, 2, 2, 320, 304, 300, 36, 80.0, "words"),
    row(5, 2, 3, 640, 300, 10, 40, -1),
    row(4, 3, 0, 100, 400, 500, 44, -1),
    row(5, 3, 1, 100, 400, 500, 44, 70.0, "again."),
])


def test_tsv_lines_become_runs_in_points_with_the_mean_word_confidence():
    runs, confidence = runs_from_tsv(TSV, 4, 72 / 300)
    scale = 72 / 300
    assert runs == (
        TextRun(4, "Heading", round(100 * scale, 2), round(400 * scale, 2), round(100 * scale, 2),
                round(180 * scale, 2), round(80 * scale, 1)),
        # The median line height is 44 px; 40 px is within 25 % of it, so both body lines are 44.
        TextRun(4, "Body words", round(100 * scale, 2), round(620 * scale, 2), round(300 * scale, 2),
                round(338 * scale, 2), round(44 * scale, 1)),
        TextRun(4, "again.", round(100 * scale, 2), round(600 * scale, 2), round(400 * scale, 2),
                round(444 * scale, 2), round(44 * scale, 1)),
    )
    assert confidence == round((96 + 90 + 80 + 70) / 4, 2)


@pytest.mark.parametrize(("text", "share"), [("larger expres-", 1.0), ("Shell", 0.7),
                                             ("queue", 0.65), ("sions.", 0.44)])
def test_a_line_box_spans_at_least_the_share_of_its_type_its_letters_reach(text: str, share: float):
    from rag_pipeline.core.ingest.pdf_ocr import _lowest_share

    # "larger" rises (l) and falls (g); "Shell" only rises, "queue" only falls (q); "sions."
    # does neither (the dot of an i is not counted: fonts put it at any height).
    assert _lowest_share(text) == share


def test_a_short_last_line_without_descenders_keeps_the_body_size():
    # Measured on the scanned Bash manual at 300 dpi: "sions." (30 px) ending a paragraph of
    # 41 px lines was more than 25 % smaller, so it became a paragraph of its own and
    # "expres-" "sions." was never joined. A line of x-height letters keeps the body size down
    # to 0.44 x 0.75 of the median (13.5 px here); under that it is not body type.
    tsv = "\n".join([
        HEADER,
        row(4, 1, 0, 100, 100, 900, 41, -1),
        row(5, 1, 1, 100, 100, 400, 41, 96.0, "larger"),
        row(5, 1, 2, 520, 100, 300, 30, 92.0, "expres-"),
        row(4, 2, 0, 100, 160, 200, 30, -1),
        row(5, 2, 1, 100, 160, 200, 30, 96.0, "sions."),
        row(4, 3, 0, 100, 220, 900, 41, -1),
        row(5, 3, 1, 100, 220, 400, 41, 96.0, "Body"),
        row(5, 3, 2, 520, 220, 300, 41, 96.0, "type,"),
        row(4, 5, 0, 100, 340, 900, 41, -1),
        row(5, 5, 1, 100, 340, 400, 41, 96.0, "here."),
        row(4, 4, 0, 100, 280, 200, 13, -1),
        row(5, 4, 1, 100, 280, 200, 13, 96.0, "ms"),
    ])
    runs, _ = runs_from_tsv(tsv, 0, 72 / 300)
    body = round(41 * 72 / 300, 1)
    assert [(run.text, run.size) for run in runs] == [("larger expres-", body), ("sions.", body),
                                                      ("Body type,", body),
                                                      ("ms", round(13 * 72 / 300, 1)),
                                                      ("here.", body)]


def test_a_page_without_words_has_no_runs_and_no_confidence():
    assert runs_from_tsv(HEADER + "\n" + row(4, 1, 0, 0, 0, 10, 10, -1), 0, 0.24) == ((), None)


@pytest.mark.parametrize(("field", "value"), [("dpi", 50), ("page_timeout_s", 0), ("max_pages", -1),
                                              ("confidence_floor", 101), ("page_segmentation", 7)])
def test_settings_out_of_range_are_refused(field: str, value: float):
    with pytest.raises(ValueError, match=f"^{field} must be"):
        OcrSettings(**{field: value})


def test_tesseract_runs_the_lstm_engine_with_the_settings_segmentation_language_and_dpi():
    from rag_pipeline.core.ingest.pdf_ocr import tesseract_command

    settings = OcrSettings(language="eng+deu", page_segmentation=4)
    assert tesseract_command("/usr/bin/tesseract", settings, 200) == [
        "/usr/bin/tesseract", "stdin", "stdout", "--oem", "1", "--psm", "4", "-l", "eng+deu",
        "--dpi", "200", "tsv"]


# --- bounds: page size, pixels, blank pages, time per document and per run ------------------


def test_a_page_larger_than_pdf_allows_fails_its_document_unrendered():
    from rag_pipeline.core.ingest.pdf_extract import read_pdf
    from rag_pipeline_tests.core.ingest.pdf_fixtures import empty_pages_pdf

    hostile = empty_pages_pdf(1, 100_000)
    assert len(hostile) == 335
    with pytest.raises(ExtractionError, match=r"^page 1 declares 100,000 x 100,000 points, over "
                                              r"the 14,400 points a side that PDF allows"):
        read_pdf(hostile, "huge")


def test_blank_pages_are_never_given_to_tesseract(monkeypatch):
    from rag_pipeline.core.ingest import pdf_ocr
    from rag_pipeline.core.ingest.pdf_extract import read_pdf
    from rag_pipeline_tests.core.ingest.pdf_fixtures import empty_pages_pdf

    def no_tesseract(*args, **kwargs):
        raise AssertionError("a blank page went to tesseract")

    monkeypatch.setattr(pdf_ocr, "_tesseract_tsv", no_tesseract)
    monkeypatch.setattr("rag_pipeline.core.ingest.pdf_extract.tesseract_version", lambda: "5")
    with pytest.raises(ExtractionError, match=r"^no text in 4 page\(s\), not even by OCR$"):
        read_pdf(empty_pages_pdf(4, 7_800), "blank")


def test_a_page_too_large_for_the_pixel_limit_is_rendered_at_the_resolution_that_fits():
    from rag_pipeline.core.ingest.pdf_ocr import render_scale

    settings = OcrSettings(dpi=300, max_page_pixels=2_000_000)
    assert render_scale(612, 792, OcrSettings()) == 300 / 72  # a letter page: 8.4 M pixels
    scale = render_scale(612, 792, settings)
    assert round(612 * scale * 792 * scale) == 2_000_000


def _counting_clock(monkeypatch, pages_seen: list[int], step: float):
    """A fake clock for pdf_ocr that moves ``step`` seconds each time a page is read."""
    from rag_pipeline.core.ingest import pdf_ocr
    from rag_pipeline.core.ingest.pdf_pages import PageSource, PageText

    clock = [0.0]
    monkeypatch.setattr(pdf_ocr.time, "monotonic", lambda: clock[0])

    def read(rendered, settings, timeout_s):
        pages_seen.append(rendered.index)
        clock[0] += step
        return PageText(rendered.index, rendered.width, rendered.height, (), PageSource.OCR, None)

    monkeypatch.setattr(pdf_ocr, "read_rendered", read)


def _scan(pages: int) -> bytes:
    from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf, scanned_pdf

    return scanned_pdf(plain_pdf([[f"Page {n} has words."] for n in range(1, pages + 1)]))


def test_ocr_time_is_bounded_per_document(monkeypatch):
    import pypdfium2

    from rag_pipeline.core.ingest.pdf_ocr import ocr_pages

    seen: list[int] = []
    _counting_clock(monkeypatch, seen, step=10.0)
    pdf = pypdfium2.PdfDocument(_scan(3))
    with pytest.raises(ExtractionError, match=r"^OCR of this document took over 15 s \(the "
                                              r"per-document limit\)$"):
        ocr_pages(pdf, [0, 1, 2], OcrSettings(document_timeout_s=15, workers=1))
    assert seen == [0, 1]  # the third page was never started


def test_ocr_time_is_bounded_per_run_across_documents(monkeypatch):
    import pypdfium2

    from rag_pipeline.core.ingest.pdf_ocr import OcrBudget, ocr_pages

    seen: list[int] = []
    _counting_clock(monkeypatch, seen, step=10.0)
    budget = OcrBudget(25)
    budget.spend(20)  # an earlier document of the run spent 20 s
    pdf = pypdfium2.PdfDocument(_scan(2))
    with pytest.raises(ExtractionError, match=r"^the run's OCR time of 25 s is spent"):
        ocr_pages(pdf, [0, 1], OcrSettings(workers=1), budget)
    assert seen == [0]


def test_a_new_run_starts_the_pdf_format_with_a_fresh_budget():
    from rag_pipeline.core.ingest.formats.pdf import PdfFormat

    pdf = PdfFormat(OcrSettings(run_timeout_s=60))
    pdf.budget.spend(60)
    assert pdf.budget.left() == 0
    pdf.start_run()
    assert pdf.budget.left() == 60


@pytest.mark.slow
@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed (.ci/setup installs it)")
def test_a_word_broken_before_a_short_last_line_is_joined_on_a_real_scan():
    from rag_pipeline.core.ingest.pdf_extract import read_pdf
    from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf, scanned_pdf

    # The last line, "sions.", has no descender: its box is about 0.78 of a full line's.
    scan = scanned_pdf(plain_pdf([["A macro processor is a program where text and symbols",
                                   "are copied from input to output, and where names are",
                                   "expanded to create larger and more elaborate expres-",
                                   "sions."]]), dpi=300)
    reading = read_pdf(scan, "scan")
    assert reading.layout.canonical_text == (
        "A macro processor is a program where text and symbols are copied from input to output, "
        "and where names are expanded to create larger and more elaborate expressions.\n")
