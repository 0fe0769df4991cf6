"""The ``access`` table as a generation table: readers per chunk published with the generation and
queryable in DuckDB; a rule edit makes the partition stale and a new generation re-labels it with
the same chunks and vector files; without ``[access]`` nothing about it exists or is stale."""

from __future__ import annotations

import duckdb
import pytest

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.access import AccessPolicy, AccessRule
from rag_pipeline.core.index.access import AccessLabels
from rag_pipeline.core.index.build import build_access, publish_partition
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.partition_build import build_partition
from rag_pipeline.core.index.plan import Stage, index_plan
from rag_pipeline.core.index.tables import (
    RULES_INPUT,
    InconsistentBuildError,
    check_consistent,
    latest_tables,
    stale_tables,
)
from rag_pipeline.core.ingest import extract_corpus
from rag_pipeline.core.storage.table_names import ACCESS, CHUNKS, EMBEDDINGS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline_tests.conftest import write_corpus
from rag_pipeline_tests.core.index.test_access import POLICY
from rag_pipeline_tests.core.index_builder import DUPLICATED_DOCS, build_index
from rag_pipeline_tests.fake_embedder import HashedEmbedder

EDITED = AccessPolicy((AccessRule("notes.txt", ("staff",)), *POLICY.rules))
"""POLICY with a rule in front giving notes.txt (readable by nobody under POLICY) to staff."""


def _access_rows(warehouse: Warehouse) -> list[tuple[str, str, tuple[str, ...], str]]:
    with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
        rows = con.execute("select chunk_id, document_id, readers, rules from access "
                           "order by chunk_id").fetchall()
    return [(c, d, tuple(r), rules) for c, d, r, rules in rows]


@pytest.fixture
def labelled(tmp_path, hashed_embedder: HashedEmbedder) -> Warehouse:
    """The tiny corpus built and published under POLICY."""
    corpus = write_corpus(tmp_path / "corpus", dict(DUPLICATED_DOCS))
    warehouse = Warehouse(tmp_path / "data")
    build_partition(warehouse, extract_corpus(corpus).records, ChunkingStrategy.HEADER,
                    hashed_embedder, access=POLICY)
    return warehouse


def test_readers_per_chunk_are_part_of_the_generation_and_agree_with_the_served_labels(
        labelled: Warehouse, hashed_embedder: HashedEmbedder):
    model = hashed_embedder.spec.key
    generation = current_generation(labelled, "header", model)
    access = labelled.version(ACCESS, {"chunker": "header"})
    assert generation.files[ACCESS] == access.file
    assert generation.rows[ACCESS] == 6
    assert access.inputs == {CHUNKS: generation.files[CHUNKS], RULES_INPUT: POLICY.digest}
    assert stale_tables(labelled, "header", model, POLICY.digest) == []
    assert index_plan(labelled, ["header"], [model], evaluate=False, rules=POLICY.digest) == ()
    rows = _access_rows(labelled)
    assert sorted({(d, r) for _, d, r, _ in rows}) == [
        ("guide/config.md", ("eng",)), ("guide/faq.md", ("staff",)),
        ("guide/install.md", ("eng", "staff")), ("notes.txt", ())]
    assert {rules for *_, rules in rows} == {POLICY.digest}
    served = AccessLabels.of([d for _, d, _, _ in rows], POLICY)
    assert [tuple(sorted(served.readers_of_row(i))) for i in range(len(rows))] == \
        [r for _, _, r, _ in rows]


def test_a_rule_edit_is_stale_and_relabels_in_a_new_generation_with_the_same_vectors(
        labelled: Warehouse, hashed_embedder: HashedEmbedder):
    model = hashed_embedder.spec.key
    before = current_generation(labelled, "header", model)
    vectors = (labelled.data_dir / "warehouse" / before.files[EMBEDDINGS]).read_bytes()
    assert stale_tables(labelled, "header", model, EDITED.digest) == [ACCESS]
    (step,) = index_plan(labelled, ["header"], [model], evaluate=False, rules=EDITED.digest)
    assert (step.stage, step.chunker, dict(step.inputs)[RULES_INPUT]) == \
        (Stage.CHUNKS, "header", EDITED.digest)
    with pytest.raises(InconsistentBuildError, match="labels the \\[access\\] rules"):
        check_consistent(latest_tables(labelled, "header", model, EDITED.digest), EDITED.digest)
    build_access(labelled, "header", EDITED)
    assert stale_tables(labelled, "header", model, EDITED.digest) == []
    (step,) = index_plan(labelled, ["header"], [model], evaluate=False, rules=EDITED.digest)
    assert step.stage == Stage.EMBEDDINGS
    published = publish_partition(labelled, "header", model, rules=EDITED.digest)
    after = published.generation
    assert published.is_new and after.id != before.id
    assert {t: after.files[t] == before.files[t] for t in after.files} == {
        t: t != ACCESS for t in after.files}
    assert (labelled.data_dir / "warehouse" / after.files[EMBEDDINGS]).read_bytes() == vectors
    assert index_plan(labelled, ["header"], [model], evaluate=False, rules=EDITED.digest) == ()
    assert {(d, r) for _, d, r, _ in _access_rows(labelled) if d == "notes.txt"} == \
        {("notes.txt", ("staff",))}


def test_without_access_there_is_no_access_table_and_nothing_is_stale(
        tmp_path, hashed_embedder: HashedEmbedder):
    built = build_index(tmp_path, hashed_embedder)
    warehouse = Warehouse(built.data_dir)
    model = hashed_embedder.spec.key
    generation = current_generation(warehouse, "header", model)
    assert ACCESS not in generation.files and warehouse.version(ACCESS, {"chunker": "header"}) is None
    assert stale_tables(warehouse, "header", model) == []
    assert index_plan(warehouse, ["header"], [model], evaluate=False) == ()
    assert generation.missing_tables() == []
    # [access] declared later: the partition is stale until it is labelled ...
    assert stale_tables(warehouse, "header", model, POLICY.digest) == [ACCESS]
    build_access(warehouse, "header", POLICY)
    # ... and once [access] is removed again, the labels written meanwhile make nothing stale
    # and stay out of the generation.
    assert stale_tables(warehouse, "header", model) == []
    assert index_plan(warehouse, ["header"], [model], evaluate=False) == ()
    assert ACCESS not in latest_tables(warehouse, "header", model)
