"""Made-here corpora for the extraction benchmark: long tables and needles, one file per format.

Two registries, one entry per format, so a new format adds its writer next to its reader:

- :data:`LONG_TABLE_WRITERS`: ``format -> writer(headers, rows) -> (file name, bytes)``, a file
  holding one table of those rows under those headers. Scored by :func:`table_header_share`:
  the share of rows whose chunk (the ``header`` chunker, 512 characters) names every column
  header in its embedded ``text``, with the format's table declarations and without them.
- :data:`NEEDLE_CORPORA`: ``format -> writer() -> (file name, bytes, needles)``, a file and
  sentences it holds. Scored by :func:`needle_share`: needles quoted whole by one chunk's
  ``content`` (white space collapsed).

Run with the rest: ``python -m rag_pipeline.benchmarks.extraction --made-here-only``.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingSettings, ChunkingStrategy, chunk_document
from rag_pipeline.core.ingest.extracted import Extracted
from rag_pipeline.core.ingest.formats import format_for

HEADERS = ("Site", "Lead", "Duration")
TARGET_CHARS = 512


def table_rows(count: int) -> list[tuple[str, ...]]:
    """``count`` rows whose first cell is unique (``Delta flats 17``)."""
    return [(f"Delta flats {n}", "Tomas Ruiz", f"{n} hours") for n in range(1, count + 1)]


def _markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    lines = ["# Shifts", "", "Who works where.", "", "| " + " | ".join(headers) + " |",
             "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "shifts.md", ("\n".join(lines) + "\n").encode()


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in rows)
    return "shifts.html", (f"<html><head><title>Shifts</title></head><body><h1>Shifts</h1>"
                           f"<p>Who works where.</p><table><thead><tr>{head}</tr></thead>"
                           f"<tbody>{body}</tbody></table></body></html>").encode()


def _docx_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    import docx

    document = docx.Document()
    document.add_heading("Shifts", level=1)
    document.add_paragraph("Who works where.")
    table = document.add_table(rows=len(rows) + 1, cols=len(headers))
    for r, row in enumerate([tuple(headers), *rows]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return "shifts.docx", buffer.getvalue()


def _pdf_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.start_section("Shifts")
    pdf.set_font("Helvetica", style="B", size=16)
    pdf.cell(0, 10, "Shifts", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "Who works where.", new_x="LMARGIN", new_y="NEXT")
    with pdf.table(first_row_as_headings=True) as table:
        for row in [tuple(headers), *rows]:
            cells = table.row()
            for value in row:
                cells.cell(value)
    return "shifts.pdf", bytes(pdf.output())


def _xlsx_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.active.title = "Shifts"
    workbook.active.append(list(headers))
    for row in rows:
        workbook.active.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return "shifts.xlsx", buffer.getvalue()


def _pptx_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Shifts"
    shape = slide.shapes.add_table(len(rows) + 1, len(headers), Inches(0.5), Inches(1.5),
                                   Inches(9), Inches(5))
    for r, row in enumerate([tuple(headers), *rows]):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    buffer = io.BytesIO()
    deck.save(buffer)
    return "shifts.pptx", buffer.getvalue()


def _pptx_slides_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
                       per_slide: int = 20) -> tuple[str, bytes]:
    """The rows over several slides, ``per_slide`` a slide, each slide's table under the
    header row again (as a deck continues a long table)."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for first in range(0, len(rows), per_slide):
        part = rows[first:first + per_slide]
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = "Shifts" if first == 0 else "Shifts (continued)"
        shape = slide.shapes.add_table(len(part) + 1, len(headers), Inches(0.5), Inches(1.5),
                                       Inches(9), Inches(5))
        for r, row in enumerate([tuple(headers), *part]):
            for c, value in enumerate(row):
                shape.table.cell(r, c).text = value
    buffer = io.BytesIO()
    deck.save(buffer)
    return "shifts.pptx", buffer.getvalue()


def odf_grid(rows: Sequence[Sequence[str]], name: str = "Shifts") -> object:
    """An OpenDocument table called ``name`` of these rows, one paragraph a cell."""
    from odf import table, text

    grid = table.Table(name=name)
    for values in rows:
        row = table.TableRow()
        for value in values:
            cell = table.TableCell()
            cell.addElement(text.P(text=value))
            row.addElement(cell)
        grid.addElement(row)
    return grid


def _odt_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    from odf import text
    from odf.opendocument import OpenDocumentText

    document = OpenDocumentText()
    document.text.addElement(text.H(outlinelevel=1, text="Shifts"))
    document.text.addElement(text.P(text="Who works where."))
    document.text.addElement(odf_grid([tuple(headers), *rows]))
    buffer = io.BytesIO()
    document.write(buffer)
    return "shifts.odt", buffer.getvalue()


def _odp_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    from odf import draw, text
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation

    document = OpenDocumentPresentation()
    page = draw.Page(name="page1", masterpagename="")
    title = draw.Frame()
    title.setAttrNS(PRESENTATIONNS, "class", "title")
    box = draw.TextBox()
    box.addElement(text.P(text="Shifts"))
    title.addElement(box)
    page.addElement(title)
    frame = draw.Frame()
    frame.addElement(odf_grid([tuple(headers), *rows]))
    page.addElement(frame)
    document.presentation.addElement(page)
    buffer = io.BytesIO()
    document.write(buffer)
    return "shifts.odp", buffer.getvalue()


def _ods_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    from odf.opendocument import OpenDocumentSpreadsheet

    document = OpenDocumentSpreadsheet()
    document.spreadsheet.addElement(odf_grid([tuple(headers), *rows]))
    buffer = io.BytesIO()
    document.write(buffer)
    return "shifts.ods", buffer.getvalue()


def _rst_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    lines = ["Shifts", "======", "", "Who works where.", "", ".. list-table::",
             "   :header-rows: 1", ""]
    for row in [tuple(headers), *rows]:
        lines += [f"   * - {row[0]}", *(f"     - {value}" for value in row[1:])]
    return "shifts.rst", ("\n".join(lines) + "\n").encode()


def _epub_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[str, bytes]:
    import zipfile

    _, chapter = _html_table(headers, rows)
    package = ('<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
               'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Shifts</dc:title></metadata>'
               '<manifest><item id="c1" href="shifts.xhtml" media-type="application/xhtml+xml"/>'
               '</manifest><spine><itemref idref="c1"/></spine></package>')
    container = ('<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                 '<rootfiles><rootfile full-path="OEBPS/content.opf" '
                 'media-type="application/oebps-package+xml"/></rootfiles></container>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/content.opf", package)
        archive.writestr("OEBPS/shifts.xhtml", chapter)
    return "shifts.epub", buffer.getvalue()


LONG_TABLE_WRITERS: dict[str, Callable[[Sequence[str], Sequence[Sequence[str]]], tuple[str, bytes]]] = {
    "markdown": _markdown_table,
    "html": _html_table,
    "docx": _docx_table,
    "pdf": _pdf_table,
    "xlsx": _xlsx_table,
    "pptx": _pptx_table,
    "pptx, over 3 slides": _pptx_slides_table,
    "odt": _odt_table,
    "odp": _odp_table,
    "ods": _ods_table,
    "rst": _rst_table,
    "epub": _epub_table,
}
"""One long-table writer per format; a new format's module adds its own entry here."""


NEEDLES = (
    "The night shift at Delta flats hands its keys to the porter before six.",
    "Every inspection of the boiler room is written into the blue ledger.",
    "A tenant who reports a leak after midnight calls the emergency number first.",
)


def _paragraph_texts() -> list[str]:
    filler = "Routine notes about the estate follow here, with nothing in them to find. " * 4
    return [f"{filler}{needle} {filler}" for needle in NEEDLES]


def _markdown_needles() -> tuple[str, bytes, Sequence[str]]:
    body = "\n\n".join(_paragraph_texts())
    return "estate.md", f"# Estate\n\n{body}\n".encode(), NEEDLES


def _html_needles() -> tuple[str, bytes, Sequence[str]]:
    body = "".join(f"<p>{p}</p>" for p in _paragraph_texts())
    return "estate.html", f"<html><body><h1>Estate</h1>{body}</body></html>".encode(), NEEDLES


def _docx_needles() -> tuple[str, bytes, Sequence[str]]:
    import docx

    document = docx.Document()
    document.add_heading("Estate", level=1)
    for paragraph in _paragraph_texts():
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return "estate.docx", buffer.getvalue(), NEEDLES


NEEDLE_CORPORA: dict[str, Callable[[], tuple[str, bytes, Sequence[str]]]] = {
    "markdown": _markdown_needles,
    "html": _html_needles,
    "docx": _docx_needles,
}
"""One needles file per format; a new format's module adds its own entry here."""


def _extract(name: str, data: bytes) -> Extracted:
    fmt = format_for(Path(name))
    if fmt is None:
        raise ValueError(f"no format reads {name}")
    return fmt.extract(data, Path(name).stem)


def _chunks(extracted: Extracted, with_tables: bool = True) -> list:
    return chunk_document("made-here", extracted.title, extracted.canonical_text,
                          ChunkingStrategy.HEADER, ChunkingSettings(target_chars=TARGET_CHARS),
                          sections=extracted.sections,
                          tables=extracted.tables if with_tables else ())


@dataclass(frozen=True)
class TableScore:
    """One format's long table: rows whose chunk names every header, with and without the
    table declared to the chunker."""

    format: str
    rows: int
    chunks: int
    named: int
    named_undeclared: int
    tables: int


def table_header_share(fmt: str, rows: int = 60) -> TableScore:
    """Writes a ``rows``-row table in ``fmt``, extracts and chunks it; a row counts when the one
    chunk whose content holds its first cell names every header in its embedded text."""
    name, data = LONG_TABLE_WRITERS[fmt](HEADERS, table_rows(rows))
    extracted = _extract(name, data)

    def named(chunks: list) -> int:
        count = 0
        for number in range(1, rows + 1):
            key = f"Delta flats {number}"
            holding = [c for c in chunks if any(
                c.content[i + len(key):i + len(key) + 1] in ("", " ", "|", "\t", "\n")
                for i in _find_all(c.content, key))]
            count += len(holding) == 1 and all(h in holding[0].text for h in HEADERS)
        return count

    chunks = _chunks(extracted)
    undeclared = _chunks(dataclasses.replace(extracted, tables=()), with_tables=False)
    return TableScore(fmt, rows, len(chunks), named(chunks), named(undeclared),
                      len(extracted.tables))


def _find_all(text: str, key: str) -> list[int]:
    found, start = [], text.find(key)
    while start >= 0:
        found.append(start)
        start = text.find(key, start + 1)
    return found


@dataclass(frozen=True)
class NeedleScore:
    format: str
    needles: int
    quoted: int


def needle_share(fmt: str) -> NeedleScore:
    """The format's needles quoted whole by one chunk's content (white space collapsed)."""
    name, data, needles = NEEDLE_CORPORA[fmt]()
    contents = [" ".join(c.content.split()) for c in _chunks(_extract(name, data))]
    return NeedleScore(fmt, len(needles),
                       sum(1 for needle in needles if any(needle in c for c in contents)))


__all__ = ["LONG_TABLE_WRITERS", "NEEDLE_CORPORA", "NeedleScore", "TableScore", "needle_share",
           "table_header_share"]
