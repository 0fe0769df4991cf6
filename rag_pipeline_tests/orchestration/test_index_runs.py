"""Tests for ``rag_pipeline.orchestration.index_runs.first_error``: a failed run names the error its own code
raised, not Dagster's "Steps failed" summary."""

from __future__ import annotations

import dagster as dg

from rag_pipeline.orchestration.index_runs import first_error


@dg.op
def read_corpus() -> None:
    try:
        open("/nonexistent/corpus/a.md").close()
    except FileNotFoundError as exc:
        raise RuntimeError("corpus unreadable") from exc


@dg.job
def failing_job() -> None:
    read_corpus()


class ClusterGoneError(RuntimeError):
    """An error of a module of this project's (its path is not part of the line)."""


@dg.op
def embed() -> None:
    raise ClusterGoneError("Ray cluster at 127.0.0.1:1 cannot be reached")


@dg.job
def failing_project_job() -> None:
    embed()


@dg.op
def embed_silently() -> None:
    raise ClusterGoneError()


@dg.job
def failing_silent_job() -> None:
    embed_silently()


def test_first_error_names_the_step_and_its_own_error_in_one_line():
    instance = dg.DagsterInstance.ephemeral()
    result = failing_job.execute_in_process(instance=instance, raise_on_error=False)
    assert first_error(instance, result.run_id) == "step read_corpus: RuntimeError: corpus unreadable"


def test_first_error_names_a_project_error_by_its_class_not_its_module_path():
    instance = dg.DagsterInstance.ephemeral()
    result = failing_project_job.execute_in_process(instance=instance, raise_on_error=False)
    assert first_error(instance, result.run_id) == (
        "step embed: ClusterGoneError: Ray cluster at 127.0.0.1:1 cannot be reached")


def test_first_error_names_a_project_error_without_a_message_by_its_class_alone():
    instance = dg.DagsterInstance.ephemeral()
    result = failing_silent_job.execute_in_process(instance=instance, raise_on_error=False)
    assert first_error(instance, result.run_id) == "step embed_silently: ClusterGoneError"
