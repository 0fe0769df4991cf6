"""WebVTT transcripts: cues joined into paragraphs, each cue cited by ``#t=start,end``.

Parsed by webvtt-py (MIT) in strict mode, which follows the W3C WebVTT block grammar: the
``WEBVTT`` signature, ``NOTE``, ``STYLE`` and ``REGION`` blocks (dropped), cue identifiers and
settings, and a malformed cue block is an error rather than a cue silently left out. Only its
block parsing and timestamps are used: its ``text`` keeps character references (``&amp;``)
undecoded and its ``voice`` sees only the first voice span of a cue, so the payload goes
through :func:`rag_pipeline.core.ingest.cues.cue_turns`. See :mod:`rag_pipeline.core.ingest.cues`
for the paragraphs and anchors.
"""

from __future__ import annotations

import io
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
from rag_pipeline.core.ingest.library import library_version


def parse_webvtt(text: str) -> list[Cue]:
    """The cues of a WebVTT file, in file order.

    Raises:
        ExtractionError: No ``WEBVTT`` signature, or a malformed cue block.
    """
    import webvtt
    from webvtt.errors import MalformedCaptionError, MalformedFileError

    try:
        captions = webvtt.from_buffer(io.StringIO(text), strict=True).captions
    except MalformedFileError as exc:
        raise ExtractionError(f"not a WebVTT file ({exc}): it must start with the line WEBVTT") from exc
    except MalformedCaptionError as exc:
        raise ExtractionError(f"malformed WebVTT block: {exc}") from exc
    except Exception as exc:  # any other webvtt-py error is this file's reason, not a crash
        raise ExtractionError(f"unreadable WebVTT: {type(exc).__name__}: {exc}") from exc
    cues = [Cue(caption.start_time.in_milliseconds(), caption.end_time.in_milliseconds(),
                cue_turns(caption.raw_text)) for caption in captions]
    check_times(cues)
    return cues


class WebVttFormat(DocumentFormat):
    """``.vtt`` files."""

    name = "webvtt"
    suffixes = (".vtt",)
    plain_text = True

    def extractor(self) -> Extractor:
        return Extractor("webvtt-py", f"6+webvtt-py-{library_version('webvtt-py')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Paragraphs of cue text, one anchor (``t=12.500,15.000``) per cue; titled by the stem.

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`), not WebVTT, a malformed cue
                or one ending before it starts.
        """
        decoded = decode_text(data, "WebVTT")
        cues = parse_webvtt(decoded.text)
        canonical, anchors = cue_text(cues)
        return Extracted(title=stem, canonical_text=canonical, anchors=anchors,
                         notes=(("cues", str(len(anchors))), *decoded.notes))

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#t=<first cue's start>,<last cue's end>`` (W3C Media Fragments, seconds)."""
        return time_fragment(anchors, start, end) or super().fragment(anchors, start, end)
