"""The ``documents`` asset on PDFs, through Dagster: a laid-out manual and a scanned page, their
rows in DuckDB (``documents``, ``document_pages``, ``chunks``) and a second run that reads nothing."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rag_pipeline.core.ingest.pdf_ocr import tesseract_version
from rag_pipeline.core.storage.table_names import CHUNKS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB
from rag_pipeline_tests.core.ingest.pdf_fixtures import manual_pdf, plain_pdf, scanned_pdf
from rag_pipeline_tests.fake_embedder import hashed_spec

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(tesseract_version() is None,
                                 reason="tesseract is not installed (.ci/setup installs it)")]

SCANNED_LINES = ["Scanned pages become searchable text.", "Tesseract reads every word on them."]


def _query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _metadata(result: dg.ExecuteInProcessResult, node: str) -> dict[str, object]:
    (materialization,) = result.asset_materializations_for_node(node)
    return {key: getattr(value, "value", value) for key, value in materialization.metadata.items()}


def test_pdfs_are_laid_out_ocrd_paged_and_chunked_by_their_outline(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "manual.pdf").write_bytes(manual_pdf())
    (corpus / "scan.pdf").write_bytes(scanned_pdf(plain_pdf([SCANNED_LINES])))
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=corpus, models=[hashed_spec()])
    instance = dg.DagsterInstance.ephemeral()
    first = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance)
    assert first.success
    meta = _metadata(first, "documents")
    assert (meta["documents_ok"], meta["extracted"], meta["ocr_pages"]) == (2, 2, 1)
    assert meta["low_confidence_pages"] == "no OCR page under its confidence floor"
    assert defs.resolve_job_def(CHUNKS_JOB).execute_in_process(instance=instance,
                                                                partition_key="header").success
    db = tmp_path / "data" / "rag.duckdb"
    assert _query(db, "select document_id, page, source, chars, flagged from document_pages "
                      "order by all") == [
        ("manual.pdf", 1, "text", 0, False), ("manual.pdf", 2, "text", 291, False),
        ("manual.pdf", 3, "text", 108, False), ("manual.pdf", 4, "text", 168, False),
        ("scan.pdf", 1, "ocr", 74, False)]
    ((confidence,),) = _query(db, "select ocr_confidence from document_pages where source = 'ocr'")
    assert confidence >= 90
    assert _query(db, "select extractor, n.value from documents, unnest(notes) t(n) "
                      "where document_id = 'scan.pdf' and n.name = 'ocr_pages'") == [
        ("pdf-pdfium+tesseract", "1")]
    # Every manual chunk is labelled by its outline entry; none holds a running head or a
    # page number, and the sentence over the page break is whole in one chunk.
    # (chunks reach DuckDB with a published generation; here they are read from the warehouse.)
    warehouse = Warehouse(tmp_path / "data")
    table = warehouse.read_file(warehouse.version(CHUNKS, {"chunker": "header"}).file).to_pylist()
    chunks = [(row["section"], row["content"]) for row in table if row["document_id"] == "manual.pdf"]
    # The footnote in small type is a section of its own, labelled as the footnote it is; the
    # table on page 3 is one row a chunk.
    assert [section for section, _ in chunks] == ["Introduction", "Introduction (footnote)",
                                                  "Tables", "Tables", "Columns"]
    assert all("Layout Test Manual" not in content for _, content in chunks)
    assert any("not finished at the foot of the page and goes on at the top of the next one."
               in content for _, content in chunks)
    assert [row["content"] for row in table if row["document_id"] == "scan.pdf"] == [
        " ".join(SCANNED_LINES)]
    second = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance)
    assert (_metadata(second, "documents")["extracted"], _metadata(second, "documents")["reused"]) == (0, 2)
