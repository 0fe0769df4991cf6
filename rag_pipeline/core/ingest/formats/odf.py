"""OpenDocument: text (``.odt``) by headings and paragraphs, presentations (``.odp``) by slide,
spreadsheets (``.ods``) by sheet with cell ranges as for XLSX.

The package is a zip (checked first:
:func:`~rag_pipeline.core.ingest.office_zip.check_zip`); its ``content.xml`` is read
directly with lxml, entities unresolved and the network off, its ``meta.xml`` for the title.
Inline text follows ODF 1.3: ``text:s`` is that many spaces, ``text:tab`` a tab,
``text:line-break`` a line break (the white space after it kept: a line's indentation), spans,
links and cross-references (``text:bookmark-ref``, ``text:reference-ref``: the text they show)
their text; notes (footnotes and endnotes) and
annotations are left out of the sentence they are anchored in: a note is a paragraph of its own
after the block that holds it (``Footnote 2: text``, numbered by the citation the document
shows); an annotation is a reviewer's remark, not the document: left out, counted in the note
``comments_left_out``. The page headers and footers of the master pages an ODT uses close it
(:mod:`rag_pipeline.core.ingest.page_furniture`), as a DOCX's do.

- **ODT**: a paragraph in the ``Title`` style (or one based on it) is a level-1 heading, so it
  titles a document whose properties name no title, as in DOCX; ``text:h`` starts a section
  of its outline level and is a line outside every
  section body, as a Markdown heading; ``text:p`` is a paragraph; a list is one block of
  items, ``- item``, or numbered as its list style numbers them (``3. item``, ``(c) item``),
  nested ones indented two spaces a level; a table one line per row, cells
  joined by ``" | "``, a covered (merged-away) cell an empty place so no column shifts,
  blank rows left out, declared as a :class:`~rag_pipeline.core.ingest.extracted.TableSpan`
  (:func:`~rag_pipeline.core.ingest.tables.layout_table`, the first row its header) so a long
  table keeps its header row in every chunk's embedded text. A bibliography is read as the
  document shows it; a table of contents and the other indexes generated from the document's
  own headings, captions and marked words (with page numbers) are left out, counted
  (``indexes_left_out``). Cited ``#char=``.
- **Embedded objects** (ODT and ODP; packages of their own, ``Object 1/content.xml``): a chart
  is a line ``Chart: <its title>`` and its data table (a row per category, a column per
  series, as a PPTX chart's), a spreadsheet a table per sheet, each after the block holding it.
  A formula, a drawing, a text document or an OLE object is not read: counted
  (``embedded_objects_left_out``), as every embedded object of an ODS (a chart there draws the
  sheet's own cells).
- **ODP**: as PPTX (:mod:`rag_pipeline.core.ingest.formats.pptx`): a slide's title frame
  titles its section, its other frames and tables are blocks (tables declared as in ODT), its
  notes a ``Notes: `` block (the page-number and date placeholders of a slide or its notes
  page left out); one anchor ``slide=N`` per slide, cited ``#slide=N``.
- **ODS**: as XLSX (:mod:`rag_pipeline.core.ingest.formats.xlsx`): a section per sheet, each
  row one line under the header row (:func:`~rag_pipeline.core.ingest.rows.table_lines`), the
  text a cell shows; one anchor ``sheet=<name>&range=A1:C1`` per row, cited by the smallest
  range holding the span's rows. Repeated rows and columns (``number-rows-repeated``) count
  in the numbering; empty repeats are never expanded, and a sheet past
  :data:`MAX_SHEET_CELLS` filled cells fails the document.

A hidden sheet or slide (its style's ``table:display="false"`` or
``presentation:visibility="hidden"``) is read, and counted (notes ``hidden_sheets``,
``hidden_slides``), as in XLSX and PPTX.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from rag_pipeline.core.ingest.anchor_spans import unit_fragment
from rag_pipeline.core.ingest.extracted import (
    Anchor,
    Extracted,
    ExtractionError,
    Extractor,
    Section,
    TableSpan,
)
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.list_numbers import ODF_FORMATS, list_number
from rag_pipeline.core.ingest.office_zip import MAX_STYLE_CHAIN, OfficeLimits, check_zip
from rag_pipeline.core.ingest.page_furniture import furniture_lines, with_furniture
from rag_pipeline.core.ingest.safe_xml import safe_xml
from rag_pipeline.core.ingest.sheets import MergedCells, Sheet, lay_out_sheets, sheet_fragment
from rag_pipeline.core.ingest.slides import MAX_SLIDES, lay_out_slides
from rag_pipeline.core.ingest.tables import layout_table, without_blank_rows

MAX_SHEET_CELLS = 5_000_000
"""Filled cells of one document's tables (a spreadsheet's sheets, a text's or a deck's tables);
past it the document fails."""
MAX_REPEAT = 1000
"""A filled cell or row repeated more times than this is expanded this many times."""
MAX_COPIED_CHARS = 1_000_000
"""Characters the copies of repeated cells and rows add to one document, together: an 800-byte
ODT repeating a 1,000-character cell 1,000 times across and its row 1,000 times down expanded
to 1 GB of text (2.9 GB of memory, 35 s)."""
MAX_SHEET_COLUMNS = 16_384
"""Columns of a sheet (LibreOffice's and Excel's own limit): a filled cell past it fails the
document (an empty cell repeated a million times before one ``x``, 600 rows, took 9.3 GB)."""
MAX_SPACES = 1000
"""Spaces one ``text:s`` keeps at most (its ``text:c``): 300,000,000 of them in a 406-byte file
took 10 GB."""

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "chart": "urn:oasis:names:tc:opendocument:xmlns:chart:1.0",
    "xlink": "http://www.w3.org/1999/xlink",
}


def _q(prefix: str, name: str) -> str:
    return f"{{{_NS[prefix]}}}{name}"


_WHITE = re.compile(r"[ \t\r\n]+")
_SPACES = re.compile(r" {2,}")
_ANNOTATIONS = (_q("office", "annotation"), "{http://openoffice.org/2009/office}annotation")
"""A comment: ``office:annotation`` (ODF 1.2), or ``officeooo:annotation``, as LibreOffice
Impress writes a slide's comments."""
_SKIP_INLINE = {_q("text", "note"), *_ANNOTATIONS, _q("office", "annotation-end")}


def _count(element: object, prefix: str, name: str) -> int:
    """The whole number of at least 1 in ``element``'s attribute ``prefix:name`` (1 when absent).

    Raises:
        ExtractionError: If the attribute holds anything else.
    """
    value = element.get(_q(prefix, name), "1")
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ExtractionError(f"the attribute {prefix}:{name}=\"{value[:40]}\" is not a count "
                              "of at least 1: the file is damaged")
    return int(value)


def _count_attribute(element: object, prefix: str, name: str) -> int:
    """A whole-number attribute of at least 1, else 1: a heading's level or a list's numbering
    is no reason to lose the document (unlike :func:`_count`'s repeats, which size it)."""
    value = element.get(_q(prefix, name), "1")
    return int(value) if value.isascii() and value.isdigit() and int(value) >= 1 else 1


def _heading_level(heading: object) -> int:
    """A ``text:h``'s ``text:outline-level``; 1 (a top-level heading) when absent or not a
    count of at least 1: SiSU writes ``"0"``, which ODF does not allow but LibreOffice opens."""
    return _count_attribute(heading, "text", "outline-level")


def inline_text(element: object) -> str:
    """The text of a paragraph-like element by the ODF inline rules above: the XML's own white
    space collapsed to single spaces, ``text:s``, ``text:tab`` and ``text:line-break`` kept."""
    parts: list[str] = []

    def walk(node: object) -> None:
        if node.text:
            parts.append(_WHITE.sub(" ", node.text))
        for child in node:
            tag = child.tag
            if tag in _SKIP_INLINE:
                pass
            elif tag == _q("text", "s"):
                parts.append("\x00" * min(_count(child, "text", "c"), MAX_SPACES))
            elif tag == _q("text", "tab"):
                parts.append("\t")
            elif tag == _q("text", "line-break"):
                parts.append("\n")
            else:
                walk(child)
            if child.tail:
                parts.append(_WHITE.sub(" ", child.tail))

    walk(element)
    lines = [_SPACES.sub(" ", line).rstrip(" ") for line in "".join(parts).split("\n")]
    lines[0] = lines[0].lstrip(" ")  # the paragraph's leading white space; a line's after a break is kept
    return "\n".join(line.replace("\x00", " ") for line in lines).strip("\n")


def _paragraphs_text(element: object) -> str:
    """The paragraphs and headings under ``element``, each collapsed, joined by spaces (a
    note's or an annotation's paragraphs are not its own)."""
    return " ".join(" ".join(inline_text(p).split())
                    for p in element.iter(_q("text", "p"), _q("text", "h"))
                    if not any(a.tag in _SKIP_INLINE for a in p.iterancestors()))


_ROW_GROUPS = {_q("table", name) for name in ("table-header-rows", "table-rows", "table-row-group")}


def _own_rows(table: object) -> Iterator[object]:
    """The ``table-row`` elements of ``table`` itself, in order, in its row groups too; never
    those of a table nested in one of its cells (that table is part of the cell's text)."""
    for child in table:
        if child.tag == _q("table", "table-row"):
            yield child
        elif child.tag in _ROW_GROUPS:
            yield from _own_rows(child)


@dataclass
class _Budget:
    """What a document's tables have read so far, over all its tables and embedded objects:
    the filled cells read (past :data:`MAX_SHEET_CELLS` the document fails), the copies of a
    repeated cell or row left out, and the characters the copies after the first added (no
    more than :data:`MAX_COPIED_CHARS`)."""

    filled_cells: int = 0
    copies_left_out: int = 0
    copied_chars: int = 0

    def copies(self, repeat: int, chars: int) -> int:
        """How many of a filled cell's or row's ``repeat`` copies (itself the first) of
        ``chars`` characters each are read: at most :data:`MAX_REPEAT`, and the copies after
        the first no more than the characters left of :data:`MAX_COPIED_CHARS`; the others
        are counted left out."""
        copies = min(repeat, MAX_REPEAT,
                     1 + max(0, MAX_COPIED_CHARS - self.copied_chars) // max(chars, 1))
        self.copies_left_out += repeat - copies
        self.copied_chars += chars * (copies - 1)
        return copies

    def fill(self, cells: int) -> None:
        """Counts ``cells`` filled cells read.

        Raises:
            ExtractionError: Past :data:`MAX_SHEET_CELLS` in the document.
        """
        self.filled_cells += cells
        if self.filled_cells > MAX_SHEET_CELLS:
            raise ExtractionError(f"over {MAX_SHEET_CELLS:,} filled cells: the limit per document")


def _table_rows(table: object, budget: _Budget) -> list[list[str]]:
    """A text table's rows of cell texts, a repeated cell or filled row (``number-columns-
    repeated``, ``number-rows-repeated``) read as its copies, the filled cells counted in
    ``budget`` (as a spreadsheet's).

    Raises:
        ExtractionError: Past :data:`MAX_SHEET_CELLS` filled cells in the document.
    """
    rows = []
    for row in _own_rows(table):
        cells = []
        for cell in row:
            if cell.tag not in (_q("table", "table-cell"), _q("table", "covered-table-cell")):
                continue
            text = _paragraphs_text(cell) if cell.tag == _q("table", "table-cell") else ""
            repeat = _count(cell, "table", "number-columns-repeated")
            cells += [text] * (budget.copies(repeat, len(text)) if text else min(repeat, 64))
        filled = sum(1 for text in cells if text)
        repeat = _count(row, "table", "number-rows-repeated") if filled else 1
        for _ in range(budget.copies(repeat, sum(map(len, cells)))):
            budget.fill(filled)
            rows.append(list(cells))
    return rows


@dataclass(frozen=True)
class _ListLevel:
    """One level of an ODF list style: numbered in ``number_format`` (Word's name of it:
    :data:`~rag_pipeline.core.ingest.list_numbers.ODF_FORMATS`) between ``prefix`` and
    ``suffix`` from ``start``, after the numbers of its ``shown - 1`` outer levels
    (``text:display-levels``: ``1.2.``), letters past ``z`` as ``aa, ab`` (or ``aa, bb``
    with ``letter_sync``); or (``number_format`` empty) a bullet."""

    number_format: str = ""
    prefix: str = ""
    suffix: str = ""
    start: int = 1
    shown: int = 1
    letter_sync: bool = False

    def number(self, count: int) -> str:
        return list_number(self.number_format, count, self.letter_sync)


def _list_styles(*roots: object | None) -> dict[str, dict[int, _ListLevel]]:
    """Each ``text:list-style`` of ``roots`` (``styles.xml``'s and ``content.xml``'s): its
    numbered levels by level (1 the outermost); a bullet or picture level is not one."""
    styles: dict[str, dict[int, _ListLevel]] = {}
    for root in roots:
        for style in root.iter(_q("text", "list-style")) if root is not None else ():
            levels = {}
            for level in style.iter(_q("text", "list-level-style-number")):
                number_format = ODF_FORMATS.get(level.get(_q("style", "num-format"), ""), "")
                if number_format:
                    levels[_count_attribute(level, "text", "level")] = _ListLevel(
                        number_format, level.get(_q("style", "num-prefix"), ""),
                        level.get(_q("style", "num-suffix"), ""),
                        _count_attribute(level, "text", "start-value"),
                        _count_attribute(level, "text", "display-levels"),
                        level.get(_q("style", "num-letter-sync")) == "true")
            styles[style.get(_q("style", "name"), "")] = levels
    return styles


_XML_ID = "{http://www.w3.org/XML/1998/namespace}id"


def _list_lines(element: object, level: int, objects: _Objects, style: str = "",
                outer: tuple[str, ...] = (), counters: dict[int, int] | None = None) -> list[str]:
    """A list's items, one line per paragraph, indented two spaces a level: an item of a
    numbered level (its list style's, the outermost list's style naming it for nested ones) is
    ``3.``, ``c)``, ``iii.``, ``1.2.`` as its style numbers it (``text:start-value``
    restarting it; a list continuing the one before of its style
    (``text:continue-numbering``), or the one its ``text:continue-list`` names, counting on;
    an item holding only a nested list taking no number), any other ``-``; an item's later
    paragraphs are indented under its first (a numbered one's), and so is a line after a line
    break, a list header's lines unmarked. ``outer``: the
    numbers of the items this list is nested in; ``counters``: the last number of each level
    of the outermost list (a nested list goes on from its level's, until an item of a
    shallower level restarts it)."""
    style = element.get(_q("text", "style-name")) or style
    numbered = objects.list_styles.get(style, {}).get(level + 1)
    named = element.get(_q("text", "continue-list"))
    counters = {} if counters is None else counters
    if level == 0 and numbered and named:
        counted = objects.list_counts.get(named, numbered.start - 1)
    elif level == 0 and numbered and element.get(_q("text", "continue-numbering")) == "true":
        counted = objects.list_counts.get(style, 0)
    else:
        counted = counters.get(level, numbered.start - 1 if numbered else 0)
    lines = []
    for item in element:
        if item.tag not in (_q("text", "list-item"), _q("text", "list-header")):
            continue
        own_text = any(child.tag in (_q("text", "p"), _q("text", "h")) for child in item)
        marker, number = ("" if item.tag == _q("text", "list-header") else "-"), ""
        if numbered and item.tag == _q("text", "list-item") and own_text:
            restart = item.get(_q("text", "start-value"), "")
            counted = int(restart) - 1 if restart.isascii() and restart.isdigit() else counted
            counted += 1
            counters[level] = counted
            for deeper in [depth for depth in counters if depth > level]:
                del counters[deeper]
            number = numbered.number(counted)
            shown = [*outer[max(0, len(outer) - numbered.shown + 1):], number]
            marker = f"{numbered.prefix}{'.'.join(shown)}{numbered.suffix}"
        first = True
        for child in item:
            if child.tag == _q("text", "list"):
                lines += _list_lines(child, level + 1, objects, style,
                                     (*outer, number or numbered.number(max(counted, 1)))
                                     if numbered else outer, counters)
            elif child.tag in (_q("text", "p"), _q("text", "h")):
                # A line break in a paragraph ends a line: the next is indented under it.
                text, *broken = [words for line in inline_text(child).split("\n")
                                 if (words := " ".join(line.split()))] or [""]
                if text:
                    shown_marker = marker if first or not numbered else " " * len(marker)
                    indent = "  " * level + (" " * (len(shown_marker) + 1) if shown_marker else "")
                    lines.append(f"{'  ' * level}{shown_marker} {text}" if shown_marker
                                 else f"{'  ' * level}{text}")
                    lines += [indent + line for line in broken]
                    first = False
    counters[level] = counted
    if level == 0 and numbered:
        objects.list_counts[style] = counted
        if element.get(_XML_ID):
            objects.list_counts[element.get(_XML_ID)] = counted
    return lines


_HOLDERS = {_q("text", "section"), _q("text", "index-body"), _q("text", "index-title"),
            _q("draw", "frame"),
            _q("draw", "text-box"), _q("draw", "g")} | {
    _q("draw", shape) for shape in ("custom-shape", "rect", "ellipse", "circle", "polygon",
                                    "regular-polygon", "polyline", "path", "line", "connector",
                                    "caption", "measure")}
"""Elements whose children are blocks: sections, an index's body and title, frames and their
text boxes, groups, and the
drawing shapes that hold text directly (ODF 1.3 part 3, 10.3 and 10.4: LibreOffice Impress
keeps a slide's text in a ``draw:custom-shape`` when it was drawn as a shape, and a page-anchored
shape is a child of the ODT body)."""


_GENERATED_INDEXES = tuple(_q("text", name) for name in (
    "table-of-content", "alphabetical-index", "illustration-index", "table-index", "object-index",
    "user-index"))
"""Indexes a word processor generates from the document's own headings, captions and marked
words, with their page numbers: left out, counted (``indexes_left_out``). A bibliography is read:
its entries are in no other place of the text."""
_BIBLIOGRAPHY = _q("text", "bibliography")


def _notes(element: object) -> Iterator[tuple[str, int, list[list[str]] | None]]:
    """A block ``Footnote 2: text`` (``Endnote ii: text``) for each note anchored in ``element``,
    in order, numbered by the citation the document shows."""
    for note in element.iter(_q("text", "note")):
        label = "Endnote" if note.get(_q("text", "note-class")) == "endnote" else "Footnote"
        citation = note.find("text:note-citation", _NS)
        mark = " ".join((citation.text or "").split()) if citation is not None else ""
        body = note.find("text:note-body", _NS)
        texts = [] if body is None else [" ".join(inline_text(p).split()) for p in body.iter(
            _q("text", "p"), _q("text", "h"))]
        text = " ".join(t for t in texts if t)
        if text:
            yield f"{label} {mark}: {text}" if mark else f"{label}: {text}", 0, None


Block = tuple[str, int, list[list[str]] | None]
"""``(text, heading level or 0, a table's rows or None)``: one block of a text body."""


def _blocks(container: object, objects: _Objects) -> Iterator[Block]:
    """A text body's blocks in order, each followed by the notes anchored in it and by the
    objects embedded in it (``objects``: :attr:`_Package.objects`)."""
    for child in container:
        yield from _own_blocks(child, objects)
        if child.tag not in _HOLDERS and child.tag not in _EMBEDDED:
            yield from _notes(child)
            for embedded in child.iter(*_EMBEDDED):
                yield from _object_blocks(embedded, objects)


def _own_blocks(child: object, objects: _Objects) -> Iterator[Block]:
    """The blocks of one child of a text body (its notes and what it embeds aside)."""
    tag = child.tag
    if tag == _q("text", "h"):
        text = " ".join(inline_text(child).split())
        if text:
            yield text, _heading_level(child), None
    elif tag == _q("text", "p"):
        text = inline_text(child)
        if text and child.get(_q("text", "style-name")) in objects.title_styles:
            yield " ".join(text.split()), 1, None  # the document's title: a heading, as in DOCX
        elif text:
            yield text, 0, None
    elif tag == _q("text", "list"):
        lines = _list_lines(child, 0, objects)
        if lines:
            yield "\n".join(lines), 0, None
    elif tag == _q("table", "table"):
        rows = without_blank_rows(_table_rows(child, objects.budget))
        if rows:
            yield layout_table(rows, 0)[0], 0, rows
    elif tag in _HOLDERS:
        yield from _blocks(child, objects)
    elif tag == _BIBLIOGRAPHY:
        body = child.find("text:index-body", _NS)
        if body is not None:
            yield from _blocks(body, objects)
    elif tag in _EMBEDDED:
        yield from _object_blocks(child, objects)


def _object_name(embedded: object) -> str:
    """The package folder a ``draw:object`` names (``./Object 1`` -> ``Object 1``)."""
    return embedded.get(_q("xlink", "href"), "").removeprefix("./").strip("/")


@dataclass(frozen=True)
class _Objects:
    """What a document's blocks are read with: the root of each embedded object's
    ``content.xml`` by its folder (``Object 1``), the :class:`_Budget` the document's tables
    and objects' tables share, its list styles (:func:`_list_styles`), the last number each
    list style's outermost level reached (a list continuing it counts on) and its title
    styles."""

    roots: Mapping[str, object]
    budget: _Budget = field(default_factory=_Budget)
    list_styles: Mapping[str, dict[int, _ListLevel]] = field(default_factory=dict)
    list_counts: dict[str, int] = field(default_factory=dict)
    title_styles: frozenset[str] = frozenset()
    """The paragraph styles that are the ``Title`` style or based on it (:func:`_title_styles`)."""


def _object_body(embedded: object, objects: _Objects) -> object | None:
    """The chart or spreadsheet body an embedded object holds, or None (another kind, an OLE
    object, a folder not in the package)."""
    root = (objects.roots.get(_object_name(embedded)) if embedded.tag == _q("draw", "object")
            else None)
    if root is None:
        return None
    return next((body for name in _READ_OBJECTS
                 if (body := root.find(f"office:body/office:{name}", _NS)) is not None), None)


def _object_blocks(embedded: object, objects: _Objects) -> Iterator[Block]:
    """An embedded chart as a line ``Chart: <its title>`` and its data table (a row per
    category, a column per series, as a PPTX chart's), an embedded spreadsheet as a table per
    sheet; nothing for any other object (counted: :func:`left_out_notes`)."""
    body = _object_body(embedded, objects)
    if body is None:
        return
    if body.tag == _q("office", "chart"):
        chart = body.find("chart:chart", _NS)
        title = chart.find("chart:title", _NS) if chart is not None else None
        title_text = _paragraphs_text(title) if title is not None else ""
        yield (f"Chart: {title_text}" if title_text else "Chart"), 0, None
        tables = chart.findall("table:table", _NS) if chart is not None else []
    else:
        tables = body.findall("table:table", _NS)
    for table in tables:
        rows = without_blank_rows([list(cells) for _, cells in _sheet_rows(table, objects.budget)[0]])
        if body.tag == _q("office", "chart") and rows and not rows[0][0].strip():
            rows[0][0] = "Category"
        if rows:
            yield layout_table(rows, 0)[0], 0, rows


@dataclass(frozen=True)
class _Package:
    """``content.xml``'s root, ``meta.xml``'s title (``""`` without one), ``styles.xml``'s
    root (None without one), and the embedded objects."""

    root: object
    title: str
    styles: object | None
    objects: _Objects


def _package(data: bytes, kind: str, limits: OfficeLimits) -> _Package:
    """The package's parts that are read, each parsed safely."""
    check_zip(data, kind, limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            try:
                content = archive.read("content.xml")
            except KeyError as exc:
                raise ExtractionError(f"unreadable {kind}: no content.xml (a flat XML ODF file is "
                                      "not read)") from exc
            names = archive.namelist()
            meta = archive.read("meta.xml") if "meta.xml" in names else None
            styles = archive.read("styles.xml") if "styles.xml" in names else None
            objects = {name.removesuffix("/content.xml"): archive.read(name) for name in names
                       if name.count("/") == 1 and name.endswith("/content.xml")}
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            ValueError) as exc:
        raise ExtractionError(f"unreadable {kind}: {type(exc).__name__}: {exc}") from exc
    try:
        root = safe_xml(content)
        title_node = safe_xml(meta).find(".//dc:title", _NS) if meta else None
        styles_root = safe_xml(styles) if styles else None
        object_roots = {name: safe_xml(part) for name, part in objects.items()}
    except ExtractionError as exc:
        raise ExtractionError(f"unreadable {kind}: {exc}") from exc
    title = " ".join((title_node.text or "").split()) if title_node is not None else ""
    return _Package(root, title, styles_root,
                    _Objects(object_roots, list_styles=_list_styles(styles_root, root),
                             title_styles=_title_styles(styles_root, root)))


TITLE_STYLE = "Title"
SUBTITLE_STYLE = "Subtitle"
"""A subtitle is a paragraph under the title (as DOCX's ``Subtitle`` style is), even when its
style is based on :data:`TITLE_STYLE`, as a template may have it."""


def _title_styles(*roots: object | None) -> frozenset[str]:
    """The paragraph styles of ``roots`` (``styles.xml``'s and ``content.xml``'s) that are
    :data:`TITLE_STYLE` or based on it (``style:parent-style-name``, as LibreOffice's automatic
    styles are on the style a paragraph was given), but not through :data:`SUBTITLE_STYLE`."""
    parents = {style.get(_q("style", "name"), ""): style.get(_q("style", "parent-style-name"), "")
               for root in roots if root is not None for style in root.iter(_q("style", "style"))}
    titles = {TITLE_STYLE}
    for name in parents:
        chain, at = [name], name
        for _ in range(MAX_STYLE_CHAIN):
            at = parents.get(at, "")
            if not at or at in titles or at == SUBTITLE_STYLE:
                break
            chain.append(at)
        if at in titles and SUBTITLE_STYLE not in chain:
            titles.update(chain)
    return frozenset(titles)


def _styles_with(package: _Package, properties: str, attribute: str, value: str) -> set[str]:
    """The names of the styles (automatic ones in ``content.xml``, and those of ``styles.xml``)
    whose ``properties`` element has ``attribute`` set to ``value``: the table styles that hide
    a sheet (``table:display="false"``), the page styles that hide a slide
    (``presentation:visibility="hidden"``)."""
    roots = [package.root] + ([package.styles] if package.styles is not None else [])
    prefix, name = properties.split(":")
    key_prefix, key = attribute.split(":")
    return {style.get(_q("style", "name"), "") for root in roots
            for style in root.iter(_q("style", "style"))
            if any(found.get(_q(key_prefix, key)) == value
                   for found in style.iter(_q(prefix, name)))}


_EMBEDDED = (_q("draw", "object"), _q("draw", "object-ole"))
"""Objects embedded in a document (a chart or a spreadsheet on a slide, a formula): packages
of their own."""
_READ_OBJECTS = ("chart", "spreadsheet")
"""The embedded objects that are read (:func:`_object_blocks`); a formula, a drawing, a text
document or an OLE object is not."""


def left_out_notes(root: object, objects: _Objects) -> tuple[tuple[str, str], ...]:
    """What ``root`` holds and no reader here reads, counted: ``embedded_objects_left_out``
    (:data:`_EMBEDDED` but the charts and spreadsheets of ``objects``, which are read),
    ``comments_left_out``, the ``repeats_left_out`` of its tables and the objects', and the
    :data:`_GENERATED_INDEXES` (``indexes_left_out``), each only when there is one."""
    counts = (("embedded_objects_left_out", sum(1 for embedded in root.iter(*_EMBEDDED)
                                                if _object_body(embedded, objects) is None)),
              ("comments_left_out", sum(1 for _ in root.iter(*_ANNOTATIONS))),
              ("indexes_left_out", sum(1 for _ in root.iter(*_GENERATED_INDEXES))),
              ("repeats_left_out", objects.budget.copies_left_out))
    return tuple((name, str(count)) for name, count in counts if count)


def _headers_and_footers(package: _Package) -> list[str]:
    """The :func:`~rag_pipeline.core.ingest.page_furniture.furniture_lines` of the headers and
    footers (first-page and left-page ones too) of the master pages the document uses: the
    first (the default page style) and those a style names; one switched off
    (``style:display="false"``) left out."""
    if package.styles is None:
        return []
    pages = list(package.styles.iter(_q("style", "master-page")))
    used = {page.get(_q("style", "name")) for page in pages[:1]}
    for root in (package.root, package.styles):
        used |= {element.get(_q("style", "master-page-name"))
                 for element in root.iter() if element.get(_q("style", "master-page-name"))}
    texts = []
    for page in pages:
        if page.get(_q("style", "name")) not in used:
            continue
        for part in page:
            kind = str(part.tag).rsplit("}", 1)[-1].split("-")[0]
            if kind in ("header", "footer") and part.get(_q("style", "display")) != "false":
                texts.append((kind, _paragraphs_text(part)))
    return furniture_lines(texts)


def _body(root: object, kind: str, name: str) -> object:
    body = root.find(f"office:body/office:{name}", _NS)
    if body is None:
        raise ExtractionError(f"unreadable {kind}: content.xml has no office:{name} body (another "
                              "OpenDocument kind under this suffix?)")
    return body


def _text_document(blocks: Sequence[tuple[str, int, list[list[str]] | None]], title: str,
                   furniture: Sequence[str] = (), notes: tuple[tuple[str, str], ...] = ()
                   ) -> Extracted:
    parts: list[str] = []
    sections: list[Section] = []
    tables: list[TableSpan] = []
    offset = 0
    current = (title, 1, 0)

    def close(end: int) -> None:
        if end > current[2]:
            sections.append(Section(current[0], current[2], end, current[1]))

    for text, level, rows in blocks:
        if level:
            close(offset - 2)
            current = (text, level, offset + len(text) + 2)
        elif rows:
            tables.append(layout_table(rows, offset)[1])
        parts.append(text)
        offset += len(text) + 2
    canonical = "\n\n".join(parts) + ("\n" if parts else "")
    close(len(canonical) - 1)
    canonical, furniture_section = with_furniture(canonical, list(furniture))
    if furniture_section is not None:
        sections.append(furniture_section)
    return Extracted(title=title, canonical_text=canonical, sections=tuple(sections),
                     tables=tuple(tables), notes=notes)


class _OdfFormat(DocumentFormat):
    """An OpenDocument package, checked against its zip limits before it is parsed."""

    def __init__(self, limits: OfficeLimits | None = None) -> None:
        self.limits = limits or OfficeLimits()


class OdtFormat(_OdfFormat):
    """``.odt`` text documents (LibreOffice Writer, Google Docs exports), ``.ott`` templates."""

    name = "odt"
    suffixes = (".odt", ".ott")

    def extractor(self) -> Extractor:
        return Extractor("odt-content-xml", "14")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Headings, paragraphs, lists and tables in body order (the module docstring).

        Raises:
            ExtractionError: Not an ODT package, a zip bomb, or XML that is not well-formed.
        """
        package = _package(data, "ODT", self.limits)
        body = _body(package.root, "ODT", "text")
        try:
            blocks = list(_blocks(body, package.objects))
        except RecursionError as exc:
            raise ExtractionError("unreadable ODT: sections nested too deep to read") from exc
        title = package.title or next((text for text, level, _ in blocks if level), stem)
        return _text_document(blocks, title, _headers_and_footers(package),
                              left_out_notes(body, package.objects))


_FIELD_PLACEHOLDERS = ("page-number", "date-time")
"""A slide's or notes page's placeholders for a field the application fills in when it shows the
page (``<number>``, a date): no words of the deck, left out."""


class OdpFormat(_OdfFormat):
    """``.odp`` presentations (LibreOffice Impress), ``.otp`` templates."""

    name = "odp"
    suffixes = (".odp", ".otp")

    def extractor(self) -> Extractor:
        return Extractor("odp-content-xml", "13")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """One section and one ``slide=N`` anchor per slide (the module docstring).

        Raises:
            ExtractionError: Not an ODP package, a zip bomb, or XML that is not well-formed.
        """
        package = _package(data, "ODP", self.limits)
        meta_title = package.title
        body = _body(package.root, "ODP", "presentation")
        pages = body.findall("draw:page", _NS)
        if len(pages) > MAX_SLIDES:
            raise ExtractionError(f"{len(pages)} slides: over the limit of {MAX_SLIDES} per deck")
        slides = []
        first_title = None
        for number, page in enumerate(pages, start=1):
            title, blocks = "", []
            for frame in page:
                if frame.get(_q("presentation", "class")) in _FIELD_PLACEHOLDERS:
                    continue
                if frame.tag == _q("presentation", "notes"):
                    notes = " ".join(text for text, _, _ in _blocks(
                        [shape for shape in frame
                         if shape.get(_q("presentation", "class")) not in _FIELD_PLACEHOLDERS],
                        package.objects))
                    if notes.strip():
                        blocks.append((f"Notes: {' '.join(notes.split())}", None))
                    continue
                found = [(text, rows) for text, _, rows in _blocks([frame], package.objects)]
                if frame.get(_q("presentation", "class")) == "title" and found and not title:
                    title = " ".join(" ".join(text for text, _ in found).split())
                else:
                    blocks += found
            first_title = first_title or title or None
            slides.append((number, title or f"Slide {number}", blocks))
        hiding = _styles_with(package, "style:drawing-page-properties", "presentation:visibility",
                              "hidden")
        hidden = [number for number, page in enumerate(pages, start=1)
                  if page.get(_q("draw", "style-name")) in hiding]
        canonical, sections, anchors, tables = lay_out_slides(slides, hidden)
        return Extracted(title=meta_title or first_title or stem, canonical_text=canonical,
                         sections=sections, anchors=anchors, tables=tables,
                         notes=(("slides", str(len(pages))),
                                *((("hidden_slides", str(len(hidden))),) if hidden else ()),
                                *left_out_notes(body, package.objects)))

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#slide=N`` for a span on one slide, ``#slide=N-M`` over several; ``#char=``
        without slides."""
        return unit_fragment(anchors, start, end) or super().fragment(anchors, start, end)


def _sheet_rows(table: object, budget: _Budget,
                ) -> tuple[list[tuple[int, tuple[str, ...]]], MergedCells]:
    """A sheet's rows of cell texts and its merged cells (``number-columns-spanned`` and
    ``number-rows-spanned``), a repeated cell or row read as its copies, the filled cells
    counted in ``budget``.

    Raises:
        ExtractionError: A filled cell past :data:`MAX_SHEET_COLUMNS`, or past
            :data:`MAX_SHEET_CELLS` filled cells in the document.
    """
    rows: list[tuple[int, tuple[str, ...]]] = []
    merged: dict[tuple[int, int], tuple[int, int]] = {}
    number = 0
    for row in _own_rows(table):
        repeat = _count(row, "table", "number-rows-repeated")
        cells: list[str] = []
        column_texts: list[tuple[int, str]] = []
        column = 0
        for cell in row:
            if cell.tag not in (_q("table", "table-cell"), _q("table", "covered-table-cell")):
                continue
            span = _count(cell, "table", "number-columns-repeated")
            text = _paragraphs_text(cell) if cell.tag == _q("table", "table-cell") else ""
            wide = _count(cell, "table", "number-columns-spanned")
            high = _count(cell, "table", "number-rows-spanned")
            if wide > 1 or high > 1:
                merged[(number + 1, column + 1)] = (number + high, column + wide)
            if text:
                if column + min(span, MAX_REPEAT) > MAX_SHEET_COLUMNS:
                    raise ExtractionError(f"a filled cell at column {column + 1:,}, past the "
                                          f"{MAX_SHEET_COLUMNS:,} columns a sheet has")
                for offset in range(budget.copies(span, len(text))):
                    column_texts.append((column + offset, text))
            column += span
        if column_texts:
            cells = [""] * (column_texts[-1][0] + 1)
            for index, text in column_texts:
                cells[index] = text
            for copy in range(budget.copies(repeat, sum(len(text) for _, text in column_texts))):
                budget.fill(len(column_texts))
                rows.append((number + copy + 1, tuple(cells)))
        number += repeat
    return rows, merged


def _tables(package: _Package) -> Iterator[tuple[str, object, bool]]:
    """Each sheet of a spreadsheet package as ``(name, table element, hidden)``."""
    hiding = _styles_with(package, "style:table-properties", "table:display", "false")
    for number, table in enumerate(_body(package.root, "ODS", "spreadsheet").findall("table:table", _NS),
                                   start=1):
        yield (table.get(_q("table", "name"), f"Sheet{number}"), table,
               table.get(_q("table", "style-name")) in hiding)


def ods_sheets(data: bytes, limits: OfficeLimits | None = None
               ) -> list[tuple[str, list[tuple[int, tuple[str, ...]]], bool, MergedCells]]:
    """Each sheet of an ODS file as ``(name, rows, hidden, merged)``, a row its number and the
    text its cells show, read as :class:`OdsFormat` reads them (for a view of the sheet), and its
    merged cells.

    Raises:
        ExtractionError: As :meth:`OdsFormat.extract`.
    """
    package = _package(data, "ODS", limits or OfficeLimits())
    budget = _Budget()
    sheets = []
    for name, table, hidden in _tables(package):
        rows, merged = _sheet_rows(table, budget)
        sheets.append((name, rows, hidden, merged))
    return sheets


class OdsFormat(_OdfFormat):
    """``.ods`` spreadsheets (LibreOffice Calc), ``.ots`` templates."""

    name = "ods"
    suffixes = (".ods", ".ots")
    fragment_names_rows = True
    rows_name_their_columns = True

    def extractor(self) -> Extractor:
        return Extractor("ods-content-xml", "16")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """One section per non-empty sheet, one line and anchor per row (the module docstring).

        Raises:
            ExtractionError: Not an ODS package, a zip bomb, XML that is not well-formed, or
                over :data:`MAX_SHEET_CELLS` filled cells.
        """
        package = _package(data, "ODS", self.limits)
        objects = _Objects({})
        body = _body(package.root, "ODS", "spreadsheet")
        layout = lay_out_sheets(Sheet(name, *_sheet_rows(table, objects.budget), hidden=hidden)
                                for name, table, hidden in _tables(package))
        return Extracted(title=package.title or stem, canonical_text=layout.text,
                         sections=layout.sections, anchors=layout.anchors, tables=layout.tables,
                         notes=layout.notes + left_out_notes(body, objects))

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#sheet=Name&range=A1:C4``, exactly as for XLSX."""
        return sheet_fragment(anchors, start, end) or super().fragment(anchors, start, end)
