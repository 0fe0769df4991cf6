"""PPTX: one section per slide titled by its title, its text frames, tables and notes; cited ``#slide=N``.

Read with python-pptx (MIT). A slide is its title line (the text of its title placeholder, one
whose type is a title's: a layout's first placeholder holding the body is body; else ``Slide
N``) outside every section, then its body: each shape's text frame (group shapes
opened) as a block of lines, one per non-empty paragraph, indented two spaces per outline
level; each table one line per row, cells joined by ``" | "``, the header row first, a
merged-away cell an empty place, blank rows left out
(:func:`~rag_pipeline.core.ingest.tables.layout_table`), declared as a
:class:`~rag_pipeline.core.ingest.extracted.TableSpan` so a long table keeps its header row
in every chunk's embedded text; each chart a line ``Chart: <its title>`` and its data as such
a table (``Category | <series name> | ...``, a row per category); each SmartArt diagram (an org
chart, a process) its nodes' text, a line per node, from its data part; each embedded Excel
workbook a table per sheet (a legacy binary workbook, any other embedded or linked object
left out, counted: ``embedded_objects_left_out``); each picture's alt text a line ``Picture:
<alt text>`` (a picture without one is counted: ``pictures_without_alt_text``); then the
speaker notes, as a block
starting ``Notes: ``. Blocks are separated by blank lines. Shapes are read in the slide's
order (the order a screen reader follows). Each slide, title included, is one anchor
``slide=N`` (1-based, hidden slides counted, as PowerPoint numbers them; a hidden slide is
read, and counted in the note ``hidden_slides``); comments are left out, counted
(``comments_left_out``). Before anything is parsed the package is checked as a zip against
:class:`~rag_pipeline.core.ingest.office_zip.OfficeLimits`
(:func:`~rag_pipeline.core.ingest.office_zip.check_zip`, as DOCX and XLSX are) and its slide
count against :data:`MAX_SLIDES`.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag_pipeline.core.ingest.anchor_spans import unit_fragment
from rag_pipeline.core.ingest.extracted import (
    Anchor,
    Extracted,
    ExtractionError,
    Extractor,
)
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.formats.xlsx import EmbeddedWorkbook, embedded_workbook_notes
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.office_zip import (
    ContentBudget,
    OfficeLimits,
    as_plain_document,
    check_zip,
    count_elements,
)
from rag_pipeline.core.ingest.slides import MAX_SLIDES, Block, lay_out_slides
from rag_pipeline.core.ingest.tables import layout_table, without_blank_rows

if TYPE_CHECKING:
    from pptx.shapes.base import BaseShape

_PRESENTATION_ML = ("http://schemas.openxmlformats.org/presentationml/2006/main",
                    "http://purl.oclc.org/ooxml/presentationml/main")
"""PresentationML's namespace, transitional and strict: a slide list's ``sldId`` elements are
in it, whatever its prefix (a section's ``p14:sldId`` is in PowerPoint 2010's, and lists each
slide again)."""


def _slide_count(data: bytes) -> int:
    """The slides ``ppt/presentation.xml`` lists: its ``sldId`` elements of PresentationML,
    whatever their prefix (a deck binding the namespace to ``pres:`` passed a count of the
    literal ``<p:sldId``; counted in any namespace, a deck with sections counted each slide
    twice)."""
    from lxml import etree

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.getinfo("ppt/presentation.xml")
        return count_elements(data, "ppt/presentation.xml", "sldId", _PRESENTATION_ML)
    except KeyError as exc:
        raise ExtractionError("unreadable PPTX: no ppt/presentation.xml part") from exc
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            ValueError, etree.XMLSyntaxError) as exc:
        raise ExtractionError(f"unreadable PPTX: {type(exc).__name__}: {exc}") from exc


def _shapes(shapes: Iterator[BaseShape]) -> Iterator[BaseShape]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shapes(iter(shape.shapes))
        else:
            yield shape


_DIAGRAM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_DRAWING = "http://schemas.openxmlformats.org/drawingml/2006/main"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


class _Diagrams:
    """The SmartArt diagrams of one deck: each data part read once (1,000 frames naming one
    part made a 34 KB deck a billion characters), their text counted against the deck's
    character limit, and a diagram whose data cannot be read (an external link, a missing
    part, not XML) left out and counted (``diagrams_left_out``)."""

    def __init__(self, budget: ContentBudget) -> None:
        self.seen: set[str] = set()
        self.budget = budget
        self.left_out = 0

    def text(self, slide: object, shape: object) -> str | None:
        """A diagram's nodes' text, a line per node in its data part's order (the connections'
        own points hold none); ``""`` for a part read before or left out; None for a shape
        that is no diagram.

        Raises:
            ExtractionError: The deck's text passed its character limit.
        """
        from rag_pipeline.core.ingest.safe_xml import safe_xml

        ids = shape._element.find(f".//{{{_DIAGRAM}}}relIds")  # no python-pptx API for diagrams
        if ids is None:
            return None
        try:
            part = slide.part.related_part(ids.get(f"{{{_RELATIONSHIPS}}}dm") or "")
            if str(part.partname) in self.seen:
                return ""
            self.seen.add(str(part.partname))
            data = safe_xml(part.blob)
        except (KeyError, ValueError, ExtractionError):  # missing, external, not XML
            self.left_out += 1
            return ""
        lines = []
        for point in data.iter(f"{{{_DIAGRAM}}}pt"):
            if point.get("type", "node") in ("node", "asst"):
                for paragraph in point.iter(f"{{{_DRAWING}}}p"):
                    # An entity left unresolved is a child of its a:t: the text after it is
                    # its tail.
                    line = " ".join("".join((t.text or "") + "".join(c.tail or "" for c in t)
                                            for t in paragraph.iter(f"{{{_DRAWING}}}t")).split())
                    if line:
                        lines.append(line)
        text = "\n".join(lines)
        self.budget.add(chars=len(text))
        return text


@dataclass
class _Pictures:
    """A deck's pictures without alt text (their words, if any, are in no text)."""

    without_alt_text: int = 0


def _is_picture_placeholder(shape: Any) -> bool:
    """Whether ``shape`` is a placeholder a picture filled (``p:pic``, no text frame)."""
    return shape.is_placeholder and shape._element.tag.endswith("}pic")


_TITLE_PLACEHOLDERS = ("TITLE", "CENTER_TITLE", "VERTICAL_TITLE")


def _title_shape(slide: Any) -> Any:
    """The slide's title placeholder: ``shapes.title`` when its type is a title's (python-pptx
    returns a layout's first placeholder whatever it is: a body holding the slide's text)."""
    shape = slide.shapes.title
    if shape is None or shape.placeholder_format.type is None:
        return shape
    return shape if shape.placeholder_format.type.name in _TITLE_PLACEHOLDERS else None


def _blocks(slide: object, title_shape: object, diagrams: _Diagrams, objects: list[str],
            workbooks: _Workbooks, pictures: _Pictures) -> list[Block]:
    """The slide's blocks in order as ``(text, rows)``: ``rows`` are a table's cells (blank
    rows left out), ``None`` for a text frame or the notes. An embedded Excel workbook is a
    table per sheet (:class:`_Workbooks`); any other embedded or linked object (a Word
    document, a legacy binary workbook, a linked file) is left out, its kind added to
    ``objects``."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    blocks: list[Block] = []
    for shape in _shapes(iter(slide.shapes)):
        if shape.shape_type in (MSO_SHAPE_TYPE.EMBEDDED_OLE_OBJECT, MSO_SHAPE_TYPE.LINKED_OLE_OBJECT):
            workbook = (workbooks.blocks(shape)
                        if shape.shape_type == MSO_SHAPE_TYPE.EMBEDDED_OLE_OBJECT else None)
            if workbook is None:
                objects.append(shape.ole_format.prog_id or "")
            else:
                blocks.extend(workbook)
            continue
        if shape is title_shape or (title_shape is not None and shape.shape_id == title_shape.shape_id):
            continue
        rows = None
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = without_blank_rows([["" if cell.is_spanned else cell.text for cell in row.cells]
                                       for row in shape.table.rows])
            text = layout_table(rows, 0)[0]
        elif getattr(shape, "has_chart", False) and shape.has_chart:
            blocks.extend(_chart_blocks(shape.chart))
            continue
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            text = "\n".join(line for paragraph in shape.text_frame.paragraphs
                             for line in _paragraph_lines(paragraph))
        elif (diagram := diagrams.text(slide, shape)) is not None:
            text = diagram
        elif shape.shape_type == MSO_SHAPE_TYPE.PICTURE or _is_picture_placeholder(shape):
            alt = " ".join(" ".join(shape._element.xpath(  # python-pptx reads no alt text
                "./p:nvPicPr/p:cNvPr/@descr")).split())
            if not alt:
                pictures.without_alt_text += 1
                continue
            text = f"Picture: {alt}"
        else:
            continue
        if text.strip():
            blocks.append((text, rows))
    if slide.has_notes_slide:
        notes_frame = slide.notes_slide.notes_text_frame
        notes = " ".join(notes_frame.text.split()) if notes_frame is not None else ""
        if notes:
            blocks.append((f"Notes: {notes}", None))
    return blocks


class _Workbooks:
    """The Excel workbooks a deck embeds, each part read once (however many objects show it),
    a table per sheet (:func:`~rag_pipeline.core.ingest.formats.xlsx.embedded_workbook`: its
    first row the header; a sheet of one row a line of text; a line ``Sheet: <name>`` before
    each of a workbook of several), counted against the deck's
    limits; what each left out is kept for the deck's notes (``read``)."""

    def __init__(self, budget: ContentBudget) -> None:
        self.seen: set[str] = set()
        self.budget = budget
        self.read: list[EmbeddedWorkbook] = []

    def blocks(self, shape: Any) -> list[Block] | None:
        """The tables of the workbook the embedded object ``shape`` holds (none for one read
        before); None when it holds no readable XLSX package (a legacy binary workbook, a
        Word document, a damaged package, a part missing).

        Raises:
            ExtractionError: The deck passed one of its limits while the workbook was read.
        """
        from rag_pipeline.core.ingest.formats.xlsx import embedded_workbook

        try:  # python-pptx names no embedded object's part: its relationship, from the XML
            part = shape.part.related_part(shape._element.xpath(".//p:oleObj/@r:id")[0])
        except (IndexError, KeyError, ValueError):
            return None
        if str(part.partname) in self.seen:
            return []
        self.seen.add(str(part.partname))
        workbook = embedded_workbook(part.blob, self.budget)
        if workbook is None:
            return None
        self.read.append(workbook)
        return workbook.blocks()


def _cached_points(series: object, tag: str) -> tuple[dict[int, str], str]:
    """The cached points of a series' ``c:val``, ``c:xVal`` or ``c:yVal`` (by point index, as
    text) and their number format (``General`` when none is given)."""
    element = series._element  # python-pptx has no public reader of the X values' cache
    points = {int(point.get("idx")): "".join(_xpath(point, "./c:v/text()"))
              for point in _xpath(element, f"./c:{tag}//c:pt")}
    formats = _xpath(element, f"./c:{tag}//c:formatCode/text()")
    return points, (formats[0] if formats else "General")


_EXCEL_EPOCH = dt.datetime(1899, 12, 30)
"""Day 0 of the serial dates a chart caches from day 61, 1 March 1900, on (the 1900 date
system: day 60 is Excel's 29 February 1900, a day that never was, so days 1 to 59 are one day
later than this epoch counts: day 1 is 1 January 1900)."""
_FICTITIOUS_LEAP_DAY = 60
_LAST_SERIAL_DAY = 2_958_465
"""31 December 9999, the last date a serial number holds."""


def _paragraph_lines(paragraph) -> list[str]:
    """A text frame paragraph's lines: a line break (``a:br``) ends a line, a line's leading
    spaces and tabs are kept (code on a slide keeps its indentation), the other white space
    after its first word is collapsed to single spaces but a tab kept (``Q1<tab>12 %`` as
    DOCX keeps it), and a blank line is left out; each line is indented two spaces per
    outline level."""
    indent = "  " * paragraph.level
    return [indent + line[:len(line) - len(line.lstrip())] + _SPACES.sub(" ", line.strip())
            for line in paragraph.text.split("\v") if line.strip()]


_SPACES = re.compile(r"[^\S\t]+")
"""A run of white space but tabs."""


def _point_text(text: str, number_format: str) -> str:
    """A cached chart value as a spreadsheet shows it: numbers by ``cell_value_text``, a serial
    date under a date format as that date (``1/5/02`` for 37261 under ``m/d/yy``)."""
    from rag_pipeline.core.ingest.number_format import shown_date
    from rag_pipeline.core.ingest.sheets import cell_value_text

    try:
        number = float(text)
    except ValueError:
        return " ".join(text.split())
    shown = cell_value_text(number, number_format)
    if shown != cell_value_text(number) or not 0 < number <= _LAST_SERIAL_DAY \
            or int(number) == _FICTITIOUS_LEAP_DAY:
        return shown
    days = number + 1 if number < _FICTITIOUS_LEAP_DAY else number
    return shown_date(_EXCEL_EPOCH + dt.timedelta(days=days), number_format) or shown


_CHART = "http://schemas.openxmlformats.org/drawingml/2006/chart"


def _xpath(element: Any, path: str) -> Any:
    """``element.xpath(path)`` with ``c:`` bound to DrawingML charts, on any element (one of a
    plot type python-pptx has no class for does not bind it)."""
    from lxml import etree

    return etree._Element.xpath(element, path, namespaces={"c": _CHART})


@dataclass(frozen=True)
class _SeriesXml:
    """A series read from its ``c:ser`` element: its name (``c:tx``'s cached text) and the
    element (:func:`_cached_points` reads its values)."""

    _element: Any

    @property
    def name(self) -> str:
        return "".join(_xpath(self._element, "./c:tx//c:v/text()"))


def _plots(chart: Any) -> Iterator[tuple[list[Any], list[str]]]:
    """Each plot of a chart as its series and its category labels. python-pptx reads the
    plot types it knows; a 3-D pie, bar or line chart, a surface, stock or bar-of-pie chart
    (which it refuses with ``ValueError`` or ``NotImplementedError``) is read from its XML:
    the ``c:ser`` elements, the categories of the first one (the leaf level of a multi-level
    axis)."""
    for index, xml in enumerate(chart._chartSpace.plotArea.xCharts):
        elements = _xpath(xml, "./c:ser")
        try:
            plot = chart.plots[index]
            series, labels = list(plot.series), list(plot.categories)
        except (ValueError, NotImplementedError):
            series = [_SeriesXml(element) for element in elements]
            labels = _category_labels(elements[0]) if elements else []
        formats = _xpath(elements[0], "./c:cat//c:formatCode/text()") if elements else []
        yield series, [_point_text(str(label), formats[0]) for label in labels] if formats else labels


def _category_labels(series: Any) -> list[str]:
    """The category labels a ``c:ser`` element caches (``c:cat``; the first level of a
    multi-level axis, its leaves), by point index up to the last one cached, ``""`` for a
    missing point (the declared ``c:ptCount`` is not trusted: a 30 KB deck can declare
    millions)."""
    caches = (_xpath(series, "./c:cat/c:multiLvlStrRef/c:multiLvlStrCache/c:lvl[1]")
              or _xpath(series, "./c:cat/*/c:strCache | ./c:cat/*/c:numCache")
              or _xpath(series, "./c:cat/c:strLit | ./c:cat/c:numLit"))
    if not caches:
        return []
    points = {int(point.get("idx")): "".join(_xpath(point, "./c:v/text()"))
              for point in _xpath(caches[0], "./c:pt")}
    return [points.get(i, "") for i in range(max(points, default=-1) + 1)]


def _chart_blocks(chart: object) -> list[Block]:
    """A chart's title (``Chart: title``), then its data as tables: for a chart by category, a
    row per category and a column per series (its name the header); for a scatter or bubble
    chart (no categories), a row per point, its X value first, one table per series. Values
    are written as the chart's number format shows them."""
    title = ""
    if chart.has_title and chart.chart_title.has_text_frame:
        title = " ".join(chart.chart_title.text_frame.text.split())
    blocks: list[Block] = [(f"Chart: {title}" if title else "Chart", None)]
    for series, labels in _plots(chart):
        names = [(s.name or f"Series {n}").strip() for n, s in enumerate(series, 1)]
        categories = [" ".join(str(label).split()) for label in labels]
        tables: list[list[list[str]]] = []
        if categories or not series:
            columns = []
            for one in series:
                points, number_format = _cached_points(one, "val")
                columns.append({i: _point_text(v, number_format) for i, v in points.items()})
            # Up to the last category that holds a label or a value: a declared point count
            # of millions (python-pptx's categories follow it) adds no empty rows.
            labelled = max((i for i, label in enumerate(categories) if label), default=-1)
            count = max([labelled + 1, *(max(c, default=-1) + 1 for c in columns)], default=0)
            tables.append([["Category", *names], *(
                [categories[i] if i < len(categories) else str(i + 1),
                 *(column.get(i, "") for column in columns)] for i in range(count))])
        else:
            for name, one in zip(names, series, strict=True):
                xs, x_format = _cached_points(one, "xVal")
                ys, y_format = _cached_points(one, "yVal")
                tables.append([["X", name], *(
                    [_point_text(xs.get(i, ""), x_format), _point_text(ys.get(i, ""), y_format)]
                    for i in sorted(set(xs) | set(ys)))])
        for table in tables:
            rows = without_blank_rows(table)
            if len(rows) > 1:
                blocks.append((layout_table(rows, 0)[0], rows))
    return blocks


class PptxFormat(DocumentFormat):
    """``.pptx`` decks (PowerPoint 2007 and later, LibreOffice Impress, Google Slides exports),
    and their macro-enabled, slide-show and template kinds (``.pptm``, ``.ppsx``, ``.ppsm``,
    ``.potx``, ``.potm``: the same parts)."""

    name = "pptx"
    suffixes = (".pptx", ".pptm", ".ppsx", ".ppsm", ".potx", ".potm")

    def __init__(self, limits: OfficeLimits | None = None) -> None:
        self.limits = limits or OfficeLimits()

    def extractor(self) -> Extractor:
        return Extractor("pptx-python-pptx", f"13+python-pptx-{library_version('python-pptx')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """Slides in order, a section and an anchor each (the module docstring).

        Raises:
            ExtractionError: Not a readable PPTX file, a zip bomb, or over :data:`MAX_SLIDES`.
        """
        import pptx

        check_zip(data, "PPTX", self.limits)
        count = _slide_count(data)
        if count > MAX_SLIDES:
            raise ExtractionError(f"{count} slides: over the limit of {MAX_SLIDES} per deck")
        try:
            deck = pptx.Presentation(io.BytesIO(as_plain_document(data)))
            slides = []
            hidden: list[int] = []
            budget = ContentBudget("PPTX", self.limits)
            diagrams, workbooks = _Diagrams(budget), _Workbooks(budget)
            objects: list[str] = []
            pictures = _Pictures()
            for number, slide in enumerate(deck.slides, start=1):
                if slide.element.get("show") in ("0", "false"):
                    hidden.append(number)
                title_shape = _title_shape(slide)
                title = " ".join(title_shape.text.split()) if title_shape is not None else ""
                slides.append((number, title or f"Slide {number}",
                               _blocks(slide, title_shape, diagrams, objects, workbooks, pictures)))
            core_title = (deck.core_properties.title or "").strip()
            comments = count_elements(data, "ppt/comments/", "cm")
        except ExtractionError:
            raise
        except Exception as exc:  # zipfile, XML and python-pptx errors: each is the reason
            raise ExtractionError(f"unreadable PPTX: {type(exc).__name__}: {exc}") from exc
        canonical, sections, anchors, tables = lay_out_slides(slides, hidden)
        first_title = next((title for number, title, _ in slides if title != f"Slide {number}"), None)
        return Extracted(title=core_title or first_title or stem, canonical_text=canonical,
                         sections=sections, anchors=anchors, tables=tables,
                         notes=(("slides", str(len(slides))),
                                *((("hidden_slides", str(len(hidden))),) if hidden else ()),
                                *((("comments_left_out", str(comments)),) if comments else ()),
                                *((("diagrams_left_out", str(diagrams.left_out)),)
                                  if diagrams.left_out else ()),
                                *((("embedded_objects_left_out", str(len(objects))),)
                                  if objects else ()),
                                *((("pictures_without_alt_text", str(pictures.without_alt_text)),)
                                  if pictures.without_alt_text else ()),
                                *embedded_workbook_notes(workbooks.read)))

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#slide=N`` for a span on one slide, ``#slide=N-M`` over several; ``#char=``
        without slides."""
        return unit_fragment(anchors, start, end) or super().fragment(anchors, start, end)
