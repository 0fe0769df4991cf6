"""Tests for ``rag_pipeline.core.ingest.formats.pdf``: page anchors become ``#page=N``; a made PDF
becomes the exact canonical text, sections, anchors and notes; a scanned page is OCR'd."""

from __future__ import annotations

import pytest

from rag_pipeline.core.index.builders import document_pages_table, document_records, documents_table
from rag_pipeline.core.ingest import Anchor, ExtractionError, format_named, pdf_extract
from rag_pipeline.core.ingest.extracted import DocumentPage
from rag_pipeline.core.ingest.formats.pdf import PdfFormat, page_of
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.pdf_ocr import OcrSettings, tesseract_version
from rag_pipeline.core.ingest.records import DocumentRecord
from rag_pipeline_tests.core.ingest.long_tables import chunked_under_header
from rag_pipeline_tests.core.ingest.pdf_fixtures import manual_pdf, plain_pdf, scanned_pdf

# What manual_pdf() reads as: running heads, page numbers and the contents page gone,
# "fac-tor" joined, "non-numeric" kept, the paragraph over the page break whole, the
# footnote after it, the table as rows of cells, the two columns one after the other.
MANUAL_TEXT = (
    "1 Introduction\n\n"
    "The layout reads a page the way a reader does. It joins a factor split at a line end and "
    "keeps a non-numeric hyphen where the text writes non-numeric elsewhere.\n\n"
    "This last paragraph of the page is not finished at the foot of the page and goes on at "
    "the top of the next one.\n\n"
    "1 A footnote in small type.\n\n"
    "2 Usage\n\n2.1 Tables\n\n"
    "Name | Size | Kind\nalpha | 12 | letter\nbeta | 7 | letter\n\n"
    "2.2 Columns\n\n"
    "The left column comes first and is read to its end before the right column begins.\n\n"
    "The right column is read after the left one, from its top to its foot.\n"
)

# Page 1 is [0, 33), page 2 [35, 78), page 3 from 80 on; the gaps are the blank lines between.
PAGES = (Anchor(0, 33, "page=1"), Anchor(35, 78, "page=2"), Anchor(80, 120, "page=3"))


@pytest.mark.parametrize(("offset", "page"), [
    (0, 1), (34, 1), (35, 2), (36, 2), (79, 2), (80, 3), (10_000, 3)])
def test_page_of(offset: int, page: int):
    assert page_of(PAGES, offset) == page


def test_page_of_without_page_anchors_is_page_1():
    assert page_of((), 42) == 1


def test_pdf_fragment_names_the_page_of_the_start():
    pdf = format_named("pdf")
    assert pdf.fragment(PAGES, 0, 20) == "#page=1"
    assert pdf.fragment(PAGES, 35, 60) == "#page=2"
    # A chunk running from page 2 into page 3 points at the page it starts on.
    assert pdf.fragment(PAGES, 70, 95) == "#page=2"
    assert pdf.fragment(PAGES, 80, 95) == "#page=3"


def test_a_pdf_without_page_anchors_falls_back_to_characters():
    assert format_named("pdf").fragment((), 3, 9) == "#char=3,9"


def test_pdf_chunks_may_run_over_a_page_break():
    # Paragraphs are joined across page breaks, so chunks are not cut at page starts; a chunk
    # over a break cites the page it starts on (above).
    assert format_named("pdf").cut_at_anchors is False


def test_a_manual_becomes_its_canonical_text_sections_anchors_and_notes():
    extracted = format_named("pdf").extract(manual_pdf(), "manual")
    assert extracted.title == "Layout Test Manual"
    assert extracted.canonical_text == MANUAL_TEXT
    text = extracted.canonical_text
    # Each outline entry labels the text after its heading; the heading is in no section. The
    # footnote is a section of its own, labelled as the footnote of its section.
    assert [(s.title, s.level, text[s.start:s.end].strip()[:24]) for s in extracted.sections] == [
        ("Introduction", 1, "The layout reads a page "),
        ("Introduction (footnote)", 1, "1 A footnote in small ty"),
        ("Tables", 2, "Name | Size | Kind\nalpha"),
        ("Columns", 2, "The left column comes fi"),
    ]
    assert text[extracted.sections[0].start - 14:extracted.sections[0].start] == "1 Introduction"
    # Page 1 (contents) is dropped; the footnote of page 2 comes after the paragraph that
    # runs on to page 3, so page 2 has a second span.
    assert extracted.anchors == (Anchor(0, 262, "page=2"), Anchor(262, 291, "page=3"),
                                 Anchor(291, 320, "page=2"), Anchor(320, 399, "page=3"),
                                 Anchor(399, 567, "page=4"))
    assert text[262:291] == "at the top of the next one.\n\n"
    assert dict(extracted.notes) == {"pages": "4", "dropped_lines": "8", "toc_pages": "1",
                                     "toc_page_numbers": "1", "footnotes": "1", "sections_from": "outline"}


def test_the_chunk_over_the_page_break_cites_the_page_it_starts_on():
    pdf = format_named("pdf")
    extracted = pdf.extract(manual_pdf(), "manual")
    start = extracted.canonical_text.index("This last paragraph")
    end = extracted.canonical_text.index("next one.") + len("next one.")
    assert pdf.fragment(extracted.anchors, start, end) == "#page=2"


@pytest.mark.parametrize(("start", "end", "span"), [
    (0, 20, (1, 1)), (70, 78, (2, 2)),
    # Ending in the blank lines between pages 2 and 3 does not reach page 3.
    (70, 79, (2, 2)), (70, 81, (2, 3)), (0, 120, (1, 3)),
    # Empty span: the page of its start.
    (80, 80, (3, 3))])
def test_page_span_is_the_page_of_the_start_and_the_last_page_reached(start: int, end: int,
                                                                      span: tuple[int, int]):
    assert format_named("pdf").page_span(PAGES, start, end) == span


def test_a_format_without_pages_has_no_page_span():
    assert format_named("markdown").page_span((Anchor(0, 3, "page=1"),), 0, 3) is None
    assert format_named("pdf").page_span((), 0, 3) is None


def test_the_chunk_over_the_page_break_records_its_last_page():
    pdf = format_named("pdf")
    extracted = pdf.extract(manual_pdf(), "manual")
    text = extracted.canonical_text
    start = text.index("This last paragraph")
    end = text.index("next one.") + len("next one.")
    assert pdf.page_span(extracted.anchors, start, end) == (2, 3)
    # With the page-2 footnote that comes after it, the last page is still 3, not the last
    # anchor's page 2.
    assert pdf.page_span(extracted.anchors, start, text.index("small type.") + 11) == (2, 3)
    assert pdf.page_span(extracted.anchors, text.index("Name | Size"), text.index("beta")) == (3, 3)


def test_without_an_outline_sections_come_from_type_size():
    extracted = format_named("pdf").extract(manual_pdf(outline=False), "manual")
    assert extracted.canonical_text == MANUAL_TEXT
    # 16-point headings are level 1, 13-point ones level 2; "2 Usage" has no body of its own.
    assert [(s.title, s.level) for s in extracted.sections] == [
        ("1 Introduction", 1), ("1 Introduction (footnote)", 1), ("2.1 Tables", 2),
        ("2.2 Columns", 2)]
    assert dict(extracted.notes)["sections_from"] == "font"


def test_the_extracted_pdf_carries_its_typed_pages():
    extracted = format_named("pdf").extract(manual_pdf(), "manual")
    # Page 1 is the dropped contents page; page 2 has two spans (262 + 29 characters).
    assert extracted.pages == (
        DocumentPage(1, "text", None, 0), DocumentPage(2, "text", None, 291),
        DocumentPage(3, "text", None, 108), DocumentPage(4, "text", None, 168))
    # The same rows read_pdf made while reading.
    assert extracted.pages == pdf_extract.read_pdf(manual_pdf(), "m").pages


def test_ocr_pages_and_flags_survive_the_documents_table_as_records():
    # Page 4 was OCR'd but Tesseract found no word on it (a figure): no confidence.
    pages = (DocumentPage(1, "text", None, 10), DocumentPage(2, "ocr", 91.5, 15),
             DocumentPage(3, "ocr", 48.5, 2, flagged=True), DocumentPage(4, "ocr", None, 0))
    record = DocumentRecord("scan.pdf", "scan.pdf", "Scan", "x" * 27, "0" * 64, "pdf", "pdf",
                            "5", "ok", None, anchors=(Anchor(0, 10, "page=1"),), pages=pages)
    (again,) = document_records(documents_table([record]))
    assert again.pages == pages
    assert document_pages_table([again]).to_pylist() == [
        {"document_id": "scan.pdf", "page": p.page, "source": p.source,
         "ocr_confidence": p.ocr_confidence, "chars": p.chars, "flagged": p.flagged}
        for p in pages]


def test_a_format_without_pages_has_none():
    assert format_named("markdown").extract(b"# T\n\nText.\n", "t").pages == ()


def test_the_stamp_names_pdfium_and_tesseract():
    stamp = format_named("pdf").extractor()
    assert stamp.name == "pdf-pdfium+tesseract"
    tesseract = tesseract_version() or "absent"
    assert stamp.version == f"19+pypdfium2-{library_version('pypdfium2')}+tesseract-{tesseract}"


def test_without_tesseract_a_scanned_pdf_fails_saying_so(monkeypatch):
    monkeypatch.setattr(pdf_extract, "tesseract_version", lambda: None)
    with pytest.raises(ExtractionError) as raised:
        format_named("pdf").extract(scanned_pdf(plain_pdf([["Some words."]])), "scan")
    assert str(raised.value) == ("1 of 1 page(s) without a text layer need OCR, but tesseract is not "
                                 "installed (apt-get install tesseract-ocr tesseract-ocr-eng)")


def test_more_pages_without_text_than_the_ocr_limit_fail_with_the_limit():
    scan = scanned_pdf(plain_pdf([["One."], ["Two."]]))
    with pytest.raises(ExtractionError, match="^2 pages without a text layer: over the OCR limit of 1 "):
        PdfFormat(OcrSettings(max_pages=1)).extract(scan, "scan")


@pytest.mark.slow
@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed (.ci/setup installs it)")
def test_a_scanned_page_is_read_by_ocr_with_its_confidence():
    lines = ["Scanned pages become searchable text.", "Tesseract reads every word on them."]
    extracted = format_named("pdf").extract(scanned_pdf(plain_pdf([lines])), "scan")
    assert extracted.canonical_text == ("Scanned pages become searchable text. "
                                        "Tesseract reads every word on them.\n")
    assert extracted.anchors == (Anchor(0, 74, "page=1"),)
    notes = dict(extracted.notes)
    assert notes["ocr_pages"] == "1"
    assert float(notes["ocr_mean_confidence"]) >= 90
    assert notes["ocr_page_confidence"] == f"1={notes['ocr_mean_confidence']}"
    assert "low_confidence_pages" not in notes


@pytest.mark.slow
@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed (.ci/setup installs it)")
def test_pages_under_the_confidence_floor_are_flagged():
    scan = scanned_pdf(plain_pdf([["Scanned pages become searchable text."]]))
    notes = dict(PdfFormat(OcrSettings(confidence_floor=100)).extract(scan, "scan").notes)
    # No page reaches a mean confidence of 100: the floor flags it.
    assert (notes["low_confidence_pages"], notes["ocr_confidence_floor"]) == ("1", "100")


@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed (.ci/setup installs it)")
def test_many_pages_no_layer_and_no_ocr_word_hold_are_a_caveat_a_few_blank_ones_not():
    """Found by a new user: a Debian manual whose 42 of 64 pages draw only rules (no text layer,
    no word for OCR) was ``ok`` with no caveat, 2,110 characters for 64 pages."""
    from rag_pipeline.core.ingest.extracted import left_out

    broken = PdfFormat().extract(plain_pdf([["The only page with words."], [], [], []]), "broken")
    assert dict(broken.notes)["ocr_page_confidence"] == "2=- 3=- 4=-"
    assert left_out(broken.notes) == ["page(s) 2,3,4 hold no text layer and no word OCR can read "
                                      "(drawings only, or a PDF damaged when it was made)"]
    book = PdfFormat().extract(plain_pdf([[f"Page {n} has words."] for n in range(1, 11)] + [[]]),
                               "book")
    assert dict(book.notes)["ocr_page_confidence"] == "11=-"
    assert left_out(book.notes) == []  # one blank page of eleven


def test_a_table_over_two_pages_is_one_table_and_every_chunk_names_its_headers():
    from rag_pipeline_tests.core.ingest.pdf_fixtures import long_table_pdf

    extracted = PdfFormat().extract(long_table_pdf(), "shifts")
    canonical = extracted.canonical_text
    (table,) = extracted.tables
    assert table.header == "Site | Lead | Duration"
    assert len(table.rows) == 60
    assert [a.locator for a in extracted.anchors] == ["page=1", "page=2"]
    continued = next(i for i, row in enumerate(table.rows) if row >= extracted.anchors[1].start)
    # The header fpdf2 repeats on page 2 opens the first row there; no row is lost or added.
    assert canonical[table.rows[continued]:].startswith(
        f"Site | Lead | Duration\nDelta flats {continued + 1} | Tomas Ruiz")
    chunks = chunked_under_header("shifts.pdf", extracted)
    assert not any("Site | Lead | Duration\nSite | Lead | Duration" in c.text for c in chunks)


def test_a_header_label_that_fills_its_column_is_still_the_tables_header_on_both_pages():
    from rag_pipeline_tests.core.ingest.pdf_fixtures import long_table_pdf

    # Planted: the middle label fills its 46 mm column, so it ends 7 points before the next
    # label starts: one run "Lead engineer (on duty) Duration" on both pages, which was a bold
    # heading over a table headed by its first data row.
    extracted = PdfFormat().extract(long_table_pdf(
        headers=("Site", "Lead engineer (on duty)", "Duration"), col_widths=(60, 46, 80)), "shifts")
    canonical = extracted.canonical_text
    (table,) = extracted.tables
    assert table.header == "Site | Lead engineer (on duty) | Duration"
    assert len(table.rows) == 60
    assert [s.title for s in extracted.sections] == ["Shifts"]
    assert canonical.count("Site | Lead engineer (on duty) | Duration\n") == 2
    assert canonical[table.rows[0]:].startswith("Delta flats 1 | Tomas Ruiz | 1 hours\n")


def test_a_file_named_pdf_that_is_no_pdf_says_so():
    with pytest.raises(ExtractionError) as raised:
        PdfFormat().extract(b"Just some notes, saved as .pdf by mistake.\n", "notes")
    assert str(raised.value) == ("not a PDF: no %PDF- header in its first 1024 bytes (it begins "
                                 "b'Just som'); rename it to its real type")



@pytest.mark.parametrize(("widths", "header_aligns"), [
    # Columns a little closer than 1.5 em: each row's runs broke where its glyphs left a gap.
    ((15.5, 24, 17, 16, 12.5), "LLRRR"),
    # Wide columns, the labels left-aligned over right-aligned amounts: no label lines up.
    ((25, 40, 35, 35, 30), "LLLLL"),
])
def test_a_report_of_right_aligned_amounts_is_one_table_under_its_header(
        widths: tuple[float, ...], header_aligns: str):
    """Found by a finance team's trial: three aging reports of four lost their header (read as
    a section title, "Invoice Customer Current Over 90 Total") and their rows ran together
    into paragraphs (``SI-1000 Alder Foods 0.00 0.00 0.00 SI-1001 ...``)."""
    from rag_pipeline_tests.core.ingest.pdf_fixtures import AGING_HEADERS, aging_pdf, aging_rows

    extracted = PdfFormat().extract(aging_pdf(widths, header_aligns), "aging")
    (table,) = extracted.tables
    text = extracted.canonical_text
    assert (table.header, len(table.rows)) == (" | ".join(AGING_HEADERS), 25)
    ends = [*table.rows[1:], table.end]
    assert [text[start:end].strip() for start, end in zip(table.rows, ends, strict=True)] == [
        " | ".join(row) for row in aging_rows()]
    assert [section.title for section in extracted.sections] == ["Aging"]
