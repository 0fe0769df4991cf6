"""``embeddings``: one unit vector per chunk, partitioned by chunking strategy x model.

Its checks are blocking: a failed ``vectors_unit_length``, ``one_model_per_partition`` or
``vectors_match_model`` fails the step, so the ``index_generation`` step after it in the run
does not publish, and readers keep the generation they have. The vectors a run reuses pass
those checks (:func:`reusable_vectors`), so a failed table is never carried forward.
"""


import time

import dagster as dg
import pyarrow as pa
from dagster import AssetExecutionContext

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.embedding.compute import embedder_for, engine_metadata
from rag_pipeline.core.embedding.drift import MIN_COSINE, drift_check
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.embedding.vector_cache import VectorCache
from rag_pipeline.core.index.builders import embeddings_table
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.invariants import vector_norm_errors
from rag_pipeline.core.storage.table_names import CHUNKS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.asset_metadata import blocking_checks, table_metadata
from rag_pipeline.orchestration.partitions import CHUNKER, MODEL, embedding_partitions, one_dimension_of
from rag_pipeline.orchestration.resources import IndexStorage, RunCompute

CHECKS = {
    "vectors_unit_length": "Every vector has the model's dimension and unit L2 norm (within "
                           "1e-4): dense scores are cosines only for unit vectors. Blocking: a "
                           "failure stops publication of the generation.",
    "one_model_per_partition": "Every row is stamped with this partition's model name and "
                               "weights fingerprint: vector spaces are never mixed. Blocking.",
    "vectors_match_model": f"Eight stored texts, re-embedded now, agree with their stored "
                           f"vectors (cosine >= {MIN_COSINE}): catches a model or runtime that "
                           "drifted since the vectors were written. Blocking.",
}


def _passes(table: pa.Table, chunks: pa.Table, embedder: TextEmbedder) -> bool:
    """The reader-protecting checks on a table's rows whose chunk text is still current."""
    current = set(zip(chunks.column("chunk_id").to_pylist(),
                      chunks.column("text_sha256").to_pylist(), strict=True))
    mask = [pair in current for pair in zip(table.column("chunk_id").to_pylist(),
                                            table.column("text_sha256").to_pylist(), strict=True)]
    kept = table.filter(pa.array(mask, pa.bool_()))
    stamps = {f"{n}@{f}" for n, f in zip(kept.column("model_name").to_pylist(),
                                         kept.column("model_fingerprint").to_pylist(), strict=True)}
    return (not vector_norm_errors(kept, embedder.spec.dimension)
            and stamps <= {embedder.spec.key} and drift_check(kept, chunks, embedder).passed)


def reusable_vectors(warehouse: Warehouse, partition: dict[str, str], chunks: pa.Table,
                     embedder: TextEmbedder) -> pa.Table | None:
    """The vectors a run may reuse: the partition's latest table if it passes the blocking
    checks now (a run killed before publishing left good ones), else the served generation's,
    so vectors that failed a check are never carried into a new table."""
    latest = warehouse.read_or_none(EMBEDDINGS, partition)
    if latest is not None and _passes(latest, chunks, embedder):
        return latest
    served = current_generation(warehouse, partition[CHUNKER], partition[MODEL])
    return warehouse.read_file(served.files[EMBEDDINGS]) if served is not None else None


def build_embeddings_asset(build: BuildContext) -> dg.AssetsDefinition:
    """``embeddings`` over the declared models; each model key is a vector space of its own."""
    by_key = {m.key: m for m in build.models}
    partitions = embedding_partitions(build)

    @dg.asset(
        partitions_def=partitions,
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
        warehouse = storage.warehouse()
        chunks_version = warehouse.require_version(CHUNKS, {CHUNKER: chunker})
        chunks = warehouse.read_file(chunks_version.file,
                                     columns=["chunk_id", "text", "text_sha256", "wordpieces"])
        cache = VectorCache(warehouse, spec)

        loading = time.perf_counter()
        embedder = embedder_for(compute.settings(), spec, load_embedder)
        load_seconds = time.perf_counter() - loading
        previous = reusable_vectors(warehouse, partition, chunks, embedder)
        context.log.info(f"embedding with {compute.threads()} torch threads")
        last_logged = [0]

        def progress(done: int, total: int) -> None:
            if done == total or done - last_logged[0] >= 256:
                last_logged[0] = done
                context.log.info(f"embedded {done}/{total} texts with {spec.key}")

        table, stats = embeddings_table(chunks, previous, embedder, progress,
                                        known=cache.known(skip_chunker=chunker),
                                        checkpoint=cache.checkpoint)
        writing = time.perf_counter()
        version = warehouse.write(EMBEDDINGS, table, partition,
                                  inputs={CHUNKS: chunks_version.file})
        cache.drop_covered(set(table.column("text_sha256").to_pylist()))
        write_seconds = time.perf_counter() - writing
        stored = warehouse.read_file(version.file)
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
            "write_seconds": round(write_seconds, 2),
            "chunks_per_second": round(stats.chunks_per_second, 1),
            **engine_metadata(embedder),
            "bulk_path": bulk.backend if bulk is not None else spec.backend.value,
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
