"""``ann_index``: an inverted file over one chunker x model partition's vectors (8-bit codes).

Built from the partition's embeddings file in the same run as the embeddings (``embeddings_job``),
after their blocking checks, and written as an index file plus its one-row table naming the
embeddings file it was built from; ``index_generation`` then publishes it with those vectors. A
model change is another partition, so it always builds a fresh index.
"""

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.index.ann import CROSSOVER_ROWS
from rag_pipeline.core.index.ann_index import build_ann_index
from rag_pipeline.core.storage.table_names import ANN_INDEX, EMBEDDINGS
from rag_pipeline.orchestration.asset_metadata import table_metadata
from rag_pipeline.orchestration.partitions import CHUNKER, MODEL, embedding_partitions
from rag_pipeline.orchestration.resources import IndexStorage, RunCompute


def build_ann_index_asset(build: BuildContext) -> dg.AssetsDefinition:
    """``ann_index`` over the same chunker x model partitions as ``embeddings``."""

    @dg.asset(
        name=ANN_INDEX,
        partitions_def=embedding_partitions(build),
        deps=[EMBEDDINGS],
        description="Inverted file (faiss IVF, 8-bit codes) over the partition's vectors, with "
                    "the calibrated nprobe, measured recall, and the fingerprint that ties it to "
                    f"them. Questions on a partition of at least {CROSSOVER_ROWS} chunks "
                    "scan its nearest cells for a shortlist and rescore that exactly.",
        kinds={"parquet", "duckdb"},
    )
    def ann_index(context: AssetExecutionContext, storage: IndexStorage, compute: RunCompute):
        keys = context.partition_key.keys_by_dimension
        chunker, model = keys[CHUNKER], keys[MODEL]
        warehouse = storage.warehouse()
        embeddings = warehouse.require_version(EMBEDDINGS, {CHUNKER: chunker, MODEL: model})
        built = build_ann_index(warehouse, chunker, model, embeddings, threads=compute.threads())
        context.log.info(f"{chunker} x {model}: index of {built.rows} vectors, {built.graph_bytes} "
                         f"bytes, " + ("reused (built from the same embeddings)" if built.reused
                                       else f"built in {built.seconds:.1f} s"))
        return dg.MaterializeResult(data_version=dg.DataVersion(built.version.digest), metadata={
            **table_metadata(built.version, warehouse.read_file(built.version.file).schema),
            "vectors": built.rows, "graph_bytes": built.graph_bytes,
            "build_seconds": round(built.seconds, 2), "reused": built.reused,
        })

    return ann_index
