"""The tags every index run carries, so the Runs page can be filtered by what a run built."""

from __future__ import annotations

import dagster as dg

CHUNKER_TAG = "rag_pipeline/chunker"
MODEL_TAG = "rag_pipeline/model"
GENERATION_TAG = "rag_pipeline/generation"
INPUTS_TAG = "rag_pipeline/inputs"
"""The digest of the input files a sensor-launched run builds from (its plan step's key)."""
ATTEMPT_TAG = "rag_pipeline/attempt"
"""Which attempt at those inputs a sensor-launched run is (1, then 2 after a failure, ...)."""


def tag_run(context: dg.AssetExecutionContext, tags: dict[str, str]) -> None:
    """Adds ``tags`` to the running run (a UI launch gets them as well as a sensor launch)."""
    context.instance.add_run_tags(context.run_id, tags)
