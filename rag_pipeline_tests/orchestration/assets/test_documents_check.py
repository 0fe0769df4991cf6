"""``documents``' warning check: it fails while a document failed to extract (the asset shows
amber), never stops the run, and passes again once the file is gone."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.assets.documents import NO_FAILED_DOCUMENTS
from rag_pipeline.orchestration.automation import DOCUMENTS_JOB
from rag_pipeline_tests.fake_embedder import hashed_spec


def _check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def test_a_failed_document_fails_the_warning_check_and_the_run_goes_on(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.md").write_text("# Notes\n\nThe exporter runs nightly.\n", encoding="utf-8")
    # Planted flaw: not a PDF at all, so its extraction fails (the check must trip on it).
    (corpus / "broken.pdf").write_bytes(b"this is not a pdf")
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=corpus, models=[hashed_spec()])
    instance = dg.DagsterInstance.ephemeral()
    first = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance)
    assert first.success
    check = _check(first)
    assert (check.check_name, check.passed, check.severity) == (
        NO_FAILED_DOCUMENTS, False, dg.AssetCheckSeverity.WARN)
    assert check.metadata["documents_failed"].value == 1
    assert "broken.pdf" in check.metadata["failed"].value

    (corpus / "broken.pdf").unlink()
    second = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance)
    check = _check(second)
    assert (check.passed, check.metadata["documents_failed"].value,
            check.metadata["failed"].value) == (True, 0, "no failed documents")
