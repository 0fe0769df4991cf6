"""ZIP archives: every file inside is a document of its own (``exports.zip/exports/one.md``).

Read with the standard library's ``zipfile``. Before any member is expanded the archive is
checked as a whole: more members than ``max_members`` (directories not counted), or sizes
declared in the central directory adding up to more than the expanded-bytes budget, fail the
archive with that reason. Each member then fails alone when its path points outside the
archive (absolute, or with a ``..`` part), when it declares a compression ratio over
``max_ratio``, when it is larger than ``max_document_bytes``, when it is encrypted, or when it
expands to more than it declared; a symlink entry is skipped, never followed. Hidden members
(a part starting with ``.``, as the ``._`` files of ``__MACOSX``) are no documents. A name
without the UTF-8 flag is read as UTF-8 when its bytes are UTF-8 (:func:`member_path`).
"""

from __future__ import annotations

import io
import stat
import zipfile
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
    read_bounded,
    safe_member_name,
)

_UTF8_NAME = 0x800
"""General-purpose flag bit 11: the entry's name is UTF-8 (APPNOTE 4.4.4)."""


def member_path(info: zipfile.ZipInfo) -> str:
    """The entry's name: UTF-8 when its flag says so (``zipfile`` reads it so); without the
    flag ``zipfile`` reads it as code page 437, the format's default, but many archivers write
    UTF-8 there without setting the flag, so a name whose bytes are valid UTF-8 is read as
    UTF-8 (bytes that are not stay code page 437)."""
    if info.flag_bits & _UTF8_NAME:
        return info.filename
    raw = info.filename.encode("cp437")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return info.filename


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str,
            unpacking: Unpacking) -> Member:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return Member(name, skip="a symlink inside the archive: not followed")
    if info.flag_bits & 0x1:
        return Member(name, error="encrypted member: no password is configured")
    bomb = check_ratio(info.file_size, info.compress_size, unpacking.limits)
    if bomb:
        return Member(name, error=bomb)
    if info.file_size > unpacking.max_member_bytes:
        return Member(name, error=f"too large: {info.file_size} bytes expanded, over the limit of "
                                  f"{unpacking.max_member_bytes} bytes per document (max_document_bytes)")
    try:
        with archive.open(info) as stream:
            data = read_bounded(stream, info.file_size, "more than the size its header declares")
    except ExtractionError as exc:
        return Member(name, error=str(exc))
    except Exception as exc:  # zlib, bz2 and lzma errors on damaged data: that member fails
        return Member(name, error=f"unreadable member: {type(exc).__name__}: {exc}")
    unpacking.budget.take(len(data))
    return Member(name, data)


class ZipFormat(ContainerFormat):
    """``.zip`` archives."""

    name = "zip"
    suffixes = (".zip",)
    chunked = False

    def extractor(self) -> Extractor:
        return Extractor("zip-members", "4")

    def expand(self, data: bytes, stem: str, unpacking: Unpacking) -> Expansion:
        """The members in the archive's order, checked as the module docstring says.

        Raises:
            ExtractionError: Not a ZIP file; too many members; declared sizes over the budget.
        """
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
            raise ExtractionError(f"unreadable ZIP archive: {type(exc).__name__}: {exc}") from exc
        infos = [info for info in archive.infolist() if not info.is_dir()]
        limits = unpacking.limits
        if len(infos) > limits.max_members:
            raise ExtractionError(f"{len(infos)} members: over the limit of {limits.max_members} "
                                  "per archive (max_members)")
        declared = sum(info.file_size for info in infos)
        budget = unpacking.budget
        if declared > budget.remaining:
            left = f", of which {budget.remaining} are left" if budget.used else ""
            raise ExtractionError(f"declares {declared} bytes expanded from {len(data)}: over the "
                                  f"limit of {budget.limit} bytes (max_expanded_bytes){left}: a zip "
                                  "bomb or an archive too large to index")

        def members() -> Iterator[Member]:
            names = UniqueNames()
            with archive:
                for info in infos:
                    name, unsafe = safe_member_name(member_path(info))
                    if not name or (unsafe is None and is_hidden(name)):
                        yield Member(name, left_out="hidden" if name else "unnamed")
                        continue
                    # Two entries of one name (an update appended, a name made printable):
                    # both are read, the later as ``name (2)``.
                    name = names(name)
                    yield Member(name, error=unsafe) if unsafe else _member(archive, info, name, unpacking)

        return Expansion(None, members())
