"""The machine's floor for an encoder: the FLOPs of the word-pieces a BERT encoder really
processes, and the rate of a large fp32 matrix product here, so a run's encoding time can be
read against the time the products alone need (``index --timings``, the embedding benchmark)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["encoder_flops", "fp32_matmul_rate", "int8_matmul_rate", "openvino_matmul"]


def encoder_flops(wordpieces: Sequence[int], config: dict) -> float:
    """Multiply-add FLOPs (2 per MAC) of a BERT encoder over texts of these lengths, no padding."""
    d, f, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    n = np.asarray(wordpieces, dtype=np.float64)
    return float(layers * np.sum(2 * n * (4 * d * d + 2 * d * f) + 4 * n * n * d))


def fp32_matmul_rate(size: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of a square fp32 matrix product on every core, best of ``repeats`` and of numpy's
    BLAS, torch and OpenVINO (a constant weight, as a model's are, at f32 precision: its
    oneDNN kernels outrun the BLAS on some CPUs, and the floor is the fastest product the
    machine has); whichever thread pool is warm: after torch has run, its spinning threads
    slow numpy's, so each is measured and the best kept."""
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    products = [lambda: a @ b, lambda: torch.mm(ta, tb)]
    if (openvino_product := openvino_matmul(b, size, quantised=False)) is not None:
        products.append(lambda: openvino_product(a))
    return 2 * size ** 3 / min(_best_seconds(product, repeats) for product in products)


def int8_matmul_rate(size: int = 1024, repeats: int = 5) -> float | None:
    """OP/s of an int8 matrix product as OpenVINO runs a quantised MatMul (FakeQuantize on both
    inputs, f32 hint), best of ``repeats``; None when OpenVINO is not installed."""
    rng = np.random.default_rng(0)
    product = openvino_matmul(rng.standard_normal((size, size)).astype(np.float32), size,
                              quantised=True)
    if product is None:
        return None
    data = rng.standard_normal((size, size)).astype(np.float32)
    return 2 * size ** 3 / _best_seconds(lambda: product(data), repeats)


def _best_seconds(product: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` timed calls of ``product``, after one call not timed (its
    thread pool and caches warm)."""
    product()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - started)
    return best


def openvino_matmul(weight: np.ndarray, rows: int, quantised: bool,
                    ) -> Callable[[np.ndarray], object] | None:
    """``x @ weight`` for an ``x`` of ``rows`` rows, compiled by OpenVINO at f32 precision, the
    weight a constant (quantised: both sides through FakeQuantize, 256 levels, as an int8 model
    runs); called with ``x``, it returns OpenVINO's results (the product their only output).
    None without OpenVINO."""
    try:
        from rag_pipeline.core.embedding.openvino_runtime import openvino, openvino_core

        ov = openvino()
        import openvino.opset13 as ops
    except ImportError:
        return None

    def levels(node, low: float, high: float):
        lo, hi = ops.constant(np.float32(low)), ops.constant(np.float32(high))
        return ops.fake_quantize(node, lo, hi, lo, hi, 256) if quantised else node

    x = ops.parameter([rows, weight.shape[0]], ov.Type.f32, name="x")
    product = ops.matmul(levels(x, -4.0, 4.0), levels(ops.constant(weight), -4.0, 4.0), False, False)
    model = ov.Model([product], [x], "int8_matmul" if quantised else "fp32_matmul")
    return openvino_core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
