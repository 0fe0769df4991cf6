"""The ``access`` table: readers per chunk in DuckDB, stale after a rule edit, re-labelled from the
stored chunks alone (the vectors' file untouched)."""

from __future__ import annotations

import duckdb
import pytest

from rag_pipeline.core.config.access import AccessPolicy, AccessRule
from rag_pipeline.core.index.access_table import stale_access, write_access_labels
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.storage.table_names import ACCESS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.core.index.test_access import POLICY
from rag_pipeline_tests.core.index_builder import BuiltIndex, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder


@pytest.fixture
def built(tmp_path, hashed_embedder: HashedEmbedder) -> BuiltIndex:
    return build_index(tmp_path, hashed_embedder)


def test_readers_per_chunk_are_queryable_and_follow_a_rule_edit(built: BuiltIndex,
                                                               hashed_embedder: HashedEmbedder):
    warehouse = Warehouse(built.data_dir)
    partition = {"chunker": "header", "model": hashed_embedder.spec.key}
    vectors = warehouse.version(EMBEDDINGS, partition).file
    assert stale_access(warehouse, POLICY) == ["header"]
    assert write_access_labels(warehouse, POLICY) == ["header"]
    assert (stale_access(warehouse, POLICY), write_access_labels(warehouse, POLICY)) == ([], [])
    publish_query_db(warehouse)
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        rows = con.execute("select document_id, readers, rules from access order by chunk_id").fetchall()
    assert sorted({(d, tuple(r)) for d, r, _ in rows}) == [
        ("guide/config.md", ("eng",)), ("guide/faq.md", ("staff",)),
        ("guide/install.md", ("eng", "staff")), ("notes.txt", ())]
    assert {rules for _, _, rules in rows} == {POLICY.digest}
    edited = AccessPolicy((AccessRule("notes.txt", ("staff",)), *POLICY.rules))
    assert stale_access(warehouse, edited) == ["header"]
    before = warehouse.version(ACCESS, {"chunker": "header"}).file
    assert write_access_labels(warehouse, edited) == ["header"]
    assert warehouse.version(ACCESS, {"chunker": "header"}).file != before
    assert warehouse.version(EMBEDDINGS, partition).file == vectors
    publish_query_db(warehouse)
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        assert con.execute("select distinct readers from access where document_id = 'notes.txt'"
                           ).fetchall() == [(["staff"],)]
