"""Tests for ``core.embedding.vectors``: the vector column as a matrix, and the model stamps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.core.embedding.models import ModelMismatchError
from rag_pipeline.core.embedding.vectors import check_stamps, vector_matrix
from rag_pipeline_tests.fake_embedder import hashed_spec


def stamped(names: list[str], fingerprints: list[str]) -> pa.Table:
    return pa.table({"model_name": names, "model_fingerprint": fingerprints})


def test_the_vector_column_is_an_n_by_width_float32_matrix():
    vectors = np.arange(6, dtype=np.float64).reshape(2, 3)
    table = pa.table({"vector": pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.astype(np.float32).reshape(-1)), 3)})
    matrix = vector_matrix(table)
    assert matrix.dtype == np.float32
    assert matrix.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_vectors_of_the_same_model_pass_and_an_empty_table_passes():
    spec = hashed_spec()
    check_stamps(stamped([spec.name] * 2, [spec.fingerprint] * 2), spec, "the cache")
    check_stamps(stamped([], []), spec, "the cache")


def test_one_vector_of_another_model_is_refused():
    spec = hashed_spec()
    # Planted flaw: one row stamped with another fingerprint (spaces must never mix).
    with pytest.raises(ModelMismatchError) as refused:
        check_stamps(stamped([spec.name] * 2, [spec.fingerprint, "deadbeef"]), spec, "the cache")
    assert str(refused.value) == (
        f"the cache holds vectors of {spec.name}@0000feed, {spec.name}@deadbeef, not {spec.key}: "
        "vector spaces are never mixed")
