"""The ``index_automation`` sensor retries a failed partition: a planted transient fault fails
two ``embeddings_job`` runs of the same inputs; each later tick waits out the back-off, then
requests the next attempt under a new run key, and the third attempt publishes. A policy with
two attempts gives up instead and says so in the tick's skip reason."""

from __future__ import annotations

import dagster as dg
import pytest

from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.assets import embeddings as embeddings_asset
from rag_pipeline.orchestration.automation import (
    CHUNKS_JOB,
    EMBEDDINGS_JOB,
    EVAL_JOB,
    build_index_automation,
    build_index_jobs,
)
from rag_pipeline.orchestration.retry_policy import RetryPolicy
from rag_pipeline.orchestration.run_tags import ATTEMPT_TAG, INPUTS_TAG
from rag_pipeline_tests.orchestration.assets.conftest import TinyProject

POLICY = RetryPolicy(first_delay_seconds=2.0, max_delay_seconds=4.0, max_attempts=3)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _tick(project: TinyProject, sensor: dg.SensorDefinition):
    with dg.build_sensor_context(instance=project.instance, definitions=project.defs,
                                 resources={"storage": project.defs.resources["storage"]}) as context:
        return sensor(context)


def _launch(project: TinyProject, request: dg.RunRequest) -> dg.DagsterRunStatus:
    """What the daemon does with a request: a run of its job, partition and tags."""
    result = project.defs.resolve_job_def(request.job_name).execute_in_process(
        instance=project.instance, partition_key=request.partition_key, tags=request.tags,
        raise_on_error=False)
    return project.instance.get_run_by_id(result.run_id).status


def _ended(project: TinyProject, job: str) -> float:
    record = project.instance.get_run_records(dg.RunsFilter(job_name=job), limit=1)[0]
    return record.end_time


def test_a_transient_fault_is_retried_after_a_back_off(tiny_project: TinyProject,
                                                       monkeypatch: pytest.MonkeyPatch):
    clock = Clock()
    sensor = build_index_automation(["header"], [tiny_project.spec], build_index_jobs(),
                                    retry=POLICY, clock=clock)
    [chunks] = _tick(tiny_project, sensor)
    assert (chunks.job_name, chunks.tags[ATTEMPT_TAG]) == (CHUNKS_JOB, "1")
    assert _launch(tiny_project, chunks) == dg.DagsterRunStatus.SUCCESS

    original = embeddings_asset.embeddings_table
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) <= 2:
            # Planted transient fault (fails the run; the sensor must request it again): the
            # vector cache is read-only for the first two runs.
            raise PermissionError("planted: the vector cache is read-only")
        return original(*args, **kwargs)

    monkeypatch.setattr(embeddings_asset, "embeddings_table", flaky)
    [first] = _tick(tiny_project, sensor)
    inputs = first.tags[INPUTS_TAG]
    key = f"header|{tiny_project.spec.key}"
    assert (first.job_name, str(first.partition_key), first.run_key, first.tags[ATTEMPT_TAG]) == (
        EMBEDDINGS_JOB, key, f"{EMBEDDINGS_JOB}:{inputs}", "1")
    assert _launch(tiny_project, first) == dg.DagsterRunStatus.FAILURE

    # Attempt 1 failed: 2 s of back-off. 1 s later the tick waits and says why.
    clock.now = _ended(tiny_project, EMBEDDINGS_JOB) + 1.0
    assert _tick(tiny_project, sensor) == dg.SkipReason(
        f"{EMBEDDINGS_JOB} [{key}]: attempt 2 of 3 in 1 s (attempt 1 failed)")
    clock.now += 1.0
    [second] = _tick(tiny_project, sensor)
    # The same inputs, a new run key: the daemon launches it.
    assert (second.run_key, second.tags[INPUTS_TAG], second.tags[ATTEMPT_TAG]) == (
        f"{EMBEDDINGS_JOB}:{inputs}:2", inputs, "2")
    assert _launch(tiny_project, second) == dg.DagsterRunStatus.FAILURE

    # Two failures: 4 s (2 s doubled). A policy of two attempts has given up by now.
    clock.now = _ended(tiny_project, EMBEDDINGS_JOB) + 3.0
    assert _tick(tiny_project, sensor) == dg.SkipReason(
        f"{EMBEDDINGS_JOB} [{key}]: attempt 3 of 3 in 1 s (attempt 2 failed)")
    stubborn = build_index_automation(["header"], [tiny_project.spec], build_index_jobs(),
                                      retry=RetryPolicy(1.0, 1.0, 2), clock=clock)
    assert _tick(tiny_project, stubborn) == dg.SkipReason(
        f"{EMBEDDINGS_JOB} [{key}]: all 2 attempts failed; waits for an input to change or a "
        "re-execution")
    clock.now += 1.0
    [third] = _tick(tiny_project, sensor)
    assert (third.run_key, third.tags[ATTEMPT_TAG]) == (f"{EMBEDDINGS_JOB}:{inputs}:3", "3")
    assert _launch(tiny_project, third) == dg.DagsterRunStatus.SUCCESS
    assert len(calls) == 3
    assert current_generation(Warehouse(tiny_project.data_dir), "header",
                              tiny_project.spec.key) is not None

    # Published: the evaluation of the model is what is due next, and the partition is done.
    [evaluation] = _tick(tiny_project, sensor)
    assert (evaluation.job_name, evaluation.partition_key) == (EVAL_JOB, tiny_project.spec.key)


def test_a_partition_that_moved_on_and_came_back_is_requested_again(tmp_path):
    # An edit, then the edit reverted: the chunks step's inputs are those of a run that already
    # succeeded, but the partition has been rebuilt from other inputs since. The sensor counted
    # that old success as done and never requested it again (the old text stayed served).
    from rag_pipeline.core.index.plan import Stage, Step
    from rag_pipeline.orchestration.automation import due_requests

    instance = dg.DagsterInstance.local_temp(tempdir=str(tmp_path))
    original = Step(Stage.CHUNKS, "header", None, (("documents", "documents/part-a.parquet"),))
    edited = Step(Stage.CHUNKS, "header", None, (("documents", "documents/part-b.parquet"),))

    def ran(step: Step) -> None:
        instance.add_run(dg.DagsterRun(job_name=CHUNKS_JOB, status=dg.DagsterRunStatus.SUCCESS,
                                       tags={"dagster/partition": "header", INPUTS_TAG: step.key}))

    ran(original)
    # Its inputs' run succeeded and nothing ran since: done, not requested again.
    assert due_requests([original], instance, RetryPolicy(), 0.0) == ([], [])
    ran(edited)
    requests, waiting = due_requests([original], instance, RetryPolicy(), 0.0)
    # Attempt 1 of these inputs since the partition moved on, under a run key not used before.
    assert [(r.run_key, r.tags[INPUTS_TAG], r.tags[ATTEMPT_TAG]) for r in requests] == [
        (f"{CHUNKS_JOB}:{original.key}:2", original.key, "1")]
    assert waiting == []
