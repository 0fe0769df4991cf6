"""The ``documents`` asset over a corpus source, through Dagster: a corpus that vanished,
emptied, shrank or disappeared during the run fails the run in one line and writes nothing (the
previous tables stay the latest); ``--allow-shrink`` accepts it; each run's reconciliation is a
DuckDB table and metadata; a git repository is read at its ref's commit, recorded with the run,
and the corpus watch follows that commit."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from rag_pipeline.core.ingest.sources.local import LocalSource
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import DOCUMENTS_JOB
from rag_pipeline.orchestration.corpus_watch import CORPUS_WATCH, FINGERPRINT_TAG
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.core.ingest.sources.conftest import Repo
from rag_pipeline_tests.fake_embedder import hashed_spec


def _query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _run(defs: dg.Definitions, instance: dg.DagsterInstance,
         run_config: dict | None = None) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(
        instance=instance, run_config=run_config, raise_on_error=False)


def _error(result: dg.ExecuteInProcessResult) -> str:
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    error = failure.step_failure_data.error
    while error.cls_name and error.cls_name.startswith("Dagster") and error.cause:
        error = error.cause
    return error.message.strip()


def _metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    (materialization,) = result.asset_materializations_for_node("documents")
    return {key: getattr(value, "value", value) for key, value in materialization.metadata.items()}


@pytest.fixture
def project(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus", {**TINY_DOCS, "extra/a.md": "# A\n\nOne.\n",
                                                "extra/b.md": "# B\n\nTwo.\n"})
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=corpus, models=[hashed_spec()])
    with dg.DagsterInstance.ephemeral(tempdir=str(tmp_path / "home")) as instance:
        yield defs, instance, corpus, tmp_path / "data"


def test_a_corpus_that_vanished_emptied_or_shrank_is_refused_until_allowed(project):
    defs, instance, corpus, data_dir = project
    first = _run(defs, instance)
    assert first.success
    db = data_dir / "rag.duckdb"
    assert _query(db, "select change, count(*) from reconciliation group by all order by all") == [
        ("added", 5)]
    warehouse = Warehouse(data_dir)
    kept = warehouse.version(DOCUMENTS).file

    moved = corpus.with_name("moved-away")
    corpus.rename(moved)
    gone = _run(defs, instance)
    assert not gone.success
    assert _error(gone) == ("rag_pipeline.core.ingest.sources.base.SourceError: corpus folder not "
                            f"found: {corpus}")
    corpus.mkdir()
    empty = _run(defs, instance)
    assert _error(empty) == (
        f"rag_pipeline.core.ingest.reconcile.CorpusShrankError: the corpus {corpus} is empty: "
        "nothing is indexed, the served index is as it was; if it is meant to be empty, index "
        "with --allow-shrink (in the UI: `allow_shrink: true` in the corpus resource's config)")
    shutil.copy(moved / "notes.txt", corpus / "notes.txt")
    shrunk = _run(defs, instance)
    assert _error(shrunk) == (
        f"rag_pipeline.core.ingest.reconcile.CorpusShrankError: the corpus {corpus} shrank from "
        "5 to 1 readable documents, more than 50% fewer: refused, the served index is as it was; "
        "if the documents were removed on purpose, index with --allow-shrink (in the UI: "
        "`allow_shrink: true` in the corpus resource's config)")
    # Nothing of the refused runs was written: the documents table is the first run's.
    assert warehouse.version(DOCUMENTS).file == kept
    assert _query(db, "select count(*) from documents") == [(5,)]

    # Two of five removed (40%) is under the share: accepted without a flag.
    shutil.rmtree(corpus)
    moved.rename(corpus)
    shutil.rmtree(corpus / "extra")
    fewer = _run(defs, instance)
    assert fewer.success
    assert _query(db, "select change, document_id from reconciliation where change <> 'unchanged' "
                      "order by all") == [("deleted", "extra/a.md"), ("deleted", "extra/b.md")]
    for name in ("guide", "notes.txt"):
        shutil.rmtree(corpus / name) if (corpus / name).is_dir() else (corpus / name).unlink()
    (corpus / "only.md").write_text("# Only\n\nLeft.\n", encoding="utf-8")
    allowed = _run(defs, instance, defs.resources["corpus"].run_config(allow_shrink=True))
    assert allowed.success
    meta = _metadata(allowed)
    assert {k: meta[f"reconciliation.{k}"] for k in ("added", "deleted", "unchanged")} == {
        "added": 1, "deleted": 3, "unchanged": 0}
    assert _query(db, "select document_id from documents") == [("only.md",)]


def test_a_corpus_moved_away_during_the_run_publishes_nothing(project, monkeypatch):
    defs, instance, corpus, data_dir = project
    assert _run(defs, instance).success
    (corpus / "notes.txt").write_text("Edited notes, so the next run reads a file.\n",
                                      encoding="utf-8")
    warehouse = Warehouse(data_dir)
    kept = warehouse.version(DOCUMENTS).file
    real_read = LocalSource.read

    def read_then_vanish(self, entry, max_bytes):
        data = real_read(self, entry, max_bytes)
        self.root.rename(self.root.with_name("unmounted"))  # the folder goes while being read
        return data

    monkeypatch.setattr(LocalSource, "read", read_then_vanish)
    result = _run(defs, instance)
    assert _error(result) == (
        f"rag_pipeline.core.ingest.sources.base.SourceError: the corpus folder {corpus} "
        "disappeared while it was being read: nothing is published, the served index is as it was")
    assert warehouse.version(DOCUMENTS).file == kept


def test_failed_files_are_not_retried_until_they_change_or_asked(project):
    defs, instance, corpus, data_dir = project
    (corpus / "broken.txt").write_bytes(b"\xff\xfe not text")
    assert _run(defs, instance).success
    again = _metadata(_run(defs, instance))
    assert (again["extracted"], again["not_retried"], again["documents_failed"]) == (0, 1, 1)
    retried = _metadata(_run(defs, instance, defs.resources["corpus"].run_config(retry_failed=True)))
    assert (retried["extracted"], retried["not_retried"]) == (1, 0)
    (corpus / "broken.txt").write_text("Fixed now.\n", encoding="utf-8")
    fixed = _metadata(_run(defs, instance))
    assert (fixed["extracted"], fixed["documents_failed"], fixed["reconciliation.changed"]) == (1, 0, 1)


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance):
    sensor = defs.resolve_sensor_def(CORPUS_WATCH)
    with dg.build_sensor_context(instance=instance, definitions=defs,
                                 resources={"corpus": defs.resources["corpus"]}) as context:
        return sensor(context)


def test_a_git_corpus_is_read_at_its_commit_and_watched_by_it(tmp_path: Path):
    repo = Repo(tmp_path / "repo")
    for name, text in TINY_DOCS.items():
        repo.write(name, text)
    first = repo.commit()
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=repo.uri + "@main",
                             models=[hashed_spec()], watch_interval=60)
    assert defs.resolve_sensor_def(CORPUS_WATCH).minimum_interval_seconds == 60
    with dg.DagsterInstance.ephemeral(tempdir=str(tmp_path / "home")) as instance:
        result = _run(defs, instance)
        meta = _metadata(result)
        assert (meta["source_revision"], meta["corpus"], meta["documents_ok"]) == (
            first, repo.uri + "@main", 3)
        db = tmp_path / "data" / "rag.duckdb"
        assert _query(db, "select distinct revision from reconciliation") == [(first,)]
        assert _query(db, "select path from documents where document_id = 'notes.txt'") == [
            (f"{repo.uri}@{first}:notes.txt",)]
        # An untracked file changes nothing the watch sees.
        repo.write("scratch.md", "# Not committed\n")
        assert _tick(defs, instance) == dg.SkipReason(
            "no file of the corpus changed since the last documents run")
        (repo.path / "scratch.md").unlink()
        repo.git("mv", "notes.txt", "release-notes.txt")
        second = repo.commit()
        request = _tick(defs, instance)
        assert isinstance(request, dg.RunRequest) and request.tags == {FINGERPRINT_TAG: second}
        renamed = _run(defs, instance)
        assert _query(db, "select change, document_id, previous_id, revision from reconciliation "
                          "where change <> 'unchanged'") == [
            ("renamed", "release-notes.txt", "notes.txt", second)]
        # A text file is titled by its name: it is read again under the new one.
        assert _metadata(renamed)["extracted"] == 1
        assert _query(db, "select title from documents where document_id = 'release-notes.txt'") == [
            ("release-notes",)]
