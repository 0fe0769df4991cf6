"""The index_automation sensor's retries as it words them: a run a person terminated is said to
have been canceled, not to have failed."""

from __future__ import annotations

from types import SimpleNamespace

import dagster as dg
import pytest

from rag_pipeline.core.index.plan import Stage, Step
from rag_pipeline.orchestration.automation import due_requests
from rag_pipeline.orchestration.retry_policy import RetryPolicy
from rag_pipeline.orchestration.run_tags import INPUTS_TAG

STEP = Step(Stage.CHUNKS, "header", None, (("documents", "abc"),))


class _Runs:
    """An instance that holds one ended run of ``STEP``'s inputs."""

    def __init__(self, status: dg.DagsterRunStatus, ended_at: float) -> None:
        self.record = SimpleNamespace(
            dagster_run=SimpleNamespace(status=status, tags={INPUTS_TAG: STEP.key}),
            end_time=ended_at)

    def get_run_records(self, filters: dg.RunsFilter) -> list[SimpleNamespace]:
        return [self.record]


@pytest.mark.parametrize(("status", "said"), [(dg.DagsterRunStatus.FAILURE, "failed"),
                                              (dg.DagsterRunStatus.CANCELED, "was canceled")])
def test_a_retry_waiting_says_how_the_last_attempt_ended(status: dg.DagsterRunStatus, said: str):
    """Found by an operator: a run terminated in the UI was retried, rightly, but the tick said
    "(attempt 1 failed)" beside a run page saying Canceled."""
    requests, waiting = due_requests([STEP], _Runs(status, 100.0), RetryPolicy(), now=130.0)
    assert (requests, waiting) == (
        [], [f"chunks_job [header]: attempt 2 of 4 in 30 s (attempt 1 {said})"])
