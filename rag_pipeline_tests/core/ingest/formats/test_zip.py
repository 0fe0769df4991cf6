"""ZIP: members in the archive's order, hidden ones and directories left out, each checked
(records, limits and bombs through the corpus: ``test_containers.py``)."""

from __future__ import annotations

import io
import zipfile

import pytest

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.formats.zip import ZipFormat

ZIP = ZipFormat()


def archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        zipped.writestr("docs/", b"")  # a directory entry: no member
        zipped.writestr("docs/a.md", b"# A\n")
        zipped.writestr("docs\\windows.txt", b"made on Windows\n")  # a backslash separates
        zipped.writestr(".git/config", b"[core]\n")  # hidden: no member
        zipped.writestr("./docs/a.md", b"# again\n")  # the same path once more: read as a.md (2)
        zipped.writestr("docs/w\nx.md", b"newline\n")  # shown as docs/w_x.md ...
        zipped.writestr("docs/w_x.md", b"underscore\n")  # ... so this one is docs/w_x (2).md
        info = zipfile.ZipInfo("docs/link")
        info.external_attr = 0o120777 << 16  # a symlink entry
        zipped.writestr(info, b"/etc/passwd")
    return buffer.getvalue()


def test_members_and_the_listing():
    assert ZIP.extract(archive(), "docs").canonical_text == (
        "docs/a.md\ndocs/windows.txt\ndocs/a (2).md\ndocs/w_x.md\ndocs/w_x (2).md\ndocs/link\n")
    from rag_pipeline.core.ingest.members import Budget, ContainerLimits, Unpacking

    members = list(ZIP.expand(archive(), "docs", Unpacking(ContainerLimits(), Budget(10**6), 10**6)).members)
    assert [(m.name, m.data, m.error, m.skip, m.left_out) for m in members] == [
        ("docs/a.md", b"# A\n", None, None, ""),
        ("docs/windows.txt", b"made on Windows\n", None, None, ""),
        (".git/config", b"", None, None, "hidden"),
        ("docs/a (2).md", b"# again\n", None, None, ""), ("docs/w_x.md", b"newline\n", None, None, ""),
        ("docs/w_x (2).md", b"underscore\n", None, None, ""),
        ("docs/link", b"", None, "a symlink inside the archive: not followed", "")]


def test_not_a_zip_fails_with_its_reason():
    with pytest.raises(ExtractionError, match="^unreadable ZIP archive: BadZipFile: File is not a zip file$"):
        ZIP.extract(b"PK not really", "broken")


def without_utf8_flags(data: bytes) -> bytes:
    """``data`` with general-purpose flag bit 11 (UTF-8 names) cleared in every local and
    central header, as archivers that write UTF-8 names without saying so leave it."""
    patched = bytearray(data)
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (found := patched.find(signature, start)) >= 0:
            position = found + flags_at
            flags = int.from_bytes(patched[position:position + 2], "little") & ~0x800
            patched[position:position + 2] = flags.to_bytes(2, "little")
            start = found + 4
    return bytes(patched)


def test_a_utf8_name_without_its_flag_is_read_as_utf8_and_other_bytes_as_code_page_437():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        zipped.writestr("Übersicht/年報.md", b"# A\n")
        zipped.writestr("cafX.txt", b"x\n")
    # "café" in code page 437 (0x82), which is no UTF-8.
    data = without_utf8_flags(buffer.getvalue()).replace(b"cafX", b"caf\x82")
    assert [info.flag_bits & 0x800 for info in zipfile.ZipFile(io.BytesIO(data)).infolist()] == [0, 0]
    assert ZIP.extract(data, "names").canonical_text == "Übersicht/年報.md\ncafé.txt\n"


def test_a_name_in_a_windows_console_code_page_is_read_in_it_and_a_western_one_stays_437():
    """Archives made by Windows in Russia or Japan name members in code page 866 or Shift-JIS,
    without the UTF-8 flag. A Western name in 437 reads as Latin words; a Russian or Japanese
    name in 437 reads as none (``Отчёт`` is ``ÄΓτ±Γ``)."""
    names = {"AAAAA.txt": "Отчёт.txt".encode("cp866"), "BBBBBB.md": "議事録.md".encode("cp932"),
             "CCCC.txt": "café.txt".encode("cp437"), "DDDDDDDDD.md": "ACCÉLÉRER.md".encode("cp437"),
             "EEE.txt": "ДЛЯ.txt".encode("cp866")}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for placeholder in names:
            zipped.writestr(placeholder, b"x\n")
    data = buffer.getvalue()
    for placeholder, raw in names.items():
        assert len(placeholder.encode()) == len(raw)
        data = data.replace(placeholder.encode(), raw)
    # Capitals alone, ``ДЛЯ`` is ``äïƒ`` in 437, a Latin word: it stays so (the one reading
    # that cannot be told from a Western name).
    assert ZIP.extract(data, "names").canonical_text == (
        "Отчёт.txt\n議事録.md\ncafé.txt\nACCÉLÉRER.md\näïƒ.txt\n")


def test_a_unicode_path_extra_field_names_the_member_when_made_for_its_name():
    """7-Zip and Info-ZIP write the UTF-8 name in an extra field beside a name in the local
    code page; one whose checksum is of another name (the entry renamed since) is ignored."""
    import struct
    import zlib

    def unicode_path(for_name: bytes, name: str) -> bytes:
        field = b"\x01" + struct.pack("<I", zlib.crc32(for_name)) + name.encode()
        return struct.pack("<HH", 0x7075, len(field)) + field

    raw = "Ünïcode.txt".encode("cp437")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for placeholder, extra in (("XXXXXXXXXXX", unicode_path(raw, "Ünïcode — 統一.txt")),
                                   ("YYYYYYYYYYY", unicode_path(b"other", "wrong.txt"))):
            info = zipfile.ZipInfo(placeholder)
            info.extra = b"\xfe\xca\x00\x00" + extra  # after another field, as jar tools write
            zipped.writestr(info, b"x\n")
    data = buffer.getvalue().replace(b"XXXXXXXXXXX", raw).replace(b"YYYYYYYYYYY", raw)
    assert ZIP.extract(data, "names").canonical_text == "Ünïcode — 統一.txt\nÜnïcode.txt\n"


def test_a_member_whose_compressed_data_is_damaged_fails_alone(tmp_path):
    """Found by a second attack: lzma's error is no OSError, and it stopped the whole run."""
    import io
    import zipfile

    from rag_pipeline.core.ingest import extract_corpus

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_LZMA) as made:
        made.writestr("good.txt", "good member text " * 20, compress_type=zipfile.ZIP_STORED)
        made.writestr("bad.txt", "some member text that will be damaged " * 50)
    data = bytearray(buffer.getvalue())
    at = data.find(b"bad.txt") + len(b"bad.txt")
    for k in range(at + 20, at + 60):
        data[k] ^= 0x5A
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "damaged.zip").write_bytes(bytes(data))
    (root / "other.txt").write_text("Another document in the same run.\n", encoding="utf-8")
    assert {r.document_id: (r.status, r.error) for r in extract_corpus(root).records} == {
        "damaged.zip": ("ok", None), "damaged.zip/bad.txt": (
            "failed", "unreadable member: LZMAError: Corrupt input data"),
        "damaged.zip/good.txt": ("ok", None), "other.txt": ("ok", None)}
