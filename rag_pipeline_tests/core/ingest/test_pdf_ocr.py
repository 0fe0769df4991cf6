"""Tests for ``rag_pipeline.core.ingest.pdf_ocr``: Tesseract's TSV as runs, settings' bounds."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.pdf_ocr import OcrSettings, runs_from_tsv
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


def test_a_page_without_words_has_no_runs_and_no_confidence():
    assert runs_from_tsv(HEADER + "\n" + row(4, 1, 0, 0, 0, 10, 10, -1), 0, 0.24) == ((), None)


@pytest.mark.parametrize(("field", "value"), [("dpi", 50), ("page_timeout_s", 0), ("max_pages", -1),
                                              ("confidence_floor", 101)])
def test_settings_out_of_range_are_refused(field: str, value: float):
    with pytest.raises(ValueError, match=f"^{field} must be"):
        OcrSettings(**{field: value})
