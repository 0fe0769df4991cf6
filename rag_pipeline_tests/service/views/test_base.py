"""Tests for ``rag_pipeline.service.views.base``: which original a view may open."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.service.views.base import ViewRequest


def test_a_member_of_a_container_never_opens_the_container_as_itself(tmp_path: Path):
    (tmp_path / "mail.eml").write_bytes(b"From: a\n\nbody")
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.7")
    member = DocumentInfo("mail.eml/report.pdf", "report", str(tmp_path / "mail.eml"), "pdf", ())
    alone = DocumentInfo("report.pdf", "report", str(tmp_path / "report.pdf"), "pdf", (),
                         content_sha256=hashlib.sha256(b"%PDF-1.7").hexdigest())
    gone = DocumentInfo("old.pdf", "old", str(tmp_path / "old.pdf"), "pdf", ())
    assert ViewRequest(member, "text", 0, 4).original is None
    assert ViewRequest(alone, "text", 0, 4).original == tmp_path / "report.pdf"
    assert ViewRequest(gone, "text", 0, 4).original is None
