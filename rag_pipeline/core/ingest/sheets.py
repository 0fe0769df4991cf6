"""A workbook's sheets as text: what XLSX and ODS share.

Each non-empty sheet is a section of :func:`~rag_pipeline.core.ingest.rows.table_lines`
(columns named by letter; tables side by side, one after the other: :func:`side_by_side`),
each row one line and one anchor ``sheet=<name>&range=A12:F12``
(the sheet name percent-encoded), cited by the smallest range holding the rows a span
overlaps (:func:`sheet_fragment`). A cached value is written as :func:`cell_value_text` says.
"""

from __future__ import annotations

import datetime as dt
import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rag_pipeline.core.ingest.anchor_spans import overlapping
from rag_pipeline.core.ingest.extracted import Anchor, Section, TableSpan
from rag_pipeline.core.ingest.locator import RangeLocator
from rag_pipeline.core.ingest.number_format import shown_date, shown_number
from rag_pipeline.core.ingest.rows import (
    TableLine,
    column_letters,
    number_like,
    place_lines,
    table_lines,
)

__all__ = ["MergedCells", "Sheet", "SheetsLayout", "cell_value_text", "lay_out_sheets", "merged_away",
           "range_locator", "sheet_fragment", "side_by_side"]


def cell_value_text(value: object, number_format: str = "General") -> str:
    """A cached cell value as text: a number as its number format shows it
    (:func:`~rag_pipeline.core.ingest.number_format.shown_number`: ``1,250.00`` under
    ``#,##0.00``, ``15%`` for 0.15 under ``0%``), else in its shortest form of 15 significant
    digits (``2.5``, ``3`` for ``3.0``, ``26.89`` for 26.890000000000004); booleans as
    ``TRUE``/``FALSE``, a date-time at midnight as its date (ISO 8601), ``""`` for an empty
    cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)) and (shown := shown_number(value, number_format)) is not None:
        return shown
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float) and math.isfinite(value):
        # The 15 significant digits a spreadsheet shows of a double: 26.89, not the
        # 26.890000000000004 the sum of its cells came to.
        return repr(float(f"{value:.15g}"))
    if isinstance(value, (dt.datetime, dt.date, dt.time)) and (
            shown := shown_date(value, number_format)) is not None:
        return shown
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
        notes: ``sheets``, ``rows`` (data rows) and, when there are any, ``empty_sheets`` and
            ``hidden_sheets`` (hidden sheets holding a row).
        names: Each section's sheet name (a hidden sheet's section title adds ``(hidden)``).
    """

    text: str
    sections: tuple[Section, ...]
    anchors: tuple[Anchor, ...]
    tables: tuple[TableSpan, ...]
    notes: tuple[tuple[str, str], ...]
    names: tuple[str, ...] = ()


MergedCells = Mapping[tuple[int, int], tuple[int, int]]
"""A sheet's merged cells: each merged area's first cell ``(row, column)`` to its last."""


@dataclass(frozen=True)
class Sheet:
    """A sheet as a workbook's reader found it.

    Attributes:
        name: Its name (what a citation's ``sheet=`` names).
        rows: ``(row number, cells)`` of its stored rows, in order; ``cells[0]`` is column A.
        merged: Its merged cells.
        hidden: Whether the workbook hides it.
    """

    name: str
    rows: Sequence[tuple[int, Sequence[str]]]
    merged: MergedCells = field(default_factory=dict)
    hidden: bool = False


def lay_out_sheets(sheets: Iterable[Sheet]) -> SheetsLayout:
    """Lays out the sheets: each non-empty one a section of
    :func:`~rag_pipeline.core.ingest.rows.table_lines`, columns named by letter, its merged
    cells read as :func:`merged_away` says; a hidden sheet's section is titled ``<name>
    (hidden)``, so a citation of it says so, and counted (note ``hidden_sheets``). A row's range
    runs from its first to its last non-blank cell, and over every merged area one of those
    cells begins (a title merged over ``A1:F1`` is cited ``A1:F1``)."""
    parts: list[str] = []
    sections: list[Section] = []
    anchors: list[Anchor] = []
    tables: list[TableSpan] = []
    names: list[str] = []
    offset = rows = empty_sheets = hidden = 0
    for sheet in sheets:
        name = sheet.name
        sheet_rows, extents = merged_away(sheet.rows, sheet.merged)
        blocks = [lines for lines in (table_lines(block, _column_label) for block in side_by_side(sheet_rows))
                  if lines]
        if not blocks:
            empty_sheets += 1
            continue
        if parts:
            parts.append("\n")
            offset += 1
        start = offset
        for number, lines in enumerate(blocks):
            if number:
                parts.append("\n")
                offset += 1
            placed = place_lines(lines, offset, lambda line, sheet=name, extents=extents: _row_range(
                sheet, line, extents))
            parts.append(placed.text)
            anchors.extend(placed.anchors)
            offset += len(placed.text)
            rows += placed.data_rows
            if placed.table is not None:
                tables.append(placed.table)
        hidden += sheet.hidden
        sections.append(Section(f"{name} (hidden)" if sheet.hidden else name, start, offset - 1))
        names.append(name)
    notes = [("sheets", str(len(sections))), ("rows", str(rows))]
    if empty_sheets:
        notes.append(("empty_sheets", str(empty_sheets)))
    if hidden:
        notes.append(("hidden_sheets", str(hidden)))
    return SheetsLayout("".join(parts), tuple(sections), tuple(anchors), tuple(tables),
                        tuple(notes), tuple(names))


def side_by_side(rows: Sequence[tuple[int, Sequence[str]]]) -> list[list[tuple[int, Sequence[str]]]]:
    """A sheet's rows as the tables standing side by side on it, left to right, each row's
    cells outside a table blanked (columns keep their letters).

    Two runs of columns with an empty column between them are two tables when each has a row
    filling two of its cells or more and the first such rows differ (a pivot table at
    ``G2:K6`` beside the data at ``A1:E51``): each has its own header. Runs whose first such
    rows are the same row are one table with an empty column in it (a spacer column, or two
    tables starting on the same row: not told apart); a run without one (a column of notes)
    belongs to the table on its left."""
    first_wide: dict[int, int] = {}  # a run's first column -> its first row filling two cells
    runs: list[list[int]] = []  # [first column, last column] of adjacent filled columns
    filled_by_row: list[tuple[int, list[int]]] = []
    for number, cells in rows:
        filled = [column for column, value in enumerate(cells, start=1) if value.strip()]
        if filled:
            filled_by_row.append((number, filled))
    columns = sorted({column for _, filled in filled_by_row for column in filled})
    for column in columns:
        if runs and column == runs[-1][1] + 1:
            runs[-1][1] = column
        else:
            runs.append([column, column])
    if len(runs) < 2:
        return [list(rows)]
    starts = [run[0] for run in runs]
    for number, filled in filled_by_row:
        per_run = Counter(starts[bisect_right(starts, column) - 1] for column in filled)
        for start, count in per_run.items():
            if count >= 2:
                first_wide.setdefault(start, number)
    tables = [runs[0][:] + [first_wide.get(runs[0][0])]]
    for first, last in runs[1:]:
        wide = first_wide.get(first)
        if wide is not None and tables[-1][2] is not None and wide != tables[-1][2]:
            tables.append([first, last, wide])
        else:
            tables[-1][1] = last
            tables[-1][2] = tables[-1][2] if tables[-1][2] is not None else wide
    if len(tables) == 1:
        return [list(rows)]
    # Each table gets its own rows alone, cut at its last column: the sheet's rows once per
    # table, full width, would take 15 s for a 10 KB sheet of 400 small tables.
    return [[(number, [value if first <= column else ""
                       for column, value in enumerate(cells[:last], start=1)])
             for number, cells in rows if any(value.strip() for value in cells[first - 1:last])]
            for first, last, _ in tables]


def _column_label(column: int) -> str:
    return f"column {column_letters(column)}"


def _row_range(sheet: str, line: TableLine, extents: Mapping[int, tuple[int, int]]) -> str:
    """The range of a row's line: its first to last non-blank cell, widened to its extent."""
    last_row, last_column = extents.get(line.number, (line.number, line.last_column))
    return range_locator(sheet, line.first_column, line.number, max(last_column, line.last_column),
                         last_row)


def merged_away(rows: Sequence[tuple[int, Sequence[str]]], merged: MergedCells,
                ) -> tuple[list[tuple[int, Sequence[str]]], dict[int, tuple[int, int]]]:
    """A sheet's rows as a reader sees its merged cells, and each row's extent (its last row and
    column, where a merged area it holds the first cell of reaches past its own cells).

    - A merged area one column wide over several rows (a region beside its cities, an approver
      beside three contracts) shows its value beside each of those rows: each row holding
      another value holds it too (a row blank but for it stays blank).
    - A merged heading of a header row of two labels or more (``Q1`` over ``B1:C1``) names
      every column it spans; when the next row holds labels under such headings only
      (``Plan``, ``Actual``: no cell that reads as a number, none outside the headings but what
      the header shows there), the two rows are one header (``Q1 Plan``, ``Q1 Actual``), cited
      over both rows.
    - Any other merged area keeps its value in its first cell, and its row is cited over it.
    """
    if not merged:
        return list(rows), {}
    table = {number: list(cells) for number, cells in rows}
    extents: dict[int, tuple[int, int]] = {}

    def cell(row: int, column: int) -> str:
        cells = table.get(row, [])
        return cells[column - 1] if column <= len(cells) else ""

    def put(row: int, column: int, value: str) -> None:
        cells = table.setdefault(row, [])
        cells.extend([""] * (column - len(cells)))
        cells[column - 1] = value

    def extend(row: int, last_row: int, last_column: int) -> None:
        known = extents.get(row, (row, 0))
        extents[row] = (max(known[0], last_row), max(known[1], last_column))

    numbers = sorted(table)
    for (row, column), (last_row, last_column) in merged.items():
        value = cell(row, column)
        if not value.strip():
            continue
        if last_column == column:
            for covered in numbers[bisect_right(numbers, row):bisect_right(numbers, last_row)]:
                put(covered, column, value)
        else:
            extend(row, last_row, last_column)
    lines = table_lines(sorted(table.items()), _column_label)
    header = next((line.number for line in lines if line.header), None)

    def headings_of(number: int | None) -> list[tuple[int, int]]:
        return sorted((column, last_column) for (row, column), (_, last_column) in merged.items()
                      if row == number and last_column > column and cell(row, column).strip())

    def labels_under(number: int, headings: list[tuple[int, int]]) -> tuple[int, dict[int, str]] | None:
        """The row under ``number`` and its labels, when it holds labels under the merged
        ``headings`` only (each heading naming every column it spans)."""
        below = next((line.number for line in lines if line.number > number), None)
        if below is None:
            return None
        shown = {c: cell(number, column) for column, last in headings for c in range(column, last + 1)}
        width = max(len(table[number]), len(table[below]))
        under = {column: cell(below, column) for column in range(1, width + 1)
                 if cell(below, column).strip()
                 and cell(below, column) != shown.get(column, cell(number, column))}
        if (len(under) >= 2 and set(under) <= set(shown)
                and not any(number_like(value) for value in under.values())):
            return below, under
        return None

    headings = headings_of(header)
    above = next((line.number for line in reversed(lines) if line.preamble), None)
    if not headings and above is not None and headings_of(above) and labels_under(
            above, headings_of(above)) is not None:
        # The row of labels was taken for the header; the merged headings over it make the
        # header's first row.
        header, headings = above, headings_of(above)
    if header is None or not headings or len({c for c in table[header] if c.strip()}) < 2:
        return sorted(table.items()), extents  # no header, or a title merged over a row alone
    pair = labels_under(header, headings)
    for column, last_column in headings:
        for covered in range(column + 1, last_column + 1):
            put(header, covered, cell(header, column))
    if pair is not None:
        below, under = pair
        width = max(len(table[header]), len(table[below]))
        for column in range(1, width + 1):
            top, sub = cell(header, column), under.get(column, "")
            put(header, column, f"{top} {sub}" if top and sub else top or sub)
        del table[below]
        extend(header, below, width)
    return sorted(table.items()), extents


def sheet_fragment(anchors: Sequence[Anchor], start: int, end: int) -> str | None:
    """``#sheet=Budget&range=A12:F30``: the sheet and the smallest range holding every row of
    it the span overlaps (a span never crosses a sheet, which is a section; were it to, the
    first sheet is cited); None when it overlaps no row."""
    ranges = [RangeLocator.parse(anchor.locator) for anchor in overlapping(anchors, start, end)
              if anchor.locator.startswith(f"{RangeLocator.key}=")]
    if not ranges:
        return None
    sheet = [r for r in ranges if r.sheet == ranges[0].sheet]
    return RangeLocator(sheet[0].sheet, min(r.first_column for r in sheet),
                        min(r.first_row for r in sheet), max(r.last_column for r in sheet),
                        max(r.last_row for r in sheet)).fragment
