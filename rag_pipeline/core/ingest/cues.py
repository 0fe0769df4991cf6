"""Timed cues into paragraphs of text with one anchor per cue: what WebVTT and SRT share.

A cue's text loses its styling tags (``<b>``, ``<i>``, ``<c.class>``, ``<font>``, karaoke
timestamps, SRT's ``{\\an8}`` position codes), has its character references decoded
(``&amp;`` is ``&``) and its line breaks and runs of white space collapsed to single spaces. A
WebVTT voice span (``<v Roger>`` or ``<v.loud Roger>``) names its speaker: a turn is written
``Roger: text``. Consecutive cues join into one paragraph (separated by a space) until the
speaker changes or the cues are :data:`PARAGRAPH_GAP_MS` or more apart. Each cue's anchor
spans its text (with the ``Name: `` that opens its turn) and its locator is
``t=<start>,<end>`` in seconds with milliseconds (W3C Media Fragments, Normal Play Time).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_pipeline.core.ingest.anchor_spans import overlapping
from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError
from rag_pipeline.core.ingest.locator import TimeLocator, seconds

PARAGRAPH_GAP_MS = 2000
"""A pause of two seconds or more between cues starts a new paragraph."""

# A tag holds no "<" and a position code no "{": each match is tried only up to the next one, so
# a cue of many unclosed "<" is read in one pass. Each class of a voice tag begins with its
# own ".": a tag without a space is refused in one pass, however many classes it lists.
_TAG = re.compile(r"<([^<>]*)>")
_VOICE = re.compile(r"v(?:\.[^\s.]*)*\s+(.+)", re.DOTALL)
_POSITION_CODE = re.compile(r"\{\\[^{}]*\}")


@dataclass(frozen=True)
class Cue:
    """One timed cue: milliseconds from the start and its text in speaker turns.

    Attributes:
        start_ms: Start time in milliseconds.
        end_ms: End time in milliseconds.
        turns: ``(speaker or None, text)`` pairs in order; text is never empty.
    """

    start_ms: int
    end_ms: int
    turns: tuple[tuple[str | None, str], ...]


def cue_turns(raw_text: str) -> tuple[tuple[str | None, str], ...]:
    """A cue's raw payload as ``(speaker, text)`` turns: tags dropped except voice spans,
    which open a turn (``</v>`` closes it), references decoded, white space collapsed."""
    turns: list[tuple[str | None, list[str]]] = [(None, [])]
    position = 0
    text = _POSITION_CODE.sub("", raw_text)
    for match in _TAG.finditer(text):
        turns[-1][1].append(text[position:match.start()])
        position = match.end()
        tag = match.group(1).strip()
        voice = _VOICE.fullmatch(tag)
        if voice:
            turns.append((" ".join(voice.group(1).split()), []))
        elif tag == "/v":
            turns.append((None, []))
    turns[-1][1].append(text[position:])
    out = []
    for speaker, pieces in turns:
        words = " ".join(html.unescape("".join(pieces)).split())
        if words:
            out.append((speaker, words))
    return tuple(out)


def time_locator(start_ms: int, end_ms: int) -> str:
    return str(TimeLocator(start_ms, end_ms))


def cue_text(cues: Sequence[Cue]) -> tuple[str, tuple[Anchor, ...]]:
    """The canonical text of a transcript and one anchor per cue holding text."""
    parts: list[str] = []
    anchors: list[Anchor] = []
    offset = 0
    speaker: str | None = None
    last_end: int | None = None
    for cue in cues:
        if not cue.turns:
            continue
        cue_start: int | None = None
        for index, (turn_speaker, text) in enumerate(cue.turns):
            pause = index == 0 and last_end is not None and cue.start_ms - last_end >= PARAGRAPH_GAP_MS
            new_paragraph = not parts or turn_speaker != speaker or pause
            if parts:
                separator = "\n\n" if new_paragraph else " "
                parts.append(separator)
                offset += len(separator)
            if cue_start is None:
                cue_start = offset
            piece = f"{turn_speaker}: {text}" if new_paragraph and turn_speaker else text
            parts.append(piece)
            offset += len(piece)
            speaker = turn_speaker
        anchors.append(Anchor(cue_start, offset, time_locator(cue.start_ms, cue.end_ms)))
        last_end = cue.end_ms
    return "".join(parts) + ("\n" if parts else ""), tuple(anchors)


def time_fragment(anchors: Sequence[Anchor], start: int, end: int) -> str | None:
    """``#t=<earliest start>,<latest end>`` of the cues ``[start, end)`` overlaps (a file's cues
    may be out of time order, or overlap: the first cue's start and the last one's end could
    name an end before the start); ``None`` when it overlaps none."""
    cues = [TimeLocator.parse(cue.locator) for cue in overlapping(anchors, start, end)]
    if not cues:
        return None
    return TimeLocator(min(c.start_ms for c in cues), max(c.end_ms for c in cues)).fragment


def check_times(cues: Sequence[Cue]) -> None:
    """Raises :class:`ExtractionError` for the first cue that ends before it starts."""
    for number, cue in enumerate(cues, start=1):
        if cue.end_ms < cue.start_ms:
            raise ExtractionError(f"cue {number} ends before it starts: "
                                  f"{seconds(cue.start_ms)} --> {seconds(cue.end_ms)} s")
