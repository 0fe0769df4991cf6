"""A cheap guard against a drifting model or environment: re-embed a few stored texts and
compare them with the vectors stored for them.

A partition's vectors were produced over many runs; a changed library, runtime or CPU kernel
can move new vectors away from old ones without any file changing. Re-embedding ``samples``
texts (evenly spread over the partition's chunk ids) and comparing cosines catches that for the
cost of one small batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rag_pipeline.core.embedding.models import Precision, TextEmbedder
from rag_pipeline.core.embedding.vectors import vector_matrix

MIN_COSINE = {Precision.FP32: 0.9999, Precision.INT8: 0.999}
"""Stored and fresh vectors of one text under one model key must agree this closely, by the
model's precision. fp32: two batchings of a text agree to ~1 - 1e-7. Static int8 (OpenVINO)
rounds each layer's activations, and the kernels a batch's shape picks move a text's vector
by up to ~2e-4: on the bundled corpus's ``blind_overlap`` chunks, 120 texts embedded alone
against their stored (length-sorted batch) vectors gave min 0.999876, and the check's eight
in one batch 0.999835. A drifted model or runtime moves vectors far more than either."""


@dataclass(frozen=True)
class DriftReport:
    checked: int
    min_cosine: float
    worst_chunk_id: str | None
    required: float = MIN_COSINE[Precision.FP32]
    """The cosine the model's precision requires (:data:`MIN_COSINE`)."""

    @property
    def passed(self) -> bool:
        return self.checked == 0 or self.min_cosine >= self.required


def drift_check(stored: pa.Table, chunks: pa.Table, embedder: TextEmbedder,
                samples: int = 8) -> DriftReport:
    """Re-embeds ``samples`` of the partition's texts and compares them with the stored vectors.

    Args:
        stored: The partition's embeddings (chunk_id, vector).
        chunks: The chunker's chunks (chunk_id, text).
        embedder: The model the partition is stamped with.
        samples: How many texts to re-embed.
    """
    required = MIN_COSINE[embedder.spec.precision]
    if not stored.num_rows:
        return DriftReport(0, 1.0, None, required)
    order = np.argsort(np.asarray(stored.column("chunk_id").to_pylist(), dtype=object), kind="stable")
    picked = order[np.linspace(0, len(order) - 1, min(samples, len(order))).astype(int)]
    ids = [stored.column("chunk_id")[int(i)].as_py() for i in picked]
    text_of = dict(zip(chunks.column("chunk_id").to_pylist(), chunks.column("text").to_pylist(),
                       strict=True))
    fresh = embedder.embed([text_of[i] for i in ids])
    cosines = np.sum(vector_matrix(stored)[picked] * fresh, axis=1)
    worst = int(np.argmin(cosines))
    return DriftReport(len(ids), float(cosines[worst]), ids[worst], required)
