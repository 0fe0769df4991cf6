"""Tables in canonical text: laying rows out as lines, and which rows a span of text holds.

Every format with tables declares them as :class:`~rag_pipeline.core.ingest.extracted.TableSpan`
values in its :class:`~rag_pipeline.core.ingest.extracted.Extracted`; chunking keeps rows whole
and repeats the header row in the embedded text of each later chunk of the table. A format
that writes a table as one line per row, cells joined by ``" | "`` (DOCX, PPTX, ODF), builds
both the text and the span with :func:`layout_table`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence

from rag_pipeline.core.ingest.extracted import Anchor, TableSpan
from rag_pipeline.core.ingest.locator import (
    InvalidLocator,
    Locator,
    RangeLocator,
    RowLocator,
    TableRowsLocator,
    parse_locator,
)
from rag_pipeline.core.ingest.rows import CELL_SEPARATOR


def row_line(cells: Sequence[str], separator: str = CELL_SEPARATOR) -> str:
    """A row as one line: each cell's white space collapsed, cells joined by ``separator``.
    An empty cell stays an empty place (``"a |  | c"``), so later cells keep their column;
    empty cells at the row's end are left out (they shift nothing)."""
    texts = [" ".join(cell.split()) for cell in cells]
    while texts and not texts[-1]:
        texts.pop()
    return separator.join(texts)


def without_blank_rows(rows: Sequence[Sequence[str]]) -> list[list[str]]:
    """The rows less the blank ones (every cell empty or white space), as :func:`layout_table`
    wants them."""
    return [list(row) for row in rows if any(cell.strip() for cell in row)]


def layout_table(rows: Sequence[Sequence[str]], offset: int, header_rows: int = 1,
                 separator: str = CELL_SEPARATOR) -> tuple[str, TableSpan]:
    """The table's text (one line per row, no final newline) and its span, placed at
    ``offset`` of the canonical text.

    Args:
        rows: The rows' cells, header rows first; a merged cell should already be one value
            followed by empty cells for the columns it spans, so columns line up.
        offset: Where the text will start in the canonical text.
        header_rows: How many leading rows are the header (0: none).
        separator: Between cells.

    Example:
        >>> text, span = layout_table([["Name", "Hours"], ["Ada", "6"], ["Bo", "2"]], 100)
        >>> text
        'Name | Hours\\nAda | 6\\nBo | 2'
        >>> span
        TableSpan(start=100, end=127, header='Name | Hours', header_end=112, rows=(113, 121))
    """
    lines = [row_line(cells, separator) for cells in rows]
    starts, position = [], offset
    for line in lines:
        starts.append(position)
        position += len(line) + 1
    end = position - 1 if lines else offset
    header_rows = min(header_rows, len(lines))
    header = "\n".join(lines[:header_rows])
    header_end = offset + len(header)
    return "\n".join(lines), TableSpan(offset, end, header, header_end, tuple(starts[header_rows:]))


_HEADER_LABEL = re.compile(r"[A-Z][A-Za-z]*(?:[ -][A-Za-z]+){0,2}")


def worded_as_header(first: Sequence[str], others: Sequence[Sequence[str]]) -> bool:
    """Whether a table's first row ``first`` (its cells) is worded as a header over the rows
    ``others``: two cells or more, each a label of one to three words of letters, the first
    capitalised (``Filter | Alignment | Notes``, ``Feature | Added in | Also occurs in``), over
    two rows or more, one of them at least with a cell that is no such label (``x86 | 1``). A
    table of names alone (``Alice | Bob`` over ``Carol | Dave``) has none.

    Example:
        >>> worded_as_header(["KEY", "LONG", "DESCRIPTION"], [["c", "cmd", "simple name"],
        ...                                                   ["C", "pcpu", "cpu utilization"]])
        True
        >>> worded_as_header(["NULL", "\\0"], [["<backspace>", "\\b"], ["<form-feed>", "\\f"]])
        False
    """
    def label(cell: str) -> bool:
        return _HEADER_LABEL.fullmatch(cell.strip()) is not None

    return (len(first) >= 2 and len(others) >= 2 and all(map(label, first))
            and not all(label(cell) for row in others for cell in row if cell.strip()))


def table_at(tables: Sequence[TableSpan], position: int) -> TableSpan | None:
    """The table holding ``position`` (``tables`` in text order, never overlapping)."""
    index = bisect_right(tables, position, key=_start) - 1
    if index >= 0 and position < tables[index].end:
        return tables[index]
    return None


def repeated_header(tables: Sequence[TableSpan], start: int) -> str:
    """The header row to put before a chunk starting at ``start``: the header of the table the
    chunk starts in after its header row; ``""`` otherwise (the chunk holds the header, or
    starts outside every table)."""
    table = table_at(tables, start)
    if table is None or start < table.header_end:
        return ""
    return table.header


def rows_locator(tables: Sequence[TableSpan], start: int, end: int,
                 unit: Callable[[int], str] | None = None) -> str:
    """``rows=3-17`` (:class:`~rag_pipeline.core.ingest.locator.TableRowsLocator`): the data
    rows of the table ``[start, end)`` starts in (or the first table it reaches into); ``""``
    when it holds no data row. ``unit`` names the page or slide a position is on (the
    format's fragment there): where other tables start on the same one as this table and the
    span starts there too, the table's place among them is given (``table=2&rows=3-17``), so
    two tables on one slide never share a citation."""
    # Tables in text order never overlap: their ends are in order too, and the tables on one
    # page or slide are neighbours (a chunk's locator costs the tables near it, not all).
    for index in range(bisect_right(tables, start, key=_end), len(tables)):
        table = tables[index]
        if table.start >= end:
            break
        rows = table.row_range(start, end)
        if rows is None:
            continue
        place = None
        if unit is not None and (own := unit(table.start)) == unit(start):
            first = last = index
            while first > 0 and unit(tables[first - 1].start) == own:
                first -= 1
            while last + 1 < len(tables) and unit(tables[last + 1].start) == own:
                last += 1
            place = index - first + 1 if last > first else None
        return str(TableRowsLocator(*rows, table=place))
    return ""


def _start(table: TableSpan) -> int:
    return table.start


def _end(table: TableSpan) -> int:
    return table.end


def with_rows(fragment: str, tables: Sequence[TableSpan], start: int, end: int,
              unit: Callable[[int], str] | None = None) -> str:
    """A format's ``fragment`` for ``[start, end)`` with the table rows it holds added
    (``#page=3&rows=14-27``, ``#slide=2&table=2&rows=1-30``, ``#char=120,610&rows=5-19``);
    unchanged when it holds no data row. ``unit`` as for :func:`rows_locator`.
    :meth:`~rag_pipeline.core.ingest.formats.base.DocumentFormat.cited_fragment` calls it for a
    format whose fragment does not name its rows itself."""
    rows = rows_locator(tables, start, end, unit)
    return f"{fragment}&{rows}" if rows else fragment


def row_spans(tables: Sequence[TableSpan], anchors: Sequence[Anchor], start: int,
              end: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each table row ``[start, end)`` holds, clipped to it, in text
    order: the data rows of ``tables`` (without their line end), and the anchors that locate one
    row of a table file (a CSV's ``row=``, a sheet's ``&range=``)."""
    found: list[tuple[int, int]] = []
    for table in tables:
        bounds = [*table.rows, table.end]
        for row_start, next_start in zip(bounds, bounds[1:], strict=False):
            row_end = next_start if next_start == table.end else next_start - 1
            if row_start < end and row_end > start:
                found.append((max(row_start, start), min(row_end, end)))
    for anchor in anchors:
        if anchor.start < end and anchor.end > start and isinstance(
                _locator(anchor.locator), (RowLocator, RangeLocator)):
            found.append((max(anchor.start, start), min(anchor.end, end)))
    return sorted(set(found))  # a table file's row is a declared row and an anchor


def header_spans(tables: Sequence[TableSpan], start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` of the header row of each of ``tables`` that ``[start, end)`` holds
    part of, clipped to it, in text order."""
    return [(max(table.start, start), min(table.header_end, end)) for table in tables
            if table.header_end > table.start and table.start < end and table.header_end > start]


def _locator(text: str) -> Locator | None:
    try:
        return parse_locator(text)
    except InvalidLocator:
        return None


__all__ = ["CELL_SEPARATOR", "header_spans", "layout_table", "repeated_header", "row_line",
           "row_spans", "rows_locator", "table_at", "with_rows", "without_blank_rows",
           "worded_as_header"]
