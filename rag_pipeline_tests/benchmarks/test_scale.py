"""Tests for ``rag_pipeline.benchmarks.scale``: the nudge's size by hand, the copies a factor
writes (streamed, ids prefixed, every copy's vectors nudged), and the generation a swap
publishes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rag_pipeline.benchmarks.scale import (
    nearest_other_distances,
    nudge_sigma,
    publish_section_edit,
    write_copies,
)
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.storage.table_names import CHUNKS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index, topic_docs
from rag_pipeline_tests.fake_embedder import HashedEmbedder


@pytest.fixture
def built(tmp_path: Path) -> BuiltIndex:
    return build_index(tmp_path, HashedEmbedder(), docs=topic_docs())


def test_nudge_sigma_by_hand():
    # 1 - 1 / (1 + 384 s^2) = 0.2  <=>  s^2 = (1 / 0.8 - 1) / 384 = 0.25 / 384
    assert nudge_sigma(0.2, 384) == pytest.approx(math.sqrt(0.25 / 384))
    rng = np.random.default_rng(0)
    base = rng.normal(size=(200, 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    sigma = nudge_sigma(0.2, 384)
    copies = [base + rng.normal(0, sigma, base.shape).astype(np.float32) for _ in range(2)]
    a, b = (c / np.linalg.norm(c, axis=1, keepdims=True) for c in copies)
    assert float(np.median(1 - (a * b).sum(axis=1))) == pytest.approx(0.2, abs=0.01)


def test_nearest_other_distances_skip_exact_duplicates():
    vectors = np.array([[1, 0], [1, 0], [0.8, 0.6], [0, 1]], np.float32)
    # Rows 0 and 1 are the same vector: each one's nearest other is row 2 (cos 0.8).
    assert nearest_other_distances(vectors, block=3).round(6).tolist() == [0.2, 0.2, 0.2, 0.4]


def test_copies_are_prefixed_nudged_and_published(built: BuiltIndex, tmp_path: Path):
    key = built.index.model_key
    copies = write_copies(built.data_dir, tmp_path / "x2", "header", key, 2)
    index = load_partition(tmp_path / "x2", "header", key)
    n = len(built.index)
    assert len(index) == 2 * n and copies.nudge_sigma > 0
    assert list(index.chunk_ids) == list(built.index.chunk_ids) + [
        f"copy001/{c}" for c in built.index.chunk_ids]
    assert index.rows_by_content.rows_of_row(0) == (0,)
    # Every copy is nudged, the first included: no stored vector is the original.
    original = np.asarray(built.index.vectors)
    for part in (index.vectors[:n], index.vectors[n:]):
        assert not np.allclose(part, original)
        assert np.allclose(np.linalg.norm(part, axis=1), 1.0, atol=1e-5)
    assert index.ann is not None and index.ann.rows == 2 * n


def test_a_section_edit_publishes_a_generation_of_a_new_chunks_file(built: BuiltIndex):
    key = built.index.model_key
    warehouse = Warehouse(built.data_dir)
    before = current_generation(warehouse, "header", key)
    after_id = publish_section_edit(built.data_dir, "header", key)
    after = current_generation(warehouse, "header", key)
    assert after.id == after_id != before.id
    assert after.files[CHUNKS] != before.files[CHUNKS]
    assert after.files[EMBEDDINGS] == before.files[EMBEDDINGS]
    index = load_partition(built.data_dir, "header", key)
    assert index.sections[0] == f"{built.index.sections[0]} (edited)"
    assert list(index.sections[1:]) == list(built.index.sections[1:])
