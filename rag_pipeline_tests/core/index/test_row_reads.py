"""Tests for ``rag_pipeline.core.index.row_reads``: rows and strings read from a mapped copy's
file by pread give what the map gives, in the order asked, and what derives from the matrix is
plain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.core.index.mapped import mapped_table
from rag_pipeline.core.index.row_reads import (
    FileRows,
    KeyedStrings,
    MappedFile,
    StringColumn,
    random_access_map,
)
from rag_pipeline.core.storage.warehouse import Warehouse


def test_keyed_strings_read_the_mapped_column_by_key(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    file = warehouse.write("documents", pa.table({"document_id": ["a.md", "b.md", "c.md"],
                                                  "canonical_text": ["Alpha.", "Beta.", "Gamma."]})).file
    table = mapped_table(warehouse, file, ["document_id", "canonical_text"])
    # Row 1 left out, as a failed document is.
    texts = KeyedStrings({"a.md": 0, "c.md": 2}, StringColumn(table.column("canonical_text")))
    assert (texts["c.md"], texts.get("b.md"), len(texts)) == ("Gamma.", None, 2)
    assert list(texts) == ["a.md", "c.md"]
    assert texts == {"a.md": "Alpha.", "c.md": "Gamma."}
    assert texts != {"a.md": "Alpha."}


def test_file_rows_read_asked_rows_by_pread_and_scan_through_the_map(tmp_path: Path):
    matrix = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    np.save(tmp_path / "m.npy", matrix)
    mapped = FileRows.open(tmp_path / "m.npy")
    got = mapped[np.array([4, 0, 4, -1])]
    # Rows in the order asked, repeats and a negative row included, as a plain new array.
    assert got.tolist() == [matrix[4].tolist(), matrix[0].tolist(), matrix[4].tolist(), matrix[4].tolist()]
    assert type(got) is np.ndarray and got.flags.writeable
    assert mapped[[1]].tolist() == [matrix[1].tolist()]
    # A scan, a slice and a result read the map; what derives from the matrix reads no file.
    assert (mapped @ np.ones(3, np.float32)).tolist() == (matrix @ np.ones(3, np.float32)).tolist()
    part = mapped[1:3]
    assert part._fd is None and part[np.array([1])].tolist() == [matrix[2].tolist()]
    assert not mapped.flags.writeable
    with pytest.raises(IndexError, match="rows out of range for a matrix of 5 rows"):
        mapped[np.array([5])]
    # No row asked (a BM25 question matching no chunk the asker reads, found by an attack: a
    # 500 on the approximate path's partitions), no row given.
    assert mapped[np.array([], np.int64)].shape == (0, 3)


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_string_column_reads_values_from_the_file_as_arrow_reads_them(tmp_path: Path, kind):
    path = tmp_path / "t.arrow"
    batches = [["", "Ünïcode ✓", "a"], ["second batch", "x" * 5000], [None, "after a null"]]
    schema = pa.schema([("s", kind)])
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for values in batches:
            writer.write_batch(pa.record_batch([pa.array(values, kind)], schema=schema))
    buffer = pa.py_buffer(random_access_map(path))
    table = pa.ipc.open_file(buffer).read_all()
    column = StringColumn(table.column("s"), MappedFile.open(path, buffer.address))
    expected = [v for values in batches for v in values]
    assert [column[i] for i in range(len(expected))] == expected
    assert column[-1] == "after a null" and list(column) == expected
    with pytest.raises(IndexError, match="row 7 of a column of 7"):
        column[7]
