"""``embeddings``: one unit vector per chunk, partitioned by chunking strategy x model.

Its checks are blocking: a failed ``vectors_unit_length``, ``one_model_per_partition`` or
``vectors_match_model`` fails the step, so the ``index_generation`` step after it in the run
does not publish, and readers keep the generation they have. The vectors a run reuses pass
those checks (:func:`rag_pipeline.core.index.build.reusable_vectors`), so a failed table is
never carried forward. The stage itself is :func:`rag_pipeline.core.index.build.build_embeddings`;
this asset is its wiring, metadata and check results.
"""


import time

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.embedding.compute import embedder_for, engine_metadata
from rag_pipeline.core.embedding.drift import MIN_COSINE
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import Precision
from rag_pipeline.core.index.build import EmbeddingChecks, build_embeddings, reusable_vectors
from rag_pipeline.core.index.builders import embeddings_table
from rag_pipeline.core.storage.table_names import CHUNKS, EMBEDDINGS
from rag_pipeline.orchestration.asset_metadata import blocking_checks, table_metadata
from rag_pipeline.orchestration.partitions import CHUNKER, MODEL, embedding_partitions, one_dimension_of
from rag_pipeline.orchestration.pools import MODEL_POOL
from rag_pipeline.orchestration.resources import IndexStorage, RunCompute

__all__ = ["CHECKS", "build_embeddings_asset", "embedding_check_results", "reusable_vectors"]

CHECKS = {
    "vectors_unit_length": "Every vector has the model's dimension and unit L2 norm (within "
                           "1e-4): dense scores are cosines only for unit vectors. Blocking: a "
                           "failure stops publication of the generation.",
    "one_model_per_partition": "Every row is stamped with this partition's model name and "
                               "weights fingerprint: vector spaces are never mixed. Blocking.",
    "vectors_match_model": f"Eight stored texts, re-embedded now, agree with their stored "
                           f"vectors (cosine >= {MIN_COSINE[Precision.FP32]} for an fp32 model, "
                           f">= {MIN_COSINE[Precision.INT8]} for a static int8 one): catches a "
                           "model or runtime that drifted since the vectors were written. "
                           "Blocking.",
}


def build_embeddings_asset(build: BuildContext) -> dg.AssetsDefinition:
    """``embeddings`` over the declared models; each model key is a vector space of its own."""
    by_key = {m.key: m for m in build.models}
    partitions = embedding_partitions(build)

    @dg.asset(
        partitions_def=partitions,
        pool=MODEL_POOL,
        deps=[dg.AssetDep(CHUNKS, partition_mapping=one_dimension_of(CHUNKER))],
        check_specs=blocking_checks(EMBEDDINGS, CHECKS, partitions),
        description="L2-normalised float32 vector per chunk, stamped with model name, weights "
                    "fingerprint, dimension and pipeline version. Unchanged texts reuse vectors "
                    "that pass the checks. Its blocking checks gate `index_generation`.",
        kinds={"parquet", "duckdb", "pytorch"},
    )
    def embeddings(context: AssetExecutionContext, storage: IndexStorage, compute: RunCompute):
        keys = context.partition_key.keys_by_dimension
        spec = by_key[keys[MODEL]]
        chunker = keys[CHUNKER]
        partition = {CHUNKER: chunker, MODEL: spec.key}
        loading = time.perf_counter()
        embedder = embedder_for(compute.settings(), spec, load_embedder)
        load_seconds = time.perf_counter() - loading
        context.log.info(f"embedding with {compute.threads()} torch threads")
        last_logged = [0]

        def progress(done: int, total: int) -> None:
            if done == total or done - last_logged[0] >= 256:
                last_logged[0] = done
                context.log.info(f"embedded {done}/{total} texts with {spec.key}")

        built = build_embeddings(storage.warehouse(), chunker, embedder, progress,
                                 tabulate=embeddings_table)
        version, table, stats, checks = built.version, built.table, built.stats, built.checks
        context.log.info(f"{partition}: embedded {stats.embedded}, reused {stats.reused}, "
                         f"shared {stats.shared}, duplicates {stats.duplicates}, removed "
                         f"{stats.removed} in {stats.seconds:.1f} s")
        bulk = getattr(embedder, "bulk_path", None)
        yield dg.MaterializeResult(data_version=dg.DataVersion(version.digest), metadata={
            **table_metadata(version, table.schema),
            "model": spec.key, "dimension": spec.dimension, "rows": stats.rows,
            "reused": stats.reused, "shared": stats.shared, "embedded": stats.embedded,
            "duplicates": stats.duplicates, "removed": stats.removed,
            "rows_explained": "rows = reused (this partition) + shared (same model, another "
                              "chunker or an unfinished run) + embedded + duplicates",
            "backend": spec.backend.value, "precision": spec.precision.value,
            "embed_seconds": round(stats.seconds, 2),
            "model_load_seconds": round(load_seconds, 2),
            "write_seconds": round(built.write_seconds, 2),
            "chunks_per_second": round(stats.chunks_per_second, 1),
            **engine_metadata(embedder),
            "bulk_path": bulk.backend if bulk is not None else spec.backend.value,
        })
        yield from embedding_check_results(checks)

    return embeddings


def embedding_check_results(checks: EmbeddingChecks) -> list[dg.AssetCheckResult]:
    """The embeddings' blocking checks (:func:`rag_pipeline.core.index.build.embedding_checks`)
    as Dagster check results."""
    failed = set(checks.failed)
    drift = checks.drift
    return [
        dg.AssetCheckResult(check_name="vectors_unit_length",
                            passed="vectors_unit_length" not in failed,
                            metadata={"dimension": checks.dimension, **checks.norm_errors}),
        dg.AssetCheckResult(check_name="one_model_per_partition",
                            passed="one_model_per_partition" not in failed,
                            metadata={"models": str(checks.models_seen)}),
        dg.AssetCheckResult(check_name="vectors_match_model",
                            passed="vectors_match_model" not in failed,
                            metadata={"re_embedded": drift.checked,
                                      "min_cosine": round(drift.min_cosine, 6),
                                      "required_cosine": drift.required,
                                      "worst_chunk_id": str(drift.worst_chunk_id)}),
    ]
