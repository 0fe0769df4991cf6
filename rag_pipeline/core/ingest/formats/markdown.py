"""Markdown: the file as it is; sections at ATX and setext headings outside code, after a YAML front matter.

The heading lines found here are the only Markdown structure in the project: extraction takes
a document's title and sections from them and the gold-set check keeps needles out of them.
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING

from rag_pipeline.core.ingest.bom_text import decode_text
from rag_pipeline.core.ingest.extracted import Extracted, Extractor, Section, TableSpan
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.heading_sections import heading_sections

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_HEADING = re.compile(r"(#{1,6})[ \t]+([^\n]*)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})([^\n]*)")
_LINE = re.compile(r"[^\n]*\n?")


def _outside_code(text: str) -> Iterator[tuple[int, str]]:
    """``(start, line)`` of each line outside fenced code blocks (CommonMark 4.5), without its
    newline: a fence opens with three or more backticks or tildes indented by at most three
    spaces (a backtick fence's info string holds no backtick) and closes at a line of at least
    as many of the same character, or runs to the end of the text."""
    fence: str | None = None
    for match in _LINE.finditer(text):
        start, line = match.start(), match.group().rstrip("\n")
        if not line and match.end() == start:
            break
        if fence is not None:
            stripped = line.lstrip(" ")
            if (len(line) - len(stripped) <= 3 and stripped.startswith(fence)
                    and not stripped.strip(fence[0] + " \t")):
                fence = None
            continue
        opened = _FENCE_OPEN.fullmatch(line)
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = opened.group(1)
            continue
        yield start, line


_DELIMITER_ROW = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*(?:\|[ \t]*)?")
"""A table's delimiter row (``| --- | :-: |``). Its blanks after the last cell are the cell's, or
the closing pipe's: one way each, so a line of many blanks is refused in one pass."""


def _pipe_cells(line: str) -> int:
    """How many cells a pipe-table row has: its ``|``-separated parts, a leading and a trailing
    ``|`` opening and closing the row, an escaped ``\\|`` inside a cell."""
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return len(re.split(r"(?<!\\)\|", row))


def pipe_tables(text: str) -> tuple[TableSpan, ...]:
    """The GitHub Flavored Markdown tables (GFM 0.29, section 4.10) outside fenced code: a
    header row, then a delimiter row (``| --- | :-: |``) of as many cells, then body rows up to
    the first blank line or line without a ``|``. Each is declared with its header row (the
    line above the delimiter row) to repeat, its body rows as rows."""
    tables: list[TableSpan] = []
    lines = list(_outside_code(text))
    index = 1
    while index < len(lines):
        start, line = lines[index]
        h_start, header = lines[index - 1]
        if ("|" in line and "|" in header and _DELIMITER_ROW.fullmatch(line)
                and h_start + len(header) + 1 == start
                and _pipe_cells(header) == _pipe_cells(line)):
            rows, end, following = [], start + len(line), index + 1
            while following < len(lines):
                r_start, row = lines[following]
                if r_start != end + 1 or not row.strip() or "|" not in row:
                    break
                rows.append(r_start)
                end = r_start + len(row)
                following += 1
            if rows:
                tables.append(TableSpan(h_start, end, header.strip(), start + len(line),
                                        tuple(rows)))
            index = following + 1
            continue
        index += 1
    return tuple(tables)


_SETEXT_UNDERLINE = re.compile(r" {0,3}(?:={2,}|-{3,})[ \t]*")
_THEMATIC_BREAK = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})")
_OTHER_BLOCK = re.compile(r" {0,3}(?:[-+*][ \t]|[-+*]$|\d{1,9}[.)](?:[ \t]|$)|>|<[A-Za-z/!?]|\|)")
"""A line opening a list item, a block quote, an HTML block or a table row: the lines under it
until a blank one are its own (CommonMark's lazy continuation), never a setext heading's text."""
_INDENTED_CODE = re.compile(r" {0,3}\t| {4}")
_RAW_HTML_OPEN = re.compile(r" {0,3}<(?:(!--)|(pre|script|style|textarea)(?=[\s>]|$))", re.IGNORECASE)
"""An HTML block that runs to its end marker over blank lines (CommonMark 4.6, kinds 1 and 2):
a comment to ``-->``, ``<pre>``, ``<script>``, ``<style>``, ``<textarea>`` to their end tag."""


SETEXT_SENTENCE_WORDS = 10
"""Words from which a line over an underline that ends as a sentence or a clause does is text
with a rule under it, not a title ("Bug Reports, Feature Requests, Contributions, Etc." is a
title)."""


def _setext_title(line: str) -> bool:
    """Whether a paragraph's one line over an underline reads as a title: unless it is short,
    not ending as a sentence or a clause does (``.``, ``,``, ``;``, ``:``). A note's paragraph
    with a rule under it (``---`` meant as a rule, which CommonMark reads as an underline) stays
    text."""
    return (len(line.split()) < SETEXT_SENTENCE_WORDS
            or not line.rstrip().endswith((".", ",", ";", ":")))


def heading_spans(text: str, setext: bool = True) -> list[tuple[int, int, int, str]]:
    """``(start, end, level, title)`` of each heading, end excluding the newline: an ATX line
    (``#`` at column 0), or a setext heading (CommonMark 4.3): a paragraph's lines underlined
    by a line of ``=`` (level 1) or ``-`` (level 2), the span running from the paragraph's line
    to the underline. Stricter than CommonMark, so that no text is taken for a title: an
    underline here is two ``=`` or three ``-`` at least (a lone ``-`` under a line is more often
    a typo than a heading), the paragraph one line that does not end as a sentence does
    (:func:`_setext_title`), and a paragraph opens only after a blank line, a heading, a rule or
    indented code (a line under a list item, a quote, an HTML block or a table's rows continues
    it, a table's delimiter row included).

    Lines inside fenced code blocks are code, never headings (CommonMark 4.5): a fence opens
    with three or more backticks or tildes indented by at most three spaces (a backtick fence's
    info string holds no backtick) and closes at a line of at least as many of the same
    character, or runs to the end of the text. Indented code (CommonMark 4.4) needs four
    spaces, so no line of it starts with ``#`` at column 0. The YAML front matter, if any, holds
    none. One pass over the lines. ``setext=False``: ATX headings only, for text that may not
    be Markdown (a plain-text file's dashed lines under its paragraphs are no titles there).
    """
    spans = []
    body = front_matter_end(text)
    paragraph: int | None = None  # where the open paragraph starts, while it is one line
    other_block = False  # under a list item, a quote, an HTML block or a table row
    raw_until: str | None = None  # the end marker of a raw HTML block the line is in
    previous_end = -1
    for start, line in _outside_code(text):
        if start < body:
            continue
        if start != previous_end + 1:  # a fenced block between: it closed what was open
            paragraph, other_block = None, False
        previous_end = start + len(line)
        if raw_until is not None:  # the block ends on the line holding its end marker
            if raw_until in line.lower():
                raw_until = None
            continue
        if (raw := _RAW_HTML_OPEN.match(line)) is not None:  # it interrupts a paragraph too
            end_marker = "-->" if raw.group(1) else f"</{raw.group(2).lower()}>"
            if end_marker not in line[raw.end():].lower():
                raw_until = end_marker
            paragraph, other_block = None, False  # ended on its own line or at its end marker's
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            spans.append((start, start + len(line), len(heading.group(1)),
                          _heading_title(heading.group(2))))
            paragraph, other_block = None, False
        elif not line.strip():
            paragraph, other_block = None, False
        elif (setext and paragraph is not None and _SETEXT_UNDERLINE.fullmatch(line)
              and _setext_title(text[paragraph:start - 1])):
            spans.append((paragraph, start + len(line), 1 if "=" in line else 2,
                          text[paragraph:start - 1].strip()))
            paragraph = None
        elif _THEMATIC_BREAK.fullmatch(line):
            paragraph, other_block = None, False
        elif _OTHER_BLOCK.match(line) or ("|" in line and _DELIMITER_ROW.fullmatch(line)):
            paragraph, other_block = None, True  # it interrupts a paragraph (a table: its rows)
        elif paragraph is None and not other_block and not _INDENTED_CODE.match(line):
            paragraph = start
        elif paragraph is not None:  # a second line: the paragraph can be no title
            paragraph, other_block = None, True
    return spans


def markdown_sections(text: str, document_title: str,
                      headings: Sequence[tuple[int, int, int, str]] | None = None,
                      ) -> tuple[Section, ...]:
    """The sections under the Markdown headings of ``text``
    (:func:`~rag_pipeline.core.ingest.heading_sections.heading_sections`: the first level-1
    heading is the document's title). ``headings``: the heading lines (:func:`heading_spans`)
    when ``text`` is not one Markdown document (a notebook's cells, each its own)."""
    return heading_sections(heading_spans(text) if headings is None else headings, len(text),
                            document_title)


def _heading_title(rest: str) -> str:
    """The text after the opening hashes, without an optional closing run of ``#`` (which
    needs white space before it: ``## C#`` is titled ``C#``). Done with string operations: a
    regex for it backtracks quadratically on long runs of spaces and tabs."""
    title = rest.rstrip(" \t")
    unclosed = title.rstrip("#")
    if unclosed != title and unclosed[-1:] in (" ", "\t"):
        title = unclosed
    return title.strip()


def first_title(text: str) -> str | None:
    """The first level-1 ATX heading outside fenced code, if any."""
    return next((title for _, _, level, title in heading_spans(text) if level == 1 and title), None)


def without_headings(text: str, setext: bool = True) -> str:
    """The text with each heading line replaced by one space (fenced code kept as it is);
    ``setext``: as :func:`heading_spans` takes it."""
    parts, last = [], 0
    for start, end, _, _ in heading_spans(text, setext):
        parts += [text[last:start], " "]
        last = end
    return "".join(parts) + text[last:]


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n", re.DOTALL)


def front_matter_end(text: str) -> int:
    """Where the YAML front matter of ``text`` ends; 0 without one."""
    match = _front_matter(text)
    return match.end() if match else 0


_KEY_LINE = re.compile(r"[A-Za-z_][\w.-]*[ \t]*:(?:[ \t]|$)")


def _front_matter(text: str) -> re.Match[str] | None:
    """The front matter: ``---`` lines at the very start around lines whose first (not blank,
    not a ``#`` comment) is a ``key:`` line, as YAML front matter opens (its values need not be
    valid YAML: ``title: Kubernetes: the guide`` is what people write). A ``---`` rule above a
    paragraph is no front matter."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None
    first = next((line for line in match.group(1).splitlines()
                  if line.strip() and not line.lstrip().startswith("#")), None)
    return match if first is None or _KEY_LINE.match(first) else None


_HEADING_MARK = re.compile(r" {0,3}#{1,6}(?:[ \t]+|$)")
_TAG = re.compile(r"<[^>]*>")
_IMAGE = re.compile(r'<img [^>]*?alt="(?P<alt>[^"]*)"[^>]*>')


@cache
def _inline_renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False})


class MarkdownFormat(DocumentFormat):
    """``.md`` and ``.markdown`` files."""

    name = "markdown"
    suffixes = (".md", ".markdown")
    plain_text = True
    links_by_text = True

    def extractor(self) -> Extractor:
        return Extractor("markdown-frontmatter", "10")

    def shown_quote(self, text: str) -> str:
        """Each line's inline markup as a reader sees it rendered: ``**bold**``, ``[the
        checklist](https://...)``, ``![a chart](c.png)`` and ``&amp;`` read ``bold``, ``the
        checklist``, ``a chart`` and ``&``. A line keeps its place and its block marker (a
        heading's ``#``s left out; a list's ``1.`` kept: the steps' numbers are words too);
        indented code as written. A quote holding a code fence is shown as written: it may
        start inside the fence (a long block cut into chunks), and its code is no Markdown."""
        if any(_FENCE_OPEN.match(line) for line in text.split("\n")):
            return text
        shown = []
        for line in _LINE.finditer(text):
            value = line.group()
            if value.startswith(("    ", "\t")):
                shown.append(value)
                continue
            body = value.rstrip("\r\n")
            heading = _HEADING_MARK.match(body)
            rendered = _inline_renderer().renderInline(body[heading.end():] if heading else body)
            rendered = _IMAGE.sub(lambda image: image["alt"], rendered)
            shown.append(html.unescape(_TAG.sub("", rendered)) + value[len(body):])
        return "".join(shown)

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Markdown as it is; title from the first ``# `` heading, then the YAML front matter's
        ``title:``, then the stem; sections by :func:`markdown_sections` and pipe tables by
        :func:`pipe_tables`, both after the front matter. The front matter stays in the
        canonical text (so ``#char=`` counts the file's characters, line ends as one), in no
        section: no chunk of the boundary strategies holds it (the blind baselines cut the
        whole text)."""
        decoded = decode_text(data, "Markdown")
        text = decoded.text
        front_title = None
        body_start = 0
        match = _front_matter(text)
        if match:
            for line in match.group(1).splitlines():
                key, _, value = line.partition(":")
                if key.strip().lower() == "title" and value.strip():
                    front_title = value.strip().strip("'\"")
            body_start = match.end()
        body = text[body_start:]
        title = first_title(body) or front_title or stem
        sections = tuple(dataclasses.replace(s, start=s.start + body_start, end=s.end + body_start)
                         for s in markdown_sections(body, title))
        return Extracted(title=title, canonical_text=text, sections=sections,
                         tables=tuple(t.shifted(body_start) for t in pipe_tables(body)),
                         notes=decoded.notes)
