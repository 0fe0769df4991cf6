"""The partitions of the index, declared in ``rag_pipeline.toml``: its chunkers and its models."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import dagster as dg

from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.index import CHUNKER, MODEL, Scope
from rag_pipeline.project_paths import active_config

__all__ = ["CHUNKER", "MODEL", "chunker_partitions", "embedding_partitions", "model_partitions",
           "one_dimension_of", "scope_mapping"]

chunker_partitions = dg.StaticPartitionsDefinition([s.value for s in active_config().chunkers])
"""The chunkers of the profile this process builds (see :func:`active_config`)."""


def model_partitions(models: Sequence[ModelSpec]) -> dg.StaticPartitionsDefinition:
    keys = [m.key for m in models]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two declared models share a partition key: {keys}")
    return dg.StaticPartitionsDefinition(keys)


def embedding_partitions(models: Sequence[ModelSpec]) -> dg.MultiPartitionsDefinition:
    """chunker x model: each cell is one vector space over one chunking."""
    return dg.MultiPartitionsDefinition({CHUNKER: chunker_partitions,
                                         MODEL: model_partitions(models)})


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
