"""Tests for ``rag_pipeline.service.views.text``: the extracted text, the quote marked, its place
named in its format's units and each slide, cell or chapter headed."""

from __future__ import annotations

import io
import json

from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.core.ingest import format_named
from rag_pipeline.service.views import VIEWS
from rag_pipeline.service.views.base import ViewRequest
from rag_pipeline.service.views.text import text_view, unit_label


def _request(name: str, format_name: str, data: bytes, quote: str) -> ViewRequest:
    extracted = format_named(format_name).extract(data, name.rsplit(".", 1)[0])
    start = extracted.canonical_text.index(quote)
    info = DocumentInfo(name, extracted.title, f"/nowhere/{name}", format_name, extracted.anchors)
    return ViewRequest(info, extracted.canonical_text, start, start + len(quote))


def _deck() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for title, body in [("Roadmap", "Ship the beta in March."), ("Budget", "Travel is capped at 80.")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def test_a_slide_quote_is_labelled_by_its_slide_and_every_slide_is_headed():
    request = _request("plan.pptx", "pptx", _deck(), "Travel is capped at 80.")
    view = text_view(request)
    assert view.label == "slide 2"
    assert view.body == ('<pre class="text"><span class="unit">Slide 1</span>Roadmap\n\n'
                         'Ship the beta in March.\n\n<span class="unit">Slide 2</span>Budget\n\n'
                         '<mark id="quote">Travel is capped at 80.</mark>\n</pre>')


def test_a_csv_quote_is_labelled_by_its_rows_as_its_citation_is():
    data = b"item,cost\ntravel,80\ntraining,55\nsalaries,1200\n"
    request = _request("budget.csv", "csv", data, "item: travel | cost: 80\nitem: training | cost: 55")
    assert format_named("csv").fragment(request.info.anchors, request.start, request.end) == "#row=2-3"
    view = text_view(request)
    assert view.label == "rows 2-3"
    assert '<span class="unit">' not in view.body  # rows are not headed one by one


def test_a_notebook_quote_names_its_cell_and_a_quote_across_cells_keeps_the_heading_inside():
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Load"},
        {"cell_type": "markdown", "metadata": {}, "source": "Rows are read once."}]}
    data = json.dumps(notebook).encode()
    request = _request("load.ipynb", "ipynb", data, "Rows are read once.")
    assert text_view(request).label == "cell 2"
    across = _request("load.ipynb", "ipynb", data, "Load\n\nRows")
    assert text_view(across).body == (
        '<pre class="text"><span class="unit">Cell 1</span># <mark id="quote">Load\n\n'
        '<span class="unit">Cell 2</span>Rows</mark> are read once.\n</pre>')


def test_plain_text_is_labelled_by_lines_and_escaped():
    data = b"first line\n<b>second</b> line\nthird\n"
    request = _request("notes.txt", "text", data, "<b>second</b> line\nthird")
    view = text_view(request)
    assert view.label == "lines 2-3"
    assert view.body == ('<pre class="text">first line\n<mark id="quote">&lt;b&gt;second&lt;/b&gt; '
                         'line\nthird</mark>\n</pre>')


def test_unit_labels():
    assert [unit_label(x) for x in ("slide=4", "cell=12", "row=7", "row=1-6", "cell=2-4",
                                    "slide=1-3", "chapter=OEBPS%2Fch%201.xhtml&char=3,9",
                                    "char=1,5", "page=2")] == [
        "slide 4", "cell 12", "row 7", "rows 1-6", "cells 2-4", "slides 1-3",
        "chapter OEBPS/ch 1.xhtml", "", ""]


def test_a_view_whose_original_is_gone_says_it_once():
    # Found by a user: "The original file is no longer where it was indexed from" twice, once
    # above the view (the page's) and once in the view's note.
    request = _request("gone.html", "html", b"<h1>Leave</h1><p>Ask two weeks ahead.</p>",
                       "Ask two weeks ahead.")
    assert request.original is None  # /nowhere/gone.html
    assert VIEWS["html"](request).note == "Shown as its extracted text."


def test_every_view_drawing_its_original_says_when_it_shows_the_text_instead():
    """Found by a newcomer reading the views: a workbook's view fell back to the text without
    a word for ODS (the formats were listed by hand, ODS forgotten), as it said for XLSX."""
    text = "Budget\n\nItem: Tea | Cost: 2.5\n"
    noted = {}
    for name in ("pdf", "image", "html", "docx", "xlsx", "ods", "markdown", "text", "pptx"):
        info = DocumentInfo(f"budget.{name}", "Budget", f"/nowhere/budget.{name}", name, ())
        noted[name] = VIEWS.get(name, text_view)(ViewRequest(info, text, 8, 31)).note
    assert noted == {**dict.fromkeys(("pdf", "image", "html", "docx", "xlsx", "ods"),
                                     "Shown as its extracted text."),
                     **dict.fromkeys(("markdown", "text", "pptx"), "")}



def test_a_document_opened_without_a_quote_has_nothing_marked():
    # Found by a new user: opened without from and to, a text view marked an empty span at
    # its start and was labelled "line 1", as if line 1 were cited.
    request = _request("plan.pptx", "pptx", _deck(), "Travel is capped at 80.")
    whole = ViewRequest(request.info, request.text, 0, 0)
    view = text_view(whole)
    assert view.label == "the whole document"
    assert view.body == ('<pre class="text"><span class="unit">Slide 1</span>Roadmap\n\n'
                         'Ship the beta in March.\n\n<span class="unit">Slide 2</span>Budget\n\n'
                         'Travel is capped at 80.\n</pre>')


def test_a_units_heading_writes_out_its_bidirectional_controls():
    """Found by an attack on the page: an EPUB chapter ``OEBPS/bidi\\u202elmth.xhtml`` was headed
    "Chapter OEBPS/bidilmthx.html"."""
    from rag_pipeline.core.ingest.extracted import Anchor

    text = "Intro.\n\nBody text.\n"
    info = DocumentInfo("book.epub", "Book", "/nowhere/book.epub", "epub",
                        (Anchor(0, 6, "chapter=OEBPS/bidi\u202elmth.xhtml"),))
    view = text_view(ViewRequest(info, text, 8, 18))
    assert view.body.startswith(
        '<pre class="text"><span class="unit">Chapter OEBPS/bidi\\u202elmth.xhtml</span>Intro.')
