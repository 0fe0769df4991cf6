"""EPUB: the spine's chapters in order, each read by the HTML reader; cited by chapter and characters.

An EPUB is a zip (checked first: :func:`~rag_pipeline.core.ingest.office_zip.check_zip`)
whose ``META-INF/container.xml`` names the package document (OPF); its ``spine`` lists the
chapters in reading order, its ``manifest`` their files. The XML is parsed by lxml with
entities unresolved and the network off (no XXE). Each XHTML chapter is rendered by
:func:`~rag_pipeline.core.ingest.formats.html.extract_html` (chrome rules included), its
headings becoming sections (the first ``<h1>``'s body titled by the chapter, a later one's
by itself) and its tables declared
as the HTML reader declares them; chapters are joined by blank lines. Each chapter is one
anchor ``chapter=<its path in the zip>``; a span cites ``#chapter=OEBPS/ch1.xhtml&char=12,80``,
the characters counted from the start of that chapter's text. A book whose chapters are
encrypted (listed in ``META-INF/encryption.xml``: DRM) fails with that reason; one whose only
encrypted files are its fonts (font obfuscation) is read.
"""

from __future__ import annotations

import dataclasses
import io
import posixpath
import zipfile
import zlib
from bisect import bisect_right
from collections.abc import Sequence
from urllib.parse import quote, unquote

from rag_pipeline.core.ingest.extracted import (
    Anchor,
    Extracted,
    ExtractionError,
    Extractor,
    Section,
    TableSpan,
)
from rag_pipeline.core.ingest.formats.base import DocumentFormat
from rag_pipeline.core.ingest.formats.html import extract_html
from rag_pipeline.core.ingest.library import library_version
from rag_pipeline.core.ingest.office_zip import OfficeLimits, check_zip
from rag_pipeline.core.ingest.safe_xml import safe_xml

MAX_CHAPTERS = 2000
"""A spine with more items fails unread."""

_XHTML = ("application/xhtml+xml", "text/html")
_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container", "opf": "http://www.idpf.org/2007/opf",
       "dc": "http://purl.org/dc/elements/1.1/"}


def _spine(archive: zipfile.ZipFile) -> tuple[str, list[str], int]:
    """The book's title, its spine's XHTML files (paths in the zip) in reading order, each once
    (an item that names a place in a file, ``ch1.xhtml#o8``, names the file), and how many
    spine items are none (no manifest item, or another media type: an SVG or image page)."""
    try:
        container = safe_xml(archive.read("META-INF/container.xml"))
    except KeyError as exc:
        raise ExtractionError("unreadable EPUB: no META-INF/container.xml") from exc
    rootfile = container.find(".//c:rootfile", _NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise ExtractionError("unreadable EPUB: container.xml names no package document")
    opf_path = rootfile.get("full-path")
    try:
        package = safe_xml(archive.read(opf_path))
    except KeyError as exc:
        raise ExtractionError(f"unreadable EPUB: the package document {opf_path} is missing") from exc
    base = posixpath.dirname(opf_path)
    manifest = {item.get("id"): item for item in package.iterfind(".//opf:manifest/opf:item", _NS)}
    chapters: dict[str, None] = {}
    unread = 0
    for itemref in package.iterfind(".//opf:spine/opf:itemref", _NS):
        item = manifest.get(itemref.get("idref"))
        href = (item.get("href") or "").split("#", 1)[0] if item is not None else ""
        if item is None or item.get("media-type") not in _XHTML or not href:
            unread += 1
            continue
        # Items that point into a file (``ch1.xhtml#o8``) name the file: it is read once.
        chapters.setdefault(posixpath.normpath(posixpath.join(base, unquote(href))))
    title_node = package.find(".//dc:title", _NS)
    title = " ".join((title_node.text or "").split()) if title_node is not None else ""
    return title, list(chapters), unread


def _encrypted(archive: zipfile.ZipFile) -> set[str]:
    """The members ``META-INF/encryption.xml`` says are encrypted: a book's chapters under DRM,
    or only its fonts (IDPF or Adobe font obfuscation, common in books with embedded fonts:
    the chapters read as any book's). A list that cannot be read is taken to lock every
    member."""
    try:
        root = safe_xml(archive.read("META-INF/encryption.xml"))
    except ExtractionError:
        return set(archive.namelist())
    return {posixpath.normpath(unquote(reference.get("URI") or "").lstrip("/"))
            for reference in root.iter("{http://www.w3.org/2001/04/xmlenc#}CipherReference")}


def _read_book(data: bytes, stem: str) -> Extracted:
    """The book's chapters in spine order (a zip error inside is the caller's to report)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        title, chapters, unread = _spine(archive)
        if "META-INF/encryption.xml" in names and (locked := _encrypted(archive) & set(chapters)):
            raise ExtractionError(f"encrypted EPUB (DRM): {len(locked)} of its {len(chapters)} "
                                  "chapters cannot be read")
        if len(chapters) > MAX_CHAPTERS:
            raise ExtractionError(f"{len(chapters)} chapters: over the limit of {MAX_CHAPTERS}")
        parts: list[str] = []
        sections: list[Section] = []
        anchors: list[Anchor] = []
        tables: list[TableSpan] = []
        offset = missing = 0
        for chapter in chapters:
            if chapter not in names:
                missing += 1
                continue
            read = extract_html(archive.read(chapter), posixpath.splitext(posixpath.basename(chapter))[0],
                                heading_first=True)
            text = read.canonical_text.rstrip("\n")
            if not text.strip():
                continue
            if parts:
                parts.append("\n\n")
                offset += 2
            sections += [dataclasses.replace(s, start=s.start + offset,
                                             end=min(s.end, len(text)) + offset)
                         for s in read.sections if min(s.end, len(text)) > s.start]
            tables += [table.shifted(offset) for table in read.tables if table.end <= len(text)]
            anchors.append(Anchor(offset, offset + len(text), f"chapter={quote(chapter)}"))
            parts.append(text)
            offset += len(text)
    canonical = "".join(parts) + ("\n" if parts else "")
    notes = [("chapters", str(len(anchors)))]
    if missing:
        notes.append(("missing_chapters", str(missing)))
    if unread:
        notes.append(("spine_items_not_xhtml", str(unread)))
    first = sections[0].title if sections else None
    return Extracted(title=title or first or stem, canonical_text=canonical,
                     sections=tuple(sections), anchors=tuple(anchors), notes=tuple(notes),
                     tables=tuple(tables))


class EpubFormat(DocumentFormat):
    """``.epub`` books (EPUB 2 and 3)."""

    name = "epub"
    suffixes = (".epub",)

    def __init__(self, limits: OfficeLimits | None = None) -> None:
        self.limits = limits or OfficeLimits()

    def extractor(self) -> Extractor:
        return Extractor("epub-spine+html", f"14+bs4-{library_version('beautifulsoup4')}")

    def extract(self, data: bytes, stem: str) -> Extracted:
        """The chapters in spine order (the module docstring).

        Raises:
            ExtractionError: Not an EPUB, a zip bomb, encrypted, or over :data:`MAX_CHAPTERS`.
        """
        check_zip(data, "EPUB", self.limits)
        try:
            return _read_book(data, stem)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            ValueError) as exc:
            raise ExtractionError(f"unreadable EPUB: {type(exc).__name__}: {exc}") from exc

    def fragment(self, anchors: Sequence[Anchor], start: int, end: int) -> str:
        """``#chapter=<file>&char=a,b``: the chapter the span starts in and the span's
        characters counted from that chapter's start (cut at its end); ``#char=`` without
        chapters."""
        if not anchors:
            return super().fragment(anchors, start, end)
        chapter = anchors[max(bisect_right([a.start for a in anchors], start) - 1, 0)]
        first = max(start - chapter.start, 0)
        last = max(min(end, chapter.end) - chapter.start, first)
        return f"#{chapter.locator}&char={first},{last}"
