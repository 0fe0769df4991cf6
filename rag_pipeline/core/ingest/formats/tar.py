"""Tar archives, plain or compressed (``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``/``.tbz2``,
``.tar.xz``/``.txz``): every regular file inside is a document of its own.

Read with the standard library's ``tarfile`` as a stream (``r|*``), so a compressed archive is
never expanded whole in memory. A tar has no table of contents: the limits are checked as the
members go by. A member whose size alone is over the budget of expanded bytes, the count
passing ``max_members``, the stream expanding more than ``max_ratio`` times the file, or an
extended header (a long name, a pax header) over :data:`MAX_HEADER_BYTES`, fails the whole
archive (no member of it is a document). A member fails alone when its path points
outside the archive or it is larger than ``max_document_bytes``; links, devices and FIFOs are
skipped, never followed or opened; hidden members are no documents. An archive whose listing
ends before its end (a damaged member header, a stream cut inside one) fails whole, saying
where: the members after that point cannot be listed.
"""

from __future__ import annotations

import io
import tarfile
import zlib
from collections.abc import Iterator

from rag_pipeline.core.ingest.extracted import ExtractionError, Extractor
from rag_pipeline.core.ingest.formats.base import ContainerFormat
from rag_pipeline.core.ingest.members import (
    Expansion,
    Member,
    UniqueNames,
    Unpacking,
    check_ratio,
    is_hidden,
    safe_member_name,
)

MAX_HEADER_BYTES = 1024 * 1024
"""The most an extended header (a GNU long name or link, a pax header) may hold: ``tarfile``
reads one whole into memory before the member it describes is listed (a name is at most a few
KiB; 1.5 GB claimed in a 1.5 MB file took 3 GiB)."""
_EXTENDED_HEADERS = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
                     tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)


class _BoundedTarInfo(tarfile.TarInfo):
    """A member header whose extended header, if any, is read only when it holds at most
    :data:`MAX_HEADER_BYTES` (the hook ``tarfile`` gives: its ``tarinfo`` class)."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _EXTENDED_HEADERS and self.size > MAX_HEADER_BYTES:
            raise ExtractionError(
                f"an extended header (a long name or a pax header) of {self.size} bytes, over "
                f"the limit of {MAX_HEADER_BYTES} bytes: a tar bomb or a damaged archive")
        return super()._proc_member(tarfile_)


TRAILER_READ_BYTES = 64 * 1024 * 1024
"""At most this much of what follows the listing's end is read to tell the end-of-archive
blocks' zeros from a damaged archive's members (a stream of zeros longer than this is taken
for padding)."""


def _damage(archive: tarfile.TarFile) -> str | None:
    """Why the listing that just ended is not the archive's end, or None. ``tarfile`` ends a
    listing silently at a header it cannot read or that the stream cuts short, so a flipped
    byte in one header would lose that member and every one after it, unsaid (GNU tar lists
    them and exits 2). A whole end block of zeros followed by zeros is the end."""
    stream = archive.fileobj
    consumed = stream.tell() - archive.offset
    if 0 < consumed < tarfile.BLOCKSIZE:
        return (f"tar archive cut short: it ends inside a member header at byte {archive.offset:,} "
                "of the unpacked archive")
    read = 0
    while read < TRAILER_READ_BYTES and (block := stream.read(1024 * 1024)):
        if any(block):
            return (f"damaged tar archive: the member header at byte {archive.offset:,} of the "
                    "unpacked archive is unreadable, so the members after it cannot be listed")
        read += len(block)
    return None


def _kind(info: tarfile.TarInfo) -> str:
    if info.issym() or info.islnk():
        return "a link inside the archive: not followed"
    return "a device or FIFO entry inside the archive: never read"


class TarFormat(ContainerFormat):
    """Tar archives, compressed or not."""

    name = "tar"
    suffixes = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
    chunked = False

    def extractor(self) -> Extractor:
        return Extractor("tar-members", "7")

    def expand(self, data: bytes, stem: str, unpacking: Unpacking) -> Expansion:
        """The regular-file members in the archive's order, checked as they stream by.

        Raises:
            ExtractionError: Not a tar archive (raised while the members are read, as every
                limit of the whole archive is).
        """
        limits, budget = unpacking.limits, unpacking.budget

        def members() -> Iterator[Member]:
            try:
                archive = tarfile.open(fileobj=io.BytesIO(data), mode="r|*",
                                       tarinfo=_BoundedTarInfo)
            except (tarfile.TarError, OSError, EOFError, TypeError, ValueError) as exc:
                raise ExtractionError(f"unreadable tar archive: {type(exc).__name__}: {exc}") from exc
            count = content = 0
            names = UniqueNames()
            try:
                with archive:
                    for info in archive:
                        if info.isdir():
                            continue
                        count += 1
                        if count > limits.max_members:
                            raise ExtractionError(f"over {limits.max_members} members: the limit "
                                                  "per archive (max_members)")
                        if info.size > budget.remaining:
                            raise ExtractionError(
                                f"a member declares {info.size} bytes: over the limit "
                                f"of {budget.limit} bytes expanded (max_expanded_bytes), a tar bomb "
                                "or an archive too large to index")
                        budget.take(info.size)
                        # The members' bytes, not the tar's: its 512-byte headers and padding
                        # make an archive of many small files expand 100-fold (max_members
                        # bounds them).
                        content += info.size
                        bomb = check_ratio(content, len(data), limits, "tar")
                        if bomb:
                            raise ExtractionError(bomb)
                        name, unsafe = safe_member_name(info.name)
                        if not name or (unsafe is None and is_hidden(name)):
                            if name or info.isfile():  # ``./``, the folder tar writes first, is none
                                yield Member(name, left_out="hidden" if name else "unnamed")
                            continue
                        # Two entries of one name (``tar -r`` appends an update; a name made
                        # printable): both are read, the later as ``name (2)``.
                        name = names(name)
                        if unsafe:
                            yield Member(name, error=unsafe)
                        elif not info.isfile():
                            yield Member(name, skip=_kind(info))
                        elif info.size > unpacking.max_member_bytes:
                            yield Member(name, error=(
                                f"too large: {info.size} bytes, over the limit of "
                                f"{unpacking.max_member_bytes} bytes per document (max_document_bytes)"))
                        else:
                            stream = archive.extractfile(info)
                            yield Member(name, stream.read() if stream is not None else b"")
                    damage = _damage(archive)
                    if damage is not None:
                        raise ExtractionError(damage)
            except (tarfile.TarError, OSError, EOFError, zlib.error, TypeError, ValueError) as exc:
                if isinstance(exc, EOFError) or "unexpected end of data" in str(exc):
                    raise ExtractionError(
                        f"tar archive cut short: its compressed stream ends before the archive "
                        f"does, at or after the member header at byte {archive.offset:,} of the "
                        f"unpacked archive ({type(exc).__name__}: {exc})") from exc
                raise ExtractionError(f"unreadable tar archive: {type(exc).__name__}: {exc}") from exc

        return Expansion(None, members())

