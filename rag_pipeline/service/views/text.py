"""The extracted text itself, the quote marked: for plain text, CSV and any format without a
view of its own, and the fall-back when an original file is gone.

The quote's place is named in its format's own units, as its citation names it (``slide 2``,
``cell 3``, ``rows 1-6``; lines otherwise), and a format cited by slide, cell or chapter shows
where each one starts.
"""

from __future__ import annotations

import html
from urllib.parse import unquote

from rag_pipeline.core.ingest.locator import RowLocator
from rag_pipeline.service.views.base import View, ViewRequest, shown_name

UNIT_KEYS = ("slide", "cell", "chapter")
"""Locator keys whose anchors are a document's units: the text view marks where each starts."""


def heading_label(request: ViewRequest) -> str:
    """The Markdown-style heading the quote sits under in the canonical text (the titles of
    HTML, Markdown and DOCX sections are such lines), or ``""``."""
    from rag_pipeline.core.ingest.formats.markdown import heading_spans

    setext = request.info.format == "markdown"  # a plain text's underlined lines are no titles
    before = [title for start, _, _, title in heading_spans(request.text, setext)
              if start <= request.start]
    return before[-1].strip() if before else ""


def lines_label(text: str, start: int, end: int) -> str:
    """``line 12`` or ``lines 12-14`` of ``text[start:end]`` (1-based)."""
    first = text.count("\n", 0, start) + 1
    last = text.count("\n", 0, max(start, end - 1)) + 1
    return f"line {first}" if first == last else f"lines {first}-{last}"


def unit_label(locator: str) -> str:
    """``slide 2`` for ``slide=2``, ``cell 3``, ``cells 3-5``, ``chapter OEBPS/ch1.xhtml``, ``rows 1-6`` for
    ``row=1-6``; ``""`` for a locator that names no unit (``char=``, ``page=``)."""
    key, _, value = locator.partition("=")
    if key == "row":
        rows = RowLocator.parse(locator)
        return f"row {rows.first}" if rows.first == rows.last else f"rows {rows.first}-{rows.last}"
    if key in UNIT_KEYS:
        value = unquote(value.partition('&')[0])
        several = key in ("cell", "slide") and "-" in value  # cells 2-4 of a notebook
        return f"{key}s {value}" if several else f"{key} {value}"
    return ""


def place_label(request: ViewRequest) -> str:
    """Where the quote is, in the units its citation names (:func:`unit_label` of the format's
    fragment for the span), else its lines."""
    from rag_pipeline.core.ingest.formats import format_named

    try:
        fragment = format_named(request.info.format).fragment(request.info.anchors, request.start,
                                                              request.end)
    except (KeyError, ValueError):
        fragment = ""
    return (unit_label(fragment.removeprefix("#"))
            or lines_label(request.text, request.start, request.end))


def without_original_view(request: ViewRequest) -> View:
    """The text view of a document whose own view draws its original file (a page, a sheet,
    the HTML or DOCX markup) when that file cannot be read now, saying so."""
    return text_view(request, f"The original file cannot be read now ({request.unreachable}): "
                              "showing the extracted text." if request.unreachable else
                              "Shown as its extracted text.")


def text_view(request: ViewRequest, note: str = "") -> View:
    """The canonical text, escaped, in a pre-formatted block, ``text[start:end]`` marked (the
    whole document, nothing marked, when no span is quoted), and a heading where each unit
    (:data:`UNIT_KEYS`) starts."""
    text, start, end = request.text, request.start, request.end
    units = {anchor.start: unit_label(anchor.locator) for anchor in request.info.anchors
             if anchor.locator.partition("=")[0] in UNIT_KEYS and 0 <= anchor.start <= len(text)}
    marks = {start, end} if request.quoted else set()
    parts, done = ['<pre class="text">'], 0
    for at in sorted({*marks, *units}):
        parts.append(html.escape(text[done:at]))
        done = at
        if at == end and at in marks:
            parts.append("</mark>")
        if at in units:
            parts.append(f'<span class="unit">{shown_name(units[at][:1].upper() + units[at][1:])}</span>')
        if at == start and at in marks:
            parts.append('<mark id="quote">')
    parts.append(html.escape(text[done:]) + "</pre>")
    label = place_label(request) if request.quoted else "the whole document"
    return View(label, "".join(parts), "text", note)
