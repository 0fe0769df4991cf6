"""The BM25 statistics of a chunker: four tables, one asset each.

``bm25_terms`` (df and idf per term), ``bm25_chunks`` (length per chunk), ``bm25_postings``
(tf per chunk and term) and ``bm25_params`` (k1, b, chunk count, average length, tokenizer),
each partitioned by chunker and carrying an ``analyzer`` column. One step computes all four
(they come from one pass over the chunks), so they are one multi-asset. Each table's data
version is its content digest.
"""


import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from dagster import AssetExecutionContext

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.index.bm25 import K1, B
from rag_pipeline.core.index.build import build_bm25
from rag_pipeline.core.storage.table_names import BM25_TABLES
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline.orchestration.asset_metadata import table_metadata
from rag_pipeline.orchestration.partitions import chunker_partitions
from rag_pipeline.orchestration.resources import IndexStorage

DESCRIPTIONS = {
    "bm25_terms": "Per analyzer and term: document frequency and Lucene idf over chunk `text`.",
    "bm25_chunks": "Per analyzer and chunk: length in analyzed tokens.",
    "bm25_postings": "Per analyzer, chunk and term: term frequency.",
    "bm25_params": "Per analyzer: k1 = 1.2, b = 0.75, chunk count, average length, tokenizer.",
}


def _rows_per_analyzer(table: pa.Table) -> dict[str, int]:
    return {f"{a.value}_rows": pc.sum(pc.equal(table.column("analyzer"), a.value)).as_py() or 0
            for a in Analyzer}


def build_bm25_stats_asset(build: BuildContext) -> dg.AssetsDefinition:
    """The four BM25 tables over ``build``'s chunkers, one step."""
    partitions = chunker_partitions(build.chunkers)

    @dg.multi_asset(
        specs=[dg.AssetSpec(name, deps=["chunks"], partitions_def=partitions,
                            description=DESCRIPTIONS[name], kinds={"parquet", "duckdb"})
               for name in BM25_TABLES],
        partitions_def=partitions,
        can_subset=False,
    )
    def bm25_stats(context: AssetExecutionContext, storage: IndexStorage):
        yield from _bm25_stats(context, storage)

    return bm25_stats


def _bm25_stats(context: AssetExecutionContext, storage: IndexStorage):
    chunks_version, written = build_bm25(storage.warehouse(), context.partition_key)
    for name, (version, table) in written.items():
        metadata: dict[str, object] = {**table_metadata(version, table.schema),
                                       **_rows_per_analyzer(table),
                                       "built_from": chunks_version.file}
        if name == "bm25_params":
            metadata |= {"k1": K1, "b": B, "chunks": chunks_version.rows}
            for row in table.to_pylist():
                metadata[f"{row['analyzer']}_avg_length"] = round(row["avg_length"], 2)
                metadata[f"{row['analyzer']}_tokenizer"] = row["tokenizer"]
        yield dg.MaterializeResult(asset_key=name, data_version=dg.DataVersion(version.digest),
                                   metadata=metadata)
