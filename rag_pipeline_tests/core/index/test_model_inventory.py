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


def test_drop_deletes_the_local_copies_of_its_files_and_the_folders_it_empties(
        tmp_path: Path, warehouse: Warehouse):
    """Found by an operator's trial: the dropped model's mapped copies (9.2 MB) and its empty
    folders stayed in the data folder."""
    from rag_pipeline.core.index.mapped import cache_path

    def files(key: str) -> list[str]:
        return [warehouse.relative(info.path) for info in warehouse.list_files()
                if f"model={key}" in info.path and info.base_name.endswith(".parquet")]

    gone, kept = files("gone@22222222")[0], files("kept@11111111")[0]
    copies = [cache_path(warehouse, file, tag) for file in (gone, kept) for tag in ("ipc", "npy")]
    for copy in copies:
        copy.parent.mkdir(exist_ok=True)
        copy.write_bytes(b"copy")
    graph = tmp_path / "ann_cache" / Path(gone).name
    graph.parent.mkdir()
    graph.write_bytes(b"graph")
    drop_model_partitions(warehouse, "gone@22222222", [KEPT])
    assert sorted(p.name for p in (tmp_path / "map_cache").iterdir()) == sorted(
        p.name for p in copies[2:])
    assert not graph.exists()
    root = Path(warehouse.root)
    assert not (root / "eval_summary").exists()
    assert sorted(p.name for p in (root / "embeddings").iterdir()) == ["chunker=blind",
                                                                      "chunker=header"]
    assert [p.name for p in (root / "embeddings" / "chunker=header").iterdir()] == [
        "model=kept@11111111"]


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
