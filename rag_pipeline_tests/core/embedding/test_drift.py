"""The drift check: stored vectors against freshly embedded ones."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rag_pipeline.core.embedding.drift import drift_check
from rag_pipeline.core.embedding.models import ModelSpec, Precision


class FixedEmbedder:
    """Embeds text ``tN`` as the unit vector along axis N (a test double)."""

    spec = ModelSpec(name="fixed", path=None, fingerprint="00000000", dimension=4)

    def embed(self, texts, **kwargs):
        return np.eye(4, dtype=np.float32)[[int(t[1:]) for t in texts]]

    def embed_query(self, question):
        return self.embed([question])[0]


def _tables(vectors: np.ndarray) -> tuple[pa.Table, pa.Table]:
    ids = [f"c{i}" for i in range(4)]
    stored = pa.table({"chunk_id": ids, "vector": pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.reshape(-1), pa.float32()), 4)})
    return stored, pa.table({"chunk_id": ids, "text": [f"t{i}" for i in range(4)]})


def test_unchanged_vectors_pass():
    report = drift_check(*_tables(np.eye(4, dtype=np.float32)), FixedEmbedder(), samples=4)
    assert (report.checked, report.min_cosine, report.passed) == (4, 1.0, True)


def test_a_moved_vector_fails_and_is_named():
    vectors = np.eye(4, dtype=np.float32)
    # Planted flaw: c2's stored vector is not what the model gives for its text any more.
    vectors[2] = np.array([0.0, 0.6, 0.8, 0.0], dtype=np.float32)
    report = drift_check(*_tables(vectors), FixedEmbedder(), samples=4)
    assert (report.checked, round(report.min_cosine, 6), report.worst_chunk_id, report.passed) == (
        4, 0.8, "c2", False)


def test_a_static_int8_model_is_held_to_its_own_bound():
    # Static int8 rounds every layer's activations: a text's vector moves by up to ~2e-4 with
    # its batch (0.999835 measured on the bundled corpus). Such a model passes at 0.9995,
    # where an fp32 model would fail.
    class Int8Embedder(FixedEmbedder):
        spec = ModelSpec(name="fixed-int8", path=None, fingerprint="00000000", dimension=4,
                         precision=Precision.INT8)

    vectors = np.eye(4, dtype=np.float32)
    vectors[1] = np.array([0.0, 0.9995, np.sqrt(1 - 0.9995 ** 2), 0.0], dtype=np.float32)
    fp32 = drift_check(*_tables(vectors), FixedEmbedder(), samples=4)
    int8 = drift_check(*_tables(vectors), Int8Embedder(), samples=4)
    assert (round(fp32.min_cosine, 4), fp32.required, fp32.passed) == (0.9995, 0.9999, False)
    assert (round(int8.min_cosine, 4), int8.required, int8.passed) == (0.9995, 0.999, True)
    # Far moved, it fails as well.
    vectors[1] = np.array([0.0, 0.99, np.sqrt(1 - 0.99 ** 2), 0.0], dtype=np.float32)
    assert drift_check(*_tables(vectors), Int8Embedder(), samples=4).passed is False
