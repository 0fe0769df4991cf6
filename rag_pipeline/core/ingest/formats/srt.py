"""SRT (SubRip) transcripts: cues joined into paragraphs, each cue cited by ``#t=start,end``.

Parsed with the standard library: webvtt-py reads SRT too, but measured on a file whose third
cue has a broken timing line it merged that cue (its number and text) into the second cue's
text without a word; this parser names the cue and the line instead. A cue is an optional
number line, a timing line ``00:00:12,500 --> 00:00:15,000`` (``.`` accepted for ``,``, trailing
position coordinates ignored) and its text lines, blank lines inside a cue's text kept as text.
See :mod:`rag_pipeline.core.ingest.cues` for the paragraphs and anchors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.cues import (
    Cue,
    check_times,
    cue_text,
    cue_turns,
    time_fragment,
)
from rag_pipeline.core.ingest.extracted import Anchor, Extracted, ExtractionError, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat

_TIME = r"(\d+):([0-5]\d):([0-5]\d)[,.](\d{1,3})"
_TIMING = re.compile(rf"[ \t]*{_TIME}[ \t]*-->[ \t]*{_TIME}(?:[ \t].*)?")
_NUMBER = re.compile(r"[ \t]*[0-9]+[ \t]*")


def _milliseconds(hours: str, minutes: str, secs: str, fraction: str) -> int:
    return ((int(hours) * 60 + int(minutes)) * 60 + int(secs)) * 1000 + int(fraction.ljust(3, "0"))


def parse_srt(text: str) -> list[Cue]:
    """The cues of an SRT file, in file order.

    Raises:
        ExtractionError: Text before the first cue, or a numbered block whose next line is
            not a timing line, with its line number.
    """
    lines = text.split("\n")
    timings: list[tuple[int, int]] = []
    texts: list[list[str]] = []
    after_blank = True
    for number, line in enumerate(lines, start=1):
        timing = _TIMING.fullmatch(line)
        if timing:
            if texts and texts[-1] and _NUMBER.fullmatch(texts[-1][-1]):
                texts[-1].pop()  # the cue number line just read belongs to this cue
            groups = timing.groups()
            timings.append((_milliseconds(*groups[:4]), _milliseconds(*groups[4:])))
            texts.append([])
        elif not timings:
            if line.strip() and not _NUMBER.fullmatch(line):
                raise ExtractionError(f"not an SRT file: line {number} is {line.strip()[:60]!r}, "
                                      "expected a cue number or a timing line like "
                                      "00:00:01,000 --> 00:00:02,000")
        else:
            following = lines[number] if number < len(lines) else ""
            if (after_blank and _NUMBER.fullmatch(line) and int(line) == len(timings) + 1
                    and following.strip() and not _TIMING.fullmatch(following)):
                raise ExtractionError(f"cue {int(line)} (line {number + 1}): expected a timing line "
                                      f"like 00:00:01,000 --> 00:00:02,000, got {following.strip()[:60]!r}")
            texts[-1].append(line)
        after_blank = not line.strip()
    if not timings:
        raise ExtractionError("not an SRT file: no timing line like 00:00:01,000 --> 00:00:02,000")
    cues = [Cue(start, end, cue_turns("\n".join(body)))
            for (start, end), body in zip(timings, texts, strict=True)]
    check_times(cues)
    return cues


class SrtFormat(DocumentFormat):
    """``.srt`` files."""

    name = "srt"
    suffixes = (".srt",)
    plain_text = True

    def extractor(self) -> Extractor:
        return Extractor("srt-stdlib", "6")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Paragraphs of cue text, one anchor (``t=12.500,15.000``) per cue; titled by the stem.

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`), not SRT, a malformed cue or
                one ending before it starts.
        """
        decoded = decode_text(data, "SRT")
        cues = parse_srt(decoded.text)
        canonical, anchors = cue_text(cues)
        return Extracted(title=stem, canonical_text=canonical, anchors=anchors,
                         notes=(("cues", str(len(anchors))), *decoded.notes))

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#t=<first cue's start>,<last cue's end>`` (W3C Media Fragments, seconds)."""
        return time_fragment(anchors, start, end) or super().fragment(anchors, start, end)
