"""Stored partitions per model key, undeclared keys, and dropping them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from rag_pipeline.core.config.validation import InvalidArgumentError
from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec
from rag_pipeline.core.index.model_inventory import ModelPartitions, drop_model_partitions, inventory
from rag_pipeline.core.storage.warehouse import Warehouse

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


def test_a_key_that_climbs_out_of_the_data_folder_deletes_nothing(tmp_path: Path,
                                                                  warehouse: Warehouse):
    # Planted: the key of issue 20, which deleted a folder beside the data folder.
    victim = tmp_path.parent / f"{tmp_path.name}-victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    key = f"all-MiniLM-L6-v2@53aa5117/../../../{victim.name}"
    with pytest.raises(InvalidArgumentError, match="model key must be <name>@<8 hex digits>"):
        drop_model_partitions(warehouse, key, [KEPT])
    assert (victim / "keep.txt").read_text() == "mine"
    assert len(warehouse.partitions("embeddings")) == 3


def test_dropping_an_unknown_key_is_an_error(warehouse: Warehouse):
    with pytest.raises(InvalidArgumentError, match=r"^no stored partition of model key "
                       r"'never@33333333'; stored keys: gone@22222222, kept@11111111$"):
        drop_model_partitions(warehouse, "never@33333333", [KEPT])
    assert len(warehouse.partitions("embeddings")) == 3
