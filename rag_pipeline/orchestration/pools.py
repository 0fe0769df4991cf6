"""The Dagster concurrency pools of the index's assets: what the run queue holds a run by,
whichever way it was launched.

A run is held by the pools of the assets it materialises, so a run launched from an asset page
or a backfill ("Materialize all": Dagster's ``__ASSET_JOB``, which carries none of the jobs'
tags) waits in the queue exactly as a sensor's ``embeddings_job`` run does.
``dagster_home/dagster.yaml`` enforces them per run (``concurrency: pools: granularity: run``,
``default_limit: 1``): the queue starts no run while another run using one of its pools is in
progress, and a run in progress never waits for a slot. ``rag-pipeline index`` without a daemon
runs its runs one after another itself, outside the queue.

Dagster's queue gives a pool its default limit only in the pass that first meets it, and lets
that pass's runs through unheld: the first "Materialize all" of a fresh instance would start
two embeddings runs together. :func:`ensure_pool_limits` gives both pools their limit before
any run is queued (each tick of the sensors, and ``rag-pipeline index`` before it launches runs
for a daemon).
"""

from __future__ import annotations

import dagster as dg

MODEL_POOL = "model"
"""The assets that load an embedding model (``embeddings``, the evaluation tables,
``adapted_model``). Each gives torch every core it may use (``RAG_PIPELINE_TORCH_THREADS``
unset), so a machine of C cores runs C // threads of them at once: the pool's limit (1 here;
``dagster instance concurrency set model N`` changes it)."""

DOCUMENTS_POOL = "documents"
"""The ``documents`` asset: the corpus watch, the schedule, ``rag-pipeline index`` and a UI launch
may each ask for one, and they write the same table: one at a time."""

POOLS = (MODEL_POOL, DOCUMENTS_POOL)


def ensure_pool_limits(instance: dg.DagsterInstance) -> list[str]:
    """Gives each of :data:`POOLS` that has no limit yet the instance's default limit
    (``concurrency: pools: default_limit``); returns those it gave one. Nothing without a default
    (``deploy/dagster.yaml``: its pools are unlimited until set)."""
    if instance.global_op_concurrency_default_limit is None:
        return []
    storage = instance.event_log_storage
    missing = [pool for pool in POOLS if pool not in storage.get_concurrency_keys()]
    for pool in missing:
        storage.initialize_concurrency_limit_to_default(pool)
    return missing
