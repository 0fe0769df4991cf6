"""``access``: the readers of every chunk of a chunker under ``[access]``, partitioned by chunker.

Built in ``chunks_job`` after the chunks, from their two id columns and the rules in force
(:func:`rag_pipeline.core.index.build.build_access`); ``index_generation`` publishes it with the
chunks it labels. A rule edit makes it stale (its pointer records the rules' digest), so the
sensor runs ``chunks_job`` and then ``embeddings_job``, which reuses every vector and publishes
a generation with the new labels. Without ``[access]`` it writes nothing.
"""

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.index.access_table import UNMATCHED_GLOB, globs_matching_nothing
from rag_pipeline.core.index.build import build_access
from rag_pipeline.core.storage.table_names import ACCESS, CHUNKS
from rag_pipeline.orchestration.asset_metadata import table_metadata
from rag_pipeline.orchestration.partitions import chunker_partitions
from rag_pipeline.orchestration.resources import IndexStorage


def build_access_asset(build: BuildContext) -> dg.AssetsDefinition:
    """``access`` over ``build``'s chunkers, labelled by ``build.access``."""
    policy = build.access

    @dg.asset(
        name=ACCESS,
        partitions_def=chunker_partitions(build.chunkers),
        deps=[CHUNKS],
        description="Readers of every chunk under [access]: chunk_id, document_id, readers (the "
                    "groups that may read it; empty: nobody), rules (the rules' digest). Without "
                    "[access] nothing is written.",
        kinds={"parquet", "duckdb"},
    )
    def access(context: AssetExecutionContext, storage: IndexStorage):
        if policy is None:
            context.log.info("no [access] declared: no access table")
            return dg.MaterializeResult(metadata={"rules": "none declared"})
        warehouse = storage.warehouse()
        version = build_access(warehouse, context.partition_key, policy)
        context.log.info(f"{context.partition_key}: {version.rows} chunks labelled under rules "
                         f"{policy.digest}")
        unmatched = globs_matching_nothing(warehouse, policy)
        for glob in unmatched:
            context.log.warning(UNMATCHED_GLOB.format(glob=glob))
        return dg.MaterializeResult(data_version=dg.DataVersion(version.digest), metadata={
            **table_metadata(version, warehouse.read_file(version.file).schema),
            "rules": policy.digest,
            "globs_matching_nothing": dg.MetadataValue.json(unmatched),
        })

    return access
