"""The index stage: what a published generation contains (:mod:`.tables`).

``GENERATION_TABLES`` is the one declaration of a generation's tables and the input each is
built from; publication (:mod:`rag_pipeline.core.index.generations`), the single-process build
(:mod:`rag_pipeline.core.index.partition_build`), the loader (:mod:`rag_pipeline.core.index.store`),
``rag-pipeline index``'s "is the index current" and the Dagster ``index_generation`` asset all
read it, and so does rag.duckdb, the snapshot of the published tables users query
(:mod:`rag_pipeline.core.index.query_db`).
"""

from rag_pipeline.core.index.tables import (
    CHUNKER,
    GENERATION_TABLES,
    MODEL,
    BuiltTable,
    GenerationTable,
    InconsistentBuildError,
    Scope,
    TableFile,
    check_consistent,
    generation_table,
    latest_tables,
    stale_tables,
)

__all__ = ["CHUNKER", "GENERATION_TABLES", "MODEL", "BuiltTable", "GenerationTable",
           "InconsistentBuildError", "Scope", "TableFile", "check_consistent", "generation_table",
           "latest_tables", "stale_tables"]
