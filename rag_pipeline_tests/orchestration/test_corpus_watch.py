"""The ``corpus_watch`` sensor on a temporary instance: nothing before the first documents run,
nothing while the corpus is as the last documents run read it, one ``documents_job`` request
when a file changes, and none while a documents run is busy, has failed on the same folder, or
``rag-pipeline index`` holds the instance's lock."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import DOCUMENTS_JOB
from rag_pipeline.orchestration.corpus_watch import (
    CORPUS_WATCH,
    FINGERPRINT_TAG,
    UNRECORDED,
    EarlierReading,
    corpus_fingerprint,
    earlier_reading,
    recorded_fingerprint,
)
from rag_pipeline.project_paths import INDEX_LOCK
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import hashed_spec


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance):
    sensor = defs.resolve_sensor_def(CORPUS_WATCH)
    with dg.build_sensor_context(instance=instance, definitions=defs,
                                 resources={"corpus": defs.resources["corpus"]}) as context:
        return sensor(context)


def test_the_fingerprint_follows_what_the_documents_run_reads(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    first = corpus_fingerprint(corpus)
    assert corpus_fingerprint(corpus) == first and len(first) == 16
    (corpus / ".hidden.md").write_text("not read by the documents run\n", encoding="utf-8")
    assert corpus_fingerprint(corpus) == first
    (corpus / "notes.txt").write_text("Release notes, edited.\n", encoding="utf-8")
    edited = corpus_fingerprint(corpus)
    assert edited != first
    (corpus / "new.md").write_text("# New\n\nA new file.\n", encoding="utf-8")
    assert corpus_fingerprint(corpus) not in (first, edited)
    assert corpus_fingerprint(tmp_path / "absent") == "missing"


@pytest.fixture
def watched(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    defs = build_definitions(data_dir=tmp_path / "data", corpus_dir=corpus, models=[hashed_spec()])
    with dg.DagsterInstance.ephemeral(tempdir=str(tmp_path / "home")) as instance:
        yield defs, instance, corpus


def test_an_edit_requests_one_documents_run(watched):
    defs, instance, corpus = watched
    assert _tick(defs, instance) == dg.SkipReason(
        "no documents run yet: `rag-pipeline index` builds the index")
    run = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance)
    assert run.success
    # The run recorded the folder as it read it.
    assert recorded_fingerprint(instance) == corpus_fingerprint(corpus)
    assert _tick(defs, instance) == dg.SkipReason(
        "no file of the corpus changed since the last documents run")

    (corpus / "notes.txt").write_text("Release notes.\n\nVersion 3 removed the YAML exporter.\n",
                                      encoding="utf-8")
    request = _tick(defs, instance)
    fingerprint = corpus_fingerprint(corpus)
    assert isinstance(request, dg.RunRequest)
    assert (request.job_name, request.tags) == (None, {FINGERPRINT_TAG: fingerprint})
    assert request.run_key.startswith(f"{CORPUS_WATCH}:{fingerprint}:")

    # The documents run of that request reads the edit; then nothing is due.
    again = defs.resolve_job_def(DOCUMENTS_JOB).execute_in_process(instance=instance,
                                                                    tags=request.tags)
    assert again.success and recorded_fingerprint(instance) == fingerprint
    assert _tick(defs, instance) == dg.SkipReason(
        "no file of the corpus changed since the last documents run")


def test_no_request_while_a_run_is_busy_has_failed_or_index_holds_the_lock(watched):
    defs, instance, corpus = watched
    job = defs.resolve_job_def(DOCUMENTS_JOB)
    assert job.execute_in_process(instance=instance).success
    (corpus / "notes.txt").write_text("Edited.\n", encoding="utf-8")
    fingerprint = corpus_fingerprint(corpus)

    busy = instance.create_run_for_job(job, status=dg.DagsterRunStatus.STARTED)
    assert _tick(defs, instance) == dg.SkipReason(
        f"the corpus changed; waits for documents run {busy.run_id[:8]} to end")
    instance.delete_run(busy.run_id)

    failed = instance.create_run_for_job(job, status=dg.DagsterRunStatus.FAILURE,
                                         tags={FINGERPRINT_TAG: fingerprint})
    assert _tick(defs, instance) == dg.SkipReason(
        f"documents run {failed.run_id[:8]} failed on the corpus as it is: waits for another "
        "change")
    instance.delete_run(failed.run_id)

    # A live `rag-pipeline index` (this process stands in for it) launches its own run.
    lock = Path(instance.root_directory) / INDEX_LOCK
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"pid": os.getpid(), "started_at": "2026-12-01T00:00:00Z",
                                "command": "rag-pipeline index"}), encoding="utf-8")
    assert _tick(defs, instance) == dg.SkipReason(
        f"the corpus changed; rag-pipeline index (pid {os.getpid()}) is running and launches "
        "its own documents run")
    # A holder that is gone holds nothing.
    lock.write_text(json.dumps({"pid": 2 ** 22 + 7, "started_at": "2026-12-01T00:00:00Z",
                                "command": "rag-pipeline index"}), encoding="utf-8")
    assert isinstance(_tick(defs, instance), dg.RunRequest)


def test_a_documents_run_that_recorded_no_fingerprint_is_run_once_more(watched):
    defs, instance, corpus = watched
    # An instance whose documents were materialised by a version without the fingerprint.
    instance.report_runless_asset_event(dg.AssetMaterialization("documents"))
    assert recorded_fingerprint(instance) == UNRECORDED
    request = _tick(defs, instance)
    assert isinstance(request, dg.RunRequest)
    assert request.tags == {FINGERPRINT_TAG: corpus_fingerprint(corpus)}


def test_a_documents_run_that_finds_nothing_names_the_watchs_run_that_read_the_edit(watched):
    """Found by a new user: with the daemon running, an edit the watch's documents run had
    indexed before `rag-pipeline index` started was reported by the command as `changed 0`."""
    defs, instance, corpus = watched
    job = defs.resolve_job_def(DOCUMENTS_JOB)
    first = job.execute_in_process(instance=instance)
    (corpus / "notes.txt").write_text("Release notes.\n\nVersion 3 removed the YAML exporter.\n",
                                      encoding="utf-8")
    watch = job.execute_in_process(instance=instance, tags={
        "dagster/sensor_name": CORPUS_WATCH, FINGERPRINT_TAG: corpus_fingerprint(corpus)})
    # The watch's own run, and the first run before any edit, are named by nobody.
    assert earlier_reading(instance, watch.run_id) is None
    command = job.execute_in_process(instance=instance)
    found = earlier_reading(instance, command.run_id)
    assert found == EarlierReading(watch.run_id, CORPUS_WATCH, found.ended_at, {
        "added": 0, "changed": 1, "renamed": 0, "deleted": 0, "unchanged": len(TINY_DOCS) - 1,
        "failed": 0, "skipped": 0, "hidden": 0})
    assert earlier_reading(instance, first.run_id) is None  # not the latest materialisation
    # A run after another run that found nothing, or after an edit since, names nobody.
    assert earlier_reading(instance, job.execute_in_process(instance=instance).run_id) is None
    (corpus / "notes.txt").write_text("Release notes, again.\n", encoding="utf-8")
    job.execute_in_process(instance=instance, tags={"dagster/sensor_name": CORPUS_WATCH})
    (corpus / "extra.md").write_text("# Extra\n\nOne more file.\n", encoding="utf-8")
    assert earlier_reading(instance, job.execute_in_process(instance=instance).run_id) is None

