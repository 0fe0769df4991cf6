"""Tar: plain and compressed archives streamed, regular files as members (records, limits and
bombs through the corpus: ``test_containers.py``)."""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

import pytest

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.formats import format_for
from rag_pipeline.core.ingest.formats.tar import TarFormat

TAR = TarFormat()


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_every_compression_streams_the_same_members(mode: str):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        archive.addfile(tarfile.TarInfo("docs"))  # an empty regular file: a member
        for name, data in (("docs/a.md", b"# A\n"), ("docs/.hidden", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    assert TAR.extract(buffer.getvalue(), "docs").canonical_text == "docs\ndocs/a.md\n"


def test_an_entry_appended_under_the_same_name_is_read_too():
    from rag_pipeline.core.ingest.members import Budget, ContainerLimits, Unpacking

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in (("d/a.md", b"first\n"), ("d/a.md", b"updated\n")):  # `tar -r`
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    members = TAR.expand(buffer.getvalue(), "d", Unpacking(ContainerLimits(), Budget(10**6), 10**6))
    assert [(m.name, m.data) for m in members.members] == [("d/a.md", b"first\n"),
                                                           ("d/a (2).md", b"updated\n")]


@pytest.mark.parametrize("name", ["a.tar", "a.tar.gz", "a.TGZ", "a.tar.bz2", "a.tbz2", "a.tar.xz", "a.txz"])
def test_the_double_suffix_names_a_tar_archive(name: str):
    assert format_for(Path(name)) is TAR or format_for(Path(name)).name == "tar"


def test_not_a_tar_fails_with_its_reason():
    with pytest.raises(ExtractionError, match="^unreadable tar archive: ReadError: "):
        TAR.extract(b"not a tar at all" * 100, "broken")


def test_a_member_whose_name_is_nothing_once_made_safe_is_counted_as_left_out(tmp_path):
    """Found by an attack: a member named by a NUL lost its text without a word; the ``./``
    folder tar writes first is no member and is not counted."""
    import io
    import tarfile

    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline.core.ingest.extracted import left_out

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        folder = tarfile.TarInfo("./")
        folder.type = tarfile.DIRTYPE
        archive.addfile(folder)
        for name, data in (("./a.md", b"# A\n\nKept.\n"), ("\x00lost.md", b"# Lost\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "docs.tar").write_bytes(buffer.getvalue())
    own = extract_corpus(root).records[0]
    assert own.notes == (("members", "1"), ("members_ok", "1"), ("members_failed", "0"),
                         ("members_skipped", "0"), ("members_unnamed", "1"))
    assert left_out(own.notes) == ["1 archive member(s) whose name is nothing once made safe "
                                   "left out"]


def _three_members(mode: str = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode, format=tarfile.GNU_FORMAT) as archive:
        for name in ("one.md", "two.md", "three.md"):
            info = tarfile.TarInfo(name)
            info.size = len(f"# {name}\n")
            archive.addfile(info, io.BytesIO(f"# {name}\n".encode()))
    return buffer.getvalue()


def test_a_damaged_member_header_or_a_cut_inside_one_fails_the_archive_saying_where():
    """Found by an attack: ``tarfile`` ends its listing silently there, so one flipped byte
    in the second header lost it and the third member, and the archive was ``ok``."""
    import gzip

    from rag_pipeline.core.ingest.members import Budget, ContainerLimits, Unpacking

    def members(data: bytes) -> list[str]:
        unpacking = Unpacking(ContainerLimits(), Budget(10**6), 10**6)
        return [member.name for member in TAR.expand(data, "t", unpacking).members]

    whole = _three_members()
    assert members(whole) == members(gzip.compress(whole)) == ["one.md", "two.md", "three.md"]
    flipped = bytearray(whole)
    flipped[1024 + 148] ^= 1  # the second header's checksum
    for data in (bytes(flipped), gzip.compress(bytes(flipped))):
        with pytest.raises(ExtractionError) as raised:
            members(data)
        assert str(raised.value) == (
            "damaged tar archive: the member header at byte 1,024 of the unpacked archive is "
            "unreadable, so the members after it cannot be listed")
    with pytest.raises(ExtractionError) as raised:
        members(whole[:1024 + 300])
    assert str(raised.value) == ("tar archive cut short: it ends inside a member header at byte "
                                 "1,024 of the unpacked archive")
    assert members(whole[:1024]) == ["one.md"]  # cut at a header's start: as GNU tar, unsaid
    # Found by a support team: a .tar.gz cut in half (a download stopped) failed as
    # "unreadable tar archive: ReadError: unexpected end of data".
    rng = random.Random(0)  # members that do not compress, so half the file is half of them
    unpacked = io.BytesIO()
    with tarfile.open(fileobj=unpacked, mode="w") as archive:
        for name in ("one.md", "two.md", "three.md"):
            data = bytes(rng.choice(b"abcdef0123456789") for _ in range(6000))
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    compressed = gzip.compress(unpacked.getvalue(), mtime=0)
    with pytest.raises(ExtractionError) as raised:
        members(compressed[:len(compressed) // 2])
    assert str(raised.value) == (
        "tar archive cut short: its compressed stream ends before the archive does, at or after "
        "the member header at byte 13,312 of the unpacked archive (ReadError: "
        "unexpected end of data)")


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE])
def test_an_extended_header_past_its_limit_fails_the_archive_before_it_is_read(kind: bytes):
    """Found by an attack: a long name (or pax header) claiming 1.5 GB in a 1.5 MB .tar.gz was
    read whole by ``tarfile`` before any member was listed: 3 GiB of memory, past every archive
    limit. Its size is checked first; a long name of a real length is still read."""
    import gzip

    from rag_pipeline.core.ingest.formats.tar import MAX_HEADER_BYTES

    def with_header(size: int, payload: bytes) -> bytes:
        header = tarfile.TarInfo("././@LongLink" if kind == tarfile.GNUTYPE_LONGNAME else "pax")
        header.type, header.size = kind, size
        member = tarfile.TarInfo("a.md")
        member.size = 4
        return gzip.compress(header.tobuf(format=tarfile.GNU_FORMAT) + payload
                             + member.tobuf(format=tarfile.GNU_FORMAT) + b"# A\n".ljust(512, b"\0")
                             + b"\0" * 1024)

    claimed = 8 * MAX_HEADER_BYTES
    with pytest.raises(ExtractionError) as raised:
        TAR.extract(with_header(MAX_HEADER_BYTES + 1, b"\0" * claimed), "bomb")
    assert str(raised.value) == (
        f"an extended header (a long name or a pax header) of {MAX_HEADER_BYTES + 1} bytes, over the "
        f"limit of {MAX_HEADER_BYTES} bytes: a tar bomb or a damaged archive")
    long_name = "d/" + "n" * 300 + ".md"
    if kind == tarfile.GNUTYPE_LONGNAME:
        payload = long_name.encode() + b"\0"
    else:
        record = f" path={long_name}\n"
        payload = f"{len(record) + len(str(len(record) + 3))}{record}".encode()
    assert TAR.extract(with_header(len(payload), payload.ljust(512 * (len(payload) // 512 + 1), b"\0")),
                       "fine").canonical_text == f"{long_name}\n"
