"""Tests for ``rag_pipeline.core.ingest.pdf_inflation``: a PDF's compressed streams are
measured before PDFium reads them, and a decompression bomb fails alone."""

from __future__ import annotations

import io
import zlib
from pathlib import Path

import pytest

from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.pdf_inflation import check_inflation, inflated_bytes
from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf

MIB = 1 << 20


def one_page(stream: bytes, image: bytes = b"") -> bytes:
    """A one-page PDF whose content stream is ``stream`` (deflated), with an image XObject of
    ``image`` (deflated) when given."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>"]
    packed = zlib.compress(stream, 9)
    objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(packed),
                                                                                      packed))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    if image:
        pixels = zlib.compress(image, 9)
        objects.append(b"<< /Type /XObject /Subtype /Image /Width 4096 /Height 4096 "
                       b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d "
                       b"/Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(pixels), pixels))
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref))
    return out.getvalue()


TEXT = b"BT /F1 12 Tf 72 720 Td (Hello from the page) Tj ET\n"


def test_the_text_streams_are_counted_and_an_images_are_not():
    blanks = TEXT + b" " * (3 * MIB)
    data = one_page(blanks, image=b"\0" * (16 * MIB))
    assert inflated_bytes(data) == len(blanks)
    assert inflated_bytes(data, limit=MIB) == MIB + MIB  # counting stops a piece past the limit
    with pytest.raises(ExtractionError, match=r"^its compressed streams expand past 2 MiB \(a "
                                              r"decompression bomb\): not read$"):
        check_inflation(data, limit=2 * MIB)
    check_inflation(data, limit=4 * MIB)


def test_a_pdf_whose_content_stream_inflates_past_the_limit_fails_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Found by an attack: a 1.4 MiB page whose content stream inflates to 1.5 GiB of blanks
    took 2.5 GiB inside PDFium, freed before the reading clock looked, and was read ``ok``."""
    monkeypatch.setattr("rag_pipeline.core.ingest.pdf_inflation.MAX_INFLATED_BYTES", 8 * MIB)
    (tmp_path / "bomb.pdf").write_bytes(one_page(TEXT + b" " * (9 * MIB)))
    (tmp_path / "fine.pdf").write_bytes(plain_pdf([["A page of plain text, read as ever."]]))
    records = {r.document_id: r for r in extract_corpus(tmp_path).records}
    assert (records["bomb.pdf"].status, records["bomb.pdf"].error) == (
        "failed", "its compressed streams expand past 8 MiB (a decompression bomb): not read")
    assert records["fine.pdf"].status == "ok"
    assert "A page of plain text, read as ever." in records["fine.pdf"].canonical_text
