"""Tests for ``rag_pipeline.core.index.query_db``: the DuckDB file users query is a snapshot of what
is published, replaced atomically, readable anywhere it is copied."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from rag_pipeline.core.index.generations import publish
from rag_pipeline.core.index.query_db import publish_query_db, refresh_query_db
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline_tests.core.generation_fixtures import write_partition

MODEL = "m@0000abcd"


def query(db, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_tables_show_served_generations_with_partition_keys_as_columns(tmp_path):
    warehouse = Warehouse(tmp_path)
    generation, _ = publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    publish(warehouse, "blind", MODEL, write_partition(warehouse, "blind", MODEL, 2))
    warehouse.write("eval_summary", pa.table({"r": [0.5]}), {"model": MODEL})
    stats = publish_query_db(warehouse)
    assert stats.rebuilt_from_scratch
    db = tmp_path / "rag.duckdb"
    assert query(db, "select chunker, count(*) from chunks group by 1 order by 1") == [
        ("blind", 2), ("header", 3)]
    assert query(db, "select chunker, model, count(*) from embeddings group by all order by 1") == [
        ("blind", MODEL, 2), ("header", MODEL, 3)]
    assert query(db, "select model, r from eval_summary") == [(MODEL, 0.5)]
    assert query(db, "select chunker, generation, chunks from generations order by 1") == [
        ("blind", query(db, "select generation from generations where chunker = 'blind'")[0][0], 2),
        ("header", generation.id, 3)]
    # Partition keys are strings (no type guessing), and the first columns.
    assert query(db, "select column_name, data_type from information_schema.columns "
                     "where table_name = 'embeddings' order by ordinal_position limit 2") == [
        ("chunker", "VARCHAR"), ("model", "VARCHAR")]


def test_a_staged_but_unpublished_build_is_not_visible(tmp_path):
    warehouse = Warehouse(tmp_path)
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    publish_query_db(warehouse)
    # A re-index has written new chunks (and everything else) but not published them yet.
    write_partition(warehouse, "header", MODEL, 5, tag="b")
    publish_query_db(warehouse)
    assert query(tmp_path / "rag.duckdb", "select count(*) from chunks") == [(3,)]


def test_only_changed_tables_are_replaced(tmp_path):
    warehouse = Warehouse(tmp_path)
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    publish_query_db(warehouse)
    assert publish_query_db(warehouse).tables_replaced == []
    warehouse.write("eval_summary", pa.table({"r": [0.5]}), {"model": MODEL})
    assert publish_query_db(warehouse).tables_replaced == ["eval_summary"]


def test_a_reader_keeps_its_snapshot_and_never_blocks_the_writer(tmp_path):
    warehouse = Warehouse(tmp_path)
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    publish_query_db(warehouse)
    db = tmp_path / "rag.duckdb"
    # A user holds the file open, even read-write (DuckDB's default), during a re-index.
    with duckdb.connect(str(db)) as holder:
        publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 4, tag="b"))
        publish_query_db(warehouse)
        assert holder.execute("select count(*) from chunks").fetchone() == (3,)
    assert query(db, "select count(*) from chunks") == [(4,)]


def test_a_copied_data_folder_reads_its_own_rows(tmp_path):
    warehouse = Warehouse(tmp_path / "data")
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    publish_query_db(warehouse)
    shutil.copytree(tmp_path / "data", tmp_path / "copy [1]")
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 6, tag="b"))
    publish_query_db(warehouse)
    shutil.rmtree(tmp_path / "data" / "warehouse")
    assert query(tmp_path / "copy [1]" / "rag.duckdb", "select count(*) from chunks") == [(3,)]
    assert query(tmp_path / "data" / "rag.duckdb", "select count(*) from chunks") == [(6,)]


def test_a_reader_never_rewrites_the_snapshot_from_a_warehouse_with_nothing_published(tmp_path):
    warehouse = Warehouse(tmp_path)
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    publish_query_db(warehouse)
    before = (tmp_path / "rag.duckdb").read_bytes()
    # Planted: a wrong --warehouse (an empty folder) beside the same data folder.
    wrong = Warehouse(tmp_path, str(tmp_path / "not-the-warehouse"))
    with pytest.raises(IndexNotBuiltError, match="holds no published generation .* was left as "
                                                 "it was"):
        refresh_query_db(wrong)
    assert (tmp_path / "rag.duckdb").read_bytes() == before
    assert query(tmp_path / "rag.duckdb", "select count(*) from chunks") == [(3,)]
    assert refresh_query_db(warehouse).tables_replaced == []


USER_WRITES_AND_DIES = """
import duckdb, os, sys
con = duckdb.connect(sys.argv[1])
con.execute("SET checkpoint_threshold = '1GB'")
con.execute("CREATE TABLE mine AS SELECT 42 AS answer")
os._exit(0)  # no checkpoint: the write stays in the WAL beside the published file
"""


def test_a_wal_left_by_a_user_who_wrote_never_poisons_the_next_swap(tmp_path):
    warehouse = Warehouse(tmp_path)
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    publish_query_db(warehouse)
    db = tmp_path / "rag.duckdb"
    subprocess.run([sys.executable, "-c", USER_WRITES_AND_DIES, str(db)], check=True, timeout=120)
    assert Path(f"{db}.wal").is_file()
    publish(warehouse, "blind", MODEL, write_partition(warehouse, "blind", MODEL, 2, tag="b"))
    stats = publish_query_db(warehouse)
    assert stats.rebuilt_from_scratch
    assert not Path(f"{db}.wal").exists()
    assert query(db, "select chunker, count(*) from chunks group by 1 order by 1") == [
        ("blind", 2), ("header", 3)]
    assert query(db, "select count(*) from information_schema.tables where table_name = 'mine'") \
        == [(0,)]


@pytest.mark.parametrize("folder", ["g [1]*?#% x", "a?b", "new\nline", "?"])
def test_a_data_folder_with_any_character_a_file_system_allows_publishes(tmp_path, folder):
    # DuckDB puts ".wal" before the first "?" of a database path: a "?" in the folder made it
    # write the WAL into a folder that does not exist and the publish failed.
    warehouse = Warehouse(tmp_path / folder)
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    assert publish_query_db(warehouse).rebuilt_from_scratch
    write_partition(warehouse, "header", MODEL, 5, tag="b")
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 4, tag="c"))
    assert publish_query_db(warehouse).tables_replaced != []
    assert query(tmp_path / folder / "rag.duckdb", "select count(*) from chunks") == [(4,)]
    assert sorted(p.name for p in (tmp_path / folder).iterdir()
                  if p.name.startswith(".rag.duckdb.") and "lock" not in p.name) == []
    assert [p.name for p in tmp_path.iterdir()] == [folder]


def test_a_full_disk_while_publishing_switches_nothing_and_leaves_no_temporary_file(
        tmp_path, monkeypatch: pytest.MonkeyPatch):
    import errno

    from rag_pipeline.core.index import query_db

    warehouse = Warehouse(tmp_path)

    def publish_with_db(tables):
        return publish(warehouse, "header", MODEL, tables,
                       before_pointer=lambda g: publish_query_db(warehouse, g))

    first, _ = publish_with_db(write_partition(warehouse, "header", MODEL, 3))
    pointer = tmp_path / "warehouse" / "_generations" / "chunker=header" / f"model={MODEL}"
    served, db = (pointer / "CURRENT.json").read_bytes(), (tmp_path / "rag.duckdb").read_bytes()
    tables = write_partition(warehouse, "header", MODEL, 5, tag="b")

    # Planted: the disk fills while rag.duckdb is rebuilt. CURRENT.json was switched first and
    # rag.duckdb left stale: the pointer now goes last, after the query file.
    def full_disk(con, name, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(query_db, "_replace_table", full_disk)
    with pytest.raises(OSError, match="No space left on device"):
        publish_with_db(tables)
    assert (pointer / "CURRENT.json").read_bytes() == served
    assert (tmp_path / "rag.duckdb").read_bytes() == db
    assert sorted(p.name for p in pointer.iterdir()) == sorted(["CURRENT.json", f"{first.id}.json"])
    assert [p.name for p in tmp_path.rglob("*") if ".tmp" in p.name] == []
    monkeypatch.undo()
    second, is_new = publish_with_db(tables)
    assert is_new and second.id != first.id
    assert query(tmp_path / "rag.duckdb", "select count(*) from chunks") == [(5,)]
    assert query(tmp_path / "rag.duckdb", "select generation from generations") == [(second.id,)]


def test_a_feedback_file_replaced_while_publishing_is_read_again_not_a_failure(tmp_path,
                                                                               monkeypatch):
    """Found by an attack: serve logged "feedback stored, rag.duckdb not refreshed:
    FileNotFoundError" when another verdict replaced (and then deleted at once) the feedback
    file the publication had just found in the table's pointer. A replaced file now waits out
    the garbage grace; the publication reads the pointers again when one is gone anyway."""
    from datetime import UTC, datetime

    from rag_pipeline.core.evaluation.feedback import Feedback, append_feedback
    from rag_pipeline.core.index import query_db

    warehouse = Warehouse(tmp_path)
    publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))

    def verdict(question: str) -> None:
        append_feedback(warehouse, Feedback(datetime.now(UTC).isoformat(timespec="seconds"),
                                            question, False, None, "g1", ()))

    verdict("first")
    real, raced = query_db._table_with_partitions, []

    def replaced_meanwhile(warehouse_, sources):
        if any("feedback" in file for _, file in sources) and not raced:
            raced.append(True)
            verdict("second")
            for _, file in sources:  # the replaced file gone, as after its grace
                warehouse_.delete(file)
        return real(warehouse_, sources)

    monkeypatch.setattr(query_db, "_table_with_partitions", replaced_meanwhile)
    publish_query_db(warehouse)
    assert raced == [True]
    assert query(tmp_path / "rag.duckdb", "select question from feedback order by 1") == [
        ("first",), ("second",)]
