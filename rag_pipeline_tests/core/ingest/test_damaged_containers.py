"""Damaged files of the formats added with containers, read through the corpus path
(:func:`~rag_pipeline.core.ingest.containers.extract_file` or ``extract_document``): every
copy gives records with a status and, when not ``ok``, a reason; no exception leaves them,
since one would stop a whole run for one bad file."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
from pathlib import Path

import pytest

from rag_pipeline.core.ingest.containers import expands, extract_file
from rag_pipeline.core.ingest.corpus import extract_document
from rag_pipeline_tests.core.ingest.formats.test_asciidoc import GUIDE as ADOC
from rag_pipeline_tests.core.ingest.formats.test_epub import book
from rag_pipeline_tests.core.ingest.formats.test_info import MANUAL
from rag_pipeline_tests.core.ingest.formats.test_ipynb import analysis
from rag_pipeline_tests.core.ingest.formats.test_mail import with_attachments
from rag_pipeline_tests.core.ingest.formats.test_odf import deck as odp
from rag_pipeline_tests.core.ingest.formats.test_odf import report, workbook
from rag_pipeline_tests.core.ingest.formats.test_pptx import deck
from rag_pipeline_tests.core.ingest.formats.test_rst import GUIDE as RST
from rag_pipeline_tests.core.ingest.test_containers import EXPORTS, zipped
from rag_pipeline_tests.core.ingest.test_damaged_files import _damaged

COPIES = 20


def _tar_gz() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in EXPORTS.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


VALID = {
    "deck.pptx": deck, "book.epub": book, "report.odt": report, "hours.ods": workbook,
    "slides.odp": odp, "analysis.ipynb": analysis, "guide.rst": lambda: RST,
    "guide.adoc": lambda: ADOC, "manual.info": lambda: MANUAL, "site.eml": with_attachments,
    "inbox.mbox": lambda: b"From a@example.org Tue Dec  1 09:00:00 2026\n" + with_attachments(),
    "exports.zip": lambda: zipped(EXPORTS), "exports.tar.gz": _tar_gz,
    "notes.md.gz": lambda: gzip.compress(b"# Notes\n\n" + "".join(
        f"Line {i} reads gauge {i * 7 % 13} at {i % 24} hours.\n" for i in range(200)).encode()),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_damaged_copies_become_records_with_reasons(tmp_path: Path, name: str):
    data, rng = VALID[name](), random.Random(f"damage-{name}")
    for copy in range(COPIES):
        path = tmp_path / f"{copy}-{name}"
        path.write_bytes(_damaged(data, rng))
        records = (extract_file(path, tmp_path).records if expands(path)
                   else [extract_document(path, tmp_path)])
        assert records and all(r.status in ("ok", "failed", "skipped") for r in records)
        assert all(r.error for r in records if not r.ok)
        for record in records:
            text = record.canonical_text
            assert all(0 <= a.start <= a.end <= len(text) for a in record.anchors)
            assert all(0 <= s.start <= s.end <= len(text) for s in record.sections)
