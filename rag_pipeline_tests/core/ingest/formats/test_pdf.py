"""Tests for ``rag_pipeline.core.ingest.formats.pdf``'s locator: page anchors become ``#page=N``."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest import Anchor, format_named
from rag_pipeline.core.ingest.formats.pdf import page_of

# Page 1 is [0, 33), page 2 [35, 78), page 3 from 80 on; the gaps are the blank lines between.
PAGES = (Anchor(0, 33, "page=1"), Anchor(35, 78, "page=2"), Anchor(80, 120, "page=3"))


@pytest.mark.parametrize(("offset", "page"), [
    (0, 1), (34, 1), (35, 2), (36, 2), (79, 2), (80, 3), (10_000, 3)])
def test_page_of(offset: int, page: int):
    assert page_of(PAGES, offset) == page


def test_page_of_without_page_anchors_is_page_1():
    assert page_of((), 42) == 1


def test_pdf_fragment_names_the_page_of_the_start():
    pdf = format_named("pdf")
    assert pdf.fragment(PAGES, 0, 20) == "#page=1"
    assert pdf.fragment(PAGES, 35, 60) == "#page=2"
    # A chunk running from page 2 into page 3 points at the page it starts on.
    assert pdf.fragment(PAGES, 70, 95) == "#page=2"
    assert pdf.fragment(PAGES, 80, 95) == "#page=3"


def test_a_pdf_without_page_anchors_falls_back_to_characters():
    assert format_named("pdf").fragment((), 3, 9) == "#char=3,9"


def test_pdf_chunks_are_cut_at_page_starts():
    assert format_named("pdf").cut_at_anchors is True
