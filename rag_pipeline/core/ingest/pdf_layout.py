"""A PDF's positioned text runs as canonical text: the words a reader reads, in reading order.

Pure: it takes the runs and outline that :mod:`rag_pipeline.core.ingest.pdf_pages` reads (or
OCR recognises) and decides, page by page:

- **Running heads, running feet and page numbers** are the first and last row of a page when
  it is a page number alone, when the same row repeats at the same height on other pages (word
  for word, unless it is a table's header over its rows; or with numbers that follow the
  pages, "Page 3 of 9"), or when it carries a number at one end, at a height where most pages
  carry such a row, that follows the pages ("Chapter 3: Basic Shell Features 15"). They are
  dropped and counted. A ledger's records, numbered at the start of each line, are kept.
- **Contents and index pages** (most runs end in dot leaders and a page number) are dropped
  and counted, and so is a block of three or more such entries on a page of other text (a
  title page's contents, a word processor's index after the last chapter) with its heading.
- **Two-column pages** are read column by column (a gutter that almost no run crosses, with
  full lines on both sides; or, where a paper's lines are split into many runs, that almost
  no line crosses, with full lines on both sides that are no table's rows); runs that cross it
  (a title over both columns) cut the page into bands read in turn.
- **Tables** (two or more consecutive rows of two or more aligned cells) become rows of
  cells joined by `` | ``, one row a line, declared as a table whose first row is its header
  (:func:`table_spans`; none when that row holds numbers as the others do, not rising, in their
  face); a table going on at the top of the next page with as many cells is
  the same table, its header repeated there or not. A bold header whose labels run together
  (a label filling its column) is cut into the cells of the row under it; cells of a table
  whose columns sit closer than a run's own break are cut where other rows' cells start or end
  (:func:`_cut_at_column_edges`), and a bold header whose labels sit apart from the values
  under them heads them all the same (:func:`_bold_header_over`).
- **Paragraphs** are consecutive lines without a vertical gap, a change of font size or a
  heading between them; a paragraph that does not end a sentence at the foot of a page goes
  on at the top of the next, and a footnote (small type at the foot of a page) comes after
  that paragraph instead of in the middle of its sentence.
- **Line-end hyphens**: ``non-`` + ``numeric`` stays ``non-numeric`` when the document
  itself writes ``non-numeric`` more often than ``nonnumeric``; where it writes neither, a
  part that is itself a compound (``active-region-`` + ``start-color``) keeps the hyphen,
  and otherwise the hyphen was the typesetter's and the word is joined (``fac-`` +
  ``tor`` is ``factor``). The rule is measured against the HTML twins in
  ``rag_pipeline.benchmarks.extraction``.
- **URLs broken at a line end** after a ``/`` or a ``.`` (``https://bugs.`` + ``octave.org``)
  are joined without a space: after a ``/`` always, after a ``.`` when the next line goes on
  in lower case or a digit (a sentence ending in a URL starts the next in capitals).
- **An ellipsis set as spaced dots** (``. . .``, TeX's ``\\dots`` outside typewriter type) is
  ``…``, the character the text means; dots in a typewriter face (``...``, Octave's
  continuation) and dot leaders (four or more) stay as they are.
- **Sections** come from the outline (the heading a bookmark points at is structure, the
  text after it the section's body), else from type size: a line larger than body text, or
  bold where body text is not, is a heading.

One module of some 600 lines, and not a package, because the rules above are one pass over one
page model: each reads the rows, the body's type size and the page heights the others work on
(a running head is found before the columns, a footnote is placed by the paragraph the column
order ends), so a rule cannot be read or tested apart from the page it rewrites. What stands
alone is already out: reading the PDF (``pdf_pages``), OCR (``pdf_ocr``), and choosing between
them (``pdf_extract``).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import statistics
import string
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from rag_pipeline.core.ingest.extracted import Anchor, Section, TableSpan
from rag_pipeline.core.ingest.locator import PageLocator
from rag_pipeline.core.ingest.pdf_pages import OutlineEntry, PageSource, PageText, TextRun
from rag_pipeline.core.ingest.rows import CELL_SEPARATOR

HEADING_SIZE_RATIO = 1.12
"""A line whose type is this much larger than the body's is a heading."""

FOOTNOTE_SIZE_RATIO = 0.9
"""A block at the foot of a page in type at most this fraction of the body's is a footnote."""

_NUMBER_TOKEN = re.compile(r"^(?:\d+|[ivxlcdm]+|[IVXLCDM]+)$")
_DIGITS = re.compile(r"\d+")
_ROMAN_LETTERS = "ivxlcdmIVXLCDM"
_SENTENCE_END = re.compile(r"[.!?:;][\"')\]’”]*$")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z'’-]*)-?$")
LONGEST_WORD = 64
"""The most characters of a line's end :data:`_WORD_BEFORE` reads for the word a hyphen breaks
(tried from each letter, to the end: a line of thousands of ``a-`` took seconds)."""
_WORD_AFTER = re.compile(r"^([A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*)")
_VOCABULARY_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
_FOOTNOTE_START = re.compile(r"^(?:\d{1,2}(?!\d)|[*†‡§¶])\s?\S")
_URL_END = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://\S*[/.]$")
_SPACED_ELLIPSIS = re.compile(r"(?<!\. )\. \. \.(?! \.)")


class BlockKind(StrEnum):
    BODY = "body"
    HEADING = "heading"
    CODE = "code"
    TABLE = "table"
    FOOTNOTE = "footnote"


@dataclass(frozen=True)
class Line:
    """One row of a page as read: its runs joined (cells by `` | `` in a table)."""

    page: int
    text: str
    x0: float
    top: float
    baseline: float
    size: float
    bold: bool
    mono: bool
    hyphen: bool
    cells: int
    depth: float = 0.0
    """How far below ``baseline`` its last line lies (a table row whose cells wrap over lines)."""
    numbered_code: bool = False
    """A listing's line: its line number and its code (:func:`_listing_rows`)."""


@dataclass(frozen=True)
class HyphenBreak:
    """A word broken at a line end, and what the layout made of it.

    Attributes:
        joined: The two parts without the hyphen (``factor``).
        hyphenated: The two parts with it (``non-numeric``).
        kept: The hyphen was kept.
    """

    joined: str
    hyphenated: str
    kept: bool


@dataclass(frozen=True)
class PageSpan:
    """Where a page's text is in the canonical text (a page may have several spans when a
    footnote is moved after a paragraph that runs on to the next page)."""

    page: int
    start: int
    end: int


@dataclass(frozen=True)
class Layout:
    """A PDF laid out as canonical text.

    Attributes:
        title: The document's title: the PDF's metadata, else the first line of the first
            page's largest type when it is no sentence, else the file's stem (:func:`_title`).
        canonical_text: Paragraphs separated by blank lines.
        sections: Titled regions of ``canonical_text``; headings are outside them.
        anchors: ``page=N`` (1-based) spans covering ``canonical_text`` in order.
        dropped_lines: Running heads, feet and page numbers removed.
        toc_pages: 1-based numbers of the contents and index pages dropped, and of the pages
            a contents or index block was dropped from (:func:`_without_contents_block`).
        footnotes: Footnote blocks moved out of the running text.
        hyphen_breaks: Every line-end hyphen decision, in reading order.
        sections_from: ``outline``, ``font`` or ``none``.
        tables: The tables, each row a line, a table continued over pages one table.
    """

    title: str
    canonical_text: str
    sections: tuple[Section, ...]
    anchors: tuple[Anchor, ...]
    dropped_lines: int
    toc_pages: tuple[int, ...]
    footnotes: int
    hyphen_breaks: tuple[HyphenBreak, ...]
    sections_from: str
    tables: tuple[TableSpan, ...] = ()


@dataclass
class _Block:
    kind: BlockKind
    lines: list[Line]
    pieces: list[tuple[int, str]]
    footnotes_after: list[_Block]
    later_x0: float = float("inf")
    """Where the leftmost of the lines after the first starts (kept by :meth:`add`)."""

    def add(self, line: Line) -> None:
        self.lines.append(line)
        self.later_x0 = min(self.later_x0, line.x0)


def _body_size(pages: Sequence[PageText], in_tables: Counter[float]) -> float:
    """The font size most characters outside tables are set in (``in_tables``: characters
    per rounded size in table rows); of all characters when every one is in a table. A
    document that is mostly a table in small type would otherwise take its paragraphs, set
    larger than the cells, for headings."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for run in page.runs:
            sizes[round(run.size)] += len(run.text)
    outside = +(sizes - in_tables)
    counted = outside or sizes
    return float(counted.most_common(1)[0][0]) if counted else 10.0


SUPERSCRIPT_SIZE_RATIO = 0.85
"""A footnote mark is set in type at most this fraction of its line's size, raised above its
baseline."""

_MARK = re.compile(r"^(?:\d{1,3}|[*†‡§¶]{1,3})(?:,(?:\d{1,3}|[*†‡§¶]{1,3}))*$")


def _rows(runs: Sequence[TextRun]) -> list[list[TextRun]]:
    """Runs grouped by baseline (within a third of their size), top to bottom, left to right;
    a raised footnote mark is part of the line it is raised above (:func:`_superscripts`)."""
    rows: list[list[TextRun]] = []
    for run in sorted(runs, key=lambda r: (r.baseline, r.x0)):
        if rows and run.baseline - rows[-1][0].baseline <= max(run.size, 3.0) * 0.35:
            rows[-1].append(run)
        else:
            rows.append([run])
    return _superscripts([sorted(row, key=lambda r: r.x0) for row in rows])


def _is_raised_mark(mark: TextRun, line: Sequence[TextRun]) -> bool:
    """``mark`` is a number or a dagger in smaller type than ``line`` whose baseline lies
    above the line's and below its top."""
    size = max(run.size for run in line)
    if not _MARK.match(mark.text) or mark.size > SUPERSCRIPT_SIZE_RATIO * size:
        return False
    baseline = line[0].baseline
    return baseline - size * 0.75 <= mark.baseline < baseline - 0.5


def _is_superscript(mark: TextRun, line: Sequence[TextRun]) -> bool:
    """``mark`` is a footnote mark raised above ``line``, touching a run of the line."""
    size = max(run.size for run in line)
    return _is_raised_mark(mark, line) and any(-1.0 <= mark.x0 - run.x1 <= 0.3 * size
                                               for run in line)


def _is_leading_mark(mark: TextRun, line: Sequence[TextRun]) -> bool:
    """``mark`` is the raised mark a footnote's text starts with (TeX sets ``¹the text`` at
    the foot of the page): raised above ``line`` and ending just before its first run."""
    size = max(run.size for run in line)
    return _is_raised_mark(mark, line) and -1.0 <= line[0].x0 - mark.x1 <= size


def _superscripts(rows: list[list[TextRun]]) -> list[list[TextRun]]:
    """Rows whose runs are all footnote marks raised above the next row, put into that row:
    each mark glued to the run it follows (``runs`` + ``1`` is ``runs1``, as the HTML of the
    same manual writes ``runs<sup>1</sup>``), and that run joined to the one after the mark
    when the mark alone kept them apart. A mark that became a row of its own split its
    sentence into two paragraphs. A mark raised before the start of the next row (a
    footnote's own mark at the foot of the page) starts that row, ``1 the text``, so the
    footnote is one paragraph starting with its mark."""
    out: list[list[TextRun]] = []
    index = 0
    while index < len(rows):
        row = rows[index]
        following = rows[index + 1] if index + 1 < len(rows) else None
        if following is not None and len(row) == 1 and _is_leading_mark(row[0], following):
            first = following[0]
            out.append([dataclasses.replace(first, text=f"{row[0].text} {first.text}",
                                            x0=row[0].x0, words=()), *following[1:]])
            index += 2
            continue
        if following is None or not all(_is_superscript(mark, following) for mark in row):
            out.append(row)
            index += 1
            continue
        line = list(following)
        for mark in row:
            left = max((i for i, run in enumerate(line) if run.x1 <= mark.x0 + 1.0),
                       key=lambda i: line[i].x1)
            run = line[left]
            glued = dataclasses.replace(run, text=run.text + mark.text, x1=max(run.x1, mark.x1),
                                        words=())  # its words' positions are no longer its own
            after = line[left + 1] if left + 1 < len(line) else None
            if after is not None and after.x0 - mark.x1 <= 1.5 * max(after.size, 1.0):
                gap = " " if after.x0 - mark.x1 > 0.15 * after.size else ""
                glued = dataclasses.replace(glued, text=glued.text + gap + after.text, x1=after.x1,
                                            hyphen=after.hyphen)
                del line[left + 1]
            line[left] = glued
        out.append(line)
        index += 2
    return out


def _row_text(row: Sequence[TextRun]) -> str:
    return " ".join(run.text for run in row)


def _normalised(text: str) -> str:
    tokens = ["#" if _NUMBER_TOKEN.match(token) else _DIGITS.sub("#", token) for token in text.split()]
    return " ".join(tokens).lower()


def _has_end_number(text: str) -> bool:
    tokens = text.split()
    return bool(tokens) and (_NUMBER_TOKEN.match(tokens[0]) is not None
                             or _NUMBER_TOKEN.match(tokens[-1]) is not None) and len(tokens) > 1


_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _number(token: str) -> int | None:
    """The number a word of a running head writes: its first digits, or its value as a roman
    numeral (``xiv``: a front matter's page); None for any other word."""
    if (found := _DIGITS.search(token)) is not None:
        return int(found[0])
    if _NUMBER_TOKEN.match(token) is None:
        return None
    values = [_ROMAN[letter] for letter in token.lower()]
    return sum(-v if v < after else v for v, after in zip(values, [*values[1:], 0], strict=True))


def _page_offsets(p: int, words: Sequence[str]) -> set[tuple[int, int]]:
    """(word position, number less the page position) of each number of ``words`` on page
    position ``p``: a page number's is the same on every page of a run of pages."""
    return {(at, number - p) for at, word in enumerate(words) if (number := _number(word)) is not None}


def _numbering(members: Sequence[tuple[int, Sequence[str]]], floor: int) -> set[int]:
    """The page positions of ``members`` (page position, words) that number their pages: those
    holding the most common (word position, offset) of :func:`_page_offsets`, when ``floor``
    or more share it. Record numbers at the top of each page (1001, 1033, 1065) number none."""
    offsets = [(p, _page_offsets(p, words)) for p, words in members]
    shared = Counter(offset for _, found in offsets for offset in found)
    if not shared or shared.most_common(1)[0][1] < floor:
        return set()
    offset = shared.most_common(1)[0][0]
    return {p for p, found in offsets if offset in found}


def _running_rows(page_rows: Sequence[list[list[TextRun]]]) -> set[tuple[int, int]]:
    """(page position, row index) of the running heads, feet and page numbers: a page number
    alone; a row repeating on other pages, word for word (but a table's header repeated over
    its rows: a row of cells aligned with the row beside it) or with numbers that number the
    pages (:func:`_numbering`); a head (a page's first row) of two parts or more whose first or
    last part so repeats (the section on the left and the chapter on the right:
    ``1.3. DOCUMENTATION`` ... ``CHAPTER 1. INTRODUCTION``; a foot so made may be a page's
    total); a row with a number at one end, at a height where most
    pages carry such a row, where that number numbers the pages (counted from either end: a
    left page's number comes first, a right page's last)."""
    repeat_floor = 2 if len(page_rows) < 6 else 3
    candidates: list[tuple[int, int, str, str, str, int, bool]] = []
    for p, rows in enumerate(page_rows):
        if not rows:
            continue
        # A page's only row is its head and its foot (a blank page's running head).
        ends = [(0, "top", 1), (len(rows) - 1, "bottom", len(rows) - 2)]
        for r, band, beside in ends:
            cells = len(rows[r]) > 1 and 0 <= beside < len(rows) and _aligned(rows[r], rows[beside])
            text = _row_text(rows[r])
            candidates.append((p, r, band, text, _normalised(text), round(rows[r][0].baseline / 4),
                               cells))
    repeated: dict[tuple[str, int, str], list[tuple[int, str, bool]]] = {}
    numbered: dict[tuple[str, int], list[tuple[int, list[str]]]] = {}
    parts: dict[tuple[str, int, str], set[int]] = {}  # a row's end part -> the pages holding it
    for p, r, band, text, norm, bucket, cells in candidates:
        repeated.setdefault((band, bucket, norm), []).append((p, text, cells))
        if band == "top" and len(page_rows[p][r]) > 1 and not cells:
            for part in (page_rows[p][r][0], page_rows[p][r][-1]):
                if len(part_norm := _normalised(part.text)) >= 6:
                    parts.setdefault((band, bucket, part_norm), set()).add(p)
        if _has_end_number(text):  # its number at either end, in one place
            words = text.split()
            numbered.setdefault((band, bucket), []).extend([(p, words[:1]), (p, words[-1:])])
    running: set[tuple[str, int, str, int]] = set()
    for (band, bucket, norm), members in repeated.items():
        if len(members) < repeat_floor:
            continue
        same = len({text for _, text, _ in members}) == 1
        pages = ({p for p, _, cells in members if not cells} if same
                 else _numbering([(p, text.split()) for p, text, _ in members], repeat_floor))
        running |= {(band, bucket, norm, p) for p in pages}
    numbered_floor = max(3, int(0.3 * len(page_rows)))
    by_end_number = {(band, bucket, p) for (band, bucket), members in numbered.items()
                     for p in _numbering(members, numbered_floor)}
    running_parts = {key for key, pages in parts.items() if len(pages) >= repeat_floor}
    return {(p, r) for p, r, band, _, norm, bucket, _ in candidates
            if norm == "#" or (band, bucket, norm, p) in running or (band, bucket, p) in by_end_number
            or (band == "top" and len(page_rows[p][r]) > 1 and any(
                (band, bucket, _normalised(part.text)) in running_parts
                for part in (page_rows[p][r][0], page_rows[p][r][-1])))}


def ends_in_dot_leader(text: str) -> bool:
    """``text`` ends in a table of contents' dot leader and page number (``Syntax . . . 12``,
    ``Preface.....iv``): three dots or more, each followed by at most one blank, then a number
    or a roman one. Read from the end, never searched from each dot (a line of thousands of
    ``. `` and no number took seconds)."""
    body = text.rstrip()
    number = body.rstrip(string.digits)
    if number == body:
        number = body.rstrip(_ROMAN_LETTERS)
    if number == body:
        return False
    leader = number.rstrip()
    dots, at = 0, len(leader)
    while at > 0:
        if leader[at - 1] == ".":
            dots, at = dots + 1, at - 1
        elif dots and at > 1 and leader[at - 1].isspace() and leader[at - 2] == ".":
            at -= 1
        else:
            break
    return dots >= 3


_CONTENTS_HEADINGS = frozenset({"contents", "table of contents", "contents of this manual"})


def _above_contents(rows: Sequence[list[TextRun]]) -> list[list[TextRun]]:
    """A contents page's rows above its first entry, but the contents' own heading: a first
    page's title over its contents."""
    first = next(r for r, row in enumerate(rows) if ends_in_dot_leader(_row_text(row)))
    return [row for row in rows[:first] if _row_text(row).strip().lower() not in _CONTENTS_HEADINGS]


CONTENTS_BLOCK_ROWS = 3
"""Consecutive rows ending in a dot leader and a page number that are a contents (or index)
block set on a page of other text (a title page with its contents, a word processor's index
after the last chapter)."""


def _without_contents_block(lines: Sequence[Line]) -> list[Line] | None:
    """``lines`` without their runs of :data:`CONTENTS_BLOCK_ROWS` or more entries that end in a
    dot leader and a page number, each with the contents' own heading just above it; None
    when there is no such run. Each entry repeats a heading (or an indexed word) the document
    sets elsewhere: read, the contents' entries would be found before the headings they name.
    Lines, not rows: the page is laid out with them (its columns found with its full lines)."""
    dropped: set[int] = set()
    at = 0
    for leader, run in itertools.groupby(lines, key=lambda line: ends_in_dot_leader(line.text)):
        count = sum(1 for _ in run)
        if leader and count >= CONTENTS_BLOCK_ROWS:
            dropped.update(range(at, at + count))
            if at > 0 and lines[at - 1].text.strip().lower() in _CONTENTS_HEADINGS:
                dropped.add(at - 1)
        at += count
    return [line for r, line in enumerate(lines) if r not in dropped] if dropped else None


def _is_toc_page(rows: Sequence[list[TextRun]]) -> bool:
    """Most of the page's lines end in a dot leader and a page number, read whole: the number
    may be a run of its own (sdccman's contents)."""
    lines = [text for row in rows if len(text := _row_text(row)) >= 3]
    leaders = sum(1 for text in lines if ends_in_dot_leader(text))
    return leaders >= 4 and leaders * 2 >= len(lines)


def _gutter(rows: Sequence[list[TextRun]], width: float) -> float | None:
    """The x of a two-column page's gutter, or ``None`` for a one-column page.

    The gutter is the middle of the widest band of the page's middle (30 % to 70 % of its
    width) that the fewest runs cross (at most 15 % of them); each side must hold a quarter of
    the runs, and each column's typical line must fill 60 % of the column's width (text, not
    the scattered cells of a table). Else, line by line (:func:`_gutter_by_lines`).
    """
    runs = [run for row in rows for run in row]
    if len(runs) < 6:
        return None
    xs = [float(x) for x in range(int(width * 0.3), int(width * 0.7), 2)]
    crossings = [sum(1 for run in runs if run.x0 < x - 1 and run.x1 > x + 1) for x in xs]
    if not crossings or min(crossings) > 0.15 * len(runs):
        return _gutter_by_lines(rows, xs)
    x = _widest_band(xs, crossings)
    left = [run for run in runs if run.x1 <= x + 1]
    right = [run for run in runs if run.x0 >= x - 1]
    if len(left) < 0.25 * len(runs) or len(right) < 0.25 * len(runs):
        return _gutter_by_lines(rows, xs)
    left_span = max(run.x1 for run in left) - min(run.x0 for run in left)
    right_span = max(run.x1 for run in right) - min(run.x0 for run in right)
    left_width = statistics.median(run.x1 - run.x0 for run in left)
    right_width = statistics.median(run.x1 - run.x0 for run in right)
    if left_width < 0.6 * left_span or right_width < 0.6 * right_span:
        return _gutter_by_lines(rows, xs)
    return x


LINE_FILL = 0.8
"""A column's lines fill this share of its width, three in four of them (:func:`_gutter_by_lines`)."""


def _gutter_by_lines(rows: Sequence[list[TextRun]], xs: Sequence[float]) -> float | None:
    """The gutter of a two-column page whose runs say too little (a paper's lines split around
    equations and citations, a full-width abstract crossing the middle in many runs), read by
    its lines: the band the fewest rows cross (at most 15 % of them), with a quarter of the
    rows on each side, three in four of each side's lines filling :data:`LINE_FILL` of its
    column, and at most half of them a table's rows (:func:`_table_rows`): a table whose rows
    fill both sides has its columns there."""
    if len(rows) < 6 or not xs:
        return None
    crossings = [sum(1 for row in rows if any(run.x0 < x - 1 and run.x1 > x + 1 for run in row))
                 for x in xs]
    if min(crossings) > 0.15 * len(rows):
        return None
    x = _widest_band(xs, crossings)
    for side in ((lambda run: run.x1 <= x + 1), (lambda run: run.x0 >= x - 1)):
        parts = [[run for run in row if side(run)] for row in rows]
        parts = [part for part in parts if part]
        if len(parts) < max(0.25 * len(rows), 4):
            return None
        lines = [max(run.x1 for run in part) - min(run.x0 for run in part) for part in parts]
        span = max(run.x1 for part in parts for run in part) - min(
            run.x0 for part in parts for run in part)
        if (statistics.quantiles(lines, n=4)[2] < LINE_FILL * span
                or sum(_table_rows(parts)) > 0.5 * len(parts)):
            return None
    return x


def _widest_band(xs: Sequence[float], crossings: Sequence[int]) -> float:
    """The middle of the widest run of ``xs`` with the fewest ``crossings``."""
    fewest = min(crossings)
    best: tuple[int, int] = (0, -1)
    start = None
    for i, count in enumerate([*crossings, fewest + 1]):
        if count == fewest and start is None:
            start = i
        elif count != fewest and start is not None:
            if i - start > best[1] - best[0] + 1:
                best = (start, i - 1)
            start = None
    return (xs[best[0]] + xs[best[1]]) / 2


def _reading_rows(rows: list[list[TextRun]], width: float) -> list[list[TextRun]]:
    """Rows in reading order: as they are on a one-column page; on a two-column page, each
    band between full-width rows read left column first, then right column."""
    gutter = _gutter(rows, width)
    if gutter is None:
        return rows
    out: list[list[TextRun]] = []
    left: list[list[TextRun]] = []
    right: list[list[TextRun]] = []

    def flush() -> None:
        out.extend(left)
        out.extend(right)
        left.clear()
        right.clear()

    for row in rows:
        if any(run.x0 < gutter - 1 and run.x1 > gutter + 1 for run in row):
            flush()
            out.append(row)
            continue
        left_part = [run for run in row if run.x1 <= gutter + 1]
        right_part = [run for run in row if run.x0 >= gutter - 1]
        if left_part:
            left.append(left_part)
        if right_part:
            right.append(right_part)
    flush()
    return out


def _aligned(a: Sequence[TextRun], b: Sequence[TextRun]) -> bool:
    """Two rows of cells line up: as many cells, each starting within 4 points of the other's,
    or ending within 4 points (right-aligned numbers)."""
    if len(a) != len(b):
        return False
    return sum(1 for x, y in zip(a, b, strict=True)
               if abs(x.x0 - y.x0) <= 4 or abs(x.x1 - y.x1) <= 4) >= len(a) - 1


CELL_GAP_EM = 0.5
"""Within one run, a gap of at least this share of the font size before a word can be a cell
boundary (a word space is about a quarter of it): a header label that fills its column runs
into the next one closer than a run's own break (1.5 of the font size)."""


def _cut_at(row: Sequence[TextRun], starts: Sequence[float], ends: Sequence[float] = (),
            gap_em: float = CELL_GAP_EM, points: float = 4.0) -> list[TextRun]:
    """``row`` with each run cut before every word after a gap of ``gap_em`` of the font size
    that starts within ``points`` of one of ``starts``, or whose previous word ends within
    ``points`` of one of ``ends`` (a run without word positions stays whole)."""
    cut: list[TextRun] = []
    for run in row:
        words = run.text.split()
        if len(run.words) != len(words):  # positions unknown (OCR) or no longer the text's
            cut.append(run)
            continue
        at = [i for i in range(1, len(words))
              if run.words[i][0] - run.words[i - 1][1] >= gap_em * run.size
              and (any(abs(run.words[i][0] - x) <= points for x in starts)
                   or any(abs(run.words[i - 1][1] - x) <= points for x in ends))]
        cut.extend(run if not at else dataclasses.replace(
            run, text=" ".join(words[first:end]), x0=run.words[first][0],
            x1=run.words[end - 1][1], words=run.words[first:end],
            hyphen=run.hyphen and end == len(words))
            for first, end in itertools.pairwise([0, *at, len(words)]))
    return cut


COLUMN_EDGE_ROWS = 3
"""A column's edge is where at least this many of a page's rows of cells start a cell (or end
one: right-aligned numbers)."""
COLUMN_EDGE_POINTS = 2.0
"""How near to each other cells' edges are to count as one column's (points)."""
COLUMN_GAP_EM = 1.0
"""A gap inside a run cut at a column's edge is at least this share of the font size: a
justified line's word spaces stretch past half of it (R's reference manual)."""


def _recurring(edges: Sequence[float]) -> list[float]:
    """The positions at least :data:`COLUMN_EDGE_ROWS` of ``edges`` share, within
    :data:`COLUMN_EDGE_POINTS` of the first of them."""
    found: list[float] = []
    ordered = sorted(edges)
    for i, edge in enumerate(ordered):
        if (i + COLUMN_EDGE_ROWS <= len(ordered)
                and ordered[i + COLUMN_EDGE_ROWS - 1] - edge <= COLUMN_EDGE_POINTS
                and not (found and edge - found[-1] <= COLUMN_EDGE_POINTS)):
            found.append(edge)
    return found


def _cut_at_column_edges(rows: Sequence[list[TextRun]]) -> list[list[TextRun]]:
    """The page's rows of cells (two runs or more, none in a typewriter face: code stays lines)
    with each run cut where cells of other rows start or end: before a word after a gap of
    :data:`COLUMN_GAP_EM` that starts at a column's left edge, or whose previous word ends at a
    column's right edge (:func:`_recurring` over the cells' edges: the words' own gaps say
    nothing, ``11 hours`` is half an em apart in a column of them); a row of one run is cut so
    only when it then lines up, cell for cell, with the row of cells under it (a header whose
    labels run together). A run breaks only where the gap to the next character is 1.5 times
    the font size, so of a table whose columns are a little closer the rows broke where their
    glyphs' widths happened to leave such a gap (``SI-1001 | Birch Motors`` but ``SI-1000 Alder
    Foods``; ``0.00 12.50`` over two columns), and no two rows lined up."""
    cells = [row for row in rows if len(row) >= 2 and not any(run.mono for run in row)]
    if len(cells) < COLUMN_EDGE_ROWS:
        return list(rows)
    starts: list[float] = []
    ends: list[float] = []
    for row in cells:
        for n, run in enumerate(row):
            if n:
                starts.append(run.x0)
            if n < len(row) - 1:
                ends.append(run.x1)
    starts, ends = _recurring(starts), _recurring(ends)

    def cut(row: Sequence[TextRun]) -> list[TextRun]:
        return [piece for run in row for piece in (
            [run] if run.mono else _cut_at([run], starts, ends, COLUMN_GAP_EM, COLUMN_EDGE_POINTS))]

    out = [cut(row) if len(row) >= 2 else list(row) for row in rows]
    for i in range(len(out) - 1):
        if len(out[i]) == 1 and len(out[i + 1]) >= 2:
            header = cut(out[i])
            if len(header) == len(out[i + 1]) and _aligned(header, out[i + 1]):
                out[i] = header
    return out


def _bold(row: Sequence[TextRun]) -> bool:
    """Most of the row's characters are in a bold face (a :class:`Line`'s ``bold``)."""
    return sum(len(run.text) for run in row if run.bold) * 2 > sum(len(run.text) for run in row)


def _split_cells_run_together(rows: Sequence[list[TextRun]], code_face: bool = True
                              ) -> list[list[TextRun]]:
    """Rows whose cells run together into one run, cut into the cells of the table rows they
    belong to (:func:`_cut_at`):

    - a row right over a table row, holding fewer runs than it, cut where that lines them up
      with it, when it is bold (the table row not), or its cells are short labels (at most
      :data:`LABEL_MAX_WORDS` words) within the width of the table's rows, one of them centred
      over its column: a header whose label fills its column (``Capacity (pallets) Manager``,
      gnuplot's ``Format Explanation``) is the table's header row, not a line over a table
      headed by its first row. A line of prose is wider, and a definition list's term, set
      flush with the terms under it, runs into its description the same way;
    - rows under a table row (at most :data:`MAX_RUN_TOGETHER_ROWS`), each holding fewer runs
      than it (or as many, lined up), cut where that lines each up with it, up to a table row
      lined up with it; or, with no such row under them (the table's last rows, at the foot of
      a page), when every cell lines up with its column and no row reaches the right margin
      (a line of prose does); each set as the table row is (:func:`_set_alike`): a wider cell
      of a centred column (gnuplot's ``%b or %h`` among ``%a``, ``%A``, ``%B``, R's ``14
      REALSXP``) runs into the next cell, and the table would end above it and start again,
      headed by the row under it."""
    table = _table_rows(rows, code_face)
    out = list(rows)
    right_margin = max((run.x1 for row in rows for run in row), default=0.0)
    i = 1
    while i < len(out):
        if not table[i - 1] or (table[i] and len(out[i]) >= len(out[i - 1])):
            i += 1
            continue
        above = out[i - 1]
        columns = [run.x0 for run in above]
        cuts: list[list[TextRun]] = []
        end = i
        while end < len(out) and (not table[end] or len(out[end]) < len(above)) \
                and len(cuts) < MAX_RUN_TOGETHER_ROWS:
            row = out[end]
            cut = row if len(row) == len(above) else _cut_at(row, columns) if len(row) < len(above) else []
            if len(cut) != len(above) or not _aligned(cut, above) or not _set_alike(row, above):
                break
            cuts.append(cut)
            end += 1
        closed = end < len(out) and table[end] and _aligned(out[end], above)
        if cuts and (closed or all(
                all(abs(cell.x0 - x) <= 4 or abs(cell.x1 - other.x1) <= 4
                    for cell, x, other in zip(cut, columns, above, strict=True))
                and cut[-1].x1 < right_margin - cut[-1].size for cut in cuts)):
            out[i:end] = cuts
        i = max(end, i + 1)
    table = _table_rows(out, code_face)
    for i, (row, below) in enumerate(itertools.pairwise(list(out))):
        if table[i] or not table[i + 1] or len(below) <= len(row) or _bold(below):
            continue
        cut = _cut_at(row, [run.x0 for run in below])
        if len(cut) == len(below) and _aligned(cut, below) and (_bold(row) or (
                _labels_within(cut, out[i + 1:i + 1 + TABLE_WIDTH_ROWS])
                and any(abs(cell.x0 - run.x0) > 4 for cell, run in zip(cut, below, strict=True)))):
            out[i] = cut
    return out


LABEL_MAX_WORDS = 3
MAX_RUN_TOGETHER_ROWS = 10
TABLE_WIDTH_ROWS = 5
"""How many table rows under a header row give the table's width."""


def _set_alike(row: Sequence[TextRun], table_row: Sequence[TextRun]) -> bool:
    """``row`` is set as ``table_row`` is: its type as large, bold only where that row is (a
    section heading under a table, ``10 The Environment Definitions``, is neither)."""
    return (abs(max(run.size for run in row) - max(run.size for run in table_row)) < 0.6
            and (not _bold(row) or _bold(table_row)))


def _labels_within(cells: Sequence[TextRun], table: Sequence[list[TextRun]]) -> bool:
    """Each of ``cells`` is a short label, and they end within the width of the ``table`` rows."""
    return (all(len(cell.text.split()) <= LABEL_MAX_WORDS for cell in cells)
            and cells[-1].x1 <= max(run.x1 for row in table for run in row) + 4)


def _table_rows(rows: Sequence[list[TextRun]], code_face: bool = True,
                continued: Sequence[TextRun] = ()) -> list[bool]:
    """Which rows are table rows: two or more cells lined up with the row before or after, but
    for lines of code: a listing whose columns line up is kept line by line, not read as a
    table. Lines of code are two rows starting in a typewriter face whose later cells start
    with an operator or a comment (:func:`_code_lines`), or a run of lined-up rows set in a
    typewriter face alone (``ls -l``'s output, a ``tree``) where the document's text is mostly
    in another (``code_face``; an RFC set wholly in Courier has its tables in it too): a table
    in typewriter type has a header or a row in another face (gnucash's ``Operating system |
    Folder``), a header right above its rows as many cells wide (fntguide's ``Alphabets Symbol
    fonts | Attributes``, centred over its columns, is its header), or it goes on from the page
    before: ``continued`` is that page's last row when it was a table's, and rows in typewriter
    type opening this page lined up with it are that table's (reportlab's synonyms table, its
    header on the page before only)."""
    table = [False] * len(rows)
    for i in range(len(rows) - 1):
        if (len(rows[i]) >= 2 and _aligned(rows[i], rows[i + 1])
                and not _code_lines(rows[i], rows[i + 1])):
            table[i] = table[i + 1] = True
    start = 0
    while start < len(rows):
        if not table[start]:
            start += 1
            continue
        end = start
        while end < len(rows) and table[end]:
            end += 1
        if all(_is_bullet(row[0]) for row in rows[start:end]) or _numbered_lines(rows[start:end]):
            table[start:end] = [False] * (end - start)  # a list, a listing: no table
        elif start and _bold_header_over(rows[start - 1], rows[start]):
            table[start - 1] = True
        elif code_face and all(run.mono for row in rows[start:end] for run in row):
            above = rows[start - 1] if start else []
            if len(above) == len(rows[start]) and not all(run.mono for run in above):
                table[start - 1] = True  # its header, in another face, centred over its columns
            elif not (start == 0 and continued and _aligned(continued, rows[0])):
                table[start:end] = [False] * (end - start)
        start = end
    return table


def _bold_header_over(above: Sequence[TextRun], row: Sequence[TextRun]) -> bool:
    """``above`` is the bold header of the table whose first row is ``row`` (in another face),
    its labels set apart from the values under them (left-aligned over right-aligned numbers,
    centred): as many cells, each within the room between its column's neighbours' values."""
    if len(above) != len(row) or not _bold(above) or _bold(row):
        return False
    for k, label in enumerate(above):
        after = row[k - 1].x1 if k else float("-inf")
        before = row[k + 1].x0 if k + 1 < len(row) else float("inf")
        if not (label.x0 >= after - 1 and label.x1 <= before + 1):
            return False
    return True


BULLETS = frozenset("•◦▪▫‣●○■□·–—∙")
"""The marks of a list's items: a column of them beside the items' text lines up as a table's
first column does, and is no table."""


def _is_bullet(run: TextRun) -> bool:
    return run.text.strip() in BULLETS


_LINE_NUMBER = re.compile(r"[0-9]{1,6}")


def _numbered_lines(rows: Sequence[list[TextRun]]) -> bool:
    """The rows are a listing's numbered lines: each begins with a line number one more than
    the row's before (``14 | \\begin{question}``, ``15 | In which continent ...``), and at
    least half of them are that number beside code (its cells in a typewriter face) or set
    smaller than the line it numbers; the others' number may run into their code (AMC's
    ``18 \\namefield{\\fbox{ | 5②[5]``, a callout beside it). A table of codes counting up
    beside their meanings in the text's own type (glpk's ``0 | initialization successful``)
    is a table."""
    numbers = [_leading_number(row) for row in rows]
    return (len(rows) >= 2 and None not in numbers
            and all(b == a + 1 for a, b in itertools.pairwise(numbers))
            and 2 * sum(_numbered_code(row) for row in rows) >= len(rows))


def _numbered_code(row: Sequence[TextRun]) -> bool:
    """``row`` is a line number and a line of code: a number alone in its first cell, then
    cells in a typewriter face or the number set smaller than they are."""
    return (len(row) >= 2 and _LINE_NUMBER.fullmatch(row[0].text.strip()) is not None
            and (all(run.mono for run in row[1:]) or row[0].size < min(run.size for run in row[1:])))


_CODE_CELL_START = re.compile(r"(?:[:=;#]|/[*/]|--)")
"""How a cell of a listing's line starts when its lines line up at an operator or a comment
(``: 1; /* is this an object? */``, ``# "5.0" and "1.0"``); a table's cell never does."""


def _code_lines(*rows: Sequence[TextRun]) -> bool:
    """The rows are lines of code starting in a typewriter face, every later cell starting with
    an operator or a comment (its words may be set in roman: R's manuals set a C struct's
    comments so)."""
    return all(row[0].mono and all(_CODE_CELL_START.match(run.text) for run in row[1:])
               for row in rows)


def _column(run: TextRun, columns: Sequence[float]) -> int | None:
    """The column ``run`` is a cell of: it starts within 4 points of the column's left edge and
    ends before the next column starts (a line of prose running across columns is no cell)."""
    for c, x in enumerate(columns):
        if abs(run.x0 - x) <= 4:
            return c if c + 1 == len(columns) or run.x1 <= columns[c + 1] + 4 else None
    return None


def _wrapped_column(run: TextRun, columns: Sequence[float]) -> int | None:
    """The column a line of a wrapped cell is in: :func:`_column`'s, or the last column for a
    line starting inside it (an item indented within a cell of a table's last, widest column:
    gputils' ``- If the "-c" option ...`` under ``-o <file>``)."""
    column = _column(run, columns)
    return len(columns) - 1 if column is None and run.x0 > columns[-1] - 4 else column


def _as_line(run: TextRun) -> Line:
    return Line(run.page, run.text, run.x0, run.top, run.baseline, run.size, run.bold, run.mono,
                run.hyphen, 1)


def _cell_run(pieces: Sequence[TextRun], joiner: _Joiner) -> TextRun:
    """A table cell's lines, top to bottom, as one run, joined as a paragraph's lines are
    (a line-end hyphen kept or dropped by the document's own words)."""
    if len(pieces) == 1:
        return pieces[0]
    text = pieces[0].text
    for before, piece in itertools.pairwise(pieces):
        text, separator = joiner.join(_as_line(before), text, _as_line(piece), BlockKind.BODY)
        text += separator + piece.text
    first, last = pieces[0], pieces[-1]
    return dataclasses.replace(first, text=text, x0=min(p.x0 for p in pieces),
                               x1=max(p.x1 for p in pieces), hyphen=last.hyphen, words=(),
                               depth=last.baseline + last.depth - first.baseline)


def _centred(stretch: Sequence[list[TextRun]], anchors: Sequence[int], columns: Sequence[float]) -> bool:
    """Whether the stretch's rows centre their cells: a row's first cell (its anchor) lacks a
    cell beside it, and a line of that cell's column lies half a line above or below it. A
    first cell alone on its line with its neighbour's lines a whole line under it (a long term
    of a definition list) is set at the top."""
    for i in anchors:
        missing = set(range(len(columns))) - {_column(run, columns) for run in stretch[i]}
        size = stretch[i][0].size
        for j in (i - 1, i + 1):
            if 0 <= j < len(stretch) and 0.3 * size <= abs(
                    stretch[j][0].baseline - stretch[i][0].baseline) <= 0.9 * size and any(
                    _column(run, columns) in missing for run in stretch[j]):
                return True
    return False


def _wrapped_rows(stretch: Sequence[list[TextRun]], columns: Sequence[float]) -> list[list[list[TextRun]]]:
    """The rows of ``stretch`` (a table row and the partial rows under it) grouped into the
    table rows they are: each group one row whose first column holds a cell (its anchor) and
    the lines of the other cells around it. Cells set at the top of their row take the lines
    under them up to the next anchor; cells centred in their row (:func:`_centred`: a one-line
    cell beside a three-line one) take as many lines under the anchor as above it."""
    anchors = [i for i, row in enumerate(stretch) if i == 0 or _column(row[0], columns) == 0]
    if not anchors:
        return [[row] for row in stretch]
    centred = _centred(stretch, anchors, columns)
    bounds: list[int] = []
    taken = 0  # rows placed in groups so far
    for n, anchor in enumerate(anchors):
        following = anchors[n + 1] if n + 1 < len(anchors) else len(stretch)
        if not centred:
            bounds.append(following)
            continue
        below = min(anchor - taken, following - anchor - 1)
        taken = anchor + 1 + below if n + 1 < len(anchors) else following
        bounds.append(taken)
    start = 0 if centred else anchors[0]  # lines above a top-set first anchor: no row's
    groups = [[row] for row in stretch[:start]]
    for end in bounds:
        groups.append(stretch[start:end])
        start = end
    return groups


def _merge_wrapped_cells(rows: Sequence[list[TextRun]], joiner: _Joiner, code_face: bool = True,
                         continued: Sequence[TextRun] = ()) -> list[list[TextRun]]:
    """Rows with each table row whose cells wrap over several lines read as one row of cells.

    A cell longer than its column wraps, and a table sets its other cells at the top of the
    row or centres them on it, so such a row is several partial rows (``display rather long
    explanation on command`` / ``info commandname`` / ``style)``) lining up with no row. The
    partial rows right under a table row, each run a cell of one of its columns
    (:func:`_column`) and each row within 1.6 lines of the one above, are grouped
    (:func:`_wrapped_rows`); each group whose cells fill every column becomes one row, and the
    table goes on under its header (``continued`` as for :func:`_table_rows`)."""
    table = _table_rows(rows, code_face, continued)
    out: list[list[TextRun]] = []
    i = 0
    while i < len(rows):
        out.append(rows[i])
        if not table[i]:
            i += 1
            continue
        columns = [run.x0 for run in rows[i]]
        end = i + 1
        while (end < len(rows) and not table[end]
               and len(rows[end]) <= len(columns)
               and all(_wrapped_column(run, columns) is not None for run in rows[end])
               and 0 < rows[end][0].baseline - rows[end - 1][0].baseline
               <= 1.6 * max(run.size for run in rows[end - 1])):
            end += 1
        if end == i + 1:
            i += 1
            continue
        out.pop()
        for group in _wrapped_rows(rows[i:end], columns):
            cells: list[list[TextRun]] = [[] for _ in columns]
            for row in group:
                for k, run in enumerate(row):  # the table row's own cells are its columns
                    column = _wrapped_column(run, columns)
                    cells[k if column is None else column].append(run)
            if len(group) > 1 and all(cells):
                out.append([_cell_run(pieces, joiner) for pieces in cells])
            else:
                out.extend(group)
        i = end
    return out


def _listing_rows(rows: Sequence[list[TextRun]], table: Sequence[bool]) -> list[bool]:
    """Which rows are a listing's numbered lines: :func:`_numbered_code` rows, and the rows
    numbered with them one after another whose number runs into their code (ctable's ``2
    \\ifpdf`` above ``4 | \\PackageWarning{ctable}{``, its number set apart)."""
    numbers = [None if in_table else _leading_number(row) for row, in_table in zip(rows, table, strict=True)]
    coded = [not in_table and _numbered_code(row) for row, in_table in zip(rows, table, strict=True)]
    listing = list(coded)
    start = 0
    while start < len(rows):
        end = start
        while (end + 1 < len(rows) and numbers[end] is not None
               and numbers[end + 1] == numbers[end] + 1):
            end += 1
        if end > start and any(coded[start:end + 1]):
            listing[start:end + 1] = [True] * (end + 1 - start)
        start = end + 1
    return listing


def _leading_number(row: Sequence[TextRun]) -> int | None:
    """The whole number a row starts with, as a word of its own (``17`` of ``17 \\newif``)."""
    first = (row[0].text.split() or [""])[0]
    return int(first) if _LINE_NUMBER.fullmatch(first) else None


def _lines(page: int, rows: list[list[TextRun]], table: Sequence[bool]) -> list[Line]:
    lines = []
    listings = _listing_rows(rows, table)
    for row, in_table, listing in zip(rows, table, listings, strict=True):
        text = (CELL_SEPARATOR if in_table else " ").join(
            run.text if run.mono else _SPACED_ELLIPSIS.sub("…", run.text) for run in row)
        size = max(row, key=lambda run: len(run.text)).size
        # A row of wrapped cells starts at its highest line (a centred cell's first line is
        # above its anchor) and ends at its lowest.
        baseline = min(run.baseline for run in row) if any(run.depth for run in row) \
            else row[0].baseline
        # A listing's line is code with its line number (:func:`_listing_rows`): kept a line.
        mono = all(run.mono for run in row) or listing
        lines.append(Line(page, text, row[0].x0, min(run.top for run in row), baseline,
                          size, _bold(row), mono, row[-1].hyphen,
                          len(row) if in_table else 1,
                          max(run.baseline + run.depth for run in row) - baseline, listing))
    return lines


def _footnote_start(lines: Sequence[Line], body_size: float, body_mono: bool = False) -> int:
    """Index of the first footnote line at the foot of a page (``len(lines)`` when none). A
    footnote starts with its mark and its text, under the page's other lines: a listing's
    numbered line set smaller than the body is none, nor is a line above it, nor a line in
    typewriter type where the body is in another (code: ``*/`` or ``**`` opening a comment's
    line), and a line number alone starts none."""
    start = len(lines)
    for i in range(len(lines) - 1, 0, -1):
        if (lines[i].size > body_size * FOOTNOTE_SIZE_RATIO or lines[i].cells > 1
                or lines[i].numbered_code or (lines[i].mono and not body_mono)):
            break
        if _FOOTNOTE_START.match(lines[i].text):
            start = i
    return start


def _vocabulary(pages: Sequence[PageText]) -> Counter[str]:
    """How often the document writes each word (case folded), hyphenated compounds whole."""
    words: Counter[str] = Counter()
    for page in pages:
        for run in page.runs:
            words.update(word.casefold() for word in _VOCABULARY_WORD.findall(run.text))
    return words


def _is_heading(line: Line, body_size: float, body_bold: bool) -> bool:
    if line.cells > 1 or len(line.text) > 120 or not any(ch.isalpha() for ch in line.text):
        return False
    if line.size >= body_size * HEADING_SIZE_RATIO:
        return True
    return line.bold and not body_bold and not line.mono and not _SENTENCE_END.search(line.text)


def _kind(line: Line, body_size: float, body_bold: bool) -> BlockKind:
    if line.cells > 1:
        return BlockKind.TABLE
    if _is_heading(line, body_size, body_bold):
        return BlockKind.HEADING
    if line.mono:
        return BlockKind.CODE
    return BlockKind.BODY


class _Joiner:
    """Joins a paragraph's lines, resolving line-end hyphens against the document's words."""

    def __init__(self, vocabulary: Counter[str]) -> None:
        self.vocabulary = vocabulary
        self.breaks: list[HyphenBreak] = []

    def join(self, previous: Line, text_so_far: str, line: Line, kind: BlockKind) -> tuple[str, str]:
        """(what replaces the end of ``text_so_far``'s last piece, the separator) for appending
        ``line``: the separator is a space, a new line (code, table rows) or nothing after a
        joined hyphen."""
        if kind in (BlockKind.CODE, BlockKind.TABLE):
            return text_so_far, "\n"
        explicit = text_so_far.endswith("-") and len(text_so_far) > 1 and text_so_far[-2].isalpha()
        after = _WORD_AFTER.match(line.text)
        if (previous.hyphen or explicit) and after:
            stem = text_so_far[:-1] if explicit else text_so_far
            before = _WORD_BEFORE.search(stem[-LONGEST_WORD:])
            # A word goes on in lower case, or in capitals after a word set in capitals.
            capitals = before is not None and before.group(1).isupper() and after.group(1).isupper()
            if before and (line.text[:1].islower() or capitals):
                left, right = before.group(1), after.group(1)
                joined, hyphenated = left + right, f"{left}-{right}"
                keep = self.keeps_hyphen(left, right, joined, hyphenated)
                self.breaks.append(HyphenBreak(joined, hyphenated, keep))
                return (stem + "-" if keep else stem), ""
        if previous.hyphen:
            return text_so_far + "-", ""
        if text_so_far.endswith("_"):
            return text_so_far, ""
        if _URL_END.search(text_so_far) and (text_so_far.endswith("/") or line.text[:1].islower()
                                             or line.text[:1].isdigit() or line.text[:1] in ")]>"):
            return text_so_far, ""
        return text_so_far, " "

    def keeps_hyphen(self, left: str, right: str, joined: str, hyphenated: str) -> bool:
        """The document writes the hyphenated form more often than the joined one; where it
        writes neither, a part that is already a compound (``active-region-`` + ``start``,
        ``most-`` + ``recently-killed``) keeps it. Measured on the twins, also keeping it
        when both parts are words of the document (``lower-`` + ``case``) is worse: 297 of
        305 breaks right instead of 304 in bashref, 31 of 37 instead of 37 in liboctave."""
        with_hyphen = self.vocabulary[hyphenated.casefold()]
        without = self.vocabulary[joined.casefold()]
        if with_hyphen or without:
            return with_hyphen > without
        return "-" in left or "-" in right


def _page_lines(pages: Sequence[PageText],
                joiner: _Joiner) -> tuple[list[list[Line]], int, list[int], Counter[float]]:
    """Each page's lines in reading order (none of a contents page but, on the first page,
    those above its first entry), with the count of
    dropped lines, the dropped contents pages (1-based) and the characters per rounded type
    size in table rows."""
    page_rows = [_rows(page.runs) for page in pages]
    running = _running_rows(page_rows)
    # Typewriter type marks code where the text is mostly in another face.
    code_face = 2 * sum(len(run.text) for page in pages for run in page.runs if run.mono) < sum(
        len(run.text) for page in pages for run in page.runs)
    toc_pages: list[int] = []
    page_lines: list[list[Line]] = []
    in_tables: Counter[float] = Counter()
    continued: list[TextRun] = []  # the page before's last row, when it was a table's
    for p, (page, rows) in enumerate(zip(pages, page_rows, strict=True)):
        kept = [row for r, row in enumerate(rows) if (p, r) not in running]
        if _is_toc_page(kept):
            toc_pages.append(page.index + 1)
            kept = _above_contents(kept) if p == 0 else []
            if not kept:
                page_lines.append([])
                continued = []
                continue
        reading = _merge_wrapped_cells(_split_cells_run_together(_cut_at_column_edges(
            _reading_rows(kept, page.width)), code_face), joiner, code_face, continued)
        table = _table_rows(reading, code_face, continued)
        continued = reading[-1] if reading and table[-1] else []
        for row in itertools.compress(reading, table):
            for run in row:
                in_tables[round(run.size)] += len(run.text)
        lines = _lines(page.index, reading, table)
        if (without := _without_contents_block(lines)) is not None:
            toc_pages.append(page.index + 1)
            lines = without
        page_lines.append(lines)
    return page_lines, len(running), toc_pages, in_tables


def _blocks(page_lines: Sequence[list[Line]], body_size: float,
            joiner: _Joiner) -> tuple[list[_Block], int]:
    """The document's blocks in reading order, with the count of footnotes."""
    all_lines = [line for lines in page_lines for line in lines]
    body_bold = sum(len(line.text) for line in all_lines if line.bold) * 2 > sum(
        len(line.text) for line in all_lines)
    body_mono = sum(len(line.text) for line in all_lines if line.mono) * 2 > sum(
        len(line.text) for line in all_lines)
    pitches = [b.baseline - a.baseline for lines in page_lines for a, b in itertools.pairwise(lines)
               if abs(a.size - body_size) < 0.6 and abs(b.size - body_size) < 0.6
               and 0 < b.baseline - a.baseline < 3 * body_size]
    pitch = statistics.median(pitches) if pitches else body_size * 1.2
    blocks: list[_Block] = []
    footnotes = 0
    current: _Block | None = None
    for lines in page_lines:
        if not lines:
            continue
        cut = _footnote_start(lines, body_size, body_mono)
        for i, line in enumerate(lines[:cut]):
            kind = _kind(line, body_size, body_bold)
            if current is not None and _continues(current, line, kind, i == 0, pitch):
                previous = current.lines[-1]
                page_of_last, last_text = current.pieces[-1]
                new_last, separator = joiner.join(previous, last_text, line, kind)
                current.pieces[-1] = (page_of_last, new_last)
                current.pieces.append((line.page, separator + line.text))
                current.add(line)
            else:
                carried: list[_Block] = []
                if current is not None:
                    blocks.append(current)
                    if (i == 0 and kind is BlockKind.TABLE and current.kind is BlockKind.TABLE
                            and current.lines[-1].cells == line.cells):
                        carried = current.footnotes_after  # the table goes on: its notes after it
                    else:
                        blocks.extend(current.footnotes_after)
                current = _Block(kind, [line], [(line.page, line.text)], carried)
        notes = _merge_footnotes(lines[cut:])
        footnotes += len(notes)
        if current is not None:
            current.footnotes_after.extend(notes)
        else:
            blocks.extend(notes)
    if current is not None:
        blocks.append(current)
        blocks.extend(current.footnotes_after)
    return blocks, footnotes


def _merge_footnotes(lines: Sequence[Line]) -> list[_Block]:
    """Footnote lines grouped into one block per footnote (a line starting with its mark
    starts one)."""
    merged: list[_Block] = []
    for line in lines:
        if merged and not _FOOTNOTE_START.match(line.text):
            merged[-1].add(line)
            merged[-1].pieces.append((line.page, " " + line.text))
        else:
            merged.append(_Block(BlockKind.FOOTNOTE, [line], [(line.page, line.text)], []))
    return merged


def _continues(block: _Block, line: Line, kind: BlockKind, first_on_page: bool, pitch: float) -> bool:
    """``line`` belongs to the paragraph ``block`` holds."""
    if kind != block.kind or kind is BlockKind.FOOTNOTE:
        return False
    if kind is not BlockKind.TABLE and _starts_item(line.text):
        return False  # a list item starts a paragraph of its own (set as a heading, too)
    previous = block.lines[-1]
    ends_sentence = _SENTENCE_END.search(previous.text) is not None and not previous.hyphen
    if kind is BlockKind.HEADING:
        return (not first_on_page and abs(line.size - previous.size) < 0.6
                and line.baseline - previous.baseline <= 1.6 * line.size)
    if first_on_page or line.page != previous.page:
        return not ends_sentence and kind is not BlockKind.TABLE
    gap = line.baseline - previous.baseline - previous.depth
    # A table's header row may be set larger than its rows (reportlab's shaded 8-point
    # ``Parameter | Meaning | Default`` over 7-point rows): a row lined up with it, as many
    # cells wide, goes on under it.
    header = (kind is BlockKind.TABLE and len(block.lines) == 1 and line.cells == previous.cells
              and previous.size > line.size >= 0.75 * previous.size and abs(line.x0 - previous.x0) <= 4
              and line.baseline - previous.baseline >= previous.size)  # not a formula's scripts
    if gap > 1.45 * pitch or gap < 0 or (abs(line.size - previous.size) >= 0.6 and not header):
        return False
    if kind is BlockKind.TABLE:
        return True
    item = block.lines[0]
    if _starts_item(item.text):
        # After a sentence's end, a line starting where the item's mark does is the
        # paragraph after the list (glpk's "— constraint matrix." / "Rows and columns
        # have..."). A line at the indent the item's lines hang at, under one there, goes on
        # with it (R's FAQ: "Chapman & Hall." / "This is also called..."), as does the
        # item's second line after a colon ("...London:" / "Chapman & Hall."); after a full
        # stop the second line may be what follows the item (a nested list, memman's
        # indented paragraph) and is judged as any other, as is a line left of the mark: an
        # item may wrap to the margin (glpk), and so may the paragraph after it.
        if ends_sentence and abs(line.x0 - item.x0) <= 1:
            return False
        indent = block.lines[1].x0 if len(block.lines) > 1 else None
        if block.later_x0 > item.x0 + 1 and (abs(line.x0 - indent) <= 1 and abs(previous.x0 - indent) <= 1
                        if indent is not None else
                        item.x0 + 1 < line.x0 < item.x0 + 4 * line.size
                        and not previous.text.rstrip().rstrip("\"')]’”").endswith((".", "!", "?"))):
            return True
    return not (ends_sentence and abs(line.x0 - previous.x0) > line.size)


def _starts_item(text: str) -> bool:
    """``text`` starts with a list mark and a space (``• In R, ...``)."""
    return text[:1] in BULLETS and text[1:2].isspace()


def _text_and_spans(blocks: Sequence[_Block]) -> tuple[str, list[tuple[int, int, _Block]], list[PageSpan]]:
    parts: list[str] = []
    block_spans: list[tuple[int, int, _Block]] = []
    page_spans: list[PageSpan] = []
    offset = 0
    for block in blocks:
        if parts:
            parts.append("\n\n")
            offset += 2
        start = offset
        for page, piece in block.pieces:
            if page_spans and page_spans[-1].page == page:
                last = page_spans[-1]
                page_spans[-1] = PageSpan(page, last.start, offset + len(piece))
            else:
                piece_start = offset + (len(piece) - len(piece.lstrip())) if page_spans else 0
                if page_spans:
                    last = page_spans[-1]
                    page_spans[-1] = PageSpan(last.page, last.start, piece_start)
                page_spans.append(PageSpan(page, piece_start, offset + len(piece)))
            parts.append(piece)
            offset += len(piece)
        block_spans.append((start, offset, block))
    text = "".join(parts) + ("\n" if parts else "")
    if page_spans:
        last = page_spans[-1]
        page_spans[-1] = PageSpan(last.page, last.start, len(text))
    return text, block_spans, page_spans


_PLAIN_NUMBER = re.compile(r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:([.,])(\d+))?")
_YEAR = re.compile(r"1[5-9]\d\d|20\d\d")


def _cell_number(cell: str) -> tuple[str, float] | None:
    """A cell's number and its kind (``"decimal"``: ``14.1``, ``-5,8``; ``"integer"``:
    ``12``, ``1,000``), or None (text, a percentage, a year)."""
    text = cell.strip()
    match = _PLAIN_NUMBER.fullmatch(text)
    if match is None or _YEAR.fullmatch(text):
        return None
    separator, fraction = match.groups()
    decimal = separator == "." or (separator == "," and len(fraction) != 3)
    whole = text.replace("\u2212", "-")
    value = float(whole.replace(",", ".") if separator == "," and decimal else whole.replace(",", ""))
    return ("decimal" if decimal else "integer"), value


def worded_like_rows(first: Sequence[str], others: Sequence[Sequence[str]]) -> bool:
    """Whether a table's first row ``first`` (its cells) is worded as the rows under it are, so
    is one of them and no header: in a column where the other rows' cells are sentences (more
    than :data:`LABEL_MAX_WORDS` words, four in five of them or more; two other rows at
    least), its cell is one too, and in no such column is it a label (gri's paper sizes:
    ``letter | American "letter" size: 8.5 x 11 inches`` is the first size, not the header)
    nor without a digit where the other rows' cells have one (xcolor's ``Color |
    Definition/representation (pdftex driver)`` over ``{0.92 0 0.87 0.09 k}``).

    Example:
        >>> worded_like_rows(["a", "The access time of the file"],
        ...                  [["B", "The birth time of the file"], ["c", "The inode change time"]])
        True
        >>> worded_like_rows(["Letter", "Time it names"],
        ...                  [["B", "The birth time of the file"], ["c", "The inode change time"]])
        False
    """
    if len(others) < 2:
        return False
    worded = False
    for column in range(len(first)):
        long = [len(row[column].split()) > LABEL_MAX_WORDS for row in others
                if column < len(row)]
        if long and sum(long) >= 0.8 * len(others):
            numbered = sum(any(c.isdigit() for c in row[column]) for row in others
                           if column < len(row)) >= 0.8 * len(others)
            if len(first[column].split()) <= LABEL_MAX_WORDS or (
                    numbered and not any(c.isdigit() for c in first[column])):
                return False
            worded = True
    return worded


def first_row_is_data(lines: Sequence[Line]) -> bool:
    """Whether a table's first line is a row like the others, not a header: in each column
    after the first where the other rows hold numbers (four in five of them or more), it holds
    a number of the same kind (decimal or integer) as most of them; across two such columns or
    more its numbers do not only rise; and it is set in the others' type face (a bold line over
    plain rows is a header). Headers of numbers rise: thread counts (``1 | 2 | 4``), versions
    (``3.11 | 3.12``), quantity breaks (``1,000 | 10,000``), years and percentages (never
    numbers here). A table whose header stands apart (stacked over several lines, so no row of
    the table) starts with its first data row; taken for the header, that row would be
    repeated over every other row as their columns' names."""
    cells = [line.text.split(" | ") for line in lines]
    first, others = cells[0], cells[1:]
    numbers: list[float] = []
    for column in range(1, len(first)):
        kinds = [found[0] for row in others if column < len(row)
                 and (found := _cell_number(row[column])) is not None]
        if len(kinds) < 0.8 * len(others):
            continue
        own = _cell_number(first[column])
        if own is None or own[0] != max(set(kinds), key=kinds.count):
            return False
        numbers.append(own[1])
    rising = len(numbers) > 1 and all(a < b for a, b in zip(numbers, numbers[1:], strict=False))
    bold_others = sum(line.bold for line in lines[1:]) * 2 > len(others)
    return ((bool(numbers) and not rising) or worded_like_rows(first, others)) and (
        lines[0].bold == bold_others)


def table_spans(block_spans: Sequence[tuple[int, int, _Block]]) -> tuple[TableSpan, ...]:
    """The table blocks as tables: the first line the header (unless it is a row like the
    others: :func:`first_row_is_data`; the table then has no header), every other line a row. A table
    block that starts a page right after a table block ending the previous one, its rows of
    as many cells, continues that table (one span over both; a header line repeated on the
    new page is kept in the text as the start of the row after it)."""
    tables: list[TableSpan] = []
    previous: _Block | None = None
    for start, end, block in block_spans:
        if block.kind is not BlockKind.TABLE:
            previous = block
            continue
        line_starts, offset = [], start
        for _, piece in block.pieces:
            line_starts.append(offset + len(piece) - len(piece.lstrip("\n")))
            offset += len(piece)
        continues = (tables and previous is not None and previous.kind is BlockKind.TABLE
                     and tables[-1].end == start - 2
                     and previous.lines[-1].page < block.lines[0].page
                     and previous.lines[-1].cells == block.lines[0].cells)
        if continues:
            last = tables[-1]
            rows = line_starts
            if block.lines[0].text == last.header and len(line_starts) > 1:
                rows = [line_starts[0], *line_starts[2:]]  # the repeated header opens a row
            tables[-1] = TableSpan(last.start, end, last.header, last.header_end,
                                   (*last.rows, *rows))
        elif len(block.lines) >= 2 and first_row_is_data(block.lines):
            tables.append(TableSpan(start, end, "", start, tuple(line_starts)))
        elif len(block.lines) >= 2:
            header = block.lines[0].text
            tables.append(TableSpan(start, end, header, start + len(header), tuple(line_starts[1:])))
        previous = block
    return tuple(tables)


def footnote_sections(sections: Sequence[Section], block_spans: Sequence[tuple[int, int, _Block]],
                      text_length: int, title: str) -> list[Section]:
    """The sections with each footnote its own section, titled ``<section> (footnote)``: the
    section holding it is cut before and after it, so a chunk never mixes a footnote with the
    running text and its ``[Doc > ...]`` line says what it is. Without footnotes, the sections
    as they are."""
    notes = [(start, end) for start, end, block in block_spans if block.kind is BlockKind.FOOTNOTE]
    if not notes:
        return list(sections)
    out: list[Section] = []
    for section in sections or [Section(title, 0, text_length)]:
        position = section.start
        for start, end in notes:
            if start < section.start or end > section.end:
                continue
            if start > position:
                out.append(Section(section.title, position, start, section.level))
            out.append(Section(f"{section.title} (footnote)", start, end, section.level))
            position = end
        if position < section.end or position == section.start:
            out.append(Section(section.title, position, section.end, section.level))
    return out


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _outline_sections(entries: Sequence[OutlineEntry], block_spans: Sequence[tuple[int, int, _Block]],
                      text_length: int, title: str) -> list[Section]:
    """One section per bookmark: its body starts after the heading the bookmark points at (or,
    where no heading there carries its title, at the first paragraph at or below its target)
    and ends where the next bookmark's heading starts."""
    marks: list[tuple[int, int, OutlineEntry]] = []
    floor = 0
    for entry in entries:
        wanted = _squash(entry.title)
        found: tuple[int, int] | None = None
        fallback: tuple[int, int] | None = None
        for start, end, block in block_spans:
            first = block.lines[0]
            if first.page < entry.page or start < floor:
                continue
            if first.page > entry.page:
                if fallback is None:
                    fallback = (start, start)
                break
            below = entry.top is None or first.baseline >= entry.top - 2
            if not below:
                continue
            if fallback is None:
                fallback = (start, start)
            if block.kind is BlockKind.HEADING and wanted and wanted in _squash(block.pieces[0][1] + "".join(
                    piece for _, piece in block.pieces[1:])):
                found = (start, end)
                break
        spot = found or fallback or (text_length, text_length)
        floor = spot[0]
        marks.append((spot[0], spot[1], entry))
    sections: list[Section] = []
    first_heading = marks[0][0] if marks else text_length
    sections.append(Section(title, 0, first_heading, 1))
    for i, (_, body_start, entry) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else text_length
        sections.append(Section(entry.title, min(body_start, end), end, entry.level))
    return sections


def _font_sections(block_spans: Sequence[tuple[int, int, _Block]], text_length: int,
                   title: str) -> list[Section]:
    """One section per heading block, from the end of its heading to the next heading. A
    heading with nothing under it:

    - over a heading of its size is one heading with it ("Chapter 3" over "Installation", two
      options that share one description);
    - over a smaller heading heads a part ("2 Usage" over "2.1 Tables") and stays one;
    - over a larger heading, or at the end, is no section's heading: its words stay in the
      section before, where a chunk holds them (a section with nothing in it is no section,
      and its heading would be in no chunk)."""
    starts = [start for start, _, _ in block_spans]
    kept: list[tuple[int, int, _Block, str]] = []  # start, end, block, the heading's words
    for start, end, block in reversed([span for span in block_spans
                                       if span[2].kind is BlockKind.HEADING]):
        words = " ".join("".join(piece for _, piece in block.pieces).split())
        following = kept[-1] if kept else None
        if bisect_left(starts, end) < bisect_left(starts, following[0] if following else text_length):
            kept.append((start, end, block, words))  # a block under it
        elif following is not None and round(following[2].lines[0].size) == round(block.lines[0].size):
            kept[-1] = (start, following[1], following[2], f"{words} {following[3]}")
        elif following is not None and round(following[2].lines[0].size) < round(block.lines[0].size):
            kept.append((start, end, block, words))
    headings = kept[::-1]
    sizes = sorted({round(block.lines[0].size) for _, _, block, _ in headings}, reverse=True)
    sections = [Section(title, 0, headings[0][0] if headings else text_length, 1)]
    for i, (_, end, block, words) in enumerate(headings):
        next_start = headings[i + 1][0] if i + 1 < len(headings) else text_length
        sections.append(Section(words, end, next_start, sizes.index(round(block.lines[0].size)) + 1))
    return sections


TITLE_MAX_WORDS = 8
"""A first line of more words than this that ends a sentence is a sentence, not a title."""


_FILE_NAME_TITLE = re.compile(
    r"Microsoft (?:Word|PowerPoint|Excel) - .*|(?:.*[/\\])?[^/\\]*\.(?:dvi|tex|ps|eps|pdf|docx?|"
    r"odt|rtf|pptx?|xlsx?|txt|html?|md|indd|qxd)|untitled(?: document)?|document\d*|\(?anonymous\)?",
    re.IGNORECASE)
"""A metadata title that only names the file the PDF was made from, as TeX, Word and print
drivers write it."""


def _file_name_title(title: str) -> bool:
    return len(title) <= 300 and _FILE_NAME_TITLE.fullmatch(" ".join(title.split())) is not None


def _title(metadata_title: str, blocks: Sequence[_Block], stem: str, body_size: float) -> str:
    """The metadata's title, else the first line of the first page's block in the largest
    type unless it is a sentence (over :data:`TITLE_MAX_WORDS` words, ending one: "Why Use
    Dagster?" is a title) or one word in capitals in the body's type (``body_size``) or in the
    type of another block of the page (a section's label: a manual page's ``NAME`` above its
    ``SYNOPSIS``, ``ABSTRACT``), else ``stem``: a first page
    whose title is a running head (dropped) is not titled by its first sentence or label. A
    metadata title that is only the name of the file it was made from (``gputils.dvi``,
    ``Microsoft Word - report.docx``, ``untitled``) is no title."""
    if metadata_title.strip() and not _file_name_title(metadata_title):
        return " ".join(metadata_title.split())
    first_page = [block for block in blocks if block.lines[0].page == blocks[0].lines[0].page]
    if first_page:
        largest = max(first_page, key=lambda block: block.lines[0].size)
        text = " ".join(largest.lines[0].text.split())
        # One word of four letters or more that is a longer word of a title set nearly as
        # large but for a letter or two is a logo's letters (Asymptote's "symptote", its A
        # drawn): the title is that block's words.
        spelled = [block for block in first_page if " " not in text and len(text) >= 4
                   and block is not largest
                   and block.lines[0].size >= 0.75 * largest.lines[0].size
                   and any(text.lower() in word.lower() and 0 < len(word) - len(text) <= 2
                           for word in re.findall(r"\w+", block.lines[0].text))]
        if spelled:
            largest = max(spelled, key=lambda block: block.lines[0].size)
            text = " ".join("".join(piece for _, piece in largest.pieces).split())
        sentence = len(text.split()) > TITLE_MAX_WORDS and _SENTENCE_END.search(text)
        size = largest.lines[0].size
        label = " " not in text and text.isupper() and (round(size) <= body_size or any(
            block is not largest and block.lines[0].size == size for block in first_page))
        if text and len(text) <= 200 and not sentence and not label:
            return text
    return stem


def _scans_in_body_type(pages: Sequence[PageText]) -> Sequence[PageText]:
    """``pages`` with each scanned (OCR) page whose median line would read as a heading beside
    the pages with a text layer scaled so that its median line is set in their body type (the
    size most of their characters are set in). An OCR line's size is its height in the scan,
    at whatever scale the page was scanned or placed: a scan placed larger read its body lines
    as headings, with nothing under them. A scan whose lines read as body already is left as
    read: its median may be a table's smaller rows, and scaled to it, its paragraphs would be
    headings. Unchanged when every page is of one kind."""
    text_pages = [page for page in pages if page.source is PageSource.TEXT]
    if len(text_pages) == len(pages) or not any(page.runs for page in text_pages):
        return pages
    body = _body_size(text_pages, Counter())
    scaled = []
    for page in pages:
        median = statistics.median(run.size for run in page.runs) if page.runs else body
        if page.source is PageSource.OCR and median >= body * HEADING_SIZE_RATIO:
            page = dataclasses.replace(page, runs=tuple(
                dataclasses.replace(run, size=run.size * body / median) for run in page.runs))
        scaled.append(page)
    return scaled


def lay_out(pages: Sequence[PageText], entries: Sequence[OutlineEntry], metadata_title: str,
            stem: str) -> Layout:
    """Lays out a PDF's pages as canonical text with sections and page anchors.

    Args:
        pages: Every page's runs, in page order.
        entries: The outline's bookmarks (empty when the PDF has none).
        metadata_title: The PDF's ``Title`` metadata ("" when absent).
        stem: The file name's stem, the title of last resort.

    Returns:
        The layout; sections come from ``entries`` when there are any, else from type size.
    """
    pages = _scans_in_body_type(pages)
    joiner = _Joiner(_vocabulary(pages))
    page_lines, dropped, toc_pages, in_tables = _page_lines(pages, joiner)
    body_size = _body_size(pages, in_tables)
    blocks, footnotes = _blocks(page_lines, body_size, joiner)
    text, block_spans, page_spans = _text_and_spans(blocks)
    title = _title(metadata_title, blocks, stem, body_size)
    if entries:
        sections, sections_from = _outline_sections(entries, block_spans, len(text), title), "outline"
    elif any(block.kind is BlockKind.HEADING for block in blocks):
        sections, sections_from = _font_sections(block_spans, len(text), title), "font"
    else:
        sections, sections_from = [], "none"
    anchors = tuple(Anchor(span.start, span.end, str(PageLocator(span.page + 1))) for span in page_spans
                    if span.end > span.start)
    sections = footnote_sections(sections, block_spans, len(text), title)
    nonblank = tuple(section for section in sections if text[section.start:section.end].strip())
    return Layout(title, text, nonblank, anchors, dropped, tuple(toc_pages), footnotes,
                  tuple(joiner.breaks), sections_from, table_spans(block_spans))
