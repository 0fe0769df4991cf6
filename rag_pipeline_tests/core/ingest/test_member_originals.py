"""A container member's bytes read again from its container, by the path the documents table
records for it (the container's path, ``/``, the member's name)."""

from __future__ import annotations

import email.message
from pathlib import Path

from rag_pipeline.core.ingest.member_originals import member_bytes
from rag_pipeline_tests.core.ingest.archives import zipped

ATTACHMENT = b"%PDF-1.4 the attachment's own bytes"


def test_a_member_of_an_archive_a_mail_and_a_nested_archive(tmp_path: Path):
    (tmp_path / "eng").mkdir()
    inner = zipped({"deep/b.txt": b"nested member\n"})
    (tmp_path / "eng" / "exports.zip").write_bytes(zipped({"exports/a.md": b"# A\n", "inner.zip": inner}))
    mail = email.message.EmailMessage()
    mail["Subject"] = "Offer"
    mail.set_content("The offer is attached.")
    mail.add_attachment(ATTACHMENT, maintype="application", subtype="pdf", filename="offer.pdf")
    (tmp_path / "offer.eml").write_bytes(bytes(mail))
    assert member_bytes(tmp_path / "eng" / "exports.zip" / "exports" / "a.md") == b"# A\n"
    assert member_bytes(f"{tmp_path}/eng/exports.zip/inner.zip/deep/b.txt") == b"nested member\n"
    assert member_bytes(f"{tmp_path}/offer.eml/offer.pdf") == ATTACHMENT
    # A name the container does not hold, a plain file's "member", a container that is gone.
    assert member_bytes(f"{tmp_path}/eng/exports.zip/exports/missing.md") is None
    (tmp_path / "plain.md").write_text("# plain\n")
    assert member_bytes(f"{tmp_path}/plain.md/x.txt") is None
    assert member_bytes(f"{tmp_path}/gone.zip/exports/a.md") is None


def test_a_container_its_reader_library_chokes_on_holds_no_member(tmp_path: Path):
    """A ZIP entry named by a NUL byte raises IndexError in zipfile: a corpus run fails that
    archive with the reason; read again for a view, it is no answer either, not an error."""
    damaged = zipped({"Xa.md": b"# A\n", "b.md": b"# B\n"}).replace(b"Xa.md", b"\x00a.md")
    (tmp_path / "bundle.zip").write_bytes(damaged)
    assert member_bytes(f"{tmp_path}/bundle.zip/b.md") is None
