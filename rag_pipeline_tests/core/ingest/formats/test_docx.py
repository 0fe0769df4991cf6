"""DOCX: body order, sections at heading styles, tables as rows of cells, lists kept, the title."""

from __future__ import annotations

import io

import pytest

from rag_pipeline.core.ingest.extracted import ExtractionError, Section
from rag_pipeline.core.ingest.formats.docx import DocxFormat, list_marker
from rag_pipeline_tests.core.ingest.long_tables import SHIFT_HEADERS, chunked_under_header, shift_rows
from rag_pipeline_tests.core.ingest.workbooks import workbook

DOCX = DocxFormat()


def saved(document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def manual(core_title: str = "") -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = core_title
    document.add_paragraph("Read this first.")
    document.add_heading("Install", level=1)
    document.add_paragraph("Run the installer.")
    document.add_paragraph("download it", style="List Number")
    document.add_paragraph("run it", style="List Number")
    document.add_paragraph("a side note", style="List Bullet")
    document.add_paragraph("")  # an empty paragraph is no block
    document.add_heading("Prices", level=2)
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Item", "Cost", "Note"], ["Tea", "2.50", "hot"], ["Cake", "4", ""]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(2, 1).merge(table.cell(2, 2))  # one cell spanning two columns: once, not twice
    document.add_paragraph("After the table.")
    document.add_heading("Empty section", level=2)
    document.add_heading("Support", level=1)
    document.add_paragraph("Write to us.")
    return saved(document)


MANUAL_TEXT = ("Read this first.\n\n"
               "Install\n\n"
               "Run the installer.\n\n"
               "1. download it\n"
               "2. run it\n"
               "- a side note\n\n"
               "Prices\n\n"
               "Item | Cost | Note\n"
               "Tea | 2.50 | hot\n"
               "Cake | 4\n\n"
               "After the table.\n\n"
               "Empty section\n\n"
               "Support\n\n"
               "Write to us.\n")


def test_blocks_in_body_order_with_sections_at_headings():
    extracted = DOCX.extract(manual(), "manual")
    assert extracted.canonical_text == MANUAL_TEXT
    assert extracted.title == "Install"  # no core title: the first heading
    text = extracted.canonical_text
    assert [(s.title, s.level, text[s.start:s.end]) for s in extracted.sections] == [
        ("Install", 1, "Read this first."),  # before any heading: titled as the document
        ("Install", 1, "Run the installer.\n\n1. download it\n2. run it\n- a side note"),
        ("Prices", 2, "Item | Cost | Note\nTea | 2.50 | hot\nCake | 4\n\nAfter the table."),
        ("Support", 1, "Write to us."),  # "Empty section" has no body: no section
    ]
    assert extracted.sections[0] == Section("Install", 0, 16)
    assert extracted.anchors == ()
    assert DOCX.fragment(extracted.anchors, 3, 9) == "#char=3,9"


def test_the_core_title_wins_then_the_stem():
    import docx

    assert DOCX.extract(manual(core_title="Frobnicator Manual"), "manual").title == "Frobnicator Manual"
    document = docx.Document()
    document.add_paragraph("Just text.")
    assert DOCX.extract(saved(document), "notes").title == "notes"


def test_title_style_and_deep_headings_are_sections_and_content_controls_are_read():
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document()
    document.add_heading("The Guide", level=0)  # the Title style
    document.add_heading("Deep", level=4)
    document.add_paragraph("Deep text.")
    # A block-level content control (w:sdt) holding a paragraph: python-docx's own
    # iter_inner_content() skips it; its text must still be read.
    document.element.body.insert(-1, parse_xml(
        f'<w:sdt {nsdecls("w")}><w:sdtContent><w:p><w:r><w:t>Inside a control.</w:t></w:r></w:p>'
        "</w:sdtContent></w:sdt>"))
    extracted = DOCX.extract(saved(document), "g")
    assert extracted.title == "The Guide"
    assert extracted.canonical_text == "The Guide\n\nDeep\n\nDeep text.\n\nInside a control.\n"
    assert extracted.sections == (Section("Deep", 17, 46, 4),)


def test_a_paragraph_given_an_outline_level_is_a_heading_on_itself_or_by_its_styles():
    """Found by a check of files LibreOffice wrote: headings in a style of another name than
    ``Heading N``, carrying an outline level, were read as body text (2 sections of 8)."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    def outline(element, value: str) -> None:
        level = OxmlElement("w:outlineLvl")
        level.set(qn("w:val"), value)
        element.get_or_add_pPr().append(level)

    document = docx.Document()
    company = document.styles.add_style("Company Heading", WD_STYLE_TYPE.PARAGRAPH)
    outline(company.element, "0")
    derived = document.styles.add_style("Company Subheading", WD_STYLE_TYPE.PARAGRAPH)
    derived.base_style = company
    body = document.styles.add_style("Body Outline", WD_STYLE_TYPE.PARAGRAPH)
    outline(body.element, "9")  # body text: no heading
    document.add_paragraph("Restarting", style="Company Heading")
    document.add_paragraph("Drain it first.")
    document.add_paragraph("Checks", style="Company Subheading")  # level 1 from its base
    document.add_paragraph("Look twice.", style="Body Outline")
    outline(document.add_paragraph("Auditing")._p, "1")  # on the paragraph itself
    document.add_paragraph("Compare copies.")
    extracted = DOCX.extract(saved(document), "runbook")
    assert extracted.canonical_text == ("Restarting\n\nDrain it first.\n\nChecks\n\nLook twice."
                                        "\n\nAuditing\n\nCompare copies.\n")
    assert extracted.sections == (Section("Restarting", 12, 27, 1), Section("Checks", 37, 48, 1),
                                  Section("Auditing", 60, 75, 2))


def _field_paragraph(*parts: tuple[str, str]) -> str:
    """A ``w:p`` of runs: ``("begin" | "separate" | "end", "")`` a field character,
    ``("instr", code)`` a field's instruction, ``("text", words)`` shown text."""
    from xml.sax.saxutils import escape

    runs = []
    for kind, value in parts:
        if kind == "instr":
            runs.append(f'<w:r><w:instrText xml:space="preserve">{escape(value)}</w:instrText></w:r>')
        elif kind == "text":
            runs.append(f"<w:r><w:t>{escape(value)}</w:t></w:r>")
        else:
            runs.append(f'<w:r><w:fldChar w:fldCharType="{kind}"/></w:r>')
    return f"<w:p>{''.join(runs)}</w:p>"


def test_a_generated_table_of_contents_or_index_is_counted_left_out_and_a_bibliography_read():
    """Found by a check of files LibreOffice wrote: the DOCX's table of contents was indexed
    and cited as a source (its ODT twin left it out, counted)."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document()
    body = document.element.body

    def add(xml: str) -> None:
        body.insert(len(body) - 1, parse_xml(xml.replace("<w:p>", f"<w:p {nsdecls('w')}>", 1)
                                             if xml.startswith("<w:p>") else xml))

    # A table of contents as a field over three paragraphs, a page reference nested in it.
    add(_field_paragraph(("begin", ""), ("instr", " TOC \\o \"1-3\" \\h "), ("separate", ""),
                         ("text", "Installation\t"), ("begin", ""), ("instr", " PAGEREF _Toc1 "),
                         ("separate", ""), ("text", "3"), ("end", "")))
    add(_field_paragraph(("text", "Upgrades\t5")))
    add(_field_paragraph(("end", "")))
    document.add_heading("Installation", level=1)
    add(_field_paragraph(("text", "Run the installer, page "), ("begin", ""), ("instr", " PAGE "),
                         ("separate", ""), ("text", "3"), ("end", ""), ("text", ".")))
    # One in a content control of Word's "Table of Contents" gallery.
    add(f'<w:sdt {nsdecls("w")}><w:sdtPr><w:docPartObj><w:docPartGallery w:val="Table of '
        'Contents"/></w:docPartObj></w:sdtPr><w:sdtContent><w:p><w:r><w:t>Contents</w:t></w:r>'
        "</w:p></w:sdtContent></w:sdt>")
    add(_field_paragraph(("begin", ""), ("instr", " BIBLIOGRAPHY "), ("separate", ""),
                         ("text", "Knuth, The Art of Computer Programming, 1997"), ("end", "")))
    add(_field_paragraph(("begin", ""), ("instr", " INDEX \\e \"\t\" "), ("separate", ""),
                         ("text", "installer\t3"), ("end", "")))
    extracted = DOCX.extract(saved(document), "guide")
    assert extracted.canonical_text == ("Installation\n\nRun the installer, page 3.\n\n"
                                        "Knuth, The Art of Computer Programming, 1997\n")
    assert dict(extracted.notes)["indexes_left_out"] == "3"


def test_text_beside_a_generated_field_is_kept_and_a_field_without_its_end_read_whole():
    """Found by a check of the change that left contents out: a paragraph's text before a
    contents' begin or after its end was dropped with it, and a contents whose end the file
    lacks dropped the rest of the document."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    def document_of(*paragraphs: str) -> bytes:
        document = docx.Document()
        body = document.element.body
        for xml in paragraphs:
            body.insert(len(body) - 1, parse_xml(xml.replace("<w:p>", f"<w:p {nsdecls('w')}>", 1)))
        return saved(document)

    beside = document_of(
        _field_paragraph(("text", "Before it. "), ("begin", ""), ("instr", " toc \\o "),
                         ("separate", ""), ("text", "Alpha\t1")),
        _field_paragraph(("text", "Beta\t2"), ("end", ""), ("text", "After it.")),
        '<w:p><w:fldSimple w:instr=" TOC \\o "><w:r><w:t>Gamma\t3</w:t></w:r></w:fldSimple>'
        "<w:r><w:t>Beside a simple one.</w:t></w:r></w:p>")
    extracted = DOCX.extract(beside, "d")
    assert extracted.canonical_text == "Before it.\n\nAfter it.\n\nBeside a simple one.\n"
    assert dict(extracted.notes)["indexes_left_out"] == "2"
    unclosed = document_of(
        _field_paragraph(("begin", ""), ("instr", " TOC "), ("separate", ""), ("text", "Alpha\t1")),
        _field_paragraph(("text", "The rest of the document.")))
    extracted = DOCX.extract(unclosed, "d")
    assert extracted.canonical_text == "Alpha\t1\n\nThe rest of the document.\n"
    assert "indexes_left_out" not in dict(extracted.notes)


def test_styles_based_on_each_other_in_a_loop_are_read_once_each():
    """Found by a check of the change that followed style chains: styles based on each other
    in a loop hung the reader (its list numbering followed the chain without end)."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    first = document.styles.add_style("Loop A", WD_STYLE_TYPE.PARAGRAPH)
    second = document.styles.add_style("Loop B", WD_STYLE_TYPE.PARAGRAPH)
    first.base_style, second.base_style = second, first
    document.add_paragraph("Still read.", style="Loop A")
    assert DOCX.extract(saved(document), "loop").canonical_text == "Still read.\n"


def _numbered(levels: list[str], nums: list[str], items: list[tuple[str, int, int]],
              after: str = "") -> bytes:
    """A DOCX of one abstract list (``levels``: its ``w:lvl`` elements' insides), the
    ``w:num`` elements' insides ``nums`` (numIds 90, 91, ...), and ``items``: ``(text, level,
    numId)`` paragraphs, then a paragraph ``after``."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document()
    numbering = document.part.numbering_part.element
    numbering.insert(0, parse_xml(
        f'<w:abstractNum {nsdecls("w")} w:abstractNumId="90">'
        + "".join(f'<w:lvl w:ilvl="{i}">{level}</w:lvl>' for i, level in enumerate(levels))
        + "</w:abstractNum>"))
    for number, inside in enumerate(nums, start=90):
        numbering.append(parse_xml(f'<w:num {nsdecls("w")} w:numId="{number}">'
                                   f'<w:abstractNumId w:val="90"/>{inside}</w:num>'))
    for text, level, num in items:
        paragraph = document.add_paragraph(text)
        paragraph._p.get_or_add_pPr().append(parse_xml(
            f'<w:numPr {nsdecls("w")}><w:ilvl w:val="{level}"/><w:numId w:val="{num}"/></w:numPr>'))
    if after:
        document.add_paragraph(after)
    return saved(document)


def test_nested_list_levels_are_indented_and_counted_per_level():
    # A two-level list as Word writes one: decimal, then lower-case letters from "b" (start 2).
    data = _numbered(['<w:start w:val="1"/><w:numFmt w:val="decimal"/>',
                      '<w:start w:val="2"/><w:numFmt w:val="lowerLetter"/>'], [""],
                     [("one", 0, 90), ("one b", 1, 90), ("one c", 1, 90), ("two", 0, 90),
                      ("two b", 1, 90)], after="Not a list.")
    extracted = DOCX.extract(data, "lists")
    # the letters restart under "two": a deeper level restarts when a shallower one moves on
    assert extracted.canonical_text == "1. one\n  b. one b\n  c. one c\n2. two\n  b. two b\n\nNot a list.\n"


def test_a_lists_level_text_and_a_restart_are_shown_as_word_shows_them():
    """Found by a check of files LibreOffice wrote: ``(a)`` was shown ``a.``, ``1)`` ``1.``, a
    second level ``2.1.`` as ``1.``, and a list restarted at 20 went on from the list before."""
    data = _numbered(
        ['<w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1)"/>',
         '<w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2."/>',
         '<w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%3)"/>'],
        ["", '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="20"/></w:lvlOverride>'],
        [("one", 0, 90), ("one one", 1, 90), ("deep", 2, 90), ("two", 0, 90), ("twenty", 0, 91),
         ("twenty-one", 0, 91)])
    assert DOCX.extract(data, "lists").canonical_text == (
        "1) one\n  1.1. one one\n    (a) deep\n2) two\n20) twenty\n21) twenty-one\n")


@pytest.mark.parametrize(("number_format", "number", "marker"), [
    ("bullet", 3, "-"), ("decimal", 12, "12."), ("lowerLetter", 3, "c."), ("lowerLetter", 27, "aa."),
    ("upperLetter", 2, "B."), ("lowerRoman", 4, "iv."), ("upperRoman", 1994, "MCMXCIV."),
    ("decimalZero", 7, "7."),
])
def test_list_markers(number_format: str, number: int, marker: str):
    assert list_marker(number_format, number) == marker


def test_a_file_that_is_not_a_docx_fails_with_the_reason():
    with pytest.raises(ExtractionError, match=r"^unreadable DOCX: "):
        DOCX.extract(b"not a zip", "bad")


def test_text_in_tracked_insertions_content_controls_and_links_is_read_deleted_text_is_not():
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document()
    # python-docx's Paragraph.text reads direct runs and hyperlinks only: "inserted ", "inline "
    # and "smart" would be lost. The tab stop in w:pPr is no text; w:delText is deleted text.
    document.element.body.insert(0, parse_xml(
        f'<w:p {nsdecls("w", "r")}><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>'
        "<w:r><w:t xml:space=\"preserve\">Kept </w:t></w:r>"
        "<w:ins w:id=\"1\" w:author=\"a\"><w:r><w:t xml:space=\"preserve\">inserted </w:t></w:r></w:ins>"
        "<w:del w:id=\"2\" w:author=\"a\"><w:r><w:delText>deleted </w:delText></w:r></w:del>"
        "<w:sdt><w:sdtContent><w:r><w:t xml:space=\"preserve\">inline </w:t></w:r></w:sdtContent></w:sdt>"
        "<w:hyperlink r:id=\"rId99\"><w:r><w:t>link</w:t></w:r></w:hyperlink>"
        "<w:r><w:tab/><w:t>tabbed</w:t><w:br/><w:t>next line</w:t></w:r>"
        "<w:smartTag w:uri=\"u\" w:element=\"e\">"
        "<w:r><w:t xml:space=\"preserve\"> smart</w:t></w:r></w:smartTag>"
        "</w:p>"))
    extracted = DOCX.extract(saved(document), "tracked")
    assert extracted.canonical_text == "Kept inserted inline link\ttabbed\nnext line smart\n"


def test_a_docx_with_damaged_xml_fails_with_the_reason():
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(manual()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            content = source.read(name)
            # Planted flaw: the body's XML cut in half.
            target.writestr(name, content[:len(content) // 2] if name == "word/document.xml" else content)
    with pytest.raises(ExtractionError, match=r"^unreadable DOCX: XMLSyntaxError: "):
        DOCX.extract(out.getvalue(), "cut")


def long_table_docx(rows: int = 60) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Shifts", level=1)
    document.add_paragraph("Who works where.")
    table = document.add_table(rows=rows + 1, cols=3)
    for c, name in enumerate(SHIFT_HEADERS):
        table.cell(0, c).text = name
    for r, row in enumerate(shift_rows(rows), start=1):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    return saved(document)


def test_a_long_table_keeps_its_header_in_every_chunk():
    extracted = DOCX.extract(long_table_docx(), "shifts")
    (table,) = extracted.tables
    canonical = extracted.canonical_text
    assert canonical[table.start:table.header_end] == table.header == "Site | Lead | Duration"
    assert len(table.rows) == 60
    assert canonical[table.rows[59]:table.end] == "Delta flats 60 | Tomas Ruiz | 60 hours"
    chunked_under_header("shifts.docx", extracted)


def test_a_cell_merged_across_columns_does_not_shift_the_next():
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    for c, value in enumerate(["A", "B", "C"]):
        table.cell(0, c).text = value
    table.cell(1, 0).merge(table.cell(1, 1)).text = "wide"
    table.cell(1, 2).text = "third"
    extracted = DOCX.extract(saved(document), "t")
    assert extracted.canonical_text == "A | B | C\nwide |  | third\n"


def test_a_cell_merged_down_rows_leaves_an_empty_place_below_it():
    import docx

    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Site", "Lead", "Hours"], ["", "Ada", "6"], ["", "Bo", "2"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(1, 0).merge(table.cell(2, 0)).text = "Delta"  # w:vMerge: one cell over two rows
    extracted = DOCX.extract(saved(document), "t")
    assert extracted.canonical_text == "Site | Lead | Hours\nDelta | Ada | 6\n | Bo | 2\n"
    (span,) = extracted.tables
    assert (span.header, span.rows) == ("Site | Lead | Hours", (20, 36))


def test_a_row_starting_past_the_first_column_keeps_its_cells_under_their_headers():
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    for c, value in enumerate(["Site", "Lead", "Hours"]):
        table.cell(0, c).text = value
    row = table.rows[1]._tr
    # Planted: Word's w:gridBefore, the row's first grid column left out (an irregular table):
    # its two cells are Lead and Hours, not Site and Lead.
    row.remove(row.tc_lst[0])
    before = OxmlElement("w:gridBefore")
    before.set(qn("w:val"), "1")
    row.get_or_add_trPr().append(before)
    for cell, value in zip(row.tc_lst, ["Ada", "6"], strict=True):
        cell.clear_content()
        cell.add_p().add_r().text = value
    extracted = DOCX.extract(saved(document), "t")
    assert extracted.canonical_text == "Site | Lead | Hours\n | Ada | 6\n"


def test_a_zip_bomb_fails_before_it_is_parsed():
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(long_table_docx(1)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bomb:
        for name in source.namelist():
            content = source.read(name)
            if name == "word/document.xml":  # 8 MiB of one paragraph's text, ~1000 times smaller
                content = content.replace(b"Who works where.", b"w" * (8 * 1024 * 1024))
            bomb.writestr(name, content)
    with pytest.raises(ExtractionError, match="zip bomb guard: word/document.xml expands"):
        DOCX.extract(out.getvalue(), "bomb")


def test_characters_are_bounded_while_reading():
    from rag_pipeline.core.ingest.office_zip import OfficeLimits

    with pytest.raises(ExtractionError, match="more than 1,000 characters"):
        DocxFormat(OfficeLimits(max_chars=1000)).extract(long_table_docx(), "big")


def test_rows_marked_as_header_rows_are_the_header():
    import docx
    from docx.oxml import OxmlElement

    document = docx.Document()
    table = document.add_table(rows=4, cols=2)
    for r, row in enumerate([["Shift plan", ""], ["Site", "Lead"], ["Delta", "Tomas"], ["Echo", "Ana"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    for marked in table.rows[:2]:  # "repeat as header row" on the first two rows
        marked._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))
    extracted = DOCX.extract(saved(document), "t")
    (span,) = extracted.tables
    assert extracted.canonical_text == "Shift plan\nSite | Lead\nDelta | Tomas\nEcho | Ana\n"
    assert (span.header, span.rows) == ("Shift plan\nSite | Lead", (23, 37))


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def with_notes(data: bytes, kind: str, notes: dict[str, str]) -> bytes:
    """``data`` with a ``word/{kind}s.xml`` part (``kind`` ``footnote`` or ``endnote``) holding
    Word's two separator notes and ``notes`` (id -> text), related from the document part."""
    import zipfile

    separators = "".join(f'<w:{kind} w:type="{t}" w:id="{i}"><w:p><w:r><w:separator/></w:r>'
                         f"</w:p></w:{kind}>" for i, t in (("-1", "separator"),
                                                           ("0", "continuationSeparator")))
    bodies = "".join(f'<w:{kind} w:id="{i}"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:{kind}>'
                     for i, text in notes.items())
    part = f'<w:{kind}s xmlns:w="{_W}">{separators}{bodies}</w:{kind}s>'
    content_type = f"application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}s+xml"
    relationship = ("http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
                    f"{kind}s")
    source, target = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(target, "w") as out:
        for item in source.infolist():
            body = source.read(item.filename)
            if item.filename == "[Content_Types].xml":
                body = body.replace(b"</Types>", f'<Override PartName="/word/{kind}s.xml" '
                                    f'ContentType="{content_type}"/></Types>'.encode())
            elif item.filename == "word/_rels/document.xml.rels":
                body = body.replace(b"</Relationships>", f'<Relationship Id="rIdNotes{kind}" '
                                    f'Type="{relationship}" Target="{kind}s.xml"/>'
                                    "</Relationships>".encode())
            out.writestr(item, body)
        out.writestr(f"word/{kind}s.xml", part)
    return target.getvalue()


def _refer(paragraph, kind: str, note_id: str) -> None:
    from docx.oxml import parse_xml

    paragraph._p.append(parse_xml(f'<w:r xmlns:w="{_W}"><w:{kind}Reference w:id="{note_id}"/>'
                                  "</w:r>"))


def test_footnotes_and_endnotes_follow_the_paragraph_or_table_that_refers_to_them():
    import docx

    document = docx.Document()
    document.add_heading("Budget", level=1)
    first = document.add_paragraph("The grant covers travel.")
    _refer(first, "footnote", "7")  # Word's ids are not the numbers it shows
    document.add_paragraph("No note here.")
    table = document.add_table(rows=2, cols=1)
    table.cell(0, 0).text = "Item"
    table.cell(1, 0).text = "Laptop"
    _refer(table.cell(1, 0).paragraphs[0], "footnote", "3")
    last = document.add_paragraph("See the appendix.")
    _refer(last, "endnote", "2")
    _refer(last, "footnote", "99")  # a reference to no note: nothing to add
    data = with_notes(with_notes(saved(document), "footnote", {
        "7": "Economy class only.", "3": "Bought in March 2026."}), "endnote", {
        "2": "The appendix lists every receipt."})
    extracted = DOCX.extract(data, "grant")
    assert extracted.canonical_text == (
        "Budget\n\n"
        "The grant covers travel.\n\n"
        "Footnote 1: Economy class only.\n\n"
        "No note here.\n\n"
        "Item\nLaptop\n\n"
        "Footnote 2: Bought in March 2026.\n\n"
        "See the appendix.\n\n"
        "Endnote i: The appendix lists every receipt.\n")
    assert extracted.sections == (Section("Budget", 8, 193, 1),)
    assert extracted.notes == ()


def test_a_list_items_footnote_follows_the_list_which_stays_one_block():
    import docx

    document = docx.Document()
    document.add_paragraph("Packing list:")
    _refer(document.add_paragraph("tent", style="List Bullet"), "footnote", "2")  # Planted
    document.add_paragraph("stove", style="List Bullet")
    document.add_paragraph("Leave at six.")
    data = with_notes(saved(document), "footnote", {"2": "The two-person one."})
    assert DOCX.extract(data, "trip").canonical_text == (
        "Packing list:\n\n- tent\n- stove\n\nFootnote 1: The two-person one.\n\nLeave at six.\n")


def test_an_empty_note_keeps_its_number_and_a_document_may_number_its_notes_otherwise():
    import docx

    document = docx.Document()
    for number, words in enumerate(["One.", "Two.", "Three."], start=1):
        _refer(document.add_paragraph(words), "footnote", str(number + 1))
    settings = document.settings.element
    from docx.oxml import parse_xml

    settings.append(parse_xml(f'<w:footnotePr xmlns:w="{_W}"><w:numFmt w:val="upperLetter"/>'
                              "</w:footnotePr>"))
    data = with_notes(saved(document), "footnote", {"2": "", "3": "second", "4": "third"})
    assert DOCX.extract(data, "n").canonical_text == (
        "One.\n\nTwo.\n\nFootnote B: second\n\nThree.\n\nFootnote C: third\n")


def test_headers_and_footers_close_the_document_once_each_and_comments_are_counted():
    import docx

    document = docx.Document()
    document.add_paragraph("Body text.")
    document.sections[0].header.paragraphs[0].text = "Acme internal"
    document.sections[0].footer.paragraphs[0].text = "Questions: ops@acme.example"
    document.add_section()  # a second section linked to the first: the same texts
    third = document.add_section()
    third.footer.is_linked_to_previous = False
    third.footer.paragraphs[0].text = "12"  # a page number alone
    # A first-page header the section does not show (no w:titlePg), and an even-page footer
    # the settings do not ask for: neither is on any page.
    third.first_page_header.is_linked_to_previous = False
    third.first_page_header.paragraphs[0].text = "Draft cover"
    third.even_page_footer.is_linked_to_previous = False
    third.even_page_footer.paragraphs[0].text = "Even pages"
    shown = document.add_section()
    shown.different_first_page_header_footer = True
    shown.first_page_header.is_linked_to_previous = False
    shown.first_page_header.paragraphs[0].text = "Appendix cover"
    document.add_comment(document.paragraphs[0].runs or [document.paragraphs[0].add_run("")],
                         text="Is this right?", author="Ana")
    extracted = DOCX.extract(saved(document), "memo")
    text = extracted.canonical_text
    assert text == ("Body text.\n\n"
                    "Header: Acme internal\n"
                    "Footer: Questions: ops@acme.example\n"
                    "Header: Appendix cover\n")
    assert extracted.sections == (Section("memo", 0, 10, 1),
                                  Section("Page headers and footers", 12, 92, 1))
    assert extracted.notes == (("comments_left_out", "1"),)


def test_a_first_page_header_an_earlier_section_defines_is_the_one_a_later_first_page_shows():
    """Found by a new user: a report's cover header, defined in its first section (which shows
    none) and shown by the second section's first page, was in no chunk."""
    import docx

    document = docx.Document()
    document.add_paragraph("Body text.")
    first = document.sections[0]
    first.header.paragraphs[0].text = "Acme internal"
    first.first_page_header.is_linked_to_previous = False
    first.first_page_header.paragraphs[0].text = "Annual report cover"  # not shown here
    second = document.add_section()
    second.different_first_page_header_footer = True  # shows the first section's
    third = document.add_section()
    third.different_first_page_header_footer = True  # the same part again: once
    assert DOCX.extract(saved(document), "report").canonical_text == (
        "Body text.\n\nHeader: Acme internal\nHeader: Annual report cover\n")


def test_sections_linking_their_header_to_the_first_are_read_without_walking_back():
    """Found by an attack: each of 3,000 sections linking to the first one's header (Word's
    default at a section break) made python-docx walk back through every earlier section: a
    RecursionError failed the document."""
    import copy

    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls, qn

    document = docx.Document()
    document.sections[0].header.paragraphs[0].text = "Company confidential"
    final = document.element.body.find(qn("w:sectPr"))
    for number in range(1_500):
        paragraph = parse_xml(f'<w:p {nsdecls("w")}><w:pPr/><w:r><w:t>Part {number}</w:t></w:r>'
                              "</w:p>")
        section = copy.deepcopy(final)
        if number:  # the first keeps the header's definition; the others link to it
            for reference in section.findall(qn("w:headerReference")):
                section.remove(reference)
        paragraph.find(qn("w:pPr")).append(section)
        final.addprevious(paragraph)
    for reference in final.findall(qn("w:headerReference")):
        final.remove(reference)
    text = DOCX.extract(saved(document), "parts").canonical_text
    assert text.endswith("Part 1499\n\nHeader: Company confidential\n")


def with_imported_parts(parts: list[tuple[str, str, bytes]], again: int = 0,
                        dangling: int = 0) -> bytes:
    """A DOCX whose body is a paragraph, then a ``w:altChunk`` per ``(name, content type,
    bytes)``: a part imported whole, as HTML-to-DOCX tools write them; then ``again`` more
    naming the first part, and ``dangling`` naming no relationship."""
    import docx
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls, qn

    document = docx.Document()
    document.add_paragraph("Visible paragraph.")
    body = document.element.body
    for name, content_type, blob in parts:
        part = Part(PackURI(f"/word/{name}"), content_type, blob, document.part.package)
        rid = document.part.relate_to(part, RT.A_F_CHUNK)
        body.sectPr.addprevious(parse_xml(f'<w:altChunk {nsdecls("w", "r")} r:id="{rid}"/>'))
    first = body.findall(qn("w:altChunk"))[0].get(qn("r:id"))
    for rid in [first] * again + ["rId999"] * dangling:
        body.sectPr.addprevious(parse_xml(f'<w:altChunk {nsdecls("w", "r")} r:id="{rid}"/>'))
    return saved(document)


def test_html_a_docx_imports_whole_is_read_in_place_and_other_kinds_are_counted():
    """Found by an attack: the imported part's text was in no chunk, and nothing said so."""
    from rag_pipeline.core.ingest.extracted import left_out

    extracted = DocxFormat().extract(with_imported_parts([
        ("chunk.html", "text/html", b"<html><body><h1>Terms</h1><p>The contract value is "
                                    b"4.2 million.</p><p>Signed in Oslo.</p></body></html>"),
        ("chunk.rtf", "application/rtf", b"{\\rtf1 Left out.}"),
        ("note.txt", "text/plain", b"Plain words.\n")]), "imported")
    assert extracted.canonical_text == ("Visible paragraph.\n\nTerms\n\nThe contract value is "
                                        "4.2 million.\n\nSigned in Oslo.\n\nPlain words.\n")
    assert left_out(extracted.notes) == [
        "1 part(s) a DOCX imports whole and no reader here reads (RTF, a document, "
        "a missing part) left out"]


def test_a_part_imported_again_and_again_is_read_once_and_undecodable_or_dangling_ones_counted():
    """Found by a second attack: 10,000 altChunks naming one 900 KB part parsed it 10,000 times
    (hours); an imported text part that was no UTF-8 failed the whole document."""
    from rag_pipeline.core.ingest.extracted import left_out

    extracted = DocxFormat().extract(with_imported_parts([
        ("chunk.html", "text/html", b"<p>Signed in Oslo.</p>" + b"<div></div>" * 50_000),
        ("bad.txt", "text/plain", b"\x81\x81 not UTF-8 \x90\x90\x90")], again=10_000, dangling=2),
        "imported")
    assert extracted.canonical_text == "Visible paragraph.\n\nSigned in Oslo.\n"
    assert left_out(extracted.notes) == [
        "3 part(s) a DOCX imports whole and no reader here reads (RTF, a document, "
        "a missing part) left out"]


def test_text_after_an_entity_left_unresolved_is_kept_and_the_entity_never_read(tmp_path):
    """Found by an attack: ``Visible &xxe; paragraph`` was read as "Visible"."""
    import zipfile

    import docx

    secret = tmp_path / "secret.txt"
    secret.write_text("OUTSIDE-SECRET", encoding="utf-8")
    document = docx.Document()
    document.add_paragraph("Visible MARKER paragraph")
    source = io.BytesIO(saved(document))
    patched = io.BytesIO()
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(patched, "w") as copy:
        for item in original.infolist():
            data = original.read(item.filename)
            if item.filename == "word/document.xml":
                head, _, rest = data.partition(b"?>")
                data = (head + b"?><!DOCTYPE w:document [<!ENTITY xxe SYSTEM \"file://"
                        + str(secret).encode() + b"\">]>" + rest.replace(b"MARKER", b"&xxe;"))
            copy.writestr(item, data)
    extracted = DocxFormat().extract(patched.getvalue(), "entity")
    assert extracted.canonical_text == "Visible  paragraph\n"


def with_objects(objects: list[tuple[str, bytes, str]], text: str = "Costs below.") -> bytes:
    """A DOCX of a paragraph ``text`` holding, as Word writes a pasted worksheet, a
    ``w:object`` per ``(kind, bytes, ProgID)``: ``package`` an embedded package, ``ole`` a
    binary OLE object, ``link`` a linked file, ``again`` the first object's part once more."""
    import docx
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document()
    paragraph = document.add_paragraph(text)
    first = None
    for number, (kind, blob, prog_id) in enumerate(objects, start=1):
        if kind == "again":
            rid, kind_attribute = first, "Embed"
        else:
            name, content_type, reltype = {
                "package": (f"Microsoft_Excel_Worksheet{number}.xlsx",
                            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                            RT.PACKAGE),
                "ole": (f"oleObject{number}.bin", "application/vnd.openxmlformats-"
                        "officedocument.oleObject", RT.OLE_OBJECT)}.get(kind, (None, None, None))
            if name is None:
                rid = document.part.relate_to("file:///srv/budget.xlsx", RT.OLE_OBJECT,
                                              is_external=True)
            else:
                part = Part(PackURI(f"/word/embeddings/{name}"), content_type, blob,
                            document.part.package)
                rid = document.part.relate_to(part, reltype)
            first = first or rid
            kind_attribute = "Link" if kind == "link" else "Embed"
        paragraph._p.append(parse_xml(
            f'<w:r {nsdecls("w", "r")} xmlns:o="urn:schemas-microsoft-com:office:office" '
            'xmlns:v="urn:schemas-microsoft-com:vml">'
            f'<w:object><v:shape id="_x0000_i{number}"/>'
            f'<o:OLEObject Type="{kind_attribute}" ProgID="{prog_id}" r:id="{rid}"/>'
            "</w:object></w:r>"))
    return saved(document)


def test_an_embedded_workbook_is_a_table_per_sheet_after_its_paragraph():
    """Found by a new user (in a deck, then the same in Word): a worksheet pasted as an object
    was in no chunk, and nothing said so."""
    from rag_pipeline.core.ingest.extracted import TableSpan

    book = workbook(("Budget", [["Item", "Q1", "Q2"], ["Travel", 1200, 1350.5],
                                ["Licences", 800, 800]]),
                    ("Sign-off", [[None, "Approved by finance"]]))
    extracted = DOCX.extract(with_objects([("package", book, "Excel.Sheet.12"),
                                           ("again", b"", "Excel.Sheet.12")]), "costs")
    assert extracted.canonical_text == ("Costs below.\n\nSheet: Budget\n\nItem | Q1 | Q2\n"
                                        "Travel | 1200 | 1350.5\nLicences | 800 | 800\n\n"
                                        "Sheet: Sign-off\n\nApproved by finance\n")
    assert extracted.tables == (TableSpan(29, 87, "Item | Q1 | Q2", 43, (44, 67)),)
    assert extracted.notes == ()  # nothing left out; the part named twice is read once
    # A paragraph holding nothing but the object.
    alone = DOCX.extract(with_objects([("package", book, "Excel.Sheet.12")], text=""), "costs")
    assert alone.canonical_text.startswith("Sheet: Budget\n\nItem | Q1 | Q2\nTravel")
    # An object in a table's cell: its tables after the table.
    import docx

    document = docx.Document(io.BytesIO(with_objects([("package", book, "Excel.Sheet.12")])))
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Attached"
    table.cell(0, 1)._tc.append(document.paragraphs[0]._p)  # moved into the cell
    in_cell = DOCX.extract(saved(document), "costs").canonical_text
    assert in_cell.startswith("Attached | Costs below.\n\nSheet: Budget\n\nItem | Q1 | Q2\nTravel")


def test_a_long_embedded_worksheet_keeps_its_header_in_every_chunk():
    book = workbook(("Shifts", [list(SHIFT_HEADERS), *map(list, shift_rows())]))
    chunked_under_header("shifts.docx", DOCX.extract(with_objects(
        [("package", book, "Excel.Sheet.12")]), "rota"))


def test_objects_no_reader_reads_are_counted_as_left_out(tmp_path):
    """A legacy binary object, a linked file and a damaged package are left out and counted;
    a document of nothing else fails naming them."""
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline.core.ingest.extracted import left_out

    legacy = bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504)  # an OLE2 compound file's header
    damaged = workbook(("Budget", [["Item", "Q1"], ["Travel", 1]]))[:200]
    objects = [("ole", legacy, "Excel.Sheet.8"), ("link", b"", "Excel.Sheet.12"),
               ("package", damaged, "Excel.Sheet.12")]
    extracted = DOCX.extract(with_objects(objects), "objects")
    assert extracted.canonical_text == "Costs below.\n"
    assert left_out(extracted.notes) == [
        "3 embedded object(s) no reader here reads (a formula, a drawing, an OLE object) left out"]
    (tmp_path / "objects.docx").write_bytes(with_objects(objects, text=""))
    [record] = extract_corpus(tmp_path).records
    assert (record.status, record.error) == ("failed", (
        "no text: the file is empty after extraction (3 embedded object(s) no reader here reads "
        "(a formula, a drawing, an OLE object) left out)"))


def test_an_embedded_workbook_counts_against_the_documents_limits():
    from rag_pipeline.core.ingest.office_zip import OfficeLimits

    book = workbook(("Big", [[f"row {n}", "x" * 50] for n in range(40)]))
    with pytest.raises(ExtractionError, match="too large: the DOCX holds more than 1,000 characters"):
        DocxFormat(OfficeLimits(max_chars=1_000)).extract(
            with_objects([("package", book, "Excel.Sheet.12")]), "big")


def test_what_an_embedded_workbook_leaves_out_is_noted_as_for_a_workbook_file():
    """Found by an attack: a damaged sheet of an embedded workbook and its formulas never
    calculated were dropped without a note; an object in a page header without a count."""
    import zipfile

    import docx
    from docx.oxml import parse_xml

    book = workbook(("Costs", [["Item", "Cost"], ["Travel", 10], ["Total", "=SUM(B2:B2)"]]),
                    ("Broken", [["a", "b"]]))
    damaged = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(book)) as source, zipfile.ZipFile(damaged, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            target.writestr(member, data[:len(data) // 2] if member.filename.endswith("sheet2.xml")
                            else data)
    document = docx.Document(io.BytesIO(with_objects([("package", damaged.getvalue(),
                                                       "Excel.Sheet.12")])))
    header = document.sections[0].header
    header.paragraphs[0].text = "Letterhead"
    header._element.append(parse_xml(with_objects_paragraph_xml()))
    extracted = DOCX.extract(saved(document), "costs")
    assert extracted.canonical_text == ("Costs below.\n\nItem | Cost\nTravel | 10\nTotal\n\n"
                                        "Header: Letterhead\n")
    notes = dict(extracted.notes)
    assert notes["formulas_without_cached_value"] == "1"
    assert notes["sheets_unreadable"].startswith("Broken (ParseError: ")
    assert notes["embedded_objects_left_out"] == "1"  # the header's


def with_objects_paragraph_xml() -> str:
    """A paragraph holding an embedded object whose relationship the part does not have."""
    return ('<w:p xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
            'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
            'xmlns:o="urn:schemas-microsoft-com:office:office"><w:r><w:object>'
            '<o:OLEObject Type="Embed" ProgID="Excel.Sheet.12" r:id="rId99"/></w:object></w:r></w:p>')


def test_the_workbooks_a_document_embeds_are_held_together_to_its_expanded_size_limit():
    """Found by an attack: each embedded workbook was allowed the document's whole expanded size
    again (6 workbooks under a limit of 8 MiB expanded 43 MiB of XML)."""
    import zipfile

    from rag_pipeline.core.ingest.office_zip import OfficeLimits

    def expanded(data: bytes) -> int:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return sum(member.file_size for member in archive.infolist())

    books = [workbook((f"Sheet{n}", [[f"row {r} of {n}", f"{r * n:08d}" * 20] for r in range(1_600)]))
             for n in (1, 2)]
    document = with_objects([("package", book, "Excel.Sheet.12") for book in books])
    limit = max(expanded(document), *map(expanded, books)) + 1
    assert all(2 * expanded(book) > limit for book in books)  # one fits, two do not
    extracted = DocxFormat(OfficeLimits(max_expanded_bytes=limit)).extract(document, "two")
    assert "row 1599 of 1 |" in extracted.canonical_text
    assert "of 2" not in extracted.canonical_text
    assert dict(extracted.notes)["embedded_objects_left_out"] == "1"


def test_of_alternate_content_only_the_chosen_objects_workbook_is_read():
    """Found by an attack: a ``w:object`` in both ``mc:Choice`` and ``mc:Fallback`` gave its
    tables twice, where the text of alternate content is read once."""
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import qn

    chosen = workbook(("Shown", [["Item", "Cost"], ["Travel", 10]]))
    fallback = workbook(("Fallback", [["Item", "Cost"], ["Travel", 10]]))
    document = docx.Document(io.BytesIO(with_objects([("package", chosen, "Excel.Sheet.12"),
                                                      ("package", fallback, "Excel.Sheet.12")])))
    paragraph = document.paragraphs[0]._p
    first, second = [run for run in paragraph.findall(qn("w:r")) if run.find(qn("w:object")) is not None]
    markup = "http://schemas.openxmlformats.org/markup-compatibility/2006"
    alternate = parse_xml(f'<mc:AlternateContent xmlns:mc="{markup}"><mc:Choice Requires="w14"/>'
                          "<mc:Fallback/></mc:AlternateContent>")
    first.addprevious(alternate)
    alternate[0].append(first)
    alternate[1].append(second)
    extracted = DOCX.extract(saved(document), "once")
    assert extracted.canonical_text == "Costs below.\n\nItem | Cost\nTravel | 10\n"
    assert extracted.notes == ()
