"""What a format's extractor returns: the canonical text, its sections, its locator anchors.

Every chunk offset in the project indexes a document's ``canonical_text``; sections and anchors
are spans of that same text, so chunking, citations and the documents table all agree on them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Extractor:
    """The stamp on every document row; bumping ``version`` re-extracts that format's files."""

    name: str
    version: str


@dataclass(frozen=True)
class Section:
    """A titled region of ``canonical_text``: ``canonical_text[start:end]`` is its body.

    Chunks never cross a section. Text outside every section (a heading line, say) is
    structure: it labels chunks but is in none of them.
    """

    title: str
    start: int
    end: int
    level: int = 1


@dataclass(frozen=True)
class Anchor:
    """A span of ``canonical_text`` and where it is in the original file.

    ``locator`` is the format's own notation: ``"page=3"``, ``"t=12.500,15.000"``,
    ``"sheet=Budget&range=A12:F30"``, ``"row=5-9"``. The format turns the anchors a chunk
    overlaps into its citation fragment (:meth:`DocumentFormat.fragment`).
    """

    start: int
    end: int
    locator: str


@dataclass(frozen=True)
class TableSpan:
    """A table in ``canonical_text``: ``canonical_text[start:end]`` is the whole table.

    A format that reads tables declares each one, so chunking cuts it one row a chunk (the
    header row with the first) and repeats ``header`` in the embedded ``text`` of every
    chunk that holds rows but not the header row itself (the way ``[Doc > Section]`` is
    prepended); a chunk's ``content`` stays the exact slice. Build one with
    :func:`rag_pipeline.core.ingest.tables.layout_table` or by hand.

    Attributes:
        start: Where the table starts (its header row, when it has one).
        end: Where its last row ends.
        header: The header row's text as it is repeated (usually
            ``canonical_text[start:header_end]``; for a table continued on a later PDF page,
            the first page's header); ``""`` for a table without a header row.
        header_end: Where the header row ends (``start`` when there is none).
        rows: Where each data row starts, ascending, each in ``[header_end, end)``; row ``i``
            (1-based, as a citation names it) runs from ``rows[i - 1]`` to the next row's
            start (or ``end``).
    """

    start: int
    end: int
    header: str
    header_end: int
    rows: tuple[int, ...] = ()

    def row_range(self, start: int, end: int) -> tuple[int, int] | None:
        """The 1-based numbers of the first and last data rows ``[start, end)`` overlaps;
        ``None`` when it overlaps none (it holds only the header, or lies outside)."""
        if not self.rows or end <= self.rows[0] or start >= self.end or end <= start:
            return None
        first = max(1, bisect_right(self.rows, start))
        last = bisect_left(self.rows, end)
        return first, last

    def shifted(self, by: int) -> TableSpan:
        """The same table ``by`` characters later (a part's table placed in a whole)."""
        return TableSpan(self.start + by, self.end + by, self.header, self.header_end + by,
                         tuple(row + by for row in self.rows))


@dataclass(frozen=True)
class Extracted:
    """One document as its format reads it.

    Attributes:
        title: The document's title.
        canonical_text: The text every offset indexes.
        sections: Titled regions, in order, never overlapping; empty means the whole text is
            one section titled ``title``.
        anchors: Locator spans, in order (pages, cues, rows, cell ranges).
        tables: The tables in the text, in order, never overlapping (:class:`TableSpan`).
        pages: A paged document's pages, as the reader saw them (the ``document_pages``
            rows): typed from the extractor to the table, never parsed back from ``notes``.
        notes: Per-document facts for ``status`` and the run's metadata, as ``(name, value)``
            pairs, e.g. ``("dropped_lines", "14")``.
    """

    title: str
    canonical_text: str
    sections: tuple[Section, ...] = ()
    anchors: tuple[Anchor, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    tables: tuple[TableSpan, ...] = ()
    pages: tuple[DocumentPage, ...] = ()


LEFT_OUT_NOTES: dict[str, str] = {
    "comments_left_out": "{} comment(s) left out (reviewers' remarks)",
    "formulas_without_cached_value": "{} formula cell(s) never calculated, so empty",
    "missing_chapters": "{} chapter(s) listed but not in the book",
    "spine_items_not_xhtml": "{} spine item(s) that are no chapter (images, SVG pages)",
    "outputs_without_text": "{} notebook output(s) without text (images, widgets)",
    "cells_left_out": "{} notebook cell(s) of unknown kinds left out",
    "outputs_cut": "{} notebook output(s) cut short (too long)",
    "tracebacks_left_out": "{} notebook error traceback(s) left out (each error's name and message kept)",
    "charset_guessed": "text read as {} (its charset missing or wrong)",
    "charset_replaced": ("{} byte sequence(s) not of the declared charset replaced by U+FFFD (a "
                         "damaged or mislabelled part)"),
    "trailing_bytes_ignored": "{} byte(s) after the compressed data ignored (no gzip member)",
    "imported_parts_left_out": ("{} part(s) a DOCX imports whole and no reader here reads (RTF, a "
                                "document, a missing part) left out"),
    "members_unnamed": "{} archive member(s) whose name is nothing once made safe left out",
    "diagrams_left_out": "{} SmartArt diagram(s) whose data could not be read left out",
    "pictures_without_alt_text": "{} picture(s) without alt text: any words in them are not read",
    "embedded_objects_left_out": ("{} embedded object(s) no reader here reads (a formula, a "
                                  "drawing, an OLE object) left out"),
    "pages_unreadable": "page(s) {} could not be loaded (a damaged PDF) and are left out",
    "pages_without_text": ("page(s) {} hold no text layer and no word OCR can read (drawings "
                           "only, or a PDF damaged when it was made)"),
    "sheets_unreadable": "sheet(s) {} could not be read (a damaged workbook part) and are left out",
    "repeats_left_out": ("{} copies of repeated rows or cells left out (past the 1,000th copy, or "
                         "past 1,000,000 characters of copies a document)"),
    "not_unicode_replaced": "{} character(s) that are not Unicode (lone surrogates) replaced by U+FFFD",
}
"""The notes that say part of a document was left out or may be read wrongly, each with the
phrase ``status`` and ``index`` show (the note's value in place of ``{}``)."""


NO_TEXT = "no text: the file is empty after extraction"


def no_text_reason(extracted: Extracted) -> str:
    """Why a document whose reading holds no text failed: :data:`NO_TEXT`, and what its
    reader left out (:func:`left_out`), which may be where its text is (a deck of one embedded
    worksheet)."""
    phrases = left_out(extracted.notes)
    return f"{NO_TEXT} ({'; '.join(phrases)})" if phrases else NO_TEXT


def left_out(notes: Iterable[tuple[str, str]]) -> list[str]:
    """The phrases of the :data:`LEFT_OUT_NOTES` among a document's notes, in their order."""
    return [LEFT_OUT_NOTES[name].format(value) for name, value in notes if name in LEFT_OUT_NOTES]


SCOPE_SUFFIX = "_spans"
"""A note ``<name>_spans`` says where in the canonical text a :data:`LEFT_OUT_NOTES` note
``<name>`` applies (a JSON list of ``[start, end]``: the sheets of a workbook holding
uncalculated formulas); a note without it applies to the whole document."""


def scope_note(name: str, spans: Iterable[tuple[int, int]]) -> tuple[str, str]:
    """The note saying where note ``name`` applies (:data:`SCOPE_SUFFIX`)."""
    return f"{name}{SCOPE_SUFFIX}", json.dumps([[start, end] for start, end in spans])


def left_out_scopes(notes: Iterable[tuple[str, str]]) -> list[tuple[tuple[int, int], ...]]:
    """Per phrase of :func:`left_out` (same order), the spans of the text it applies to;
    ``()``: the whole document."""
    notes = list(notes)
    scopes = dict(notes)
    return [tuple((start, end) for start, end in json.loads(scopes.get(f"{name}{SCOPE_SUFFIX}", "[]")))
            for name, _ in notes if name in LEFT_OUT_NOTES]


@dataclass(frozen=True)
class DocumentPage:
    """One page of a paged document: a row of the ``document_pages`` table, less its id.

    Attributes:
        page: 1-based page number.
        source: ``text`` (the file's own text layer) or ``ocr``.
        ocr_confidence: The OCR engine's mean word confidence (0-100) for an OCR page.
        chars: Characters of canonical text in the page's anchors (0 for a dropped contents page).
        flagged: The page's OCR confidence is under the format's confidence floor.
    """

    page: int
    source: str
    ocr_confidence: float | None
    chars: int
    flagged: bool = False


class ExtractionError(Exception):
    """A document could not be turned into text; the message is the reason shown to users."""


class FileVanishedError(ExtractionError):
    """A listed file was not there when it was read: deleted or moved while the run read the
    corpus (or the corpus itself went away: a folder unmounted)."""


_log = logging.getLogger(__name__)


@contextmanager
def reader_failures(kind: str) -> Iterator[None]:
    """Any exception a reader raises on one file's bytes, as the :class:`ExtractionError` that
    fails that file alone with its reason: a damaged file a library chokes on (a PDF whose page
    count is wrong, a ZIP entry named by a NUL byte, a notebook nested 100,000 deep) is one
    ``failed`` document, never a stopped run. The traceback is logged, for a reader's bug."""
    try:
        yield
    except ExtractionError:
        raise
    except MemoryError:
        raise ExtractionError(f"out of memory reading this {kind} file: too large to read") from None
    except RecursionError:
        raise ExtractionError(f"nested too deeply for the {kind} reader: the file is damaged or "
                              "built to break readers") from None
    except Exception as exc:
        _log.warning("the %s reader failed on a file", kind, exc_info=True)
        message = " ".join(str(exc).split())[:300]
        raise ExtractionError(f"the {kind} reader failed on this file ({type(exc).__name__}"
                              f"{': ' + message if message else ''}): the file may be damaged; "
                              "open and save it again, or report it") from exc


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(extracted: Extracted) -> Extracted:
    """``extracted`` with every lone surrogate (text that is no Unicode character: a notebook's
    ``"\\ud800"``, which no table can store as UTF-8) replaced by U+FFFD in its title, text,
    section titles and table headers, one for one, so every offset holds; a note counts them."""
    texts = (extracted.title, extracted.canonical_text,
             *(s.title for s in extracted.sections), *(t.header for t in extracted.tables))
    if not any(_SURROGATE.search(text) for text in texts):
        return extracted

    def fixed(text: str) -> str:
        return _SURROGATE.sub("\ufffd", text)

    return dataclasses.replace(
        extracted, title=fixed(extracted.title), canonical_text=fixed(extracted.canonical_text),
        sections=tuple(dataclasses.replace(s, title=fixed(s.title)) for s in extracted.sections),
        tables=tuple(dataclasses.replace(t, header=fixed(t.header)) for t in extracted.tables),
        notes=(*extracted.notes, ("not_unicode_replaced",
                                  str(len(_SURROGATE.findall(extracted.canonical_text))))))
