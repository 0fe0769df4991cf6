"""A team's folder in every new format, end to end: a real Dagster materialisation into a temp
folder, then DuckDB: every file (and every member of a container) has its record, every chunk
slices its document exactly, citations carry each format's locator, and a second run reuses
everything."""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rag_pipeline.core.ingest import Anchor, format_named
from rag_pipeline.core.ingest.pdf_ocr import tesseract_version
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB
from rag_pipeline_tests.core.ingest.formats.test_epub import book
from rag_pipeline_tests.core.ingest.formats.test_image import encoded, whiteboard
from rag_pipeline_tests.core.ingest.formats.test_ipynb import analysis
from rag_pipeline_tests.core.ingest.formats.test_mail import with_attachments
from rag_pipeline_tests.core.ingest.formats.test_odf import report, workbook
from rag_pipeline_tests.core.ingest.formats.test_pptx import deck
from rag_pipeline_tests.core.ingest.formats.test_rst import GUIDE
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed")]


def _exports_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("exports/one.md", "# One\n\nThe first export names the delta gauges.\n")
        archive.writestr("../escape.md", "# Out\n")  # planted: fails alone
    return buffer.getvalue()


FILES = {
    "review.pptx": deck, "notes.epub": book, "report.odt": report, "hours.ods": workbook,
    "guide.rst": lambda: GUIDE, "analysis.ipynb": analysis, "site.eml": with_attachments,
    "board.png": lambda: encoded(whiteboard(["Whiteboard: ship the gauges",
                                             "by Friday, then review costs."]), "PNG", dpi=(300, 300)),
    "notes.md.gz": lambda: gzip.compress(b"# Notes\n\nCompressed notes on the flood.\n"),
    "exports.zip": _exports_zip,
    "README.Debian": lambda: b"Debian packaging notes for the gauges.\n",
    "guide.adoc": lambda: b"= Field Guide\n\n== Safety\n\nWear boots near the delta.\n",
}


@pytest.fixture(scope="module")
def materialised(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    root = tmp_path_factory.mktemp("team-folder")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, make in FILES.items():
        (corpus / name).write_bytes(make())
    spec = hashed_spec()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                      lambda s, *_: HashedEmbedder(s))
        defs = build_definitions(data_dir=root / "data", corpus_dir=corpus, models=[spec])
        instance = dg.DagsterInstance.ephemeral()
        embeddings = dg.MultiPartitionKey({"chunker": "header", "model": spec.key})
        for job, partition in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header"), (EMBEDDINGS_JOB, embeddings)):
            assert defs.resolve_job_def(job).execute_in_process(
                instance=instance, partition_key=partition, raise_on_error=False).success
        again = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance,
                                                                       raise_on_error=False)
    metadata = again.asset_materializations_for_node("documents")[0].metadata
    return root / "data" / "rag.duckdb", {name: metadata[name].value for name in ("extracted", "reused")}


def _query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_every_file_and_member_has_its_record(materialised):
    db, _ = materialised
    assert _query(db, "select document_id, format, status from documents order by 1") == [
        ("README.Debian", "text", "ok"),
        ("analysis.ipynb", "ipynb", "ok"),
        ("board.png", "image", "ok"),
        ("exports.zip", "zip", "ok"),
        ("exports.zip/%2E%2E/escape.md", "markdown", "failed"),
        ("exports.zip/exports/one.md", "markdown", "ok"),
        ("guide.adoc", "asciidoc", "ok"),
        ("guide.rst", "rst", "ok"),
        ("hours.ods", "ods", "ok"),
        ("notes.epub", "epub", "ok"),
        ("notes.md.gz", "markdown", "ok"),
        ("report.odt", "odt", "ok"),
        ("review.pptx", "pptx", "ok"),
        ("site.eml", "eml", "ok"),
        ("site.eml/attachment-153ff99931fd.eml", "eml", "ok"),  # named by their bytes
        ("site.eml/attachment-d37ed82d60d3.txt", "text", "ok"),
        ("site.eml/exports.zip", "zip", "ok"),
        ("site.eml/exports.zip/exports/one.txt", "text", "ok"),
        ("site.eml/readings (83260694f461).md", "markdown", "ok"),
        ("site.eml/readings (f814f32e8704).md", "markdown", "ok"),
    ]


def test_every_chunk_is_its_documents_canonical_slice_and_cites_its_locator(materialised):
    db, _ = materialised
    rows = _query(db, """
        select c.document_id, d.format, d.anchors, c."from", c."to",
               substring(d.canonical_text, c."from" + 1, c."to" - c."from") = c.content
        from chunks c join documents d using (document_id) where c.chunker = 'header'
        order by 1, 4""")
    assert all(exact for *_, exact in rows)
    first_fragment = {}
    for document_id, fmt, anchors, start, end, _ in rows:
        found = tuple(Anchor(a["start"], a["end"], a["locator"]) for a in anchors)
        first_fragment.setdefault(document_id, format_named(fmt).fragment(found, start, end))
    assert first_fragment["review.pptx"] == "#slide=1"
    assert first_fragment["analysis.ipynb"] == "#cell=1-3"  # one chunk over three cells
    assert first_fragment["notes.epub"].startswith("#chapter=OEBPS/text/ch1.xhtml&char=")
    assert first_fragment["hours.ods"].startswith("#sheet=Hours%202024&range=A1:")
    assert first_fragment["board.png"] == "#page=1"
    assert first_fragment["guide.rst"].startswith("#char=")


def test_a_second_run_reuses_everything_the_archive_with_a_failed_member_too(materialised):
    _, second = materialised
    # exports.zip holds a failed member: it stands until the archive changes, as a failed file
    # does, so the archive is not read again and all 20 records are reused.
    assert second == {"extracted": 0, "reused": 20}
