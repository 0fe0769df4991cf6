"""The ``vector`` column of an embeddings table as a matrix, and the model stamps every stored
vector carries: what the embedding stage reuses (:mod:`.vector_cache`), re-checks
(:mod:`.drift`) and the index builds from (:mod:`rag_pipeline.core.index.builders`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec
from rag_pipeline.core.text.arguments import listed


def vector_matrix(embeddings: pa.Table) -> np.ndarray:
    """The ``vector`` column as an ``(n, dimension)`` float32 array."""
    column = embeddings.column("vector").combine_chunks()
    width = column.type.list_size
    return np.asarray(column.flatten().to_numpy(), dtype=np.float32).reshape(-1, width)


def check_stamps(stored: pa.Table, spec: ModelSpec, what: str) -> None:
    """Refuses vectors stamped with another model: vector spaces are never mixed."""
    if not stored.num_rows:
        return
    keys = {f"{name}@{fingerprint}" for name, fingerprint in zip(
        stored.column("model_name").to_pylist(), stored.column("model_fingerprint").to_pylist(),
        strict=True)}
    if keys != {spec.key}:
        raise ModelMismatchError(f"{what} holds vectors of {listed(sorted(keys))}, not "
                                 f"{spec.key}: vector spaces are never mixed")
