"""AsciiDoc: the file as it is, with sections at its ``=`` titles outside delimited blocks.

Read as text (UTF-8), never rendered (no ``include::`` is followed). A line ``= Title`` is the
document title (Asciidoctor's level 0, a level-1 section here), ``== Section`` level 1 (a
level-2 section) and so on down to ``====== Level 5`` (Asciidoctor's section titles), and so
is a two-line title: a line underlined by ``=``, ``-``, ``~``, ``^`` or ``+`` (levels 0 to 4)
as long as it, give or take one character, after a blank line (Asciidoctor's rule:
``Observability standards`` over 23 ``=`` is the document's title, not an example block
opening); the body after a title, up to the next, is a section titled by it, as in Markdown
(:mod:`~rag_pipeline.core.ingest.heading_sections`). Lines inside a delimited block (listing
``----``, literal ``....``, passthrough ``++++``, comment ``////``, sidebar ``****``, example
``====``, quote ``____``, each four or more of the character) are never titles, so a ``= ``
line in a listing stays
code. Cited ``#char=``.
"""

from __future__ import annotations

import re

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import Extracted, Extractor
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.heading_sections import heading_sections

_TITLE_OPENING = re.compile(r"(={1,6})[ \t]+(?=\S)")
_DELIMITER = re.compile(r"(-{4,}|\.{4,}|\+{4,}|/{4,}|\*{4,}|={4,}|_{4,})[ \t]*")


def _title(line: str) -> tuple[int, str] | None:
    """The level (0 for ``= ``) and the title of a section title line (``== Title``, or
    ``== Title ==`` closed by a run of ``=`` after a blank); None for another line. Read from
    both ends, never by one pattern whose ways of splitting the line's blanks grow with their
    number (a line of many blanks would take minutes)."""
    opening = _TITLE_OPENING.match(line)
    if opening is None:
        return None
    title = line[opening.end():].rstrip(" \t")
    closed = title.rstrip("=")
    if closed != title and closed[-1:] in (" ", "\t") and closed.strip(" \t"):
        title = closed.rstrip(" \t")
    return len(opening.group(1)) - 1, title


_UNDERLINE_LEVELS = {"=": 0, "-": 1, "~": 2, "^": 3, "+": 4}
_TWO_LINE_TITLE = re.compile(r"[^\s.\[:/*\-+<|`'\"]\S*(?:[ \t]+\S+)*[ \t]*")
"""A two-line title's first line: words, not indented (a literal), nor a block's title
(``.Title``), attributes (``[source]``), an attribute entry (``:key:``), a comment, a list item,
a table or a quote."""


def _two_line_level(line: str, underline: str) -> int | None:
    """The level of ``line`` as a title underlined by ``underline`` (one of ``= - ~ ^ +``
    repeated, as long as the line's text give or take one); None if it is no such title."""
    mark = underline.rstrip(" \t")
    if (not mark or mark[0] not in _UNDERLINE_LEVELS or mark.strip(mark[0])
            or not _TWO_LINE_TITLE.fullmatch(line) or not re.search(r"\w", line)):
        return None
    return _UNDERLINE_LEVELS[mark[0]] if abs(len(line.rstrip(" \t")) - len(mark)) < 2 else None


def title_spans(text: str) -> list[tuple[int, int, int, str]]:
    """``(start, end, level, title)`` of each section title outside delimited blocks (a
    two-line title spans both lines); level 0 is the document title (``= ``)."""
    spans = []
    block: str | None = None
    offset = 0
    lines = text.split("\n")
    after_blank = True  # the line opens a block: the text's first, or one after a blank line
    underline_at = -1
    for number, line in enumerate(lines):
        start, offset = offset, offset + len(line) + 1
        opens_block, after_blank = after_blank, not line.strip()
        if number == underline_at:
            continue
        if (block is None and opens_block and number + 1 < len(lines)
                and (level := _two_line_level(line, lines[number + 1])) is not None):
            spans.append((start, offset + len(lines[number + 1]), level, line.strip()))
            underline_at, after_blank = number + 1, True
            continue
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
        return Extractor("asciidoc-titles", "7")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """The text as it is; title from the ``= `` line, else the stem; a section per title.

        Raises:
            ExtractionError: Not text (:mod:`~rag_pipeline.core.ingest.bom_text`).
        """
        decoded = decode_text(data, "AsciiDoc")
        text = decoded.text
        spans = title_spans(text)
        title = next((t for _, _, level, t in spans if level == 0), stem)
        # The document title (level 0, ``= ``) is level 1 of the sections, ``==`` level 2.
        headings = [(start, end, level + 1, heading) for start, end, level, heading in spans]
        return Extracted(title=title, canonical_text=text, notes=decoded.notes,
                         sections=heading_sections(headings, len(text), title))
