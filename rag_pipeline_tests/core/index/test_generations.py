"""Tests for ``rag_pipeline.core.index.generations``: one atomic publish per partition, readers
that hold a generation, and garbage collection that keeps what readers may still load."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from rag_pipeline.core.index import InconsistentBuildError
from rag_pipeline.core.index.generations import (
    CURRENT,
    Generation,
    collect_garbage,
    current_generation,
    current_generations,
    generation_age_seconds,
    generation_dir,
    publish,
)
from rag_pipeline.core.index.mapped import MAP_CACHE_DIR
from rag_pipeline.core.storage.table_names import BM25_TERMS, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.core.generation_fixtures import write_partition

MODEL = "m@0000abcd"


def test_publish_makes_one_current_generation_naming_every_file(tmp_path):
    warehouse = Warehouse(tmp_path)
    versions = write_partition(warehouse, "header", MODEL, 3)
    assert current_generation(warehouse, "header", MODEL) is None
    generation, is_new = publish(warehouse, "header", MODEL, versions)
    assert is_new
    assert generation.files == {t: v.file for t, v in versions.items()}
    assert generation.rows == {DOCUMENTS: 1, CHUNKS: 3, EMBEDDINGS: 3, "bm25_terms": 3,
                               "bm25_chunks": 3, "bm25_postings": 3, "bm25_params": 3}
    assert current_generation(warehouse, "header", MODEL) == generation
    assert current_generations(warehouse) == [generation]
    folder = tmp_path / "warehouse" / generation_dir("header", MODEL)
    assert sorted(p.name for p in folder.iterdir()) == sorted([CURRENT, f"{generation.id}.json"])


def test_publishing_the_same_files_again_changes_nothing(tmp_path):
    warehouse = Warehouse(tmp_path)
    versions = write_partition(warehouse, "header", MODEL, 3)
    first, _ = publish(warehouse, "header", MODEL, versions)
    again, is_new = publish(warehouse, "header", MODEL, versions)
    assert (again, is_new) == (first, False)


def test_a_new_corpus_state_is_a_new_generation(tmp_path):
    warehouse = Warehouse(tmp_path)
    first, _ = publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    second, is_new = publish(warehouse, "header", MODEL,
                             write_partition(warehouse, "header", MODEL, 4, tag="b"))
    assert is_new and second.id != first.id and second.rows[CHUNKS] == 4
    assert current_generation(warehouse, "header", MODEL) == second


def test_a_pointer_not_written_undoes_what_showed_the_generation_first(tmp_path, monkeypatch):
    warehouse = Warehouse(tmp_path)
    served, _ = publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 3))
    put_json = Warehouse.put_json

    def no_pointer(self, relative, data):
        if relative.endswith(CURRENT):
            raise OSError(28, "No space left on device")
        put_json(self, relative, data)

    monkeypatch.setattr(Warehouse, "put_json", no_pointer)
    shown, undone = [], []
    with pytest.raises(OSError) as raised:
        publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 4, tag="b"),
                before_pointer=lambda g: shown.append(g.id), undo_before_pointer=lambda: undone.append(1))
    assert (len(shown), undone, getattr(raised.value, "__notes__", None)) == (1, [1], None)

    def undo_fails() -> None:
        raise RuntimeError("disk still full")

    with pytest.raises(OSError) as raised:
        publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 5, tag="c"),
                before_pointer=shown.append, undo_before_pointer=undo_fails)
    assert raised.value.__notes__ == [f"what showed generation {shown[1].id} first could not be put "
                                      "back: RuntimeError: disk still full"]
    assert current_generation(warehouse, "header", MODEL) == served
    folder = tmp_path / "warehouse" / generation_dir("header", MODEL)
    assert sorted(p.name for p in folder.iterdir()) == sorted([CURRENT, f"{served.id}.json"])


def test_tables_built_from_other_chunks_are_refused(tmp_path):
    warehouse = Warehouse(tmp_path)
    old = write_partition(warehouse, "header", MODEL, 3)
    new = write_partition(warehouse, "header", MODEL, 4, tag="b")
    # Planted flaw: BM25 statistics of the old chunks offered with the new chunks. Publishing
    # them together would mix two corpus states in one generation.
    mixed = {**new, BM25_TERMS: old[BM25_TERMS]}
    with pytest.raises(InconsistentBuildError, match=r"bm25_terms was built from chunks "
                                                     r"chunks/chunker=header/part-"):
        publish(warehouse, "header", MODEL, mixed)
    # Planted flaw: chunks that were cut from another documents file.
    with pytest.raises(InconsistentBuildError, match="chunks was built from documents"):
        publish(warehouse, "header", MODEL, {**new, DOCUMENTS: old[DOCUMENTS]})
    with pytest.raises(InconsistentBuildError, match=r"cannot publish without \['embeddings'\]"):
        publish(warehouse, "header", MODEL, {k: v for k, v in new.items() if k != EMBEDDINGS})
    assert current_generation(warehouse, "header", MODEL) is None


def _three_generations(warehouse: Warehouse) -> list[Generation]:
    """Generations a, b and c of header x MODEL (2, 3 and 4 chunks), published in that order."""
    generations = []
    for n, tag in ((2, "a"), (3, "b"), (4, "c")):
        generations.append(publish(warehouse, "header", MODEL,
                                   write_partition(warehouse, "header", MODEL, n, tag=tag))[0])
        time.sleep(0.002)
    return generations


def _age(root: Path) -> None:
    """Every file below ``root`` last modified an hour ago (past garbage collection's grace)."""
    past = time.time() - 3600
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))


def test_garbage_collection_keeps_the_current_and_previous_generations(tmp_path):
    warehouse = Warehouse(tmp_path)
    root = tmp_path / "warehouse"
    files = [g.files for g in _three_generations(warehouse)]
    stray = root / "chunks" / "chunker=header" / ".part-dead.parquet.123.tmp"
    stray.write_bytes(b"half")
    _age(root)
    stats = collect_garbage(warehouse, keep=2, grace_seconds=600)
    # Generation a: its documents, chunks, 4 BM25 and embeddings files go (7), and its
    # manifest; the killed writer's temp file goes too.
    assert (stats.files_deleted, stats.manifests_deleted) == (8, 1)
    assert not stray.exists()
    for table, file in files[0].items():
        assert not (root / file).exists(), table
    for kept in files[1:]:
        for file in kept.values():
            assert (root / file).is_file()


def test_garbage_collection_spares_young_files(tmp_path):
    warehouse = Warehouse(tmp_path)
    write_partition(warehouse, "header", MODEL, 2, tag="a")
    write_partition(warehouse, "header", MODEL, 3, tag="b")
    # The first partition's files are no longer pointed to, but were written just now: a
    # writer may be between its file and its pointer, so nothing young is deleted.
    assert collect_garbage(warehouse, grace_seconds=600).files_deleted == 0
    assert collect_garbage(warehouse, grace_seconds=0).files_deleted == 7


def test_age_of_a_generation():
    assert generation_age_seconds("2026-11-30T10:00:00.000000Z",
                                  now=1796032800.0 + 90) == pytest.approx(90.0)


def test_a_generation_is_hashable_for_the_loader_cache(tmp_path):
    warehouse = Warehouse(tmp_path)
    generation, _ = publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 2))
    assert hash(generation) == hash(replace(generation))


def test_garbage_collection_deletes_the_local_copies_of_collected_files(tmp_path):
    warehouse = Warehouse(tmp_path)
    generations = _three_generations(warehouse)
    maps = tmp_path / MAP_CACHE_DIR
    maps.mkdir()
    # A copy of every chunks file (as a load makes them), a killed copier's temporary of the
    # oldest one, and an object-store graph copy no table names.
    copies = {g.id: maps / f"{g.files[CHUNKS].replace('/', '+')}.70886885a32b.arrow" for g in generations}
    for path in copies.values():
        path.write_bytes(b"copy")
    orphan_tmp = maps / f".{copies[generations[0].id].name}.4242.tmp"
    orphan_tmp.write_bytes(b"half")
    (tmp_path / "ann_cache").mkdir()
    graph = tmp_path / "ann_cache" / "part-00000000000000aa.faiss"
    graph.write_bytes(b"index")
    _age(tmp_path)
    stats = collect_garbage(warehouse, keep=2, grace_seconds=600)
    # The oldest generation's copy and temporary and the unnamed graph go; the kept ones stay.
    assert (stats.copies_deleted, stats.copy_bytes_deleted) == (3, 4 + 4 + 5)
    assert [path.exists() for path in copies.values()] == [False, True, True]
    assert not orphan_tmp.exists() and not graph.exists()


def test_a_manifest_a_killed_writer_left_never_robs_the_generation_served_before(tmp_path):
    """Found by an operator's trial: ``kill -9`` between a generation's manifest and its
    pointer left the manifest; the next publication kept the last two manifests by name, the
    orphan one of them, and deleted the files of the generation served until then while a
    ``serve`` still held it."""
    warehouse = Warehouse(tmp_path)
    root = tmp_path / "warehouse"
    a, b, c = _three_generations(warehouse)
    folder = root / generation_dir("header", MODEL)
    # The pointer names b: c was a writer's that was killed before its pointer moved.
    (folder / CURRENT).write_text((folder / f"{b.id}.json").read_text())
    _age(root)
    stats = collect_garbage(warehouse, keep=2, grace_seconds=600)
    assert sorted(p.name for p in folder.iterdir()) == sorted([CURRENT, f"{a.id}.json", f"{b.id}.json"])
    assert stats.manifests_deleted == 1
    for generation in (a, b):
        for file in generation.files.values():
            assert (root / file).is_file()
    # Within the grace, a newer manifest is a writer's between its manifest and its pointer:
    # it and its files are kept.
    d = publish(warehouse, "header", MODEL, write_partition(warehouse, "header", MODEL, 5, tag="d"))[0]
    (folder / CURRENT).write_text((folder / f"{b.id}.json").read_text())
    collect_garbage(warehouse, keep=2, grace_seconds=600)
    assert (folder / f"{d.id}.json").is_file()
    assert all((root / file).is_file() for file in d.files.values())
