"""Tests for ``rag_pipeline.core.storage.warehouse``: immutable content-named Parquet files and a
pointer per partition, written last."""

from __future__ import annotations

import hashlib
import io
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_pipeline.core.storage.warehouse import (
    POINTER_FILE,
    IndexNotBuiltError,
    UnsafePathError,
    Warehouse,
    check_partition_value,
)
from rag_pipeline.core.text.arguments import InvalidArgumentError


def chunk_rows(prefix: str, n: int) -> pa.Table:
    return pa.table({"chunk_id": [f"{prefix}:{i}" for i in range(n)],
                     "length": pa.array([10 * i for i in range(n)], pa.int64())})


def digest_of(table: pa.Table) -> str:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return hashlib.sha256(buffer.getvalue()).hexdigest()[:16]


def test_write_then_read_a_partition(tmp_path):
    warehouse = Warehouse(tmp_path)
    rows = chunk_rows("h", 3)
    version = warehouse.write("chunks", rows, {"chunker": "header"},
                              inputs={"documents": "documents/part-x.parquet"})
    assert version.file == f"chunks/chunker=header/part-{digest_of(rows)}.parquet"
    assert (tmp_path / "warehouse" / version.file).is_file()
    assert (version.table, version.partition, version.rows, version.inputs) == (
        "chunks", {"chunker": "header"}, 3, {"documents": "documents/part-x.parquet"})
    assert warehouse.version("chunks", {"chunker": "header"}) == version
    assert warehouse.exists("chunks", {"chunker": "header"})
    assert not warehouse.exists("chunks", {"chunker": "blind"})
    assert warehouse.read("chunks", {"chunker": "header"}).to_pylist() == [
        {"chunk_id": "h:0", "length": 0}, {"chunk_id": "h:1", "length": 10},
        {"chunk_id": "h:2", "length": 20}]
    assert warehouse.read("chunks", {"chunker": "header"}, columns=["length"]).to_pydict() == {
        "length": [0, 10, 20]}


def test_identical_content_gets_the_identical_file_and_digest(tmp_path):
    warehouse = Warehouse(tmp_path)
    first = warehouse.write("chunks", chunk_rows("h", 2), {"chunker": "header"})
    again = warehouse.write("chunks", chunk_rows("h", 2), {"chunker": "header"})
    other = warehouse.write("chunks", chunk_rows("h", 3), {"chunker": "header"})
    assert (first.file, first.digest) == (again.file, again.digest)
    assert other.digest != first.digest
    folder = tmp_path / "warehouse" / "chunks" / "chunker=header"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [POINTER_FILE, f"part-{first.digest}.parquet", f"part-{other.digest}.parquet"])


def test_a_crash_before_the_pointer_keeps_the_previous_table(tmp_path, monkeypatch):
    warehouse = Warehouse(tmp_path)
    partition = {"chunker": "header"}
    warehouse.write("chunks", chunk_rows("old", 2), partition)
    original = Warehouse.put_json

    def dies_at_the_pointer(self, relative, data):
        # Planted: the writer dies after the new file, before its pointer: readers must
        # still see the old rows.
        raise OSError("killed")

    monkeypatch.setattr(Warehouse, "put_json", dies_at_the_pointer)
    with pytest.raises(OSError, match="killed"):
        warehouse.write("chunks", chunk_rows("new", 5), partition)
    monkeypatch.setattr(Warehouse, "put_json", original)
    assert warehouse.read("chunks", partition).column("chunk_id").to_pylist() == ["old:0", "old:1"]


def test_a_pointer_is_replaced_whole_and_leaves_no_temp_file(tmp_path):
    warehouse = Warehouse(tmp_path)
    warehouse.write("chunks", chunk_rows("a", 1), {"chunker": "header"})
    warehouse.write("chunks", chunk_rows("b", 1), {"chunker": "header"})
    folder = tmp_path / "warehouse" / "chunks" / "chunker=header"
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    pointer = json.loads((folder / POINTER_FILE).read_text())
    assert pointer["rows"] == 1 and pointer["file"].endswith(f"{digest_of(chunk_rows('b', 1))}.parquet")


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


@pytest.mark.parametrize("value", ["a/b", "a\\b", "", ".", ".."])
def test_partition_values_that_cannot_name_a_folder_are_rejected(tmp_path, value):
    with pytest.raises(ValueError, match="cannot name a folder"):
        Warehouse(tmp_path).partition_dir("chunks", {"chunker": value})


@pytest.mark.parametrize("value", ["header", "all-MiniLM-L6-v2-int8@56ea7bc8", "plain"])
def test_partition_value_accepts_chunkers_and_model_keys(value):
    assert check_partition_value(value) == value


@pytest.mark.parametrize("value", ["", ".", "..", ".hidden", "a/b", "a\\b", "a b", "a\x00b", "-x"])
def test_partition_value_refuses_what_could_leave_its_folder(value):
    with pytest.raises(InvalidArgumentError, match=f"^partition value {re.escape(repr(value))} "
                       "cannot name a folder"):
        check_partition_value(value)


def test_versions_list_every_partition_of_every_table(tmp_path):
    warehouse = Warehouse(tmp_path)
    warehouse.write("chunks", chunk_rows("h", 3), {"chunker": "header"})
    warehouse.write("chunks", chunk_rows("b", 2), {"chunker": "blind"})
    warehouse.write("bm25_terms", chunk_rows("t", 4), {"chunker": "header", "analyzer": "plain"})
    warehouse.write("documents", pa.table({"document_id": ["a.md", "b.md"]}))
    assert warehouse.tables() == ["bm25_terms", "chunks", "documents"]
    assert warehouse.partitions("chunks") == [{"chunker": "blind"}, {"chunker": "header"}]
    assert [(v.table, v.rows) for v in warehouse.versions()] == [
        ("bm25_terms", 4), ("chunks", 2), ("chunks", 3), ("documents", 2)]


def test_an_empty_warehouse_has_no_tables(tmp_path):
    assert Warehouse(tmp_path).tables() == []
    assert Warehouse(tmp_path / "absent").versions() == []


@pytest.mark.parametrize("name", ["data [1]", "da*ta?", "a'b\"c"])
def test_any_characters_in_the_data_folder_path_are_safe(tmp_path, name):
    warehouse = Warehouse(tmp_path / name)
    warehouse.write("chunks", chunk_rows("h", 2), {"chunker": "header"})
    # A sibling folder that a glob of the path would also match must not be read.
    Warehouse(tmp_path / "dataX").write("chunks", chunk_rows("x", 5), {"chunker": "header"})
    assert warehouse.read("chunks", {"chunker": "header"}).num_rows == 2
    assert warehouse.partitions("chunks") == [{"chunker": "header"}]


S3 = "s3://bucket/prefix?endpoint_override=127.0.0.1:1&scheme=http&region=us-east-1"
"""An object-store warehouse that is never reached: the check comes before any request."""


@pytest.mark.parametrize("location", [None, S3], ids=["local", "s3"])
@pytest.mark.parametrize("relative", ["../victim", "_vector_cache/model=m@53aa5117/../../../x",
                                      "/etc/passwd", "a//b", "./a", "a\\..\\b", "", "a/\x00"])
def test_no_path_resolves_outside_the_root(tmp_path, location, relative):
    warehouse = Warehouse(tmp_path / "data", location)
    with pytest.raises(UnsafePathError, match="would resolve outside the warehouse root"):
        warehouse.full_path(relative)


def test_deleting_a_prefix_that_climbs_out_deletes_nothing(tmp_path):
    warehouse = Warehouse(tmp_path / "data")
    warehouse.write("chunks", chunk_rows("h", 1), {"chunker": "header"})
    # Planted: a file beside the data folder that a `..` prefix would reach.
    victim = tmp_path / "victim" / "keep.txt"
    victim.parent.mkdir()
    victim.write_text("mine")
    with pytest.raises(UnsafePathError):
        warehouse.delete_prefix("_vector_cache/model=x@00000000/../../../victim")
    assert victim.read_text() == "mine"
    assert warehouse.read("chunks", {"chunker": "header"}).num_rows == 1


def test_written_in_parts_the_table_is_whole_content_named_and_leaves_no_temp(tmp_path):
    warehouse = Warehouse(tmp_path)
    parts = [chunk_rows("a", 2), chunk_rows("b", 3)]
    version = warehouse.write_parts("chunks", parts[0].schema, iter(parts), {"chunker": "header"},
                                    inputs={"documents": "documents/part-x.parquet"})
    path = tmp_path / "warehouse" / version.file
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    assert version.file == f"chunks/chunker=header/part-{digest}.parquet"
    assert (version.rows, version.inputs) == (5, {"documents": "documents/part-x.parquet"})
    assert pq.ParquetFile(path).metadata.num_row_groups == 2
    assert warehouse.read("chunks", {"chunker": "header"}).column("chunk_id").to_pylist() == [
        "a:0", "a:1", "b:0", "b:1", "b:2"]
    assert [p.name for p in tmp_path.iterdir()] == ["warehouse"]
    again = warehouse.write_parts("chunks", parts[0].schema, iter(parts), {"chunker": "header"})
    assert again.file == version.file


def test_a_write_that_fills_the_disk_leaves_the_old_object_and_no_temporary_file(
        tmp_path, monkeypatch: pytest.MonkeyPatch):
    import errno
    import os

    warehouse = Warehouse(tmp_path)
    warehouse.put_json("_generations/x/CURRENT.json", {"id": "old"})

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    # Planted: the disk is full when the new copy is flushed (it left a temporary file that
    # kept the disk full).
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError) as full:
        warehouse.put_json("_generations/x/CURRENT.json", {"id": "new"})
    # Found by an operator: a disk that filled while an index embedded was named nowhere.
    assert full.value.strerror == (f"no space left to write {tmp_path}/warehouse/_generations/x/"
                                   "CURRENT.json: free space or move the data folder")
    monkeypatch.undo()
    assert warehouse.get_json("_generations/x/CURRENT.json") == {"id": "old"}
    assert sorted(p.name for p in (tmp_path / "warehouse" / "_generations" / "x").iterdir()) == [
        "CURRENT.json"]


def test_a_data_folder_open_to_every_user_is_named_with_its_mode(tmp_path):
    from rag_pipeline.core.storage.warehouse import open_to_every_user

    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    assert open_to_every_user(data) == (
        f"the data folder {data} is open to every user of this machine (mode 755): its tables "
        f"hold every document's text, whatever [access] says; `chmod o-rwx {data}` closes it")
    data.chmod(0o711)  # not listed, but rag.duckdb is a name anyone can guess
    assert open_to_every_user(data).startswith(f"the data folder {data} is open to every user "
                                               "of this machine (mode 711)")
    data.chmod(0o750)
    assert open_to_every_user(data) is None
    assert open_to_every_user(tmp_path / "not-there") is None
