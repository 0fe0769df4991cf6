"""The checked bulk path: chunk texts of an fp32 torch model embedded by ONNX Runtime fp32.

An index embeds thousands of texts in batches, where torch's eager kernels reach about 40 % of
the machine's fp32 matrix-product rate on two cores. The same weights converted to ONNX (fp32,
:func:`rag_pipeline.core.embedding.export.convert_to_onnx`) and run by ONNX Runtime on one
intra-op thread per core reach the rate of the products themselves. It is the same vector space,
so the same key: fp32 against fp32 differs by the order of the sums only (measured: max abs
difference 2e-7 per component, min cosine 0.9999999 on the bundled corpus), and the path is used
only after :data:`BULK_PROBES` give the model's own torch vectors within :data:`BULK_MIN_COSINE`
(:func:`checked_bulk_path`). A model whose conversion drifts keeps torch, said by
:class:`BulkPath`.

Batches are cut from texts sorted by word-piece count (longest first), each padded to its own
longest text only (:func:`rag_pipeline.core.embedding.embedder.wordpiece_batches`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rag_pipeline.core.embedding.export import Transformer
from rag_pipeline.core.embedding.question import QUERY_PROBES

__all__ = ["BULK_MIN_COSINE", "BULK_PROBES", "BulkPath", "checked_bulk_path", "onnx_bulk_transformer"]

BULK_MIN_COSINE = 0.99999
"""The bulk path is used only when every probe's vector is this close to torch's (the bound
under which this project treats two runtimes as one vector space, as for questions)."""
BULK_PROBES = (*QUERY_PROBES,
               "A chunk of a reference page: the `for` statement is used to iterate over the "
               "elements of a sequence (such as a string, tuple or list) or other iterable "
               "object. " * 3,
               "short")
"""Texts whose vectors a bulk path must reproduce: the question probes (one at the window's
end, non-ASCII, code), a long passage and a one-word text, embedded as one batch (so padding
inside a batch is exercised) and one by one."""


@dataclass(frozen=True)
class BulkPath:
    """How chunk texts are embedded: ``backend`` runs the transformer, on ``threads`` intra-op
    threads; ``min_cosine`` is the smallest cosine to the model's own torch vectors over
    :data:`BULK_PROBES` (None on the model's own path)."""

    backend: str
    threads: int | None = None
    min_cosine: float | None = None


def onnx_bulk_transformer(onnx: bytes, threads: int | None = None) -> tuple[Transformer, int]:
    """An fp32 ONNX transformer as an ONNX Runtime session on ``threads`` intra-op threads
    (default: the cores this process may run on), with the thread count."""
    import onnxruntime as ort

    threads = threads or len(os.sched_getaffinity(0))
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(onnx, options,
                                   providers=["CPUExecutionProvider"])
    return (lambda inputs: session.run(None, inputs)[0]), threads


def checked_bulk_path(own: Callable[[list[str]], np.ndarray],
                      candidate: Callable[[list[str]], np.ndarray]) -> float:
    """The smallest cosine between ``candidate``'s and ``own``'s vectors of :data:`BULK_PROBES`,
    embedded as one batch and one by one (both give unit vectors)."""
    probes = list(BULK_PROBES)
    reference = own(probes)
    batched = candidate(probes)
    alone = np.stack([candidate([p])[0] for p in probes])
    return float(min(np.min(np.sum(reference * batched, axis=1)),
                     np.min(np.sum(reference * alone, axis=1))))
