"""A workbook citation as a grid of its sheet: the cells as the file holds them, the cited ones marked.

Any sheet-with-cells format is one entry of :data:`SHEET_READERS`: a function from the file's
bytes, a sheet name and a :class:`Window` to what the view shows (:class:`Shown`: the sheets'
names, the window's :class:`Grid` and the header row's), the file read once. The cited range
comes from the format's own fragment (``#sheet=Budget&range=A12:F30``); the label is the
reader's ``Budget 2026!A12:F30``. A grid shows at most :data:`MAX_ROWS` rows
and :data:`MAX_COLUMNS` columns, starting a little above the cited range.

Reading a workbook costs its whole shared-string table and every row above the grid (seconds
for a sheet of 100,000 rows), so the windows last shown are kept (:data:`GRIDS_KEPT`, by the
file's sha256, sheet and window), and one workbook is read at a time: views of a large
workbook asked for at once wait for each other, and leave the service's other cores to the
questions.
"""

from __future__ import annotations

import html
import io
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, unquote

from rag_pipeline.core.ingest.formats import format_named
from rag_pipeline.core.ingest.rows import column_letters, column_number
from rag_pipeline.core.ingest.sheets import MergedCells
from rag_pipeline.core.runtime.recent import Recent
from rag_pipeline.service.views.base import View, ViewError, ViewRequest, shown_name
from rag_pipeline.service.views.text import without_original_view

MAX_ROWS = 200
MAX_COLUMNS = 40
"""Columns a grid shows, or up to the cited range's last column when it lies further right
(at most :data:`MAX_CITED_COLUMNS`)."""
MAX_CITED_COLUMNS = 1000
ROWS_ABOVE = 5
"""Rows shown above the cited range (its header usually)."""
GRIDS_KEPT = 16
_SHOWN: Recent[tuple[str, str, str | None, Window], Shown] = Recent(GRIDS_KEPT)
"""(format, sha256, sheet asked for, window) -> what the view shows of the workbook."""
_READING = threading.Lock()
"""Held while a workbook is read: one at a time."""

_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?%?")
LONG_CELL = 40
"""A cell of more characters wraps in the grid (a wider one would be cut), the others stay on
one line, as a spreadsheet shows them."""
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
    covered: frozenset[tuple[int, int]] = frozenset()
    """The (row, column) cells a merged area covers past its first: they show its value."""


@dataclass(frozen=True)
class Window:
    """What a view shows of a sheet: ``rows`` rows from ``first_row``, ``columns`` wide, and
    the table's header rows above them (``header_rows`` from ``header_row``; 0 when none is
    shown apart)."""

    first_row: int
    rows: int
    columns: int
    header_row: int = 0
    header_rows: int = 1


@dataclass(frozen=True)
class Shown:
    """A workbook's sheet names, the grid of the sheet asked for (None when there is no such
    sheet), its header row's grid (None when the window holds it or it is empty) and the names
    of the sheets the workbook hides."""

    names: tuple[str, ...]
    grid: Grid | None
    header: Grid | None
    hidden: frozenset[str] = frozenset()


def _shown(sheet: str, rows: Iterable[tuple[int, Callable[[], list[str]]]], window: Window,
           names: tuple[str, ...], hidden: frozenset[str], merged: MergedCells | None = None
           ) -> Shown:
    """The window of ``sheet`` from its rows in order (a row number and how to read its cells'
    text, called only for the rows shown and the first rows of ``merged`` areas reaching into
    them): the sheet is read no further than the window. A merged area's value shows in every
    cell of it (Excel draws one cell), the cells past its first listed as ``covered``."""
    found: dict[int, tuple[str, ...]] = {}
    header: dict[int, tuple[str, ...]] = {}
    header_end = window.header_row + window.header_rows if window.header_row else 0
    window_end = window.first_row + window.rows

    def shown_row(number: int) -> bool:
        return window.header_row <= number < header_end or window.first_row <= number < window_end

    def reaches_shown_rows(first: int, last: int) -> bool:
        return (first < window_end and last >= window.first_row) or (
            first < header_end and last >= window.header_row)

    areas = [(first, last) for first, last in (merged or {}).items()
             if first[1] <= window.columns and reaches_shown_rows(first[0], last[0])]
    starts = {first[0] for first, _ in areas}
    read: dict[int, tuple[str, ...]] = {}
    more = False
    for number, cells in rows:
        if number >= window_end:
            more = True
            break
        if shown_row(number) or number in starts:
            read[number] = tuple((list(cells()) + [""] * window.columns)[:window.columns])
    covered: set[tuple[int, int]] = set()
    for (row, column), (last_row, last_column) in areas:
        value = read.get(row, ())[column - 1] if row in read else ""
        for number in [n for n in read if row <= n <= last_row and shown_row(n)]:
            cells = list(read[number])
            for at in range(column, min(last_column, window.columns) + 1):
                if (number, at) != (row, column) and not cells[at - 1]:
                    cells[at - 1] = value
                    covered.add((number, at))
            read[number] = tuple(cells)
    for number, fitted in read.items():
        if window.header_row <= number < header_end:
            header[number] = fitted
        elif window.first_row <= number < window_end:
            found[number] = fitted
    height = max([*found, window.first_row - 1]) - window.first_row + 1
    blank = ("",) * window.columns
    grid = Grid(sheet, window.first_row,
                tuple(found.get(window.first_row + i, blank) for i in range(height)), more,
                frozenset(covered))
    blank_header = not any(any(cells) for cells in header.values())
    header_grid = None if blank_header else Grid(sheet, window.header_row, tuple(
        header.get(number, blank) for number in range(window.header_row, header_end)), False,
        frozenset(covered))
    return Shown(names, grid, header_grid, hidden)


def read_xlsx(data: bytes, sheet: str | None, window: Window) -> Shown:
    """The cached values an XLSX ``sheet`` (None: the first) shows in ``window``, the workbook
    opened once."""
    from openpyxl import load_workbook

    from rag_pipeline.core.ingest.formats.xlsx import merged_cells
    from rag_pipeline.core.ingest.sheets import cell_value_text

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        names = tuple(workbook.sheetnames)
        hidden = frozenset(ws.title for ws in workbook.worksheets if ws.sheet_state != "visible")
        sheet = names[0] if sheet is None else sheet
        if sheet not in names:
            return Shown(names, None, None, hidden)
        worksheet = workbook[sheet]
        worksheet.reset_dimensions()

        def rows() -> Iterator[tuple[int, Callable[[], list[str]]]]:
            for row in worksheet.iter_rows():
                stored = [cell for cell in row if getattr(cell, "row", None) is not None]
                if stored:
                    yield stored[0].row, lambda stored=stored: texts(stored)

        def texts(stored: list) -> list[str]:
            cells = [""] * window.columns
            for cell in stored:
                if cell.column <= window.columns:
                    cells[cell.column - 1] = cell_value_text(cell.value, cell.number_format)
            return cells

        return _shown(sheet, rows(), window, names, hidden, merged_cells(data).get(sheet))
    finally:
        workbook.close()


def read_ods(data: bytes, sheet: str | None, window: Window) -> Shown:
    """The text an ODS ``sheet`` (None: the first) shows in ``window``, the package parsed once."""
    from rag_pipeline.core.ingest.formats.odf import ods_sheets

    read = ods_sheets(data)
    sheets = {name: (rows, merged) for name, rows, _, merged in read}
    names = tuple(sheets)
    hidden = frozenset(name for name, _, is_hidden, _ in read if is_hidden)
    sheet = (names[0] if names else "") if sheet is None else sheet
    if sheet not in sheets:
        return Shown(names, None, None, hidden)
    rows, merged = sheets[sheet]
    return _shown(sheet, ((number, lambda cells=cells: list(cells)) for number, cells in rows),
                  window, names, hidden, merged)


SHEET_READERS: dict[str, Callable[[bytes, str | None, Window], Shown]] = {"xlsx": read_xlsx,
                                                                          "ods": read_ods}
"""Format name -> how a window of its sheets is read (the formats' own readers)."""


def cited_range(request: ViewRequest) -> tuple[str, CellRange] | None:
    """The sheet and cell range the quoted span cites (the format's fragment), if any."""
    if not request.quoted:
        return None
    fragment = format_named(request.info.format).fragment(request.info.anchors, request.start, request.end)
    match = _FRAGMENT.fullmatch(fragment)
    if match is None:
        return None
    return unquote(match["sheet"]), CellRange(column_number(match["c1"]), int(match["r1"]),
                                              column_number(match["c2"]), int(match["r2"]))


def _header_rows(request: ViewRequest) -> tuple[int, int] | None:
    """The first and last row numbers of the header of the table the quote starts in (its
    first line's range: two rows when merged headings sit over labels), or None."""
    from rag_pipeline.core.ingest.locator import RangeLocator

    table = next((t for t in request.info.tables if t.start <= request.start < t.end), None)
    anchor = next((a for a in request.info.anchors if table is not None and a.start == table.start
                   and a.locator.startswith(f"{RangeLocator.key}=")), None)
    if anchor is None:
        return None
    cells = RangeLocator.parse(anchor.locator)
    return cells.first_row, cells.last_row


def _tab(name: str, href: str | None, hidden: bool) -> str:
    """A sheet's tab: a link to ``href``, or the current sheet's (``href`` None); a sheet the
    workbook hides says so, as its section's title does."""
    classes = "tab" + (" current" if href is None else "") + (" hidden" if hidden else "")
    text = shown_name(name) + (" (hidden)" if hidden else "")
    if href is None:
        return f'<span class="{classes}" aria-current="page">{text}</span>'
    return f'<a class="{classes}" href="{html.escape(href)}">{text}</a>'


def sheet_view(request: ViewRequest) -> View:
    """The cited sheet (or ``sheet``) as a grid, the cited cells marked."""
    reader = SHEET_READERS[request.info.format]
    original = request.original
    if original is None:
        return without_original_view(request)
    cited = cited_range(request)
    asked = request.sheet if request.sheet is not None else (cited[0] if cited else None)
    on_cited = cited is not None and cited[0] == asked
    first_row = max(1, cited[1].first_row - ROWS_ABOVE) if on_cited else 1
    columns = min(max(MAX_COLUMNS, cited[1].last_column), MAX_CITED_COLUMNS) if on_cited else MAX_COLUMNS
    header = _header_rows(request) if on_cited else None
    header_row, header_last = header if header is not None and header[0] < first_row else (0, 0)
    window = Window(first_row, MAX_ROWS, columns, header_row,
                    min(header_last, first_row - 1) - header_row + 1 if header_row else 1)
    key = (request.info.format, original.sha256, asked, window)
    shown = _SHOWN.get(key)
    if shown is None:
        with _READING:
            shown = _SHOWN.get(key)  # read by the request this one waited for
            if shown is None:
                shown = reader(original.data, asked, window)
                _SHOWN.put(key, shown)
    grid, header = shown.grid, shown.header
    names = shown.names
    if grid is None:
        if not names:
            raise ViewError(404, f"{request.info.title or original.name} holds no sheet")
        raise ViewError(404, f"no sheet {asked!r} in {request.info.title or original.name}; its sheets: "
                             + ", ".join(repr(n) for n in names))
    sheet = grid.sheet
    marked = cited[1] if cited and cited[0] == sheet else None
    width = min(max([len(r) - next((i for i, v in enumerate(reversed(r)) if v), len(r)) for r in grid.rows]
                    + [marked.last_column if marked else 1]), columns)
    head = "".join(f"<th scope=\"col\">{column_letters(c)}</th>" for c in range(1, width + 1))
    body = []
    if header is not None and header.rows:
        # The table's header rows, far above the cited rows: what their columns are.
        for offset, cells in enumerate(header.rows):
            number = header.first_row + offset
            body.append(f'<tr class="header-row"><th scope="row">{number}</th>' + "".join(
                ('<td class="merged">' if (number, c) in header.covered else "<td>")
                + f"{html.escape(cells[c - 1] if c <= len(cells) else '')}</td>"
                for c in range(1, width + 1)) + "</tr>")
        after = header.first_row + len(header.rows)
        if after < grid.first_row:
            body.append(f'<tr class="gap"><th scope="row">&#8942;</th><td colspan="{width}">'
                        f"rows {after} to {grid.first_row - 1}</td></tr>")
    first_mark = True
    for offset, cells in enumerate(grid.rows):
        number = grid.first_row + offset
        tds = []
        for column in range(1, width + 1):
            value = cells[column - 1] if column <= len(cells) else ""
            classes = ["num"] if _NUMBER.fullmatch(value) else ["long"] if len(value) > LONG_CELL else []
            if (number, column) in grid.covered:
                classes.append("merged")
            attributes, shown_value = "", html.escape(value)
            if marked and marked.holds(column, number):
                # Marked by more than its colour: a screen reader says "highlight".
                classes.append("cited")
                attributes = ' id="quote"' if first_mark else ""
                first_mark = False
                shown_value = f"<mark>{shown_value}</mark>" if value else shown_value
            if classes:
                attributes = f' class="{" ".join(classes)}"' + attributes
            tds.append(f"<td{attributes}>{shown_value}</td>")
        body.append(f'<tr><th scope="row">{number}</th>{"".join(tds)}</tr>')
    # A tab keeps the citation: its own sheet's tab shows the cited cells marked again.
    base = request.quote_link
    tabs = " ".join(_tab(n, None if n == sheet else f"{base}&sheet={quote(n, safe='')}",
                         n in shown.hidden) for n in names)
    last_row = grid.first_row + len(grid.rows) - 1
    table = (f'<div class="tabs">{tabs}</div><div class="grid-wrap"><table class="grid">'
             f'<thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
             + (f'<p class="meta">Rows {grid.first_row} to {last_row} shown; the sheet has '
                f"{'more' if grid.more else 'no more'} below.</p>"
                if grid.more or grid.first_row > 1 else ""))
    label = f"{sheet}!{marked}" if marked else sheet
    return View(label, table, "sheet")
