"""Files that are not one document as they are: containers, compressed files, unclaimed files.

The corpus hands such a file here (:func:`expands`, :func:`extract_file`) and gets its records:

- A **container** (a :class:`~rag_pipeline.core.ingest.formats.base.ContainerFormat`: an
  archive, a mail, a mailbox) is a record of its own plus one per member, whose document id is
  the container's, ``/`` and the member's path (``exports.zip/exports/one.md``,
  ``mail.eml/report.pdf``), read by the member's own format; a member that is a container is
  expanded in turn, up to ``max_depth``. A failed member fails alone; a container that breaks
  a limit (:class:`~rag_pipeline.core.ingest.members.ContainerLimits`) fails as a whole, with
  none of its members. The container's record notes how many members it has and how they went
  (``members``, ``members_ok``, ``members_failed``, ``members_skipped``); an archive's own
  text is the list of its members.
- A **compressed** file (``.gz``, ``.bz2``, ``.xz``) is read as the file inside it: ``README.gz``
  is text, ``notes.md.gz`` Markdown, under its own document id; its stamp is the inner
  format's with the compression named (``gzip+markdown-frontmatter``). A gzip file is read as
  ``gzip -d`` reads it (:class:`GzipMembers`): bytes after its last member are ignored and
  counted (note ``trailing_bytes_ignored``), where Python's ``GzipFile`` fails on them.
- A file **no format claims** (``INSTALL``, ``README.Debian``, ``notes-2024``) is a mail when
  its bytes begin as one (:func:`~rag_pipeline.core.ingest.formats.mail.looks_like_message`:
  a Maildir's ``cur/1700000000.M1P2.host:2,S``, read as ``.eml`` is), else plain text
  unless its suffix says it is for machines (:data:`NOT_DOCUMENTS`: style sheets, scripts,
  drawings, schemas, skipped unopened) and when its bytes are text (UTF-8, no NUL byte, at
  most :data:`MAX_CONTROL_SHARE` control characters), and skipped with the reason otherwise;
  one that cannot even be read is skipped with that reason too (it was never known to be a
  document).
"""

from __future__ import annotations

import bisect
import bz2
import dataclasses
import hashlib
import io
import lzma
import posixpath
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from rag_pipeline.core.ingest.bom_text import MAX_CONTROL_SHARE, control_characters, plainly_windows_1252
from rag_pipeline.core.ingest.extracted import (
    Extracted,
    ExtractionError,
    Extractor,
    no_text_reason,
    reader_failures,
    valid_unicode,
)
from rag_pipeline.core.ingest.file_signature import signature_of
from rag_pipeline.core.ingest.formats import format_for, format_named
from rag_pipeline.core.ingest.formats.base import ContainerFormat, DocumentFormat
from rag_pipeline.core.ingest.formats.mail import EmlFormat, looks_like_message
from rag_pipeline.core.ingest.formats.man import ManFormat, looks_like_roff
from rag_pipeline.core.ingest.formats.text import TextFormat
from rag_pipeline.core.ingest.members import (
    RATIO_FLOOR_BYTES,
    Budget,
    ContainerLimits,
    Member,
    Unpacking,
    read_bounded,
)
from rag_pipeline.core.ingest.reading import (
    BYTES_NOT_READ,
    EMPTY_FILE,
    ExtractionSettings,
    kept_failed,
    read_document_bytes,
)
from rag_pipeline.core.ingest.reading_limits import document_reading_limits
from rag_pipeline.core.ingest.records import DocumentRecord, DocumentStatus
from rag_pipeline.core.storage.versions import PIPELINE_VERSION


class GzipMembers(io.RawIOBase):
    """A gzip file's members, one after another (RFC 1952 allows several), as ``gzip -d``
    reads them: bytes after the last member that begin no member (padding or garbage a copy
    left) end the data and are counted in :attr:`trailing`, zero bytes excepted."""

    FEED_BYTES = 64 * 1024

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._data = memoryview(raw.read())
        self._offset = 0
        self._tail = b""
        self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        self._ended = False
        self.trailing = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` decompressed bytes (all that is left for -1); ``b""`` at the end.

        Raises:
            zlib.error: The data is not gzip, or a member is corrupt.
            EOFError: The data ends inside a member.
        """
        if size == 0:
            return b""
        out = []
        while not self._ended and (size < 0 or not out):
            if self._inflater.eof:
                rest = self._inflater.unused_data
                if not (rest + bytes(self._data[self._offset:self._offset + 2])).startswith(b"\x1f\x8b"):
                    self.trailing = len((rest + bytes(self._data[self._offset:])).rstrip(b"\0"))
                    self._ended = True
                    break
                self._tail, self._inflater = rest, zlib.decompressobj(zlib.MAX_WBITS | 16)
            if not self._tail:
                self._tail = bytes(self._data[self._offset:self._offset + self.FEED_BYTES])
                self._offset += len(self._tail)
            if not self._tail:
                raise EOFError("compressed data ended before the end-of-stream marker")
            chunk = self._inflater.decompress(self._tail, max(size, 0))
            self._tail = self._inflater.unconsumed_tail
            if chunk:
                out.append(chunk)
        return b"".join(out)


COMPRESSIONS: dict[str, tuple[str, Callable[[BinaryIO], BinaryIO]]] = {
    ".gz": ("gzip", GzipMembers),
    ".bz2": ("bzip2", lambda raw: bz2.BZ2File(raw)),
    ".xz": ("xz", lambda raw: lzma.LZMAFile(raw)),
}
"""Compressed single files by suffix: the compression's name and a decompressing reader."""

NOT_DOCUMENTS = {
    ".css": "a style sheet", ".js": "a script for a browser", ".mjs": "a script for a browser",
    ".map": "a source map", ".svg": "a vector drawing", ".dtd": "an XML schema",
    ".xsd": "an XML schema", ".xsl": "an XSLT style sheet", ".xslt": "an XSLT style sheet",
    ".woff": "a font", ".woff2": "a font", ".ttf": "a font", ".otf": "a font", ".eot": "a font",
}
"""Suffixes no format claims whose text is for machines, not readers: skipped unopened rather
than indexed as plain text (a site's style sheets and scripts sit next to its pages)."""

_TEXT = format_named(TextFormat.name)
_TEXT_STAMP = _TEXT.extractor()
"""The plain-text reader's stamp: a file no format claims is read, or skipped, by it."""
_MAIL = format_named(EmlFormat.name)
_MAN = format_named(ManFormat.name)
_SNIFFED = ((looks_like_message, _MAIL), (looks_like_roff, _MAN))
"""The readers of a file no format claims by its name, by how its bytes begin: a mail
(:func:`looks_like_message`), a manual page in roff (:func:`looks_like_roff`)."""


def _sniffed(data: bytes) -> DocumentFormat | None:
    """The reader :data:`_SNIFFED` gives ``data``, or None (plain text)."""
    return next((fmt for looks_like, fmt in _SNIFFED if looks_like(data)), None)


def not_text_reason(data: bytes) -> str | None:
    """Why ``data`` is not plain text, or ``None`` when it is (the rule above): bytes that are
    not text and start as another format's files do are named by that format."""
    reason = _not_text(data)
    if reason is not None and data.strip() and (what := signature_of(data)) is not None:
        return f"binary: its first bytes are those of {what}"
    return reason


def _not_text(data: bytes) -> str | None:
    if not data.strip():
        return "empty" if not data else "only white space"
    nul = data.find(b"\x00")
    if nul >= 0:
        return f"binary: a NUL byte at offset {nul}"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        guessed = plainly_windows_1252(data)  # as a .txt file is read (bom_text)
        if guessed is None:
            return f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        text = guessed
    controls = control_characters(text)
    if controls > MAX_CONTROL_SHARE * len(text):
        return f"binary: {controls} of its {len(text)} characters are control characters"
    return None


def _compression(name: str) -> tuple[str, str, Callable[[BinaryIO], BinaryIO]] | None:
    """(the compression's name, the inner file's name, its reader) for a compressed file that
    no format claims as a whole (a ``.tar.gz`` is a tar archive)."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in COMPRESSIONS or format_for(Path(name)) is not None:
        return None
    label, reader = COMPRESSIONS[suffix]
    return label, name[: -len(suffix)], reader


def expands(path: Path) -> bool:
    """Whether the corpus reads ``path`` here: a container, a compressed file, or a file no
    format claims."""
    fmt = format_for(path)
    return fmt is None or isinstance(fmt, ContainerFormat)


def stamp_for(name: str) -> tuple[str, Extractor]:
    """(the format name, the extractor stamp) a file called ``name`` is read with now."""
    compressed = _compression(name)
    if compressed is not None:
        label, inner, _ = compressed
        fmt_name, stamp = stamp_for(inner)
        return fmt_name, Extractor(f"{label}+{stamp.name}", stamp.version)
    fmt = format_for(Path(name)) or _TEXT
    return fmt.name, fmt.extractor()


def _stamps_for(name: str) -> set[tuple[str, str, str]]:
    """(format, extractor, version) a file called ``name`` may have been read with today: its
    name's (:func:`stamp_for`), and a mail's and a manual page's too when no format claims the
    name (its bytes say whether it is one: :data:`_SNIFFED`); a compressed file's, its inner
    name's under the compression's label (``tar.1.gz``: ``gzip+man-roff``)."""
    compressed = _compression(name)
    if compressed is not None:
        label, inner, _ = compressed
        return {(fmt_name, f"{label}+{extractor}", version)
                for fmt_name, extractor, version in _stamps_for(inner)}
    fmt_name, stamp = stamp_for(name)
    stamps = {(fmt_name, stamp.name, stamp.version)}
    if format_for(Path(name)) is None:
        stamps |= {(fmt.name, fmt.extractor().name, fmt.extractor().version) for _, fmt in _SNIFFED}
    return stamps


NO_READER = "no reader for "
"""How the reason of a file skipped because no format claims its name begins."""


def _skip_reason(name: str, why: str, unread: bool = False) -> str:
    suffix = PurePosixPath(name).suffix
    kind = f"{suffix.lower()} files" if suffix else f"files named {name} (without a suffix)"
    if unread:
        return f"{NO_READER}{kind}, and not read as text: {why}"
    return f"{NO_READER}{kind}, and not plain text ({why})"


def _not_read(document_id: str, location: str, name: str, why: str, claimed: bool,
              fingerprint: str = "") -> FileRecords:
    """The record of a file whose bytes were not read: ``failed`` when a format claims its name
    or its bytes may be a document's (:data:`BYTES_NOT_READ`: a README the system would not
    read), ``skipped`` otherwise (a named pipe without a suffix is no document)."""
    if not claimed and not why.startswith(BYTES_NOT_READ):
        return FileRecords([DocumentRecord(
            document_id, location, _stem(name), "", "", "", "", "", DocumentStatus.SKIPPED.value,
            _skip_reason(name, why, unread=True), source_fingerprint=fingerprint)], 0, 0)
    fmt_name, stamp = stamp_for(name)
    return FileRecords([DocumentRecord(
        document_id, location, _stem(name), "", "", fmt_name, stamp.name, stamp.version,
        DocumentStatus.FAILED.value, why, source_fingerprint=fingerprint)], 1, 0)


@dataclass
class _Reader:
    """Reads one corpus file's bytes into its records, containers expanded, each document
    within ``max_seconds`` (:func:`~rag_pipeline.core.ingest.reading_limits.document_reading_limits`:
    a container's own reading and each member's timed alone), and no member begun once the
    file's reading has taken ``max_reading_multiple`` times that
    (:class:`~rag_pipeline.core.ingest.members.ContainerLimits`)."""

    unpacking: Unpacking
    max_seconds: float | None = None
    began: float = dataclasses.field(default_factory=time.monotonic)

    def _out_of_time(self) -> str | None:
        """Why no more member is read (None: there is time)."""
        multiple = self.unpacking.limits.max_reading_multiple
        if self.max_seconds is None or time.monotonic() - self.began <= multiple * self.max_seconds:
            return None
        return (f"not read: the members of this file took over {multiple * self.max_seconds:g} s "
                f"together ({multiple:g} times max_document_seconds)")

    def record(self, document_id: str, path: str, name: str, data: bytes, digest: str,
               depth: int = 1) -> list[DocumentRecord]:
        """The records of a file called ``name`` (its last path part) holding ``data``."""
        stem = _stem(name)
        compressed = _compression(name)
        fmt_name, stamp = stamp_for(name)

        def failed(reason: str) -> list[DocumentRecord]:
            return [DocumentRecord(document_id, path, stem, "", digest, fmt_name, stamp.name,
                                   stamp.version, DocumentStatus.FAILED.value, reason)]

        if compressed is not None:
            label, inner, reader = compressed
            inner_fmt = format_for(Path(inner))
            limit = (self.unpacking.budget.remaining if isinstance(inner_fmt, ContainerFormat)
                     else self.unpacking.max_member_bytes)
            # A container's member is a bomb past max_ratio, as any member, and what it expands
            # to is the container tree's (max_expanded_bytes: passing it fails the container).
            bomb = (max(RATIO_FLOOR_BYTES, int(self.unpacking.limits.max_ratio * len(data)))
                    if depth > 1 else limit)
            try:
                with reader(io.BytesIO(data)) as stream:
                    inner_data = read_bounded(stream, min(limit, bomb), "max_expanded_bytes" if
                                              isinstance(inner_fmt, ContainerFormat)
                                              else "max_document_bytes")
                    trailing = stream.trailing if isinstance(stream, GzipMembers) else 0
            except ExtractionError as exc:
                if bomb < limit:
                    return failed(f"{label}: expands over {self.unpacking.limits.max_ratio:g} "
                                  f"times its compressed size of {len(data)} bytes (max_ratio): "
                                  "a zip bomb")
                return failed(f"{label}: {exc}")
            except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
                return failed(f"unreadable {label} file: {type(exc).__name__}: {exc}")
            if depth > 1:
                self.unpacking.budget.take(len(inner_data))
            records = self.record(document_id, path, inner, inner_data, digest, depth)
            own = records[0]
            notes = (("trailing_bytes_ignored", str(trailing)),) if trailing else ()
            # The inner reader's own stamp (a sniffed one too: a manual page, a mail) under
            # the compression's label.
            if own.extractor:
                stamp = Extractor(f"{label}+{own.extractor}", own.extractor_version)
            records[0] = dataclasses.replace(own, extractor=stamp.name, extractor_version=stamp.version,
                                             notes=own.notes + notes)
            return records
        fmt = format_for(Path(name))
        machine = NOT_DOCUMENTS.get(PurePosixPath(name).suffix.lower())
        if fmt is None and machine is not None:
            return [DocumentRecord(document_id, path, name, "", digest, "", "", "",
                                   DocumentStatus.SKIPPED.value,
                                   f"no reader for {PurePosixPath(name).suffix.lower()} files "
                                   f"({machine}, not a document)")]
        sniffed = _sniffed(data) if fmt is None else None
        if sniffed is not None:
            fmt, fmt_name, stamp = sniffed, sniffed.name, sniffed.extractor()
        if isinstance(fmt, ContainerFormat):
            try:
                if depth > self.unpacking.limits.max_depth:
                    raise ExtractionError(f"nested deeper than {self.unpacking.limits.max_depth} "
                                          "containers (max_depth)")
                with document_reading_limits(self.max_seconds):
                    return self._container(fmt, document_id, path, stem, data, digest, depth)
            except ExtractionError as exc:
                if sniffed is None:
                    return failed(str(exc))
                # A mail only by its look: read as the text it was read as before.
                fmt, fmt_name, stamp = None, _TEXT.name, _TEXT_STAMP
        if fmt is None:
            why = not_text_reason(data)
            if why is not None:
                # Judged by the plain-text reader: its stamp says which one (a later one may
                # read the member, such as a mail it sniffs).
                return [DocumentRecord(document_id, path, name, "", digest, "",
                                       _TEXT_STAMP.name, _TEXT_STAMP.version,
                                       DocumentStatus.SKIPPED.value, _skip_reason(name, why))]
            fmt, stem = _TEXT, name  # README.Debian: the suffix is part of the name
        if not data:
            return failed(EMPTY_FILE)
        try:
            with document_reading_limits(self.max_seconds):
                extracted = fmt.read(data, stem)
        except ExtractionError as exc:
            return failed(str(exc))
        return [_ok(document_id, path, digest, fmt, stamp, extracted)]

    def _container(self, fmt: ContainerFormat, document_id: str, path: str, stem: str,
                   data: bytes, digest: str, depth: int) -> list[DocumentRecord]:
        with reader_failures(fmt.name):
            expansion = fmt.expand(data, stem, self.unpacking)
        members: list[DocumentRecord] = []
        direct: list[DocumentRecord] = []
        taken = {document_id}
        left_out = {"hidden": 0, "unnamed": 0}
        # Any error while a member is taken out fails the whole container, never the run.
        for member in _guarded(expansion.members, fmt.name):
            if member.left_out:
                left_out[member.left_out] += 1
                continue
            member_id, member_path = f"{document_id}/{member.name}", f"{path}/{member.name}"
            base = posixpath.basename(member.name)
            member_digest = hashlib.sha256(member.data).hexdigest() if member.data else ""
            if member.error is None and member.skip is None and (late := self._out_of_time()):
                member = dataclasses.replace(member, error=late)
            if member.error is not None or member.skip is not None:
                fmt_name, stamp = stamp_for(base)
                failed = member.error is not None
                read = [DocumentRecord(
                    member_id, member_path, _stem(base), "", member_digest,
                    fmt_name if failed else "", stamp.name if failed else "",
                    stamp.version if failed else "",
                    (DocumentStatus.FAILED if failed else DocumentStatus.SKIPPED).value,
                    member.error if failed else member.skip)]
            else:
                read = self.record(member_id, member_path, base, member.data, member_digest, depth + 1)
            # Ids are unique: a member named ``b.zip/c.md`` beside a member archive ``b.zip``
            # holding ``c.md`` claims the same id (the first keeps it; the other is no document).
            clash = next((r.document_id for r in read if r.document_id in taken), None)
            if clash is not None:
                direct.append(dataclasses.replace(
                    read[0], status=DocumentStatus.FAILED.value, canonical_text="",
                    error=f"another member of the archive is already the document {clash}"))
                continue
            taken.update(r.document_id for r in read)
            direct.append(read[0])
            members += read
        counts = {status: sum(r.status == status.value for r in direct) for status in DocumentStatus}
        notes = (("members", str(len(direct))), ("members_ok", str(counts[DocumentStatus.OK])),
                 ("members_failed", str(counts[DocumentStatus.FAILED])),
                 ("members_skipped", str(counts[DocumentStatus.SKIPPED])),
                 *((("members_hidden", str(left_out["hidden"])),) if left_out["hidden"] else ()),
                 *((("members_unnamed", str(left_out["unnamed"])),) if left_out["unnamed"] else ()))
        own = expansion.own
        if own is None:
            prefix = len(document_id) + 1
            lines = [_listing_line(r.document_id[prefix:], r) for r in direct]
            own = Extracted(title=stem, canonical_text="".join(line + "\n" for line in lines)
                            or f"{stem}: no members\n")
        own = valid_unicode(own)
        own = dataclasses.replace(own, notes=own.notes + expansion.notes + notes)
        return [_ok(document_id, path, digest, fmt, fmt.extractor(), own), *members]


def _guarded(members: Iterable[Member], kind: str) -> Iterator[Member]:
    """``members`` as a container's reader yields them, any error it raises meanwhile an
    ``ExtractionError`` (:func:`~rag_pipeline.core.ingest.extracted.reader_failures`)."""
    with reader_failures(kind):
        yield from members


def _listing_line(name: str, record: DocumentRecord) -> str:
    if record.ok:
        return name
    return f"{name} ({record.status}: {record.error})"


def _stem(name: str) -> str:
    return PurePosixPath(name).stem if PurePosixPath(name).stem else name


def _ok(document_id: str, path: str, digest: str, fmt: DocumentFormat, stamp: Extractor,
        extracted: Extracted) -> DocumentRecord:
    if not extracted.canonical_text.strip():
        return DocumentRecord(document_id, path, extracted.title, "", digest, fmt.name, stamp.name,
                              stamp.version, DocumentStatus.FAILED.value, no_text_reason(extracted))
    return DocumentRecord(document_id, path, extracted.title, extracted.canonical_text, digest,
                          fmt.name, stamp.name, stamp.version, DocumentStatus.OK.value, None,
                          extracted.sections, extracted.anchors, extracted.notes,
                          tables=extracted.tables)


@dataclass(frozen=True)
class FileRecords:
    """One corpus file's records: its own first, then its members'.

    Attributes:
        records: The records, in order.
        extracted: Records read this time.
        reused: Records kept from the previous run (the file and every stamp unchanged).
        moved: Of the reused records, those whose file now lives at another path.
    """

    records: list[DocumentRecord]
    extracted: int
    reused: int
    moved: int = 0


class PreviousRecords:
    """The previous run's records, indexed once: by document id, and a file's members by the
    id prefix they share (``exports.zip/``)."""

    def __init__(self, records: Iterable[DocumentRecord]) -> None:
        self._records = list(records)
        self._by_id = {r.document_id: r for r in self._records}
        self._position = {r.document_id: i for i, r in enumerate(self._records)}
        self._ids = sorted(self._by_id)

    def __iter__(self) -> Iterator[DocumentRecord]:
        return iter(self._records)

    def get(self, document_id: str) -> DocumentRecord | None:
        return self._by_id.get(document_id)

    def members(self, document_id: str) -> list[DocumentRecord]:
        """Every record whose id starts with ``document_id/``, in their previous order, but a
        record the source listed itself (it has a fingerprint of its own: on S3 the key
        ``guide/x.md`` beside an object ``guide``), which is no member of it."""
        prefix = document_id + "/"
        start = bisect.bisect_left(self._ids, prefix)
        found = []
        for member_id in self._ids[start:]:
            if not member_id.startswith(prefix):
                break
            if not self._by_id[member_id].source_fingerprint:
                found.append(self._by_id[member_id])
        return sorted(found, key=lambda r: self._position[r.document_id])


def _member_current(member: DocumentRecord, settings: ExtractionSettings) -> bool:
    """A member's previous record stands for it while its container's bytes are the same: read
    ``ok`` by today's stamps, failed by them and kept (:func:`kept_failed`: retries back off
    until the container changes), skipped as the archive holds it (a link: whatever its name),
    or skipped as no format's and still claimed by none (judged by its bytes: by today's
    plain-text reader)."""
    name = posixpath.basename(member.document_id)
    if member.pipeline_version != PIPELINE_VERSION:
        return False
    if member.skipped:
        if not (member.error or "").startswith(NO_READER):
            return True
        if format_for(Path(name)) is not None or _compression(name) is not None:
            return False
        return (NOT_DOCUMENTS.get(PurePosixPath(name).suffix.lower()) is not None
                or (member.extractor, member.extractor_version) == (_TEXT_STAMP.name,
                                                                     _TEXT_STAMP.version))
    if (member.format, member.extractor, member.extractor_version) not in _stamps_for(name):
        return False
    return member.ok or (member.failed and kept_failed(member.error, settings))


def _reusable(document_id: str, name: str, digest: str, previous: PreviousRecords,
              settings: ExtractionSettings) -> list[DocumentRecord] | None:
    """The previous records of the file and its members when the file was read ``ok`` by
    today's stamps from the same bytes and every member's record still stands
    (:func:`_member_current`); ``None`` otherwise."""
    old = previous.get(document_id)
    if (old is None or not old.ok or old.content_sha256 != digest
            or (old.format, old.extractor, old.extractor_version) not in _stamps_for(name)
            or old.pipeline_version != PIPELINE_VERSION):
        return None
    members = previous.members(document_id)
    if not all(_member_current(member, settings) for member in members):
        return None
    return [old, *members]


def extract_file(path: Path, corpus_root: Path, previous: PreviousRecords | None = None,
                 settings: ExtractionSettings | None = None,
                 limits: ContainerLimits | None = None) -> FileRecords:
    """The records of one corpus file for which :func:`expands` holds.

    Args:
        path: The file.
        corpus_root: The corpus folder (the document id is the path relative to it).
        previous: The previous run's records (any status), indexed; the file's own and its
            members' are reused while the bytes and every stamp are unchanged and every
            member's record still stands (``ok``, a failure kept, or still skipped).
        settings: ``max_document_bytes`` bounds the file and each member.
        limits: The container limits; the defaults when ``None``.
    """
    from rag_pipeline.core.ingest.corpus import document_id_for, extract_document
    from rag_pipeline.core.ingest.sources.base import shown_file_name

    settings = settings or ExtractionSettings()
    limits = limits or ContainerLimits()
    document_id = document_id_for(path, corpus_root)
    # A link is never expanded: extract_document skips it (a folder, a file inside the root) or
    # says why it fails (a target outside the root, a loop).
    if shown_file_name(document_id) != document_id or path.is_symlink():
        return FileRecords([extract_document(path, corpus_root, settings)], 0, 0)
    claimed = format_for(path) is not None or _compression(path.name) is not None
    machine = NOT_DOCUMENTS.get(path.suffix.lower())
    if not claimed and machine is not None:
        return FileRecords([DocumentRecord(
            document_id, str(path), _stem(path.name), "", "", "", "", "", DocumentStatus.SKIPPED.value,
            f"no reader for {path.suffix.lower()} files ({machine}, not a document)")], 0, 0)
    try:
        data = read_document_bytes(path, corpus_root, settings.max_document_bytes)
    except ExtractionError as exc:
        return _not_read(document_id, str(path), path.name, str(exc), claimed)
    digest = hashlib.sha256(data).hexdigest()
    old = _reusable(document_id, path.name, digest, previous or PreviousRecords(()), settings)
    if old is not None:
        if old[0].path == str(path):
            return FileRecords(old, 0, len(old))
        moved = [dataclasses.replace(r, path=str(path) + r.document_id[len(document_id):])
                 for r in old]
        return FileRecords(moved, 0, len(moved), len(moved))
    reader = _Reader(Unpacking(limits, Budget(limits.max_expanded_bytes), settings.max_document_bytes),
                     settings.max_document_seconds)
    records = reader.record(document_id, str(path), path.name, data, digest)
    return FileRecords(records, sum(not r.skipped for r in records), 0)


def expands_name(name: str) -> bool:
    """:func:`expands` for an entry's name below its source (a key, a path in a tree)."""
    return expands(Path(PurePosixPath(name).name))


def extract_expanding_entry(document_id: str, location: str, fingerprint: str,
                            read: Callable[[], bytes], previous: PreviousRecords,
                            settings: ExtractionSettings | None = None,
                            limits: ContainerLimits | None = None) -> FileRecords:
    """The records of one source entry for which :func:`expands_name` holds, the entry read
    only when it changed: the previous records (the entry's own and its members') are kept
    unread while the entry's ``fingerprint`` is the one they were read with and every stamp is
    current, or, once read, while its bytes are the same. The entry's own record carries the
    fingerprint.

    Args:
        document_id: The entry's id below the source.
        location: Where it is (a path, a URI), the records' ``path``.
        fingerprint: The source's fingerprint of the entry.
        read: Reads its bytes (raising ``ExtractionError`` with the reason).
        previous: The previous run's records, indexed.
        settings: ``max_document_bytes`` bounds each member.
        limits: The container limits; the defaults when ``None``.
    """
    settings = settings or ExtractionSettings()
    limits = limits or ContainerLimits()
    name = PurePosixPath(document_id).name
    claimed = format_for(Path(name)) is not None or _compression(name) is not None

    def fingerprinted(records: list[DocumentRecord]) -> list[DocumentRecord]:
        if records and records[0].source_fingerprint != fingerprint:
            records[0] = dataclasses.replace(records[0], source_fingerprint=fingerprint)
        return records

    def relocated(records: list[DocumentRecord]) -> tuple[list[DocumentRecord], int]:
        if records[0].path == location:
            return records, 0
        moved = [dataclasses.replace(r, path=location + r.document_id[len(document_id):])
                 for r in records]
        return moved, len(moved)

    machine = NOT_DOCUMENTS.get(PurePosixPath(name).suffix.lower())
    if not claimed and machine is not None:
        return FileRecords([DocumentRecord(
            document_id, location, _stem(name), "", "", "", "", "", DocumentStatus.SKIPPED.value,
            f"no reader for {PurePosixPath(name).suffix.lower()} files ({machine}, not a document)",
            source_fingerprint=fingerprint)], 0, 0)
    old = previous.get(document_id)
    if (old is not None and old.failed and old.source_fingerprint == fingerprint
            and (old.format, old.extractor, old.extractor_version) in _stamps_for(name)
            and old.pipeline_version == PIPELINE_VERSION and kept_failed(old.error, settings)):
        kept, moved = relocated([old])  # a failure stands until the entry changes
        return FileRecords(kept, 0, 1, moved)
    if old is not None and old.source_fingerprint == fingerprint and old.content_sha256:
        kept = _reusable(document_id, name, old.content_sha256, previous, settings)
        if kept is not None:
            kept, moved = relocated(kept)
            return FileRecords(kept, 0, len(kept), moved)
    try:
        data = read()
    except ExtractionError as exc:
        return _not_read(document_id, location, name, str(exc), claimed, fingerprint)
    digest = hashlib.sha256(data).hexdigest()
    kept = _reusable(document_id, name, digest, previous, settings)
    if kept is not None:
        kept, moved = relocated(fingerprinted(kept))
        return FileRecords(kept, 0, len(kept), moved)
    reader = _Reader(Unpacking(limits, Budget(limits.max_expanded_bytes), settings.max_document_bytes),
                     settings.max_document_seconds)
    records = fingerprinted(reader.record(document_id, location, name, data, digest))
    return FileRecords(records, sum(not r.skipped for r in records), 0)


__all__ = ["COMPRESSIONS", "MAX_CONTROL_SHARE", "NOT_DOCUMENTS", "FileRecords", "PreviousRecords",
           "expands", "expands_name", "extract_expanding_entry", "extract_file", "not_text_reason",
           "stamp_for"]
