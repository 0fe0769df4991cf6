"""Tests for ``rag_pipeline.core.index.tables``: the one declaration of a generation's tables,
and what follows from it (the files to publish, the tables that are stale)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from rag_pipeline.core.index import (
    GENERATION_TABLES,
    InconsistentBuildError,
    Scope,
    TableFile,
    generation_table,
    latest_tables,
    stale_tables,
)
from rag_pipeline.core.index.generations import publish
from rag_pipeline.core.storage.table_names import ANN_INDEX, CHUNKS, DOCUMENTS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.core.generation_fixtures import write_partition

MODEL = "m@0000abcd"


def test_the_declaration_lists_every_table_with_its_scope_and_input():
    assert [(t.name, t.scope, t.built_from, t.optional, t.labelled)
            for t in GENERATION_TABLES] == [
        (DOCUMENTS, Scope.CORPUS, None, False, False), (CHUNKS, Scope.CHUNKER, DOCUMENTS, False, False),
        ("bm25_terms", Scope.CHUNKER, CHUNKS, False, False),
        ("bm25_chunks", Scope.CHUNKER, CHUNKS, False, False),
        ("bm25_postings", Scope.CHUNKER, CHUNKS, False, False),
        ("bm25_params", Scope.CHUNKER, CHUNKS, False, False),
        (EMBEDDINGS, Scope.CHUNKER_MODEL, CHUNKS, False, False),
        (ANN_INDEX, Scope.CHUNKER_MODEL, EMBEDDINGS, True, False),
        ("access", Scope.CHUNKER, CHUNKS, False, True)]
    assert [t.name for t in GENERATION_TABLES if t.required(None)] == [
        DOCUMENTS, CHUNKS, "bm25_terms", "bm25_chunks", "bm25_postings", "bm25_params", EMBEDDINGS]
    assert [t.name for t in GENERATION_TABLES if t.required("0123abcd")][-1] == "access"
    assert Scope.CHUNKER_MODEL.partition("header", MODEL) == {"chunker": "header", "model": MODEL}
    assert Scope.CHUNKER.partition("header", MODEL) == {"chunker": "header"}
    assert Scope.CORPUS.partition("header", MODEL) == {}
    with pytest.raises(KeyError, match="'ann' is not a generation table"):
        generation_table("ann")


def test_latest_tables_are_the_pointers_of_a_fresh_build(tmp_path):
    warehouse = Warehouse(tmp_path)
    versions = write_partition(warehouse, "header", MODEL, 3)
    assert latest_tables(warehouse, "header", MODEL) == versions
    assert stale_tables(warehouse, "header", MODEL) == []


def test_newer_documents_leave_the_chunks_documents_in_the_generation(tmp_path):
    warehouse = Warehouse(tmp_path)
    versions = write_partition(warehouse, "header", MODEL, 3)
    # A documents run after the chunks were cut: the chunks (and everything built from them)
    # are stale, and a generation published now still names the documents they were cut from.
    warehouse.write(DOCUMENTS, pa.table({"document_id": ["a.md", "b.md"], "status": ["ok", "ok"]}))
    assert stale_tables(warehouse, "header", MODEL) == [CHUNKS]
    latest = latest_tables(warehouse, "header", MODEL)
    assert latest[DOCUMENTS] == TableFile(file=versions[DOCUMENTS].file, rows=1)
    generation, _ = publish(warehouse, "header", MODEL, latest)
    assert generation.files[DOCUMENTS] == versions[DOCUMENTS].file
    assert generation.rows[DOCUMENTS] == 1


def test_a_missing_or_mixed_table_is_stale_and_cannot_be_published(tmp_path):
    warehouse = Warehouse(tmp_path)
    assert stale_tables(warehouse, "header", MODEL) == [t.name for t in GENERATION_TABLES
                                                        if t.required(None)]
    write_partition(warehouse, "header", MODEL, 3)
    # Planted flaw: new chunks and BM25 tables, the embeddings still of the old chunks.
    new = write_partition(warehouse, "header", "other@00000000", 4, tag="b")
    assert new[CHUNKS].file == warehouse.version(CHUNKS, {"chunker": "header"}).file
    assert stale_tables(warehouse, "header", MODEL) == [EMBEDDINGS]
    with pytest.raises(InconsistentBuildError, match="the tables built from chunks were built "
                                                     "from different files"):
        latest_tables(warehouse, "header", MODEL)


def _ann(warehouse: Warehouse, embeddings_file: str) -> None:
    warehouse.write(ANN_INDEX, pa.table({"graph": ["g"]}), {"chunker": "header", "model": MODEL},
                    inputs={EMBEDDINGS: embeddings_file})


def test_the_optional_ann_index_joins_only_beside_the_embeddings_it_was_built_from(tmp_path):
    warehouse = Warehouse(tmp_path)
    versions = write_partition(warehouse, "header", MODEL, 3)
    # Never built: the generation publishes without it, and nothing is stale.
    assert ANN_INDEX not in latest_tables(warehouse, "header", MODEL)
    assert stale_tables(warehouse, "header", MODEL) == []
    _ann(warehouse, versions[EMBEDDINGS].file)
    latest = latest_tables(warehouse, "header", MODEL)
    assert latest[ANN_INDEX].inputs == {EMBEDDINGS: versions[EMBEDDINGS].file}
    generation, _ = publish(warehouse, "header", MODEL, latest)
    assert ANN_INDEX in generation.files and generation.missing_tables() == []
    # Planted flaw: new embeddings, the graph still of the old ones. It is stale, left out of
    # the next generation (which serves by the exact scan), and never holds the rest back.
    warehouse.write(EMBEDDINGS, pa.table({"chunk_id": ["x"]}), {"chunker": "header", "model": MODEL},
                    inputs={CHUNKS: versions[CHUNKS].file})
    assert stale_tables(warehouse, "header", MODEL) == [ANN_INDEX]
    assert ANN_INDEX not in latest_tables(warehouse, "header", MODEL)
    offered = {**latest_tables(warehouse, "header", MODEL), ANN_INDEX: latest[ANN_INDEX]}
    with pytest.raises(InconsistentBuildError, match="ann_index was built from embeddings"):
        publish(warehouse, "header", MODEL, offered)
