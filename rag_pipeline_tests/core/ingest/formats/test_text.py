"""Tests for ``rag_pipeline.core.ingest.formats.text``: plain text has no Markdown headings."""

from __future__ import annotations

from rag_pipeline.core.chunking.strategies import ChunkingStrategy, chunk_document
from rag_pipeline.core.ingest.formats.text import TextFormat

# A shell session saved as text: "# " lines are comments, not headings.
SESSION = b"Set up the tool:\r\n\r\n# install it first\r\npip install tool\r\n# then run\r\ntool --go\r\n"


def test_text_has_no_sections_and_keeps_comment_lines_as_text():
    extracted = TextFormat().extract(SESSION, "setup")
    assert (extracted.title, extracted.sections) == ("setup", ())
    assert extracted.canonical_text == ("Set up the tool:\n\n# install it first\npip install tool\n"
                                        "# then run\ntool --go\n")


def test_a_comment_line_in_text_stays_in_its_chunk():
    extracted = TextFormat().extract(SESSION, "setup")
    chunks = chunk_document("setup.txt", extracted.title, extracted.canonical_text,
                            ChunkingStrategy.HEADER, sections=extracted.sections)
    # One chunk from the first character to the last non-blank one; both comments inside it.
    assert [(c.start, c.end, c.section) for c in chunks] == [(0, 74, "setup")]
    assert "# install it first\npip install tool\n# then run" in chunks[0].content
