"""``chunks``: every ok document cut by one strategy, partitioned by strategy."""


from collections.abc import Sequence

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.index.build import ChunkChecks, build_chunks
from rag_pipeline.core.storage.table_names import CHUNKS
from rag_pipeline.core.text.terminal import escape_controls
from rag_pipeline.orchestration.asset_metadata import blocking_checks, table_metadata
from rag_pipeline.orchestration.partitions import chunker_partitions
from rag_pipeline.orchestration.resources import IndexStorage

CHECKS = {
    "offsets_slice_exactly": "Every chunk's `content` is exactly canonical_text[from:to] of its "
                             "document: citations quote the source. Blocking.",
    "chunk_ids_unique": "No two chunks share a chunk_id. Blocking.",
    "covers_every_character": "Every non-blank character of every ok document outside its "
                              "heading lines is in some chunk: nothing is dropped (an archive's "
                              "or a mailbox's own text, the list of its members, is never "
                              "chunked). Blocking.",
}


def build_chunks_asset(build: BuildContext) -> dg.AssetsDefinition:
    """``chunks`` over ``build``'s chunkers, with word-pieces counted by its default model's
    tokenizer."""
    tokenizer_model = build.models[0]
    partitions = chunker_partitions(build.chunkers)

    @dg.asset(
        partitions_def=partitions,
        deps=["documents"],
        check_specs=blocking_checks(CHUNKS, CHECKS, partitions),
        description="Chunks of every ok document: `text` (embedded, with header/overlap) and "
                    "`content` (quoted, == canonical_text[from:to]), word-pieces and truncation.",
        kinds={"parquet", "duckdb"},
    )
    def chunks(context: AssetExecutionContext, storage: IndexStorage):
        strategy = ChunkingStrategy(context.partition_key)
        built = build_chunks(storage.warehouse(), strategy, tokenizer_model)
        version, documents_version, table, stats = (built.version, built.documents_version,
                                                     built.table, built.stats)
        context.log.info(f"{strategy.value}: {stats.chunks} chunks, {stats.truncated} over the "
                         f"{tokenizer_model.max_tokens} word-piece window")
        if stats.without_chunks:
            context.log.warning(escape_controls(
                f"{strategy.value}: {len(stats.without_chunks)} ok document(s) yield no chunk: "
                f"{', '.join(stats.without_chunks)}"))
        # The documents' digest is part of the data version: a change to the documents that
        # leaves every chunk as it was (a moved corpus: new paths) still reaches the embeddings
        # step, which reuses every vector and publishes a generation with the new documents.
        data_version = dg.DataVersion(f"{version.digest}+{documents_version.digest}")
        yield dg.MaterializeResult(data_version=data_version, metadata={
            **table_metadata(version, table.schema),
            "chunks": stats.chunks,
            "truncated": stats.truncated,
            "window_wordpieces": tokenizer_model.max_tokens,
            "tokenizer": tokenizer_model.key,
            "header_token_share": round(stats.header_share, 4),
            "chunks_added": built.added,
            "chunks_removed": built.removed,
            "wordpieces_counted": built.counted,
            "documents_without_chunks": len(stats.without_chunks),
            "documents_without_chunks_ids": ", ".join(stats.without_chunks) or "none",
        })
        yield from chunk_check_results(built.checks)

    return chunks


def chunk_check_results(checks: ChunkChecks) -> Sequence[dg.AssetCheckResult]:
    """The chunks' blocking checks (:func:`rag_pipeline.core.index.build.chunk_checks`) as
    Dagster check results."""
    bad, dups, uncovered = checks.mismatches, checks.duplicates, checks.uncovered
    return [
        dg.AssetCheckResult(check_name="offsets_slice_exactly", passed=not bad,
                            metadata={"mismatches": len(bad), "examples": str(bad[:5])}),
        dg.AssetCheckResult(check_name="chunk_ids_unique", passed=not dups,
                            metadata={"duplicates": len(dups)}),
        dg.AssetCheckResult(check_name="covers_every_character", passed=not uncovered,
                            metadata={"documents_with_gaps": len(uncovered),
                                      "examples": str(sorted(uncovered.items())[:5])}),
    ]
