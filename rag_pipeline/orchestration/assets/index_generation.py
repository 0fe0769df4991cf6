"""``index_generation``: the published generation of a chunker x model partition.

The commit point of the index: it publishes the latest version of every table declared in
:data:`rag_pipeline.core.index.GENERATION_TABLES` (documents, chunks, the BM25 tables, the
embeddings, the ANN index and, under ``[access]``, the readers labelled by the rules in force,
checked to be built from one another) as the partition's served generation, which
is what ``ask``, ``serve``, ``eval``, ``status`` and DuckDB users read. It runs after the
``embeddings`` step in ``embeddings_job``; that step's blocking checks failing stops it, so a
failed check never reaches a reader. A table that joins the generation joins its inputs here
by its declaration alone.
"""

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.index import GENERATION_TABLES
from rag_pipeline.core.index.build import publish_partition
from rag_pipeline.orchestration.partitions import CHUNKER, MODEL, embedding_partitions, scope_mapping
from rag_pipeline.orchestration.resources import IndexStorage
from rag_pipeline.orchestration.run_tags import GENERATION_TAG, tag_run

INDEX_GENERATION = "index_generation"


def build_index_generation_asset(build: BuildContext) -> dg.AssetsDefinition:
    """``index_generation`` over the declared chunkers x models."""

    @dg.asset(
        name=INDEX_GENERATION,
        partitions_def=embedding_partitions(build),
        deps=[dg.AssetDep(t.name, partition_mapping=scope_mapping(t.scope))
              for t in GENERATION_TABLES],
        description="The served generation of a chunker x model: one immutable manifest naming "
                    "the file of every generation table, published atomically (CURRENT.json) "
                    "only after the embeddings' blocking checks passed. Its data version is "
                    "the generation's content id.",
        kinds={"json"},
    )
    def index_generation(context: AssetExecutionContext, storage: IndexStorage):
        keys = context.partition_key.keys_by_dimension
        chunker, model = keys[CHUNKER], keys[MODEL]
        published = publish_partition(storage.warehouse(), chunker, model, rules=build.rules)
        generation, is_new, garbage = published.generation, published.is_new, published.garbage
        tag_run(context, {GENERATION_TAG: generation.id})
        context.log.info(f"{chunker} x {model}: generation {generation.id}"
                         f"{' published' if is_new else ' unchanged'}")
        return dg.MaterializeResult(data_version=dg.DataVersion(generation.content_id), metadata={
            "generation": generation.id,
            "published": is_new,
            "published_at": generation.published_at,
            "files": dg.MetadataValue.json(generation.files),
            "rows": dg.MetadataValue.json(generation.rows),
            "garbage_files_deleted": garbage.files_deleted,
            "garbage_bytes_deleted": garbage.bytes_deleted,
            "garbage_copies_deleted": garbage.copies_deleted,
            "garbage_copy_bytes_deleted": garbage.copy_bytes_deleted,
        })

    return index_generation
