"""A container member's original (a PDF mailed as an attachment, a file in a zip) is read again
from its container, so its page images and its original file are served like any other's."""

from __future__ import annotations

import email.message
import hashlib
import io
import stat
import zipfile
from pathlib import Path

from fpdf import FPDF

from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.core.ingest.member_originals import member_bytes
from rag_pipeline.service.views.base import ViewRequest
from rag_pipeline.service.views.members import member_file
from rag_pipeline.service.views.pages import page_png


def _pdf(text: str) -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def test_a_mailed_pdf_has_its_original_and_page_images(tmp_path: Path):
    attachment = _pdf("Offer letter: the starting salary is 58,000 EUR.")
    mail = email.message.EmailMessage()
    mail["Subject"] = "Offer"
    mail.set_content("Attached.")
    mail.add_attachment(attachment, maintype="application", subtype="pdf", filename="offer.pdf")
    (tmp_path / "offer.eml").write_bytes(bytes(mail))
    info = DocumentInfo("offer.eml/offer.pdf", "Offer letter", f"{tmp_path}/offer.eml/offer.pdf",
                        "pdf", (), content_sha256=hashlib.sha256(attachment).hexdigest())
    original = ViewRequest(info, "", 0, 0).original
    assert original is not None and original.data == attachment
    copy = member_file(info.path)
    assert (original.name, copy.name, stat.S_IMODE(copy.stat().st_mode)) == (
        "offer.pdf", "offer.pdf", 0o600)
    assert page_png(original, 1).startswith(b"\x89PNG\r\n\x1a\n")


def test_a_zip_member_whose_archive_is_gone_has_no_original(tmp_path: Path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("exports/a.md", "# A\n")
    (tmp_path / "exports.zip").write_bytes(buffer.getvalue())
    info = DocumentInfo("exports.zip/exports/a.md", "A", f"{tmp_path}/exports.zip/exports/a.md",
                        "markdown", (), content_sha256=hashlib.sha256(b"# A\n").hexdigest())
    assert ViewRequest(info, "# A\n", 0, 0).original.data == b"# A\n"
    (tmp_path / "exports.zip").unlink()
    assert ViewRequest(info, "# A\n", 0, 0).original is None


def test_a_member_whose_bytes_changed_since_indexing_has_no_original(tmp_path: Path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("exports/a.md", "# A, edited since\n")
    (tmp_path / "exports.zip").write_bytes(buffer.getvalue())
    # Indexed when the member held "# A\n": the container now holds other bytes under its name.
    info = DocumentInfo("exports.zip/exports/a.md", "A", f"{tmp_path}/exports.zip/exports/a.md",
                        "markdown", (), content_sha256=hashlib.sha256(b"# A\n").hexdigest())
    assert ViewRequest(info, "# A\n", 0, 0).original is None


def test_a_members_copy_is_read_once_while_its_container_is_unchanged(tmp_path: Path, monkeypatch):
    import rag_pipeline.service.views.members as members

    reads: list[str] = []

    def counted(path: str):
        reads.append(path.rsplit("/", 2)[-2:])
        return member_bytes(path)

    monkeypatch.setattr(members, "member_bytes", counted)

    def zipped(text: str) -> None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("exports/a.md", text)
        (tmp_path / "exports.zip").write_bytes(buffer.getvalue())

    zipped("# A\n")
    path = f"{tmp_path}/exports.zip/exports/a.md"
    first = member_file(path)
    assert (member_file(path), member_file(path)) == (first, first)
    assert (reads, first.read_bytes()) == ([["exports", "a.md"]], b"# A\n")
    zipped("# A, edited\n")  # the container changed: its member is read again
    assert member_file(path).read_bytes() == b"# A, edited\n"
    assert reads == [["exports", "a.md"]] * 2
