"""The partitions of the index: the chunkers and the models of one
:class:`~rag_pipeline.core.config.build_context.BuildContext`, declared from it when the
definitions are built (never from process state at import)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import dagster as dg

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.index import CHUNKER, MODEL, Scope

__all__ = ["CHUNKER", "MODEL", "chunker_partitions", "embedding_partitions", "model_partitions",
           "one_dimension_of", "scope_mapping"]

def chunker_partitions(chunkers: Sequence[ChunkingStrategy]) -> dg.StaticPartitionsDefinition:
    """One partition per chunker, in declaration order."""
    return dg.StaticPartitionsDefinition([c.value for c in chunkers])


def model_partitions(models: Sequence[ModelSpec]) -> dg.StaticPartitionsDefinition:
    keys = [m.key for m in models]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two declared models share a partition key: {keys}")
    return dg.StaticPartitionsDefinition(keys)


def embedding_partitions(build: BuildContext) -> dg.MultiPartitionsDefinition:
    """chunker x model: each cell is one vector space over one chunking."""
    return dg.MultiPartitionsDefinition({CHUNKER: chunker_partitions(build.chunkers),
                                         MODEL: model_partitions(build.models)})


def one_dimension_of(dimension: str) -> dg.PartitionMapping:
    """Maps a chunker x model partition to/from the partition of one of its dimensions.
    (``MultiToSingleDimensionPartitionMapping`` is marked beta; its warning is silenced here.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=dimension)


def scope_mapping(scope: Scope) -> dg.PartitionMapping | None:
    """How a chunker x model partition maps to a generation table of ``scope``: the whole
    unpartitioned table, the chunker's partition, or the same partition (``None``: identity)."""
    if scope == Scope.CORPUS:
        return None
    if scope == Scope.CHUNKER:
        return one_dimension_of(CHUNKER)
    return None
