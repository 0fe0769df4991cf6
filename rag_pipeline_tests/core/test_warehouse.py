"""Tests for ``rag_pipeline.core.warehouse``: Hive-partitioned Parquet written atomically, and
DuckDB views over it with the partition keys as columns."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_pipeline.core.warehouse import PART_FILE, IndexNotBuiltError, Warehouse


def chunk_rows(prefix: str, n: int) -> pa.Table:
    return pa.table({"chunk_id": [f"{prefix}:{i}" for i in range(n)],
                     "length": pa.array([10 * i for i in range(n)], pa.int64())})


def test_write_then_read_a_partition(tmp_path):
    warehouse = Warehouse(tmp_path)
    path = warehouse.write("chunks", chunk_rows("h", 3), {"chunker": "header"})
    assert path == tmp_path / "warehouse" / "chunks" / "chunker=header" / PART_FILE
    assert warehouse.exists("chunks", {"chunker": "header"})
    assert not warehouse.exists("chunks", {"chunker": "blind"})
    table = warehouse.read("chunks", {"chunker": "header"})
    assert table.to_pylist() == [{"chunk_id": "h:0", "length": 0}, {"chunk_id": "h:1", "length": 10},
                                 {"chunk_id": "h:2", "length": 20}]
    assert warehouse.read("chunks", {"chunker": "header"}, columns=["length"]).to_pydict() == {
        "length": [0, 10, 20]}


def test_write_is_atomic_and_leaves_no_temp_file(tmp_path):
    warehouse = Warehouse(tmp_path)
    partition = {"chunker": "header"}
    warehouse.write("chunks", chunk_rows("old", 2), partition)
    warehouse.write("chunks", chunk_rows("new", 1), partition)
    folder = warehouse.partition_dir("chunks", partition)
    assert sorted(p.name for p in folder.iterdir()) == [PART_FILE]
    assert warehouse.read("chunks", partition).column("chunk_id").to_pylist() == ["new:0"]


def test_a_crash_while_writing_keeps_the_previous_table(tmp_path, monkeypatch):
    warehouse = Warehouse(tmp_path)
    partition = {"chunker": "header"}
    warehouse.write("chunks", chunk_rows("old", 2), partition)

    def half_written(table, where, **kwargs):
        # Planted: the writer dies after writing a truncated temp file -> the rename never
        # happens, so the stored partition must still read as the old rows.
        with open(where, "wb") as handle:
            handle.write(b"PAR1 truncated")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", half_written)
    with pytest.raises(OSError, match="disk full"):
        warehouse.write("chunks", chunk_rows("new", 5), partition)
    monkeypatch.undo()
    assert warehouse.read("chunks", partition).column("chunk_id").to_pylist() == ["old:0", "old:1"]
    # The stray temp file is hidden and not a part file: readers and listings ignore it.
    assert warehouse.partitions("chunks") == [{"chunker": "header"}]


def test_read_of_a_missing_partition_raises_index_not_built(tmp_path):
    warehouse = Warehouse(tmp_path)
    with pytest.raises(IndexNotBuiltError, match=r"table 'chunks' \(chunker=blind\) has not been built"):
        warehouse.read("chunks", {"chunker": "blind"})
    with pytest.raises(IndexNotBuiltError, match=r"table 'documents' \(unpartitioned\)"):
        warehouse.read("documents")
    assert warehouse.read_or_none("chunks", {"chunker": "blind"}) is None
    warehouse.write("chunks", chunk_rows("h", 1), {"chunker": "header"})
    # Planted: the table exists, but not this partition -> still IndexNotBuiltError.
    with pytest.raises(IndexNotBuiltError):
        warehouse.read("chunks", {"chunker": "blind"})


@pytest.mark.parametrize("value", ["a/b", "", ".", ".."])
def test_partition_values_that_cannot_name_a_folder_are_rejected(tmp_path, value):
    with pytest.raises(ValueError, match="cannot name a folder"):
        Warehouse(tmp_path).part_path("chunks", {"chunker": value})


def test_refresh_views_exposes_partition_keys_as_columns(tmp_path):
    warehouse = Warehouse(tmp_path)
    warehouse.write("chunks", chunk_rows("h", 3), {"chunker": "header"})
    warehouse.write("chunks", chunk_rows("b", 2), {"chunker": "blind"})
    warehouse.write("bm25_terms", chunk_rows("t", 4), {"chunker": "header", "analyzer": "plain"})
    warehouse.write("bm25_terms", chunk_rows("t", 1), {"chunker": "header", "analyzer": "english"})
    warehouse.write("documents", pa.table({"document_id": ["a.md", "b.md"]}))
    assert warehouse.tables() == ["bm25_terms", "chunks", "documents"]
    assert warehouse.partitions("bm25_terms") == [{"chunker": "header", "analyzer": "english"},
                                                  {"chunker": "header", "analyzer": "plain"}]

    assert warehouse.refresh_views() == ["bm25_terms", "chunks", "documents"]
    assert warehouse.db_path == tmp_path / "rag.duckdb"
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        assert con.execute(
            "select chunker, count(*), sum(length) from chunks group by chunker order by chunker"
        ).fetchall() == [("blind", 2, 10), ("header", 3, 30)]
        assert con.execute(
            "select chunker, analyzer, count(*) from bm25_terms group by all order by analyzer"
        ).fetchall() == [("header", "english", 1), ("header", "plain", 4)]
        assert con.execute("select document_id from documents order by 1").fetchall() == [
            ("a.md",), ("b.md",)]
        # Partition keys are strings (no type guessing), so a value like "1" stays "1".
        assert con.execute(
            "select data_type from information_schema.columns "
            "where table_name = 'chunks' and column_name = 'chunker'").fetchall() == [("VARCHAR",)]


def test_views_see_new_partitions_after_a_refresh(tmp_path):
    warehouse = Warehouse(tmp_path)
    warehouse.write("chunks", chunk_rows("h", 3), {"chunker": "header"})
    warehouse.refresh_views()
    warehouse.write("chunks", chunk_rows("b", 2), {"chunker": "blind"})
    warehouse.refresh_views()
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        assert con.execute("select count(*) from chunks").fetchone() == (5,)


def test_refresh_views_on_an_empty_warehouse_creates_no_views(tmp_path):
    warehouse = Warehouse(tmp_path)
    assert warehouse.tables() == []
    assert warehouse.refresh_views() == []
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        assert con.execute("select count(*) from duckdb_views() where not internal").fetchone() == (0,)
