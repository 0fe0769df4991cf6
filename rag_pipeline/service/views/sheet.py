"""A workbook citation as a grid of its sheet: the cells as the file holds them, the cited ones marked.

Any sheet-with-cells format is one entry of :data:`SHEET_READERS`: a function from the file's
bytes and a sheet name to a :class:`Grid` (and the sheets' names), so an ODS reader is one more
entry. The cited range comes from the format's own fragment (``#sheet=Budget&range=A12:F30``);
the label is the reader's ``Budget 2026!A12:F30``. A grid shows at most :data:`MAX_ROWS` rows
and :data:`MAX_COLUMNS` columns, starting a little above the cited range.

Reading a workbook costs its whole shared-string table and every row above the grid (seconds
for a sheet of 100,000 rows), so the grids last shown are kept (:data:`GRIDS_KEPT`, by the
file's sha256, sheet and first row), and one workbook is read at a time: views of a large
workbook asked for at once wait for each other, and leave the service's other cores to the
questions.
"""

from __future__ import annotations

import html
import io
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from rag_pipeline.core.ingest.formats import format_named
from rag_pipeline.core.ingest.rows import column_letters, column_number
from rag_pipeline.core.runtime.recent import Recent
from rag_pipeline.service.views.base import View, ViewError, ViewRequest, path_url
from rag_pipeline.service.views.text import text_view

MAX_ROWS = 200
MAX_COLUMNS = 40
"""Columns a grid shows, or up to the cited range's last column when it lies further right
(at most :data:`MAX_CITED_COLUMNS`)."""
MAX_CITED_COLUMNS = 1000
ROWS_ABOVE = 5
"""Rows shown above the cited range (its header usually)."""
GRIDS_KEPT = 16
_GRIDS: Recent[tuple[str, str, str | None, int, int, int], tuple[list[str], Grid | None, Grid | None]] = (
    Recent(GRIDS_KEPT))
"""(format, sha256, sheet asked for, first row, columns, header row) -> the workbook's sheet
names, the grid (None when no such sheet) and the header row's grid (None when it is in the
grid or there is none)."""
_READING = threading.Lock()
"""Held while a workbook is read: one at a time."""

_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?%?")
_FRAGMENT = re.compile(r"#sheet=(?P<sheet>[^&]*)&range=(?P<c1>[A-Z]+)(?P<r1>\d+):(?P<c2>[A-Z]+)(?P<r2>\d+)")


@dataclass(frozen=True)
class CellRange:
    first_column: int
    first_row: int
    last_column: int
    last_row: int

    def holds(self, column: int, row: int) -> bool:
        return self.first_column <= column <= self.last_column and self.first_row <= row <= self.last_row

    def __str__(self) -> str:
        return (f"{column_letters(self.first_column)}{self.first_row}:"
                f"{column_letters(self.last_column)}{self.last_row}")


@dataclass(frozen=True)
class Grid:
    """The cells of one sheet from ``first_row`` on: ``rows[i][j]`` is the text of row
    ``first_row + i``, column ``j + 1``; ``more`` when the sheet has rows past them."""

    sheet: str
    first_row: int
    rows: tuple[tuple[str, ...], ...]
    more: bool


def xlsx_sheets(data: bytes) -> list[str]:
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        return list(workbook.sheetnames)
    finally:
        workbook.close()


def xlsx_grid(data: bytes, sheet: str, first_row: int, rows: int, columns: int) -> Grid:
    """Cached values of ``rows`` rows of ``sheet`` from ``first_row``, ``columns`` columns wide."""
    from openpyxl import load_workbook

    from rag_pipeline.core.ingest.sheets import cell_value_text

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        worksheet = workbook[sheet]
        worksheet.reset_dimensions()
        found: dict[int, list[str]] = {}
        more = False
        for row in worksheet.iter_rows():
            stored = [cell for cell in row if getattr(cell, "row", None) is not None]
            if not stored:
                continue
            number = stored[0].row
            if number >= first_row + rows:  # a long sheet is read no further than shown
                more = True
                break
            if first_row <= number:
                cells = [""] * columns
                for cell in stored:
                    if cell.column <= columns:
                        cells[cell.column - 1] = cell_value_text(cell.value, cell.number_format)
                found[number] = cells
        height = max([n for n in found] or [first_row - 1]) - first_row + 1
        return Grid(sheet, first_row, tuple(tuple(found.get(first_row + i, [""] * columns))
                                            for i in range(height)), more)
    finally:
        workbook.close()


def ods_grid(data: bytes, sheet: str, first_row: int, rows: int, columns: int) -> Grid:
    """The text ``rows`` rows of an ODS ``sheet`` show from ``first_row``, ``columns`` wide."""
    from rag_pipeline.core.ingest.formats.odf import ods_sheets

    found = dict(ods_sheets(data))[sheet]
    shown = {number: cells for number, cells in found if first_row <= number < first_row + rows}
    height = max([*shown, first_row - 1]) - first_row + 1
    return Grid(sheet, first_row, tuple(
        tuple((list(shown.get(first_row + i, ())) + [""] * columns)[:columns]) for i in range(height)),
        any(number >= first_row + rows for number, _ in found))


def _ods_names(data: bytes) -> list[str]:
    from rag_pipeline.core.ingest.formats.odf import ods_sheets

    return [name for name, _ in ods_sheets(data)]


@dataclass(frozen=True)
class SheetReader:
    sheets: Callable[[bytes], list[str]]
    grid: Callable[[bytes, str, int, int, int], Grid]


SHEET_READERS: dict[str, SheetReader] = {"xlsx": SheetReader(xlsx_sheets, xlsx_grid),
                                         "ods": SheetReader(_ods_names, ods_grid)}
"""Format name -> how its sheets are read (the formats' own readers)."""


def cited_range(request: ViewRequest) -> tuple[str, CellRange] | None:
    """The sheet and cell range the quoted span cites (the format's fragment), if any."""
    fragment = format_named(request.info.format).fragment(request.info.anchors, request.start, request.end)
    match = _FRAGMENT.fullmatch(fragment)
    if match is None:
        return None
    return unquote(match["sheet"]), CellRange(column_number(match["c1"]), int(match["r1"]),
                                              column_number(match["c2"]), int(match["r2"]))


def _header_row(request: ViewRequest) -> int | None:
    """The row number of the header of the table the quote starts in (its first line's range),
    or None."""
    from rag_pipeline.core.ingest.locator import RangeLocator

    table = next((t for t in request.info.tables if t.start <= request.start < t.end), None)
    anchor = next((a for a in request.info.anchors if table is not None and a.start == table.start
                   and a.locator.startswith(f"{RangeLocator.key}=")), None)
    return RangeLocator.parse(anchor.locator).first_row if anchor is not None else None


def sheet_view(request: ViewRequest) -> View:
    """The cited sheet (or ``sheet``) as a grid, the cited cells marked."""
    reader = SHEET_READERS[request.info.format]
    original = request.original
    if original is None:
        return text_view(request)
    cited = cited_range(request)
    asked = request.sheet if request.sheet is not None else (cited[0] if cited else None)
    on_cited = cited is not None and cited[0] == asked
    first_row = max(1, cited[1].first_row - ROWS_ABOVE) if on_cited else 1
    columns = min(max(MAX_COLUMNS, cited[1].last_column), MAX_CITED_COLUMNS) if on_cited else MAX_COLUMNS
    header_row = _header_row(request) if on_cited else None
    header_row = header_row if header_row is not None and header_row < first_row else 0
    key = (request.info.format, original.sha256, asked, first_row, columns, header_row)
    kept = _GRIDS.get(key)
    if kept is None:
        with _READING:
            kept = _GRIDS.get(key)  # read by the request this one waited for
            if kept is None:
                names = reader.sheets(original.data)
                sheet = asked if asked is not None else names[0]
                found = sheet in names
                kept = (names, reader.grid(original.data, sheet, first_row, MAX_ROWS, columns)
                        if found else None,
                        reader.grid(original.data, sheet, header_row, 1, columns)
                        if found and header_row else None)
                _GRIDS.put(key, kept)
    names, grid, header = kept
    if grid is None:
        raise ViewError(404, f"no sheet {asked!r} in {request.info.title or original.name}; its sheets: "
                             + ", ".join(repr(n) for n in names))
    sheet = grid.sheet
    marked = cited[1] if cited and cited[0] == sheet else None
    width = max([len(r) - next((i for i, v in enumerate(reversed(r)) if v), len(r)) for r in grid.rows]
                + [marked.last_column if marked else 1])
    head = "".join(f"<th scope=\"col\">{column_letters(c)}</th>" for c in range(1, width + 1))
    body = []
    if header is not None and header.rows:
        # The table's header row, far above the cited rows: what their columns are.
        cells = header.rows[0]
        body.append(f'<tr class="header-row"><th scope="row">{header.first_row}</th>' + "".join(
            f"<td>{html.escape(cells[c - 1] if c <= len(cells) else '')}</td>"
            for c in range(1, width + 1)) + "</tr>")
        if header.first_row + 1 < grid.first_row:
            body.append(f'<tr class="gap"><th scope="row">&#8942;</th><td colspan="{width}">'
                        f"rows {header.first_row + 1} to {grid.first_row - 1}</td></tr>")
    first_mark = True
    for offset, cells in enumerate(grid.rows):
        number = grid.first_row + offset
        tds = []
        for column in range(1, width + 1):
            value = cells[column - 1] if column <= len(cells) else ""
            classes = ["num"] if _NUMBER.fullmatch(value) else []
            attributes = ""
            if marked and marked.holds(column, number):
                classes.append("cited")
                attributes = ' id="quote"' if first_mark else ""
                first_mark = False
            if classes:
                attributes = f' class="{" ".join(classes)}"' + attributes
            tds.append(f"<td{attributes}>{html.escape(value)}</td>")
        body.append(f'<tr><th scope="row">{number}</th>{"".join(tds)}</tr>')
    # A tab keeps the citation: its own sheet's tab shows the cited cells marked again.
    base = (path_url("/documents/", request.info.document_id)
            + f"?from={request.start}&to={request.end}")
    tabs = " ".join(
        f'<span class="tab current">{html.escape(n)}</span>' if n == sheet else
        f'<a class="tab" href="{html.escape(base)}&amp;sheet={quote(n, safe="")}">{html.escape(n)}</a>'
        for n in names)
    last_row = grid.first_row + len(grid.rows) - 1
    table = (f'<div class="tabs">{tabs}</div><div class="grid-wrap"><table class="grid">'
             f'<thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
             + (f'<p class="meta">Rows {grid.first_row} to {last_row} shown; the sheet has '
                f"{'more' if grid.more else 'no more'} below.</p>"
                if grid.more or grid.first_row > 1 else ""))
    label = f"{sheet}!{marked}" if marked else sheet
    return View(label, table, "sheet")
