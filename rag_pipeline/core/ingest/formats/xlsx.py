"""XLSX: one section per sheet, each row one line under the sheet's header row, cited by cell range.

Read with openpyxl (MIT) in read-only mode with ``data_only``: a formula cell contributes the
value the spreadsheet application cached when it last saved the file, never its formula. A
program that writes workbooks without calculating them (openpyxl itself, many exporters)
leaves no cached values: the document carries their count (note
``formulas_without_cached_value``) and where the sheets holding them are in the text
(``..._spans``: a citation of another sheet does not carry it), and when they are at least as
many as the cells showing a value (most of what the workbook says is missing) it fails with
that reason.
The dimensions the file declares are not trusted (``reset_dimensions``): every stored cell is
read. A number is written as :func:`cell_value_text` says (as its number format shows it). A
hidden sheet is read, and counted (note ``hidden_sheets``); cell comments are left out, counted
(``comments_left_out``). The lines are those of :mod:`rag_pipeline.core.ingest.rows`; a row's anchor is
``sheet=<name>&range=A12:F12`` (the sheet name percent-encoded), from its first to its last
non-blank cell.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag_pipeline.core.ingest.extracted import (
    Anchor,
    Extracted,
    ExtractionError,
    Extractor,
    scope_note,
)
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.office_zip import (
    ContentBudget,
    OfficeLimits,
    check_zip,
    count_elements,
)
from rag_pipeline.core.ingest.rows import column_number
from rag_pipeline.core.ingest.safe_xml import safe_xml
from rag_pipeline.core.ingest.sheets import (
    MergedCells,
    Sheet,
    cell_value_text,
    lay_out_sheets,
    merged_away,
    sheet_fragment,
)
from rag_pipeline.core.ingest.tables import layout_table, without_blank_rows


@dataclass(frozen=True)
class _SheetParts:
    """What openpyxl's read-only reading does not give, read straight from the sheets' XML."""

    formulas: int
    uncached: int
    uncached_sheets: frozenset[str]
    """The names of the sheets holding formulas without a cached value."""
    merged: dict[str, dict[tuple[int, int], tuple[int, int]]]
    """Each sheet's merged cells, by sheet name."""


def merged_cells(data: bytes) -> dict[str, MergedCells]:
    """Each sheet's merged cells, by sheet name (what a read-only openpyxl worksheet lacks)."""
    return _scan_sheet_parts(data).merged


def _scan_sheet_parts(data: bytes) -> _SheetParts:
    """How many formula cells the worksheets hold and how many of them have no cached value
    (openpyxl's ``data_only`` reading cannot tell an uncalculated formula from an empty cell),
    and each sheet's merged cells (read-only worksheets have none), in one streaming pass of
    lxml over each sheet's XML."""
    from lxml import etree

    formulas = uncached = 0
    uncached_sheets: list[str] = []
    merged: dict[str, dict[tuple[int, int], tuple[int, int]]] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        titles = _sheet_titles(archive)
        names = set(archive.namelist())
        for name in sorted(titles.keys() & names | {
                n for n in names if n.startswith("xl/worksheets/") and n.endswith(".xml")}):
            areas: dict[tuple[int, int], tuple[int, int]] = {}
            before = uncached
            try:
                with archive.open(name) as stream:
                    for _, element in etree.iterparse(stream, tag=("{*}c", "{*}mergeCell")):
                        if element.tag.endswith("}mergeCell"):
                            if (area := _cell_area(element.get("ref", ""))) is not None:
                                areas[area[0]] = area[1]
                        elif element.find("{*}f") is not None:
                            formulas += 1
                            value = element.find("{*}v")
                            uncached += value is None or not (value.text or "")
                        element.clear()
            except (etree.XMLSyntaxError, zipfile.BadZipFile, zlib.error, EOFError):
                continue  # a damaged sheet: _read_sheets leaves it out and says so
            if name in titles:
                merged[titles[name]] = areas
            if uncached > before:
                uncached_sheets.append(titles.get(name, name))
    return _SheetParts(formulas, uncached, frozenset(uncached_sheets), merged)


def _sheet_titles(archive: zipfile.ZipFile) -> dict[str, str]:
    """Each worksheet part's sheet name (``xl/worksheets/sheet1.xml`` to ``Budget``), from the
    workbook part the package names (``_rels/.rels``, as openpyxl finds it) and its
    relationships; empty when they cannot be read (openpyxl then says what is wrong)."""
    workbook = _target("_rels/.rels", "", _OFFICE_DOCUMENT, archive) or "xl/workbook.xml"
    folder, name = posixpath.split(workbook)
    try:
        relationships = _relationships(archive, posixpath.join(folder, "_rels", f"{name}.rels"))
        sheets = list(safe_xml(archive.read(workbook)).iter("{*}sheet"))
    except (KeyError, ExtractionError):
        return {}
    titles = {}
    for sheet in sheets:
        target = relationships.get(sheet.get(f"{{{_RELATIONSHIPS}}}id"), ("", ""))[1]
        if target:
            titles[_part(folder, target)] = sheet.get("name", "")
    return titles


def _relationships(archive: zipfile.ZipFile, rels: str) -> dict[str, tuple[str, str]]:
    """A relationships part's ``Id`` to ``(Type, Target)``."""
    return {rel.get("Id"): (rel.get("Type", ""), rel.get("Target", ""))
            for rel in safe_xml(archive.read(rels)).iter("{*}Relationship")}


def _target(rels: str, folder: str, kind: str, archive: zipfile.ZipFile) -> str | None:
    """The part the first relationship of type ``kind`` in ``rels`` points at."""
    try:
        found = [target for kind_, target in _relationships(archive, rels).values() if kind_ == kind]
    except (KeyError, ExtractionError):
        return None
    return _part(folder, found[0]) if found else None


def _part(folder: str, target: str) -> str:
    """A relationship's target as a part name: absolute (``/xl/x.xml``) or relative to
    ``folder``."""
    return target.lstrip("/") if target.startswith("/") else posixpath.normpath(
        posixpath.join(folder, target))


_OFFICE_DOCUMENT = ("http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
                    "officeDocument")
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _cell_area(ref: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """``A5:D7`` as ``((5, 1), (7, 4))``; None for a reference that is not a range."""
    match = re.fullmatch(r"\$?([A-Z]+)\$?(\d+):\$?([A-Z]+)\$?(\d+)", ref.upper())
    if match is None:
        return None
    return ((int(match[2]), column_number(match[1])), (int(match[4]), column_number(match[3])))


def _read_sheets(data: bytes, budget: ContentBudget,
                 merged: Mapping[str, MergedCells]) -> tuple[list[Sheet], list[str]]:
    """Every worksheet's rows of cached values (openpyxl, read-only, ``data_only``), counted
    against ``budget`` as they are read, with its ``merged`` cells; and the names of the
    sheets left out because their part cannot be read (damaged XML, a member cut short), each
    with its reason: one damaged sheet does not lose the others."""
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    sheets: list[Sheet] = []
    damaged: list[str] = []
    try:
        for sheet in workbook.worksheets:
            try:
                sheets.append(_read_sheet(sheet, budget, merged))
            except (ExtractionError, MemoryError):
                raise
            except Exception as exc:  # noqa: BLE001 - the XML or zip layer's reason, said
                damaged.append(f"{sheet.title} ({type(exc).__name__}: {exc})")
    finally:
        workbook.close()
    return sheets, damaged


@dataclass(frozen=True)
class EmbeddedWorkbook:
    """A workbook embedded in another document (an Excel object in a deck or a Word document),
    as :func:`embedded_workbook` reads it.

    Attributes:
        tables: A table per non-empty sheet, after the sheet's name (none when the workbook
            has one sheet only: its name, ``Sheet1`` as often as not, says nothing): its rows
            as :class:`XlsxFormat` reads a file's
            cells (merged cells as :func:`~rag_pipeline.core.ingest.sheets.merged_away` reads
            them), blank rows left out, from the first column any row fills.
        damaged: The sheets left out because their part cannot be read, each with its reason.
        uncached: Its formula cells never calculated (read as empty).
    """

    tables: list[tuple[str | None, list[list[str]]]]
    damaged: list[str]
    uncached: int

    def blocks(self) -> list[tuple[str, list[list[str]] | None]]:
        """The workbook as the containing document's blocks, ``(text, rows)``: a line
        ``Sheet: <name>`` (``rows`` None) before each named sheet, then its table laid out, its
        rows (None for a sheet of one row: a line of text, a header over no rows is no table)."""
        return [block for name, rows in self.tables for block in (
            *([(f"Sheet: {name}", None)] if name is not None else []),
            (layout_table(rows, 0)[0], rows if len(rows) > 1 else None))]


def embedded_workbook(data: bytes, budget: ContentBudget) -> EmbeddedWorkbook | None:
    """An embedded workbook's sheets, counted against the containing document's ``budget``:
    its rows, cells and characters, and its expanded size (the packages a document embeds are
    held together to the limit one document's zip is: :attr:`ContentBudget.embedded_bytes`).
    None when ``data`` is no readable XLSX package (a legacy binary workbook, a damaged zip, one
    over a zip limit or past what the document's embedded packages may expand to, no sheet
    readable).

    Raises:
        ExtractionError: The containing document passed one of its limits while this was read.
    """
    try:
        check_zip(data, "embedded workbook", budget.limits)
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.getinfo("xl/workbook.xml")
            expanded = sum(member.file_size for member in archive.infolist())
        if budget.embedded_bytes + expanded > budget.limits.max_expanded_bytes:
            return None
        budget.embedded_bytes += expanded
        parts = _scan_sheet_parts(data)
    except Exception:  # noqa: BLE001 - not a package, over a zip limit, damaged: left out
        return None
    try:
        sheets, damaged = _read_sheets(data, budget, parts.merged)
    except ExtractionError:
        raise
    except Exception:  # noqa: BLE001 - openpyxl's or the zip layer's: the object is left out
        return None
    if not sheets:
        return None
    tables = []
    for sheet in sheets:
        rows = without_blank_rows([list(cells) for _, cells in merged_away(sheet.rows, sheet.merged)[0]])
        first = min((next(i for i, cell in enumerate(row) if cell.strip()) for row in rows), default=0)
        if rows:
            tables.append((sheet.name, [row[first:] for row in rows]))
    if len(tables) == 1:
        tables = [(None, tables[0][1])]
    return EmbeddedWorkbook(tables, damaged, parts.uncached)


def embedded_workbook_notes(workbooks: Sequence[EmbeddedWorkbook]) -> tuple[tuple[str, str], ...]:
    """The notes of what the embedded ``workbooks`` left out: ``sheets_unreadable`` (each
    sheet with its reason) and ``formulas_without_cached_value``, as a workbook file's."""
    damaged = [sheet for workbook in workbooks for sheet in workbook.damaged]
    uncached = sum(workbook.uncached for workbook in workbooks)
    return (*((("formulas_without_cached_value", str(uncached)),) if uncached else ()),
            *((("sheets_unreadable", "; ".join(damaged)),) if damaged else ()))


def _read_sheet(sheet, budget: ContentBudget, merged: Mapping[str, MergedCells]) -> Sheet:
    """One worksheet's rows of cached values (see :func:`_read_sheets`)."""
    sheet.reset_dimensions()
    rows: list[tuple[int, tuple[str, ...]]] = []
    for row in sheet.iter_rows():
        stored = [cell for cell in row if getattr(cell, "row", None) is not None]
        if not stored:
            continue
        width = max(cell.column for cell in stored)
        # The row is laid out as ``width`` cells, empty ones included: those are counted (a
        # cell at column XFD on each of 2,000 rows was 33 M cells and 566 MB counted as 4,000).
        budget.add(rows=1, cells=width)
        cells = [""] * width
        for cell in stored:
            cells[cell.column - 1] = cell_value_text(cell.value, cell.number_format)
        budget.add(chars=sum(len(value) for value in cells))
        rows.append((stored[0].row, tuple(cells)))
    return Sheet(sheet.title, tuple(rows), merged.get(sheet.title, {}),
                 sheet.sheet_state != "visible")


class XlsxFormat(DocumentFormat):
    """``.xlsx`` and ``.xlsm`` workbooks, ``.xltx`` and ``.xltm`` templates (macros are never
    run, only cached values read)."""

    name = "xlsx"
    suffixes = (".xlsx", ".xlsm", ".xltx", ".xltm")
    fragment_names_rows = True
    rows_name_their_columns = True

    def __init__(self, limits: OfficeLimits | None = None) -> None:
        self.limits = limits or OfficeLimits()

    def extractor(self) -> Extractor:
        return Extractor("xlsx-openpyxl", f"14+openpyxl-{library_version('openpyxl')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """One section per non-empty sheet (its name the title), one line and anchor per row.

        Raises:
            ExtractionError: Not a readable XLSX file (any error of the zip, XML or openpyxl
                layer, with its type and message), or at least as many formulas without a
                cached value as cells with a value, or over one of the format's
                :class:`OfficeLimits` (the zip's expanded size and ratio checked before reading;
                rows, cells and characters while reading).
        """
        check_zip(data, "XLSX", self.limits)
        try:
            parts = _scan_sheet_parts(data)
            formula_count, uncached = parts.formulas, parts.uncached
            comments = count_elements(data, "xl/comments", "comment")
            sheets, damaged = _read_sheets(data, ContentBudget("XLSX", self.limits), parts.merged)
        except ExtractionError:
            raise
        except MemoryError as exc:
            raise ExtractionError("out of memory reading the XLSX: too large to read") from exc
        except Exception as exc:  # zipfile, XML and openpyxl errors: each is the reason
            from openpyxl.utils.exceptions import InvalidFileException

            opening = isinstance(exc, (zipfile.BadZipFile, InvalidFileException, KeyError))
            # One line, naming what openpyxl's own message only points to ("see the exception").
            cause = exc.__cause__ or exc.__context__
            said = " ".join(str(exc).split()) + (
                f" ({type(cause).__name__}: {' '.join(str(cause).split())})" if cause else "")
            raise ExtractionError(f"unreadable XLSX: {type(exc).__name__}: {said}" + (
                " (an encrypted workbook or an old binary .xls is not an XLSX file)"
                if opening else "")) from exc
        if damaged and not sheets:
            raise ExtractionError("unreadable XLSX: no sheet can be read: " + "; ".join(damaged))
        shown = sum(1 for sheet in sheets for _, cells in sheet.rows for cell in cells if cell)
        if uncached and uncached >= shown:
            raise ExtractionError(
                f"no cached values: {uncached} of its {formula_count} formula cell(s) were never "
                f"calculated, more than the {shown} cell(s) with a value (written by a program "
                "that does not compute formulas); open and save it in a spreadsheet application")
        layout = lay_out_sheets(sheets)
        notes = layout.notes
        if uncached:
            notes += (("formulas_without_cached_value", str(uncached)),)
            spans = [(section.start, section.end) for name, section
                     in zip(layout.names, layout.sections, strict=True)
                     if name in parts.uncached_sheets]
            if spans:  # else (sheets without a row, a part no sheet names): the whole workbook
                notes += (scope_note("formulas_without_cached_value", spans),)
        if comments:
            notes += (("comments_left_out", str(comments)),)
        if damaged:
            notes += (("sheets_unreadable", "; ".join(damaged)),)
        return Extracted(title=stem, canonical_text=layout.text, sections=layout.sections,
                         anchors=layout.anchors, tables=layout.tables, notes=notes)

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#sheet=Budget&range=A12:F30`` (:func:`~rag_pipeline.core.ingest.sheets.sheet_fragment`);
        ``#char=`` when the span overlaps no row."""
        return sheet_fragment(anchors, start, end) or super().fragment(anchors, start, end)
