"""Limits on what an Office file (a zip of XML parts: DOCX, XLSX, PPTX, ODF, EPUB) may expand to.

The document size limit counts the file's compressed bytes; a few megabytes of zip can hold
gigabytes of XML (a zip bomb). Before any XML is parsed, the zip's central directory is read
and each member's expanded size and compression ratio checked against :class:`OfficeLimits`;
while reading, the rows, cells and characters a reader produces are counted against the same
limits. Python's :mod:`zipfile` never expands a member past the size its directory entry
declares (a lying entry ends in a CRC error), so the declared sizes are a sound bound.
"""

from __future__ import annotations

import io
import lzma
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from rag_pipeline.core.ingest.extracted import ExtractionError

MIB = 1024 * 1024


MAX_STYLE_CHAIN = 32
"""How many styles an office document's style is followed through, the styles it is based on
(DOCX ``w:basedOn``, ODF ``style:parent-style-name``): a loop, or a chain longer than any
suite writes, ends there."""


@dataclass(frozen=True)
class OfficeLimits:
    """What one Office document may hold; over any limit the document fails with the limit
    named, and the run goes on.

    Attributes:
        max_expanded_bytes: The members' expanded sizes together (256 MiB).
        max_ratio: Expanded over compressed size of one member expanding to more than
            ``ratio_floor_bytes`` (XML compresses 5-20 times; 200 is a bomb).
        ratio_floor_bytes: Members smaller than this expanded are never judged by their ratio.
        max_members: Members of the zip.
        max_chars: Characters of the canonical text (50 million: days of embedding).
        max_rows: Table or sheet rows of the document (Excel's own limit is 1,048,576 a sheet).
        max_cells: Table or sheet cells of the document.
        max_xml_tags: Markup tags (``<``) of one XML part a reader parses whole: every element
            is a node of its tree, however empty (250 MiB of ``<w:p/>`` in a 2.6 MB DOCX took
            5.5 GB); the parts read as a stream (a workbook's sheets and shared strings) are
            not counted.
        max_cell_formats: Cell formats (``<xf``) of a workbook's styles (Excel allows 64,000;
            openpyxl makes an object of each).

    Raises:
        ValueError: A limit is not positive.
    """

    max_expanded_bytes: int = 256 * MIB
    max_ratio: float = 200.0
    ratio_floor_bytes: int = MIB
    max_members: int = 10_000
    max_chars: int = 50_000_000
    max_rows: int = 1_048_576
    max_cells: int = 5_000_000
    max_xml_tags: int = 10_000_000
    max_cell_formats: int = 128_000

    def __post_init__(self) -> None:
        for name in ("max_expanded_bytes", "max_ratio", "ratio_floor_bytes", "max_members",
                     "max_chars", "max_rows", "max_cells", "max_xml_tags", "max_cell_formats"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


def check_zip(data: bytes, kind: str, limits: OfficeLimits) -> None:
    """Checks the zip's directory against the limits before anything is expanded.

    Raises:
        ExtractionError: Not a zip (``unreadable <kind>``), or over a limit, naming it.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise ExtractionError(f"unreadable {kind}: {type(exc).__name__}: {exc}") from exc
    with archive:
        _check_members(archive, kind, limits)
        held = package_kind(archive)
        if held is not None and kind in PACKAGES and held != kind:
            name, suffix = PACKAGES[held]
            raise ExtractionError(f"unreadable {kind}: the file is {name} under another name: "
                                  f"rename it {suffix}")


_UNREADABLE_MEMBER = (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError,
                      NotImplementedError, zlib.error, lzma.LZMAError)
"""What reading a damaged or encrypted member of a zip may raise."""
PACKAGES = {"DOCX": ("a Word document", ".docx"), "XLSX": ("an Excel workbook", ".xlsx"),
            "PPTX": ("a PowerPoint deck", ".pptx"), "ODT": ("an OpenDocument text", ".odt"),
            "ODS": ("an OpenDocument spreadsheet", ".ods"),
            "ODP": ("an OpenDocument presentation", ".odp"), "EPUB": ("an EPUB book", ".epub")}
"""The zip packages a reader is named by, what each is called and its usual suffix."""
_MIMETYPES = {"application/vnd.oasis.opendocument.text": "ODT",
              "application/vnd.oasis.opendocument.spreadsheet": "ODS",
              "application/vnd.oasis.opendocument.presentation": "ODP",
              "application/epub+zip": "EPUB"}
_MAIN_PARTS = {"word/document.xml": "DOCX", "xl/workbook.xml": "XLSX",
               "ppt/presentation.xml": "PPTX"}


def package_kind(archive: zipfile.ZipFile) -> str | None:
    """Which package of :data:`PACKAGES` the zip is, by what it holds (an ODF or EPUB file's
    ``mimetype`` member, an Office Open XML file's main part), whatever its name; None for
    another zip. A template (``.ott``, ``.dotx``) is the package it makes."""
    names = set(archive.namelist())
    if "mimetype" in names:
        try:
            mimetype = archive.read("mimetype")[:100].decode("ascii").strip()
        except _UNREADABLE_MEMBER:
            return None
        return _MIMETYPES.get(mimetype.removesuffix("-template"))
    for part, kind in _MAIN_PARTS.items():
        if part in names:
            return kind
    return None


def _check_members(archive: zipfile.ZipFile, kind: str, limits: OfficeLimits) -> None:
    """:func:`check_zip` on the opened ``archive``: its directory, then its XML parts' markup."""
    members = archive.infolist()
    if len(members) > limits.max_members:
        raise ExtractionError(f"zip bomb guard: {len(members):,} members in the {kind}, over "
                              f"the limit of {limits.max_members:,}")
    total = 0
    for member in members:
        total += member.file_size
        if (member.file_size > limits.ratio_floor_bytes
                and member.file_size > limits.max_ratio * max(member.compress_size, 1)):
            ratio = member.file_size / max(member.compress_size, 1)
            raise ExtractionError(
                f"zip bomb guard: {member.filename} expands {ratio:,.0f} times "
                f"({member.compress_size:,} to {member.file_size:,} bytes), over the limit of "
                f"{limits.max_ratio:g}")
    if total > limits.max_expanded_bytes:
        raise ExtractionError(
            f"zip bomb guard: the {kind} expands to {total:,} bytes, over the limit of "
            f"{limits.max_expanded_bytes:,}")
    for member in members:
        name = member.filename.lower()
        if not _parsed_whole(name):
            continue
        try:
            tags, formats = _markup_counts(archive, member)
        except _UNREADABLE_MEMBER:
            continue  # a damaged or encrypted part: the reader meets it, and says so, if it reads it
        if tags > limits.max_xml_tags:
            raise ExtractionError(
                f"XML bomb guard: {member.filename} holds over {limits.max_xml_tags:,} tags, "
                "each a node in memory once parsed (max_xml_tags)")
        if name.endswith("styles.xml") and formats > limits.max_cell_formats:
            raise ExtractionError(
                f"XML bomb guard: {member.filename} declares over {limits.max_cell_formats:,} "
                "cell formats (max_cell_formats; Excel allows 64,000)")


_XML_PARTS = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx")
"""The parts a reader may parse as XML, by suffix."""


def _parsed_whole(name: str) -> bool:
    """Whether the part ``name`` (lower-cased) is XML a reader parses whole: not a workbook's
    sheets and shared strings, which readers stream."""
    return (name.endswith(_XML_PARTS) and not name.startswith("xl/worksheets/")
            and not name.endswith("sharedstrings.xml"))


def _markup_counts(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> tuple[int, int]:
    """The tags (``<``) of an XML part and its ``<xf`` elements, counted as it expands, 1 MiB at
    a time."""
    tags = formats = 0
    tail = b""
    with archive.open(member) as stream:
        while block := stream.read(MIB):
            tags += block.count(b"<")
            # An ``<xf`` cut by the block's start lies in the last two bytes before it and
            # the first two of it.
            formats += block.count(b"<xf") + (tail + block[:2]).count(b"<xf")
            tail = block[-2:]
    return tags, formats


_WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
_SLIDES = "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
MAIN_PART_VARIANTS = {
    "application/vnd.ms-word.document.macroEnabled.main+xml": _WORD,  # .docm
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml": _WORD,  # .dotx
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml": _WORD,  # .dotm
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml": _SLIDES,  # .ppsx
    "application/vnd.openxmlformats-officedocument.presentationml.template.main+xml": _SLIDES,  # .potx
    "application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml": _SLIDES,  # .ppsm
    "application/vnd.ms-powerpoint.template.macroEnabled.main+xml": _SLIDES,  # .potm
}
"""The main part's content type of a macro-enabled document, a template or a slide show, and
the plain document's that python-docx and python-pptx read (they refuse any other; the parts
are the same). Macros are never run or read."""


def as_plain_document(data: bytes) -> bytes:
    """The package with its main part declared as a plain document's
    (:data:`MAIN_PART_VARIANTS`), rewritten in memory, its members stored uncompressed (only
    read once more, by the reader: no time spent compressing them again); ``data`` itself when
    it declares none of the variants (or is no zip: the reader then says why)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            types = archive.read("[Content_Types].xml")
            plain = types
            for variant, document in MAIN_PART_VARIANTS.items():
                plain = plain.replace(variant.encode(), document.encode())
            if plain == types:
                return data
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as written:
                for member in archive.infolist():
                    body = plain if member.filename == "[Content_Types].xml" else archive.read(member)
                    written.writestr(member, body, compress_type=zipfile.ZIP_STORED)
            return out.getvalue()
    except (KeyError, zipfile.BadZipFile, zlib.error, OSError, ValueError, NotImplementedError,
            EOFError):
        return data


class ContentBudget:
    """Counts rows, cells and characters as a reader produces them; raises at the first limit
    passed, so a bomb stops while it is read rather than after."""

    def __init__(self, kind: str, limits: OfficeLimits) -> None:
        self.kind, self.limits = kind, limits
        self.rows = self.cells = self.chars = 0
        self.embedded_bytes = 0
        """The expanded bytes of the packages embedded in the document read so far (each
        checked alone by :func:`check_zip`; together held to ``max_expanded_bytes``)."""

    def add(self, rows: int = 0, cells: int = 0, chars: int = 0) -> None:
        """Adds to the counts.

        Raises:
            ExtractionError: A count passed its limit, naming it.
        """
        self.rows += rows
        self.cells += cells
        self.chars += chars
        for name, count, limit in (("rows", self.rows, self.limits.max_rows),
                                   ("cells", self.cells, self.limits.max_cells),
                                   ("characters", self.chars, self.limits.max_chars)):
            if count > limit:
                raise ExtractionError(f"too large: the {self.kind} holds more than {limit:,} "
                                      f"{name}, over the limit")


__all__ = ["ContentBudget", "OfficeLimits", "check_zip"]


def count_elements(data: bytes, part_prefix: str, tag: str,
                   namespaces: Sequence[str] = ("*",)) -> int:
    """How many ``tag`` elements of ``namespaces`` (default: any) the package's XML parts whose
    names start with ``part_prefix`` hold, read by streaming (the comments of a workbook or a
    deck, which the format's library does not read)."""
    from lxml import etree

    count = 0
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if name.startswith(part_prefix) and name.endswith(".xml"):
                with archive.open(name) as stream:
                    for _, element in etree.iterparse(
                            stream, tag=[f"{{{namespace}}}{tag}" for namespace in namespaces],
                            resolve_entities=False):
                        count += 1
                        element.clear()
    return count
