"""``status`` reports staleness: shown on a clean index (nothing stale) and on planted flaws
(rows written by an older pipeline or extractor)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from rag_pipeline.core.index.ann import DensePath
from rag_pipeline.core.index.builders import document_records, documents_table
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.index.status import (
    PartitionStatus,
    index_status,
    reading_unserved,
    served_documents,
)
from rag_pipeline.core.ingest import DocumentRecord, DocumentStatus
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index, plant_published
from rag_pipeline_tests.fake_embedder import HashedEmbedder


@pytest.fixture
def built(tmp_path: Path, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    built = build_index(tmp_path, hashed_embedder)
    publish_query_db(Warehouse(built.data_dir))
    return built


def _counts(p: PartitionStatus) -> tuple:
    return (p.chunker, p.model, p.chunks, p.vectors, p.stale_rows, p.generation)


def _replace_column(table: pa.Table, name: str, values: list) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, pa.array(values, pa.string()))


def test_a_fresh_index_has_nothing_stale(built: BuiltIndex):
    status = index_status(Warehouse(built.data_dir))
    assert (status.documents_ok, status.documents_failed, status.stale_documents) == (4, [], [])
    assert [_counts(p) for p in status.partitions] == [
        ("header", built.index.model_key, 6, 6, 0, built.index.generation)]
    assert 0 <= status.partitions[0].age_seconds() < 600
    assert status.bm25_terms[("header", "plain")] > 0
    # Six chunks and a graph: under the crossover, so the exact scan serves.
    assert status.partitions[0].dense_path is DensePath.EXACT


def test_a_partition_from_the_crossover_on_is_served_by_its_ann_index(built: BuiltIndex):
    assert index_status(Warehouse(built.data_dir), crossover=6).partitions[0].dense_path is DensePath.ANN
    assert index_status(Warehouse(built.data_dir), crossover=7).partitions[0].dense_path is DensePath.EXACT


def test_rows_of_an_older_pipeline_or_extractor_are_stale(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    documents = warehouse.read("documents")
    ids = documents.column("document_id").to_pylist()
    assert ids == ["guide/config.md", "guide/faq.md", "guide/install.md", "notes.txt"]
    # Planted flaws (trip stale_documents): config.md extracted by an older pipeline, notes.txt
    # by an older version of its extractor.
    pipeline = documents.column("pipeline_version").to_pylist()
    pipeline[0] = "0"
    extractor = documents.column("extractor_version").to_pylist()
    extractor[3] = "0.0"
    documents = _replace_column(_replace_column(documents, "pipeline_version", pipeline),
                                "extractor_version", extractor)
    # Planted flaw (trips stale_rows): two vectors written by an older pipeline.
    partition = {"chunker": "header", "model": built.index.model_key}
    embeddings = warehouse.read("embeddings", partition)
    stamps = ["0", "0"] + embeddings.column("pipeline_version").to_pylist()[2:]
    plant_published(built, {"documents": documents, "embeddings": _replace_column(
        embeddings, "pipeline_version", stamps)})

    status = index_status(warehouse)
    assert status.stale_documents == ["guide/config.md", "notes.txt"]
    served = current_generation(warehouse, "header", built.index.model_key).id
    assert served != built.index.generation
    assert [_counts(p) for p in status.partitions] == [
        ("header", built.index.model_key, 6, 6, 2, served)]


def test_skipped_files_are_listed_apart_from_failed_ones_and_never_stale(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    records = document_records(warehouse.read("documents"))
    # A file no format reads: no format, no extractor stamp; it must not count as failed or stale.
    skipped = DocumentRecord("logo.png", "/corpus/logo.png", "logo", "", "", "", "", "",
                             DocumentStatus.SKIPPED.value, "no reader for .png files")
    plant_published(built, {"documents": documents_table([*records, skipped])})
    status = index_status(warehouse)
    assert (status.documents_ok, status.documents_failed, status.stale_documents) == (4, [], [])
    assert status.documents_skipped == [("logo.png", "no reader for .png files")]


def test_documents_read_with_part_left_out_are_listed_with_what(built: BuiltIndex, capsys):
    import dataclasses

    from rag_pipeline.cli.status import echo_left_out
    from rag_pipeline.core.index.status import documents_left_out

    warehouse = Warehouse(built.data_dir)
    records = document_records(warehouse.read("documents"))
    # Planted: notes.txt read with two of its formulas empty and a charset guessed, config.md
    # with notes that say nothing was left out.
    notes = {"notes.txt": (("rows", "4"), ("formulas_without_cached_value", "2"),
                           ("charset_guessed", "windows-1252")),
             "guide/config.md": (("rows", "2"), ("hidden_sheets", "1"))}
    plant_published(built, {"documents": documents_table(
        [dataclasses.replace(r, notes=notes.get(r.document_id, r.notes)) for r in records])})
    expected = [("notes.txt", ["2 formula cell(s) never calculated, so empty",
                               "text read as windows-1252 (its charset missing or wrong)"])]
    assert documents_left_out(warehouse) == expected
    assert index_status(warehouse).left_out == expected
    echo_left_out(expected * 3, shown=2)
    assert capsys.readouterr().out == (
        "  caveat   notes.txt: 2 formula cell(s) never calculated, so empty; text read as "
        "windows-1252 (its charset missing or wrong)\n" * 2
        + "  caveat   ... and 1 more (`rag-pipeline status` lists them all)\n")


def test_ocr_pages_under_the_confidence_floor_are_listed(built: BuiltIndex):
    from rag_pipeline.core.index.builders import DOCUMENT_PAGES_SCHEMA
    from rag_pipeline.core.storage.table_names import DOCUMENT_PAGES

    warehouse = Warehouse(built.data_dir)
    # Planted: a scanned document whose page 2 read at 41.5, under its floor (flagged).
    warehouse.write(DOCUMENT_PAGES, pa.table({
        "document_id": ["scan.pdf", "scan.pdf"], "page": [1, 2], "source": ["ocr", "ocr"],
        "ocr_confidence": [93.0, 41.5], "chars": [120, 80], "flagged": [False, True]},
        schema=DOCUMENT_PAGES_SCHEMA))
    publish_query_db(warehouse)
    assert index_status(warehouse).low_confidence_pages == [("scan.pdf", 2, 41.5)]


def test_an_index_without_a_page_table_lists_no_low_confidence_page(built: BuiltIndex):
    assert index_status(Warehouse(built.data_dir)).low_confidence_pages == []


def test_corrupted_pointers_are_reported_unhealthy_naming_the_file(built: BuiltIndex):
    from rag_pipeline.core.index.status import UnhealthyFile, unhealthy_files
    from rag_pipeline.core.storage.warehouse import CorruptFileError

    warehouse = Warehouse(built.data_dir)
    assert unhealthy_files(warehouse) == []
    model = built.index.model_key
    current = f"_generations/chunker=header/model={model}/CURRENT.json"
    latest = "chunks/chunker=header/_latest.json"
    # Planted: CURRENT.json without its "chunker" field (was KeyError: 'chunker'), and a
    # _latest.json cut short (was a JSONDecodeError naming no file).
    data = warehouse.get_json(current)
    del data["chunker"]
    warehouse.put_json(current, data)
    warehouse.put_bytes(latest, b'{"table": ')
    root = warehouse.root
    manifest = f"_generations/chunker=header/model={model}/{built.index.generation}.json"
    # Each named with what repairs it (it was named alone, and no command repaired it).
    assert unhealthy_files(warehouse) == [
        UnhealthyFile(f"_generations/chunker=header/model={model}",
                      f"{root}/{current} is not a valid record: KeyError: 'chunker'",
                      f"copy {root}/{manifest} (the newest whole generation) over "
                      f"{root}/{current}"),
        UnhealthyFile("chunks/chunker=header",
                      f"{root}/{latest} is not valid JSON (Expecting value: line 1 column 11 "
                      "(char 10))",
                      f"delete {root}/{latest} and run `rag-pipeline index`: the table is "
                      "built again (its unchanged files are reused)")]
    with pytest.raises(CorruptFileError, match=f"^{root}/{current} is not a valid record"):
        current_generation(warehouse, "header", model)
    with pytest.raises(CorruptFileError, match=f"^{root}/{latest} is not valid JSON"):
        warehouse.version("chunks", {"chunker": "header"})
    # The fixes repair: the manifest copied over CURRENT.json serves its generation again.
    Path(root, current).write_bytes(Path(root, manifest).read_bytes())
    Path(root, latest).unlink()
    assert unhealthy_files(warehouse) == []
    assert current_generation(warehouse, "header", model).id == built.index.generation


def test_a_served_table_file_missing_or_cut_short_is_unhealthy(built: BuiltIndex, tmp_path: Path):
    """Found by a new operator: a chunks file cut to 100 bytes (a damaged restore) left
    `status` healthy, exit 0, while `ask` failed on it."""
    import shutil

    from rag_pipeline.core.index.status import RESTORE_TABLE, UnhealthyFile, unhealthy_files

    data = shutil.copytree(built.data_dir, tmp_path / "copied")
    warehouse = Warehouse(data)
    generation = current_generation(warehouse, "header", built.index.model_key)
    chunks, documents = generation.files["chunks"], generation.files["documents"]
    Path(warehouse.full_path(chunks)).write_bytes(Path(warehouse.full_path(chunks)).read_bytes()[:100])
    Path(warehouse.full_path(documents)).unlink()
    folder = f"_generations/chunker=header/model={built.index.model_key}"
    assert unhealthy_files(warehouse) == [
        UnhealthyFile(folder, f"the chunks table file {warehouse.full_path(chunks)} cannot be read "
                              "(Parquet magic bytes not found in footer. Either the file is "
                              "corrupted or this is not a parquet file.)", RESTORE_TABLE),
        UnhealthyFile(folder, f"the documents table file {warehouse.full_path(documents)} is "
                              "missing", RESTORE_TABLE)]


def test_documents_newer_than_the_served_generation_are_not_called_chunkless(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    records = document_records(warehouse.read("documents"))
    # Planted: `index` killed while it published: the documents table already holds a new
    # document (its chunks are not built yet), the served generation the documents before it.
    # Every such document was reported "yields no chunk ... can never be found".
    fresh = DocumentRecord("guide/new.md", "/corpus/guide/new.md", "New", "md", "1", "1", "x",
                           "", DocumentStatus.OK.value, "")
    warehouse.write("documents", documents_table([*records, fresh]))
    publish_query_db(warehouse)
    status = index_status(warehouse)
    assert (status.documents_ok, status.without_chunks) == (5, [])


def test_a_reading_no_generation_serves_is_unserved_until_one_does(built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    assert reading_unserved(warehouse) is False
    records = document_records(warehouse.read("documents"))
    # An `index` stopped after its documents run: the documents table holds an edit no
    # generation serves.
    edited = [dataclasses.replace(records[0], canonical_text="Edited.", content_sha256="e" * 64),
              *records[1:]]
    warehouse.write("documents", documents_table(edited))
    assert reading_unserved(warehouse) is True
    # The same content read again is the served file: nothing unserved.
    warehouse.write("documents", documents_table(records))
    assert reading_unserved(warehouse) is False


def test_a_data_folder_never_indexed_has_no_unserved_reading_and_serves_no_document(
        tmp_path: Path):
    assert reading_unserved(Warehouse(tmp_path / "data")) is False
    assert served_documents(Warehouse(tmp_path / "data")) == {}


def test_the_served_documents_are_the_published_generations_not_the_last_reading(
        built: BuiltIndex):
    warehouse = Warehouse(built.data_dir)
    records = document_records(warehouse.read("documents"))
    served = served_documents(warehouse)
    assert served == {r.document_id: r.content_sha256 for r in records if r.ok}
    edited = [dataclasses.replace(records[0], canonical_text="Edited.", content_sha256="e" * 64),
              *records[1:]]
    warehouse.write("documents", documents_table(edited))  # read, not published
    assert served_documents(warehouse) == served


def test_a_file_name_that_is_not_utf8_is_failed_not_stale(built: BuiltIndex, tmp_path: Path):
    import os

    from rag_pipeline.core.ingest.corpus import extract_document

    corpus = tmp_path / "odd-corpus"
    corpus.mkdir()
    name = os.fsdecode(b"caf\xe9.md")
    (corpus / name).write_text("# Cafe\n\nText.\n", encoding="utf-8")
    # Planted: a name in Latin-1 bytes; its record names the format but no extractor, and the
    # extractor stamp compared unequal: status listed it stale on every run.
    record = extract_document(corpus / name, corpus)
    warehouse = Warehouse(built.data_dir)
    records = document_records(warehouse.read("documents"))
    plant_published(built, {"documents": documents_table([*records, record])})
    status = index_status(warehouse)
    assert status.stale_documents == []
    assert status.documents_failed == [("caf\\xe9.md", "the file name is not valid UTF-8 "
                                                       "(caf\\xe9.md): rename the file")]


def test_a_document_whose_id_another_took_is_counted_and_listed_failed(built: BuiltIndex):
    """Found by a user's trial of an S3 prefix: the object ``bundle.zip/x.md`` beside the archive
    ``bundle.zip`` holding ``x.md`` was left out (the member keeps the id), said only in the
    reconciliation: ``status`` counted 0 failed and ``index`` listed nothing not indexed."""
    from rag_pipeline.core.index.status import documents_not_indexed, row_counts
    from rag_pipeline.core.ingest.reconcile import Change, Reconciled, Reconciliation, reconciliation_table

    warehouse = Warehouse(built.data_dir)
    taken = sorted(document_records(warehouse.read("documents")), key=lambda r: r.document_id)[0]
    reason = ("another document already has this id (a member of the container of that name): "
              "not indexed")
    report = Reconciliation("s3://team/docs", "", (
        Reconciled(Change.UNCHANGED.value, taken.document_id),
        Reconciled(Change.FAILED.value, taken.document_id, detail=reason)))
    warehouse.write("reconciliation", reconciliation_table(report, "2026-12-05T10:00:00Z"))
    publish_query_db(warehouse)
    status = index_status(warehouse)
    assert (status.documents_ok, status.documents_failed) == (4, [(taken.document_id, reason)])
    assert documents_not_indexed(warehouse) == [("failed", taken.document_id, reason)]
    # Found by an operator: index's table of what was built counted one failed fewer.
    assert row_counts(warehouse)["documents"] == [("failed", 1), ("ok", 4)]


def test_an_archive_whose_member_list_is_not_chunked_is_not_called_chunkless(
        tmp_path: Path, hashed_embedder: HashedEmbedder):
    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.ingest import extract_corpus
    from rag_pipeline_tests.core.ingest.archives import zipped

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "bundle.zip").write_bytes(zipped({"one.md": "# One\n\nThe first note.\n"}))
    (corpus / "headings.md").write_text("# Only\n\n## Headings\n", encoding="utf-8")
    warehouse = Warehouse(tmp_path / "data")
    build_partition(warehouse, extract_corpus(corpus).records, ChunkingStrategy.HEADER, hashed_embedder)
    publish_query_db(warehouse)
    status = index_status(warehouse)
    assert (status.documents_ok, status.without_chunks) == (3, [("headings.md", ("header",))])


def test_chunks_over_the_models_window_are_counted_per_chunker(built: BuiltIndex, tmp_path: Path,
                                                              capsys):
    # Found by a team's multilingual e-book: 306 chunks were cut short for the model and
    # neither `index` nor `status` said so (only the run's metadata did).
    import dataclasses

    from rag_pipeline.cli.status import echo_over_the_window
    from rag_pipeline.core.index.status import over_the_window
    from rag_pipeline_tests.fake_embedder import hashed_spec

    assert over_the_window(Warehouse(built.data_dir)) == []
    # A model reading 24 word-pieces: the chunks of more are cut short for it.
    narrow = build_index(tmp_path / "narrow", HashedEmbedder(dataclasses.replace(hashed_spec(),
                                                                                 max_tokens=24)))
    warehouse = Warehouse(narrow.data_dir)
    publish_query_db(warehouse)
    chunks = warehouse.read("chunks", {"chunker": "header"}, columns=["wordpieces"])
    over = sum(n > 24 for n in chunks.column("wordpieces").to_pylist())
    assert (over, chunks.num_rows) == (5, 6)
    assert over_the_window(warehouse) == [("header", 5, 6)]
    echo_over_the_window(warehouse, 24)
    assert capsys.readouterr().out == (
        "  header: 5 of 6 chunks are longer than the model's 24 word-piece window, so only their "
        "first 24 are embedded (`select chunk_id, wordpieces from chunks where truncated`)\n")
