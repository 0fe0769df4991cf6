"""HTML: block elements as paragraphs, through BeautifulSoup with lxml."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_pipeline.core.ingest.extracted import Extracted, Extractor, Section
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.library import library_version

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag


_HTML_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "blockquote", "dt", "dd",
                "td", "th", "figcaption")


def _outer_blocks(soup: BeautifulSoup) -> list[Tag]:
    """In document order: the block elements inside no other block, and the ``<div>`` elements
    inside no block that hold no block or ``<div>`` themselves.

    One pass over the tree, so the time is linear in the document however deep it nests: a
    block's "inside a block" flag comes from its parent, and each element is marked as holding
    a block at most once (the walk up from a block stops at the first ancestor already marked,
    whose own ancestors are all marked).
    """
    from bs4 import Tag as BsTag

    inside_block: dict[int, bool] = {id(soup): False}
    holds_block: set[int] = set()
    candidates: list[Tag] = []
    for element in soup.descendants:
        if not isinstance(element, BsTag):
            continue
        parent = element.parent
        inside_block[id(element)] = inside_block[id(parent)] or parent.name in _HTML_BLOCKS
        if element.name not in _HTML_BLOCKS and element.name != "div":
            continue
        candidates.append(element)
        ancestor = parent
        while ancestor is not None and id(ancestor) not in holds_block:
            holds_block.add(id(ancestor))
            ancestor = ancestor.parent
    return [element for element in candidates
            if not inside_block[id(element)]
            and not (element.name == "div" and id(element) in holds_block)]


def _reading_order(soup: BeautifulSoup, blocks: list[Tag]) -> list[Tag | str]:
    """``blocks`` in document order, with the loose text between them (text in no block, such
    as ``<body>Text</body>`` or ``<div>Intro <p>Para</p></div>``; ``<head>`` excluded) as runs
    of white-space-collapsed strings. One pass, like :func:`_outer_blocks`."""
    from bs4 import NavigableString
    from bs4 import Tag as BsTag

    block_ids = {id(block) for block in blocks}
    covered: dict[int, bool] = {id(soup): False}
    out: list[Tag | str] = []
    loose: list[str] = []

    def flush() -> None:
        text = " ".join(" ".join(loose).split())
        if text:
            out.append(text)
        loose.clear()

    for node in soup.descendants:
        parent = node.parent
        inside = covered[id(parent)] or id(parent) in block_ids
        if isinstance(node, BsTag):
            covered[id(node)] = inside or node.name == "head"
            if id(node) in block_ids and not inside:
                flush()
                out.append(node)
        elif type(node) is NavigableString and not inside:
            loose.append(str(node))
    flush()
    return out


def html_block_text(element: Tag) -> str:
    """A chosen HTML block as its paragraph: ``<pre>`` keeps its lines, anything else has its
    white space collapsed; ``<h1>`` gets ``# ``, deeper headings ``## ``; "" when it holds no
    text."""
    if element.name == "pre":
        text = element.get_text().strip("\n")
    else:
        text = " ".join(element.get_text(" ").split())
    if not text.strip():
        return ""
    if element.name == "h1":
        return "# " + text
    if element.name in ("h2", "h3", "h4", "h5", "h6"):
        return "## " + text
    return text


def extract_html(data: bytes, stem: str) -> Extracted:
    """HTML blocks (and ``<div>`` elements holding no block) as paragraphs, and the loose text
    between them as paragraphs of its own; ``<h1>`` becomes ``# ``, deeper headings ``## ``,
    and the body after each heading is a section titled by it."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "lxml")
    for tag in soup(["script", "style", "noscript", "template", "nav"]):
        tag.decompose()
    blocks: list[str] = []
    headings: list[tuple[int, int, int, str]] = []
    offset = 0
    for element in _reading_order(soup, _outer_blocks(soup)):
        text = element if isinstance(element, str) else html_block_text(element)
        if not text:
            continue
        if not isinstance(element, str) and element.name in _HEADINGS:
            headings.append((offset, offset + len(text), int(element.name[1]),
                             text.split(" ", 1)[1]))
        blocks.append(text)
        offset += len(text) + 2
    canonical = "\n\n".join(blocks) + ("\n" if blocks else "")
    title_tag = soup.find("title")
    if title_tag and title_tag.get_text().strip():
        title = " ".join(title_tag.get_text().split())
    else:
        title = next((t for _, _, level, t in headings if level == 1), None) or stem
    return Extracted(title=title, canonical_text=canonical,
                     sections=_sections(headings, len(canonical), title))


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _sections(headings: list[tuple[int, int, int, str]], length: int,
              document_title: str) -> tuple[Section, ...]:
    """The body after each heading block up to the next, titled by the heading (an ``<h1>``'s
    body by the document); the text before the first heading is titled by the document."""
    sections: list[Section] = []
    title, level, start = document_title, 1, 0
    for h_start, h_end, h_level, h_title in headings:
        sections.append(Section(title, start, h_start, level))
        title, level, start = (document_title if h_level == 1 else h_title), h_level, h_end
    sections.append(Section(title, start, length, level))
    return tuple(sections)


class HtmlFormat(DocumentFormat):
    """``.html`` and ``.htm`` files."""

    name = "html"
    suffixes = (".html", ".htm")

    def extractor(self) -> Extractor:
        return Extractor("html-beautifulsoup", f"3+bs4-{library_version('beautifulsoup4')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        return extract_html(data, stem)
