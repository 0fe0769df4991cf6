"""Tests for ``rag_pipeline.core.index.mapped``: the memory-mapped copies equal what reading the
Parquet files gives (vectors, strings, BM25 scores against the in-memory scorer), are made
once, and refuse postings that do not match their statistics."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.core.index.bm25 import Bm25Scorer, Bm25Tables
from rag_pipeline.core.index.builders import bm25_stats_tables
from rag_pipeline.core.index.mapped import (
    BATCH_ROWS,
    ContentRows,
    StringColumn,
    cache_path,
    mapped_bm25,
    mapped_columns,
    mapped_table,
    mapped_vectors,
)
from rag_pipeline.core.storage.table_names import BM25_POSTINGS, BM25_TABLES, BM25_TERMS
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline.core.text.analyzers import Analyzer

IDS = ["c0", "c1", "c2", "c3"]
TEXTS = ["The cat sat on the mat.", "The dog sat.", "Cats and dogs play.", "A cat, a dog: both sat."]
QUESTIONS = ["cat sat", "dogs playing", "the mat the mat", "nothing here"]


def _bm25_files(warehouse: Warehouse, tables: dict[str, pa.Table]) -> dict[str, str]:
    return {name: warehouse.write(name, tables[name], {"chunker": "header"}).file for name in BM25_TABLES}


def test_vectors_are_mapped_in_the_asked_row_order(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    matrix = np.random.default_rng(0).normal(size=(BATCH_ROWS + 5, 3)).astype(np.float32)
    file = warehouse.write("embeddings", pa.table({"vector": pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.ravel()), 3)})).file
    same = mapped_vectors(warehouse, file)
    # A read-only view of the file's map (advised random access), not a copy.
    assert isinstance(same.base, mmap.mmap) and not same.flags.writeable and np.array_equal(same, matrix)
    order = np.arange(len(matrix))[::-1].copy()
    # Rows span two streamed batches, so the scatter across batches is exercised.
    assert np.array_equal(mapped_vectors(warehouse, file, order), matrix[order])
    with pytest.raises(ValueError, match=r"^2 rows asked of .* which holds 65541$"):
        mapped_vectors(warehouse, file, np.array([0, 1]))


def test_a_copy_is_made_once(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    file = warehouse.write("chunks", pa.table({"chunk_id": IDS, "text": TEXTS})).file
    first = mapped_table(warehouse, file, ["text"])
    copies = sorted(p for p in (tmp_path / "map_cache").iterdir() if not p.name.startswith("."))
    assert sorted(p.name for p in (tmp_path / "map_cache").iterdir() if p.name.startswith(".")) \
        == [f".{copies[0].name}.digest"]  # its size and digest, recorded when it was made
    stamp = copies[0].stat().st_mtime_ns
    again = mapped_table(warehouse, file, ["text"])
    assert first.column("text").to_pylist() == again.column("text").to_pylist() == TEXTS
    assert len(copies) == 1 and copies[0].name.startswith(cache_path(warehouse, file, "").name)
    assert copies[0].suffix == ".arrow"
    assert copies[0].stat().st_mtime_ns == stamp


def test_string_column_reads_rows_one_at_a_time():
    column = StringColumn(pa.chunked_array([["a", "b"], ["c"]]))
    assert (len(column), column[0], column[2], column[-1], column[1:]) == (3, "a", "c", "c", ["b", "c"])
    assert list(column) == ["a", "b", "c"] and column == ["a", "b", "c"] and column != ["a", "b"]


def test_content_rows_by_hand():
    rows = ContentRows.of(["h1", "h2", "h1", "h3", "h1"])
    assert [rows.rows_of_row(r) for r in range(5)] == [(0, 2, 4), (1,), (0, 2, 4), (3,), (0, 2, 4)]
    assert (rows["h1"], rows["h3"], len(rows), sorted(rows)) == ((0, 2, 4), (3,), 3, ["h1", "h2", "h3"])
    groups = rows.group_of_row[[0, 1, 3]]
    assert rows.shared(groups).tolist() == [True, False, False]
    with pytest.raises(KeyError):
        rows["h9"]


@pytest.mark.parametrize("analyzer", list(Analyzer))
def test_mapped_scorer_equals_the_in_memory_one(tmp_path: Path, analyzer: Analyzer):
    warehouse = Warehouse(tmp_path)
    chunks = pa.table({"chunk_id": IDS, "text": TEXTS})
    tables = bm25_stats_tables(chunks)
    mapped = mapped_bm25(warehouse, _bm25_files(warehouse, tables), StringColumn(chunks.column("chunk_id")),
                         "header")[analyzer]
    own = [t.filter(pa.compute.equal(t.column("analyzer"), analyzer.value)).drop_columns(["analyzer"])
           for t in (tables[name] for name in BM25_TABLES)]
    memory = Bm25Scorer.from_tables(Bm25Tables(*own), analyzer)
    assert isinstance(mapped.data, np.memmap)
    assert mapped.term_index == memory.term_index
    for question in QUESTIONS:
        assert mapped.scores(question).tolist() == memory.scores(question).tolist()
    assert (mapped.matrix != memory.matrix).nnz == 0


def test_postings_beyond_their_terms_df_are_refused(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    chunks = pa.table({"chunk_id": IDS, "text": TEXTS})
    tables = bm25_stats_tables(chunks)
    # Planted flaw (trips the df check): every term's df is one less than its postings.
    terms = tables[BM25_TERMS]
    tables[BM25_TERMS] = terms.set_column(terms.schema.get_field_index("df"), "df",
                                          pa.compute.subtract(terms.column("df"), 1))
    with pytest.raises(IndexNotBuiltError, match=r"^BM25 postings outnumber their terms' df: "):
        mapped_bm25(warehouse, _bm25_files(warehouse, tables), StringColumn(chunks.column("chunk_id")),
                    "header")
    assert not [p for p in (tmp_path / "map_cache").iterdir() if p.name.endswith(".npy")]


def test_a_posting_of_a_chunk_the_partition_lacks_is_refused(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    chunks = pa.table({"chunk_id": IDS, "text": TEXTS})
    tables = bm25_stats_tables(chunks)
    postings = tables[BM25_POSTINGS]
    # Planted flaw (trips the unknown-chunk check): one posting names a chunk that is not there.
    ids = postings.column("chunk_id").to_pylist()
    tables[BM25_POSTINGS] = postings.set_column(0, "chunk_id", pa.array(["c9"] + ids[1:]))
    with pytest.raises(IndexNotBuiltError, match=r"^1 BM25 postings name a chunk missing from the "):
        mapped_bm25(warehouse, _bm25_files(warehouse, tables), StringColumn(chunks.column("chunk_id")),
                    "header")


def test_statistics_of_other_chunks_are_refused(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    chunks = pa.table({"chunk_id": IDS, "text": TEXTS})
    files = _bm25_files(warehouse, bm25_stats_tables(chunks))
    # Planted flaw (trips the chunk-order check): the partition's rows are in another order.
    with pytest.raises(IndexNotBuiltError, match=r"^BM25 statistics of header are out of date with its "):
        mapped_bm25(warehouse, files, StringColumn(pa.array(IDS[::-1])), "header")


def test_other_statistics_over_the_same_postings_get_their_own_copy(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    chunks = pa.table({"chunk_id": IDS, "text": TEXTS})
    tables = bm25_stats_tables(chunks)
    ids = StringColumn(chunks.column("chunk_id"))
    before = mapped_bm25(warehouse, _bm25_files(warehouse, tables), ids, "header")[Analyzer.PLAIN]
    # The same postings file with other k1 (a params file of its own): the cached weights of the
    # first k1 must not be served.
    params = tables["bm25_params"]
    tables["bm25_params"] = params.set_column(params.schema.get_field_index("k1"), "k1",
                                              pa.array([2.0] * params.num_rows))
    after = mapped_bm25(warehouse, _bm25_files(warehouse, tables), ids, "header")[Analyzer.PLAIN]
    assert after.k1 == 2.0 and after.scores("cat").tolist() != before.scores("cat").tolist()


def test_a_mapped_column_of_several_batches_stays_mapped(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    texts = [f"text {i}" for i in range(BATCH_ROWS + 3)]
    file = warehouse.write("chunks", pa.table({"text": texts})).file
    column = StringColumn(mapped_table(warehouse, file, ["text"]).column("text"))
    # Two streamed batches, two chunks: combining them would copy the column into the heap.
    assert column.arrow().num_chunks == 2
    assert (column[BATCH_ROWS - 1], column[BATCH_ROWS], column[-1]) == (
        texts[BATCH_ROWS - 1], texts[BATCH_ROWS], texts[-1])
    assert list(column) == texts
    assert ContentRows(column).rows_of_row(BATCH_ROWS) == (BATCH_ROWS,)


def test_mapped_columns_strings_read_by_file(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    file = warehouse.write("chunks", pa.table({"chunk_id": ["c0", "c1"], "n": [1, 2]})).file
    mapped = mapped_columns(warehouse, file, ["chunk_id", "n"])
    assert mapped.strings("chunk_id")[1] == "c1" and mapped.strings("chunk_id")._file is mapped.file
    with pytest.raises(TypeError, match="must be of a string type, not int64"):
        mapped.strings("n")


def test_a_truncated_copy_is_named_and_made_again_before_it_is_mapped(tmp_path: Path):
    from rag_pipeline.core.index.mapped import damaged_copies

    warehouse = Warehouse(tmp_path)
    file = warehouse.write("chunks", pa.table({"chunk_id": IDS, "text": TEXTS})).file
    mapped_table(warehouse, file, ["text"])
    copy, = (p for p in (tmp_path / "map_cache").iterdir() if not p.name.startswith("."))
    size = copy.stat().st_size
    # Planted: the copy cut to half (a serve mapping it died with SIGBUS, and a fresh load
    # failed with "ValueError: EOF" naming no file).
    with copy.open("r+b") as handle:
        handle.truncate(size // 2)
    assert damaged_copies(warehouse, {file}) == [
        f"the map cache copy {copy} holds {size // 2} bytes, {size} when it was made"]
    assert mapped_table(warehouse, file, ["text"]).column("text").to_pylist() == TEXTS
    assert copy.stat().st_size == size and damaged_copies(warehouse, {file}) == []
    # Same size, other bytes: the digest tells.
    raw = bytearray(copy.read_bytes())
    raw[-9] ^= 0xFF
    copy.write_bytes(bytes(raw))
    assert damaged_copies(warehouse, {file}) == [
        f"the map cache copy {copy} differs from the copy that was made (its digest)"]
    assert mapped_table(warehouse, file, ["text"]).column("text").to_pylist() == TEXTS
    assert damaged_copies(warehouse, {file}) == []


def test_a_data_folder_that_cannot_be_written_maps_copies_made_elsewhere_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    from rag_pipeline.core.index import mapped

    warehouse = Warehouse(tmp_path / "data")
    file = warehouse.write("chunks", pa.table({"chunk_id": IDS, "text": TEXTS})).file
    monkeypatch.setattr(mapped.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    # Planted: a data folder mounted read-only (as root, a mode would not stop the writes, so
    # the check of the folder is what is planted); `ask` failed when the copies were not made.
    monkeypatch.setattr(mapped, "_writable", lambda folder: False)
    with caplog.at_level("WARNING", logger=mapped.__name__):
        assert mapped_table(warehouse, file, ["text"]).column("text").to_pylist() == TEXTS
    elsewhere, = (tmp_path / "tmp").iterdir()
    assert caplog.messages == [f"the data folder {tmp_path / 'data'} cannot be written: its map "
                               f"cache is made in {elsewhere} instead"]
    assert not (tmp_path / "data" / "map_cache").exists()
    assert len([p for p in elsewhere.iterdir() if p.suffix == ".arrow"]) == 1
