"""Stored partitions per model key, undeclared keys, and dropping them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from rag_pipeline.core.model_inventory import ModelPartitions, drop_model_partitions, inventory
from rag_pipeline.core.models import ModelMismatchError, ModelSpec
from rag_pipeline.core.warehouse import Warehouse

KEPT = ModelSpec(name="kept", path=Path("."), fingerprint="11111111", dimension=4)


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    warehouse = Warehouse(tmp_path)
    row = pa.table({"x": [1]})
    for chunker in ("header", "blind"):
        warehouse.write("embeddings", row, {"chunker": chunker, "model": "kept@11111111"})
    warehouse.write("embeddings", row, {"chunker": "header", "model": "gone@22222222"})
    warehouse.write("eval_summary", row, {"model": "gone@22222222"})
    warehouse.write("chunks", row, {"chunker": "header"})
    return warehouse


def test_inventory_lists_declared_then_undeclared_keys(warehouse: Warehouse):
    assert inventory([KEPT], warehouse) == [
        ModelPartitions("kept@11111111", True, ("blind", "header"), ("embeddings",)),
        ModelPartitions("gone@22222222", False, ("header",), ("embeddings", "eval_summary"))]


def test_drop_deletes_only_the_undeclared_keys_partitions(warehouse: Warehouse):
    assert drop_model_partitions(warehouse, "gone@22222222", [KEPT]) == 2
    assert warehouse.partitions("embeddings") == [
        {"chunker": "blind", "model": "kept@11111111"},
        {"chunker": "header", "model": "kept@11111111"}]
    assert warehouse.partitions("chunks") == [{"chunker": "header"}]
    assert "eval_summary" not in warehouse.tables()


def test_a_declared_key_is_never_dropped(warehouse: Warehouse):
    with pytest.raises(ModelMismatchError, match="kept@11111111 is still declared"):
        drop_model_partitions(warehouse, "kept@11111111", [KEPT])
