"""``heading_sections``: the one way a format's heading lines become titled sections."""

from __future__ import annotations

from rag_pipeline.core.ingest.extracted import Section
from rag_pipeline.core.ingest.heading_sections import heading_sections

TEXT = "Intro\n# Guide\nBody\n## Empty\n### Deep\nMore\n# Later\nEnd\n"
HEADINGS = [(6, 13, 1, "Guide"), (19, 27, 2, "Empty"), (28, 36, 3, "Deep"), (42, 49, 1, "Later")]


def test_the_first_level_one_heading_titles_the_document_and_a_later_one_its_own_body():
    assert [TEXT[s:e] for s, e, _, _ in HEADINGS] == ["# Guide", "## Empty", "### Deep", "# Later"]
    assert heading_sections(HEADINGS, len(TEXT), "Guide doc") == (
        Section("Guide doc", 0, 6, 1),
        Section("Guide doc", 13, 19, 1),
        Section("Empty", 27, 28, 2),  # blank, kept: it titles the deeper one below it
        Section("Deep", 36, 42, 3),
        Section("Later", 49, 54, 1))


def test_when_the_first_level_one_heading_is_no_title_it_titles_its_own_body():
    sections = heading_sections(HEADINGS, len(TEXT), "FROB(1)", first_is_title=False)
    assert [(s.title, TEXT[s.start:s.end]) for s in sections] == [
        ("FROB(1)", "Intro\n"), ("Guide", "\nBody\n"), ("Empty", "\n"), ("Deep", "\nMore\n"),
        ("Later", "\nEnd\n")]


def test_no_headings_is_one_section_titled_by_the_document():
    assert heading_sections([], 9, "notes") == (Section("notes", 0, 9, 1),)
