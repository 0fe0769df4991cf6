"""A workbook's sheets as text: what XLSX and ODS share.

Each non-empty sheet is a section of :func:`~rag_pipeline.core.ingest.rows.table_lines`
(columns named by letter), each row one line and one anchor ``sheet=<name>&range=A12:F12``
(the sheet name percent-encoded), cited by the smallest range holding the rows a span
overlaps (:func:`sheet_fragment`). A cached value is written as :func:`cell_value_text` says.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag_pipeline.core.ingest.anchor_spans import overlapping
from rag_pipeline.core.ingest.extracted import Anchor, Section, TableSpan
from rag_pipeline.core.ingest.locator import RangeLocator
from rag_pipeline.core.ingest.number_format import shown_number
from rag_pipeline.core.ingest.rows import TableLine, column_letters, place_lines, table_lines

__all__ = ["MergedCells", "SheetsLayout", "cell_value_text", "lay_out_sheets", "range_locator",
           "sheet_fragment"]


def cell_value_text(value: object, number_format: str = "General") -> str:
    """A cached cell value as text: a number as its number format shows it
    (:func:`~rag_pipeline.core.ingest.number_format.shown_number`: ``1,250.00`` under
    ``#,##0.00``, ``15%`` for 0.15 under ``0%``), else in its shortest form (``2.5``, ``3`` for
    ``3.0``); booleans as ``TRUE``/``FALSE``, a date-time at midnight as its date (ISO 8601),
    ``""`` for an empty cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)) and (shown := shown_number(value, number_format)) is not None:
        return shown
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def range_locator(sheet: str, first_column: int, first_row: int, last_column: int, last_row: int) -> str:
    """``sheet=<percent-encoded name>&range=A12:F30``."""
    return str(RangeLocator(sheet, first_column, first_row, last_column, last_row))


@dataclass(frozen=True)
class SheetsLayout:
    """A workbook's text: what XLSX and ODS share.

    Attributes:
        text: The sheets' lines, a blank line between two sheets.
        sections: One per non-empty sheet, its name the title.
        anchors: One per line, ``sheet=<name>&range=A12:F12`` (:func:`range_locator`).
        tables: One per sheet holding a data row.
        notes: ``sheets``, ``rows`` (data rows) and, when there are any, ``empty_sheets``.
    """

    text: str
    sections: tuple[Section, ...]
    anchors: tuple[Anchor, ...]
    tables: tuple[TableSpan, ...]
    notes: tuple[tuple[str, str], ...]


MergedCells = Mapping[tuple[int, int], tuple[int, int]]
"""A sheet's merged cells: each merged area's first cell ``(row, column)`` to its last."""


def lay_out_sheets(sheets: Iterable[tuple[str, Sequence[tuple[int, Sequence[str]]], MergedCells]],
                   ) -> SheetsLayout:
    """Lays out ``(sheet name, (row number, cells) in order, merged cells)``: each non-empty
    sheet a section of :func:`~rag_pipeline.core.ingest.rows.table_lines`, columns named by
    letter. A row's range runs from its first to its last non-blank cell, and over every merged
    area one of those cells begins (a title merged over ``A1:F1`` is cited ``A1:F1``)."""
    parts: list[str] = []
    sections: list[Section] = []
    anchors: list[Anchor] = []
    tables: list[TableSpan] = []
    offset = rows = empty_sheets = 0
    for name, sheet_rows, merged in sheets:
        lines = table_lines(sheet_rows, lambda column: f"column {column_letters(column)}")
        if not lines:
            empty_sheets += 1
            continue
        if parts:
            parts.append("\n")
            offset += 1
        placed = place_lines(lines, offset, lambda line, sheet=name, merged=merged: _row_range(
            sheet, line, merged))
        parts.append(placed.text)
        anchors.extend(placed.anchors)
        sections.append(Section(name, offset, offset + len(placed.text) - 1))
        offset += len(placed.text)
        rows += placed.data_rows
        if placed.table is not None:
            tables.append(placed.table)
    notes = [("sheets", str(len(sections))), ("rows", str(rows))]
    if empty_sheets:
        notes.append(("empty_sheets", str(empty_sheets)))
    return SheetsLayout("".join(parts), tuple(sections), tuple(anchors), tuple(tables),
                        tuple(notes))


def _row_range(sheet: str, line: TableLine, merged: MergedCells) -> str:
    """The range of a row's line: its first to last non-blank cell, widened to every merged
    area that begins in one of them."""
    last_row, last_column = line.number, line.last_column
    for column in range(line.first_column, line.last_column + 1):
        if (end := merged.get((line.number, column))) is not None:
            last_row, last_column = max(last_row, end[0]), max(last_column, end[1])
    return range_locator(sheet, line.first_column, line.number, last_column, last_row)


def sheet_fragment(anchors: Sequence[Anchor], start: int, end: int) -> str | None:
    """``#sheet=Budget&range=A12:F30``: the sheet and the smallest range holding every row of
    it the span overlaps (a span never crosses a sheet, which is a section; were it to, the
    first sheet is cited); None when it overlaps no row."""
    ranges = [RangeLocator.parse(anchor.locator) for anchor in overlapping(anchors, start, end)
              if anchor.locator.startswith(f"{RangeLocator.key}=")]
    if not ranges:
        return None
    sheet = [r for r in ranges if r.sheet == ranges[0].sheet]
    return RangeLocator(sheet[0].sheet, min(r.first_column for r in sheet), sheet[0].first_row,
                        max(r.last_column for r in sheet), sheet[-1].last_row).fragment
