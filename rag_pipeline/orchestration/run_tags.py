"""The tags of the index's runs, few enough to read on the Runs page.

A run shows its job's ``rag_pipeline/stage`` (and ``rag_pipeline/compute`` on the runs that
load the model), Dagster's own partition tags (``dagster/partition``, and per dimension
``dagster/partition/chunker`` and ``dagster/partition/model``: filter the runs by these), the
``rag_pipeline/generation`` an ``embeddings_job`` run published, on a sensor's request the
digest of its inputs and its attempt, and on a run of ``rag-pipeline index`` its request (or,
run by the command itself, the process that ran it). What a tag would repeat (the chunker or the model of a
partition, the generations an evaluation scored: its metadata) is not a tag.
"""

from __future__ import annotations

import dagster as dg

GENERATION_TAG = "rag_pipeline/generation"
INPUTS_TAG = "rag_pipeline/inputs"
"""The digest of the input files a sensor-launched run builds from (its plan step's key)."""
ATTEMPT_TAG = "rag_pipeline/attempt"
"""Which attempt at those inputs a sensor-launched run is (1, then 2 after a failure, ...)."""
PID_TAG = "rag_pipeline/pid"
"""The process that executes an in-process run (``rag-pipeline index`` with no daemon running),
so a killed one can be recognised later."""
REQUEST_TAG = "rag_pipeline/index_request"
"""The request of a run ``rag-pipeline index`` launched through the code location."""


def tag_run(context: dg.AssetExecutionContext, tags: dict[str, str]) -> None:
    """Adds ``tags`` to the running run (a UI launch gets them as well as a sensor launch)."""
    context.instance.add_run_tags(context.run_id, tags)


def launched_by(tags: dict[str, str]) -> str | None:
    """The sensor or schedule whose request launched a run with these tags (None: a person or
    a command launched it)."""
    return tags.get("dagster/sensor_name") or tags.get("dagster/schedule_name")
