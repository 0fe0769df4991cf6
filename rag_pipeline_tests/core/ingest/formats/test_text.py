"""Tests for ``rag_pipeline.core.ingest.formats.text``: plain text has no Markdown headings."""

from __future__ import annotations

import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy, chunk_document
from rag_pipeline.core.ingest.bom_text import NOT_GUESSED
from rag_pipeline.core.ingest.extracted import ExtractionError
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


def test_utf16_with_a_byte_order_mark_is_read_and_other_bytes_fail_with_their_offset():
    import pytest

    from rag_pipeline.core.ingest.extracted import ExtractionError

    notes = "Caf\u00e9 opens at nine.\r\n".encode("utf-16")  # a Windows "Unicode" save
    assert TextFormat().extract(notes, "n").canonical_text == "Caf\u00e9 opens at nine.\n"
    latin = TextFormat().extract("Caf\u00e9 opens at nine.\r\n".encode("latin-1"), "l")
    assert (latin.canonical_text, latin.notes) == ("Caf\u00e9 opens at nine.\n",
                                                   (("charset_guessed", "windows-1252"),))
    with pytest.raises(ExtractionError) as raised:  # 0x81: no windows-1252 character
        TextFormat().extract(b"Caf\x81 opens at nine.\n", "l")
    assert str(raised.value) == (
        "not UTF-8: byte 0x81 at offset 3 (invalid start byte); text files are read as UTF-8, or "
        "as UTF-16/UTF-32 with a byte-order mark, or as windows-1252 when plainly that: " + NOT_GUESSED)
    with pytest.raises(ExtractionError):  # a NUL byte: not text in any 8-bit encoding
        TextFormat().extract(b"Caf\xe9\x00 opens at nine.\n", "l")
    with pytest.raises(ExtractionError):  # a byte-order mark declares UTF-8: nothing guessed
        TextFormat().extract(b"\xef\xbb\xbfCaf\xe9 opens at nine.\n", "l")


@pytest.mark.parametrize("data", [
    # UTF-8 gone wrong, not windows-1252: one stray byte, or a cut inside a character.
    "Caf\u00e9 opens at nine. Jos\u00e9 has the key.\n".encode() + b"It\x92s open.\n",
    "Caf\u00e9 opens at nine. Jos\u00e9 has the key.\n".encode() + "\u00fc".encode()[:1],
    # Legacy encodings of words in other scripts, in mostly ASCII text.
    "Owner: \u62c5\u5f53\u8005\u306f\u7530\u4e2d\u3067\u3059, ticket AT-2290 is open\n".encode("shift_jis"),
    "Owner: \u0418\u0432\u0430\u043d, ticket AT-2290 is open today and tomorrow\n".encode("koi8_r"),
    "Owner: \u5f20\u4f1f, ticket AT-2290 is open today and tomorrow\n".encode("gbk"),
])
def test_text_that_is_not_plainly_windows_1252_is_not_guessed(data: bytes):
    with pytest.raises(ExtractionError) as raised:
        TextFormat().extract(data, "l")
    assert str(raised.value).startswith("not UTF-8: byte 0x")

