"""The document viewers of ``/documents/{id}``: each format shown as a reader expects.

A PDF or image citation is its page as an image with the quote's boxes (:mod:`.pages`), a workbook a grid
of the sheet with the cited cells marked (:mod:`.sheet`), HTML, Markdown and DOCX sanitised HTML
with the quote marked (:mod:`.markup`), a transcript its cues with their times (:mod:`.cues`),
anything else its extracted text (:mod:`.text`). ``VIEWS`` maps a format's name to its view: a
format without an entry is shown as text, so a new format is one entry here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from rag_pipeline.service.views.base import View, ViewError, ViewRequest, page_html, path_url
from rag_pipeline.service.views.cues import cues_view
from rag_pipeline.service.views.markup import docx_view, html_view, markdown_view
from rag_pipeline.service.views.pages import PAGED, page_navigation, page_png, page_view
from rag_pipeline.service.views.sheet import SHEET_READERS, sheet_view
from rag_pipeline.service.views.text import text_view

VIEWS: dict[str, Callable[[ViewRequest], View]] = {
    **{name: page_view for name in PAGED},
    "html": html_view,
    "markdown": markdown_view,
    "docx": docx_view,
    "webvtt": cues_view,
    "srt": cues_view,
    **{name: sheet_view for name in SHEET_READERS},
}


def render_document(request: ViewRequest, original_url: str | None, withheld: str = "",
                    note: str = "") -> str:
    """The whole page of ``/documents/{id}`` for ``request``; ``withheld``: why its original
    file is not served to this reader (``original_url`` None); ``note``: a remark of the
    request's own, shown before the view's.

    Raises:
        ViewError: A page out of range, a sheet the workbook does not have.
    """
    view = VIEWS.get(request.info.format, text_view)(request)
    if note:
        view = dataclasses.replace(view, note=" ".join(filter(None, (note, view.note))))
    return page_html(request.info.title, request.info.document_id, view,
                     original_url if request.original is not None and not withheld else None,
                     page_navigation(request, view), withheld or (
                         f"The original file cannot be read now: {request.unreachable}"
                         if request.original is None and request.unreachable else ""))


__all__ = ["PAGED", "SHEET_READERS", "VIEWS", "View", "ViewError", "ViewRequest", "page_png", "path_url",
           "render_document"]
