"""``documents``: one row per source file, its canonical text, or why it failed."""


import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.documents import extract_corpus
from rag_pipeline.core.index_tables import document_records, documents_table
from rag_pipeline.core.markdown_table import markdown_table
from rag_pipeline.core.terminal import escape_controls
from rag_pipeline.resources import CorpusSource, IndexStorage


@dg.asset(
    description="One row per source file: canonical text, sha256, extractor stamp, status and "
                "the reason a failed file failed. Failed files are retried on every run.",
    kinds={"parquet", "duckdb"},
)
def documents(context: AssetExecutionContext, storage: IndexStorage,
              corpus: CorpusSource) -> dg.MaterializeResult:
    warehouse = storage.warehouse()
    root = corpus.prepare()
    previous = warehouse.read_or_none("documents")
    result = extract_corpus(root, document_records(previous) if previous is not None else (),
                            corpus.extraction_settings())
    warehouse.write("documents", documents_table(result.records))
    warehouse.refresh_views()
    for record in result.failed:
        context.log.warning(escape_controls(f"document {record.document_id} failed: {record.error}"))
    ok = len(result.records) - len(result.failed)
    context.log.info(f"documents: {ok} ok, {len(result.failed)} failed "
                     f"({result.extracted} extracted, {result.reused} unchanged) from {root}")
    return dg.MaterializeResult(metadata={
        "corpus": str(root),
        "documents_ok": ok,
        "documents_failed": len(result.failed),
        "extracted": result.extracted,
        "reused": result.reused,
        "characters": sum(len(r.canonical_text) for r in result.records),
        "failed": dg.MetadataValue.md(markdown_table(
            ["document", "reason"], [[r.document_id, r.error] for r in result.failed])
            if result.failed else "no failed documents"),
    })
