"""When the index_automation sensor materialises a partition: on a change of its inputs' data
versions (each asset's data version is the digest of the table it wrote), never on a mere re-run
that produced the same table."""

from __future__ import annotations

import dagster as dg

RETRY_CRON = "*/5 * * * *"
"""The sensor's back-off for a partition whose last run failed: at most one retry per five
minutes (``rag-pipeline index`` retries at once)."""


def retry_failed(cron: str = RETRY_CRON) -> dg.AutomationCondition:
    """True for a partition whose last run failed (or was killed and marked failed, or was
    canceled), once per tick of ``cron``: the back-off between two attempts."""
    return (dg.AutomationCondition.execution_failed()
            & dg.AutomationCondition.cron_tick_passed(cron)).with_label("retry_failed")


def inputs_changed(*, with_deps_requested_now: bool = False) -> dg.AutomationCondition:
    """Like ``eager()``, but a dependency counts as updated only when its data version changed:
    re-running a step that produced the same table triggers nothing downstream. A partition whose
    last run failed is requested again after the :func:`retry_failed` back-off.

    ``with_deps_requested_now`` also counts a dependency requested on the same tick, for assets
    that share its partitions (the BM25 tables with their chunks): both then go in one run. It is
    off for the others, so a run never starts before the run that makes its inputs."""
    updated = (dg.AutomationCondition.data_version_changed()
               # A dependency updated by a run that also updated this asset was consumed by it.
               & ~dg.AutomationCondition.executed_with_root_target())
    if with_deps_requested_now:
        updated = updated | dg.AutomationCondition.will_be_requested()
    dep_changed = dg.AutomationCondition.any_deps_match(updated).with_label(
        "any_dep_data_version_changed")
    return (
        ((dg.AutomationCondition.newly_missing() | dep_changed).since_last_handled()
         | retry_failed())
        & ~dg.AutomationCondition.any_deps_missing()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("inputs_changed")


def stale() -> dg.AutomationCondition:
    """True for a partition whose own inputs changed since it last materialised."""
    return dg.AutomationCondition.any_deps_match(
        dg.AutomationCondition.data_version_changed()
    ).since(dg.AutomationCondition.newly_updated()).with_label("stale")


def inputs_changed_and_all_current() -> dg.AutomationCondition:
    """``inputs_changed()`` that also waits while any dependency partition is running, about to
    run, or stale: the evaluation of a model runs once, after all of its embeddings are current."""
    not_ready = dg.AutomationCondition.any_deps_match(
        dg.AutomationCondition.in_progress() | dg.AutomationCondition.will_be_requested()
        | stale()).with_label("a_dep_not_current")
    return (inputs_changed() & ~not_ready).with_label("inputs_changed_and_all_current")
