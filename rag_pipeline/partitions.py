"""The partitions of the index, declared from the strategy enum and the declared models."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from rag_pipeline.core.chunking import ChunkingStrategy
from rag_pipeline.core.embedder import ModelSpec

CHUNKER = "chunker"
MODEL = "model"

chunker_partitions = dg.StaticPartitionsDefinition([s.value for s in ChunkingStrategy])


def model_partitions(models: Sequence[ModelSpec]) -> dg.StaticPartitionsDefinition:
    keys = [m.key for m in models]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two declared models share a partition key: {keys}")
    return dg.StaticPartitionsDefinition(keys)


def embedding_partitions(models: Sequence[ModelSpec]) -> dg.MultiPartitionsDefinition:
    """chunker x model: each cell is one vector space over one chunking."""
    return dg.MultiPartitionsDefinition({CHUNKER: chunker_partitions,
                                         MODEL: model_partitions(models)})
