"""ZIP archives: every file inside is a document of its own (``exports.zip/exports/one.md``).

Read with the standard library's ``zipfile``. Before any member is expanded the archive is
checked as a whole: more members than ``max_members`` (directories not counted), or sizes
declared in the central directory adding up to more than the expanded-bytes budget, fail the
archive with that reason. Each member then fails alone when its path points outside the
archive (absolute, or with a ``..`` part), when it declares a compression ratio over
``max_ratio``, when it is larger than ``max_document_bytes``, when it is encrypted, or when it
expands to more than it declared; a symlink entry is skipped, never followed. Hidden members
(a part starting with ``.``, as the ``._`` files of ``__MACOSX``) are no documents. A name
without the UTF-8 flag is read from its Unicode Path extra field, or as UTF-8, Russian or
Japanese when its bytes read so (:func:`member_path`).
"""

from __future__ import annotations

import io
import re
import stat
import unicodedata
import zipfile
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
    read_bounded,
    safe_member_name,
)

_UTF8_NAME = 0x800
"""General-purpose flag bit 11: the entry's name is UTF-8 (APPNOTE 4.4.4)."""


_UNICODE_PATH = 0x7075
"""Info-ZIP's Unicode Path extra field: version 1, the CRC-32 of the header's name, the name in
UTF-8 (APPNOTE 4.6.9)."""


def member_path(info: zipfile.ZipInfo) -> str:
    """The entry's name: UTF-8 when its flag says so (``zipfile`` reads it so). Without the
    flag, the UTF-8 name of an Info-ZIP Unicode Path extra field made for this name (7-Zip and
    Info-ZIP write one); else the name's bytes, which ``zipfile`` reads as code page 437, the
    format's default, but which many archivers write in UTF-8 without the flag, or in the
    Windows console's code page of their country: bytes that are UTF-8 are read so, then
    bytes that read as Russian in code page 866 or as Japanese in Shift-JIS
    (:func:`_national_name`); other bytes stay code page 437."""
    if info.flag_bits & _UTF8_NAME:
        return info.filename
    raw = info.filename.encode("cp437")
    if (unicode := _unicode_path(info.extra, raw)) is not None:
        return unicode
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _national_name(raw) or info.filename


def _unicode_path(extra: bytes, raw: bytes) -> str | None:
    """The name an Info-ZIP Unicode Path field of ``extra`` holds for the name ``raw`` (None:
    no such field, or one made for another name, or no UTF-8)."""
    at = 0
    while at + 4 <= len(extra):
        kind = int.from_bytes(extra[at:at + 2], "little")
        size = int.from_bytes(extra[at + 2:at + 4], "little")
        field = extra[at + 4:at + 4 + size]
        at += 4 + size
        if kind == _UNICODE_PATH and len(field) > 5 and field[0] == 1 and (
                int.from_bytes(field[1:5], "little") == zlib.crc32(raw)):
            try:
                return field[5:].decode("utf-8")
            except UnicodeDecodeError:
                return None
    return None


_KANA_OR_KANJI = re.compile("[\u3041-\u30ff\u4e00-\u9fff]")
"""Hiragana, katakana and the unified kanji."""


def _national_name(raw: bytes) -> str | None:
    """``raw`` read in another code page than 437 when it reads as a name there and not in
    437: None when every letter past ASCII is a Latin one in 437, each word cased as words are
    (``café``, ``ACCÉLÉRER``); else in Shift-JIS (code page 932) when every character past
    ASCII is then a kana or a kanji, two of them side by side at least (``議事録.txt``,
    ``Excel資料.xlsx``); else in code page 866 when every character past ASCII is then
    Cyrillic, in words of Cyrillic letters alone, each cased as words are (``Отчёт за
    май.docx``); else None."""
    western = raw.decode("cp437")
    if all(ch.isascii() or ch.isalpha() and "LATIN" in unicodedata.name(ch, "") for ch in western) \
            and all(map(_cased_as_a_word, _words_past_ascii(western))):
        return None
    try:
        japanese = raw.decode("cp932")
    except UnicodeDecodeError:
        japanese = ""
    wide = [ch for ch in japanese if not ch.isascii()]
    if wide and all(_KANA_OR_KANJI.fullmatch(ch) for ch in wide) and re.search(
            f"{_KANA_OR_KANJI.pattern}{{2}}", japanese):
        return japanese
    cyrillic = raw.decode("cp866")
    words = _words_past_ascii(cyrillic)
    if words and all(ch.isascii() or _is_cyrillic(ch) for ch in cyrillic) and all(
            all(map(_is_cyrillic, word)) and _cased_as_a_word(word) for word in words):
        return cyrillic
    return None


def _words_past_ascii(name: str) -> list[str]:
    return [word for word in re.findall(r"[^\W\d_]+", name) if not word.isascii()]


def _cased_as_a_word(word: str) -> bool:
    return word.islower() or word.istitle() or word.isupper()


def _is_cyrillic(ch: str) -> bool:
    return "\u0400" <= ch <= "\u04ff"




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
        return Extractor("zip-members", "5")

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
            raise ExtractionError(f"more than {limits.max_members} members: over the limit "
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
