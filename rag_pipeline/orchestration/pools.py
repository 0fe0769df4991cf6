"""The Dagster concurrency pools of the index's assets: what the run queue holds a run by,
whichever way it was launched.

A run is held by the pools of the assets it materialises, so a run launched from an asset page
or a backfill ("Materialize all": Dagster's ``__ASSET_JOB``, which carries none of the jobs'
tags) waits in the queue exactly as a sensor's ``embeddings_job`` run does.
``dagster_home/dagster.yaml`` enforces them per run (``concurrency: pools: granularity: run``,
``default_limit: 1``): the queue starts no run while another run using one of its pools is in
progress, and a run in progress never waits for a slot. ``rag-pipeline index`` without a daemon
runs its runs one after another itself, outside the queue.
"""

from __future__ import annotations

MODEL_POOL = "model"
"""The assets that load an embedding model (``embeddings``, the evaluation tables,
``adapted_model``). Each gives torch every core it may use (``RAG_PIPELINE_TORCH_THREADS``
unset), so a machine of C cores runs C // threads of them at once: the pool's limit (1 here;
``dagster instance concurrency set model N`` changes it)."""

DOCUMENTS_POOL = "documents"
"""The ``documents`` asset: the corpus watch, the schedule, ``rag-pipeline index`` and a UI launch
may each ask for one, and they write the same table: one at a time."""
