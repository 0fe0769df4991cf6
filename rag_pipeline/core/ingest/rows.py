"""Rows of a table under their header row, as lines of text: what CSV and XLSX share.

A table's header is its first row filling at least half as many cells as the widest of its
first :data:`HEADER_SEARCH_ROWS` non-blank rows, so a title or a comment line above the table
("Budget 2026", "# Data source: ...") is not taken for the header; and notes above it that
happen to fill many cells are passed over for a later row of labels filling every column the
rows usually fill, over a row of values (:func:`_header_index`). Preamble rows are lines of
their own, cells joined by ``" | "``. The header becomes one line the same way; every later
non-blank row becomes one line of ``Header: value`` pairs joined by ``" | "`` (blank cells left
out, so a sparse row stays short), which keeps each value next to the name of its column
wherever a chunk boundary falls, except a row holding one sentence-like cell
(:data:`NOTE_MIN_WORDS` words or more) in a table of three or more columns, such as a note
under the table ("All figures exclude VAT"), which is its text alone: it is no value of its
column. So are the rows under a table of three or more columns after its last row filling at
least half its header's cells (and as many as its rows most often fill) or holding a number, a
date or a truth value: rows of words filling fewer ("Some", "also like to write stuff", "at the
| bottom,"), two or more or one holding a sentence, are notes under the table, outside it.
Notes are no data rows. Blank rows are left out but keep their number, so a row's number is
always its place in the file. A table whose first full row and the row under it hold only
numbers (or dates) has no header row: its first row is data like the rest (``3 | 4 | 5`` over
``4 | 5 | 6`` names no columns), and every value is named by its column (``column 1: 3``),
never by another row's value; so has one whose first full row starts with two numbers over a
row of numbers (a count line: ``150 | 4 | setosa | versicolor | virginica``), a line of its own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rag_pipeline.core.ingest.extracted import Anchor, TableSpan

CELL_SEPARATOR = " | "
"""Between two cells of a row written as one line, in every format but HTML (tabs, as a
browser's copy of a table gives them)."""
HEADER_SEARCH_ROWS = 20
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[A-Za-z]")


def number_like(value: str) -> bool:
    """A cell that reads as a number or a date (``1,250``, ``($2.50)``, ``2026-04-01``), not a
    label: a digit and no letter (two scans, not one pattern, whose ways of choosing the digit
    grow with their number: a cell of 40,000 digits and a letter took 16 s)."""
    return _DIGIT.search(value) is not None and _LETTER.search(value) is None
NOTE_MIN_WORDS = 4
"""A row whose only filled cell holds this many words, in a table of three or more columns, is a
note, not a value of that cell's column."""


@dataclass(frozen=True)
class TableLine:
    """One non-blank row rendered as a line.

    Attributes:
        number: The row's 1-based number in its file or sheet (blank rows counted).
        first_column: 1-based column of its first non-blank cell.
        last_column: 1-based column of its last non-blank cell.
        text: The line, without its newline.
        header: Whether this is the table's header row.
        preamble: Whether this row comes before the header (a title, a comment).
        note: Whether this row is a note in or under the table, its text alone (no data row).
    """

    number: int
    first_column: int
    last_column: int
    text: str
    header: bool = False
    preamble: bool = False
    note: bool = False


def cell_text(value: str) -> str:
    """A cell's text with its white space (line breaks included) collapsed to single spaces."""
    return " ".join(value.split())


def table_lines(rows: Iterable[tuple[int, Sequence[str]]],
                column_label: Callable[[int], str]) -> list[TableLine]:
    """The non-blank rows of a table as lines: preamble, header, then the data rows.

    Args:
        rows: ``(row number, cells)`` in file order; ``cells[0]`` is column 1. Cell texts are
            collapsed by :func:`cell_text` here.
        column_label: The name used for a column whose header cell is blank or missing, by
            1-based column number (``"column C"`` for a sheet, ``"column 3"`` for a CSV file).

    Returns:
        One :class:`TableLine` per row holding any non-blank cell, in order.
    """
    table = []
    for number, raw in rows:
        cells = [cell_text(value) for value in raw]
        filled = [column for column, value in enumerate(cells, start=1) if value]
        if filled:
            table.append((number, cells, filled))
    if not table:
        return []
    header = _header_index(table[:HEADER_SEARCH_ROWS])
    headerless = all(_numbers_only(cells) for _, cells, _ in table[header:header + 2])
    if (not headerless and header + 1 < len(table) and _count_line(table[header][1], table[header][2])
            and _numbers_only(table[header + 1][1])):
        # A count line over numbers ("150 | 4 | setosa | versicolor | virginica": scikit-learn's
        # iris.csv) names no columns: it is a line of its own, and the table has no header.
        header, headerless = header + 1, True
    lines: list[TableLine] = []
    labels: list[str] = []
    notes_under = len(table) if headerless else _notes_under(table, header)
    for index, (number, cells, filled) in enumerate(table):
        first, last = filled[0], filled[-1]
        if index < header:
            lines.append(TableLine(number, first, last, CELL_SEPARATOR.join(cells[first - 1:last]),
                                   preamble=True))
        elif index == header and not headerless:
            labels = [value or column_label(column) for column, value in enumerate(cells, start=1)]
            lines.append(TableLine(number, first, last, CELL_SEPARATOR.join(labels[first - 1:last]),
                                   header=True))
        elif index >= notes_under:
            lines.append(TableLine(number, first, last, CELL_SEPARATOR.join(cells[first - 1:last]),
                                   note=True))
        elif len(filled) == 1 and len(labels) >= 3 and len(cells[first - 1].split()) >= NOTE_MIN_WORDS:
            lines.append(TableLine(number, first, last, cells[first - 1], note=True))
        else:
            names = [labels[column - 1] if column <= len(labels) else column_label(column)
                     for column in filled]
            pairs = [f"{name}: {cells[column - 1]}" for name, column in zip(names, filled, strict=True)]
            lines.append(TableLine(number, first, last, CELL_SEPARATOR.join(pairs)))
    return lines


def _notes_under(table: Sequence[tuple[int, list[str], list[int]]], header: int) -> int:
    """Where the notes under a table of three or more columns start (``len(table)`` for none):
    after its last row filling at least half its header's cells, as many as its rows most
    often fill, or a typed value, the rows of words filling fewer, when they are two or more or
    one holds a sentence (a last row naming only its first column, ``Zed``, stays a row; the
    rows of a table whose rows are sparse stay rows)."""
    width = len(table[header][2])
    if width < 3 or len(table) < header + 3:
        return len(table)
    fills = Counter(len(filled) for _, _, filled in table[header + 1:])
    usual = max(fills, key=lambda fill: (fills[fill], fill))
    start = len(table)
    while start - 1 > header + 1:
        _, cells, filled = table[start - 1]
        if (2 * len(filled) >= width or len(filled) >= usual
                or any(_typed(cells[column - 1]) for column in filled)):
            break
        start -= 1
    sentence = any(len(cells[column - 1].split()) >= NOTE_MIN_WORDS
                   for _, cells, filled in table[start:] for column in filled)
    return start if len(table) - start >= 2 or sentence else len(table)


def _header_index(window: Sequence[tuple[int, list[str], list[int]]]) -> int:
    """Which of the first rows is the header: the first filling at least half as many cells as
    the widest (one cell over the first column of a table two columns wide or more is its
    title, not its header); but when a later row fills every column the table's rows most often fill, is
    all labels, and the row under it holds a number, a date or a truth value, that later row
    (the rows above it are notes that happen to be wide: "at | the | top | | of | their
    spreadsheets" over "Name | Profession | Age | ...")."""
    widest = max(len(filled) for _, _, filled in window)
    shapes = Counter(frozenset(filled) for _, _, filled in window)
    usual = max(shapes, key=lambda shape: (shapes[shape], len(shape)))

    def titled(filled: list[int]) -> bool:
        """One cell over the first column of a wider table: its title, not its header."""
        return len(filled) == 1 < widest and filled[0] == min(usual)

    wide = [i for i, (_, _, filled) in enumerate(window) if 2 * len(filled) >= widest]
    first = next((i for i in wide if not titled(window[i][2])), wide[0])
    covering = next(i for i, (_, _, filled) in enumerate(window) if usual <= set(filled))
    if covering > first and covering + 1 < len(window):
        cells, below = window[covering][1], window[covering + 1][1]
        if not any(_typed(value) for value in cells) and any(_typed(value) for value in below):
            return covering
    return first


MISSING_VALUES = frozenset(("NaN", "nan", "NA", "N/A", "#N/A", "inf", "-inf", "Inf", "-Inf"))
"""How a table of numbers writes a value it lacks: a number all the same, never a label (the
first row of statsmodels' ``bds_results.csv``, ``1.0,1.0,NaN,...``, is data)."""


def _count_line(cells: Sequence[str], filled: Sequence[int]) -> bool:
    """A row whose first two filled cells are numbers (scikit-learn's ``150 | 4 | setosa |
    ...``: rows, columns, the classes): a count, not labels (``2024 | Jan | Feb`` is a header)."""
    return len(filled) >= 2 and all(_typed(cells[column - 1]) for column in filled[:2])


def _typed(value: str) -> bool:
    """A cell holding a number (or a missing one), a date or a truth value: a value, never a
    column's label."""
    return bool(value) and (number_like(value) or value in ("TRUE", "FALSE")
                            or value in MISSING_VALUES)


def _numbers_only(cells: Sequence[str]) -> bool:
    """Every filled cell of a row reads as a number (or a missing one) or a date."""
    return all(number_like(value) or value in MISSING_VALUES for value in cells if value)


@dataclass(frozen=True)
class PlacedLines:
    """Table lines placed in a document's text.

    Attributes:
        text: Each line followed by a line break.
        anchors: One per line, ``[start, end)`` in the document (line break left out), its
            locator the one the format gives the line.
        table: The table the lines make, from the header row to the last row (preamble lines
            and the notes under it left out), its rows declared so the chunker cuts it one row
            a chunk (a note in it is a row of its own); None without a data row.
        data_rows: How many of the lines are data rows (notes are none).
    """

    text: str
    anchors: tuple[Anchor, ...]
    table: TableSpan | None
    data_rows: int


def place_lines(lines: Sequence[TableLine], offset: int,
                locator: Callable[[TableLine], str]) -> PlacedLines:
    """``lines`` laid out from ``offset`` of a document's text, one line each."""
    anchors: list[Anchor] = []
    position = offset
    for line in lines:
        anchors.append(Anchor(position, position + len(line.text), locator(line)))
        position += len(line.text) + 1
    text = "".join(line.text + "\n" for line in lines)
    rows = [(line, anchor) for line, anchor in zip(lines, anchors, strict=True)
            if not (line.header or line.preamble)]
    while rows and rows[-1][0].note:  # notes under the table are outside it
        rows.pop()
    if not rows:
        return PlacedLines(text, tuple(anchors), None, 0)
    header = next(((line.text, anchor.start) for line, anchor in zip(lines, anchors, strict=True)
                   if line.header), ("", rows[0][1].start))
    table = TableSpan(header[1], rows[-1][1].end, header[0], header[1] + len(header[0]),
                      tuple(anchor.start for _, anchor in rows))
    return PlacedLines(text, tuple(anchors), table, sum(not line.note for line, _ in rows))


def column_letters(column: int) -> str:
    """A spreadsheet column's letters: 1 is ``A``, 26 is ``Z``, 27 is ``AA``."""
    letters = ""
    while column > 0:
        column, rest = divmod(column - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def column_number(letters: str) -> int:
    """The inverse of :func:`column_letters`: ``A`` is 1, ``AA`` is 27."""
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - ord("A") + 1
    return number
