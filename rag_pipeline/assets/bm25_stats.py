"""``bm25_stats``: per-term df and idf, chunk lengths and parameters, per analyzer.

Writes four tables a person can query: ``bm25_terms``, ``bm25_chunks``, ``bm25_postings`` and
``bm25_params``, each partitioned by chunker and carrying an ``analyzer`` column.
"""

import hashlib

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.analyzers import Analyzer
from rag_pipeline.core.bm25 import K1, B
from rag_pipeline.core.index_tables import bm25_stats_tables
from rag_pipeline.core.table_names import CHUNKS
from rag_pipeline.partitions import CHUNKER, chunker_partitions
from rag_pipeline.resources import IndexStorage


@dg.asset(
    partitions_def=chunker_partitions,
    deps=["chunks"],
    automation_condition=dg.AutomationCondition.eager(),
    description="BM25 statistics (k1 = 1.2, b = 0.75) over chunk `text`, for the plain and the "
                "English analyzers: tables bm25_terms, bm25_chunks, bm25_postings, bm25_params.",
    kinds={"parquet", "duckdb"},
)
def bm25_stats(context: AssetExecutionContext, storage: IndexStorage) -> dg.MaterializeResult:
    warehouse = storage.warehouse()
    partition = {CHUNKER: context.partition_key}
    chunks_version = warehouse.require_version(CHUNKS, partition)
    chunks = warehouse.read_file(chunks_version.file, columns=["chunk_id", "text"])
    tables = bm25_stats_tables(chunks)
    versions = [warehouse.write(name, table, partition, inputs={CHUNKS: chunks_version.file})
                for name, table in tables.items()]
    params = tables["bm25_params"].to_pylist()
    metadata = {"k1": K1, "b": B, "chunks": chunks.num_rows, "built_from": chunks_version.file,
                **{f"{v.table}_rows": v.rows for v in versions}}
    for row in params:
        analyzer = Analyzer(row["analyzer"])
        terms = sum(1 for a in tables["bm25_terms"].column("analyzer").to_pylist()
                    if a == analyzer.value)
        metadata[f"{analyzer.value}_terms"] = terms
        metadata[f"{analyzer.value}_avg_length"] = round(row["avg_length"], 2)
        metadata[f"{analyzer.value}_tokenizer"] = row["tokenizer"]
    digest = hashlib.sha256("".join(v.digest for v in versions).encode()).hexdigest()[:16]
    return dg.MaterializeResult(data_version=dg.DataVersion(digest), metadata=metadata)
