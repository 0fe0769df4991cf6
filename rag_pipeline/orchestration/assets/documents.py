"""``documents``: one row per source file, its canonical text, or why it failed."""


import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.index.build import read_documents
from rag_pipeline.core.index.builders import DOCUMENTS_SCHEMA
from rag_pipeline.core.ingest import DocumentRecord
from rag_pipeline.core.ingest.reconcile import reconciliation_markdown
from rag_pipeline.core.text.markdown_table import markdown_table
from rag_pipeline.core.text.terminal import escape_controls
from rag_pipeline.orchestration.asset_metadata import table_metadata
from rag_pipeline.orchestration.corpus_watch import CORPUS_FINGERPRINT, watch_token
from rag_pipeline.orchestration.pools import DOCUMENTS_POOL
from rag_pipeline.orchestration.resources import CorpusSource, IndexStorage

NO_FAILED_DOCUMENTS = "no_failed_documents"


def failed_documents_check(failed: list[DocumentRecord]) -> dg.AssetCheckResult:
    """Fails, as a warning, while any document failed to extract: the asset shows amber, the
    run goes on (a failed file is read again when it changes, when its extractor is upgraded or
    when ``--retry-failed`` asks; the rest of the corpus is indexed)."""
    return dg.AssetCheckResult(
        check_name=NO_FAILED_DOCUMENTS, passed=not failed, severity=dg.AssetCheckSeverity.WARN,
        metadata={"documents_failed": len(failed),
                  "failed": dg.MetadataValue.md(markdown_table(
                      ["document", "reason"], [[r.document_id, r.error] for r in failed])
                      if failed else "no failed documents")})


@dg.asset(
    pool=DOCUMENTS_POOL,
    check_specs=[dg.AssetCheckSpec(
        NO_FAILED_DOCUMENTS, asset="documents", blocking=False,
        description="No document failed to extract (warning: a failed one is named with its "
                    "reason and retried once it changes, or with retry_failed; the others are "
                    "indexed).")],
    description="One row per source file: canonical text, sections, anchors, sha256, extractor "
                "stamp, status (ok, failed, or skipped when no format reads it) and the reason; "
                "beside it ``document_pages``, one row per PDF page (text layer or OCR, its "
                "confidence, flagged under the floor). "
                "A failed file is retried once it changes (or with retry_failed). A run that "
                "finds the corpus gone, empty or far smaller than the last one (max_shrink) "
                "fails and writes nothing; beside the table, ``reconciliation`` says what the "
                "run added, changed, renamed, deleted, left, failed and skipped, and the hidden "
                "names it left out. Its "
                "data version is the table's content digest, so an unchanged corpus changes "
                "nothing downstream.",
    kinds={"parquet", "duckdb"},
)
def documents(context: AssetExecutionContext, storage: IndexStorage,
              corpus: CorpusSource) -> dg.MaterializeResult:
    warehouse = storage.warehouse()
    source = corpus.source()
    # Before reading: a file written during the run changes the source after this, so the
    # corpus watch launches another run for it.
    fingerprint = watch_token(corpus)
    read = read_documents(warehouse, source, corpus.extraction_settings(), corpus.max_shrink,
                          corpus.allow_shrink)
    result, report = read.result, read.result.report
    version, pages = read.written.version, read.written.pages
    flagged = [row for row in pages.to_pylist() if row["flagged"]]
    for record in result.failed:
        context.log.warning(escape_controls(f"document {record.document_id} failed: {record.error}"))
    for record in result.skipped:
        context.log.info(escape_controls(f"document {record.document_id} skipped: {record.error}"))
    ok = len(result.records) - len(result.failed) - len(result.skipped)
    changed = read.written.changed
    context.log.info(f"documents: {ok} ok, {len(result.failed)} failed, {len(result.skipped)} "
                     f"skipped ({result.extracted} extracted, {result.reused} unchanged, {result.moved} "
                     f"moved, {result.not_retried} failed not retried) from "
                     f"{source.uri}" + (f" at {report.revision}" if report.revision else "")
                     + f"; {'changed' if changed else 'no change'}; {report.summary()}")
    return dg.MaterializeResult(data_version=dg.DataVersion(version.digest),
                                check_results=[failed_documents_check(list(result.failed))],
                                metadata={
        **table_metadata(version, DOCUMENTS_SCHEMA),
        "corpus": source.uri,
        "source_revision": report.revision or "",
        CORPUS_FINGERPRINT: fingerprint,
        **{f"reconciliation.{change}": count for change, count in report.counts().items()},
        "reconciliation": dg.MetadataValue.md(reconciliation_markdown(report)),
        "not_retried": result.not_retried,
        "changed": changed,
        "documents_ok": ok,
        "documents_failed": len(result.failed),
        "documents_skipped": len(result.skipped),
        "extracted": result.extracted,
        "reused": result.reused,
        "moved": result.moved,
        "characters": sum(len(r.canonical_text) for r in result.records),
        "failed": dg.MetadataValue.md(markdown_table(
            ["document", "reason"], [[r.document_id, r.error] for r in result.failed])
            if result.failed else "no failed documents"),
        "skipped": dg.MetadataValue.md(markdown_table(
            ["document", "reason"], [[r.document_id, r.error] for r in result.skipped])
            if result.skipped else "no skipped files"),
        "ocr_pages": sum(1 for source in pages.column("source").to_pylist() if source == "ocr"),
        "low_confidence_pages": dg.MetadataValue.md(markdown_table(
            ["document", "page", "OCR confidence"],
            [[row["document_id"], row["page"], row["ocr_confidence"]] for row in flagged])
            if flagged else "no OCR page under its confidence floor"),
    })
