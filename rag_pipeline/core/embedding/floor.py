"""The machine's floor for an encoder: the FLOPs of the word-pieces a BERT encoder really
processes, and the rate of a large fp32 matrix product here, so a run's encoding time can be
read against the time the products alone need (``index --timings``, the embedding benchmark)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

__all__ = ["encoder_flops", "fp32_matmul_rate"]


def encoder_flops(wordpieces: Sequence[int], config: dict) -> float:
    """Multiply-add FLOPs (2 per MAC) of a BERT encoder over texts of these lengths, no padding."""
    d, f, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    n = np.asarray(wordpieces, dtype=np.float64)
    return float(layers * np.sum(2 * n * (4 * d * d + 2 * d * f) + 4 * n * n * d))


def fp32_matmul_rate(size: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of a square fp32 matrix product on every core, best of ``repeats`` and of numpy's
    BLAS and torch (whichever thread pool is warm: after torch has run, its spinning threads
    slow numpy's, which once made the floor read half the machine's rate)."""
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    best = float("inf")
    for product in (lambda: a @ b, lambda: torch.mm(ta, tb)):
        product()
        for _ in range(repeats):
            started = time.perf_counter()
            product()
            best = min(best, time.perf_counter() - started)
    return 2 * size ** 3 / best
