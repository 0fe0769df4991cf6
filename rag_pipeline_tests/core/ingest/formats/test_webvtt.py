"""WebVTT: cues into paragraphs, voices as ``Name: text``, one ``t=`` anchor per cue, ``#t=`` fragments."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.cues import cue_turns
from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError
from rag_pipeline.core.ingest.formats.webvtt import WebVttFormat

WEBVTT = WebVttFormat()

TALK = """WEBVTT - a talk

STYLE
::cue { color: yellow }

NOTE the STYLE block above and this note
are never text

intro
00:00:12.500 --> 00:00:15.000 align:start line:10%
<v Roger Bingham>We are in <b>New York</b> City

00:00:15.000 --> 00:00:18.250
<v Roger Bingham>and it is <i>late</i> &amp; cold.

00:00:18.250 --> 00:00:20.000
<v.loud Neil>Hello,
<c.yellow>Roger</c>.

00:00:25.000 --> 00:01:02.125
<v Neil>After a <00:00:26.000>pause.
"""

TALK_TEXT = ("Roger Bingham: We are in New York City and it is late & cold.\n\n"
             "Neil: Hello, Roger.\n\n"
             "Neil: After a pause.\n")


def test_cues_join_into_paragraphs_per_speaker_and_pause():
    extracted = WEBVTT.extract(TALK.encode(), "talk")
    assert extracted.title == "talk"
    assert extracted.canonical_text == TALK_TEXT
    assert extracted.anchors == (
        Anchor(0, 38, "t=12.500,15.000"),  # "Roger Bingham: We are in New York City"
        Anchor(39, 61, "t=15.000,18.250"),
        Anchor(63, 82, "t=18.250,20.000"),  # a new speaker: a new paragraph
        Anchor(84, 104, "t=25.000,62.125"),  # five seconds of silence: a new paragraph
    )
    assert [TALK_TEXT[a.start:a.end] for a in extracted.anchors] == [
        "Roger Bingham: We are in New York City", "and it is late & cold.", "Neil: Hello, Roger.",
        "Neil: After a pause."]
    assert extracted.notes == (("cues", "4"),)


def test_a_span_over_several_cues_cites_first_start_to_last_end():
    anchors = WEBVTT.extract(TALK.encode(), "talk").anchors
    assert WEBVTT.fragment(anchors, 0, 81) == "#t=12.500,20.000"
    assert WEBVTT.fragment(anchors, 50, 90) == "#t=15.000,62.125"
    assert WEBVTT.fragment(anchors, 63, 82) == "#t=18.250,20.000"
    assert WEBVTT.fragment((), 1, 2) == "#char=1,2"


def test_several_voices_in_one_cue_are_turns_of_their_own():
    assert cue_turns("<v A>Hi.</v> <v B>Hello &lt;3</v>") == (("A", "Hi."), ("B", "Hello <3"))
    assert cue_turns("plain <ruby>kan<rt>ji</rt></ruby>&nbsp;text") == ((None, "plain kanji text"),)


def test_crlf_and_a_bom_read_the_same():
    crlf = ("\ufeff" + TALK.replace("\n", "\r\n")).encode()
    assert WEBVTT.extract(crlf, "talk").canonical_text == TALK_TEXT


@pytest.mark.parametrize(("data", "reason"), [
    (b"00:01.000 --> 00:02.000\nno signature\n", "not a WebVTT file (Invalid format): it must start with "
                                                 "the line WEBVTT"),
    (b"WEBVTT\n\n00:01.000 --> 00:02.000\nfine\n\nbroken --> x\ntext\n",
     "malformed WebVTT block: Invalid cue block ['broken --> x', 'text']"),  # not silently dropped
    (b"WEBVTT\n\n00:05.000 --> 00:02.000\nbackwards\n", "cue 1 ends before it starts: 5.000 --> 2.000 s"),
    (b"WEBVTT\n\n00:01.000 --> 00:02.000\n\x81\n", "not UTF-8: byte 0x81 at offset 32 (invalid start byte); "
                                                  "WebVTT files are read as UTF-8, or as UTF-16/UTF-32 "
                                                  "with a byte-order mark, or as windows-1252 when "
                                                  "plainly that: save it as UTF-8 (another "
                                                  "encoding, such as Shift-JIS, GB18030, KOI8-R or "
                                                  "UTF-16 without a byte-order mark, is not "
                                                  "guessed)"),
])
def test_a_broken_file_fails_with_its_reason(data: bytes, reason: str):
    with pytest.raises(ExtractionError) as raised:
        WEBVTT.extract(data, "bad")
    assert str(raised.value) == reason


def test_header_metadata_regions_and_karaoke_timestamps_are_not_text():
    # The shape YouTube and many captioning tools write: metadata lines under the signature,
    # a REGION block, cue settings and inline timestamps with class spans.
    data = (b"WEBVTT\nKind: captions\nLanguage: en\n\nREGION\nid:fred width:40%\n\n"
            b"00:00:01.000 --> 00:00:02.000 align:start position:0%\nhello<00:00:01.500><c> world</c>\n\n"
            b"00:00:03.000 --> 00:00:04.000 region:fred\nagain\n")
    extracted = WEBVTT.extract(data, "captions")
    assert extracted.canonical_text == "hello world again\n"
    assert extracted.anchors == (Anchor(0, 11, "t=1.000,2.000"), Anchor(12, 17, "t=3.000,4.000"))


def test_unclosed_position_codes_of_any_number_are_read_at_once():
    # Found by an attack: a cue of many "{\" without "}" took time growing with their square.
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    data = ("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nhello " + "{\\" * 150_000 + "\n").encode()
    with document_reading_limits(10):
        assert WEBVTT.read(data, "talk").canonical_text == "hello " + "{\\" * 150_000 + "\n"
    assert cue_turns("<v.loud.a Bob>Hi</v> there {\\an8}<i>now</i>") == (("Bob", "Hi"),
                                                                      (None, "there now"))
