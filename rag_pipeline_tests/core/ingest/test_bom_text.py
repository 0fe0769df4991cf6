"""Tests for ``rag_pipeline.core.ingest.bom_text``: the charset a text file is read by."""

from __future__ import annotations

import codecs

import pytest

from rag_pipeline.core.ingest.bom_text import NOT_GUESSED, decode_text, text_charset
from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.formats import REGISTRY


@pytest.mark.parametrize(("data", "charset"), [
    ("Große Straße\n".encode(), "utf-8"),
    (codecs.BOM_UTF8 + "Größe\n".encode(), "utf-8"),
    (codecs.BOM_UTF16_LE + "Größe\n".encode("utf-16-le"), "utf-16le"),
    (codecs.BOM_UTF16_BE + "Größe\n".encode("utf-16-be"), "utf-16be"),
    (codecs.BOM_UTF32_LE + "Größe\n".encode("utf-32-le"), "utf-32le"),
    ("Die Kantine öffnet um 12 Uhr, Kaffee kostet 1,50 €.\n".encode("windows-1252"), "windows-1252"),
    (b"plain ASCII\n", "utf-8"),
    ("Zebras graze at dawn.\nGröße\n".encode("utf-16-le"), "utf-16le"),
    ("Zebras graze at dawn.\nGröße\n".encode("utf-16-be"), "utf-16be"),
    ("Привет, мир\n".encode("koi8-r"), None),
    (b"%PDF-1.7\n\xe9\xe8\xe7\xe6\n", None),
])
def test_the_charset_named_is_the_one_the_text_is_read_by(data: bytes, charset: str | None):
    assert text_charset(data) == charset
    if charset is not None:
        body = data.removeprefix(codecs.BOM_UTF8) if charset == "utf-8" else data
        assert body.decode(charset).lstrip("\ufeff") == decode_text(data, "text").text


def test_the_formats_read_as_plain_text_are_the_text_ones():
    assert sorted(fmt.name for fmt in REGISTRY if fmt.plain_text) == [
        "asciidoc", "csv", "info", "man", "markdown", "rst", "srt", "text", "webvtt"]


def test_a_file_of_another_type_fails_naming_what_its_first_bytes_are():
    """A PDF saved as ``report.txt`` failed on "byte 0xe2 at offset 10": its reader learns it
    is a PDF (found by a user)."""
    pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"
    with pytest.raises(ExtractionError) as failed:
        decode_text(pdf, "text")
    assert str(failed.value) == ("not text: its first bytes are those of a PDF (b'%PDF-1.4'); "
                                 "rename it to its real type")
    with pytest.raises(ExtractionError) as failed:
        decode_text(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00\xfe\xff", "CSV")
    assert str(failed.value) == (
        "not CSV: its first bytes are those of an old Office document (.doc, .xls, .ppt) or an "
        "Outlook .msg (b'\\xd0\\xcf\\x11\\xe0\\xa1\\xb1\\x1a\\xe1'); rename it to its real type")
    # Media files (found by a new user: a recording's .m4a failed on "a NUL byte at offset 0").
    from rag_pipeline.core.ingest.containers import not_text_reason

    assert [not_text_reason(lead + b"\x00" * 12) for lead in (
        b"\x00\x00\x00\x20ftypM4A ", b"ID3\x04", b"RIFF\x24\x08\x00\x00WAVE")] == [
        "binary: its first bytes are those of an MP4 audio or video file (.mp4, .m4a, .mov)",
        "binary: its first bytes are those of an MP3 audio file",
        "binary: its first bytes are those of a RIFF file (WAV audio, AVI video or a WebP image)"]
    with pytest.raises(ExtractionError, match=r"^not UTF-8: byte 0xff at offset 3 "):
        decode_text(b"abc\xff\xfe\xfd", "text")
    assert decode_text(b"%PDF-1.4 is the version we ship\n", "text").text == (
        "%PDF-1.4 is the version we ship\n")


def test_a_pdf_of_ascii_bytes_alone_fails_as_a_pdf():
    """Found by a newcomer's trial: a one-page PDF written in ASCII alone, saved as
    ``report.txt``, was indexed ``ok`` with PDF syntax as its text."""
    pdf = (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
           b"trailer\n<< /Root 1 0 R >>\nstartxref\n9\n%%EOF\n")
    for kind in ("text", "Markdown", "CSV"):
        with pytest.raises(ExtractionError) as failed:
            decode_text(pdf, kind)
        assert str(failed.value) == (f"not {kind}: its first bytes are those of a PDF "
                                     "(b'%PDF-1.4'); rename it to its real type")
    # A note that quotes a PDF's first and last lines is a note.
    note = b"%PDF-1.7\nis the version line; a PDF ends with %%EOF\n" + b"More words.\n" * 100
    assert decode_text(note, "text").text == note.decode()


def test_utf16_without_a_mark_is_read_as_utf16_and_says_so():
    """Found by an attack: read as UTF-8, it was ok with a NUL between every letter, and no
    word of it could be found."""
    decoded = decode_text("Zebras graze\r\nat dawn.\n".encode("utf-16-le"), "text")
    assert (decoded.text, decoded.notes) == ("Zebras graze\nat dawn.\n",
                                             (("charset_guessed", "utf-16-le"),))
    # A last odd byte (a file cut, or ended by one "\n") is read as the ASCII it is.
    odd = decode_text("Zebras graze.".encode("utf-16-le") + b"\n", "text")
    assert (odd.text, odd.notes) == ("Zebras graze.\n", (("charset_guessed", "utf-16-le"),))


@pytest.mark.parametrize(("data", "reason"), [
    # Found by a second attack: Cyrillic in UTF-16 without a mark holds no NUL, and is valid
    # UTF-8 of control characters; binary data renamed .txt passed the UTF-16 guess.
    ("Привет, мир\n".encode("utf-16-le"), "not text: 13 of its 24 characters are control "
     "characters (binary data, or UTF-16 without a byte-order mark in a script other than "
     "Latin: save it as UTF-8)"),
    (bytes([0, 37, 74, 111, 148, 185, 222, 0, 5, 0]) * 30, "not UTF-8: byte 0x94 at offset 4 "
     "(invalid start byte); text files are read as UTF-8, or as UTF-16/UTF-32 with a byte-order "
     "mark, or as windows-1252 when plainly that: " + NOT_GUESSED),
    # Found by an international team: Japanese UTF-16 without a mark failed naming a byte
    # only, and never said to save it as UTF-8.
    ("日本語の説明書です。\n".encode("utf-16-le"), "not UTF-8: byte 0xe5 at offset 0 (invalid "
     "continuation byte); text files are read as UTF-8, or as UTF-16/UTF-32 with a byte-order "
     "mark, or as windows-1252 when plainly that: save it as UTF-8 (another encoding, such as "
     "Shift-JIS, GB18030, KOI8-R or UTF-16 without a byte-order mark, is not guessed)"),
])
def test_text_of_control_characters_fails_saying_what_it_may_be(data: bytes, reason: str):
    with pytest.raises(ExtractionError) as failed:
        decode_text(data, "text")
    assert str(failed.value) == reason


def test_markdown_with_pasted_terminal_colours_is_still_read():
    # 6 control characters of 147: under the 10 % a file a text format claims may hold.
    text = "Output: " + "\x1b[31mred\x1b[0m " * 3 + "and the prose around it. " * 4
    assert decode_text(text.encode(), "Markdown").text == text
