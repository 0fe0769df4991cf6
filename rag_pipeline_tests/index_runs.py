"""Runs the whole index in this process, for the tests: documents, then every chunker, then
every embedding partition, then the evaluation per model, each an in-process run of the
project's jobs on the given instance. ``rag-pipeline index`` launches runs through the code
location instead (:mod:`rag_pipeline.orchestration.index_launch`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB, EVAL_JOB
from rag_pipeline.orchestration.index_runs import IndexRunFailed, first_error
from rag_pipeline.orchestration.run_tags import PID_TAG


@dataclass
class StageTiming:
    job: str
    partition: str
    seconds: float
    run_id: str
    metadata: dict[str, object] = field(default_factory=dict)


def _materialization_metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    out: dict[str, object] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        for key, value in mat.metadata.items():
            out[f"{mat.asset_key.to_user_string()}.{key}"] = getattr(value, "value", value)
    return out


def run_index(defs: dg.Definitions, instance: dg.DagsterInstance, *, corpus: Path | None = None,
              echo: Callable[[str], None] = print, evaluate: bool = True) -> list[StageTiming]:
    """Materialises the whole index; stops at the first failed run (a failed *document* is
    not a failed run: it is recorded in the documents table and the run goes on)."""
    run_config = {}
    if corpus is not None:
        run_config = {"resources": {"corpus": {"config": {
            "path": str(corpus.resolve()), "python_reference": False}}}}
    timings: list[StageTiming] = []

    def run(job_name: str, partition_key: str | dg.MultiPartitionKey | None) -> None:
        job = defs.resolve_job_def(job_name)
        label = str(partition_key) if partition_key is not None else "-"
        echo(f"running {job_name} [{label}] ...")
        started = time.perf_counter()
        result = job.execute_in_process(instance=instance, partition_key=partition_key,
                                        run_config=run_config, raise_on_error=False,
                                        tags={PID_TAG: str(os.getpid())})
        seconds = time.perf_counter() - started
        if not result.success:
            raise IndexRunFailed(f"{job_name} [{label}] failed (run {result.run_id[:8]}): "
                                 f"{first_error(instance, result.run_id)}")
        timings.append(StageTiming(job_name, label, seconds, result.run_id,
                                   _materialization_metadata(result)))
        echo(f"  done in {seconds:.1f} s (run {result.run_id[:8]})")

    run(DOCUMENTS_JOB, None)
    for chunker in defs.resolve_job_def(CHUNKS_JOB).partitions_def.get_partition_keys():
        run(CHUNKS_JOB, chunker)
    embeddings_partitions = defs.resolve_job_def(EMBEDDINGS_JOB).partitions_def
    for key in embeddings_partitions.get_partition_keys():
        run(EMBEDDINGS_JOB, key)
    if evaluate:
        for model_key in defs.resolve_job_def(EVAL_JOB).partitions_def.get_partition_keys():
            run(EVAL_JOB, model_key)
    return timings
