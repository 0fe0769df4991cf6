"""OpenDocument: ODT headings, paragraphs, lists and tables; ODP slides cited ``#slide=N``; ODS
sheets cited by cell range as XLSX; files made here with odfpy."""

from __future__ import annotations

import io
import zipfile

import pytest
from odf import chart, draw, office, presentation, table, text
from odf.namespaces import PRESENTATIONNS
from odf.opendocument import (
    OpenDocumentChart,
    OpenDocumentDrawing,
    OpenDocumentPresentation,
    OpenDocumentSpreadsheet,
    OpenDocumentText,
)

from rag_pipeline.benchmarks.made_here import odf_grid
from rag_pipeline.core.ingest.extracted import (
    Anchor,
    ExtractionError,
    Section,
    TableSpan,
    left_out,
)
from rag_pipeline.core.ingest.formats.odf import OdpFormat, OdsFormat, OdtFormat
from rag_pipeline_tests.core.ingest.long_tables import SHIFT_HEADERS, chunked_under_header, shift_rows

ODT, ODP, ODS = OdtFormat(), OdpFormat(), OdsFormat()


def saved(document) -> bytes:
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def cell(value: str, **attributes) -> table.TableCell:
    made = table.TableCell(**attributes)
    if value:
        made.addElement(text.P(text=value))
    return made


def report() -> bytes:
    document = OpenDocumentText()
    body = document.text
    body.addElement(text.P(text="Read this first."))
    body.addElement(text.H(outlinelevel=1, text="Field work"))
    paragraph = text.P(text="Gauges were")
    paragraph.addElement(text.S(c=3))
    paragraph.addText("read")
    paragraph.addElement(text.Tab())
    paragraph.addText("daily")
    paragraph.addElement(text.LineBreak())
    paragraph.addText("at nine.")
    note = text.Note(noteclass="footnote")
    note.addElement(text.NoteCitation(text="1"))
    body_of_note = text.NoteBody()
    body_of_note.addElement(text.P(text="A footnote."))
    note.addElement(body_of_note)
    paragraph.addElement(note)  # a note is left out of its sentence, and follows it
    body.addElement(paragraph)
    items = text.List()
    for value in ("first site", "second site"):
        item = text.ListItem()
        item.addElement(text.P(text=value))
        items.addElement(item)
    nested_item = text.ListItem()
    nested = text.List()
    inner = text.ListItem()
    inner.addElement(text.P(text="a detail"))
    nested.addElement(inner)
    nested_item.addElement(nested)
    items.addElement(nested_item)
    body.addElement(items)
    body.addElement(text.H(outlinelevel=2, text="Hours"))
    grid = table.Table(name="Hours")
    for values in (["Site", "Lead", "Hours"], ["Delta flats", "Tomas Ruiz", "6"]):
        row = table.TableRow()
        for value in values:
            row.addElement(cell(value))
        grid.addElement(row)
    endnote = text.Note(noteclass="endnote")
    endnote.addElement(text.NoteCitation(text="i"))
    endnote_body = text.NoteBody()
    endnote_body.addElement(text.P(text="Acting lead in May."))
    endnote.addElement(endnote_body)
    row.childNodes[1].childNodes[0].addElement(endnote)  # in the cell "Tomas Ruiz"
    merged = table.TableRow()
    merged.addElement(cell("North ridge and delta", numbercolumnsspanned=2))
    merged.addElement(table.CoveredTableCell())
    merged.addElement(cell("9"))
    grid.addElement(merged)
    body.addElement(grid)
    return saved(document)


ODT_TEXT = ("Read this first.\n\n"
            "Field work\n\n"
            "Gauges were   read\tdaily\nat nine.\n\n"
            "Footnote 1: A footnote.\n\n"
            "- first site\n- second site\n  - a detail\n\n"
            "Hours\n\n"
            "Site | Lead | Hours\nDelta flats | Tomas Ruiz | 6\nNorth ridge and delta |  | 9\n\n"
            "Endnote i: Acting lead in May.\n")


def test_odt_headings_paragraphs_lists_and_tables():
    extracted = ODT.extract(report(), "report")
    assert extracted.canonical_text == ODT_TEXT
    assert extracted.title == "Field work"  # no meta title: the first heading
    text_ = extracted.canonical_text
    assert [(s.title, s.level, text_[s.start:s.end]) for s in extracted.sections] == [
        ("Field work", 1, "Read this first."),
        ("Field work", 1, "Gauges were   read\tdaily\nat nine.\n\nFootnote 1: A footnote.\n\n"
                          "- first site\n- second site\n  - a detail"),
        ("Hours", 2, "Site | Lead | Hours\nDelta flats | Tomas Ruiz | 6\nNorth ridge and delta |  | 9"
                     "\n\nEndnote i: Acting lead in May."),
    ]
    assert extracted.sections[0] == Section("Field work", 0, 16)
    assert extracted.tables == (TableSpan(138, 215, "Site | Lead | Hours", 157, (158, 187)),)
    assert text_[187:215] == "North ridge and delta |  | 9"
    assert ODT.fragment(extracted.anchors, 2, 9) == "#char=2,9"


def _items(texts: list[str], **attributes) -> text.List:
    listed = text.List(**attributes)
    for words in texts:
        item = text.ListItem()
        item.addElement(text.P(text=words))
        listed.addElement(item)
    return listed


def test_an_odt_numbered_list_keeps_its_numbers_as_its_style_numbers_them():
    """Found by a check of files LibreOffice wrote: every list item read as ``- ``, so "step 2
    must finish before step 3" stood over three bullets (the DOCX of it kept 1. 2. 3.)."""
    document = OpenDocumentText()
    steps = text.ListStyle(name="Steps")
    steps.addElement(text.ListLevelStyleNumber(level=1, numformat="1", numsuffix="."))
    steps.addElement(text.ListLevelStyleNumber(level=2, numformat="a", numprefix="(",
                                               numsuffix=")"))
    steps.addElement(text.ListLevelStyleBullet(level=3, bulletchar="•"))
    roman = text.ListStyle(name="Roman")
    roman.addElement(text.ListLevelStyleNumber(level=1, numformat="I", numsuffix=".",
                                               startvalue=4))
    document.automaticstyles.addElement(steps)
    document.automaticstyles.addElement(roman)
    outer = _items(["Download the image.", "Verify it."], stylename="Steps")
    inner = _items(["the checksum", "the signature"])
    inner.childNodes[1].addElement(_items(["with gpg"]))
    outer.childNodes[1].addElement(inner)
    second = text.P(text="Keep the receipt.")
    outer.childNodes[1].addElement(second)
    document.text.addElement(outer)
    document.text.addElement(text.P(text="Step 2 must finish before step 3."))
    document.text.addElement(_items(["Install it."], stylename="Steps", continuenumbering="true"))
    restarted = _items(["Start over."], stylename="Steps")
    restarted.childNodes[0].setAttribute("startvalue", "7")
    document.text.addElement(restarted)
    document.text.addElement(_items(["Fourth part."], stylename="Roman"))
    extracted = ODT.extract(saved(document), "steps")
    assert extracted.canonical_text == (
        "1. Download the image.\n2. Verify it.\n  (a) the checksum\n  (b) the signature\n"
        "    - with gpg\n   Keep the receipt.\n\nStep 2 must finish before step 3.\n\n"
        "3. Install it.\n\n7. Start over.\n\nIV. Fourth part.\n")


def test_a_paragraph_in_the_title_style_titles_the_document_as_in_docx():
    """Found by a check of files LibreOffice wrote: with no title in the file's properties, the
    ODT was titled by its first heading, its Title paragraph a chunk of that heading's section;
    the DOCX and PDF of it were titled by the Title paragraph."""
    from odf import style

    document = OpenDocumentText()
    document.styles.addElement(style.Style(name="Title", family="paragraph"))
    document.automaticstyles.addElement(style.Style(name="P1", family="paragraph",
                                                    parentstylename="Title"))
    document.text.addElement(text.P(stylename="P1", text="Gateway  Handbook"))
    document.text.addElement(text.H(outlinelevel=1, text="Purpose"))
    document.text.addElement(text.P(text="How the gateways are run."))
    extracted = ODT.extract(saved(document), "handbook")
    assert extracted.title == "Gateway Handbook"
    assert extracted.canonical_text == "Gateway Handbook\n\nPurpose\n\nHow the gateways are run.\n"
    assert extracted.sections == (Section("Purpose", 27, 52, 1),)


def test_a_subtitle_based_on_the_title_style_is_a_paragraph_under_the_title():
    """Found by a check of files LibreOffice wrote: a template's Subtitle based on Title was a
    second title, a heading over nothing, its words in no chunk."""
    from odf import style

    document = OpenDocumentText()
    document.styles.addElement(style.Style(name="Title", family="paragraph"))
    document.styles.addElement(style.Style(name="Subtitle", family="paragraph",
                                           parentstylename="Title"))
    document.automaticstyles.addElement(style.Style(name="P2", family="paragraph",
                                                    parentstylename="Subtitle"))
    document.text.addElement(text.P(stylename="Title", text="Gateway Handbook"))
    document.text.addElement(text.P(stylename="P2", text="Edition 2026"))
    document.text.addElement(text.H(outlinelevel=1, text="Purpose"))
    document.text.addElement(text.P(text="How the gateways are run."))
    extracted = ODT.extract(saved(document), "handbook")
    assert extracted.title == "Gateway Handbook"
    text_ = extracted.canonical_text
    assert [(s.title, text_[s.start:s.end].strip()) for s in extracted.sections] == [
        ("Gateway Handbook", "Edition 2026"), ("Purpose", "How the gateways are run.")]


def test_odt_list_numbers_follow_libreoffice_on_levels_ids_letters_and_headers():
    """Found by a check against LibreOffice's own rendering: ``1.1.`` shown as ``1.``, a list
    continuing another by its id counted on from the last list of its style, letters past z
    as ``aa, bb``, and an item holding only a nested list taking a number."""
    document = OpenDocumentText()
    legal = text.ListStyle(name="Legal")
    legal.addElement(text.ListLevelStyleNumber(level=1, numformat="1", numsuffix="."))
    legal.addElement(text.ListLevelStyleNumber(level=2, numformat="1", numsuffix=".",
                                               displaylevels=2))
    letters = text.ListStyle(name="Letters")
    letters.addElement(text.ListLevelStyleNumber(level=1, numformat="a", numsuffix="."))
    document.automaticstyles.addElement(legal)
    document.automaticstyles.addElement(letters)
    outer = _items(["One.", "Two."], stylename="Legal")
    outer.childNodes[0].addElement(_items(["One one."]))
    only_nested = text.ListItem()  # holds a nested list alone: no number of its own
    only_nested.addElement(_items(["Two one."]))
    outer.insertBefore(only_nested, outer.childNodes[1])
    header = text.ListHeader()
    header.addElement(text.P(text="Steps:"))
    outer.insertBefore(header, outer.childNodes[0])
    outer.setAttribute("id", "first")
    document.text.addElement(outer)
    document.text.addElement(_items(["Another list."], stylename="Legal"))
    document.text.addElement(_items(["Three, by the first's id."], stylename="Legal",
                                    continuelist="first"))
    document.text.addElement(_items([f"Item {n}." for n in range(1, 29)], stylename="Letters"))
    extracted = ODT.extract(saved(document), "lists")
    lines = extracted.canonical_text.splitlines()
    assert lines[:10] == ["Steps:", "1. One.", "  1.1. One one.", "  1.2. Two one.", "2. Two.", "",
                          "1. Another list.", "", "3. Three, by the first's id.", ""]
    assert lines[-3:] == ["z. Item 26.", "aa. Item 27.", "ab. Item 28."]


@pytest.mark.parametrize("level", ["0", "x", "-2"])
def test_a_heading_whose_level_is_no_count_is_a_top_level_heading(level: str):
    """Found by a new user: Debian's live manual (SiSU) has two headings at outline level 0,
    which ODF does not allow, and the whole 93 KB manual failed as damaged."""
    document = OpenDocumentText()
    document.text.addElement(text.H(outlinelevel=level, text="Live systems"))
    document.text.addElement(text.P(text="A live system boots from removable media."))
    document.text.addElement(text.H(outlinelevel="2", text="Tools"))
    document.text.addElement(text.P(text="live-build makes the image."))
    extracted = ODT.extract(saved(document), "live")
    assert [(s.title, s.level) for s in extracted.sections] == [("Live systems", 1),
                                                               ("Tools", 2)]


def test_an_odt_cell_spanning_rows_leaves_an_empty_place_below_it():
    document = OpenDocumentText()
    grid = table.Table(name="Rota")
    header = table.TableRow()
    for value in ("Site", "Lead", "Hours"):
        header.addElement(cell(value))
    grid.addElement(header)
    first = table.TableRow()
    first.addElement(cell("Delta", numberrowsspanned=2))  # one cell over two rows
    first.addElement(cell("Ada"))
    first.addElement(cell("6"))
    grid.addElement(first)
    second = table.TableRow()
    second.addElement(table.CoveredTableCell())  # the place the cell above covers
    second.addElement(cell("Bo"))
    second.addElement(cell("2"))
    grid.addElement(second)
    document.text.addElement(grid)
    extracted = ODT.extract(saved(document), "rota")
    assert extracted.canonical_text == "Site | Lead | Hours\nDelta | Ada | 6\n | Bo | 2\n"
    assert extracted.tables == (TableSpan(0, 45, "Site | Lead | Hours", 19, (20, 36)),)


def test_a_long_odt_table_keeps_its_header_in_every_chunk():
    document = OpenDocumentText()
    document.text.addElement(text.H(outlinelevel=1, text="Shifts"))
    document.text.addElement(text.P(text="Who works where."))
    document.text.addElement(odf_grid([SHIFT_HEADERS, *shift_rows()]))
    extracted = ODT.extract(saved(document), "shifts")
    (span,) = extracted.tables
    canonical = extracted.canonical_text
    assert canonical[span.start:span.header_end] == span.header == "Site | Lead | Duration"
    assert len(span.rows) == 60
    assert canonical[span.rows[59]:span.end] == "Delta flats 60 | Tomas Ruiz | 60 hours"
    chunked_under_header("shifts.odt", extracted)


def test_an_odt_table_with_blank_rows_leaves_them_out_of_its_rows():
    document = OpenDocumentText()
    document.text.addElement(odf_grid([["K", "V"], ["", ""], ["a", "1"]]))
    extracted = ODT.extract(saved(document), "t")
    assert extracted.canonical_text == "K | V\na | 1\n"
    assert extracted.tables == (TableSpan(0, 11, "K | V", 5, (6,)),)


def frame_of(kind: str) -> draw.Frame:
    frame = draw.Frame()
    frame.setAttrNS(PRESENTATIONNS, "class", kind)
    return frame


def titled_page(title: str) -> draw.Page:
    """A slide holding a title frame."""
    page = draw.Page(name="page1", masterpagename="")
    frame = frame_of("title")
    box = draw.TextBox()
    box.addElement(text.P(text=title))
    frame.addElement(box)
    page.addElement(frame)
    return page


def deck() -> bytes:
    document = OpenDocumentPresentation()
    for number, (title, body, notes) in enumerate([("Plan", "Three sites", "Say hello"),
                                                   ("", "Questions?", "")], start=1):
        page = draw.Page(name=f"page{number}", masterpagename="")
        if title:
            frame = frame_of("title")
            box = draw.TextBox()
            box.addElement(text.P(text=title))
            frame.addElement(box)
            page.addElement(frame)
        frame = frame_of("outline")
        box = draw.TextBox()
        box.addElement(text.P(text=body))
        frame.addElement(box)
        page.addElement(frame)
        if notes:
            holder = presentation.Notes()
            frame = frame_of("notes")
            box = draw.TextBox()
            box.addElement(text.P(text=notes))
            frame.addElement(box)
            holder.addElement(frame)
            page.addElement(holder)
        document.presentation.addElement(page)
    return saved(document)


def test_odp_slides_with_titles_notes_and_slide_anchors():
    extracted = ODP.extract(deck(), "deck")
    assert extracted.canonical_text == "Plan\n\nThree sites\n\nNotes: Say hello\n\nSlide 2\n\nQuestions?\n"
    assert extracted.title == "Plan"
    assert extracted.sections == (Section("Plan", 6, 35), Section("Slide 2", 46, 56))
    assert extracted.anchors == (Anchor(0, 35, "slide=1"), Anchor(37, 56, "slide=2"))
    assert [extracted.canonical_text[a.start:a.end] for a in extracted.anchors] == [
        "Plan\n\nThree sites\n\nNotes: Say hello", "Slide 2\n\nQuestions?"]
    assert ODP.fragment(extracted.anchors, 40, 50) == "#slide=2"


def test_the_page_number_and_date_placeholders_of_a_slide_and_its_notes_are_left_out():
    """Found by a check of decks LibreOffice converted from PowerPoint: every slide's notes
    ended in ``<number>``, the notes page's slide-number placeholder."""

    def boxed(kind: str, words: str) -> draw.Frame:
        frame = frame_of(kind)
        box = draw.TextBox()
        box.addElement(text.P(text=words))
        frame.addElement(box)
        return frame

    document = OpenDocumentPresentation()
    page = titled_page("Plan")
    page.addElement(boxed("date-time", "<date/time>"))
    page.addElement(boxed("footer", "Field team"))
    notes = presentation.Notes()
    notes.addElement(boxed("notes", "Say hello."))
    notes.addElement(boxed("page-number", "<number>"))
    page.addElement(notes)
    document.presentation.addElement(page)
    extracted = ODP.extract(saved(document), "deck")
    assert extracted.canonical_text == "Plan\n\nField team\n\nNotes: Say hello.\n"


def test_an_odp_slide_of_a_title_alone_is_a_section_of_its_title():
    # Found by a team's decks: a section divider's words were in no chunk.
    document = OpenDocumentPresentation()
    document.presentation.addElement(titled_page("Part two: the Lisbon offsite"))
    extracted = ODP.extract(saved(document), "deck")
    assert extracted.canonical_text == "Part two: the Lisbon offsite\n"
    assert extracted.sections == (Section("Part two: the Lisbon offsite", 0, 28),)


def chart_object(title: str, rows: list[list[str]]) -> OpenDocumentChart:
    """A chart as LibreOffice keeps one in a deck or a text: its title and its data in the
    ``local-table``, the first row the series' names under an empty corner cell."""
    document = OpenDocumentChart()
    made = chart.Chart(attributes={"class": "chart:bar"})
    heading = chart.Title()
    heading.addElement(text.P(text=title))
    made.addElement(heading)
    made.addElement(chart.PlotArea())
    made.addElement(odf_grid(rows, name="local-table"))
    document.chart.addElement(made)
    return document


def sheet_object(rows: list[list[str]]) -> OpenDocumentSpreadsheet:
    document = OpenDocumentSpreadsheet()
    document.spreadsheet.addElement(odf_grid(rows, name="Sheet1"))
    return document


def test_a_chart_or_a_spreadsheet_embedded_on_a_slide_or_a_page_is_read_after_its_block():
    # As LibreOffice's: each object a package of its own ("Object 1/content.xml"); odfpy's
    # tests/examples/emb_spreadsheet.odp lost its table without a word.
    document = OpenDocumentPresentation()
    page = titled_page("Results")
    for made in (chart_object("Revenue", [["", "2024", "2025"], ["North", "10", "12"],
                                          ["South", "7", "9"]]),
                 sheet_object([["Site", "Staff"], ["Lyon", "40"], ["", ""]])):
        holder = draw.Frame()
        holder.addElement(draw.Object(href=document.addObject(made)))
        page.addElement(holder)
    document.presentation.addElement(page)
    extracted = ODP.extract(saved(document), "results")
    assert extracted.canonical_text == (
        "Results\n\nChart: Revenue\n\nCategory | 2024 | 2025\nNorth | 10 | 12\nSouth | 7 | 9"
        "\n\nSite | Staff\nLyon | 40\n")
    assert extracted.notes == (("slides", "1"),)
    assert [(t.header, len(t.rows)) for t in extracted.tables] == [
        ("Category | 2024 | 2025", 2), ("Site | Staff", 1)]
    odt = OpenDocumentText()
    paragraph = text.P(text="Sales by quarter:")
    holder = draw.Frame()
    holder.addElement(draw.Object(href=odt.addObject(chart_object("", [["", "Sales"], ["Q1", "5"]]))))
    paragraph.addElement(holder)
    odt.text.addElement(paragraph)
    odt.text.addElement(text.P(text="After the chart."))
    extracted = ODT.extract(saved(odt), "report")
    assert extracted.canonical_text == (
        "Sales by quarter:\n\nChart\n\nCategory | Sales\nQ1 | 5\n\nAfter the chart.\n")
    assert extracted.notes == ()


def test_an_object_that_is_not_read_is_counted_as_left_out():
    # A drawing (its own kind of package), an OLE object, and an object whose folder the
    # package does not hold: counted, never dropped unsaid.
    document = OpenDocumentPresentation()
    page = titled_page("Embedded")
    for href in (document.addObject(OpenDocumentDrawing()), "./Object 9"):
        holder = draw.Frame()
        holder.addElement(draw.Object(href=href))
        page.addElement(holder)
    holder = draw.Frame()
    holder.addElement(draw.ObjectOle(href="./Object 8"))
    page.addElement(holder)
    document.presentation.addElement(page)
    extracted = ODP.extract(saved(document), "emb")
    assert extracted.canonical_text == "Embedded\n"
    assert extracted.notes == (("slides", "1"), ("embedded_objects_left_out", "3"))
    assert left_out(extracted.notes) == [
        "3 embedded object(s) no reader here reads (a formula, a drawing, an OLE object) left out"]


def test_hidden_odp_slides_and_ods_sheets_are_read_and_counted():
    from odf import style

    document = OpenDocumentPresentation()
    hiding = style.Style(name="dp2", family="drawing-page")
    hiding.addElement(style.DrawingPageProperties(visibility="hidden"))
    document.automaticstyles.addElement(hiding)
    for number, words in enumerate(["Shown plan", "Hidden budget: 40k"], start=1):
        # Planted: slide 2's page style hides it; its text is still the deck's.
        page = draw.Page(name=f"page{number}", masterpagename="",
                         **({"stylename": hiding} if number == 2 else {}))
        frame = frame_of("outline")
        box = draw.TextBox()
        box.addElement(text.P(text=words))
        frame.addElement(box)
        page.addElement(frame)
        document.presentation.addElement(page)
    extracted = ODP.extract(saved(document), "deck")
    assert "Hidden budget: 40k" in extracted.canonical_text
    assert extracted.notes == (("slides", "2"), ("hidden_slides", "1"))
    assert [s.title for s in extracted.sections] == ["Slide 1", "Slide 2 (hidden slide)"]

    workbook = OpenDocumentSpreadsheet()
    hidden = style.Style(name="ta2", family="table")
    hidden.addElement(style.TableProperties(display="false"))
    workbook.automaticstyles.addElement(hidden)
    for name, styled in [("Open", None), ("Secret", hidden), ("Blank", hidden)]:
        sheet = table.Table(name=name, **({"stylename": styled} if styled else {}))
        if name != "Blank":  # Planted: a hidden sheet holding nothing is not counted
            row = table.TableRow()
            row.addElement(cell(f"{name} rates"))
            sheet.addElement(row)
        workbook.spreadsheet.addElement(sheet)
    extracted = ODS.extract(saved(workbook), "rates")
    assert extracted.canonical_text == "Open rates\n\nSecret rates\n"
    assert [s.title for s in extracted.sections] == ["Open", "Secret (hidden)"]
    assert extracted.notes == (("sheets", "2"), ("rows", "0"), ("empty_sheets", "1"),
                               ("hidden_sheets", "1"))


def test_an_odp_table_is_declared_on_its_slide():
    document = OpenDocumentPresentation()
    page = titled_page("Hours")
    frame = draw.Frame()
    frame.addElement(odf_grid([["Site", "Hours"], ["Delta flats", "6"]]))
    page.addElement(frame)
    document.presentation.addElement(page)
    extracted = ODP.extract(saved(document), "deck")
    assert extracted.canonical_text == "Hours\n\nSite | Hours\nDelta flats | 6\n"
    assert extracted.sections == (Section("Hours", 7, 35),)
    assert extracted.tables == (TableSpan(7, 35, "Site | Hours", 19, (20,)),)


def test_odp_text_held_by_shapes_is_read():
    # Impress keeps a text drawn as a shape in draw:custom-shape (no frame, no text box), and a
    # grouped rectangle inside draw:g: both were left out, and a deck of such slides was "empty".
    document = OpenDocumentPresentation()
    page = draw.Page(name="page1", masterpagename="")
    shape = draw.CustomShape()
    shape.addElement(text.P(text="11 Lorem ipsum dolor sit amet."))
    shape.addElement(text.P(text=""))
    page.addElement(shape)
    group = draw.G()
    rect = draw.Rect(width="5cm", height="2cm", x="1cm", y="4cm")
    rect.addElement(text.P(text="Col 3"))
    group.addElement(rect)
    page.addElement(group)
    document.presentation.addElement(page)
    extracted = ODP.extract(saved(document), "cols")
    assert extracted.canonical_text == "Slide 1\n\n11 Lorem ipsum dolor sit amet.\n\nCol 3\n"
    assert extracted.anchors == (Anchor(0, 46, "slide=1"),)


def test_an_odt_cross_reference_keeps_the_text_it_shows():
    # odfpy's own API manual lists elements as cross-references: "These elements contain
    # text.SenderPosition: text.A, text.H." read as "... text.SenderPosition: , ." before.
    document = OpenDocumentText()
    paragraph = text.P(text="These elements contain text.SenderPosition: ")
    paragraph.addElement(text.BookmarkRef(referenceformat="text", refname="text.A", text="text.A"))
    paragraph.addText(", ")
    paragraph.addElement(text.BookmarkRef(referenceformat="text", refname="text.H", text="text.H"))
    paragraph.addText(".")
    document.text.addElement(paragraph)
    extracted = ODT.extract(saved(document), "api")
    assert extracted.canonical_text == "These elements contain text.SenderPosition: text.A, text.H.\n"


def test_an_odt_page_anchored_shape_is_read():
    document = OpenDocumentText()
    shape = draw.CustomShape(anchortype="page")
    shape.addElement(text.P(text="Draft for the board"))
    document.text.addElement(shape)
    document.text.addElement(text.P(text="Minutes of the meeting."))
    extracted = ODT.extract(saved(document), "minutes")
    assert extracted.canonical_text == "Draft for the board\n\nMinutes of the meeting.\n"


def _generated(element, name: str, title: str | None, lines: list[str]):
    """An ODT index (``element``: a table of contents, a bibliography...) as a word processor
    writes it: its body, an index title, and one paragraph per line."""
    index = element(name=name)
    body = text.IndexBody()
    if title is not None:
        heading = text.IndexTitle(name=f"{name}_Head")
        heading.addElement(text.P(text=title))
        body.addElement(heading)
    for line in lines:
        body.addElement(text.P(text=line))
    index.addElement(body)
    return index


def test_an_odt_table_of_contents_is_counted_left_out_and_its_bibliography_read():
    document = OpenDocumentText()
    document.text.addElement(_generated(text.TableOfContent, "Table of Contents1", "Contents",
                                        ["Installation\t3"]))
    document.text.addElement(text.H(outlinelevel=1, text="Installation"))
    document.text.addElement(text.P(text="Run the installer [KNU97]."))
    document.text.addElement(_generated(text.AlphabeticalIndex, "Alphabetical Index1", None,
                                        ["installer, 3"]))
    document.text.addElement(_generated(
        text.Bibliography, "Bibliography1", "Bibliography",
        ["KNU97: Knuth, The Art of Computer Programming, 1997"]))
    extracted = ODT.extract(saved(document), "guide")
    assert extracted.canonical_text == (
        "Installation\n\nRun the installer [KNU97].\n\nBibliography\n\n"
        "KNU97: Knuth, The Art of Computer Programming, 1997\n")
    assert dict(extracted.notes)["indexes_left_out"] == "2"


def workbook() -> bytes:
    document = OpenDocumentSpreadsheet()
    sheet = table.Table(name="Hours 2024")
    title = table.TableRow()
    title.addElement(cell("Field hours", numbercolumnsspanned=3))  # merged over A1:C1
    title.addElement(table.CoveredTableCell(numbercolumnsrepeated=2))
    sheet.addElement(title)
    sheet.addElement(table.TableRow(numberrowsrepeated=2))  # two blank rows: numbered, not read
    for values in (["Site", "Lead", "Hours"], ["Delta flats", "", "6"]):
        row = table.TableRow()
        for value in values:
            row.addElement(cell(value))
        sheet.addElement(row)
    comment = office.Annotation()
    comment.addElement(text.P(text="check with Ana"))
    row.childNodes[2].addElement(comment)  # a reviewer's comment is not the cell's text
    repeated = table.TableRow(numberrowsrepeated=2)  # Planted: one row element, two rows
    repeated.addElement(cell("", numbercolumnsrepeated=1))
    repeated.addElement(cell("Ana Li"))
    sheet.addElement(repeated)
    sheet.addElement(table.TableRow(numberrowsrepeated=1_048_000))  # an empty tail: never expanded
    document.spreadsheet.addElement(sheet)
    document.spreadsheet.addElement(table.Table(name="Empty"))
    return saved(document)


def test_ods_sheets_rows_under_their_header_with_cell_ranges():
    extracted = ODS.extract(workbook(), "hours")
    assert extracted.canonical_text == ("Field hours\n"
                                        "Site | Lead | Hours\n"
                                        "Site: Delta flats | Hours: 6\n"
                                        "Lead: Ana Li\n"
                                        "Lead: Ana Li\n")
    assert [a.locator for a in extracted.anchors] == [
        "sheet=Hours%202024&range=A1:C1", "sheet=Hours%202024&range=A4:C4",
        "sheet=Hours%202024&range=A5:C5", "sheet=Hours%202024&range=B6:B6",
        "sheet=Hours%202024&range=B7:B7"]
    assert extracted.sections == (Section("Hours 2024", 0, 86),)
    assert extracted.notes == (("sheets", "1"), ("rows", "3"), ("empty_sheets", "1"),
                               ("comments_left_out", "1"))
    assert ODS.fragment(extracted.anchors, 35, 86) == "#sheet=Hours%202024&range=A5:C7"


@pytest.mark.parametrize(("fmt", "kind"), [(ODT, "ODT"), (ODP, "ODP"), (ODS, "ODS")])
def test_a_broken_package_fails_with_its_reason(fmt, kind):
    with pytest.raises(ExtractionError, match=f"^unreadable {kind}: BadZipFile: File is not a zip file$"):
        fmt.extract(b"plain bytes", "broken")


def test_another_kind_under_the_suffix_fails_with_its_reason():
    with pytest.raises(ExtractionError, match="^unreadable ODS: the file is an OpenDocument text "
                                              "under another name: rename it .odt$"):
        ODS.extract(report(), "mislabelled")
    # Without the mimetype member that names its kind, its body says it.
    unnamed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(report())) as archive, zipfile.ZipFile(unnamed, "w") as out:
        for member in archive.infolist():
            if member.filename != "mimetype":
                out.writestr(member, archive.read(member))
    with pytest.raises(ExtractionError, match="^unreadable ODS: content.xml has no office:spreadsheet body"):
        ODS.extract(unnamed.getvalue(), "mislabelled")


def test_odt_headers_and_footers_close_the_text_once_each_and_comments_are_counted():
    from odf import style

    document = OpenDocumentText()
    layout = style.PageLayout(name="pm1")
    document.automaticstyles.addElement(layout)
    for name, header_text, footer_text in (("Standard", "Register kept by Oskar Berg", "4417"),
                                           ("First", "Register kept by Oskar Berg",
                                            "Broken keycard? Call extension 4417"),
                                           ("Unused", "A template's page style", "never shown")):
        master = style.MasterPage(name=name, pagelayoutname=layout)
        header, footer = style.Header(), style.Footer()
        header.addElement(text.P(text=header_text))
        footer.addElement(text.P(text=footer_text))  # a number alone: left out
        master.addElement(header)
        master.addElement(footer)
        document.masterstyles.addElement(master)
    opening = style.Style(name="Opening", family="paragraph", masterpagename="First")
    document.automaticstyles.addElement(opening)
    paragraph = text.P(stylename=opening, text="Rooms are booked a day ahead.")
    comment = office.Annotation()
    comment.addElement(text.P(text="is a day enough?"))
    paragraph.addElement(comment)
    document.text.addElement(paragraph)
    extracted = ODT.extract(saved(document), "register")
    assert extracted.canonical_text == ("Rooms are booked a day ahead.\n\n"
                                        "Header: Register kept by Oskar Berg\n"
                                        "Footer: Broken keycard? Call extension 4417\n")
    assert extracted.sections == (Section("register", 0, 29),
                                  Section("Page headers and footers", 31, 110))
    assert extracted.notes == (("comments_left_out", "1"),)


def _paragraph_with_spaces(count: str) -> bytes:
    document = OpenDocumentText()
    paragraph = text.P(text="Before")
    paragraph.addElement(text.S(c=count))
    paragraph.addText("after.")
    document.text.addElement(paragraph)
    return saved(document)


def test_a_lines_indentation_after_a_line_break_is_kept_as_libreoffice_writes_it():
    """Found by a check of files LibreOffice wrote: four spaces after a line break, written as
    a space and ``<text:s text:c="3"/>``, were read as three (code in a document re-indented)."""
    document = OpenDocumentText()
    paragraph = text.P(text="  for unit in proxy metrics; do")  # leading blanks: none, by ODF
    paragraph.addElement(text.LineBreak())
    paragraph.addText(" ")
    paragraph.addElement(text.S(c="3"))
    paragraph.addText('systemctl restart "$unit"   ')
    paragraph.addElement(text.LineBreak())
    paragraph.addText("done")
    document.text.addElement(paragraph)
    extracted = ODT.extract(saved(document), "script")
    assert extracted.canonical_text == ('for unit in proxy metrics; do\n    systemctl restart "$unit"\n'
                                        "done\n")


def test_a_line_break_in_a_list_item_starts_a_line_under_the_items_first():
    """Found by a check of files LibreOffice wrote: a list item's line breaks (an address, a
    command and its output) read as spaces, its lines run together."""
    document = OpenDocumentText()
    steps = text.ListStyle(name="Steps")
    steps.addElement(text.ListLevelStyleNumber(level=1, numformat="1", numsuffix="."))
    document.automaticstyles.addElement(steps)
    for style in ("Steps", None):
        listed = text.List(stylename=style) if style else text.List()
        item = text.ListItem()
        paragraph = text.P(text="Send it to:")
        paragraph.addElement(text.LineBreak())
        paragraph.addText("Field Office,")
        paragraph.addElement(text.LineBreak())
        paragraph.addText("  12 Delta Road")
        item.addElement(paragraph)
        listed.addElement(item)
        document.text.addElement(listed)
    extracted = ODT.extract(saved(document), "letters")
    assert extracted.canonical_text == (
        "1. Send it to:\n   Field Office,\n   12 Delta Road\n\n"
        "- Send it to:\n  Field Office,\n  12 Delta Road\n")


def test_kept_spaces_are_at_most_max_spaces():
    """Found by an attack: 300,000,000 kept spaces in a 406-byte file took the run to 10 GB."""
    from rag_pipeline.core.ingest.formats.odf import MAX_SPACES

    extracted = ODT.extract(_paragraph_with_spaces("300000000"), "spaces")
    assert extracted.canonical_text == "Before" + " " * MAX_SPACES + "after.\n"


@pytest.mark.parametrize("count", ["abc", "0", "-3", "½"])
def test_a_count_that_is_no_count_fails_with_its_reason(count: str):
    with pytest.raises(ExtractionError) as failed:
        ODT.extract(_paragraph_with_spaces(count), "spaces")
    assert str(failed.value) == (f'the attribute text:c="{count}" is not a count of at least 1: '
                                 "the file is damaged")


def test_rows_repeated_past_max_repeat_are_counted_as_left_out():
    """A row repeated 1,500 times was read 1,000 times and said nothing of the 500 others."""
    from rag_pipeline.core.ingest.extracted import left_out

    document = OpenDocumentSpreadsheet()
    sheet = table.Table(name="Reviews")
    for values, repeated in ((["Item", "State"], 1), (["review", "pending"], 1500),
                             (["last", "done"], 1)):
        row = table.TableRow(numberrowsrepeated=repeated)
        for value in values:
            row.addElement(cell(value))
        sheet.addElement(row)
    document.spreadsheet.addElement(sheet)
    extracted = ODS.extract(saved(document), "reviews")
    assert extracted.canonical_text.count("pending") == 1000
    assert extracted.canonical_text.endswith("Item: last | State: done\n")
    assert left_out(extracted.notes) == [
        "500 copies of repeated rows or cells left out (past the 1,000th copy, or past 1,000,000 "
        "characters of copies a document)"]


def test_an_odt_tables_repeated_rows_are_read_as_copies_and_a_nested_table_once():
    # Found by an attack: a row LibreOffice writes once for three identical ones
    # (`number-rows-repeated="3"`) was read once, without a note; a nested table's rows were
    # read twice (in its cell's text and as rows of their own).
    document = OpenDocumentText()
    stock = table.Table(name="Stock")
    for values, repeated in ((["Item", "Qty"], 1), (["Widget", "5"], 3), (["Spare", "1"], 1500),
                             (["", ""], 100_000), (["Gadget", "7"], 1)):
        row = table.TableRow(numberrowsrepeated=repeated)
        for value in values:
            row.addElement(cell(value))
        stock.addElement(row)
    inner = table.Table(name="Inner")
    inner_row = table.TableRow()
    inner_row.addElement(cell("nested"))
    inner.addElement(inner_row)
    holder = table.TableCell()
    holder.addElement(inner)
    last = table.TableRow()
    last.addElement(cell("Box"))
    last.addElement(holder)
    stock.addElement(last)
    document.text.addElement(stock)
    extracted = ODT.extract(saved(document), "stock")
    assert extracted.canonical_text.count("Widget | 5\n") == 3
    assert extracted.canonical_text.count("Spare | 1\n") == 1000
    assert extracted.canonical_text.endswith("Spare | 1\nGadget | 7\nBox | nested\n")
    assert left_out(extracted.notes) == [
        "500 copies of repeated rows or cells left out (past the 1,000th copy, or past 1,000,000 "
        "characters of copies a document)"]
    assert len(extracted.tables) == 1


def test_copies_of_repeated_cells_and_rows_add_at_most_max_copied_chars_a_document():
    # Found by a second attack: an 800-byte ODT, a 1,000-character cell repeated 1,000 times
    # across and its row 1,000 times down, expanded to 1 GB of text (2.9 GB, 35 s).
    from rag_pipeline.core.ingest.formats.odf import MAX_COPIED_CHARS

    long = "x" * 999 + "."
    for fmt, document in ((ODT, OpenDocumentText()), (ODS, OpenDocumentSpreadsheet())):
        grid = table.Table(name="Grid")
        header = table.TableRow()
        header.addElement(cell("Note"))
        grid.addElement(header)
        row = table.TableRow(numberrowsrepeated=1000)
        row.addElement(cell(long, numbercolumnsrepeated=1000))
        grid.addElement(row)
        (document.text if fmt is ODT else document.spreadsheet).addElement(grid)
        extracted = fmt.extract(saved(document), "grid")
        # The row: the cell and 999 copies (999,000 characters of copies); no copy of the
        # 1,000,000-character row fits: it is read once, its 999 copies left out.
        assert extracted.canonical_text.count(long) == 1000
        assert dict(extracted.notes)["repeats_left_out"] == "999"
        assert len(extracted.canonical_text) < 2 * MAX_COPIED_CHARS


def test_a_filled_cell_past_the_last_column_a_sheet_has_fails_the_document():
    """Found by a second attack: an empty cell repeated a million times before one filled
    cell, in 600 rows of a 927-byte file, took 9.3 GB."""
    document = OpenDocumentSpreadsheet()
    sheet = table.Table(name="Wide")
    row = table.TableRow(numberrowsrepeated=600)
    row.addElement(cell("", numbercolumnsrepeated=1_000_000))
    row.addElement(cell("x"))
    sheet.addElement(row)
    document.spreadsheet.addElement(sheet)
    with pytest.raises(ExtractionError) as failed:
        ODS.extract(saved(document), "wide")
    assert str(failed.value) == "a filled cell at column 1,000,001, past the 16,384 columns a sheet has"


def test_the_embedded_objects_of_a_document_share_one_cell_budget(monkeypatch):
    from rag_pipeline.core.ingest.formats import odf

    monkeypatch.setattr(odf, "MAX_SHEET_CELLS", 5)
    document = OpenDocumentPresentation()
    page = titled_page("Two sheets")
    for _ in range(2):
        holder = draw.Frame()
        holder.addElement(draw.Object(href=document.addObject(sheet_object([["a", "b", "c"]]))))
        page.addElement(holder)
    document.presentation.addElement(page)
    with pytest.raises(ExtractionError, match="^over 5 filled cells: the limit per document$"):
        ODP.extract(saved(document), "two")
