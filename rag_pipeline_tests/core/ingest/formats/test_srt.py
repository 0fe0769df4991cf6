"""SRT: cues into paragraphs, styling dropped, one ``t=`` anchor per cue, ``#t=`` fragments."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError
from rag_pipeline.core.ingest.formats.srt import SrtFormat, parse_srt

SRT = SrtFormat()

FILM = """1
00:00:01,000 --> 00:00:04,000
{\\an8}<i>Previously</i> on
the <font color="#ff0000">show</font>:

2
00:00:04,000 --> 00:00:06,500 X1:40 X2:600 Y1:20 Y2:50
a lost key.

3
00:01:10,000 --> 00:01:12,000
Much later,

and a blank line inside the cue.
"""

FILM_TEXT = "Previously on the show: a lost key.\n\nMuch later, and a blank line inside the cue.\n"


def test_cues_join_into_paragraphs_with_styling_dropped():
    extracted = SRT.extract(FILM.encode(), "film")
    assert extracted.canonical_text == FILM_TEXT
    assert extracted.anchors == (Anchor(0, 23, "t=1.000,4.000"), Anchor(24, 35, "t=4.000,6.500"),
                                 Anchor(37, 81, "t=70.000,72.000"))
    assert [FILM_TEXT[a.start:a.end] for a in extracted.anchors] == [
        "Previously on the show:", "a lost key.", "Much later, and a blank line inside the cue."]
    assert extracted.title == "film"


def test_a_span_over_several_cues_cites_first_start_to_last_end():
    anchors = SRT.extract(FILM.encode(), "film").anchors
    assert SRT.fragment(anchors, 0, 35) == "#t=1.000,6.500"
    assert SRT.fragment(anchors, 30, 81) == "#t=4.000,72.000"


def test_cues_out_of_time_order_or_overlapping_cite_earliest_start_to_latest_end():
    # Found by an attack: the second cue (1 s to 2 s) before the first (60 s to 65 s) in time
    # gave `#t=60.000,2.000`, an end before the start, which names no span.
    shuffled = ("1\n00:01:00,000 --> 00:01:05,000\nLater words here.\n\n"
                "2\n00:00:01,000 --> 00:00:02,000\nEarlier words here.\n\n"
                "3\n00:00:01,500 --> 00:00:01,800\nA cue inside the second.\n")
    extracted = SRT.extract(shuffled.encode(), "shuffled")
    assert SRT.fragment(extracted.anchors, 0, len(extracted.canonical_text)) == "#t=1.000,65.000"
    second = extracted.canonical_text.index("Earlier")
    assert SRT.fragment(extracted.anchors, second, len(extracted.canonical_text)) == "#t=1.000,2.000"


def test_a_dot_for_the_comma_and_short_fractions_are_read():
    cues = parse_srt("1\n01:02:03.5 --> 01:02:04.25\nx\n")
    assert (cues[0].start_ms, cues[0].end_ms) == (3723500, 3724250)


@pytest.mark.parametrize(("text", "reason"), [
    # webvtt-py reads this file as two cues, cue 3's number and text inside cue 2's text
    ("1\n00:00:01,000 --> 00:00:02,000\nhi\n\n2\n00:00:03,000 --> 00:00:04,000\nyo\n\n3\nbad time\nx\n",
     "cue 3 (line 10): expected a timing line like 00:00:01,000 --> 00:00:02,000, got 'bad time'"),
    ("hello\n", "not an SRT file: line 1 is 'hello', expected a cue number or a timing line like "
                "00:00:01,000 --> 00:00:02,000"),
    ("1\n", "not an SRT file: no timing line like 00:00:01,000 --> 00:00:02,000"),
    ("1\n00:00:09,000 --> 00:00:02,000\nx\n", "cue 1 ends before it starts: 9.000 --> 2.000 s"),
])
def test_a_broken_file_fails_with_its_reason(text: str, reason: str):
    with pytest.raises(ExtractionError) as raised:
        SRT.extract(text.encode(), "bad")
    assert str(raised.value) == reason


def test_a_line_of_non_ascii_digits_is_text():
    # "²".isdigit() is True but int("²") raises: such a line is cue text, not a cue number.
    cues = parse_srt("1\n00:00:01,000 --> 00:00:02,000\nx\n\n\u00b2\n")
    assert cues[0].turns == ((None, "x \u00b2"),)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_a_byte_order_mark_declares_the_encoding(encoding: str):
    data = FILM.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data  # Python's utf-16-be codec writes no mark
    assert SRT.extract(data, "film").canonical_text == FILM_TEXT


def test_a_utf16_mark_over_bytes_that_are_not_utf16_fails_with_the_offset():
    with pytest.raises(ExtractionError, match=r"^not UTF-16: byte 0x0a at offset 4 \(truncated data\)"):
        SRT.extract(b"\xff\xfe1\x00\n", "odd")


def test_a_voice_tag_or_unclosed_tags_of_any_length_are_read_at_once():
    """Found by an attack: a voice tag of dots and no space (``<v.a.a...>``) took time growing
    four times with each two characters (55 characters, 8.6 s), a cue of unclosed ``<`` with
    the square of their number. Read under a limit far above what they take now."""
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    voice = ("1\n00:00:01,000 --> 00:00:02,000\n<v" + ".a" * 60 + "> hello\n").encode()
    opened = ("1\n00:00:01,000 --> 00:00:02,000\nhello " + "<" * 100_000 + "\n").encode()
    with document_reading_limits(10):
        assert SRT.read(voice, "talk").canonical_text == "hello\n"
        assert SRT.read(opened, "talk").canonical_text == "hello " + "<" * 100_000 + "\n"
