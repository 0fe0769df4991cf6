"""Where a span of a document is in its original file, parsed and formatted here only.

A locator is stored on every anchor (``documents.anchors.locator``) in its format's notation,
and a citation's URL fragment is ``#`` + a locator:

- ``page=3``: a PDF page (RFC 8118), 1-based;
- ``char=10,250``: characters of the canonical text (RFC 5147);
- ``t=12.500,15.000``: a time range in seconds with milliseconds (Media Fragments);
- ``row=5`` / ``row=5-9``: rows of a CSV file (RFC 7111);
- ``rows=3-17``: data rows of a table inside a document (1-based, the header row not
  counted), added after the format's own locator (``page=2&rows=3-17``, ``char=0,90&rows=1-4``);
  ``table=2&rows=3-17`` when more than one table starts on that page or slide (the second of
  them: ``slide=4&table=2&rows=3-17``);
- ``sheet=<percent-encoded name>&range=A12:F30``: a cell range of a spreadsheet sheet.

Each kind is one class registered under its first key (:func:`locator_kind`), so a format that
needs another notation (``slide=``, ``cell=``) adds one class here and its test; nothing else
parses a locator's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import quote, unquote

from rag_pipeline.core.ingest.rows import column_letters, column_number

__all__ = ["CharLocator", "InvalidLocator", "Locator", "PageLocator", "RangeLocator",
           "RowLocator", "TableRowsLocator", "TimeLocator", "locator_kind", "parse_fragment", "parse_locator",
           "seconds"]


class InvalidLocator(ValueError):
    """A string that is no known locator."""


class Locator:
    """One place in a file; ``str(locator)`` is its notation, :attr:`fragment` its URL form."""

    key: ClassVar[str]

    @property
    def fragment(self) -> str:
        return f"#{self}"


_KINDS: dict[str, Callable[[str], Locator]] = {}


def locator_kind(key: str) -> Callable[[type], type]:
    """Registers a locator class under ``key``, the name its notation starts with (``page``
    for ``page=3``); the class parses the whole notation with ``parse(text)``."""

    def register(cls: type) -> type:
        if key in _KINDS:
            raise ValueError(f"a locator kind {key!r} is already registered")
        cls.key = key
        _KINDS[key] = cls.parse
        return cls

    return register


def parse_locator(text: str) -> Locator:
    """The locator ``text`` spells (``page=3``, ``t=1.000,2.500``, ...).

    Raises:
        InvalidLocator: no registered kind reads it.
    """
    key = text.partition("=")[0] if isinstance(text, str) else ""
    parse = _KINDS.get(key)
    if parse is None:
        raise InvalidLocator(f"not a locator ({', '.join(sorted(_KINDS))}): {text!r}")
    return parse(text)


def parse_fragment(fragment: str) -> Locator:
    """The locator of a URL fragment (``#page=3``)."""
    return parse_locator(fragment.removeprefix("#"))


def _match(pattern: re.Pattern[str], text: str, what: str) -> re.Match[str]:
    match = pattern.fullmatch(text)
    if match is None:
        raise InvalidLocator(f"not a {what} locator: {text!r}")
    return match


def seconds(milliseconds: int) -> str:
    """``12500`` as ``12.500``: exact, never through a float."""
    return f"{milliseconds // 1000}.{milliseconds % 1000:03d}"


def _milliseconds(text: str) -> int:
    whole, _, fraction = text.partition(".")
    return int(whole) * 1000 + int(fraction.ljust(3, "0")[:3] or 0)


@locator_kind("page")
@dataclass(frozen=True)
class PageLocator(Locator):
    """A page, 1-based."""

    page: int
    _PATTERN: ClassVar[re.Pattern[str]] = re.compile(r"page=(\d+)")

    @classmethod
    def parse(cls, text: str) -> PageLocator:
        return cls(int(_match(cls._PATTERN, text, "page")[1]))

    def __str__(self) -> str:
        return f"page={self.page}"


@locator_kind("char")
@dataclass(frozen=True)
class CharLocator(Locator):
    """Characters ``[start, end)`` of the canonical text."""

    start: int
    end: int
    _PATTERN: ClassVar[re.Pattern[str]] = re.compile(r"char=(\d+),(\d+)")

    @classmethod
    def parse(cls, text: str) -> CharLocator:
        match = _match(cls._PATTERN, text, "char")
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"char={self.start},{self.end}"


@locator_kind("t")
@dataclass(frozen=True)
class TimeLocator(Locator):
    """A time range of a recording, in milliseconds."""

    start_ms: int
    end_ms: int
    _PATTERN: ClassVar[re.Pattern[str]] = re.compile(r"t=(\d+(?:\.\d+)?),(\d+(?:\.\d+)?)")

    @classmethod
    def parse(cls, text: str) -> TimeLocator:
        match = _match(cls._PATTERN, text, "time")
        return cls(_milliseconds(match[1]), _milliseconds(match[2]))

    def __str__(self) -> str:
        return f"t={seconds(self.start_ms)},{seconds(self.end_ms)}"


@locator_kind("row")
@dataclass(frozen=True)
class RowLocator(Locator):
    """Rows ``first`` to ``last`` of a table file, 1-based (one row when they are equal)."""

    first: int
    last: int
    _PATTERN: ClassVar[re.Pattern[str]] = re.compile(r"row=(\d+)(?:-(\d+))?")

    @classmethod
    def parse(cls, text: str) -> RowLocator:
        match = _match(cls._PATTERN, text, "row")
        return cls(int(match[1]), int(match[2] or match[1]))

    def __str__(self) -> str:
        return f"row={self.first}" if self.first == self.last else f"row={self.first}-{self.last}"


@locator_kind("rows")
@dataclass(frozen=True)
class TableRowsLocator(Locator):
    """Data rows ``first`` to ``last`` of a table in a document, 1-based, the header row(s)
    not counted; always a range (``rows=4-4`` for one row), so it never reads as CSV's
    ``row=``. ``table`` is the table's place among those starting on the same page or slide,
    1-based, given only where more than one does (``table=2&rows=4-4``)."""

    first: int
    last: int
    table: int | None = None
    _PATTERN: ClassVar[re.Pattern[str]] = re.compile(r"(?:table=(\d+)&)?rows=(\d+)-(\d+)")

    @classmethod
    def parse(cls, text: str) -> TableRowsLocator:
        match = _match(cls._PATTERN, text, "table rows")
        return cls(int(match[2]), int(match[3]), int(match[1]) if match[1] else None)

    def __str__(self) -> str:
        table = f"table={self.table}&" if self.table is not None else ""
        return f"{table}rows={self.first}-{self.last}"


_KINDS["table"] = TableRowsLocator.parse  # ``table=2&rows=4-4`` starts with its table's place


@locator_kind("sheet")
@dataclass(frozen=True)
class RangeLocator(Locator):
    """A cell range of one sheet: columns and rows 1-based, the sheet's real name."""

    sheet: str
    first_column: int
    first_row: int
    last_column: int
    last_row: int
    _PATTERN: ClassVar[re.Pattern[str]] = re.compile(
        r"sheet=([^&]*)&range=([A-Z]+)(\d+):([A-Z]+)(\d+)")

    @classmethod
    def parse(cls, text: str) -> RangeLocator:
        match = _match(cls._PATTERN, text, "cell range")
        return cls(unquote(match[1]), column_number(match[2]), int(match[3]),
                   column_number(match[4]), int(match[5]))

    @property
    def cells(self) -> str:
        """``A12:F30``."""
        return (f"{column_letters(self.first_column)}{self.first_row}:"
                f"{column_letters(self.last_column)}{self.last_row}")

    def __str__(self) -> str:
        return f"sheet={quote(self.sheet, safe='')}&range={self.cells}"
