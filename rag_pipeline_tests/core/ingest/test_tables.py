"""Tables in canonical text: rows laid out as lines, the header a chunk repeats, rows cited."""

from __future__ import annotations

from rag_pipeline.core.ingest.extracted import Anchor, TableSpan
from rag_pipeline.core.ingest.locator import TableRowsLocator
from rag_pipeline.core.ingest.tables import (
    header_spans,
    layout_table,
    repeated_header,
    row_line,
    row_spans,
    rows_locator,
    with_rows,
)


def test_layout_table_places_the_rows_at_the_offset():
    text, span = layout_table([["Name", "Hours"], ["Ada", "6"], ["Bo", "2"]], 100)
    assert text == "Name | Hours\nAda | 6\nBo | 2"
    assert span == TableSpan(100, 127, "Name | Hours", 112, (113, 121))
    canonical = "x" * 100 + text
    assert canonical[span.start:span.header_end] == span.header
    assert canonical[span.rows[1]:span.end] == "Bo | 2"


def test_an_empty_cell_keeps_its_place_but_trailing_ones_go():
    assert row_line(["a", "", "c", "", ""]) == "a |  | c"
    assert row_line([" two\n words ", "x"]) == "two words | x"


def test_row_range_names_the_rows_a_span_overlaps():
    span = TableSpan(0, 40, "H", 1, (2, 10, 20, 30))
    assert span.row_range(0, 1) is None  # the header only
    assert span.row_range(0, 12) == (1, 2)
    assert span.row_range(20, 30) == (3, 3)
    assert span.row_range(25, 40) == (3, 4)
    assert span.row_range(40, 50) is None


def test_the_header_is_repeated_only_after_it():
    tables = [TableSpan(10, 40, "H | I", 15, (16, 30)), TableSpan(50, 60, "", 50, (50,))]
    assert repeated_header(tables, 10) == ""
    assert repeated_header(tables, 16) == "H | I"
    assert repeated_header(tables, 45) == ""
    assert repeated_header(tables, 55) == ""  # a table without a header row
    assert rows_locator(tables, 16, 35) == "rows=1-2"
    assert rows_locator(tables, 0, 9) == ""


def test_a_fragment_gains_the_rows_its_span_holds():
    tables = [TableSpan(10, 40, "H | I", 15, (16, 30))]
    assert with_rows("#page=2", tables, 16, 35) == "#page=2&rows=1-2"
    assert with_rows("#char=12,40", tables, 12, 40) == "#char=12,40&rows=1-2"
    assert with_rows("#slide=3", tables, 30, 40) == "#slide=3&rows=2-2"
    assert with_rows("#char=0,12", tables, 0, 12) == "#char=0,12"  # the header only: no row
    assert with_rows("#char=41,50", tables, 41, 50) == "#char=41,50"  # after the table


def test_a_table_sharing_its_page_with_another_is_named_by_its_place_on_it():
    tables = [TableSpan(0, 20, "A", 2, (3, 10)), TableSpan(30, 50, "B", 32, (33, 40)),
              TableSpan(60, 80, "C", 62, (63, 70))]

    def page(position: int) -> str:
        return "#page=1" if position < 55 else "#page=2"

    assert with_rows("#page=1", tables, 10, 20, page) == "#page=1&table=1&rows=2-2"
    assert with_rows("#page=1", tables, 40, 50, page) == "#page=1&table=2&rows=2-2"
    assert with_rows("#page=2", tables, 63, 80, page) == "#page=2&rows=1-2"  # alone on its page
    # Spans that start before their table on the same page still name it.
    assert with_rows("#page=1", tables, 25, 45, page) == "#page=1&table=2&rows=1-2"
    # Without pages (each position its own unit) no place is given.
    assert with_rows("#char=40,50", tables, 40, 50, lambda p: f"#char={p},{p + 1}") == (
        "#char=40,50&rows=2-2")


def test_a_chunks_table_and_rows_are_found_among_the_tables_near_it_not_all():
    """Found by an attack: a 0.9 MiB Markdown file of 40,000 small tables took 43 s to chunk
    (every chunk's header and locator went over every table's start: quadratic)."""
    class Counted(list):
        reads = 0

        def __getitem__(self, index):
            Counted.reads += 1
            return super().__getitem__(index)

        def __iter__(self):
            for index in range(len(self)):
                yield self[index]

    tables = Counted(TableSpan(20 * n, 20 * n + 15, "k | v", 20 * n + 5, (20 * n + 10,))
                     for n in range(100_000))

    def page(position: int) -> str:
        return f"#page={position // 100}"  # five tables a page

    start = 20 * 54_321 + 10
    assert (repeated_header(tables, start), rows_locator(tables, start, start + 5, page)) == (
        "k | v", str(TableRowsLocator(1, 1, table=2)))
    assert Counted.reads < 100


def test_a_citation_adds_rows_unless_the_formats_fragment_names_them():
    from rag_pipeline.core.ingest import format_named

    tables = [TableSpan(10, 40, "H | I", 15, (16, 30))]
    anchors = [Anchor(10, 15, "sheet=S&range=A1:B1"), Anchor(16, 29, "sheet=S&range=A2:B2"),
               Anchor(30, 40, "sheet=S&range=A3:B3")]
    assert format_named("xlsx").cited_fragment(anchors, tables, 16, 40) == "#sheet=S&range=A2:B3"
    assert format_named("ods").cited_fragment(anchors, tables, 16, 40) == "#sheet=S&range=A2:B3"
    rows = [Anchor(10, 15, "row=1"), Anchor(16, 29, "row=2"), Anchor(30, 40, "row=3")]
    assert format_named("csv").cited_fragment(rows, tables, 30, 40) == "#row=3"
    assert format_named("docx").cited_fragment((), tables, 16, 40) == "#char=16,40&rows=1-2"


def test_a_span_of_rows_without_its_header_gets_the_header_above_them():
    from rag_pipeline.core.ingest import format_named

    tables = [TableSpan(10, 40, "Tier | Per diem", 25, (26, 33))]
    docx = format_named("docx")
    assert docx.header_above(tables, 26, 40) == "Tier | Per diem"
    assert docx.header_above(tables, 10, 40) == ""  # the span holds the header row itself
    assert docx.header_above(tables, 0, 9) == ""  # no table
    # CSV and sheets name each value's column in its row's line: nothing to add.
    assert [format_named(f).header_above(tables, 26, 40) for f in ("csv", "xlsx", "ods")] == [
        "", "", ""]


def test_the_rows_a_span_holds_are_the_tables_rows_and_the_row_anchors():
    from rag_pipeline.core.ingest import format_named

    markdown = format_named("markdown").extract(
        b"# T\n\n| a | b |\n| - | - |\n| 1 | 2 |\n| 3 | 4 |\n\nAfter.\n", "t")
    text = markdown.canonical_text
    assert [text[s:e] for s, e in row_spans(markdown.tables, markdown.anchors, 0, len(text))] == [
        "| 1 | 2 |", "| 3 | 4 |"]
    # Clipped to the span; a row it does not reach is not one of them.
    first = text.index("| 1")
    assert row_spans(markdown.tables, markdown.anchors, first + 2, first + 12) == [
        (first + 2, first + 9), (first + 10, first + 12)]
    csv = format_named("csv").extract(b"item,cost\ntravel,80\n", "c")
    assert [csv.canonical_text[s:e] for s, e in row_spans(csv.tables, csv.anchors, 0, 99)] == [
        "item | cost", "item: travel | cost: 80"]
    ipynb = format_named("ipynb").extract(
        b'{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "markdown", "metadata": {}, '
        b'"source": "a | b"}]}', "n")
    assert row_spans(ipynb.tables, ipynb.anchors, 0, 99) == []  # a cell is no row


def test_the_header_rows_a_span_holds():
    table = TableSpan(10, 60, "a | b", 15, (16, 30, 45))
    assert header_spans([table], 0, 100) == [(10, 15)]
    assert header_spans([table], 12, 100) == [(12, 15)]
    assert header_spans([table], 16, 100) == []  # starts after the header
    assert header_spans([TableSpan(0, 9, "", 0, (0,))], 0, 9) == []  # a table without one
