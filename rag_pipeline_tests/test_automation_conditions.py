"""``inputs_changed``: a partition whose last run failed is requested again after the back-off
(every ``RETRY_CRON`` tick), and only that one; evaluated in process at chosen times."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import pytest

from rag_pipeline.automation_conditions import RETRY_CRON, inputs_changed

FAIL = {"flaky": False}


@dg.asset
def source() -> int:
    return 1


@dg.asset(deps=[source], automation_condition=inputs_changed())
def flaky() -> None:
    if FAIL["flaky"]:
        # Planted: a transient fault, as a read-only vector cache gives for one run.
        raise OSError("the vector cache is read-only for this run")


@dg.asset(deps=[source], automation_condition=inputs_changed())
def steady() -> None:
    pass


@pytest.fixture
def instance():
    with dg.DagsterInstance.ephemeral() as instance:
        FAIL["flaky"] = False
        assert dg.materialize([source, flaky, steady], instance=instance).success
        FAIL["flaky"] = True
        assert not dg.materialize([flaky], instance=instance, raise_on_error=False).success
        FAIL["flaky"] = False
        yield instance


def test_a_failed_asset_is_requested_again_once_per_back_off_tick(instance):
    assert RETRY_CRON == "*/5 * * * *"
    requested = {}
    cursor = None
    for minute in (1, 3, 4, 6, 7, 9, 11):
        result = dg.evaluate_automation_conditions(
            [source, flaky, steady], instance, cursor=cursor,
            evaluation_time=datetime(2026, 12, 1, 10, minute, 30, tzinfo=UTC))
        cursor = result.cursor
        requested[minute] = [name for name in ("flaky", "steady")
                             if result.get_num_requested(dg.AssetKey(name))]
    # Not at once (the back-off), then after each 5-minute tick (10:05, 10:10) while it stays
    # failed (no run was launched here); the asset that succeeded is never requested.
    assert requested == {1: [], 3: [], 4: [], 6: ["flaky"], 7: [], 9: [], 11: ["flaky"]}


def test_a_retried_asset_that_succeeds_is_not_requested_again(instance):
    first = dg.evaluate_automation_conditions(
        [source, flaky, steady], instance,
        evaluation_time=datetime(2026, 12, 1, 10, 4, 30, tzinfo=UTC))
    assert dg.materialize([flaky], instance=instance).success
    later = dg.evaluate_automation_conditions(
        [source, flaky, steady], instance, cursor=first.cursor,
        evaluation_time=datetime(2026, 12, 1, 10, 6, 30, tzinfo=UTC))
    assert (first.total_requested, later.total_requested) == (0, 0)
