"""Office zip limits: a bomb fails on the zip's directory before any XML is expanded."""

from __future__ import annotations

import io
import zipfile

import pytest

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.office_zip import MIB, ContentBudget, OfficeLimits, check_zip
from rag_pipeline_tests.core.ingest.archives import zipped


def test_a_member_expanding_past_the_ratio_fails_naming_it():
    bomb = zipped({"word/document.xml": b"a" * (4 * MIB)})  # 4 MiB of one byte: ~1000 times
    with pytest.raises(ExtractionError, match=r"zip bomb guard: word/document.xml expands "
                                              r"[\d,]+ times .* over the limit of 200"):
        check_zip(bomb, "DOCX", OfficeLimits())


def test_a_small_member_is_never_judged_by_its_ratio():
    check_zip(zipped({"styles.xml": b"a" * (MIB // 2)}), "DOCX", OfficeLimits())


def test_the_expanded_total_is_bounded():
    parts = zipped({f"part{i}.xml": bytes(range(256)) * 400 for i in range(3)})  # 3 x 102,400
    with pytest.raises(ExtractionError, match="the XLSX expands to 307,200 bytes, over the limit "
                                              "of 300,000"):
        check_zip(parts, "XLSX", OfficeLimits(max_expanded_bytes=300_000))


def test_members_are_counted():
    with pytest.raises(ExtractionError, match="3 members in the DOCX, over the limit of 2"):
        check_zip(zipped({"a": b"", "b": b"", "c": b""}), "DOCX", OfficeLimits(max_members=2))


def test_not_a_zip_is_unreadable():
    with pytest.raises(ExtractionError, match="unreadable DOCX: BadZipFile"):
        check_zip(b"not a zip", "DOCX", OfficeLimits())


def test_the_budget_stops_at_the_first_limit_passed():
    budget = ContentBudget("XLSX", OfficeLimits(max_rows=2, max_cells=10))
    budget.add(rows=2, cells=4)
    with pytest.raises(ExtractionError, match="the XLSX holds more than 2 rows"):
        budget.add(rows=1)
    budget = ContentBudget("DOCX", OfficeLimits(max_chars=5))
    with pytest.raises(ExtractionError, match="the DOCX holds more than 5 characters"):
        budget.add(chars=6)


def test_a_limit_must_be_positive():
    with pytest.raises(ValueError, match="max_rows must be positive, got 0"):
        OfficeLimits(max_rows=0)


@pytest.mark.parametrize("kind", ["PPTX", "ODT", "ODP", "ODS", "EPUB"])
def test_every_zip_package_format_checks_its_zip_before_parsing(kind: str):
    from rag_pipeline.core.ingest.formats import format_named

    fmt = type(format_named(kind.lower()))(OfficeLimits())
    bomb = zipped({"mimetype": b"x", "content.xml": b"a" * (4 * MIB)})  # Planted: ~1000 times
    with pytest.raises(ExtractionError, match=r"^zip bomb guard: content.xml expands [\d,]+ times"):
        fmt.extract(bomb, "bomb")
    many = type(format_named(kind.lower()))(OfficeLimits(max_members=2))
    with pytest.raises(ExtractionError, match=f"^zip bomb guard: 3 members in the {kind}, over "
                                              "the limit of 2$"):
        many.extract(zipped({"a": b"", "b": b"", "c": b""}), "many")


def _with_main_type(data: bytes, plain: str, variant: str) -> bytes:
    """``data`` with its main part declared as ``variant`` (as Word or PowerPoint write it)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as archive, zipfile.ZipFile(out, "w") as written:
        for member in archive.infolist():
            body = archive.read(member)
            if member.filename == "[Content_Types].xml":
                assert plain.encode() in body
                body = body.replace(plain.encode(), variant.encode())
            written.writestr(member, body)
    return out.getvalue()


WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
SLIDES = "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"


@pytest.mark.parametrize(("name", "plain", "variant"), [
    ("minutes.docm", WORD, "application/vnd.ms-word.document.macroEnabled.main+xml"),
    ("letter.dotx", WORD, "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml"),
    ("talk.ppsx", SLIDES, "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml"),
    ("brand.potx", SLIDES, "application/vnd.openxmlformats-officedocument.presentationml.template.main+xml"),
])
def test_a_macro_enabled_document_a_template_or_a_slide_show_is_read_as_its_kind(
        name: str, plain: str, variant: str):
    """Found by a new user: a ``.pptm`` deck was skipped ("no reader for .pptm files") while an
    ``.xlsm`` workbook was read; python-docx and python-pptx refuse any main part but the plain
    document's, though the parts are the same."""
    from pathlib import Path

    import docx
    import pptx

    from rag_pipeline.core.ingest.formats import format_for
    from rag_pipeline.core.ingest.office_zip import as_plain_document

    saved = io.BytesIO()
    if plain == WORD:
        document = docx.Document()
        document.add_paragraph("Quarterly minutes: the budget was approved.")
        document.save(saved)
    else:
        deck = pptx.Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = "Quarterly minutes: the budget was approved."
        deck.save(saved)
    original = saved.getvalue()
    data = _with_main_type(original, plain, variant)
    with pytest.raises(ValueError, match="content type"):  # what the library says of it
        (docx.Document if plain == WORD else pptx.Presentation)(io.BytesIO(data))
    fmt = format_for(Path(name))
    assert fmt is not None and fmt.name == ("docx" if plain == WORD else "pptx")
    assert "Quarterly minutes: the budget was approved." in fmt.extract(data, "x").canonical_text
    assert as_plain_document(original) is original  # a plain one as it is


def test_an_xml_part_of_too_many_tags_or_cell_formats_fails_before_it_is_parsed():
    """Found by an attack: 250 MiB of empty ``<w:p/>`` in a 2.6 MB DOCX (within every byte
    limit) took 5.5 GB once parsed, and a workbook's millions of ``<xf/>`` 4 GB: every element
    is a node in memory. A sheet, which readers stream, is not counted."""
    limits = OfficeLimits(max_xml_tags=100, max_cell_formats=3)
    check_zip(zipped({"word/document.xml": b"<w:p/>" * 100, "xl/worksheets/sheet1.xml": b"<c/>" * 500,
                      "media/image1.png": b"<" * 500}), "DOCX", limits)
    with pytest.raises(ExtractionError) as raised:
        check_zip(zipped({"word/document.xml": b"<w:p/>" * 101}), "DOCX", limits)
    assert str(raised.value) == ("XML bomb guard: word/document.xml holds over 100 tags, each a "
                                 "node in memory once parsed (max_xml_tags)")
    check_zip(zipped({"xl/styles.xml": b"<cellXfs>" + b"<xf/>" * 3 + b"</cellXfs>"}), "XLSX", limits)
    with pytest.raises(ExtractionError) as raised:
        check_zip(zipped({"xl/styles.xml": b"<xf/>" * 4}), "XLSX", limits)
    assert str(raised.value) == ("XML bomb guard: xl/styles.xml declares over 3 cell formats "
                                 "(max_cell_formats; Excel allows 64,000)")


def _word_document() -> bytes:
    import docx

    saved = io.BytesIO()
    document = docx.Document()
    document.add_paragraph("The budget was approved.")
    document.save(saved)
    return saved.getvalue()


def _open_document_text() -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    saved = io.BytesIO()
    document = OpenDocumentText()
    document.text.addElement(P(text="The budget was approved."))
    document.write(saved)
    return saved.getvalue()


def _excel_workbook() -> bytes:
    import openpyxl

    saved = io.BytesIO()
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "The budget was approved."
    workbook.save(saved)
    return saved.getvalue()


@pytest.mark.parametrize(("make", "suffix", "reader", "message"), [
    (_word_document, ".docx", "odt", "unreadable ODT: the file is a Word document under another "
                                     "name: rename it .docx"),
    (_word_document, ".docx", "epub", "unreadable EPUB: the file is a Word document under another "
                                      "name: rename it .docx"),
    (_open_document_text, ".odt", "docx", "unreadable DOCX: the file is an OpenDocument text "
                                          "under another name: rename it .odt"),
    (_open_document_text, ".odt", "pptx", "unreadable PPTX: the file is an OpenDocument text "
                                          "under another name: rename it .odt"),
    (_excel_workbook, ".xlsx", "ods", "unreadable ODS: the file is an Excel workbook under "
                                      "another name: rename it .xlsx"),
    (_excel_workbook, ".xlsx", "docx", "unreadable DOCX: the file is an Excel workbook under "
                                       "another name: rename it .xlsx"),
])
def test_a_package_under_another_packages_name_is_told_what_it_is(make, suffix: str,
                                                                  reader: str, message: str):
    # Found by a team whose folder changes daily: a DOCX saved as .odt failed as "no
    # content.xml (a flat XML ODF file is not read)", and an ODT as .docx with a KeyError.
    from pathlib import Path

    from rag_pipeline.core.ingest.formats import format_for, format_named

    data = make()
    with pytest.raises(ExtractionError) as caught:
        format_named(reader).extract(data, "misnamed")
    assert str(caught.value) == message
    # Under its own name it is read.
    own = format_for(Path(f"budget{suffix}"))
    assert "The budget was approved." in own.extract(data, "budget").canonical_text
