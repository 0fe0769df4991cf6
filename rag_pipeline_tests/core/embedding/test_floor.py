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
