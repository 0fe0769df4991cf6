"""HTML: the text as a browser shows it, without the page's chrome, through BeautifulSoup + lxml.

Rendering follows CSS's normal flow: text inside inline elements joins its neighbours exactly
as written (``<var>statement</var>s`` is ``statements``, never ``statement s``), white space
collapses to one space (CSS Text 3, ``white-space: normal``) and is dropped at the start and
end of a line, ``<br>`` breaks a line, and each block element (``p``, ``div``, ``li``,
``tr``, ...) is a paragraph of its own, but a definition list's term (``<dt>``) and the first
paragraph of its definition are one, on two lines (as a manual's entry is: no chunk ends
between a name and what it means). ``<pre>`` keeps its lines. Headings are paragraphs
outside every section: the body after a heading, up to the next, is a section titled by it
(:mod:`~rag_pipeline.core.ingest.heading_sections`: the first ``<h1>``'s by the document, a
later one's by itself, as DocBook titles a chapter's sections). A heading inside an admonition
(``<div class="note">`` and the other classes of :data:`_ADMONITIONS`, as DocBook and Sphinx
write them) is the admonition's label, a paragraph of the section it is in:
the text after the note is not "Tip"'s.

Chrome is removed before rendering, each rule a published convention rather than a guess:
``script``/``style``-like elements; ``nav`` and ``aside``; a page-level ``header``/``footer``
(not inside ``article``, ``main`` or ``role=main``: outside the content HTML-AAM maps them
to ``banner`` and ``contentinfo``; themes wrap whole pages in ``section``, so that does not
count as content); ``role=navigation|banner|contentinfo|search``; the navigation classes of
Texinfo (``header``, ``nav-panel``, ``menu``, ``mini-toc``, ``section-toc``, ``contents`` and
``shortcontents`` with their headings, ``copiable-anchor``/``copiable-link``, index tables
``index-*``), Sphinx (``related``, ``sphinxsidebar``, ``footer``,
``headerlink``) and DocBook (``navheader``, ``navfooter``, ``toc``); elements marked
``hidden`` or ``display: none``. Then, per document, a link-dominated paragraph (at least half
its characters are link text) that repeats verbatim is navigation too ("Next: ... Up: ..."
bars without a class; of a single link, only its first copy is kept). The counts go into the document's notes.

A table's rows are paragraphs of tab-separated cells; an empty cell keeps its place, and a
cell spanning columns or rows (``colspan``, ``rowspan``) leaves empty places in the columns it
covers, so no cell shifts. Each outermost table is declared as a
:class:`~rag_pipeline.core.ingest.extracted.TableSpan`: its header is the leading rows of
``<thead>`` or of ``<th>`` cells only, else its first row.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rag_pipeline.core.ingest.bom_text import (
    MAX_REPLACED_SHARE,
    CharsetReading,
    codec_name,
    decode_declared,
    decoded_with_replacements,
    plainly_windows_1252,
)
from rag_pipeline.core.ingest.extracted import Extracted, ExtractionError, Extractor, TableSpan
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.heading_sections import heading_sections
from rag_pipeline.core.ingest.library import library_version

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

_INVISIBLE = ("script", "style", "noscript", "template", "head", "title", "meta", "link",
              "iframe", "object", "svg", "canvas", "select", "button", "input", "textarea")
_LANDMARKS = ("nav", "aside")
_PAGE_LEVEL = ("header", "footer")
_CONTENT = ("article", "main")
_ROLES = {"navigation", "banner", "contentinfo", "search"}
_CLASSES = {"header", "nav-panel", "navigation", "menu", "mini-toc", "section-toc", "contents",
            "contents-heading", "shortcontents", "shortcontents-heading", "copiable-anchor",
            "copiable-link", "related", "sphinxsidebar", "footer", "headerlink", "navheader",
            "navfooter", "toc"}
_BLOCKS = frozenset((
    "address", "article", "blockquote", "body", "caption", "center", "dd", "details", "dialog",
    "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "form", "hgroup", "hr", "html",
    "legend", "li", "main", "menu", "ol", "p", "section", "summary", "table", "tbody", "tfoot",
    "thead", "tr", "ul"))
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_CELLS = ("td", "th")
_TABLE_PARTS = frozenset(("table", "thead", "tbody", "tfoot", "tr"))
_SHORT_CELL_CHARS = 400
"""Characters a cell of a data row holds at most (``<td><p>112</p></td>``, four one-line
examples); a longer cell, or one of a list, a table, a heading, a quote or preformatted text,
lays a page out or answers at length (a newsletter's column of paragraphs beside its menu, a
FAQ's answer of three paragraphs): its blocks stay paragraphs."""
_SHORT_CELL_NODES = 64
"""Nodes (elements and texts) a short cell holds at most."""
_TALL_IN_CELL = frozenset(("ul", "ol", "dl", "table", "blockquote", "pre", "hr", *_HEADINGS))
_BREAK = "\x02"
_CELL = "\x01"
_SPACE = re.compile(r"[ \t\n\r\f]+")
_MARKERS = re.compile("[\x01\x02]")
_EXPONENT = re.compile(r"[-+\u2212]?\d+(?:\.\d+)?")
"""A ``<sup>`` holding a number after a letter, a digit or a bracket (``2<sup>31</sup>``) is an
exponent: written ``2^31``, as plain text writes it. Run into its base, it read ``231``: a
different number in every quote (SQLite's limits page)."""
_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.IGNORECASE)


@dataclass(frozen=True)
class _Paragraph:
    text: str
    kind: str  # "text", "pre" or "h1".."h6"
    link_chars: int = 0
    links: int = 0  # the links it holds (an <a> inside another counted once)
    table: int = -1  # the outermost table holding it, numbered in document order; -1: none
    row: str = ""  # "header" or "data" when a row of that table starts with it
    term: bool = False  # a definition list's term (``<dt>``): its definition follows on the next line


MAX_ELEMENTS = 1_000_000
"""A page with more start tags and comments fails unparsed: its parse tree takes about 1 KB a
node (a 20 MB page of 5 million ``<li>`` took 5.4 GB and 179 s; of 2.4 million comments, each
after a letter of text, 2.8 GB). A large real page has far fewer: Rust's whole book on one
page, 1.9 MB, has 24,534."""
_NODE_START = re.compile(rb"<[A-Za-z!?]")
"""A start tag, a comment or declaration (``<!--``, ``<!DOCTYPE``), a processing instruction."""
MAX_TABLE_COLUMNS = 10_000
"""Columns one table row may reach (its cells' ``colspan`` summed): past it the document fails
(250 cells of ``colspan=1000`` in 13 KB made 15 million characters of empty places and 5.9 GB)."""
MAX_TABLE_PLACES = 5_000_000
"""Places (cells and the empty places spans leave) all of a document's table rows may take: a
row of one cell under cells spanning 1,000 rows and 10,000 columns takes 10,000 places in 18
bytes; past it the document fails."""


class _Grid:
    """One table's column bookkeeping while its rows are rendered: cells spanning rows
    (``rowspan``) reserve their columns in the rows below, cells spanning columns
    (``colspan``) the columns after them, so every cell lands in its own column."""

    def __init__(self) -> None:
        self.reserved: dict[int, int] = {}  # column -> rows still covered from above
        self.column = 0
        self.spans: dict[int, int] = {}

    def start_row(self) -> None:
        self.column = 0
        self.spans = {}

    def place(self, colspan: int, rowspan: int) -> int:
        """How many columns the cell moves past (reserved ones, then its own start); records
        the rows it covers below."""
        first = self.column
        while self.reserved.get(self.column, 0) > 0:
            self.column += 1
        start = self.column
        for column in range(start, start + colspan):
            if rowspan > 1:
                self.spans[column] = rowspan - 1
        self.column = start + colspan
        if self.column > MAX_TABLE_COLUMNS:
            raise ExtractionError(f"a table row reaches column {self.column:,}, past "
                                  f"{MAX_TABLE_COLUMNS:,}: its cells' colspan values make no "
                                  "table a reader could see")
        return start - first

    def end_row(self) -> None:
        reserved = {c: n - 1 for c, n in self.reserved.items() if n > 1}
        reserved.update(self.spans)
        self.reserved = reserved


def _span(value: object) -> int:
    """A ``colspan``/``rowspan`` value as HTML parses it: digits, at least 1, at most 1000."""
    digits = re.match(r"\s*(\d+)", str(value or ""))
    return min(max(int(digits.group(1)), 1), 1000) if digits else 1


def _is_chrome(element: Tag) -> bool:
    """Whether ``element`` is navigation, a banner, a footer or hidden (the rules above)."""
    name = element.name
    if name in _LANDMARKS:
        return True
    if name in _PAGE_LEVEL and not any(p.name in _CONTENT or p.get("role") == "main"
                                       for p in element.parents):
        return True
    attrs = element.attrs
    if attrs.get("role") in _ROLES or "hidden" in attrs:
        return True
    classes = attrs.get("class") or ()
    if any(c in _CLASSES or (name == "table" and c.startswith("index-")) for c in classes):
        return True
    return bool(_DISPLAY_NONE.search(attrs.get("style") or ""))


def _strip_chrome(soup: BeautifulSoup) -> int:
    """Removes every chrome element; returns how many of them held visible text."""
    from bs4 import Tag as BsTag

    for tag in soup(_INVISIBLE):
        tag.decompose()
    chrome = [e for e in soup.descendants if isinstance(e, BsTag) and _is_chrome(e)]
    dropped = 0
    for element in chrome:
        if element.decomposed:
            continue
        dropped += bool(element.get_text().strip())
        element.decompose()
    return dropped


def _collapse(raw: str) -> str:
    """Inline text as CSS lays it out: runs of white space are one space, none at a line's
    start or end; ``_BREAK`` ends a line, each ``_CELL`` is a tab between two table cells (an
    empty cell keeps its place, so later cells keep their column; tabs ending a line go); a
    no-break space never collapses and is written as a space."""
    text = _SPACE.sub(" ", raw).replace(" " + _CELL, _CELL).replace(_CELL + " ", _CELL)
    lines = []
    for line in text.split(_BREAK):
        line = line.replace(_CELL, "\t").strip(" ").rstrip("\t")
        if not line.strip("\t"):
            line = ""
        lines.append(line)
    return "\n".join(lines).strip("\n").replace("\xa0", " ")


class _Renderer:
    """Walks the tree once, without recursion (documents nest thousands deep), collecting
    paragraphs."""

    def __init__(self) -> None:
        self.paragraphs: list[_Paragraph] = []
        self._inline: list[str] = []
        self._link_chars = 0
        self._links = 0
        self._grids: list[_Grid] = []  # the tables being rendered, outermost first
        self._cells: list[int] = []  # per open row: the cells placed so far
        self._wide: list[bool] = []  # per open row: whether it has two cells or more
        self._short: list[bool] = []  # per open cell: a short cell of such a row (_end_block)
        self._tables = 0
        self._row = ""  # the kind of the outermost table's row that has started, until it shows
        self._places = 0  # table places taken so far (MAX_TABLE_PLACES)

    def _add(self, text: str, kind: str, link_chars: int = 0, links: int = 0) -> None:
        table = self._tables - 1 if self._grids else -1
        self.paragraphs.append(_Paragraph(text, kind, link_chars, links, table, self._row))
        self._row = ""

    def flush(self) -> None:
        text = _collapse("".join(self._inline))
        if text:
            self._add(text, "text", self._link_chars, self._links)
        self._inline.clear()
        self._link_chars = 0
        self._links = 0

    def _enter_table_part(self, node: Tag) -> None:
        name = node.name
        if name == "table":
            if not self._grids:
                self._tables += 1
            self._grids.append(_Grid())
        elif name == "tr" and self._grids:
            self._grids[-1].start_row()
            self._cells.append(0)
            cells = node.find_all(_CELLS, recursive=False)
            self._wide.append(len(cells) > 1)
            if len(self._grids) == 1:
                header = (node.parent is not None and node.parent.name == "thead") or (
                    bool(cells) and all(cell.name == "th" for cell in cells))
                self._row = "header" if header else "data"
        elif name in _CELLS and self._grids and self._cells:
            colspan = _span(node.get("colspan"))
            skipped = self._grids[-1].place(colspan, _span(node.get("rowspan")))
            self._places += skipped + colspan
            if self._places > MAX_TABLE_PLACES:
                raise ExtractionError(f"its tables take over {MAX_TABLE_PLACES:,} cells and empty "
                                      "places (rowspan and colspan): too large to read")
            placed = self._cells[-1]
            self._inline.append(_CELL * (skipped + (placed > 0)))
            self._cells[-1] = placed + colspan
            self._short.append(self._wide[-1] and _short_cell(node))

    def _leave_table_part(self, node: Tag) -> None:
        name = node.name
        if name == "table" and self._grids:
            self._grids.pop()
        elif name == "tr" and self._grids and self._cells:
            self._grids[-1].end_row()
            self._cells.pop()
            self._wide.pop()
        elif name in _CELLS and self._grids and self._cells:
            self._inline.append(_CELL * (_span(node.get("colspan")) - 1))
            self._short.pop()

    def _end_block(self, name: str) -> None:
        """A block's start or end: the paragraph so far ends; inside a short cell of a row of
        two cells or more (:data:`_SHORT_CELL_CHARS`), a space instead (``<td><p>112</p></td>``,
        as LibreOffice's help and DocBook write cells: each cell stays in its row's line, a tab
        between cells)."""
        if self._short and self._short[-1] and name not in _TABLE_PARTS:
            self._inline.append(" ")
        else:
            self.flush()

    def _exponent_follows(self, sup: Tag) -> bool:
        """Whether ``sup`` is an exponent of the text before it (:data:`_EXPONENT`)."""
        last = self._inline[-1][-1:] if self._inline else ""
        return (last.isalnum() or last == ")") and _EXPONENT.fullmatch(sup.get_text().strip()) is not None

    def render(self, root: Tag) -> list[_Paragraph]:
        from bs4 import NavigableString
        from bs4 import Tag as BsTag

        stack: list[tuple[object, bool, bool]] = [(root, True, False)]
        while stack:
            node, entering, in_link = stack.pop()
            if isinstance(node, BsTag):
                name = node.name
                if not entering:
                    if name in _BLOCKS:
                        count = len(self.paragraphs)
                        self._end_block(name)
                        if name == "dt" and len(self.paragraphs) > count:
                            self.paragraphs[-1] = replace(self.paragraphs[-1], term=True)
                    self._leave_table_part(node)
                    continue
                if name == "br":
                    self._inline.append(_BREAK)
                    continue
                if name == "pre" or name in _HEADINGS:
                    self.flush()
                    inside = _block_inside(node) if name in _HEADINGS else None
                    name = "text" if name in _HEADINGS and _in_admonition(node) else name
                    if inside is not None:
                        # A heading left open (``<h2>Keyword Index</h1>``: lxml keeps it open,
                        # a browser ends it) holds the page after it: the heading is its text
                        # up to its first block, the rest is read as the body it is.
                        rest = node.contents[inside:]
                        stack.extend((child, True, in_link) for child in reversed(rest))
                        text = _collapse(_MARKERS.sub("", "".join(
                            child.get_text() if isinstance(child, BsTag) else str(child)
                            for child in node.contents[:inside])).replace(_BREAK, " "))
                        if text.strip():
                            self._add(text, name)
                        continue
                    raw = _MARKERS.sub("", node.get_text())
                    if name == "pre":
                        text = raw.strip("\n").rstrip()
                    else:
                        text = _collapse(raw.replace(_BREAK, " "))
                    if text.strip():
                        self._add(text, name)
                    continue
                if name in _BLOCKS:
                    self._end_block(name)
                if name == "sup" and self._exponent_follows(node):
                    self._inline.append("^")
                self._enter_table_part(node)
                link = in_link or name == "a"
                self._links += link and not in_link
                stack.append((node, False, in_link))
                stack.extend((child, True, link) for child in reversed(node.contents))
            elif type(node) is NavigableString:
                text = _MARKERS.sub("", str(node))
                self._inline.append(text)
                if in_link:
                    self._link_chars += len(text.strip())
        self.flush()
        return self.paragraphs


def _short_cell(cell: Tag) -> bool:
    """Whether a cell holds at most :data:`_SHORT_CELL_CHARS` characters and none of
    :data:`_TALL_IN_CELL`. Its nodes are read until the answer is known, at most
    :data:`_SHORT_CELL_NODES` of them (more: no short cell), from its children down (bs4's
    ``descendants`` first walks to the subtree's end): cells nested thousands deep are each
    read a bounded way, never the whole page below them."""
    from bs4 import NavigableString
    from bs4 import Tag as BsTag

    chars, stack = 0, list(reversed(cell.contents))
    for _ in range(_SHORT_CELL_NODES):
        if not stack:
            return True
        node = stack.pop()
        if isinstance(node, NavigableString):
            chars += len(node)
            if chars > _SHORT_CELL_CHARS:
                return False
        elif isinstance(node, BsTag):
            if node.name in _TALL_IN_CELL:
                return False
            stack.extend(reversed(node.contents))
    return not stack


_ADMONITIONS = frozenset(("note", "tip", "warning", "caution", "important", "admonition", "hint",
                          "attention", "danger", "seealso"))
"""The classes of an admonition's ``<div>`` (DocBook's ``note``, Sphinx's ``admonition``)."""


def _in_admonition(heading: Tag) -> bool:
    """Whether ``heading`` is inside an admonition's ``<div>`` (within its section)."""
    for parent in heading.parents:
        if parent.name in ("section", "article", "main", "body"):
            return False
        if parent.name == "div" and not _ADMONITIONS.isdisjoint(parent.get("class") or ()):
            return True
    return False


def _block_inside(heading: Tag) -> int | None:
    """The index of the heading's first child that is a block, a heading or preformatted text
    (none belongs in a heading: it holds phrasing content only), or None."""
    from bs4 import Tag as BsTag

    return next((i for i, child in enumerate(heading.contents) if isinstance(child, BsTag)
                 and (child.name in _BLOCKS or child.name in _HEADINGS or child.name == "pre")), None)


def _without_repeated_navigation(paragraphs: list[_Paragraph]) -> tuple[list[_Paragraph], int]:
    """Drops link-dominated text paragraphs that occur more than once, verbatim: every copy of
    one of two links or more (a bar: "Next: ... Up: ..."), every copy but the first of one
    link (an entry of a page's list that its sidebar lists again: SQLite's "Books About
    SQLite")."""
    counts = Counter(p.text for p in paragraphs if p.kind == "text")
    seen: set[str] = set()
    kept = []
    for p in paragraphs:
        if p.kind == "text" and counts[p.text] > 1 and 2 * p.link_chars >= len(p.text):
            if p.links >= 2 or p.text in seen:
                continue
            seen.add(p.text)
        kept.append(p)
    return kept, len(paragraphs) - len(kept)


_HEADING_LEFT_OPEN = re.compile(
    rb"(<h([1-6])\b[^<>]{0,1000}>)((?:(?!</?h[1-6]\b).){0,10000}?)</h(?!\2)[1-6]\s*>",
    re.IGNORECASE | re.DOTALL)
"""A heading closed by another level's end tag (``<h2>Keyword Index</h1>``), its attributes up
to 1,000 bytes (no ``<`` in them) and its text up to 10,000: each tried match is bounded, and
no two heading starts share one ``>`` (``<h1`` 330 times before one ``>`` and 10,000 bytes of
text, repeated over 2 MB, takes 12.6 s with unbounded ones)."""


_INTERNAL_SUBSET = re.compile(rb"<!DOCTYPE[^>\[]*\[[^\]]*\]\s*>", re.IGNORECASE)
"""A document type declaration with an internal subset (``<!DOCTYPE html [<!ENTITY e "x">]>``,
XHTML in an EPUB): an HTML parser ends it at its first ``>``, and the rest (``]>``) was text."""


def declared_charset(data: bytes) -> str | None:
    """The charset a page's ``<meta>`` (or XML declaration) declares, as :func:`parsed_html`
    finds it; None when it declares none."""
    from bs4.dammit import EncodingDetector

    return EncodingDetector.find_declared_encoding(data, is_html=True)


def parsed_html(data: bytes, reading: CharsetReading | None = None) -> BeautifulSoup:
    """A page parsed as the indexer and its view read it: BeautifulSoup over lxml (decoded by
    :func:`page_text`, what its reading had to do kept in ``reading``), a heading closed
    by an end tag of another level ended there, as a browser ends it (lxml keeps it open, and
    SQLite's ``keyword_index.html`` became one heading of 61,358 characters), and a document
    type's internal subset left out (:data:`_INTERNAL_SUBSET`). XHTML is read as HTML on
    purpose, as browsers read it, without bs4's warning saying so."""
    import warnings

    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        data = _INTERNAL_SUBSET.sub(b"", data, count=1)  # its entities are never expanded
        markup = page_text(_HEADING_LEFT_OPEN.sub(rb"\1\3</h\2>", data),
                           CharsetReading() if reading is None else reading)
        return BeautifulSoup(markup, "lxml")


def page_text(data: bytes, reading: CharsetReading) -> str | bytes:
    """A page's text: a page with a byte-order mark as it is (the parser reads the mark); one
    declaring a charset (``<meta>``, an XML declaration) decoded as mail is
    (:func:`~rag_pipeline.core.ingest.bom_text.decode_declared`: ``gb2312`` as GB18030 when
    GBK characters are in it, ``iso-8859-1`` as windows-1252, UTF-8 under a wrong label, a
    stray bad byte replaced and counted), and one declaring none as UTF-8 (a stray byte
    replaced and counted), else as windows-1252 when plainly that, else as the parser's
    detection finds it (charset_normalizer), the charset guessed and said."""
    from bs4.dammit import EncodingDetector, UnicodeDammit

    if EncodingDetector.strip_byte_order_mark(data)[1] is not None:
        return data
    declared = _declared_label(data)
    if declared is not None or _utf8_or_nearly(data) or plainly_windows_1252(data) is not None:
        return decode_declared(data, declared, reading)
    detected = UnicodeDammit(data, is_html=True)
    if detected.unicode_markup is None or detected.original_encoding is None:
        return decode_declared(data, None, reading)
    reading.guessed.add(detected.original_encoding)
    return detected.unicode_markup


def page_charset(data: bytes) -> str:
    """The charset a browser should read a page's bytes by to show what :func:`page_text` read
    (the ``Content-Type`` an original is served with: without it, a legacy page labelled
    UTF-8 shows as mojibake): its byte-order mark's, else the charset guessed, else the one it
    declares, else UTF-8."""
    from bs4.dammit import EncodingDetector

    mark = EncodingDetector.strip_byte_order_mark(data)[1]
    if mark is not None:
        return mark
    reading = CharsetReading()
    page_text(data, reading)
    return next(iter(reading.guessed), None) or _declared_label(data) or "utf-8"


def _declared_label(data: bytes) -> str | None:
    """The charset a page declares, a UTF-16 or UTF-32 label read as UTF-8 (bytes without a
    mark cannot be those: as browsers read it); None when it declares none."""
    declared = declared_charset(data)
    return "utf-8" if (codec_name(declared) or "").startswith(("utf-16", "utf-32")) else declared


def _utf8_or_nearly(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 but for at most :data:`MAX_REPLACED_SHARE` bad sequences."""
    return decoded_with_replacements(data, "utf-8")[1] <= max(1.0, MAX_REPLACED_SHARE * len(data))


def extract_html(data: bytes, stem: str, heading_first: bool = False) -> Extracted:
    """The page's visible text without chrome (see the module docstring): paragraphs joined by
    blank lines, headings as paragraphs outside the sections they title; the title from
    ``<title>``, else the first ``<h1>``, else the stem (``heading_first``: the first ``<h1>``
    before ``<title>``, as a book's chapter is titled on its page).

    Raises:
        ExtractionError: The page has more than :data:`MAX_ELEMENTS` start tags and comments, or its tables
            more cells than the limits above.
    """
    elements = sum(1 for _ in _NODE_START.finditer(data))
    if elements > MAX_ELEMENTS:
        raise ExtractionError(f"{elements:,} elements and comments: over the limit of "
                              f"{MAX_ELEMENTS:,} an HTML page (its parse would take about 1 KB of "
                              "memory each)")
    reading = CharsetReading()
    soup = parsed_html(data, reading)
    title_tag = soup.find("title")
    page_title = " ".join(title_tag.get_text().split()) if title_tag else ""
    chrome = _strip_chrome(soup)
    paragraphs, repeated = _without_repeated_navigation(_Renderer().render(soup))
    parts: list[str] = []
    headings: list[tuple[int, int, int, str]] = []
    placed: list[tuple[int, _Paragraph]] = []
    offset = 0
    previous: _Paragraph | None = None
    for paragraph in paragraphs:
        if previous is not None:
            # A term's definition follows it on the next line, one paragraph with it (as a
            # manual's entry is): no chunk ends between a name and what it means.
            parts.append("\n" if previous.term and paragraph.kind == "text" else "\n\n")
            offset += len(parts[-1])
        if paragraph.kind in _HEADINGS:
            headings.append((offset, offset + len(paragraph.text), int(paragraph.kind[1]),
                             paragraph.text))
        parts.append(paragraph.text)
        placed.append((offset, paragraph))
        offset += len(paragraph.text)
        previous = paragraph
    canonical = "".join(parts) + ("\n" if parts else "")
    tables = _tables(canonical, placed)
    first_heading = next((t for _, _, level, t in headings if level == 1), None)
    title = ((first_heading or page_title) if heading_first else (page_title or first_heading)) \
        or stem
    notes = (("dropped_chrome_elements", str(chrome)), ("dropped_repeated_links", str(repeated)),
             *reading.notes())
    return Extracted(title=title, canonical_text=canonical,
                     sections=heading_sections(headings, len(canonical), title),
                     notes=tuple(note for note in notes if note[1] != "0"), tables=tables)


def _tables(canonical: str, placed: list[tuple[int, _Paragraph]]) -> tuple[TableSpan, ...]:
    """Each outermost data table's span, from its first row to its last paragraph: its header
    the leading rows of ``<thead>`` or of ``<th>`` cells only, else its first row, after a
    title row of one cell over a row of cells ("Date Specifiers" over "Format | Explanation").
    A table of one column without such header rows (a one-column table with them is a list of
    entries: PostgreSQL's function tables, each entry a cell of paragraphs), or without a row
    under its header, lays a page out (a mail's wrapper, a signature): its text is prose, no
    table."""
    by_table: dict[int, list[tuple[int, _Paragraph]]] = {}
    for offset, paragraph in placed:
        if paragraph.table >= 0:
            by_table.setdefault(paragraph.table, []).append((offset, paragraph))
    spans = []
    for members in by_table.values():
        rows = [(offset, p.row) for offset, p in members if p.row]
        if not rows:
            continue
        last_offset, last = members[-1]
        end = last_offset + len(last.text)
        if (len(rows) >= 3 and rows[0][1] != "header" and "\t" not in _row_text(canonical, rows, 0)
                and "\t" in _row_text(canonical, rows, 1)):
            rows = rows[1:]  # a title over the table, its one cell spanning the columns
        start = rows[0][0]
        header_rows = 0
        while header_rows < len(rows) and rows[header_rows][1] == "header":
            header_rows += 1
        explicit = header_rows > 0
        header_rows = header_rows or 1
        header_end = rows[header_rows][0] if header_rows < len(rows) else end
        header = canonical[start:header_end].rstrip()
        if header_rows >= len(rows) or ("\t" not in header and not explicit):
            continue
        spans.append(TableSpan(start, end, header, start + len(header),
                               tuple(offset for offset, _ in rows[header_rows:])))
    return tuple(spans)


def _row_text(canonical: str, rows: list[tuple[int, str]], index: int) -> str:
    """The text of the table's row ``index`` (up to the next row's start)."""
    end = rows[index + 1][0] if index + 1 < len(rows) else len(canonical)
    return canonical[rows[index][0]:end]


class HtmlFormat(DocumentFormat):
    """``.html`` and ``.htm`` files."""

    name = "html"
    suffixes = (".html", ".htm")
    links_by_text = True

    def extractor(self) -> Extractor:
        return Extractor("html-rendered", f"17+bs4-{library_version('beautifulsoup4')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        return extract_html(data, stem)
