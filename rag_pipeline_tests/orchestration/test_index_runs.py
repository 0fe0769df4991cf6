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


def test_first_error_names_the_step_and_its_own_error_in_one_line():
    instance = dg.DagsterInstance.ephemeral()
    result = failing_job.execute_in_process(instance=instance, raise_on_error=False)
    assert first_error(instance, result.run_id) == "step read_corpus: RuntimeError: corpus unreadable"
