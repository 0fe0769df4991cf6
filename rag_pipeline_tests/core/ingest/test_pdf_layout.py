"""Tests for ``rag_pipeline.core.ingest.pdf_layout`` on hand-placed runs (points, top-left origin)."""

from __future__ import annotations

import dataclasses
import re

from rag_pipeline.core.ingest import Anchor, Section
from rag_pipeline.core.ingest.pdf_layout import HyphenBreak, lay_out
from rag_pipeline.core.ingest.pdf_pages import OutlineEntry, PageSource, PageText, TextRun


def run(page: int, text: str, x0: float, baseline: float, size: float = 10, x1: float | None = None,
        hyphen: bool = False, bold: bool = False) -> TextRun:
    width = x1 if x1 is not None else x0 + 5 * len(text)
    return TextRun(page, text, x0, width, baseline - size, baseline, size, bold=bold, hyphen=hyphen)


def page(index: int, *runs: TextRun) -> PageText:
    return PageText(index, 600, 800, runs)


def test_running_heads_and_page_numbers_are_dropped_and_counted():
    pages = [page(i, run(i, f"Chapter 1: Start {i + 3}", 50, 40), run(i, f"Body sentence {i}.", 50, 100),
                  run(i, str(i + 3), 300, 760)) for i in range(3)]
    layout = lay_out(pages, (), "", "doc")
    # Three heads (same shape, a number at one end) and three bare page numbers.
    assert layout.dropped_lines == 6
    assert layout.canonical_text == "Body sentence 0.\n\nBody sentence 1.\n\nBody sentence 2.\n"
    assert layout.anchors == (Anchor(0, 18, "page=1"), Anchor(18, 36, "page=2"), Anchor(36, 53, "page=3"))


def test_a_running_head_alone_on_a_blank_page_is_dropped():
    """Found on CFITSIO's manuals: the even page left blank before a chapter keeps its head
    ("12 CHAPTER 2. CREATING FITSIO/CFITSIO"), which stood alone in the text."""
    bodies = ["Files are opened first.", "", "Then the header is read.", "Columns come last."]
    pages = [page(i, run(i, f"{i + 11} CHAPTER 2. CREATING FITSIO", 50, 40),
                  *([run(i, body, 50, 100)] if body else [])) for i, body in enumerate(bodies)]
    layout = lay_out(pages, (), "", "doc")
    assert layout.dropped_lines == 4
    assert layout.canonical_text == (
        "Files are opened first.\n\nThen the header is read.\n\nColumns come last.\n")


def test_records_numbered_at_the_ends_of_pages_are_kept_where_their_numbers_follow_no_pages():
    """Found by an attack: a ledger's first and last record on each page (a number at one end,
    at the height where every page has one) were dropped as running heads, and so was a
    record repeating the shape of the one on the page before (``X33 ...``, ``X66 ...``)."""
    pages = [page(i, *[run(i, f"{1001 + 3 * i + n} Widget {n} price {9 * i + n}.50", 50, 100 + 14 * n)
                       for n in range(3)]) for i in range(4)]
    layout = lay_out(pages, (), "", "doc")
    assert layout.dropped_lines == 0
    assert re.findall(r"(\d+) Widget", layout.canonical_text) == [
        str(1001 + 3 * i + n) for i in range(4) for n in range(3)]
    heads = [page(i, run(i, f"Ledger {i + 7}", 50, 40), run(i, f"X{33 * i} thing price {9 * i}.50", 50, 100),
                  run(i, f"X{33 * i + 1} thing price {9 * i + 1}.50", 50, 114)) for i in range(4)]
    layout = lay_out(heads, (), "", "doc")
    assert layout.dropped_lines == 4  # "Ledger 7" to "Ledger 10" number the pages
    assert "Ledger" not in layout.canonical_text and layout.canonical_text.count("X") == 8


def test_a_running_head_of_the_section_and_a_repeating_chapter_is_dropped():
    """Found by a new user: sdccman's heads (``1.3. DOCUMENTATION`` left, ``CHAPTER 1.
    INTRODUCTION`` right, no page number) change with the section, so no row repeated whole:
    65 pages kept theirs, glued to the sentence before."""
    sections = ["1.1. ABOUT SDCC", "1.2. LICENSES", "1.2. LICENSES", "1.3. DOCUMENTATION"]
    pages = [page(i, run(i, head, 50, 40), run(i, "CHAPTER 1. INTRODUCTION", 400, 40),
                  run(i, f"Body text of page {'abcd'[i]} goes on", 50, 100),
                  run(i, "Its last row", 50, 130), run(i, ["apples", "pears", "plums", "figs"][i],
                                                       300, 130))
             for i, head in enumerate(sections)]
    layout = lay_out(pages, (), "", "doc")
    assert layout.dropped_lines == 4
    assert "CHAPTER" not in layout.canonical_text and "LICENSES" not in layout.canonical_text
    # A page's last row whose first part repeats is kept: a foot so made may be a page's total.
    assert layout.canonical_text.count("Its last row") == 4


def test_running_heads_numbered_first_on_left_pages_and_last_on_right_ones_are_all_dropped():
    heads = ["16 Bash Reference Manual", "Chapter 3: Basic Shell Features 17",
             "18 Bash Reference Manual", "Chapter 4: Shell Builtin Commands 19",
             "20 Bash Reference Manual", "Chapter 5: Shell Variables 21"]
    pages = [page(i, run(i, head, 50, 40),
                  run(i, f"Body text of page {'abcdef'[i]}.", 50, 100),
                  run(i, f"More of page {'abcdef'[i]}.", 50, 130)) for i, head in enumerate(heads)]
    layout = lay_out(pages, (), "", "doc")
    assert layout.dropped_lines == 6
    assert "Bash Reference" not in layout.canonical_text and "Chapter" not in layout.canonical_text


def test_a_front_matters_roman_page_numbers_are_running_heads():
    pages = [page(i, run(i, f"Guide {numeral}", 50, 40), run(i, f"Body sentence {letter}.", 50, 100),
                  run(i, f"More body text {letter}.", 50, 130)) for i, (numeral, letter) in enumerate(
        [("ii", "a"), ("iii", "b"), ("iv", "c"), ("v", "d")])]
    layout = lay_out(pages, (), "", "doc")
    assert layout.dropped_lines == 4
    assert "Guide" not in layout.canonical_text and layout.canonical_text.count("More body text") == 4


def test_a_table_header_repeated_on_each_page_stays_the_tables_header():
    """Found by an attack: the header row every page repeats was dropped as a running head,
    page 1's too, and the first data row became the header of every row."""
    def table_page(i: int) -> PageText:
        numbers = [3 * i + n for n in range(3)]
        rows = [("Code", "Product", "Stock"),
                *[(f"X{number}", f"Thing {number}", f"{7 * number} units") for number in numbers]]
        return page(i, *[run(i, cell, x, 100 + 14 * r) for r, row in enumerate(rows)
                         for cell, x in zip(row, (50, 150, 300), strict=True)])
    layout = lay_out([table_page(i) for i in range(3)], (), "", "doc")
    assert layout.dropped_lines == 0
    assert layout.canonical_text.split("\n")[:2] == ["Code | Product | Stock", "X0 | Thing 0 | 0 units"]
    assert [table.header for table in layout.tables] == ["Code | Product | Stock"]


def test_a_table_starting_with_a_row_like_the_others_has_no_header_row():
    """Found by a new user: a weather bulletin's station table stacks its column headings over
    three lines above the rows (no row of the table); its first station's readings became the
    header, printed as "table columns: Aosta ... | 14.1 | 6.3 | 0.0" over every other station."""
    stations = [("Aosta 580 m", "14.1", "6.3", "0.0"), ("Ayas 1566 m", "7.2", "-5.8", "0.0"),
                ("Cogne 1785 m", "4.3", "-3.8", "0.0"), ("Donnas 341 m", "2.1", "-1.2", "0.4")]
    rows = [run(0, cell, x, 100 + 14 * r) for r, row in enumerate(stations)
            for cell, x in zip(row, (50, 250, 320, 390), strict=True)]
    layout = lay_out([page(0, *rows)], (), "", "doc")
    assert layout.canonical_text.split("\n")[:2] == ["Aosta 580 m | 14.1 | 6.3 | 0.0",
                                                     "Ayas 1566 m | 7.2 | -5.8 | 0.0"]
    [table] = layout.tables
    assert (table.header, table.header_end, len(table.rows)) == ("", 0, 4)
    # Integer readings too, when they do not only rise across the row.
    rainfall = [("Cardiff", "21", "9", "14"), ("Aberdeen", "12", "15", "18"), ("York", "7", "3", "5")]
    layout = lay_out([page(0, *[run(0, cell, x, 100 + 14 * r) for r, row in enumerate(rainfall)
                                for cell, x in zip(row, (50, 250, 320, 390), strict=True)])], (), "", "doc")
    assert [t.header for t in layout.tables] == [""]
    # A header of years, counts or levels over numbers, or a bold one, stays the header (found
    # by an attack: `Threads | 1 | 2 | 4` over timings was taken for a row).
    # (a second attack: `1,000 | 10,000` quantity breaks and `3.11 | 3.12` versions too).
    for header in (("Threads", "1", "2"), ("Level", "90%", "95%"), ("Part", "1,000", "10,000"),
                   ("Benchmark", "3.11", "3.12")):
        rows = [header, ("read", "12.5", "7.25"), ("write", "20.0", "11.5")]
        layout = lay_out([page(0, *[run(0, cell, x, 100 + 14 * r) for r, row in enumerate(rows)
                                    for cell, x in zip(row, (50, 250, 320), strict=True)])], (), "", "doc")
        assert [t.header for t in layout.tables] == [" | ".join(header)]
    years = [("Region", "2019", "2020"), ("North", "12", "14"), ("South", "9", "11")]
    layout = lay_out([page(0, *[run(0, cell, x, 100 + 14 * r) for r, row in enumerate(years)
                                for cell, x in zip(row, (50, 250, 320), strict=True)])], (), "", "doc")
    assert [t.header for t in layout.tables] == ["Region | 2019 | 2020"]
    bold = [("Site", "1.5", "2.5"), ("North", "12.5", "14.5"), ("South", "9.5", "11.5")]
    layout = lay_out([page(0, *[run(0, cell, x, 100 + 14 * r, bold=r == 0) for r, row in enumerate(bold)
                                for cell, x in zip(row, (50, 250, 320), strict=True)])], (), "", "doc")
    assert [t.header for t in layout.tables] == ["Site | 1.5 | 2.5"]


def test_a_table_whose_first_row_is_worded_as_the_others_are_has_no_header_row():
    """Found by a new user: gri's paper sizes (no header row) were headed by the first size,
    ``letter | American "letter" size: 8.5 x 11 inches``, so ``legal`` was cited as row 1 and
    every row was shown under "table columns: letter | American ..."."""
    def table(rows: list[tuple[str, str]], bold_first: bool = False) -> list[TextRun]:
        return [run(0, cell, x, 100 + 14 * r, bold=bold_first and r == 0)
                for r, row in enumerate(rows) for cell, x in zip(row, (50, 150), strict=True)]

    sizes = [("letter", 'American "letter" size: 8.5 x 11 inches'),
             ("legal", 'American "legal" size: 8.5 x 14 inches'),
             ("A4", "metric A4 size: 210 x 297 mm"), ("A5", "metric A5 size: 148 x 210 mm")]
    [found] = lay_out([page(0, *table(sizes))], (), "", "gri").tables
    assert (found.header, len(found.rows)) == ("", 4)
    # A header without a digit over cells that have them stays the header (found by a
    # regression trial: xcolor's "Color | Definition/representation (pdftex driver)").
    colors = [("Color", "Definition/representation ( pdftex driver)"),
              ("MyGreen", "{0.92 0 0.87 0.09 k}{cmyk}"), ("MyBlue", "{0.5 0.5 1 0 k}{cmyk}"),
              ("MyRed", "{0 1 1 0.1 k}{cmyk}")]
    [found] = lay_out([page(0, *table(colors))], (), "", "xcolor").tables
    assert (found.header, len(found.rows)) == ("Color | Definition/representation ( pdftex driver)", 3)
    # A header of short labels over such rows, or a bold first row, stays the header.
    for rows, bold in (([("Size", "Meaning"), *sizes], False), (sizes, True)):
        [found] = lay_out([page(0, *table(rows, bold))], (), "", "gri").tables
        assert (found.header, len(found.rows)) == (" | ".join(rows[0]), len(rows) - 1)


def test_a_contents_page_is_dropped():
    contents = page(0, *[run(0, f"{n} Topic . . . . . . . . {n + 1}", 50, 100 + 14 * n) for n in range(5)])
    layout = lay_out([contents, page(1, run(1, "Text.", 50, 100))], (), "", "doc")
    assert (layout.toc_pages, layout.canonical_text) == ((1,), "Text.\n")
    # Found by a new user: sdccman's page numbers are runs of their own, after the leaders; its
    # five contents pages were 251 table rows, one ranked first for a question.
    apart = page(0, *[cell for n in range(5) for cell in (
        run(0, f"{n} Topic . . . . . . . .", 50, 100 + 14 * n), run(0, str(n + 1), 400, 100 + 14 * n))])
    layout = lay_out([apart, page(1, run(1, "Text.", 50, 100))], (), "", "doc")
    assert (layout.toc_pages, layout.canonical_text) == ((1,), "Text.\n")


def test_a_contents_block_on_a_page_of_other_text_is_dropped_and_its_headings_found_below():
    """Found by a check of a PDF LibreOffice wrote: its title page held the contents and the
    first chapter; the entries were read as the first paragraph, and the outline's first
    bookmark was placed at its entry, not at its heading."""
    runs = [run(0, "Handbook", 50, 60, size=20, bold=True),
            run(0, "Contents", 50, 90, size=14, bold=True),
            *[run(0, f"{title} . . . . . . . . {n + 1}", 50, 110 + 14 * n)
              for n, title in enumerate(["Purpose", "Restarting", "Inventory"])],
            run(0, "Purpose", 50, 170, size=16, bold=True), run(0, "Why it exists.", 50, 200),
            run(0, "Restarting", 50, 240, size=16, bold=True), run(0, "Drain it first.", 50, 270)]
    entries = (OutlineEntry("Purpose", 1, 0, None), OutlineEntry("Restarting", 1, 0, None))
    layout = lay_out([page(0, *runs), page(1, run(1, "Index", 50, 60, size=16, bold=True),
                                           run(1, "drain . . . . . 1", 50, 90),
                                           run(1, "purpose . . . . 1", 50, 104),
                                           run(1, "restart . . . . 1", 50, 118),
                                           run(1, "The end.", 50, 160))], entries, "", "doc")
    text = layout.canonical_text
    assert text == ("Handbook\n\nPurpose\n\nWhy it exists.\n\nRestarting\n\nDrain it first.\n\n"
                    "Index\n\nThe end.\n")
    assert layout.toc_pages == (1, 2)
    assert [(s.title, text[s.start:s.end].strip()) for s in layout.sections] == [
        ("Handbook", "Handbook"), ("Purpose", "Why it exists."),
        ("Restarting", "Drain it first.\n\nIndex\n\nThe end.")]


def test_a_sentence_over_a_page_break_is_one_paragraph():
    pages = [page(0, run(0, "The sentence starts", 50, 700)), page(1, run(1, "and ends here.", 50, 80))]
    layout = lay_out(pages, (), "", "doc")
    assert layout.canonical_text == "The sentence starts and ends here.\n"
    assert layout.anchors == (Anchor(0, 20, "page=1"), Anchor(20, 35, "page=2"))


def test_hyphens_follow_the_documents_own_words():
    lines = [("A fac", True), ("tor and a non", True), ("numeric value; non-numeric again.", False)]
    pages = [page(0, *[run(0, text, 50, 100 + 12 * i, hyphen=h) for i, (text, h) in enumerate(lines)])]
    layout = lay_out(pages, (), "", "doc")
    assert layout.canonical_text == "A factor and a non-numeric value; non-numeric again.\n"
    assert layout.hyphen_breaks == (HyphenBreak("factor", "fac-tor", False),
                                    HyphenBreak("nonnumeric", "non-numeric", True))


def test_two_columns_are_read_left_then_right():
    left = [run(0, text, 50, 100 + 12 * i, x1=280) for i, text in enumerate(["Left one", "left two."])]
    right = [run(0, text, 320, 100 + 12 * i, x1=550) for i, text in enumerate(["Right one", "right two."])]
    rows = [left[0], right[0], left[1], right[1], run(0, "Left three", 50, 124, x1=280),
            run(0, "Right three", 320, 124, x1=550)]
    layout = lay_out([page(0, *rows)], (), "", "doc")
    # Each column is one paragraph (no gap, same indent), the left one first.
    assert layout.canonical_text == "Left one left two. Left three\n\nRight one right two. Right three\n"


def test_outline_sections_start_after_their_heading():
    runs = [run(0, "1 Intro", 50, 80, size=16, bold=True), run(0, "Intro text.", 50, 110),
            run(0, "2 Next", 50, 150, size=16, bold=True), run(0, "Next text.", 50, 180)]
    entries = (OutlineEntry("Intro", 1, 0, 60.0), OutlineEntry("Next", 1, 0, 130.0))
    layout = lay_out([page(0, *runs)], entries, "Manual", "doc")
    text = layout.canonical_text
    assert text == "1 Intro\n\nIntro text.\n\n2 Next\n\nNext text.\n"
    assert layout.sections == (Section("Intro", 7, 22, 1), Section("Next", 28, 41, 1))
    assert [text[s.start:s.end].strip() for s in layout.sections] == ["Intro text.", "Next text."]


def test_capitals_and_compounds_and_underscores_at_line_ends():
    lines = [("TO THE EXTENT PER", True), ("MITTED BY LAW; the most-", False),
             ("recently-killed text of exec_", False), ("prefix.", False)]
    pages = [page(0, *[run(0, text, 50, 100 + 12 * i, hyphen=h) for i, (text, h) in enumerate(lines)])]
    layout = lay_out(pages, (), "", "doc")
    # Capitals join like lower case; a compound keeps its hyphen; an identifier broken after
    # its underscore is one word.
    assert layout.canonical_text == ("TO THE EXTENT PERMITTED BY LAW; the most-recently-killed text "
                                     "of exec_prefix.\n")
    assert layout.hyphen_breaks == (HyphenBreak("PERMITTED", "PER-MITTED", False),
                                    HyphenBreak("mostrecently-killed", "most-recently-killed", True))


def test_urls_broken_at_a_line_end_are_joined():
    lines = ["Report it at https://bugs.", "octave.org and read https://www.gnu.org/software/",
             "Texinfo first, or mail https://www.octave.org.", "The next sentence starts here."]
    pages = [page(0, *[run(0, text, 50, 100 + 12 * i) for i, text in enumerate(lines)])]
    # After "/" the URL goes on whatever follows; after "." only in lower case: the last URL
    # ends its sentence, so "The" is a new word.
    assert lay_out(pages, (), "", "doc").canonical_text == (
        "Report it at https://bugs.octave.org and read https://www.gnu.org/software/Texinfo first, "
        "or mail https://www.octave.org. The next sentence starts here.\n")


def test_an_ellipsis_of_spaced_dots_is_one_character():
    code = TextRun(0, "a = [1, 2, ...", 50, 120, 102, 112, 10, mono=True)
    pages = [page(0, run(0, "The outputs s1, . . ., sN are set. . . . . . . 12", 50, 100), code)]
    # TeX's spaced \dots is "…"; a typewriter "..." (Octave's continuation) and a dot leader
    # of more than three dots stay.
    assert lay_out(pages, (), "", "doc").canonical_text == (
        "The outputs s1, …, sN are set. . . . . . . 12\n\na = [1, 2, ...\n")


def superscripted_page(mark_size: float = 7) -> PageText:
    """Body lines 12 points apart; the second carries a footnote mark raised 4 points after
    "runs"; a footnote in 8-point type at the foot."""
    return page(0,
                run(0, "The first line of a paragraph that", 50, 100, x1=300),
                run(0, "goes on; a session runs", 50, 112, x1=170),
                run(0, "1", 171, 108, size=mark_size, x1=174),
                run(0, "and then it ends here.", 179, 112, x1=300),
                run(0, "A second paragraph starts lower down.", 50, 160, x1=300),
                run(0, "1 The footnote's own text.", 50, 760, size=8, x1=200))


def test_a_raised_footnote_mark_stays_in_its_sentence():
    layout = lay_out([superscripted_page()], (), "Doc", "doc")
    # The mark is glued to the word it follows, as the manual's HTML writes runs<sup>1</sup>.
    assert layout.canonical_text == (
        "The first line of a paragraph that goes on; a session runs1 and then it ends here.\n\n"
        "A second paragraph starts lower down.\n\n"
        "1 The footnote's own text.\n")
    assert layout.footnotes == 1


def test_code_at_the_foot_of_a_page_in_smaller_typewriter_type_is_no_footnote():
    """Found by a check of a PDF LibreOffice wrote: SQL in 10-point typewriter type under 12-point
    text, its comments' lines starting ``*/`` and ``**``, was read as four footnotes."""
    code = ["SELECT x FROM t1;", "/* Grouping is performed", "** using NOCASE.", "*/ SELECT 1;"]
    prose = ["The examples below show how the collating sequences", "group and sort the rows of",
             "the table, one statement after another, each with", "the result it returns."]
    runs = [*[run(0, line, 50, 100 + 14 * n, size=12, x1=400) for n, line in enumerate(prose)],
            *[dataclasses.replace(run(0, line, 50, 680 + 12 * n, size=10), mono=True)
              for n, line in enumerate(code)]]
    layout = lay_out([page(0, *runs)], (), "Doc", "doc")
    assert layout.canonical_text == (" ".join(prose) + "\n\nSELECT x FROM t1;\n"
                                     "/* Grouping is performed\n** using NOCASE.\n*/ SELECT 1;\n")
    assert layout.footnotes == 0


def test_a_mark_as_large_as_its_line_is_not_a_superscript():
    layout = lay_out([superscripted_page(mark_size=10)], (), "Doc", "doc")
    assert "runs1" not in layout.canonical_text


def test_a_footnote_is_a_section_labelled_as_a_footnote():
    layout = lay_out([superscripted_page()], (), "Doc", "doc")
    text = layout.canonical_text
    note = text.index("1 The footnote")
    assert layout.sections == (Section("Doc", 0, note), Section("Doc (footnote)", note, len(text) - 1))


def test_the_body_size_is_read_outside_tables():
    # Planted: a page that is mostly a table in 9-point type under an opening paragraph in
    # 11-point type (more table characters than paragraph ones). Counted over every character,
    # the body would be 9 points and the paragraph (11 >= 9 x 1.12) a heading.
    rows = [run(0, "Site", 50, 140, size=9, x1=80), run(0, "Lead", 200, 140, size=9, x1=230)]
    for n in range(1, 21):
        rows += [run(0, f"Delta flats {n}", 50, 140 + 12 * n, size=9, x1=120),
                 run(0, "Tomas Ruiz", 200, 140 + 12 * n, size=9, x1=250)]
    layout = lay_out([page(0, run(0, "Who works where, and for how long.", 50, 100, size=11,
                                   x1=300), *rows)], (), "Shifts", "shifts")
    assert layout.sections_from == "none"
    assert layout.canonical_text.startswith("Who works where, and for how long.\n\nSite | Lead\n")
    assert len(layout.tables) == 1 and len(layout.tables[0].rows) == 20


def test_a_footnotes_own_raised_mark_starts_its_paragraph():
    # Planted: TeX's foot of the page, the mark raised 3 points before the footnote's text
    # ("¹the distinction is subtle", set 6 points apart as in R-data.pdf): a row of its own,
    # which was a paragraph "1" before the note.
    layout = lay_out([page(0,
                           run(0, "A line of the body that ends its sentence.", 50, 100, x1=300),
                           run(0, "1", 50, 757, size=6, x1=53),
                           run(0, "the distinction is subtle, and rare.", 59, 760, size=8, x1=200))],
                     (), "Doc", "doc")
    assert layout.canonical_text == ("A line of the body that ends its sentence.\n\n"
                                     "1 the distinction is subtle, and rare.\n")
    assert layout.footnotes == 1
    note = layout.canonical_text.index("1 the")
    assert layout.sections[-1] == Section("Doc (footnote)", note, len(layout.canonical_text) - 1)


def _worded(text: str, starts: list[float], baseline: float, gap: float = 2.5) -> TextRun:
    """A bold run of ``text``'s words at ``starts``, each word ending ``gap`` points before the
    next."""
    words = tuple((start, end - gap) for start, end in zip(starts, [*starts[1:], starts[-1] + 40],
                                                          strict=True))
    return TextRun(0, text, starts[0], words[-1][1], baseline - 10, baseline, 10, bold=True,
                   words=words)


def _shift_rows(first: float) -> list[TextRun]:
    rows = []
    for n in range(1, 4):
        rows += [run(0, f"Delta flats {n}", 50, first + 12 * n, x1=110),
                 run(0, "Tomas Ruiz", 200, first + 12 * n, x1=250),
                 run(0, f"{n} hours", 270, first + 12 * n, x1=300)]
    return rows


def test_a_header_row_whose_labels_run_together_is_cut_into_the_tables_cells():
    # Planted: a bold header whose "Lead engineer" ends 8 points before "Duration" (under the
    # 1.5 em that ends a run, over the 0.5 em of a cell gap), "Duration" at the third column.
    header = [run(0, "Site", 50, 100, x1=70, bold=True),
              _worded("Lead engineer Duration", [200, 224, 270], 100, gap=8)]
    layout = lay_out([page(0, *header, *_shift_rows(100))], (), "Shifts", "shifts")
    assert layout.canonical_text.startswith(
        "Site | Lead engineer | Duration\nDelta flats 1 | Tomas Ruiz | 1 hours\n")
    (table,) = layout.tables
    assert (table.header, len(table.rows)) == ("Site | Lead engineer | Duration", 3)


def test_a_header_row_set_larger_than_its_rows_heads_them():
    """Found by a new user: reportlab's manual sets a table's shaded header row in 8-point bold
    over 7-point rows; the header was a line over a table headed by its first row, every row
    cited one off."""
    body = [run(0, "A sentence of body text comes first.", 50, 60, size=10),
            run(0, "And a second line of it.", 50, 72, size=10)]
    header = [run(0, label, x, 100, size=8, x1=x + 30, bold=True)
              for label, x in (("Site", 50), ("Lead", 200), ("Duration", 270))]
    rows = [dataclasses.replace(cell, size=7, top=cell.baseline - 7) for cell in _shift_rows(100)]
    layout = lay_out([page(0, *body, *header, *rows)], (), "Shifts", "shifts")
    assert layout.canonical_text.endswith(
        "\n\nSite | Lead | Duration\nDelta flats 1 | Tomas Ruiz | 1 hours\n"
        "Delta flats 2 | Tomas Ruiz | 2 hours\nDelta flats 3 | Tomas Ruiz | 3 hours\n")
    (table,) = layout.tables
    assert (table.header, len(table.rows)) == ("Site | Lead | Duration", 3)
    # A formula's scripts, smaller and less than a line under it, head nothing (an attack:
    # ``volL(kP)/k | r`` over ``d | d`` was a table).
    formula = [run(0, "we set vol(P) = vol(kP)/k", 50, 200, x1=170), run(0, "r where r = dim(P).", 200, 200),
               run(0, "d", 50, 203, size=7, x1=54), run(0, "d", 200, 203, size=7, x1=204)]
    assert lay_out([page(0, *formula)], (), "Volume", "volume").tables == ()
    # Nor a line's superscripts a line under it, set apart from its first cell.
    raised = [*formula[:2], run(0, "d", 260, 214, size=9, x1=265), run(0, "d", 330, 214, size=9, x1=335),
              run(0, "If P is a full-dimensional polytope in R and L = Z, then", 50, 218)]
    assert lay_out([page(0, *raised)], (), "Volume", "volume").tables == ()


def test_a_bulleted_list_is_items_not_a_table_headed_by_its_first_item():
    """Found by a new user: a list's marks line up as a table's first column does, so 14 of the
    44 tables read in reportlab's manual were lists (``• | item``) headed by their first item."""
    items = [("•", "Dynamic PDF generation on the web", 100),
             ("•", "An embeddable print engine for other applications, including", 112),
             (None, "a report language of its own.", 124),
             ("•", "A build system for complex documents", 136)]
    runs = [run(0, "It is useful in these contexts:", 50, 88)]
    for mark, text, baseline in items:
        if mark is not None:
            runs.append(run(0, mark, 50, baseline, x1=54))
        runs.append(run(0, text, 65, baseline))
    layout = lay_out([page(0, *runs)], (), "Uses", "uses")
    assert layout.canonical_text == (
        "It is useful in these contexts:\n\n• Dynamic PDF generation on the web\n\n"
        "• An embeddable print engine for other applications, including a report language "
        "of its own.\n\n• A build system for complex documents\n")
    assert layout.tables == ()
    # Found by an attack: items set larger than the body were read as one heading (siscone's
    # "• siscone/area.h • siscone/area.cpp").
    files = [run(0, "Body text of the page, in the body's type, goes on here.", 50, 60, size=8),
             run(0, "And a second line of that body text ends here.", 50, 70, size=8),
             run(0, "• siscone/area.h", 60, 100, size=9), run(0, "• siscone/area.cpp", 60, 112, size=9)]
    assert lay_out([page(0, *files)], (), "Files", "files").canonical_text.endswith(
        "\n\n• siscone/area.h\n\n• siscone/area.cpp\n")


def test_a_list_items_lines_hang_under_it_and_a_line_at_its_mark_starts_the_next_paragraph():
    """Found on R's and GLPK's manuals: an item's line after a sentence's end, at the indent
    its lines hang at, was a paragraph of its own ("...London:" / "Chapman & Hall."); a
    paragraph indented as far as the marks, after the last item, was read into it."""
    book = [run(0, "• J. Chambers (1992), Statistical Models in S, London:", 50, 100),
            run(0, "Chapman & Hall.", 65, 112),
            run(0, "This is also called the White Book.", 65, 124),
            run(0, "• In R, attach() only works for lists.", 50, 136),
            run(0, "(In fact, it works for saved files.) Also, not at position 1.", 65, 148)]
    # After a full stop the item's second line may be what follows the item (octave's nested
    # list of install paths, memman's indented paragraph, found by a regression trial): it is
    # judged as any line, so it starts a paragraph of its own here.
    assert lay_out([page(0, *book)], (), "FAQ", "faq").canonical_text == (
        "• J. Chambers (1992), Statistical Models in S, London: Chapman & Hall. This is also "
        "called the White Book.\n\n• In R, attach() only works for lists.\n\n(In fact, it "
        "works for saved files.) Also, not at position 1.\n")
    segment = [run(0, "The segment includes the following components:", 50, 88),
               run(0, "— rows, and", 65, 100),
               run(0, "— the objective function of the problem, which is the smallest or", 65, 112),
               run(0, "largest value found.", 50, 124),  # wraps to the margin: the same item
               run(0, "— constraint matrix.", 65, 136),
               run(0, "Rows and columns have the same attributes:", 65, 148),
               run(0, "— ordinal number, and", 65, 160),
               run(0, "— symbolic name. The mechanism is best explained by", 65, 172),
               run(0, "some examples below.", 65, 184)]  # at the mark, mid-sentence: goes on
    assert lay_out([page(0, *segment)], (), "GLPK", "glpk").canonical_text.split("\n\n")[1:] == [
        "— rows, and",
        "— the objective function of the problem, which is the smallest or largest value found.",
        "— constraint matrix.", "Rows and columns have the same attributes:",
        "— ordinal number, and",
        "— symbolic name. The mechanism is best explained by some examples below.\n"]


def test_a_sentence_over_a_table_is_not_cut_at_its_columns():
    # Planted: a bold sentence whose words "a" and "week" start at the table's second and
    # third columns, after ordinary word spaces.
    sentence = _worded("Each lead works a shift a week", [50, 80, 110, 200, 215, 240, 270], 100)
    layout = lay_out([page(0, sentence, *_shift_rows(100))], (), "Shifts", "shifts")
    assert layout.canonical_text.startswith(
        "Each lead works a shift a week\n\nDelta flats 1 | Tomas Ruiz | 1 hours\n")
    (table,) = layout.tables
    assert (table.header, len(table.rows)) == ("Delta flats 1 | Tomas Ruiz | 1 hours", 2)


def test_a_definition_term_run_into_its_description_is_left_whole():
    # Planted: as in the Bash manual, a term in roman type ("logical") ending 8 points before
    # its description, which starts at the column of the descriptions below: a description
    # wraps onto lines that are no rows of cells, so the line stays whole.
    term = dataclasses.replace(_worded("logical Same as -L.", [50, 200, 225, 240], 100, gap=8),
                               bold=False)
    rows = [run(0, "physical", 50, 112, x1=90), run(0, "Same as -P.", 200, 112, x1=250),
            run(0, "posix", 50, 124, x1=80), run(0, "Same as --posix.", 200, 124, x1=270)]
    layout = lay_out([page(0, term, *rows)], (), "Set", "set")
    assert layout.canonical_text.startswith("logical Same as -L.\n\nphysical | Same as -P.\n")


def test_a_header_with_a_raised_mark_is_left_whole_where_its_words_are_not_known():
    # Found by a review: a footnote mark glued into a header run changed its text, not its
    # words' positions, and cutting it at the columns read past their end (IndexError).
    words = ((50.0, 192.0), (200.0, 220.0), (224.0, 262.0))
    header = [TextRun(0, "Site Lead engineer", 50, 262, 90, 100, 10, bold=True, words=words),
              TextRun(0, "1", 262.5, 266, 88, 96, 6, bold=True),
              TextRun(0, "Duration", 270, 310, 90, 100, 10, bold=True)]
    layout = lay_out([page(0, *header, *_shift_rows(100))], (), "Shifts", "shifts")
    assert layout.canonical_text.startswith(
        "Site Lead engineer1 Duration\n\nDelta flats 1 | Tomas Ruiz | 1 hours\n")


def _command_table(cells: list[tuple[str | None, list[str]]], centred: bool) -> list[TextRun]:
    """A two-column table (``command`` | ``description``) from y=100 at a 12-point pitch, each
    row's description over its lines and its command set at the row's top or centred on it."""
    runs = [run(0, "command", 50, 100, x1=90), run(0, "description", 200, 100, x1=260)]
    y = 112.0
    for command, lines in cells:
        for i, text in enumerate(lines):
            runs.append(run(0, text, 200, y + 12 * i, x1=200 + 5 * len(text)))
        if command is not None:
            at = y + (12 * (len(lines) - 1) / 2 if centred else 0)
            runs.append(run(0, command, 50, at, x1=50 + 5 * len(command)))
        y += 12 * len(lines)
    return runs


WRAPPED_ROWS = [("pwd", ["display name of current directory"]),
                ("info name", ["display rather long explanation on", "command name (GNU", "style)"]),
                ("ls -A", ["list contents of directory (almost", "all files)"]),
                ("ls -la", ["list all contents of directory"])]


def test_a_row_whose_cell_wraps_is_one_table_row_whether_centred_or_set_at_the_top():
    """Found by a user on the Debian Reference: a description wrapped over lines beside a
    command centred on it broke the table there, the next row was taken for a new table's
    header, and the description's lines were read around the command."""
    for centred in (True, False):
        layout = lay_out([page(0, *_command_table(WRAPPED_ROWS, centred))], (), "Commands",
                         "commands")
        assert layout.canonical_text == (
            "command | description\n"
            "pwd | display name of current directory\n"
            "info name | display rather long explanation on command name (GNU style)\n"
            "ls -A | list contents of directory (almost all files)\n"
            "ls -la | list all contents of directory\n"), centred
        (table,) = layout.tables
        assert (table.header, len(table.rows)) == ("command | description", 4)


def test_lines_indented_within_a_last_column_cell_are_that_cell():
    """Found by a new user: gputils' option table indents the items of ``-o <file>``'s meaning
    within its column (``- If the "-c" option ...``); each broke the table, and the next
    option row headed a new one."""
    runs = _command_table([("pwd", ["display name of current directory"]),
                           ("-o file", ["name the output files:"]),
                           ("ls -la", ["list all contents of directory"])], centred=False)
    runs = [r if r.text != "ls -la" and r.text != "list all contents of directory"
            else dataclasses.replace(r, baseline=r.baseline + 24, top=r.top + 24) for r in runs]
    runs += [run(0, "- with -c: file.o", 215, 136), run(0, "- else: file.hex", 215, 148)]
    layout = lay_out([page(0, *runs)], (), "Commands", "commands")
    assert layout.canonical_text == (
        "command | description\n"
        "pwd | display name of current directory\n"
        "-o file | name the output files: - with -c: file.o - else: file.hex\n"
        "ls -la | list all contents of directory\n")
    (table,) = layout.tables
    assert (table.header, len(table.rows)) == ("command | description", 3)


def test_a_paragraph_under_a_table_is_not_read_into_its_last_row():
    runs = _command_table(WRAPPED_ROWS[:1], centred=False)
    runs += [run(0, "After the table a paragraph starts at the first", 50, 124, x1=290),
             run(0, "column and goes on.", 50, 136, x1=150)]
    layout = lay_out([page(0, *runs)], (), "Commands", "commands")
    assert layout.canonical_text == (
        "command | description\npwd | display name of current directory\n\n"
        "After the table a paragraph starts at the first column and goes on.\n")


def test_a_long_term_alone_on_its_line_takes_the_description_under_it():
    """A definition list's long term stands alone, its description a whole line under it: the
    rows are set at the top, not centred (found by a review on bash.pdf: "[-+]O
    [shopt_option]" took the lines of "-D")."""
    runs = [run(0, "-v", 50, 100, x1=60), run(0, "Print shell input lines as read.", 200, 100, x1=360),
            run(0, "-D", 50, 112, x1=60), run(0, "A list of all double-quoted strings", 200, 112, x1=375),
            run(0, "preceded by $ is printed.", 200, 124, x1=325),
            run(0, "[-+]O [shopt_option]", 50, 136, x1=150),
            run(0, "shopt_option is one of the shell options.", 200, 148, x1=405),
            run(0, "--", 50, 160, x1=60), run(0, "A -- signals the end of options.", 200, 160, x1=360)]
    layout = lay_out([page(0, *runs)], (), "Options", "options")
    assert layout.canonical_text == (
        "-v | Print shell input lines as read.\n"
        "-D | A list of all double-quoted strings preceded by $ is printed.\n"
        "[-+]O [shopt_option] | shopt_option is one of the shell options.\n"
        "-- | A -- signals the end of options.\n")


def test_a_paragraph_under_a_wrapped_last_row_is_not_read_into_it():
    for centred in (True, False):
        runs = _command_table([WRAPPED_ROWS[0], WRAPPED_ROWS[2]], centred)
        runs += [run(0, "After the table a paragraph starts at the first column and goes", 50, 148,
                     x1=380),
                 run(0, "on to its end.", 50, 160, x1=120)]
        layout = lay_out([page(0, *runs)], (), "Commands", "commands")
        assert layout.canonical_text == (
            "command | description\npwd | display name of current directory\n"
            "ls -A | list contents of directory (almost all files)\n\n"
            "After the table a paragraph starts at the first column and goes on to its end.\n"), centred


def _placed_words(page_index: int, words: list[tuple[str, float, float]], baseline: float) -> TextRun:
    """One roman run of ``(word, left, right)``."""
    return TextRun(page_index, " ".join(w for w, _, _ in words), words[0][1], words[-1][2],
                   baseline - 10, baseline, 10, words=tuple((left, right) for _, left, right in words))


def test_a_wider_cell_of_a_centred_column_and_its_centred_header_are_cut_into_cells():
    # Found by a new user in gnuplot's manual ("Date Specifiers"): the Format column is centred,
    # so "%b or %h" starts left of "%a" and runs into its description (12 points apart, over
    # the 0.5 em of a cell gap); the table ended above it and started again, headed by "%B".
    # Its header "Format Explanation" is centred too, and one run.
    header = _placed_words(0, [("Format", 45, 78), ("Explanation", 90, 150)], 100)
    rows = [run(0, "%a", 55, 112, x1=65), run(0, "abbreviated day", 90, 112, x1=160),
            run(0, "%A", 55, 124, x1=65), run(0, "full day", 90, 124, x1=130),
            _placed_words(0, [("%b", 42, 51), ("or", 55, 60), ("%h", 64, 75), ("abbreviated", 90, 140),
                              ("month", 144, 170)], 136),
            run(0, "%B", 55, 148, x1=65), run(0, "full month", 90, 148, x1=140),
            run(0, "%d", 55, 160, x1=65), run(0, "day of the month", 90, 160, x1=170)]
    layout = lay_out([page(0, header, *rows)], (), "Formats", "formats")
    assert layout.canonical_text == ("Format | Explanation\n%a | abbreviated day\n%A | full day\n"
                                     "%b or %h | abbreviated month\n%B | full month\n%d | day of the month\n")
    (table,) = layout.tables
    assert (table.header, len(table.rows)) == ("Format | Explanation", 5)


def test_a_table_going_on_past_a_footnote_is_one_table_its_last_rows_cut_into_cells():
    # Found by a new user in R Internals (the SEXPTYPE table): "14 REALSXP", the last row of
    # page 1, ran its first two cells together, a footnote sat under it, and page 2 started a
    # new table headed by its first row; "23 WEAKREFSXP" and "24 RAWSXP" (2 runs under rows of
    # 3) ended the table short.
    def row(p: int, baseline: float, number: str, name: str, what: str) -> list[TextRun]:
        return [run(p, number, 50, baseline, x1=60), run(p, name, 80, baseline, x1=130),
                run(p, what, 200, baseline, x1=260)]

    first = [run(0, "The types are listed below, in a paragraph as wide as the page is.", 40, 80, x1=560),
             *row(0, 100, "no", "TYPE", "Description"), *row(0, 112, "13", "INTSXP", "integers"),
             _placed_words(0, [("14", 50, 60), ("REALSXP", 80, 125)], 124),
             run(0, "numerics", 200, 124, x1=250),
             run(0, "1 strictly, a node.", 40, 700, size=7, x1=140)]
    second = [*row(1, 88, "15", "CPLXSXP", "complex"), *row(1, 100, "22", "EXTPTRSXP", "pointer"),
              _placed_words(1, [("23", 50, 60), ("WEAKREFSXP", 80, 140)], 112),
              run(1, "weak", 200, 112, x1=230),
              _placed_words(1, [("24", 50, 60), ("RAWSXP", 80, 120)], 124), run(1, "raw", 200, 124, x1=220),
              run(1, "Many of these will be familiar from R level, and this sentence runs on.", 40, 150,
                  x1=560)]
    layout = lay_out([page(0, *first), page(1, *second)], (), "R", "r")
    assert layout.canonical_text.startswith(
        "The types are listed below, in a paragraph as wide as the page is.\n\n"
        "no | TYPE | Description\n13 | INTSXP | integers\n14 | REALSXP | numerics\n\n"
        "15 | CPLXSXP | complex\n22 | EXTPTRSXP | pointer\n23 | WEAKREFSXP | weak\n24 | RAWSXP | raw\n\n"
        "1 strictly, a node.\n\n")
    (table,) = layout.tables
    assert (table.header, len(table.rows)) == ("no | TYPE | Description", 6)


def test_a_listing_whose_comments_line_up_is_code_not_a_table():
    # Found by a new user: gnuplot's examples (typewriter, comments lined up) and R Internals'
    # struct (typewriter, its comments in roman, lined up at the bit fields' colons) were
    # read as tables headed by their first line.
    def mono(text: str, x0: float, baseline: float, x1: float, is_mono: bool = True) -> TextRun:
        return dataclasses.replace(run(0, text, x0, baseline, x1=x1), mono=is_mono)

    examples = [mono('set format y "%t"', 50, 100, 150), mono('# "5.0" and "1.0"', 220, 100, 300),
                mono('set format y "%s"', 50, 112, 150), mono('# "500" and "1.0"', 220, 112, 300)]
    struct = [mono("unsigned int obj", 50, 200, 130), mono(": 1; /* an object? */", 150, 200, 260, False),
              mono("unsigned int alt", 50, 212, 130), mono(": 1; /* ALTREP? */", 150, 212, 250, False)]
    layout = lay_out([page(0, *examples, *struct)], (), "Code", "code")
    assert layout.tables == ()
    assert layout.canonical_text.startswith(
        'set format y "%t" # "5.0" and "1.0"\nset format y "%s" # "500" and "1.0"\n\n')


def test_a_table_in_typewriter_type_under_a_header_in_another_face_stays_a_table():
    # Found by a regression trial: gnucash's "Operating system | folder" rows, all in
    # typewriter type, were read as code once such lines were; and fntguide's table, its header
    # centred over its columns (lined up with none), lost its rows.
    def mono(text: str, x0: float, baseline: float, x1: float) -> TextRun:
        return dataclasses.replace(run(0, text, x0, baseline, x1=x1), mono=True)

    lined_up = [run(0, "Operating system", 50, 100, x1=130), run(0, "Folder", 200, 100, x1=240),
                mono("Unix", 50, 112, 80), mono("~/.gnucash", 200, 112, 260),
                mono("Windows", 50, 124, 95), mono("Documents and Settings", 200, 124, 330)]
    layout = lay_out([page(0, *lined_up)], (), "Guide", "guide")
    assert layout.canonical_text == ("Operating system | Folder\nUnix | ~/.gnucash\n"
                                     "Windows | Documents and Settings\n")
    prose = run(0, "The math alphabets below are set in the fonts of the normal math version, "
                   "as the table shows.", 50, 80, x1=560)
    centred = [run(0, "Alphabets", 70, 100, x1=120), run(0, "Attributes", 215, 100, x1=265),
               mono("\\mathrm", 50, 112, 90), mono("OT1 cmr m n", 200, 112, 260),
               mono("\\mathtt", 50, 124, 90), mono("OT1 cmtt m n", 200, 124, 265)]
    layout = lay_out([page(0, prose, *centred)], (), "Fonts", "fonts")
    assert [(t.header, len(t.rows)) for t in layout.tables] == [("Alphabets | Attributes", 2)]
    # Without the prose the text is mostly in typewriter type (a document set wholly in it,
    # an RFC): its aligned rows are a table, their first row its header (found by an attack).
    layout = lay_out([page(0, *centred[2:])], (), "Fonts", "fonts")
    assert [(t.header, len(t.rows)) for t in layout.tables] == [("\\mathrm | OT1 cmr m n", 1)]


def test_a_typewriter_table_going_on_to_the_next_page_without_its_header_stays_one_table():
    """Found by a new user: reportlab's synonyms table, in typewriter type under a bold header
    on page 78, went on to page 79 without it; there its 28 rows were read as code, one line
    each with no cells, and no row of them was cited."""
    def mono(page_index: int, text: str, x0: float, baseline: float) -> TextRun:
        return dataclasses.replace(run(page_index, text, x0, baseline), mono=True)

    prose = "The attributes of the opening tag set the paragraph's style, as listed below."
    first = [run(0, prose, 50, 60), run(0, "Attribute", 107, 100, bold=True),
             run(0, "Synonyms", 234, 100, bold=True),
             mono(0, "alignment", 107, 114), mono(0, "align, alignment", 234, 114),
             mono(0, "backColor", 107, 128), mono(0, "bg, bgcolor", 234, 128)]
    second = [mono(1, "endDots", 108, 90), mono(1, "endDots, enddots", 235, 90),
              mono(1, "fontName", 108, 104), mono(1, "face, font, fontName", 235, 104),
              run(1, "Table 6-2 - Synonyms for style attributes, in the order of their names.", 50, 130)]
    layout = lay_out([page(0, *first), page(1, *second)], (), "Guide", "guide")
    (table,) = layout.tables
    text = layout.canonical_text
    assert [text[start:text.index("\n", start)] for start in table.rows] == [
        "alignment | align, alignment", "backColor | bg, bgcolor", "endDots | endDots, enddots",
        "fontName | face, font, fontName"]
    assert table.header == "Attribute | Synonyms"
    # On its own, such a page is still a listing's lines, not a table.
    assert lay_out([page(0, run(0, prose, 50, 60)), page(1, *second)], (), "Guide",
                   "guide").tables == ()


def test_a_heading_under_a_table_is_not_cut_into_its_cells():
    # Found by a regression trial: array.pdf's "10 The Environment Definitions" under a
    # numbered listing read "10 | The Environment Definitions".
    rows = [run(0, "229", 50, 100, x1=65), run(0, "the first line", 80, 100, x1=160),
            run(0, "230", 50, 112, x1=65), run(0, "the second line", 80, 112, x1=170),
            _placed_words(0, [("10", 50, 62), ("The", 80, 100), ("Environment", 104, 170)], 140)]
    rows[-1] = dataclasses.replace(rows[-1], size=14, bold=True)
    layout = lay_out([page(0, *rows, run(0, "Body text that runs to the margin of the page.", 50, 170,
                                         x1=560))], (), "Array", "array")
    assert "\n10 The Environment\n" in layout.canonical_text


def test_a_label_set_larger_than_the_body_as_the_other_labels_are_is_no_title():
    """Found by a new user: groff's bash.pdf sets NAME and SYNOPSIS at 10.9 points over a body
    of 10, and was titled "NAME"."""
    lines = [("NAME", 10.9), ("bash - GNU Bourne-Again SHell", 10), ("SYNOPSIS", 10.9),
             ("bash [options] [command_string | file]", 10), ("DESCRIPTION", 10.9),
             ("Bash is a command language interpreter that reads standard input.", 10)]
    pages = [page(0, *[run(0, text, 50, 100 + 30 * n, size=size, bold=size > 10)
                       for n, (text, size) in enumerate(lines)])]
    assert lay_out(pages, (), "", "bash").title == "bash"
    pages = [page(0, run(0, "HANDBOOK", 50, 60, size=18), *[run(0, text, 50, 100 + 30 * n, size=size)
                                                          for n, (text, size) in enumerate(lines)])]
    assert lay_out(pages, (), "", "bash").title == "HANDBOOK"


def test_a_logos_letters_larger_than_the_title_do_not_title_the_document():
    """Found on Asymptote's manual: its cover's logo draws the A and sets "symptote" in 25-point
    type under the 21-point title, and the document was titled "symptote"."""
    pages = [page(0, run(0, "Asymptote: the Vector Graphics", 90, 230, size=20.7, bold=True),
                  run(0, "Language", 90, 257, size=20.7, bold=True),
                  run(0, "For version 2.85", 446, 280, size=10.9),
                  run(0, "symptote", 281, 350, size=24.8),
                  run(0, "This file documents Asymptote, version 2.85.", 90, 420))]
    assert lay_out(pages, (), "", "asymptote").title == "Asymptote: the Vector Graphics Language"
    # A letter alone (a drop cap, slides printed turned) names no logo (found by a
    # regression trial: seminar's sample slides were titled "J a le").
    pages = [page(0, run(0, "E", 90, 100, size=30), run(0, "J a le", 90, 140, size=24),
                  run(0, "Example slides for the seminar class, first of three.", 90, 400))]
    assert lay_out(pages, (), "", "semsamp2").title == "E"
    # A one-word title in the largest type is still the title.
    pages = [page(0, run(0, "Asymptote", 90, 230, size=24.8),
                  run(0, "The asymptote package for LaTeX", 90, 260, size=20.7))]
    assert lay_out(pages, (), "", "asy").title == "Asymptote"


def test_a_dot_leader_is_found_from_the_end_of_its_line():
    """Found by an attack: a line of thousands of ``. `` and no page number was searched from
    each dot to its end (a 40 KB PDF, 42 s); so was a line of ``a-a-a-...`` for the word a
    hyphen breaks."""
    from rag_pipeline.core.ingest.pdf_layout import ends_in_dot_leader
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    assert [ends_in_dot_leader(text) for text in (
        "Syntax . . . 12", "Preface.....iv ", "Index ...  XII", "A.. 3", ". .  . 4", "Dots ... ",
        "Go ...x1", "Total . . . 12 units")] == [True, True, True, False, False, False, False, False]
    with document_reading_limits(10):
        assert not ends_in_dot_leader(". " * 100_000 + "z")
        pages = [page(0, run(0, "a-" * 20_000 + "b", 50, 100, hyphen=True), run(0, "end here.", 50, 112))]
        layout = lay_out(pages, (), "", "doc")
    assert layout.canonical_text == "a-" * 20_000 + "b-end here.\n"  # a compound keeps its hyphen


def test_a_metadata_title_naming_the_file_the_pdf_was_made_from_is_no_title():
    """Found by a new user: gputils' manual is titled ``gputils.dvi`` by its metadata, and every
    chunk's header said ``[gputils.dvi > ...]``."""
    pages = [page(0, run(0, "GPUTILS", 50, 60, size=20), run(0, "A collection of tools.", 50, 100))]
    for made_from in ("gputils.dvi", "Microsoft Word - Annual report 2024.docx", "untitled",
                      "/home/ana/thesis.tex"):
        assert lay_out(pages, (), made_from, "gputils").title == "GPUTILS"
    assert lay_out(pages, (), "GNU PIC Utilities", "gputils").title == "GNU PIC Utilities"
    assert lay_out(pages, (), "The .NET guide", "gputils").title == "The .NET guide"


def test_a_listings_numbered_lines_are_code_lines_not_a_table():
    """Found by a new user: a LaTeX listing's line numbers line up as a first column does, so 33
    of the 37 tables of auto-multiple-choice's manual were listings headed by a line of code
    (``14 | \\begin{question}{Paris}``). Then, by an attack: such lines were run together into
    one paragraph, and glpk's table of return codes (``0 | initialization successful``, in the
    text's type) was taken for a listing."""
    code = ["\\begin{question}{Paris}", "In which continent is Paris?", "\\begin{choices}",
            "\\correctchoice{Europe}"]

    def numbered(numbers: list[int], number_size: float) -> list[TextRun]:
        return [cell for n, (number, line) in enumerate(zip(numbers, code, strict=True)) for cell in (
            run(0, str(number), 41, 100 + 11 * n, size=number_size, x1=49),
            run(0, line, 60, 100 + 11 * n))]

    layout = lay_out([page(0, *numbered([14, 15, 16, 17], 7))], (), "Listing", "listing")
    assert layout.tables == ()
    assert layout.canonical_text == "".join(f"{14 + n} {line}\n" for n, line in enumerate(code))
    # Codes counting up in the text's own type, and numbers that do not count lines, are tables.
    for numbers, size in (([0, 1, 2, 3], 10), ([10, 20, 30, 40], 7)):
        assert len(lay_out([page(0, *numbered(numbers, size))], (), "Codes", "codes").tables) == 1


def test_a_listing_whose_numbers_run_into_some_lines_and_callouts_beside_them_is_no_table():
    """Found by a new user: on AMC's page 23 the line number of some lines runs into the code
    (one run: ``18 \\namefield{\\fbox{``) and a callout (``5②[5]``) stands beside it, so three
    stretches of the listing were tables headed by such a line; below them, its lines set
    smaller than the body, each starting with a number, were read as 43 footnotes."""
    prose = "The header of the test sheet is written in LaTeX as the listing below shows."
    runs = [run(0, prose, 41, 80), run(0, "18 \\namefield{\\fbox{", 41, 100, size=9),
            run(0, "5②[5]", 170, 100, size=9),
            run(0, "19", 41, 111, size=5), run(0, "\\begin{minipage}{.5\\linewidth}", 143, 111, size=9),
            run(0, "20", 41, 122, size=5), run(0, "Firstname and lastname:", 154, 122, size=9),
            run(0, "21", 41, 133, size=5), run(0, "\\vspace*{1mm}", 154, 133, size=9),
            run(0, "22 }}", 41, 144, size=9)]
    layout = lay_out([page(0, *runs)], (), "AMC", "amc")
    assert layout.tables == ()
    assert layout.footnotes == 0
    # The lines whose number runs into their code are the listing's too: a line each.
    assert layout.canonical_text.endswith(
        "\n\n18 \\namefield{\\fbox{ 5②[5]\n19 \\begin{minipage}{.5\\linewidth}\n"
        "20 Firstname and lastname:\n21 \\vspace*{1mm}\n22 }}\n")


def test_a_footnote_starts_with_its_mark_and_its_text():
    """Found on real manuals: a line under a footnote starting with a year ("2000.") or a
    number of three digits or more ("170,150, 180,110" in a listing) started a footnote of its
    own."""
    runs = [run(0, "Body text set in the body's type ends this page with a sentence.", 50, 100),
            run(0, "Another line of the body is set in that type, and it is longer still.", 50, 112),
            run(0, "11 but not a major version greater than 7: it has been 7 since", 50, 700, size=8),
            run(0, "2000.", 50, 710, size=8)]
    layout = lay_out([page(0, *runs)], (), "R", "r")
    assert layout.footnotes == 1
    assert layout.canonical_text.endswith("11 but not a major version greater than 7: it has been 7 "
                                          "since 2000.\n")


def test_two_columns_of_lines_in_many_runs_are_read_left_then_right():
    """Found by a researcher's trial: a paper's lines split into many runs (kerning, inline
    maths) made the runs' median width a sliver of the column, so two-column pages were read
    across both columns, line by line (an elsarticle paper kept 17 of 93 sentences whole)."""
    def line(column: int, i: int) -> list[TextRun]:
        x, words = 50.0 + 270 * column, [f"{'LR'[column]}{i}w{k}" for k in range(4)]
        cuts = [(i * 37 + k * 23) % 29 for k in range(3)]  # each line's runs split elsewhere
        runs, width = [], (230 - sum(cuts)) / 4
        for k, word in enumerate(words):
            runs.append(run(0, word, x, 100 + 12 * i, x1=x + width))
            x += width + (cuts[k] if k < 3 else 0)
        return runs

    rows = [piece for i in range(8) for column in (0, 1) for piece in line(column, i)]
    text = lay_out([page(0, *rows)], (), "", "doc").canonical_text
    left = " ".join(f"L{i}w{k}" for i in range(8) for k in range(4))
    right = " ".join(f"R{i}w{k}" for i in range(8) for k in range(4))
    # In column order (rows lined up by chance may read as a table's: the order is the point).
    assert " ".join(text.replace("|", " ").split()) == f"{left} {right}"


def _covered(layout) -> str:
    """The characters of ``layout``'s text that some section's range holds."""
    return "".join(layout.canonical_text[s.start:s.end] for s in layout.sections)


def test_a_scanned_pages_lines_are_read_in_the_text_pages_body_type():
    # Found by an analyst: a report's last page, a scan whose lines Tesseract measured at 14.6
    # points beside a text layer set in 12, was read as two headings with nothing under them,
    # and its sentences were in no chunk.
    text_page = page(0, run(0, "Incident report", 50, 60, size=16),
                     run(0, "On 3 February the gateway returned errors for 14 minutes.", 50, 100, size=12))
    scanned = (run(1, "Scanned appendix: the backup site is Frankfurt.", 50, 100, size=14.6),
               run(1, "Failover drills happen every quarter.", 50, 130, size=14.6))
    scan = PageText(1, 600, 800, scanned, PageSource.OCR, 91.0)
    layout = lay_out([text_page, scan], (), "", "incident")
    assert [s.title for s in layout.sections] == ["Incident report"]
    assert _covered(layout).split() == ("On 3 February the gateway returned errors for 14 minutes. "
                                        "Scanned appendix: the backup site is Frankfurt. Failover "
                                        "drills happen every quarter.").split()
    # A scanned page's own heading, larger than its body lines, stays a heading.
    headed = dataclasses.replace(scan, runs=(run(1, "Appendix", 50, 70, size=19), *scan.runs))
    layout = lay_out([text_page, headed], (), "", "incident")
    assert [s.title for s in layout.sections] == ["Incident report", "Appendix"]
    # A scan already in body type is read as it is, though its median line is a table's
    # smaller row (found by a check of the change: its paragraphs read as headings).
    report = [run(0, f"Line {n} of the report says what the gateway did that day.", 50, 130 + 16 * n,
                  size=12) for n in range(8)]
    table = [run(1, f"ST-0{n} 1.5 15 NTU ST-1{n} 3.0 18", 50, 150 + 14 * n, size=9) for n in range(6)]
    mixed = PageText(1, 600, 800, (run(1, "The samples were kept cold until the lab.", 50, 100, size=12),
                                   *table, run(1, "River turbidity rose after the storm.", 50, 300, size=12)),
                     PageSource.OCR, 90.0)
    layout = lay_out([dataclasses.replace(text_page, runs=(*text_page.runs, *report)), mixed], (), "",
                     "incident")
    assert [s.title for s in layout.sections] == ["Incident report"]
    assert "River turbidity rose after the storm." in _covered(layout)
    # Every page scanned: the sizes are the scan's own, as before.
    alone = lay_out([headed], (), "", "incident")
    assert [s.title for s in alone.sections] == ["Appendix"]


def test_a_heading_with_nothing_under_it_joins_the_next_of_its_size_or_stays_in_the_section_before():
    # Found by an analyst: a heading followed by one as large, and a last line in large type,
    # were headings of empty sections (dropped), and their words were in no chunk.
    lines = [("Guide", 18), ("Install it with the package manager of your system.", 10),
             ("Chapter 3", 14), ("Limits", 14), ("Files over a gigabyte are read in parts.", 10),
             ("See also", 14), ("Appendix", 18), ("Index", 14),
             ("Contact the team on the channel.", 10), ("Thank you for reading", 14)]
    layout = lay_out([page(0, *[run(0, text, 50, 60 + 30 * n, size=size)
                               for n, (text, size) in enumerate(lines)])], (), "", "guide")
    # Two headings of one size, nothing between: one heading (found by a check of the change
    # on bash.pdf: "--init-file file" over "--rcfile file", one description for both).
    assert [(s.title, s.level) for s in layout.sections] == [
        ("Guide", 1), ("Chapter 3 Limits", 2), ("Index", 2)]
    # Before a larger heading, or at the end: the section before's words.
    assert _covered(layout).split() == (
        "Install it with the package manager of your system. Files over a gigabyte are read in "
        "parts. See also Contact the team on the channel. Thank you for reading").split()
    # "Appendix" over the smaller "Index" heads a part, as before (a section of its own, with
    # nothing in it, and so in no chunk).
