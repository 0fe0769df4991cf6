"""``embeddings``: one unit vector per chunk, partitioned by chunking strategy x model.

The end of an embeddings run is the commit point of the index: with the vectors written, the
partition's chunks, BM25 statistics and vectors (all built from the same corpus state) are
published as one generation, which is what ``ask``, ``eval``, ``status`` and DuckDB users read.
"""


from collections.abc import Sequence

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.asset_metadata import table_metadata
from rag_pipeline.automation_conditions import inputs_changed
from rag_pipeline.core.drift import drift_check
from rag_pipeline.core.embedder import load_embedder
from rag_pipeline.core.generations import collect_garbage, publish
from rag_pipeline.core.index_tables import embeddings_table
from rag_pipeline.core.invariants import vector_norm_errors
from rag_pipeline.core.models import ModelSpec
from rag_pipeline.core.query_db import publish_query_db
from rag_pipeline.core.table_names import BM25_TABLES, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.vector_cache import VectorCache
from rag_pipeline.core.warehouse import TableVersion
from rag_pipeline.partitions import CHUNKER, MODEL, embedding_partitions, one_dimension_of
from rag_pipeline.resources import IndexStorage, RunCompute

CHECKS = ("vectors_unit_length", "one_model_per_partition", "vectors_match_model")


def build_embeddings_asset(models: Sequence[ModelSpec]) -> dg.AssetsDefinition:
    """``embeddings`` over the declared models; each model key is a vector space of its own."""
    by_key = {m.key: m for m in models}
    by_chunker = one_dimension_of(CHUNKER)

    @dg.asset(
        partitions_def=embedding_partitions(models),
        deps=[dg.AssetDep(name, partition_mapping=by_chunker) for name in (CHUNKS, *BM25_TABLES)],
        check_specs=[dg.AssetCheckSpec(name, asset="embeddings") for name in CHECKS],
        automation_condition=inputs_changed(),
        description="L2-normalised float32 vector per chunk, stamped with model name, weights "
                    "fingerprint, dimension and pipeline version. Unchanged texts reuse vectors. "
                    "Publishes the partition's index generation when done.",
        kinds={"parquet", "duckdb", "pytorch"},
    )
    def embeddings(context: AssetExecutionContext, storage: IndexStorage, compute: RunCompute):
        keys = context.partition_key.keys_by_dimension
        spec = by_key[keys[MODEL]]
        chunker = keys[CHUNKER]
        partition = {CHUNKER: chunker, MODEL: spec.key}
        warehouse = storage.warehouse()
        chunks_version = warehouse.require_version(CHUNKS, {CHUNKER: chunker})
        chunks = warehouse.read_file(chunks_version.file,
                                     columns=["chunk_id", "text", "text_sha256", "wordpieces"])
        previous = warehouse.read_or_none(EMBEDDINGS, partition)
        cache = VectorCache(warehouse, spec)

        embedder = load_embedder(spec)
        context.log.info(f"embedding with {compute.threads()} torch threads")
        last_logged = [0]

        def progress(done: int, total: int) -> None:
            if done == total or done - last_logged[0] >= 256:
                last_logged[0] = done
                context.log.info(f"embedded {done}/{total} texts with {spec.key}")

        table, stats = embeddings_table(chunks, previous, embedder, progress,
                                        known=cache.known(skip_chunker=chunker),
                                        checkpoint=cache.checkpoint)
        version = warehouse.write(EMBEDDINGS, table, partition,
                                  inputs={CHUNKS: chunks_version.file})
        cache.drop_covered(set(table.column("text_sha256").to_pylist()))
        stored = warehouse.read_file(version.file)

        documents_file = chunks_version.inputs[DOCUMENTS]
        versions: dict[str, TableVersion] = {
            DOCUMENTS: TableVersion(table=DOCUMENTS, partition={}, file=documents_file,
                                    digest="", rows=warehouse.read_file(
                                        documents_file, columns=["document_id"]).num_rows,
                                    written_at=""),
            CHUNKS: chunks_version, EMBEDDINGS: version}
        versions.update({name: warehouse.require_version(name, {CHUNKER: chunker})
                         for name in BM25_TABLES})
        generation, is_new = publish(warehouse, chunker, spec.key, versions)
        garbage = collect_garbage(warehouse)
        publish_query_db(warehouse)
        context.log.info(f"{partition}: embedded {stats.embedded}, reused {stats.reused}, "
                         f"shared {stats.shared}, duplicates {stats.duplicates}, removed "
                         f"{stats.removed} in {stats.seconds:.1f} s; generation {generation.id}"
                         f"{' published' if is_new else ' unchanged'}")
        yield dg.MaterializeResult(data_version=dg.DataVersion(version.digest), metadata={
            **table_metadata(version, table.schema),
            "model": spec.key, "dimension": spec.dimension, "rows": stats.rows,
            "reused": stats.reused, "shared": stats.shared, "embedded": stats.embedded,
            "duplicates": stats.duplicates, "removed": stats.removed,
            "rows_explained": "rows = reused (this partition) + shared (same model, another "
                              "chunker or an unfinished run) + embedded + duplicates",
            "backend": spec.backend.value, "precision": spec.precision.value,
            "embed_seconds": round(stats.seconds, 2),
            "chunks_per_second": round(stats.chunks_per_second, 1),
            "generation": generation.id, "generation_published": is_new,
            "garbage_files_deleted": garbage.files_deleted,
        })
        errors = vector_norm_errors(stored, spec.dimension)
        yield dg.AssetCheckResult(check_name="vectors_unit_length", passed=not errors,
                                  metadata={"dimension": spec.dimension, **errors})
        models_seen = sorted({f"{n}@{f}" for n, f in zip(
            stored.column("model_name").to_pylist(),
            stored.column("model_fingerprint").to_pylist(), strict=True)})
        yield dg.AssetCheckResult(check_name="one_model_per_partition",
                                  passed=models_seen in ([spec.key], []),
                                  metadata={"models": str(models_seen)})
        drift = drift_check(stored, chunks, embedder)
        yield dg.AssetCheckResult(check_name="vectors_match_model", passed=drift.passed,
                                  metadata={"re_embedded": drift.checked,
                                            "min_cosine": round(drift.min_cosine, 6),
                                            "worst_chunk_id": str(drift.worst_chunk_id)})

    return embeddings
