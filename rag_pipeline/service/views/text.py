"""The extracted text itself, the quote marked: for plain text, CSV and any format without a
view of its own, and the fall-back when an original file is gone."""

from __future__ import annotations

import html

from rag_pipeline.service.views.base import View, ViewRequest


def heading_label(request: ViewRequest) -> str:
    """The Markdown-style heading the quote sits under in the canonical text (the titles of
    HTML, Markdown and DOCX sections are such lines), or ``""``."""
    from rag_pipeline.core.ingest.formats.markdown import heading_spans

    before = [title for start, _, _, title in heading_spans(request.text) if start <= request.start]
    return before[-1].strip() if before else ""


def lines_label(text: str, start: int, end: int) -> str:
    """``line 12`` or ``lines 12-14`` of ``text[start:end]`` (1-based)."""
    first = text.count("\n", 0, start) + 1
    last = text.count("\n", 0, max(start, end - 1)) + 1
    return f"line {first}" if first == last else f"lines {first}-{last}"


def text_view(request: ViewRequest, note: str = "") -> View:
    """The canonical text, escaped, in a pre-formatted block, ``text[start:end]`` marked."""
    text, start, end = request.text, request.start, request.end
    before, quote, after = (html.escape(p) for p in (text[:start], text[start:end], text[end:]))
    original_gone = request.original is None and request.info.format in ("pdf", "xlsx", "html", "docx")
    note = note or ("The original file is no longer where it was indexed from: showing the "
                    "extracted text." if original_gone else "")
    return View(lines_label(text, start, end),
                f'<pre class="text">{before}<mark id="quote">{quote}</mark>{after}</pre>', "text", note)
