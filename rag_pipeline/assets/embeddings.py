"""``embeddings``: one unit vector per chunk, partitioned by chunking strategy x model."""


from collections.abc import Sequence

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.drift import drift_check
from rag_pipeline.core.embedder import calibration_sample, load_embedder
from rag_pipeline.core.index_tables import embeddings_table
from rag_pipeline.core.invariants import vector_norm_errors
from rag_pipeline.core.models import ModelSpec
from rag_pipeline.partitions import (
    CHUNKER,
    MODEL,
    chunker_partitions,
    embedding_partitions,
    one_dimension_of,
)
from rag_pipeline.resources import IndexStorage

CHECKS = ("vectors_unit_length", "one_model_per_partition", "vectors_match_model")


def build_embeddings_asset(models: Sequence[ModelSpec]) -> dg.AssetsDefinition:
    """``embeddings`` over the declared models; each model key is a vector space of its own."""
    by_key = {m.key: m for m in models}

    @dg.asset(
        partitions_def=embedding_partitions(models),
        deps=[dg.AssetDep("chunks", partition_mapping=one_dimension_of(CHUNKER))],
        check_specs=[dg.AssetCheckSpec(name, asset="embeddings") for name in CHECKS],
        automation_condition=dg.AutomationCondition.eager(),
        description="L2-normalised float32 vector per chunk, stamped with model name, weights "
                    "fingerprint, dimension and pipeline version. Unchanged texts reuse vectors.",
        kinds={"parquet", "duckdb", "pytorch"},
    )
    def embeddings(context: AssetExecutionContext, storage: IndexStorage):
        keys = context.partition_key.keys_by_dimension
        spec = by_key[keys[MODEL]]
        partition = {CHUNKER: keys[CHUNKER], MODEL: spec.key}
        warehouse = storage.warehouse()
        chunks = warehouse.read("chunks", {CHUNKER: keys[CHUNKER]},
                                columns=["chunk_id", "text", "text_sha256", "wordpieces"])
        previous = warehouse.read_or_none("embeddings", partition)
        shared = [t for c in chunker_partitions.get_partition_keys() if c != keys[CHUNKER]
                  if (t := warehouse.read_or_none("embeddings", {CHUNKER: c, MODEL: spec.key})
                      ) is not None]

        def calibration() -> list[str]:
            source = warehouse.read("chunks", {CHUNKER: spec.calibration.chunker},
                                    columns=["chunk_id", "text"])
            return calibration_sample(source.column("chunk_id").to_pylist(),
                                      source.column("text").to_pylist(), spec.calibration.samples)

        embedder = load_embedder(spec, calibration if spec.calibration else None)
        last_logged = [0]

        def progress(done: int, total: int) -> None:
            if done == total or done - last_logged[0] >= 256:
                last_logged[0] = done
                context.log.info(f"embedded {done}/{total} texts with {spec.key}")

        table, stats = embeddings_table(chunks, previous, embedder, progress, shared)
        warehouse.write("embeddings", table, partition)
        warehouse.refresh_views()
        stored = warehouse.read("embeddings", partition)
        context.log.info(f"{partition}: embedded {stats.embedded}, reused {stats.reused}, "
                         f"shared {stats.shared}, removed {stats.removed} in "
                         f"{stats.seconds:.1f} s")
        yield dg.MaterializeResult(metadata={
            "model": spec.key, "dimension": spec.dimension, "rows": table.num_rows,
            "embedded": stats.embedded, "reused": stats.reused, "removed": stats.removed,
            "shared_from_other_chunkers": stats.shared, "backend": spec.backend.value,
            "precision": spec.precision.value,
            "embed_seconds": round(stats.seconds, 2),
            "chunks_per_second": round(stats.chunks_per_second, 1),
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
