"""The floor's arithmetic: an encoder's FLOPs, and the products its rate is measured on."""

from __future__ import annotations

import numpy as np

from rag_pipeline.core.embedding.floor import encoder_flops, openvino_matmul


def test_encoder_flops_count_each_layers_products_for_the_word_pieces_processed():
    config = {"hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 2}
    # Per layer: 2 n (4 d^2 + 2 d f) + 4 n^2 d; n = 3 and n = 1, d = 4, f = 8.
    per_layer = (2 * 3 * (64 + 64) + 4 * 9 * 4) + (2 * 1 * (64 + 64) + 4 * 1 * 4)
    assert per_layer == 1184
    assert encoder_flops([3, 1], config) == 2 * per_layer


def test_the_openvino_products_timed_for_the_floor_are_the_products():
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, (16, 32)).astype(np.float32)
    w = rng.uniform(-3, 3, (32, 8)).astype(np.float32)
    fp32 = openvino_matmul(w, 16, quantised=False)
    (product,) = fp32(x).values()
    assert np.abs(product - x @ w).max() < 1e-3
    # Quantised to 256 levels over [-4, 4]: each factor within half a step (4/255) of itself.
    (quantised,) = openvino_matmul(w, 16, quantised=True)(x).values()
    assert np.abs(quantised - x @ w).max() < 32 * 2 * 3 * (4 / 255)
    assert np.abs(quantised - x @ w).max() > 0


def test_the_fp32_floor_takes_openvinos_product_when_it_is_the_fastest(monkeypatch):
    """Found by a helper: the floor read numpy's and torch's products alone, and OpenVINO's f32
    product outran them here (396 against 272 GFLOP/s), so the default model read 2.28 of it."""
    from rag_pipeline.core.embedding import floor

    used = []
    monkeypatch.setattr(floor, "openvino_matmul",
                        lambda weight, rows, quantised: lambda x: used.append(quantised))
    # A product that returns at once: the rate can only come from it (no 2-core CPU does
    # 10 TFLOP/s).
    assert floor.fp32_matmul_rate(size=256, repeats=2) > 1e13
    assert used == [False, False, False]
