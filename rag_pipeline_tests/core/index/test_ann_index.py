"""Tests for ``rag_pipeline.core.index.ann_index``: the index file and its table, built from a
partition's embeddings in chunk order, checked against the served vectors on load, and kept or
collected with the generations that name it."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.core.index import latest_tables
from rag_pipeline.core.index.ann import AnnMismatchError
from rag_pipeline.core.index.ann_index import build_ann_index, open_ann_index, vectors_in_chunk_order
from rag_pipeline.core.index.generations import collect_garbage, current_generation, publish
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.storage.table_names import ANN_INDEX, CHUNKS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index, topic_docs
from rag_pipeline_tests.fake_embedder import HashedEmbedder


@pytest.fixture
def built(tmp_path: Path) -> BuiltIndex:
    return build_index(tmp_path, HashedEmbedder(), docs=topic_docs())


def _partition(built: BuiltIndex) -> dict[str, str]:
    return {"chunker": built.index.chunker, "model": built.index.model_key}


def test_the_table_names_its_graph_and_the_vectors(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    version = warehouse.require_version(ANN_INDEX, _partition(built))
    row = warehouse.read_file(version.file).to_pylist()[0]
    assert row["graph"].startswith(f"ann_index/chunker=header/model={built.index.model_key}/part-")
    assert row["graph"].endswith(".faiss")
    assert Path(warehouse.full_path(row["graph"])).is_file()
    # 240 rows: 6 cells (240 // 39), so the calibration scans all 6 and the shortlist is exact.
    assert (row["rows"], row["dimension"], row["nlist"], row["nprobe"]) == (240, 384, 6, 6)
    assert row["measured_recall"] == 1.0
    assert row["fingerprint"] == built.index.ann.fingerprint
    assert "centroid" not in row and "gram" not in row  # no moments: nothing would read them
    assert version.inputs == {EMBEDDINGS: warehouse.require_version(EMBEDDINGS, _partition(built)).file}


def test_the_graphs_rows_are_the_served_partitions_rows(built: BuiltIndex):
    index = built.index
    for row in (0, 17, 239):
        rows, distances = index.ann.search(index.vectors, index.vectors[row], 1)
        assert rows.tolist() == [row]
        assert distances[0] == pytest.approx(0.0, abs=1e-6)


def test_vectors_follow_the_chunk_order_not_the_table_order():
    embeddings = pa.table({"chunk_id": ["b", "a"], "vector": pa.FixedSizeListArray.from_arrays(
        pa.array([0.0, 1.0, 1.0, 0.0], pa.float32()), 2)})
    np.testing.assert_array_equal(vectors_in_chunk_order(["a", "b"], embeddings), [[1, 0], [0, 1]])
    with pytest.raises(IndexNotBuiltError, match="1 chunks have no vector"):
        vectors_in_chunk_order(["a", "c"], embeddings)


def test_a_graph_of_other_vectors_is_refused_on_load(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    file = warehouse.require_version(ANN_INDEX, _partition(built)).file
    # Planted flaw: the served vectors in another row order (same count): the fingerprint differs.
    with pytest.raises(AnnMismatchError, match="rebuild the index"):
        open_ann_index(warehouse, file, built.index.vectors[::-1])
    with pytest.raises(AnnMismatchError, match="holds 240 vectors, the partition 239"):
        open_ann_index(warehouse, file, built.index.vectors[:-1])


def test_a_generation_without_the_graph_serves_by_the_scan(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    tables = latest_tables(warehouse, "header", built.index.model_key)
    del tables[ANN_INDEX]
    generation, is_new = publish(warehouse, "header", built.index.model_key, tables)
    assert is_new and ANN_INDEX not in generation.files
    assert load_partition(built.data_dir, "header", built.index.model_key).ann is None


def test_garbage_collection_keeps_served_graphs_and_deletes_orphans(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    generation = current_generation(warehouse, "header", built.index.model_key)
    served = warehouse.read_file(generation.files[ANN_INDEX]).column("graph")[0].as_py()
    # Planted flaw: a graph no table names (a writer killed between graph and table).
    orphan = f"{ANN_INDEX}/chunker=header/model={built.index.model_key}/part-0000000000000000.faiss"
    warehouse.put_bytes(orphan, b"not a graph")
    old = time.time() - 3600
    for rel in (orphan, served):
        os.utime(warehouse.full_path(rel), (old, old))
    stats = collect_garbage(warehouse)
    assert stats.files_deleted == 1
    assert warehouse.get_file_size(orphan) is None
    assert warehouse.get_file_size(served) is not None


def test_building_needs_the_chunks_the_embeddings_name(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    embeddings = warehouse.require_version(EMBEDDINGS, _partition(built))
    # Planted flaw: a pointer (of vectors not indexed yet) that does not say which chunks they
    # were built from.
    unnamed = replace(embeddings, file=embeddings.file.replace("part-", "part-0"), inputs={})
    with pytest.raises(IndexNotBuiltError, match="do not name the chunks"):
        build_ann_index(warehouse, "header", built.index.model_key, unnamed)
    assert embeddings.inputs[CHUNKS] == warehouse.require_version(CHUNKS, {"chunker": "header"}).file


def test_a_graph_built_from_the_same_embeddings_is_reused(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    embeddings = warehouse.require_version(EMBEDDINGS, _partition(built))
    before = warehouse.require_version(ANN_INDEX, _partition(built))
    again = build_ann_index(warehouse, "header", built.index.model_key, embeddings)
    assert again.reused and again.version == before and again.rows == 240
    assert again.graph_bytes == warehouse.get_file_size(
        warehouse.read_file(before.file).column("graph")[0].as_py())


def test_an_hnsw_table_of_an_earlier_version_is_neither_served_nor_reused(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    partition = _partition(built)
    embeddings = warehouse.require_version(EMBEDDINGS, partition)
    # Planted: the table an earlier version wrote (a usearch graph: scale and connectivity, no
    # nprobe), built from these very embeddings.
    old_graph = f"{ANN_INDEX}/chunker=header/model={built.index.model_key}/part-00000000000000aa.usearch"
    warehouse.put_bytes(old_graph, b"an HNSW graph")
    old = warehouse.write(ANN_INDEX, pa.table({
        "graph": [old_graph], "rows": pa.array([240], pa.int64()), "fingerprint": ["f"],
        "scale": [254.0], "dimension": pa.array([384], pa.int32()),
        "connectivity": pa.array([16], pa.int32()), "centroid": [[0.0] * 384],
        "gram": [[0.0] * (384 * 384)], "measured_recall": [1.0]}), partition,
        inputs={EMBEDDINGS: embeddings.file})
    assert open_ann_index(warehouse, old.file, built.index.vectors) is None
    rebuilt = build_ann_index(warehouse, "header", built.index.model_key, embeddings)
    assert not rebuilt.reused and rebuilt.version.file != old.file
    assert warehouse.read_file(rebuilt.version.file).column("graph")[0].as_py().endswith(".faiss")


def test_a_damaged_graph_is_unhealthy_not_loaded_and_rebuilt_by_the_next_build(built: BuiltIndex):
    from rag_pipeline.core.index import store
    from rag_pipeline.core.index.plan import Stage, index_plan
    from rag_pipeline.core.index.status import unhealthy_files

    warehouse = Warehouse(built.data_dir)
    partition = _partition(built)
    row = warehouse.read_file(warehouse.require_version(ANN_INDEX, partition).file).to_pylist()[0]
    graph = Path(warehouse.full_path(row["graph"]))
    size = graph.stat().st_size

    def planned() -> list[tuple[Stage, str | None]]:
        return [(step.stage, step.model) for step in index_plan(
            warehouse, [built.index.chunker], [built.index.model_key], evaluate=False)]

    assert planned() == []
    # Planted: the graph file cut short. Only its size was checked, so `index` reused it, and
    # every load (even for BM25 alone) failed with AnnMismatchError while status said healthy.
    with graph.open("r+b") as handle:
        handle.truncate(size - 100)
    reason = (f"the ANN index file {graph} is damaged ({size - 100} bytes whose digest does not "
              "match its name): the exact scan serves until the next `rag-pipeline index` "
              "rebuilds it")
    assert [(f.partition, f.reason) for f in unhealthy_files(warehouse)] == [
        (f"_generations/chunker=header/model={built.index.model_key}", reason)]
    store._load.cache_clear()
    index = load_partition(built.data_dir, built.index.chunker, built.index.model_key)
    assert index.ann is None and len(index) == 240  # served: the exact scan, and BM25
    # Found by an operator's trial: status said "fix: run rag-pipeline index", and with the
    # corpus unchanged `index` ran the documents alone, so the graph stayed damaged.
    assert planned() == [(Stage.EMBEDDINGS, built.index.model_key)]
    embeddings = warehouse.require_version(EMBEDDINGS, partition)
    rebuilt = build_ann_index(warehouse, built.index.chunker, built.index.model_key, embeddings)
    assert not rebuilt.reused
    assert unhealthy_files(warehouse) == []
    store._load.cache_clear()
    assert load_partition(built.data_dir, built.index.chunker, built.index.model_key).ann is not None


def test_a_missing_graph_of_the_served_generation_is_unhealthy_and_not_needed(built: BuiltIndex):
    from rag_pipeline.core.index import store
    from rag_pipeline.core.index.status import unhealthy_files

    warehouse = Warehouse(built.data_dir)
    row = warehouse.read_file(warehouse.require_version(ANN_INDEX, _partition(built)).file
                              ).to_pylist()[0]
    graph = Path(warehouse.full_path(row["graph"]))
    # Planted: the graph file deleted; every load (BM25 alone too) failed naming it.
    graph.unlink()
    assert [f.reason for f in unhealthy_files(warehouse)] == [
        f"the ANN index file {graph} is missing: the exact scan serves until the next "
        "`rag-pipeline index` rebuilds it"]
    store._load.cache_clear()
    index = load_partition(built.data_dir, built.index.chunker, built.index.model_key)
    assert index.ann is None and len(index) == 240
    embeddings = warehouse.require_version(EMBEDDINGS, _partition(built))
    assert not build_ann_index(warehouse, built.index.chunker, built.index.model_key,
                               embeddings).reused
    assert unhealthy_files(warehouse) == [] and graph.is_file()


def test_a_damaged_table_is_unhealthy_and_rebuilt_by_the_next_build(built: BuiltIndex):
    from rag_pipeline.core.index.status import unhealthy_files

    warehouse = Warehouse(built.data_dir)
    partition = _partition(built)
    table = Path(warehouse.full_path(warehouse.require_version(ANN_INDEX, partition).file))
    # Planted: the index's one-row table cut in half. `status` failed reading it (no verdict)
    # and `index` failed reusing it, so nothing repaired it.
    raw = table.read_bytes()
    table.write_bytes(raw[:len(raw) // 2])
    [found] = unhealthy_files(warehouse)
    assert found.partition == f"_generations/chunker=header/model={built.index.model_key}"
    assert found.reason.startswith(f"the ANN index table {table} cannot be read (")
    assert found.reason.endswith("): the exact scan serves until the next `rag-pipeline index` "
                                 "rebuilds it")
    embeddings = warehouse.require_version(EMBEDDINGS, partition)
    rebuilt = build_ann_index(warehouse, built.index.chunker, built.index.model_key, embeddings)
    assert not rebuilt.reused and rebuilt.rows == 240
    assert warehouse.read_file(rebuilt.version.file).num_rows == 1


def test_a_partition_without_chunks_is_published_without_a_graph(tmp_path: Path):
    # A heading alone makes no chunk: the chunker has no rows, and its partition must still
    # publish (an emptied corpus, or one whose every document failed, serves nothing).
    empty = build_index(tmp_path, HashedEmbedder(), docs={"only-heading.md": "# Only a heading\n"})
    warehouse = Warehouse(empty.data_dir)
    partition = _partition(empty)
    version = warehouse.require_version(ANN_INDEX, partition)
    row = warehouse.read_file(version.file).to_pylist()[0]
    assert (row["graph"], row["rows"], row["fingerprint"], row["dimension"], row["nlist"],
            row["nprobe"], row["measured_recall"]) == ("", 0, "", 384, 0, 0, None)
    assert current_generation(warehouse, "header", partition["model"]).files[ANN_INDEX] == version.file
    assert empty.index.ann is None and len(empty.index.vectors) == 0
    # Built again from the same embeddings: the table is reused, and no graph is collected.
    embeddings = warehouse.require_version(EMBEDDINGS, partition)
    again = build_ann_index(warehouse, "header", partition["model"], embeddings)
    assert (again.reused, again.rows, again.graph_bytes, again.version.file) == (True, 0, 0, version.file)
    # Typed columns, not Arrow's null type, so the served partition's strings can be mapped.
    for table in (CHUNKS, EMBEDDINGS, "bm25_chunks", "bm25_terms", "bm25_postings"):
        scope = partition if table == EMBEDDINGS else {"chunker": "header"}
        schema = warehouse.read_file(warehouse.require_version(table, scope).file).schema
        assert warehouse.read_file(warehouse.require_version(table, scope).file).num_rows == 0
        assert {schema.field(name).type for name in schema.names
                if name in ("chunk_id", "text", "term", "model_name")} <= {pa.string()}, table
