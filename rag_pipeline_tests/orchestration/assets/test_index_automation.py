"""The ``index_automation`` sensor: run requests for the project's named jobs, one per due
partition, tagged with what the run builds, and none for a partition that already has a run."""

from __future__ import annotations

import dagster as dg

from rag_pipeline.core.index.plan import Stage, index_plan
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.automation import CHUNKS_JOB, INDEX_SENSOR
from rag_pipeline.orchestration.run_tags import ATTEMPT_TAG, INPUTS_TAG
from rag_pipeline_tests.orchestration.assets.conftest import TinyProject
from rag_pipeline_tests.test_definitions import CHUNKERS


def _tick(project: TinyProject) -> list[dg.RunRequest] | dg.SkipReason:
    sensor = project.defs.resolve_sensor_def(INDEX_SENSOR)
    with dg.build_sensor_context(instance=project.instance, definitions=project.defs,
                                 resources={"storage": project.defs.resources["storage"]}) as context:
        result = sensor(context)
    return result


def test_documents_written_ask_for_one_chunks_job_run_per_chunker(tiny_project: TinyProject):
    requests = _tick(tiny_project)
    plan = index_plan(Warehouse(tiny_project.data_dir), CHUNKERS, [tiny_project.spec.key])
    assert [(s.stage, s.chunker) for s in plan] == [(Stage.CHUNKS, c) for c in CHUNKERS]
    assert [(r.job_name, r.partition_key) for r in requests] == [(CHUNKS_JOB, c) for c in CHUNKERS]
    # A request carries only its inputs and attempt (the partition is Dagster's own tag).
    assert [sorted(r.tags) for r in requests] == [[ATTEMPT_TAG, INPUTS_TAG]] * len(CHUNKERS)
    # The run key is the job and the digest of the documents file the chunks will be cut from:
    # the same state asks for the same runs, which the daemon launches once.
    assert [r.run_key for r in requests] == [f"{CHUNKS_JOB}:{s.key}" for s in plan]
    assert [r.tags[INPUTS_TAG] for r in requests] == [s.key for s in plan]
    assert [r.run_key for r in _tick(tiny_project)] == [r.run_key for r in requests]


def test_a_partition_with_a_run_in_progress_gets_no_second_one(tiny_project: TinyProject):
    job = tiny_project.defs.resolve_job_def(CHUNKS_JOB)
    run = tiny_project.instance.create_run_for_job(job, tags={"dagster/partition": "blind"},
                                                   status=dg.DagsterRunStatus.STARTED)
    try:
        assert [r.partition_key for r in _tick(tiny_project)] == [c for c in CHUNKERS if c != "blind"]
    finally:
        tiny_project.instance.delete_run(run.run_id)


def test_a_run_launched_from_the_ui_holds_the_sensor(tiny_project: TinyProject):
    """Found by a user's trial of the UI: after "Materialize all", the sensor launched its own
    chunks and embeddings runs beside the backfill's, which built the same partitions: the
    work was done twice."""
    import uuid

    from rag_pipeline.orchestration.automation import ASSET_JOB_PREFIX

    run_id = str(uuid.uuid4())
    tiny_project.instance.add_run(dg.DagsterRun(job_name=ASSET_JOB_PREFIX, run_id=run_id,
                                                status=dg.DagsterRunStatus.STARTED))
    try:
        assert _tick(tiny_project) == dg.SkipReason(
            f"run {run_id[:8]}, launched from the UI, is queued or in progress: the sensor "
            "waits for it (it may build the same partitions)")
    finally:
        tiny_project.instance.delete_run(run_id)
    assert [r.job_name for r in _tick(tiny_project)] == [CHUNKS_JOB] * len(CHUNKERS)


def test_a_backfill_in_progress_holds_the_sensor():
    from types import SimpleNamespace

    from rag_pipeline.orchestration.automation import launched_elsewhere

    class Instance:
        def __init__(self, *statuses: str):
            self.backfills = [SimpleNamespace(backfill_id=f"b{i}", status=SimpleNamespace(value=s))
                              for i, s in enumerate(statuses)]

        def get_backfills(self, limit: int):
            return self.backfills[:limit]

    assert launched_elsewhere(Instance("COMPLETED_SUCCESS", "REQUESTED"), []) == (
        "backfill b1 is in progress: the sensor waits for it (it builds the same partitions)")
    assert launched_elsewhere(Instance("COMPLETED_FAILED", "CANCELED"), []) is None


def test_an_empty_data_folder_is_not_called_current(tmp_path):
    """Found by a user's trial of the UI: on a fresh instance the sensor's first tick said
    "the index is current" though nothing was built."""
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
    from rag_pipeline_tests.fake_embedder import hashed_spec

    defs = build_definitions(data_dir=tmp_path / "data",
                             corpus_dir=write_corpus(tmp_path / "corpus", TINY_DOCS),
                             models=[hashed_spec()])
    empty = TinyProject(defs, dg.DagsterInstance.ephemeral(), tmp_path / "data", hashed_spec())
    assert _tick(empty) == dg.SkipReason(
        "no documents run yet: `rag-pipeline index`, the corpus_watch sensor or materialising "
        "`documents` builds the index")
