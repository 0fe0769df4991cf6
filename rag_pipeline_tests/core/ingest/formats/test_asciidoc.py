"""AsciiDoc: the file as it is, sections at ``=`` titles outside delimited blocks."""

from __future__ import annotations

from rag_pipeline.core.chunking.strategies import body_sections
from rag_pipeline.core.ingest.extracted import Section
from rag_pipeline.core.ingest.formats.asciidoc import AsciiDocFormat

ADOC = AsciiDocFormat()

GUIDE = (b"= User Guide\n:toc:\n\nPreamble text.\n\n== Install\n\nRun it.\n\n"
         b"----\n= not a title\n----\n\n=== Details ===\n\nFine print.\n")


def test_titles_outside_blocks_make_sections():
    extracted = ADOC.extract(GUIDE, "guide")
    assert extracted.canonical_text == GUIDE.decode()
    assert extracted.title == "User Guide"
    text = extracted.canonical_text
    # The document title is a level-1 section, so `==` is level 2: as `#` and `##` in Markdown.
    assert [(s.title, s.level, text[s.start:s.end]) for s in extracted.sections] == [
        ("User Guide", 1, ""),  # nothing before the title line
        ("User Guide", 1, "\n:toc:\n\nPreamble text.\n\n"),
        # The "= not a title" line is inside a listing block: code, not a title.
        ("Install", 2, "\n\nRun it.\n\n----\n= not a title\n----\n\n"),
        ("Details", 3, "\n\nFine print.\n")]
    assert extracted.sections[2] == Section("Install", 46, 82, 2)


def test_without_a_document_title_the_stem_titles_it():
    extracted = ADOC.extract(b"Plain words.\n", "notes")
    assert (extracted.title, extracted.sections) == ("notes", (Section("notes", 0, 13, 1),))


def test_a_title_line_of_many_blanks_is_read_at_once_and_titles_keep_their_shape():
    """Found by an attack: a line ``= a<blanks>b`` took time growing with the cube of its
    blanks (4 KB, 59 s)."""
    from rag_pipeline.core.ingest.formats.asciidoc import title_spans
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    line = "== a" + " " * 40_000 + "b"
    with document_reading_limits(10):
        assert title_spans(f"= Guide\n\n{line}\n") == [(0, 7, 0, "Guide"),
                                                       (9, 9 + len(line), 1, line[3:])]
    assert [span[2:] for span in title_spans(
        "== Closed ==  \n=== A=B\n== ==\n======= Seven\n==  \n= Two  words =\n")] == [
        (1, "Closed"), (2, "A=B"), (1, "=="), (0, "Two  words")]


def test_two_line_titles_make_sections_as_asciidoctor_reads_them():
    """Found by a new user: ``Observability standards`` over a line of 23 ``=`` was read as an
    example block that never closed, so the document lost its title and every section."""
    text = ("Observability standards\n=======================\nDana Okafor\n:revdate: 2025-01-09\n\n"
            "Metrics\n-------\n\nNames end in _total.\n\nRetention\n~~~~~~~~~~\n\nThirty days.\n\n"
            "[source]\n--------\nrate(x[5m])\n--------\n\nSee this:\n----\nnot a title\n----\n")
    extracted = ADOC.extract(text.encode(), "observability-standards")
    assert extracted.title == "Observability standards"
    assert [(s.title, s.level, text[s.start:s.end]) for s in extracted.sections] == [
        ("Observability standards", 1, ""),
        ("Observability standards", 1, "\nDana Okafor\n:revdate: 2025-01-09\n\n"),
        ("Metrics", 2, "\n\nNames end in _total.\n\n"),
        # An underline one character longer is still a title's.
        ("Retention", 3, "\n\nThirty days.\n\n[source]\n--------\nrate(x[5m])\n--------\n\n"
                         "See this:\n----\nnot a title\n----\n")]


def test_a_line_over_a_delimiter_of_another_length_or_inside_a_paragraph_is_no_title():
    text = ("= Guide\n\nSee this:\n-----------------\nrun it\n-----------------\n\n"
            "A paragraph line\nWrapped here\n============\nexample\n============\n")
    extracted = ADOC.extract(text.encode(), "guide")
    assert [(s.title, s.level) for s in extracted.sections] == [("Guide", 1), ("Guide", 1)]


def test_a_title_with_nothing_under_it_titles_the_deeper_one_below():
    """AsciiDoc's sections come from the headings as Markdown's do: the document title is level
    1, ``==`` level 2, so a blank ``== Install`` is over ``=== Linux``."""
    extracted = ADOC.extract(b"= Guide\n\nIntro text.\n\n== Install\n\n=== Linux\n\nRun apt.\n", "guide")
    assert [s.title for s in body_sections(extracted.canonical_text, extracted.title,
                                           extracted.sections)] == ["Guide", "Install > Linux"]
