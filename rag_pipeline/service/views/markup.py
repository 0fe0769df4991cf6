"""HTML, Markdown and DOCX as a reader sees them: sanitised HTML (nh3), the quote marked.

An HTML file's ``<body>`` and a Markdown document's canonical text rendered by markdown-it-py
(CommonMark) both go through nh3 (the Rust ``ammonia`` sanitiser: an allow-list of tags and
attributes, no script, no event handler, no ``javascript:`` URL, no image fetched). A DOCX file
is rendered from the blocks the indexer reads (a ``Heading N`` or ``Title`` style as a heading,
tables, notes, headers and footers), every text escaped. The quote is then found among the page's text by its
letters and digits (:func:`rag_pipeline.service.views.base.locate`) and each piece of it
wrapped in ``<mark>``, the first with ``id="quote"``.
"""

from __future__ import annotations

import bisect
import functools
import html
import itertools
import re
from collections.abc import Callable

from rag_pipeline.core.runtime.recent import Recent
from rag_pipeline.service.views.base import View, ViewRequest, letters_of, locate, normalised
from rag_pipeline.service.views.text import heading_label, text_view, without_original_view

_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del",
    "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span",
    "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u",
    "ul", "var"})


MAX_NESTING = 512
"""Elements nested deeper than this are not rendered as a page (real pages nest a few dozen)."""
MAX_RENDERED_SIZE = 2_000_000
"""A source (an HTML file's bytes, a Markdown document's characters) longer than this is shown
as its extracted text: rendering and sanitising cost up to seconds a megabyte (300 KB of
Markdown link openers took markdown-it 4.6 s)."""
SANITISED_KEPT = 16
"""Documents whose sanitised markup is kept."""
_SANITISED: Recent[tuple[str, str, str, int], str | int] = Recent(SANITISED_KEPT)
"""(format, document id, sha256, the extracted text's hash) -> the sanitised markup, or the
depth of markup too deep."""
_TAG = re.compile(r"<(?P<close>/)?(?P<name>[A-Za-z][A-Za-z0-9:-]*)[^<>]*?(?P<self>/)?>")
_RAW = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?>|<!.*?>"
                  r"|<(?P<raw>script|style|template)\b[^>]*>.*?</(?P=raw)\s*>", re.S | re.I)
"""What BeautifulSoup writes unescaped: comments, CDATA, processing instructions, a doctype,
and the text of scripts, style sheets and templates (a ``</a>`` in them closes nothing)."""

SHELL_IDS = frozenset({"quote", "view", "where", "page-image", "prev-page", "next-page"})
"""Element ids the page shell and its views give (the quote's mark above all): a document's own
element of such an id would be where the page scrolls as "the quoted place"."""


_DIRECTIONS = frozenset({"ltr", "rtl", "auto"})


def _keep_attribute(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "dir":
        return value.strip().lower() if value.strip().lower() in _DIRECTIONS else None
    return None if attribute == "id" and value.strip().lower() in SHELL_IDS else value


def sanitised(markup: str) -> str:
    """``markup`` through nh3 with the tags above, links to http(s) and mailto only, and no
    element taking an id of :data:`SHELL_IDS`; its headings a level down (:func:`demoted`)."""
    import nh3

    return demoted(nh3.clean(markup, tags=set(_TAGS), url_schemes={"http", "https", "mailto"},
                             attributes={"a": {"href", "title"}, "td": {"colspan", "rowspan"},
                                         "th": {"colspan", "rowspan"}, "*": {"id", "dir", "lang"}},
                             attribute_filter=_keep_attribute))


def demoted(markup: str) -> str:
    """Sanitised ``markup`` with every heading a level down (``h1`` -> ``h2``; ``h6`` stays):
    the view's page has one ``h1``, the document's title, and a screen reader's list of
    headings puts the document's own under it."""

    def down(tag: re.Match[str]) -> str:
        heading = _HEADING.match(tag.group())
        if heading is None:
            return tag.group()
        return (f"<{heading['close'] or ''}h{min(int(heading['level']) + 1, 6)}"
                + tag.group()[heading.end():])

    return _MARKUP_TAG.sub(down, markup)


_MARKUP_TAG = re.compile(r"""<(?:[^>"']|"[^"]*"|'[^']*')*>""")
"""A tag of sanitised markup (an attribute's value may hold ``>``): what lies between two is
text, its ``&``, ``<`` and ``>`` escaped."""
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_HEADING = re.compile(r"<(?P<close>/)?h(?P<level>[1-6])\b", re.I)


class _Text:
    """One run of text between two tags of the markup: where it is and what a reader sees of
    it."""

    def __init__(self, markup: str, start: int, end: int) -> None:
        self.markup, self.start, self.end = markup, start, end
        raw = markup[start:end]
        self.seen = _ENTITY.sub(lambda entity: html.unescape(entity.group()), raw) if "&" in raw else raw

    @functools.cached_property
    def offsets(self) -> list[int]:
        """For each character of :attr:`seen`, the offset in the markup it is written at (an
        entity's characters all at the entity's), then :attr:`end`."""
        raw = self.markup[self.start:self.end]
        offsets: list[int] = []
        at = 0
        for entity in _ENTITY.finditer(raw):
            offsets += range(self.start + at, self.start + entity.start())
            offsets += [self.start + entity.start()] * len(html.unescape(entity.group()))
            at = entity.end()
        offsets += range(self.start + at, self.end + 1)
        return offsets


def _texts(markup: str) -> list[_Text]:
    texts: list[_Text] = []
    at = 0
    for tag in _MARKUP_TAG.finditer(markup):
        if tag.start() > at:
            texts.append(_Text(markup, at, tag.start()))
        at = tag.end()
    if at < len(markup):
        texts.append(_Text(markup, at, len(markup)))
    return texts


def mark_quote(markup: str, quote: str, before: int = 0) -> tuple[str, str | None]:
    """``markup`` (as the sanitiser writes it) with the text of ``quote`` wrapped in ``<mark>``
    elements (the first ``id="quote"``), after ``before`` other places holding it (see
    :func:`~rag_pipeline.service.views.base.locate`), and the text of the heading the quote
    sits under (``""`` for none); None in its place when the quote was not found."""
    texts = _texts(markup)
    letters = [letters_of(text.seen) for text in texts]
    found = locate("".join(letters), normalised(quote)[0], before)
    if found is None:
        return markup, None
    before = list(itertools.accumulate(len(found_letters) for found_letters in letters))

    def owner(letter: int) -> tuple[int, int]:
        """The text holding the ``letter``-th letter, and that letter's index in its text."""
        number = bisect.bisect_right(before, letter)
        return number, normalised(texts[number].seen)[1][letter - (before[number - 1] if number else 0)]

    (first_text, first_char), (last_text, last_char) = owner(found[0]), owner(found[1])
    letters_at = [i for i, ch in enumerate(quote) if ch.isalnum()]
    lead = quote[:letters_at[0]] if letters_at else ""
    trail = quote[letters_at[-1] + 1:] if letters_at else ""
    pieces: list[str] = []
    at = 0
    first_mark = None
    for number in range(first_text, last_text + 1):
        text = texts[number]
        value = text.seen
        a = first_char if number == first_text else 0
        b = last_char + 1 if number == last_text else len(value)
        # The quote's own symbols before and after its letters (an emoji, a flag) are marked
        # with them, and so is punctuation touching the marked text.
        if number == first_text:
            a = _widened(value, a, lead, backward=True)
        if number == last_text:
            b = _widened(value, b, trail, backward=False)
        while a > 0 and not value[a - 1].isspace() and not value[a - 1].isalnum():
            a -= 1
        while b < len(value) and not value[b].isspace() and not value[b].isalnum():
            b += 1
        if not value[a:b].strip():
            continue
        opened, closed = text.offsets[a], text.offsets[b]
        pieces += [markup[at:opened], "<mark>" if first_mark is not None else '<mark id="quote">',
                   markup[opened:closed], "</mark>"]
        first_mark = opened if first_mark is None else first_mark
        at = closed
    pieces.append(markup[at:])
    return "".join(pieces), _heading_before(markup, texts, first_mark)


def _widened(value: str, at: int, symbols: str, backward: bool) -> int:
    """``at`` moved over ``symbols`` (what a quote holds before its first letter, going
    ``backward``, or after its last) where ``value`` holds them next to ``at``, white space
    aside; else ``at``."""
    wanted = [ch for ch in (symbols if backward else reversed(symbols)) if not ch.isspace()]
    moved = at
    for j in (range(at - 1, -1, -1) if backward else range(at, len(value))):
        if not wanted:
            break
        if value[j].isspace():
            continue
        if value[j] != wanted[-1]:
            break
        wanted.pop()
        moved = j if backward else j + 1
    return moved if not wanted else at


def _heading_before(markup: str, texts: list[_Text], where: int | None) -> str:
    """The text of the last heading (``h1`` to ``h6``) opened before ``where`` in ``markup``."""
    if where is None:
        return ""
    opened = None
    for tag in _HEADING.finditer(markup, 0, where):
        if not tag["close"]:
            opened = tag
    if opened is None:
        return ""
    closing = _HEADING.search(markup, opened.end())
    end = closing.start() if closing is not None else len(markup)
    return " ".join("".join(text.seen for text in texts
                            if opened.end() <= text.start and text.end <= end).split())


@functools.cache
def _empty_elements() -> frozenset[str]:
    """Elements with no end tag, as BeautifulSoup writes them (``<br/>``, ``<spacer/>``); read
    on first use, so starting ``serve`` does not import BeautifulSoup."""
    from bs4.builder import HTMLTreeBuilder

    return frozenset(HTMLTreeBuilder.DEFAULT_EMPTY_ELEMENT_TAGS)


def nesting_depth(markup: str) -> int:
    """How deep ``markup``'s elements nest at most: start tags less end tags, empty and
    self-closed elements not counted, nor tags inside comments, CDATA, scripts and style sheets
    (markup as BeautifulSoup and markdown-it write it: ``<`` and ``>`` escaped in text and
    attribute values, written raw only in those)."""
    depth = deepest = 0
    empty = _empty_elements()
    for match in _TAG.finditer(_RAW.sub("", markup)):
        if match["close"]:
            depth = max(0, depth - 1)
        elif not match["self"] and match["name"].lower() not in empty:
            depth += 1
            deepest = max(deepest, depth)
    return deepest


def _marked_view(request: ViewRequest, size: int, render: Callable[[], str],
                 shown: Callable[[str], str] | None = None) -> View:
    """The sanitised markup ``render`` makes of a source of ``size`` characters or bytes, the
    quote marked, labelled by the heading above the quote. Each document's sanitised markup
    is kept (:data:`SANITISED_KEPT`), so a page of views renders it once. The extracted text
    instead for a source over :data:`MAX_RENDERED_SIZE`, or markup nested deeper than
    :data:`MAX_NESTING` (the sanitiser's time grows with the square of the depth: 100,000
    nested elements took 34 s)."""
    if size > MAX_RENDERED_SIZE:
        return text_view(request, f"This document is {size:,} characters long (more than "
                                  f"{MAX_RENDERED_SIZE:,}): it is shown as its extracted text.")
    key = (request.info.format, request.info.document_id, request.info.content_sha256,
           hash(request.text))
    found = _SANITISED.get(key) if request.info.content_sha256 else None
    if found is None:
        markup = render()
        depth = nesting_depth(markup)
        found = depth if depth > MAX_NESTING else sanitised(markup)
        if request.info.content_sha256:
            _SANITISED.put(key, found)
    if isinstance(found, int):
        return text_view(request, f"This document nests its elements {found:,} deep (more than "
                                  f"{MAX_NESTING}): it is shown as its extracted text.")
    if not request.quoted:
        return View(heading_label(request) or "the whole document",
                    f'<article class="markup">{found}</article>', "markup", "")
    body, heading = mark_quote(found, request.quote if shown is None else shown(request.quote),
                               request.quote_before)
    note = "" if heading is not None else "The quoted passage could not be located in this rendering."
    return View(heading or heading_label(request) or "the quoted passage",
                f'<article class="markup">{body}</article>', "markup", note)


def html_view(request: ViewRequest) -> View:
    """The original HTML file's body, sanitised; the extracted text when the file is gone."""
    from rag_pipeline.core.ingest.formats.html import parsed_html

    original = request.original
    if original is None:
        return without_original_view(request)

    def render() -> str:
        soup = parsed_html(original.data)  # as the indexer read it
        body = (soup.body or soup).decode_contents()
        # The page's own direction (``<html dir="rtl">``, ``<body dir="rtl">``) goes with its body.
        written = [element.get("dir") for element in (soup.body, soup.html) if element is not None]
        direction = next((d for d in written if isinstance(d, str)), None)
        return f'<div dir="{html.escape(direction)}">{body}</div>' if direction else body

    return _marked_view(request, len(original.data), render)


def markdown_view(request: ViewRequest) -> View:
    """The document's canonical text rendered as CommonMark, after its front matter."""
    from markdown_it import MarkdownIt

    from rag_pipeline.core.ingest.formats.markdown import front_matter_end

    body = request.text[front_matter_end(request.text):]
    return _marked_view(request, len(body), lambda: MarkdownIt(
        "commonmark", {"html": False}).enable("table").render(body), _shown_markdown)


MAX_SHOWN_QUOTE = 20_000
"""A Markdown quote longer than this (a whole document asked for) is searched for as it is:
rendering it again costs as much as the page."""


def _shown_markdown(quote: str) -> str:
    """The text a reader sees of a Markdown quote: a link's text without its URL, an entity as
    its character (``[the checklist](https://...)`` reads ``the checklist``), as the rendered
    page is searched; the quote as it is when it renders to nothing, or is longer than
    :data:`MAX_SHOWN_QUOTE`."""
    from markdown_it import MarkdownIt

    if len(quote) > MAX_SHOWN_QUOTE:
        return quote
    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(quote)
    shown = html.unescape(re.sub(r"<[^>]*>", " ", rendered))
    return shown if shown.strip() else quote


def _docx_html(data: bytes) -> str:
    """A DOCX file's blocks as the indexer reads them (``formats.docx.read_docx``):
    headings as ``h1``-``h6``, tables as tables, every other block (paragraphs, list items,
    notes, text boxes) a paragraph, then the page headers and footers under their heading."""
    from rag_pipeline.core.ingest.formats.docx import read_docx
    from rag_pipeline.core.ingest.office_zip import OfficeLimits
    from rag_pipeline.core.ingest.page_furniture import HEADERS_AND_FOOTERS

    content = read_docx(data, OfficeLimits())
    parts: list[str] = []
    for block in content.blocks:
        if block.rows:
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row)
                           + "</tr>" for row in block.rows)
            parts.append(f"<table>{rows}</table>")
        elif block.heading_level:
            level = min(block.heading_level, 6)
            parts.append(f"<h{level}>{html.escape(block.text)}</h{level}>")
        else:
            parts.append(f"<p>{html.escape(block.text)}</p>")
    if content.headers_and_footers:
        parts.append(f"<h1>{html.escape(HEADERS_AND_FOOTERS)}</h1>")
        parts.extend(f"<p>{html.escape(line)}</p>" for line in content.headers_and_footers)
    return "".join(parts)


def docx_view(request: ViewRequest) -> View:
    """The original DOCX file with its headings; the extracted text when the file is gone."""
    from rag_pipeline.core.ingest.extracted import ExtractionError

    original = request.original
    if original is None:
        return without_original_view(request)
    try:
        # Read within the view: only for a document small enough to render, and once (the
        # sanitised markup is kept).
        return _marked_view(request, len(request.text), lambda: _docx_html(original.data))
    except ExtractionError:  # the file changed since it was indexed and no longer reads
        return text_view(request)
