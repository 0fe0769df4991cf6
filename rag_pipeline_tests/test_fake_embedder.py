"""The hashed stand-in model keeps the real one's contract: shape, unit length, determinism,
progress, and a spec of its own."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from rag_pipeline_tests.fake_embedder import DIMENSION, HashedEmbedder, hashed_spec


def test_vectors_are_unit_length_float32_rows_in_input_order():
    embedder = HashedEmbedder()
    texts = ["network timeouts", "", "the upgrade command", "network timeouts"]
    vectors = embedder.embed(texts)
    assert (vectors.shape, vectors.dtype) == ((4, DIMENSION), np.float32)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(vectors[0], vectors[3])
    np.testing.assert_array_equal(embedder.embed_query("the upgrade command"), vectors[2])
    assert embedder.embed([]).shape == (0, DIMENSION)


def test_shared_words_are_closer_than_none():
    a, b, c = HashedEmbedder().embed(["network call timeout", "the network call gives up",
                                      "release notes of version 2"])
    assert float(a @ b) > 0.3 > float(a @ c)


def test_the_same_text_gives_the_same_vector_in_another_process():
    code = ("from rag_pipeline_tests.fake_embedder import HashedEmbedder; "
            "print(HashedEmbedder().embed_query('network timeouts').tobytes().hex())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == HashedEmbedder().embed_query("network timeouts").tobytes().hex()


def test_progress_is_reported_per_batch_and_at_the_end():
    calls: list[tuple[int, int]] = []
    HashedEmbedder().embed(["a"] * 5, batch_size=2, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 5), (4, 5), (5, 5)]


def test_its_spec_is_its_own_vector_space():
    spec = hashed_spec()
    assert (spec.key, spec.dimension) == ("hashed-wordpieces@0000feed", DIMENSION)
    assert (spec.path / "tokenizer.json").is_file()
