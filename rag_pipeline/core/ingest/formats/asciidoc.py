"""AsciiDoc: the file as it is, with sections at its ``=`` titles outside delimited blocks.

Read as text (UTF-8), never rendered (no ``include::`` is followed). A line ``= Title`` is the
document title, ``== Section`` a level-1 section and so on down to ``====== Level 5``
(Asciidoctor's section titles); the body after a title, up to the next, is a section titled
by it, as in Markdown. Lines inside a delimited block (listing ``----``, literal ``....``,
passthrough ``++++``, comment ``////``, sidebar ``****``, example ``====``, quote ``____``,
each four or more of the character) are never titles, so a ``= `` line in a listing stays
code. Cited ``#char=``.
"""

from __future__ import annotations

import re

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import Extracted, Extractor, Section
from rag_pipeline.core.ingest.formats.base import DocumentFormat

_TITLE_OPENING = re.compile(r"(={1,6})[ \t]+(?=\S)")
_DELIMITER = re.compile(r"(-{4,}|\.{4,}|\+{4,}|/{4,}|\*{4,}|={4,}|_{4,})[ \t]*")


def _title(line: str) -> tuple[int, str] | None:
    """The level (0 for ``= ``) and the title of a section title line (``== Title``, or
    ``== Title ==`` closed by a run of ``=`` after a blank); None for another line. Read from
    both ends, never by one pattern whose ways of splitting the line's blanks grow with their
    number (a line of many blanks took minutes)."""
    opening = _TITLE_OPENING.match(line)
    if opening is None:
        return None
    title = line[opening.end():].rstrip(" \t")
    closed = title.rstrip("=")
    if closed != title and closed[-1:] in (" ", "\t") and closed.strip(" \t"):
        title = closed.rstrip(" \t")
    return len(opening.group(1)) - 1, title


def title_spans(text: str) -> list[tuple[int, int, int, str]]:
    """``(start, end, level, title)`` of each section title line outside delimited blocks;
    level 0 is the document title (``= ``)."""
    spans = []
    block: str | None = None
    offset = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        delimiter = _DELIMITER.fullmatch(line)
        if delimiter:
            if block is None:
                block = delimiter.group(1)
            elif delimiter.group(1) == block:
                block = None
            continue
        if block is not None:
            continue
        title = _title(line)
        if title is not None:
            spans.append((start, start + len(line), *title))
    return spans


class AsciiDocFormat(DocumentFormat):
    """``.adoc`` and ``.asciidoc`` files."""

    name = "asciidoc"
    suffixes = (".adoc", ".asciidoc")
    plain_text = True

    def extractor(self) -> Extractor:
        return Extractor("asciidoc-titles", "5")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """The text as it is; title from the ``= `` line, else the stem; a section per title.

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`).
        """
        decoded = decode_text(data, "AsciiDoc")
        text = decoded.text
        spans = title_spans(text)
        title = next((t for _, _, level, t in spans if level == 0), stem)
        sections: list[Section] = []
        current, start = (title, 1), 0
        for s_start, s_end, level, s_title in spans:
            if s_start > start:
                sections.append(Section(current[0], start, s_start, current[1]))
            current, start = (title if level == 0 else s_title, max(level, 1)), s_end
        if len(text) > start:
            sections.append(Section(current[0], start, len(text), current[1]))
        return Extracted(title=title, canonical_text=text, sections=tuple(sections),
                         notes=decoded.notes)
