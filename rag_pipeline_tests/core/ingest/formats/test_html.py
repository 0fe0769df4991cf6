"""Tests for ``rag_pipeline.core.ingest.formats.html``: hand-written pages with exact expected
canonical text (inline elements, blocks, white space, code, tables), chrome removed by each of
its rules, sections at the headings."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest import ExtractionError, Section, TableSpan, format_named
from rag_pipeline.core.ingest.formats.html import extract_html
from rag_pipeline_tests.core.ingest.long_tables import chunked_under_header, shift_rows


def text_of(body: str) -> str:
    return extract_html(f"<html><body>{body}</body></html>".encode(), "page").canonical_text


# --- text as a browser shows it -------------------------------------------------------------


@pytest.mark.parametrize(("body", "expected"), [
    # The examples: the former extractor wrote "statement s", "library ," and "x / y".
    ("<p>Each <var>statement</var>s runs.</p>", "Each statements runs.\n"),
    ("<p>Load the <code>library</code>, then call it.</p>", "Load the library, then call it.\n"),
    ("<p>Divide <i>x</i>/<i>y</i>.</p>", "Divide x/y.\n"),
    # White space in the source, inside or between inline elements, is one space.
    ("<p>one\n   two <b> three </b>  four</p>", "one two three four\n"),
    # None at the start or end of a block, or around a line break.
    ("<p>  <em>lead</em> and trail  <br>  next line </p>", "lead and trail\nnext line\n"),
    # A no-break space is a space that never collapses.
    ("<p>a&nbsp;&nbsp;b</p>", "a  b\n"),
    # A number in <sup> after its base is an exponent (found by a new user: SQLite's limit
    # "2<sup>31</sup>-1" read "231-1"); other superscripts and subscripts join as written.
    ("<p>2<sup>31</sup>-1, 10<sup>-3</sup>, (a+b)<sup>2</sup>, mc<sup>2</sup></p>",
     "2^31-1, 10^-3, (a+b)^2, mc^2\n"),
    ("<p>the 1<sup>st</sup>, a note<sup>[3]</sup>, x <sup>2</sup>, H<sub>2</sub>O</p>",
     "the 1st, a note[3], x 2, H2O\n"),
])
def test_inline_elements_join_their_neighbours_as_written(body: str, expected: str):
    assert text_of(body) == expected


def test_blocks_become_paragraphs_and_loose_text_its_own():
    assert text_of("<div>Intro <b>bold</b><p>Para</p>tail</div><ul><li>One</li><li>Two</li></ul>"
                   "Loose<hr>after") == "Intro bold\n\nPara\n\ntail\n\nOne\n\nTwo\n\nLoose\n\nafter\n"


def test_a_definition_lists_term_and_its_definitions_first_paragraph_are_one():
    # Found by a new user with PostgreSQL's manual: of 158 parameters, 99 names ended one
    # chunk with their definition in the next ("shared_buffers (integer)" quoted alone).
    page = (b"<html><body><h1>Memory</h1><dl><dt><code>shared_buffers</code> (<code>integer</code>)"
            b"</dt><dd><p>Sets the memory for shared buffers. The default is 128 megabytes.</p>"
            b"<p>Without units, it is taken as blocks.</p></dd><dt><code>-k</code></dt>"
            b"<dt><code>--keep-going</code></dt><dd>Continue after an error.</dd></dl>"
            b"<p>After the list.</p></body></html>")
    extracted = extract_html(page, "pg")
    assert extracted.canonical_text == (
        "Memory\n\nshared_buffers (integer)\nSets the memory for shared buffers. The default is "
        "128 megabytes.\n\nWithout units, it is taken as blocks.\n\n-k\n--keep-going\n"
        "Continue after an error.\n\nAfter the list.\n")
    assert extracted.sections[-1] == Section("Memory", 6, len(extracted.canonical_text), 1)


def test_pre_keeps_its_lines_and_a_comment_in_it_is_no_heading():
    html = ("<h1>Guide</h1><p>Run:</p><pre>\n# install first\n  pip   install x\n\n"
            "<span>#</span> then <b>run</b>\n</pre><p>Done.</p>")
    extracted = extract_html(html.encode(), "guide")
    assert extracted.canonical_text == (
        "Guide\n\nRun:\n\n# install first\n  pip   install x\n\n# then run\n\nDone.\n")
    # "Guide" [0,5) is the only heading: the body after it is one section, code included.
    assert extracted.sections == (Section("Guide", 0, 0, 1), Section("Guide", 5, 66, 1))


def test_table_rows_are_paragraphs_of_tab_separated_cells():
    assert text_of("<table><tr><th>Key</th><th> Value </th></tr>"
                   "<tr><td>a</td><td><code>1</code>, or <b>2</b></td></tr></table>") == (
        "Key\tValue\n\na\t1, or 2\n")


def test_cells_of_paragraphs_stay_in_their_rows_line():
    """Found by a new user: LibreOffice's help (and DocBook) wraps each cell's text in <p>; each
    cell was a paragraph of its own, the table was prose, its 12 rows one chunk (17 of 100
    tables of many columns in the first 600 help pages)."""
    page = (b"<p>Intro.</p><table><tr><td><p>Timeline</p></td><td><p>Values</p></td></tr>"
            b"<tr><td><p>01/2013</p></td><td><p>112</p><p>(estimated)</p></td></tr>"
            b"<tr><td><p>02/2013</p></td><td><div>118</div></td></tr></table>")
    extracted = extract_html(page, "t")
    assert extracted.canonical_text == ("Intro.\n\nTimeline\tValues\n\n01/2013\t112 (estimated)\n\n"
                                        "02/2013\t118\n")
    assert extracted.tables == (TableSpan(8, 61, "Timeline\tValues", 23, (25, 50)),)
    # A one-column table keeps its cells' paragraphs: an entry of a list, no row of cells.
    assert text_of("<table><tr><th>Function</th></tr><tr><td><p>abs(x)</p><p>The absolute value."
                   "</p></td></tr></table>") == "Function\n\nabs(x)\n\nThe absolute value.\n"
    # So does a cell that lays a page out (found by an attack: a newsletter's column of
    # paragraphs beside its menu ran together into one line): more blocks than a data cell
    # holds, or a list.
    column = "".join(f"<p>Paragraph {n}.</p>" for n in range(4))
    assert text_of(f"<table><tr><td><p>Menu</p></td><td>{column}<ul><li>Register</li></ul></td>"
                   "</tr></table>") == ("Menu\n\nParagraph 0.\n\nParagraph 1.\n\nParagraph 2.\n\n"
                                        "Paragraph 3.\n\nRegister\n")
    # By its length, not its blocks (a second attack: a FAQ's answer of three long paragraphs
    # ran into one line; four one-line examples were split from their row).
    long = "".join(f"<p>{'An answer that goes on at length. ' * 5}</p>" for _ in range(3))
    assert text_of(f"<table><tr><td>Why?</td><td>{long}</td></tr></table>").count("\n\n") == 3
    examples = "".join(f"<p>=SUM(A{n})</p>" for n in range(4))
    assert text_of(f"<table><tr><td>Examples</td><td>{examples}</td></tr></table>") == (
        "Examples\t=SUM(A0) =SUM(A1) =SUM(A2) =SUM(A3)\n")


def test_headings_are_paragraphs_outside_the_sections_they_title():
    html = b"<title>The Page</title><p>Before.</p><h2>First part</h2><p>One.</p><h3>Deeper</h3><p>Two.</p>"
    extracted = extract_html(html, "page")
    # "Before." [0,7) | "First part" [9,19) | "One." [21,25) | "Deeper" [27,33) | "Two." [35,39)
    assert extracted.canonical_text == "Before.\n\nFirst part\n\nOne.\n\nDeeper\n\nTwo.\n"
    assert extracted.sections == (Section("The Page", 0, 9, 1), Section("First part", 19, 27, 2),
                                  Section("Deeper", 33, 40, 3))
    assert extracted.title == "The Page"


def test_a_heading_closed_by_another_level_or_left_open_ends_where_a_browser_ends_it():
    # Found by a new user: SQLite's keyword_index.html opens "<h2>Keyword Index</h1>"; lxml kept
    # the heading open, and the page's 64,000 characters became one section title.
    closed = (b"<title>Index</title><h2 align=center>Keyword Index</h1>Other indexes: <a>List</a>"
              b"<ul><li>abs()</li></ul>")
    extracted = extract_html(closed, "index")
    assert extracted.canonical_text == "Keyword Index\n\nOther indexes: List\n\nabs()\n"
    assert extracted.sections[-1] == Section("Keyword Index", 13, 42, 2)
    # Never closed: the heading is its text up to its first block.
    extracted = extract_html(b"<h3>Limits<p>The column limit is 2000.</p><p>Rows.</p>", "limits")
    assert extracted.canonical_text == "Limits\n\nThe column limit is 2000.\n\nRows.\n"
    assert extracted.sections[-1] == Section("Limits", 6, 41, 3)


def test_a_document_types_internal_subset_is_no_text():
    """Found by an attack: an EPUB chapter declaring an entity began ``]>`` (the parser ended
    the declaration at its first ``>``); its entity is still never expanded."""
    page = (b'<?xml version="1.0"?>\n<!DOCTYPE html [\n<!ENTITY e "expanded">\n]>\n'
            b"<html><body><h1>Chapter</h1><p>Some text &e; here.</p></body></html>")
    assert extract_html(page, "c").canonical_text == "Chapter\n\nSome text &e; here.\n"


def test_title_falls_back_to_the_h1_then_the_stem():
    assert extract_html(b"<h1>Heading</h1><p>x</p>", "stem").title == "Heading"
    assert extract_html(b"<title> </title><p>x</p>", "stem").title == "stem"


# --- chrome ---------------------------------------------------------------------------------

TEXINFO_NODE = b"""<html><head><title>Shell Syntax (Bash Reference Manual)</title></head><body>
<div class="section" id="Shell-Syntax">
<div class="header"><p>Next: <a href="a.html">Shell Commands</a>, Previous: <a href="b.html">Intro</a>,
Up: <a href="c.html">Basic Shell Features</a> &nbsp;
[<a href="index.html#SEC_Contents">Contents</a>]</p></div>
<hr>
<h3 class="section">3.1 Shell Syntax<a class="copiable-anchor" href="#Shell-Syntax"> &para;</a></h3>
<ul class="section-toc"><li><a href="d.html">Shell Operation</a></li></ul>
<p>When the shell reads input, it proceeds through a sequence of operations.</p>
<div class="nav-panel"><p>Next: <a href="a.html">Shell Commands</a></p></div>
</div></body></html>"""


def test_texinfo_panels_menus_and_anchors_are_dropped():
    extracted = extract_html(TEXINFO_NODE, "node")
    assert extracted.canonical_text == (
        "3.1 Shell Syntax\n\nWhen the shell reads input, it proceeds through a sequence of "
        "operations.\n")
    # header panel, copiable anchor, section-toc menu, nav-panel: four elements with text.
    assert extracted.notes == (("dropped_chrome_elements", "4"),)


SPHINX_PAGE = b"""<html><body>
<div class="related" role="navigation"><ul><li><a href="index.html">attrs docs</a> &raquo;</li></ul></div>
<div class="sphinxsidebar"><p>Quick search</p></div>
<header><p>Site banner</p></header>
<main><article><header><h1>API<a class="headerlink" href="#api">\xc2\xb6</a></h1></header>
<p>Kept text.</p><aside><p>A side note</p></aside>
<footer><p>Article footer kept.</p></footer></article></main>
<div hidden><p>hidden text</p></div><p style="display: none">also hidden</p>
<nav><p>Site nav</p></nav><div role="contentinfo"><p>Copyright</p></div>
<footer><p>Built with Sphinx.</p></footer>
</body></html>"""


def test_sphinx_and_html5_chrome_is_dropped_but_an_articles_own_header_and_footer_stay():
    extracted = extract_html(SPHINX_PAGE, "api")
    assert extracted.canonical_text == "API\n\nKept text.\n\nArticle footer kept.\n"
    assert extracted.title == "API"


@pytest.mark.parametrize(("repeated", "expected", "dropped"), [
    # A bar of links: every copy goes.
    ('<p><a href="a">Home</a> | <a href="b">Index</a></p>', "First text.\n\nSecond text.\n", "3"),
    # One link listed again (found by a regression trial: SQLite's doclist.html lists "Books
    # About SQLite" and its sidebar again; both copies were dropped): its first copy stays.
    ('<li><a href="books.html">Books About SQLite</a></li>',
     "Books About SQLite\n\nFirst text.\n\nSecond text.\n", "2"),
])
def test_a_repeated_paragraph_of_links_is_navigation(repeated: str, expected: str, dropped: str):
    html = f"<html><body>{repeated}<p>First text.</p>{repeated}<p>Second text.</p>{repeated}</body></html>"
    extracted = extract_html(html.encode(), "p")
    assert (extracted.canonical_text, extracted.notes) == (expected, (("dropped_repeated_links", dropped),))


def test_a_repeated_paragraph_of_text_stays():
    # Planted: the same sentence twice, no links -> content, not navigation.
    assert text_of("<p>See the note.</p><p>x</p><p>See the note.</p>") == (
        "See the note.\n\nx\n\nSee the note.\n")


def test_html_cites_characters():
    assert format_named("html").fragment((), 5, 9) == "#char=5,9"


# --- tables ---------------------------------------------------------------------------------


def test_merged_cells_leave_empty_places_so_no_column_shifts():
    extracted = extract_html(
        b"<table><thead><tr><th>A</th><th>B</th><th>C</th></tr></thead>"
        b"<tr><td rowspan=2>r</td><td colspan=2>wide</td></tr><tr><td>b2</td><td>c2</td></tr>"
        b"<tr><td></td><td>b3</td><td>c3</td></tr></table><p>after</p>", "t")
    assert extracted.canonical_text == "A\tB\tC\n\nr\twide\n\n\tb2\tc2\n\n\tb3\tc3\n\nafter\n"
    assert extracted.tables == (TableSpan(0, 29, "A\tB\tC", 5, (7, 15, 23)),)


def test_without_th_or_thead_the_first_row_is_the_header():
    extracted = extract_html(b"<table><tr><td>K</td><td>V</td></tr><tr><td>a</td><td>1</td></tr>"
                             b"</table>", "t")
    assert extracted.tables == (TableSpan(0, 8, "K\tV", 3, (5,)),)


def test_a_nested_table_belongs_to_the_cell_holding_it():
    extracted = extract_html(b"<table><tr><th>K</th><th>V</th></tr><tr><td><table><tr><td>in</td>"
                             b"</tr></table></td><td>v</td></tr></table>", "t")
    assert extracted.canonical_text == "K\tV\n\nin\n\n\tv\n"
    assert extracted.tables == (TableSpan(0, 11, "K\tV", 3, (5,)),)


def test_a_table_that_lays_a_page_out_is_prose_not_a_table():
    # A mail's wrapper (one cell round the whole text) and a signature (one row): no header
    # row over data rows, so no sentence of the text is taken for a header.
    extracted = extract_html(b"<table width=100%><tr><td><p>Hi Bob,</p><p>The deploy is on Friday "
                             b"at 10:00.</p></td></tr></table><table><tr><td>Ana Li</td><td>SRE "
                             b"lead</td></tr></table><table><tr><td>Menu</td></tr><tr><td>Body"
                             b"</td></tr></table>", "t")
    assert extracted.canonical_text == ("Hi Bob,\n\nThe deploy is on Friday at 10:00.\n\n"
                                        "Ana Li\tSRE lead\n\nMenu\n\nBody\n")
    assert extracted.tables == ()


def test_a_title_row_over_a_table_and_a_list_of_entries_under_a_header_are_tables():
    # Found by a new user's trial on real pages: gnuplot's "Date Specifiers" (a title row of
    # one cell spanning the columns) and PostgreSQL's function tables (one column, each entry a
    # cell of paragraphs, under <th>) were prose: an entry's example fell in the next chunk.
    extracted = extract_html(
        b'<table><tr><td colspan="2">Date Specifiers</td></tr><tr><td>Format</td><td>Explanation'
        b"</td></tr><tr><td>%a</td><td>day name</td></tr><tr><td>%b</td><td>month name</td></tr>"
        b"</table><table><thead><tr><th><p>Function</p><p>Description</p></th></tr></thead>"
        b"<tbody><tr><td><p>lcm(a, b)</p><p>Least common multiple</p></td></tr><tr><td>"
        b"<p>gcd(a, b)</p><p>Greatest common divisor</p></td></tr></tbody></table>", "t")
    text = extracted.canonical_text
    assert text == ("Date Specifiers\n\nFormat\tExplanation\n\n%a\tday name\n\n%b\tmonth name\n\n"
                    "Function\n\nDescription\n\nlcm(a, b)\n\nLeast common multiple\n\ngcd(a, b)\n\n"
                    "Greatest common divisor\n")
    assert [(table.header, [text[row:row + 9] for row in table.rows]) for table in extracted.tables] == [
        ("Format\tExplanation", ["%a\tday na", "%b\tmonth "]),
        ("Function\n\nDescription", ["lcm(a, b)", "gcd(a, b)"])]


def test_a_long_table_keeps_its_header_in_every_chunk():
    rows = "".join(f"<tr><td>{site}</td><td>{lead}</td><td>{hours}</td></tr>"
                   for site, lead, hours in shift_rows())
    extracted = extract_html(f"<h1>Shifts</h1><p>Who works where.</p><table><tr><th>Site</th>"
                             f"<th>Lead</th><th>Duration</th></tr>{rows}</table>".encode(), "s")
    (table,) = extracted.tables
    assert len(table.rows) == 60 and table.header == "Site\tLead\tDuration"
    chunked_under_header("s.html", extracted, cell_end="\t")


@pytest.mark.parametrize(("cells", "reason"), [
    (11, "a table row reaches column 11,000, past 10,000: its cells' colspan values make no table "
         "a reader could see"),
    (9, "its tables take over 5,000,000 cells and empty places (rowspan and colspan): too large "
        "to read"),
])
def test_spans_that_would_fill_millions_of_empty_places_fail_the_document(cells: int, reason: str):
    """Found by an attack: 13 KB of colspan=1000 cells made 15 million characters and 5.9 GB;
    a one-cell row under cells spanning 1,000 rows takes 9,000 places in 18 bytes."""
    head = "".join('<td colspan="1000" rowspan="1000">x</td>' for _ in range(cells))
    page = f"<html><body><table><tr>{head}</tr>{'<tr><td>y</td></tr>' * 999}</table></body></html>"
    with pytest.raises(ExtractionError) as failed:
        extract_html(page.encode(), "spans")
    assert str(failed.value) == reason



def test_a_page_of_more_elements_than_the_limit_fails_unparsed(monkeypatch: pytest.MonkeyPatch):
    """Found by an attack: a 20 MB page of 5 million ``<li>`` took 5.4 GB to parse."""
    from rag_pipeline.core.ingest.formats import html

    monkeypatch.setattr(html, "MAX_ELEMENTS", 10)
    page = b"<html><body><ul>" + b"<li>x" * 7 + b"</ul></body></html>"  # 10 start tags: read
    assert text_of("<ul>" + "<li>x" * 7 + "</ul>") == "x\n\n" * 6 + "x\n"
    with pytest.raises(ExtractionError) as raised:
        extract_html(page.replace(b"<li>x</ul>", b"<li>x<li>y</ul>"), "page")
    assert str(raised.value) == ("11 elements and comments: over the limit of 10 an HTML page "
                                 "(its parse would take about 1 KB of memory each)")
    # Found by a second attack: comments are nodes too (2.4 million, each after a letter of
    # text, took 2.8 GB), and were not counted.
    with pytest.raises(ExtractionError) as raised:
        extract_html(b"<p>" + b"x<!---->" * 10 + b"</p>", "comments")
    assert str(raised.value).startswith("11 elements and comments: over the limit of 10")


def test_a_later_h1_titles_its_own_section_and_an_admonitions_heading_is_its_label():
    page = (b"<html><head><title>Guide</title></head><body><h1>Guide</h1><p>Intro.</p>"
            b"<h1>Releases</h1><p>Version 2.</p>"
            b"<div class='admonition note'><h4>Note</h4><p>Read this first.</p></div>"
            b"<p>After the note.</p><h2>Fixes</h2><p>Many.</p></body></html>")
    extracted = extract_html(page, "guide")
    text = extracted.canonical_text
    assert [(s.title, s.level, text[s.start:s.end].strip()) for s in extracted.sections] == [
        ("Guide", 1, ""), ("Guide", 1, "Intro."),
        ("Releases", 1, "Version 2.\n\nNote\n\nRead this first.\n\nAfter the note."),
        ("Fixes", 2, "Many.")]


@pytest.mark.parametrize(("charset", "words", "encoding"), [
    ("gb2312", "朱镕基访问了公司。", "gbk"),  # a GBK character under gb2312: the page was lost
    ("shift_jis", "会議は①番の部屋です。", "cp932"),  # ① is cp932's, not Shift_JIS's
    ("iso-8859-1", "We’re meeting “Monday”.", "cp1252"),  # were control characters
    ("iso-8859-1", "café \x81", "latin-1"),  # no windows-1252 byte: read by the label
])
def test_a_pages_declared_charset_is_read_as_browsers_read_its_label(charset, words, encoding):
    page = f'<html><head><meta charset="{charset}"></head><body><p>{words}</p></body></html>'
    assert extract_html(page.encode(encoding), "p").canonical_text == f"{words}\n"


def test_a_page_with_a_stray_byte_keeps_its_text_and_counts_the_byte():
    """Found by a helper: a gb2312 page (and shift_jis, euc-jp, euc-kr, big5 ones) with one bad
    byte was read as nothing, and failed as "no text"."""
    words = "数据库备份每天凌晨三点自动执行。" * 20
    page = f'<html><head><meta charset="gb2312"></head><body><p>{words}</p><p>X</p></body></html>'
    data = page.encode("gb2312").replace(b"X", b"\xff")
    extracted = extract_html(data, "p")
    assert extracted.canonical_text == f"{words}\n\n\ufffd\n"
    assert extracted.notes == (("charset_replaced", "1"),)


@pytest.mark.parametrize(("encoding", "words", "guessed"), [
    ("cp1251", "Резервное копирование базы данных выполняется каждую ночь.", "windows-1251"),
    ("latin-1", "Les nuitées sont remboursées, à jeudi.", "windows-1252"),
])
def test_a_page_declaring_no_charset_is_read_and_the_guess_said(encoding, words, guessed):
    page = f"<html><body><p>{words}</p></body></html>".encode(encoding)
    extracted = extract_html(page, "p")
    assert (extracted.canonical_text, extracted.notes) == (f"{words}\n", (("charset_guessed", guessed),))
