"""End to end through Dagster: materialise into a temp folder, query DuckDB, run again."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import pytest

from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import ModelMismatchError
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.retrieval.retriever import embed_question, retrieve
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB
from rag_pipeline_tests.index_runs import run_index

pytestmark = pytest.mark.slow


def _query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _check_results(instance: dg.DagsterInstance) -> dict[tuple[str, str], set[bool]]:
    out: dict[tuple[str, str], set[bool]] = {}
    for run in instance.get_runs():
        for event in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
            data = event.dagster_event.event_specific_data
            out.setdefault((data.asset_key.to_user_string(), data.check_name), set()).add(data.passed)
    return out


def _tiny_eval_sets(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "gold.jsonl").write_text(
        '{"id": "t1", "needle": "Every network call gives up after seventeen seconds", '
        '"question": "How long does a network call wait before giving up?", '
        '"ticket": "my download just stops after a while, what is the limit"}\n'
        '{"id": "t2", "needle": "Frobnicator", "question": "What is it called?", '
        '"ticket": "name?"}\n', encoding="utf-8")
    (folder / "ood.jsonl").write_text(
        '{"id": "o1", "query": "what is the capital of france", "kind": "off"}\n',
        encoding="utf-8")
    return folder


def test_index_builds_queries_and_rebuilds_nothing(tmp_path: Path, tiny_corpus: Path, minilm):
    data = tmp_path / "data"
    defs = build_definitions(data_dir=data, corpus_dir=tiny_corpus, models=[minilm],
                             eval_dir=_tiny_eval_sets(tmp_path / "eval"))
    instance = dg.DagsterInstance.ephemeral()
    run_index(defs, instance, echo=lambda _: None)
    db = data / "rag.duckdb"

    assert _query(db, "select document_id, status from documents order by 1") == [
        ("broken.md", "failed"), ("guide/config.md", "ok"), ("guide/install.md", "ok"),
        ("notes.txt", "ok")]
    assert _query(db, "select error from documents where status = 'failed'")[0][0].startswith(
        "not UTF-8: byte 0xff at offset 10 (invalid start byte); Markdown files")
    # install.md: 1 pre-heading paragraph + 1 upgrading paragraph; config.md: 1 + 1; notes: 1
    # chunk holding both short paragraphs (they fit in 512 chars together).
    assert _query(db, "select chunker, count(*) from chunks group by 1 order by 1") == [
        ("blind", 3), ("blind_overlap", 3), ("boundaries", 5), ("boundaries_overlap", 5),
        ("header", 5), ("header_overlap", 5)]
    assert _query(db, "select count(*) from embeddings") == [(26,)]
    assert _query(db, "select distinct model from embeddings") == [(minilm.key,)]
    header_rows = _query(db, "select text, content from chunks where chunker = 'header' "
                             "and document_id = 'guide/config.md' order by \"from\"")
    assert header_rows[1] == (
        "[Configuring Frobnicator > Timeouts]\nEvery network call gives up after seventeen "
        "seconds unless the timeout key says otherwise.",
        "Every network call gives up after seventeen seconds unless the timeout key says "
        "otherwise.")
    # Offsets slice exactly, in SQL too (DuckDB substring is 1-based, counted in characters).
    assert _query(db, """
        select count(*) from chunks c join documents d using (document_id)
        where substring(d.canonical_text, c."from" + 1, c."to" - c."from") <> c.content""") == [(0,)]
    # The evaluation ran as the last stage: t2's needle occurs in several places, so it is a
    # gold-set error (never scored); t1 yields two queries, and 5 chunks mean R@20 is 1.0.
    assert _query(db, "select gold_id, reason from eval_gold_errors") == [
        ("t2", "needle found 3 times in the corpus, not once")]
    # 21 runs, each over all queries and per style (one query each).
    assert _query(db, "select count(*), min(queries), min(\"recall@20\"), max(destroyed) "
                      "from eval_summary") == [(63, 1, 1.0, 0)]
    assert _query(db, "select style, count(*), max(queries) from eval_summary group by all "
                      "order by all") == [("all", 21, 2), ("question", 21, 1), ("ticket", 21, 1)]
    # One gold line is one fold: the gate cannot be cross-validated, and says so by no rows.
    assert _query(db, "select count(*) from eval_gate_cv") == [(0,)]
    assert _query(db, "select count(*) from eval_sweep") == [(13,)]
    # One asset per table: the DuckDB tables are exactly the asset keys, except the published
    # generation's manifest (index_generation), which DuckDB shows as the two tables that say
    # what is published (generations, published_files), plus the page table the documents
    # asset writes beside its own (document_pages, source_entries, and its run's reconciliation
    # report). No [access] is declared, so the access asset wrote no table.
    assert {name for (name,) in _query(db, "select table_name from duckdb_tables()")} == {
        k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()} - {
        "index_generation", "access"} | {"generations", "published_files", "document_pages",
                                         "source_entries", "reconciliation"}
    checks = _check_results(instance)
    assert set(checks) == {("chunks", "offsets_slice_exactly"), ("chunks", "chunk_ids_unique"),
                           ("chunks", "covers_every_character"),
                           ("embeddings", "vectors_unit_length"),
                           ("embeddings", "one_model_per_partition"),
                           ("embeddings", "vectors_match_model"),
                           ("documents", "no_failed_documents")}
    # broken.md failed to extract: the documents' warning check fails (the asset shows amber);
    # every blocking check passes.
    assert {key: passed for key, passed in checks.items() if passed != {True}} == {
        ("documents", "no_failed_documents"): {False}}

    second = run_index(defs, instance, echo=lambda _: None)
    embedded = {t.partition: t.metadata["embeddings.embedded"] for t in second
                if t.job == EMBEDDINGS_JOB}
    assert embedded == {f"{c}|{minilm.key}": 0 for c in
                        ("blind", "blind_overlap", "boundaries", "boundaries_overlap", "header",
                         "header_overlap")}
    # The failed file is not retried while it is as it was when it failed.
    assert second[0].metadata["documents.reused"] == 4
    assert second[0].metadata["documents.extracted"] == 0

    (tiny_corpus / "guide" / "config.md").write_text(
        "# Configuring Frobnicator\n\nThe configuration file lives in the home folder and is "
        "written in TOML.\n\n## Timeouts\n\nEvery network call gives up after nine seconds.\n",
        encoding="utf-8")
    third = {t.partition: t.metadata for t in run_index(defs, instance, echo=lambda _: None)}
    # Only the changed paragraph is new text in the boundary strategies; the blind window that
    # holds config.md's text changes whole.
    assert third[f"header|{minilm.key}"]["embeddings.embedded"] == 1
    assert third[f"header|{minilm.key}"]["embeddings.reused"] == 4
    assert third[f"boundaries|{minilm.key}"]["embeddings.embedded"] == 1

    (tiny_corpus / "notes.txt").unlink()
    fourth = {t.partition: t.metadata for t in run_index(defs, instance, echo=lambda _: None)}
    assert fourth[f"header|{minilm.key}"]["embeddings.removed"] == 1
    assert _query(db, "select count(*) from chunks where document_id = 'notes.txt'") == [(0,)]
    assert _query(db, "select count(*) from embeddings e join chunks c using (chunker, chunk_id) "
                      "where c.document_id = 'notes.txt'") == [(0,)]
    assert _query(db, "select count(*) from embeddings where chunker = 'header'") == [(4,)]


def test_two_fingerprints_make_two_partitions_never_read_together(tmp_path: Path, tiny_corpus: Path,
                                                                  minilm, other_minilm):
    assert other_minilm.fingerprint != minilm.fingerprint
    data = tmp_path / "data"
    defs = build_definitions(data_dir=data, corpus_dir=tiny_corpus, models=[minilm, other_minilm])
    instance = dg.DagsterInstance.ephemeral()
    assert defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance).success
    assert defs.resolve_job_def(CHUNKS_JOB).execute_in_process(
        instance=instance, partition_key="header").success
    for spec in (minilm, other_minilm):
        key = dg.MultiPartitionKey({"chunker": "header", "model": spec.key})
        assert defs.resolve_job_def(EMBEDDINGS_JOB).execute_in_process(
            instance=instance, partition_key=key).success

    db = data / "rag.duckdb"
    assert _query(db, "select model, model_fingerprint, count(*) from embeddings group by all "
                      "order by all") == sorted([(minilm.key, minilm.fingerprint, 5),
                                                 (other_minilm.key, other_minilm.fingerprint, 5)])
    a = load_partition(data, "header", minilm.key)
    b = load_partition(data, "header", other_minilm.key)
    assert (a.model_fingerprint, b.model_fingerprint) == (minilm.fingerprint, other_minilm.fingerprint)
    assert a.chunk_ids == b.chunk_ids
    assert not np.allclose(a.vectors, b.vectors)

    question = embed_question(load_embedder(minilm), "how long before a network call times out")
    top = retrieve(a, question, "how long before a network call times out").hits[0].row
    assert (a.document_ids[top], a.sections[top]) == ("guide/config.md", "Timeouts")
    with pytest.raises(ModelMismatchError, match="refusing to score across vector spaces"):
        retrieve(b, question, "how long before a network call times out")
