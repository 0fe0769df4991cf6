"""DOCX: paragraphs in body order, sections at heading styles, tables as rows of cells, lists kept.

Read with python-docx (MIT). The body is walked in order, content controls (``w:sdt``)
included: a paragraph styled ``Title`` or ``Heading 1`` to ``Heading 9``, or given an outline
level (``w:outlineLvl``, on the paragraph or its styles: Word's "Outline level", a template's
own heading styles), starts a section of that level (``Title`` is level 1) and is a line of the
canonical text outside every section body, as a Markdown heading is; other paragraphs are
paragraphs. A generated table of contents or index (:data:`GENERATED_FIELDS`) is left out,
counted. A table is one block: one line
per row, its cells (each cell's paragraphs, nested tables included, joined by spaces) separated
by ``" | "``, the header row first as in the file; a cell merged across columns is followed by
an empty cell per further column, so columns never shift. Each table is declared as a
:class:`~rag_pipeline.core.ingest.extracted.TableSpan` (its header row repeated in the embedded
text of each later chunk of it). The zip is checked against :class:`OfficeLimits` (expanded
size, ratio, rows, cells, characters) before and while it is read. List items
(numbering on the paragraph or its style) are lines of one block, indented two spaces per
level, with ``- `` for a bullet and their number as the level's text shows it (``1.``,
``(a)``, ``2.1.``, ``iv.``) for a numbered list, counted as Word counts them per list and level
(a list's ``w:startOverride`` restarting it). A footnote or endnote follows the paragraph
(or table) that refers to it, as a paragraph of its own, ``Footnote 2: text`` (numbered in the
order of reference, as Word numbers them; ``Endnote i: text``, lower-case Roman by default).
The headers and footers the pages show close the document
(:mod:`rag_pipeline.core.ingest.page_furniture`). Comments are
reviewers' remarks, not the document: left out, counted in the note ``comments_left_out``.
An embedded Excel workbook (``w:object``) is a table per sheet after the paragraph (or table)
holding it; any other embedded or linked object is left out, counted
(``embedded_objects_left_out``).
The title is the core properties' title, else the first heading, else the file name's stem.
A DOCX file has no locator finer than the document, so citations keep ``#char=`` (the
service's document view opens them).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rag_pipeline.core.ingest.extracted import (
    Extracted,
    ExtractionError,
    Extractor,
    Section,
    TableSpan,
)
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.formats.xlsx import EmbeddedWorkbook, embedded_workbook_notes
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.list_numbers import list_number
from rag_pipeline.core.ingest.office_zip import (
    MAX_STYLE_CHAIN,
    ContentBudget,
    OfficeLimits,
    as_plain_document,
    check_zip,
)
from rag_pipeline.core.ingest.page_furniture import furniture_lines, with_furniture
from rag_pipeline.core.ingest.tables import layout_table, row_line

if TYPE_CHECKING:
    from docx.document import Document
    from docx.opc.part import Part
    from lxml.etree import _Element

def list_marker(number_format: str, number: int) -> str:
    """The marker of list item ``number`` (1-based) in a ``w:numFmt`` format: ``-`` for a
    bullet, ``3.``, ``c.``, ``C.``, ``iii.``, ``III.``; any other format counts in digits."""
    return "-" if number_format == "bullet" else list_number(number_format, number) + "."


@dataclass(frozen=True)
class DocxBlock:
    """A paragraph, a heading (``heading_level`` > 0), a list item, a table (``rows``) or a
    note, as it is in the canonical text."""

    text: str
    heading_level: int = 0  # 0: not a heading
    list_item: bool = False
    rows: tuple[tuple[str, ...], ...] = ()  # a table's rows, header rows first
    header_rows: int = 0


@dataclass(frozen=True)
class _Level:
    """One level of a Word list: its ``w:numFmt``, ``w:start`` and ``w:lvlText`` (``%1`` to
    ``%9`` the numbers of levels 1 to 9: ``(%1)``, ``%1.%2.``)."""

    number_format: str = "bullet"
    start: int = 1
    text: str = ""


_LEVEL_NUMBER = re.compile(r"%([1-9])")


def _whole(text: str | None, default: int) -> int:
    """A whole number of a list's XML (``w:start``), else ``default``."""
    return int(text) if text is not None and text.isascii() and text.isdigit() else default


class _Numbering:
    """Word's list numbering: ``numId`` -> abstract definition -> per-level format, start and
    text (a ``w:num``'s ``w:startOverride`` restarting a level), with a counter per list and
    level (a deeper level restarts when a shallower one moves)."""

    def __init__(self, document: Document) -> None:
        from docx.oxml.ns import qn

        self._levels: dict[tuple[str, int], _Level] = {}
        self._counters: dict[str, list[int]] = {}
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError):
            return
        abstract = {}
        for node in root.iterchildren(qn("w:abstractNum")):
            levels = {}
            for lvl in node.iterchildren(qn("w:lvl")):
                fmt, start, text = (lvl.find(qn(name)) for name in ("w:numFmt", "w:start",
                                                                    "w:lvlText"))
                levels[_whole(lvl.get(qn("w:ilvl")), 0)] = _Level(
                    fmt.get(qn("w:val"), "decimal") if fmt is not None else "decimal",
                    _whole(start.get(qn("w:val")) if start is not None else None, 1),
                    text.get(qn("w:val"), "") if text is not None else "")
            abstract[node.get(qn("w:abstractNumId"))] = levels
        for num in root.iterchildren(qn("w:num")):
            ref = num.find(qn("w:abstractNumId"))
            if ref is None:
                continue
            levels = dict(abstract.get(ref.get(qn("w:val")), {}))
            for override in num.iterchildren(qn("w:lvlOverride")):
                start = override.find(qn("w:startOverride"))
                level = _whole(override.get(qn("w:ilvl")), 0)
                if start is not None and level in levels:
                    levels[level] = replace(levels[level],
                                            start=_whole(start.get(qn("w:val")), 1))
            for level, spec in levels.items():
                self._levels[(num.get(qn("w:numId")), level)] = spec

    def marker(self, num_id: str, level: int) -> str:
        """The next item's marker at ``level`` of list ``num_id``: ``-`` for a bullet, else its
        level text with each ``%N`` the number level N is at (``3.``, ``(c)``, ``2.1.``)."""
        spec = self._levels.get((num_id, level), _Level())
        counters = self._counters.setdefault(num_id, [])
        while len(counters) <= level:
            counters.append(0)
        counters[level] += 1
        del counters[level + 1:]
        if spec.number_format in ("bullet", "none") or "%" not in spec.text:
            return list_marker(spec.number_format, spec.start + counters[level] - 1)

        def number(match: re.Match[str]) -> str:
            at = int(match.group(1)) - 1
            shown = self._levels.get((num_id, at), _Level("decimal"))
            count = counters[at] if at < len(counters) else 0
            return list_number(shown.number_format, shown.start + max(count, 1) - 1)

        return _LEVEL_NUMBER.sub(number, spec.text).strip() or "-"


def _style_chain(style: object) -> list[object]:
    """``style`` and the styles it is based on, nearest first: at most :data:`MAX_STYLE_CHAIN`,
    and a style once (styles based on each other in a loop are a file's, not Word's)."""
    chain: list[object] = []
    seen: set[str] = set()
    while style is not None and len(chain) < MAX_STYLE_CHAIN and style.style_id not in seen:
        chain.append(style)
        seen.add(style.style_id)
        style = style.base_style
    return chain


def _num_pr(paragraph_element: _Element, style: object) -> tuple[str, int] | None:
    """``(numId, ilvl)`` from the paragraph's own properties, else from its style chain;
    ``None`` when it is no list item (``numId`` 0 switches numbering off)."""
    from docx.oxml.ns import qn

    candidates = [paragraph_element.find(qn("w:pPr")),
                  *(base.element.find(qn("w:pPr")) for base in _style_chain(style))]
    num_id, level = None, None
    for p_pr in candidates:
        num_pr = p_pr.find(qn("w:numPr")) if p_pr is not None else None
        if num_pr is None:
            continue
        id_node, level_node = num_pr.find(qn("w:numId")), num_pr.find(qn("w:ilvl"))
        if num_id is None and id_node is not None:
            num_id = id_node.get(qn("w:val"))
        if level is None and level_node is not None:
            level = int(level_node.get(qn("w:val"), "0"))
    if num_id is None or num_id == "0":
        return None
    return num_id, level or 0


def _heading_level(style_name: str) -> int:
    if style_name == "Title":
        return 1
    prefix, _, number = style_name.partition(" ")
    if prefix == "Heading" and number in ("1", "2", "3", "4", "5", "6", "7", "8", "9"):
        return int(number)
    return 0


def _outline_level(paragraph: _Element, style: object) -> int:
    """The heading level a paragraph's outline level makes it (``w:outlineLvl`` 0 to 8: levels
    1 to 9; 9, or none, body text): set on the paragraph itself, else on its style or the
    styles that style is based on (Word's "Outline level", a template's own heading styles,
    LibreOffice's headings in a style of another name)."""
    from docx.oxml.ns import qn

    found = paragraph.find(f"{qn('w:pPr')}/{qn('w:outlineLvl')}")
    for base in _style_chain(style) if found is None else ():
        found = base.element.find(f"{qn('w:pPr')}/{qn('w:outlineLvl')}")
        if found is not None:
            break
    value = found.get(qn("w:val"), "") if found is not None else ""
    return int(value) + 1 if value in ("0", "1", "2", "3", "4", "5", "6", "7", "8") else 0


_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def paragraph_text(paragraph: _Element, fields: _GeneratedFields | None = None) -> str:
    """A ``w:p`` element's text: every ``w:t`` in it, ``w:tab`` as a tab, ``w:br``/``w:cr`` as
    a line break, in document order (with ``fields``, but the result of a generated table of
    contents or index the body's walk is in: :class:`_GeneratedFields`).

    python-docx's ``Paragraph.text`` reads only the paragraph's direct runs and hyperlinks, so
    text inside tracked insertions (``w:ins``), inline content controls, smart tags and simple
    fields would be lost; reading the text nodes wherever they are keeps it. Deleted text is
    ``w:delText`` and stays out; tab stops in the properties (``w:pPr``) are no text; of a
    drawing's alternate content (``mc:AlternateContent``) only the chosen one is read, so a
    text box is not read twice.
    """
    from docx.oxml.ns import qn

    text, tab, skip = qn("w:t"), qn("w:tab"), {qn("w:pPr"), qn("w:rPr"), _MC_FALLBACK}
    parts = []
    followed = (qn("w:fldChar"), qn("w:instrText"), qn("w:fldSimple")) if fields is not None else ()
    for node in paragraph.iter(text, tab, qn("w:br"), qn("w:cr"), *followed):
        if any(ancestor.tag in skip for ancestor in node.iterancestors()):
            continue
        if fields is not None and (fields.follow(node) or fields.generating(node)):
            continue
        if node.tag == text:
            # An entity left unresolved (never read: no XXE) is a child: the text after it is
            # its tail, which ``node.text`` alone does not hold.
            parts.append((node.text or "") + "".join(child.tail or "" for child in node))
        else:
            parts.append("\t" if node.tag == tab else "\n")
    return "".join(parts)


def _objects_in(element: _Element) -> list[_Element]:
    """The embedded objects (``w:object``) under ``element``, of alternate content only the
    chosen one's (as :func:`paragraph_text` reads it)."""
    from docx.oxml.ns import qn

    return [found for found in element.iter(qn("w:object"))
            if not any(ancestor.tag == _MC_FALLBACK for ancestor in found.iterancestors())]


def _block_text(root: _Element) -> str:
    """The text of every outermost paragraph under ``root`` (a text box's paragraphs are read
    with theirs), each collapsed, joined by spaces: a table cell's, a note's, a header's."""
    from docx.oxml.ns import qn

    def outermost(paragraph: _Element) -> bool:
        for ancestor in paragraph.iterancestors():
            if ancestor is root:
                return True
            if ancestor.tag == qn("w:p"):
                return False
        return True

    texts = (paragraph_text(p) for p in root.iter(qn("w:p")) if outermost(p))
    return " ".join(" ".join(text.split()) for text in texts if text.strip())

def _grid_count(value: str | None) -> int:
    """A ``w:val`` count of grid columns (``w:gridSpan``, ``w:gridBefore``); 0 when it is
    missing or no number (a damaged file shifts nothing and fails nothing)."""
    return int(value) if value is not None and value.isdigit() else 0


def _table_block(table: _Element, budget: ContentBudget) -> DocxBlock | None:
    """A table's rows of cell texts; a cell spanning columns (``w:gridSpan``) is its text
    followed by an empty cell per further column, and a row starting after the table's first
    columns (``w:gridBefore``) starts with an empty cell per column skipped, so later cells
    keep their column (a vertically merged cell's continuation is already an empty cell). The
    header is the rows marked to repeat as header rows (``w:tblHeader``), else the first row."""
    from docx.oxml.ns import qn

    rows: list[tuple[str, ...]] = []
    marked = 0
    for row in table.iterchildren(qn("w:tr")):
        cells: list[str] = []
        before = row.find(f"{qn('w:trPr')}/{qn('w:gridBefore')}")
        if before is not None:
            cells.extend([""] * max(0, min(_grid_count(before.get(qn("w:val"))), 1000)))
        for cell in row.iterchildren(qn("w:tc")):
            cells.append(_block_text(cell))
            span = cell.find(f"{qn('w:tcPr')}/{qn('w:gridSpan')}")
            if span is not None:
                cells.extend([""] * max(0, min(_grid_count(span.get(qn("w:val"))), 1000) - 1))
        budget.add(rows=1, cells=len(cells), chars=sum(len(c) for c in cells))
        if any(cells):
            header = row.find(f"{qn('w:trPr')}/{qn('w:tblHeader')}")
            if header is not None and marked == len(rows):
                marked += 1
            rows.append(tuple(cells))
    if not rows:
        return None
    header_rows = marked or 1
    return DocxBlock("\n".join(row_line(r) for r in rows), rows=tuple(rows),
                  header_rows=min(header_rows, len(rows)))


def _related_roots(document: Document, reltype: str) -> list[_Element]:
    """The XML roots of the document part's related parts of ``reltype``, in relationship
    order (python-docx's own parser: entities are not resolved)."""
    from docx.oxml.parser import parse_xml

    return [parse_xml(rel.target_part.blob) for rel in document.part.rels.values()
            if rel.reltype == reltype and not rel.is_external]


def note_mark(number_format: str, number: int) -> str:
    """Note ``number`` (1-based) as Word shows it in a ``w:numFmt`` format (``3``, ``iii``,
    ``C``, ``*`` repeated for ``chicago``); any other format in digits."""
    if number_format == "chicago":
        return "*" * number
    return list_number(number_format, number)


class _Notes:
    """Footnotes and endnotes by id, numbered as Word numbers them: every reference counts, in
    the format the document sets (``w:footnotePr``/``w:endnotePr`` in its settings or its last
    section; Word's defaults: footnotes ``1 2 3``, endnotes ``i ii iii``)."""

    KINDS = (("footnote", "Footnote", "decimal"), ("endnote", "Endnote", "lowerRoman"))

    def __init__(self, document: Document) -> None:
        from docx.opc.constants import RELATIONSHIP_TYPE as RT
        from docx.oxml.ns import qn

        self._texts: dict[tuple[str, str], str] = {}
        self._numbers: dict[str, int] = {}
        self._formats: dict[str, str] = {}
        for kind, reltype in (("footnote", RT.FOOTNOTES), ("endnote", RT.ENDNOTES)):
            for root in _related_roots(document, reltype):
                for note in root.iterchildren(qn(f"w:{kind}")):
                    if note.get(qn("w:type")) in (None, "normal"):
                        self._texts[(kind, note.get(qn("w:id")))] = _block_text(note)
        if not self._texts:
            return
        holders = [document.settings.element, document.element.body.find(qn("w:sectPr"))]
        for kind, _, default in self.KINDS:
            self._formats[kind] = default
            for holder in holders:
                found = None if holder is None else holder.find(
                    f"{qn(f'w:{kind}Pr')}/{qn('w:numFmt')}")
                if found is not None and found.get(qn("w:val")):
                    self._formats[kind] = found.get(qn("w:val"))

    def referred_in(self, element: _Element) -> list[str]:
        """``Footnote 1: text`` for each note ``element`` refers to, in order (an empty note is
        counted but not written; a note with its own mark is labelled without a number)."""
        from docx.oxml.ns import qn

        if not self._texts:
            return []
        tags = {qn(f"w:{kind}Reference"): (kind, label) for kind, label, _ in self.KINDS}
        blocks = []
        for reference in element.iter(*tags):
            kind, label = tags[reference.tag]
            if reference.get(qn("w:customMarkFollows")) in ("1", "true", "on"):
                mark = ""
            else:
                self._numbers[kind] = self._numbers.get(kind, 0) + 1
                mark = " " + note_mark(self._formats[kind], self._numbers[kind])
            text = self._texts.get((kind, reference.get(qn("w:id"))), "")
            if text:
                blocks.append(f"{label}{mark}: {text}")
        return blocks


def _headers_and_footers(document: Document, budget: ContentBudget,
                         objects: _Objects | None = None) -> list[str]:
    """The :func:`~rag_pipeline.core.ingest.page_furniture.furniture_lines` of the headers and
    footers the pages show, section by section: the default ones, the first page's when the
    section has one (``w:titlePg``), the even pages' when the settings ask for them
    (``w:evenAndOddHeaders``). One a section links to an earlier section's (it defines none of
    its own) is that section's, read once: a first-page header an earlier section defines but
    does not show is the one a later section's first page shows. An object one holds (a
    worksheet in a letterhead) is left out, counted in ``objects``."""
    from docx.oxml.ns import qn

    even = document.settings.odd_and_even_pages_header_footer
    texts: list[tuple[str, str]] = []
    defined: dict[tuple[str, str], object] = {}  # (kind, page) -> the latest section's own part
    read: set[str] = set()
    for section in document.sections:
        items = {("header", "default"): section.header, ("footer", "default"): section.footer,
                 ("header", "first"): section.first_page_header,
                 ("footer", "first"): section.first_page_footer,
                 ("header", "even"): section.even_page_header,
                 ("footer", "even"): section.even_page_footer}
        for key, item in items.items():
            if not item.is_linked_to_previous:  # its own definition: no walk back (python-docx
                defined[key] = item.part       # walks every earlier section for a linked one)
        pages = ["default", *(["first"] if section.different_first_page_header_footer else []),
                 *(["even"] if even else [])]
        for page in pages:
            for kind in ("header", "footer"):
                part = defined.get((kind, page))
                if part is None or str(part.partname) in read:
                    continue
                read.add(str(part.partname))
                if objects is not None:
                    objects.left_out += sum(1 for _ in part.element.iter(qn("w:object")))
                text = _block_text(part.element)
                budget.add(chars=len(text))
                texts.append((kind, text))
    return furniture_lines(texts)


def _comment_count(document: Document) -> int:
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.oxml.ns import qn

    return sum(len(root.findall(qn("w:comment")))
               for root in _related_roots(document, RT.COMMENTS))


_IMPORTED_HTML = ("text/html", "application/xhtml+xml")


class _PartsReadOnce:
    """Parts a DOCX's body names by relationship, each read once however often it is named
    (10,000 altChunks naming one 900 KB part took hours); those left out counted."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.seen: set[str] = set()
        self.left_out = 0

    def _unread(self, relationship: str) -> Part | None:
        """The part ``relationship`` names, unless it was read before (None); None, counted as
        left out, when there is no such relationship or its target is outside the package."""
        try:
            part = self.document.part.related_parts[relationship]
        except (KeyError, ValueError):
            self.left_out += 1
            return None
        if str(part.partname) in self.seen:
            return None
        self.seen.add(str(part.partname))
        return part


class _Imported(_PartsReadOnce):
    """The parts a DOCX imports whole (``w:altChunk``): HTML or plain text as paragraphs; a
    part of another kind (RTF, a document), over ``DEFAULT_MAX_DOCUMENT_BYTES``, not
    decodable, missing or external is left out and counted (``imported_parts_left_out``), the
    rest of the document read."""

    def blocks(self, element: _Element) -> list[DocxBlock]:
        """The paragraphs of the part ``element`` imports; none for a part read before."""
        from docx.oxml.ns import qn

        from rag_pipeline.core.ingest.bom_text import decode_text
        from rag_pipeline.core.ingest.formats.html import extract_html
        from rag_pipeline.core.ingest.reading import DEFAULT_MAX_DOCUMENT_BYTES

        part = self._unread(element.get(qn("r:id")) or "")
        if part is None:
            return []
        kind = part.content_type.split(";")[0].strip().lower()
        if kind not in (*_IMPORTED_HTML, "text/plain") or len(part.blob) > DEFAULT_MAX_DOCUMENT_BYTES:
            self.left_out += 1
            return []
        try:
            text = (extract_html(part.blob, "").canonical_text if kind in _IMPORTED_HTML
                    else decode_text(part.blob, "text").text)
        except ExtractionError:
            self.left_out += 1
            return []
        return [DocxBlock(" ".join(p.split())) for p in text.split("\n\n") if p.strip()]


_OFFICE = "urn:schemas-microsoft-com:office:office"
_RELATIONSHIP_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


class _Objects(_PartsReadOnce):
    """The objects a DOCX embeds (``w:object``: an Excel worksheet pasted into the text), each
    part read once: an embedded workbook is a table per sheet
    (:func:`~rag_pipeline.core.ingest.formats.xlsx.embedded_workbook`), counted against the
    document's limits, what it left out kept for the document's notes (``read``); a linked
    object, a legacy binary one (a ``.xls``, an OLE package), any other kind, a part that
    cannot be found, or an object in a page header or footer is left out and counted
    (``embedded_objects_left_out``)."""

    def __init__(self, document: Document, budget: ContentBudget) -> None:
        super().__init__(document)
        self.budget = budget
        self.read: list[EmbeddedWorkbook] = []

    def blocks(self, element: _Element) -> list[DocxBlock]:
        """The tables of the object ``element`` (a ``w:object``) embeds; none for a part read
        before or one left out.

        Raises:
            ExtractionError: The document passed one of its limits while a workbook was read.
        """
        from docx.oxml.ns import qn

        from rag_pipeline.core.ingest.formats.xlsx import embedded_workbook

        embed = next((e for e in element.iter(f"{{{_OFFICE}}}OLEObject", qn("w:objectEmbed"))
                      if e.get("Type", "Embed") == "Embed"), None)  # None: a linked object
        part = self._unread("" if embed is None else embed.get(_RELATIONSHIP_ID) or "")
        if part is None:
            return []
        workbook = embedded_workbook(part.blob, self.budget)
        if workbook is None:
            self.left_out += 1
            return []
        self.read.append(workbook)
        return [DocxBlock(text, rows=tuple(map(tuple, rows)) if rows else (),
                          header_rows=1 if rows else 0) for text, rows in workbook.blocks()]


GENERATED_FIELDS = ("TOC", "INDEX", "TOA")
"""Fields whose result a word processor generates from the document's own headings, captions
and marked words, with page numbers (a table of contents or of figures, an index, a table of
authorities): left out, counted (``indexes_left_out``). A bibliography is read: its entries are
in no other place of the text."""
GENERATED_GALLERIES = ("Table of Contents", "Table of Figures")
"""The content controls (``w:docPartGallery``) Word and LibreOffice put such a table in."""


class _GeneratedFields:
    """Word's complex fields (``w:fldChar`` begin, ``w:instrText``, separate, end) and simple
    fields (``w:fldSimple``), followed run by run through the body's paragraphs in the order
    its walk reads them, and the results of the generated ones (:data:`GENERATED_FIELDS`) left
    out and counted. A generated field whose end the body lacks is read whole: leaving it out
    would leave out the rest of the document."""

    def __init__(self, body: _Element) -> None:
        self.closed = self._closed_begins(body)
        self.begins = 0
        self.open: list[tuple[str, bool]] = []  # each open field's instruction so far, closed
        self.left_out = 0

    @staticmethod
    def _paragraphs(container: _Element) -> Iterator[_Element]:
        """The ``w:p`` the body's walk reads, in its order: content controls opened, but those
        of a generated gallery; a table's are read apart."""
        from docx.oxml.ns import qn

        for child in container.iterchildren():
            if child.tag == qn("w:p"):
                yield child
            elif child.tag == qn("w:sdt") and _gallery(child) not in GENERATED_GALLERIES:
                content = child.find(qn("w:sdtContent"))
                if content is not None:
                    yield from _GeneratedFields._paragraphs(content)

    @staticmethod
    def _closed_begins(body: _Element) -> list[bool]:
        """Whether each field begun in the walk's paragraphs, in order, ends in them."""
        from docx.oxml.ns import qn

        closed: list[bool] = []
        open_at: list[int] = []
        for paragraph in _GeneratedFields._paragraphs(body):
            for node in paragraph.iter(qn("w:fldChar")):
                kind = node.get(qn("w:fldCharType"))
                if kind == "begin":
                    open_at.append(len(closed))
                    closed.append(False)
                elif kind == "end" and open_at:
                    closed[open_at.pop()] = True
        return closed

    @staticmethod
    def _generated_code(instruction: str) -> bool:
        return instruction.split()[:1] in ([name] for name in GENERATED_FIELDS)

    def _inside(self) -> bool:
        return any(closed and self._generated_code(instruction.upper())
                   for instruction, closed in self.open)

    def follow(self, node: _Element) -> bool:
        """Reads ``node`` when it is a field's character, instruction or simple field (then
        True: no text of its own)."""
        from docx.oxml.ns import qn

        if node.tag == qn("w:instrText"):
            if self.open:
                instruction, closed = self.open[-1]
                self.open[-1] = (instruction + (node.text or ""), closed)
            return True
        if node.tag == qn("w:fldSimple"):
            self.left_out += not self._inside() and self._generated_code(
                node.get(qn("w:instr"), "").upper())
            return True
        if node.tag != qn("w:fldChar"):
            return False
        kind = node.get(qn("w:fldCharType"))
        if kind == "begin":
            self.open.append(("", self.begins < len(self.closed) and self.closed[self.begins]))
            self.begins += 1
        elif kind == "end" and self.open:
            was = self._inside()
            self.open.pop()
            self.left_out += was and not self._inside()
        return True

    def generating(self, node: _Element) -> bool:
        """Whether text ``node`` is a generated field's result."""
        from docx.oxml.ns import qn

        if self._inside():
            return True
        simple = next(node.iterancestors(qn("w:fldSimple")), None)
        return simple is not None and self._generated_code(simple.get(qn("w:instr"), "").upper())


def _gallery(control: _Element) -> str:
    """The ``w:docPartGallery`` of a content control (``""``: none)."""
    from docx.oxml.ns import qn

    found = control.find(f"{qn('w:sdtPr')}/{qn('w:docPartObj')}/{qn('w:docPartGallery')}")
    return found.get(qn("w:val"), "") if found is not None else ""


def _blocks(document: Document, budget: ContentBudget, imported: _Imported | None = None,
            objects: _Objects | None = None,
            fields: _GeneratedFields | None = None) -> list[DocxBlock]:
    """The body's paragraphs and tables in order, content controls opened, the HTML or text
    a ``w:altChunk`` imports read in its place and the tables of a workbook a paragraph (or a
    table's cell) embeds after it, each followed by the notes it refers to (a list item's after
    the list, which stays one block, as in ODT); a generated table of contents or index left
    out, counted in ``fields``."""
    from docx.oxml.ns import qn
    from docx.text.paragraph import Paragraph

    numbering = _Numbering(document)
    notes = _Notes(document)
    blocks: list[DocxBlock] = []
    styles: dict[str | None, object] = {}  # python-docx scans every style per lookup: once per id

    def style_of(element: _Element, paragraph: Paragraph) -> object:
        style_id = element.style  # CT_P.style: the w:pStyle id, None for the default style
        if style_id not in styles:
            styles[style_id] = paragraph.style
        return styles[style_id]

    after_list: list[DocxBlock] = []

    def add_notes(element: _Element, in_list: bool = False) -> None:
        for text in notes.referred_in(element):
            budget.add(chars=len(text))
            (after_list if in_list else blocks).append(DocxBlock(text))

    def add(block: DocxBlock) -> None:
        if not block.list_item:
            blocks.extend(after_list)
            after_list.clear()
        blocks.append(block)

    def walk(container: _Element) -> None:
        for child in container.iterchildren():
            if child.tag == qn("w:p"):
                paragraph = Paragraph(child, document)
                text = paragraph_text(child, fields).strip()
                embedded = [block for found in _objects_in(child) if objects is not None
                            for block in objects.blocks(found)]
                if not text:
                    for block in embedded:
                        add(block)
                    continue
                budget.add(chars=len(text))
                style = style_of(child, paragraph)
                level = (_heading_level(style.name if style is not None else "")
                         or _outline_level(child, style))
                num_pr = None if level else _num_pr(child, style)
                if num_pr is not None:
                    indent = "  " * num_pr[1]
                    add(DocxBlock(f"{indent}{numbering.marker(*num_pr)} {text}", list_item=True))
                else:
                    add(DocxBlock(text, heading_level=level))
                add_notes(child, in_list=num_pr is not None)
                for block in embedded:
                    add(block)
            elif child.tag == qn("w:tbl"):
                block = _table_block(child, budget)
                if block is not None:
                    add(block)
                add_notes(child)
                for found in _objects_in(child) if objects is not None else ():
                    for block in objects.blocks(found):
                        add(block)
            elif child.tag == qn("w:sdt"):
                content = child.find(qn("w:sdtContent"))
                if fields is not None and _gallery(child) in GENERATED_GALLERIES:
                    fields.left_out += 1
                elif content is not None:
                    walk(content)
            elif child.tag == qn("w:altChunk") and imported is not None:
                for block in imported.blocks(child):
                    budget.add(chars=len(block.text))
                    add(block)

    walk(document.element.body)
    return blocks + after_list


@dataclass(frozen=True)
class DocxContent:
    """What a DOCX file holds for the index (and for its view in the service).

    Attributes:
        blocks: The body's blocks in order, each note after the block referring to it.
        headers_and_footers: ``Header: text`` / ``Footer: text`` lines, each distinct text once.
        comments: How many comments the file holds (left out).
        core_title: The core properties' title, ``""`` when it has none.
        imported_left_out: Parts imported whole (``w:altChunk``) of a kind not read (RTF, a
            document): left out.
    """

    blocks: tuple[DocxBlock, ...]
    headers_and_footers: tuple[str, ...]
    comments: int
    core_title: str
    imported_left_out: int = 0
    objects_left_out: int = 0
    workbook_notes: tuple[tuple[str, str], ...] = ()
    """What the embedded workbooks left out
    (:func:`~rag_pipeline.core.ingest.formats.xlsx.embedded_workbook_notes`)."""
    indexes_left_out: int = 0
    """Generated tables of contents and indexes left out (:data:`GENERATED_FIELDS`)."""


def read_docx(data: bytes, limits: OfficeLimits) -> DocxContent:
    """Reads a DOCX file's blocks, headers, footers and comment count.

    Raises:
        ExtractionError: Not a readable DOCX file, or over one of ``limits`` (checked on the
            zip before parsing, then while reading).
    """
    import docx

    check_zip(data, "DOCX", limits)
    budget = ContentBudget("DOCX", limits)
    try:
        document = docx.Document(io.BytesIO(as_plain_document(data)))
        imported = _Imported(document)
        objects = _Objects(document, budget)
        fields = _GeneratedFields(document.element.body)
        blocks = tuple(_blocks(document, budget, imported, objects, fields))
        furniture = tuple(_headers_and_footers(document, budget, objects))
        return DocxContent(blocks, furniture, _comment_count(document),
                           (document.core_properties.title or "").strip(), imported.left_out,
                           objects.left_out, embedded_workbook_notes(objects.read),
                           fields.left_out)
    except ExtractionError:
        raise
    except MemoryError as exc:
        raise ExtractionError("out of memory reading the DOCX: too large to read") from exc
    except Exception as exc:  # zipfile, XML and python-docx errors: each is the reason
        raise ExtractionError(f"unreadable DOCX: {type(exc).__name__}: {exc}") from exc


class DocxFormat(DocumentFormat):
    """``.docx`` files (Word 2007 and later, LibreOffice, Google Docs exports), and their
    macro-enabled and template kinds (``.docm``, ``.dotx``, ``.dotm``: the same parts)."""

    name = "docx"
    suffixes = (".docx", ".docm", ".dotx", ".dotm")

    def __init__(self, limits: OfficeLimits | None = None) -> None:
        self.limits = limits or OfficeLimits()

    def extractor(self) -> Extractor:
        return Extractor("docx-python-docx", f"13+python-docx-{library_version('python-docx')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Blocks joined by blank lines (list items of one run by single newlines), a section
        per heading, the text before the first heading a section titled as the document.

        Raises:
            ExtractionError: Not a readable DOCX file, or over one of the format's
                :class:`OfficeLimits` (checked on the zip before parsing, then while reading).
        """

        content = read_docx(data, self.limits)
        blocks, furniture = content.blocks, content.headers_and_footers
        core_title, comments = content.core_title, content.comments
        first_heading = next((b.text for b in blocks if b.heading_level), None)
        title = core_title or first_heading or stem
        parts: list[str] = []
        sections: list[Section] = []
        tables: list[TableSpan] = []
        offset = 0
        open_section: tuple[str, int, int] | None = None  # title, level, body start
        body_end = 0
        previous: DocxBlock | None = None

        def close() -> None:
            if open_section is not None and body_end > open_section[2]:
                sections.append(Section(open_section[0], open_section[2], body_end, open_section[1]))

        for block in blocks:
            if previous is not None:
                separator = "\n" if block.list_item and previous.list_item else "\n\n"
                parts.append(separator)
                offset += len(separator)
            if block.heading_level:
                close()
                open_section = (block.text, block.heading_level, offset + len(block.text) + 2)
            else:
                if open_section is None:
                    open_section = (title, 1, offset)
                body_end = offset + len(block.text)
            if block.rows:
                _, span = layout_table(block.rows, offset, block.header_rows)
                tables.append(span)
            parts.append(block.text)
            offset += len(block.text)
            previous = block
        close()
        canonical, furniture_section = with_furniture("".join(parts) + ("\n" if parts else ""),
                                                      list(furniture))
        if furniture_section is not None:
            sections.append(furniture_section)
        notes = (*((("comments_left_out", str(comments)),) if comments else ()),
                 *((("imported_parts_left_out", str(content.imported_left_out)),)
                   if content.imported_left_out else ()),
                 *((("embedded_objects_left_out", str(content.objects_left_out)),)
                   if content.objects_left_out else ()),
                 *((("indexes_left_out", str(content.indexes_left_out)),)
                   if content.indexes_left_out else ()),
                 *content.workbook_notes)
        return Extracted(title=title, canonical_text=canonical, sections=tuple(sections),
                         tables=tuple(tables), notes=notes)
