"""``local_published_id``: the served generation's id read with the standard library alone."""

from __future__ import annotations

from pathlib import Path

from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.storage.generation_pointer import generation_dir, local_published_id
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.core.index_builder import build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder


def test_the_published_id_is_the_one_the_warehouse_reads(tmp_path: Path):
    built = build_index(tmp_path, HashedEmbedder())
    warehouse = Warehouse(built.data_dir)
    model = built.index.model_key
    root = Path(warehouse.location)
    assert local_published_id(root, "header", model) == current_generation(
        warehouse, "header", model).id == built.index.generation
    assert local_published_id(root, "blind", model) is None  # nothing published
    (root / generation_dir("header", model) / "CURRENT.json").write_text("{", encoding="utf-8")
    assert local_published_id(root, "header", model) is None
