"""Jobs, the nightly schedule and the sensor that carries a documents change down the index.

Dagster runs one partition per run, and a run's assets must share one partitions definition, so
the index is four jobs: ``documents_job`` (unpartitioned), ``chunks_job`` (per chunker: chunks
and the four BM25 tables), ``embeddings_job`` (per chunker x model) and ``eval_job`` (per
model). The
nightly schedule runs ``documents_job``; the ``index_automation`` sensor then materialises every
downstream partition whose inputs' *data versions* changed (each asset's data version is the
digest of the table it wrote), so a night with no change launches nothing, and the evaluation of
a model waits until every embeddings partition of that model is current.
``rag-pipeline index`` launches the same documents run through the code location and follows
what the sensor does (see :mod:`rag_pipeline.index_runs`).
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from rag_pipeline.assets.retrieval_eval import EVAL_TABLES
from rag_pipeline.core.table_names import BM25_TABLES
from rag_pipeline.partitions import chunker_partitions

DOCUMENTS_JOB = "documents_job"
CHUNKS_JOB = "chunks_job"
EMBEDDINGS_JOB = "embeddings_job"
EVAL_JOB = "eval_job"
NIGHTLY_SCHEDULE = "nightly_index"
INDEX_SENSOR = "index_automation"


def build_index_jobs(embedding_partitions: dg.PartitionsDefinition,
                     model_partitions: dg.PartitionsDefinition,
                     ) -> Sequence[dg.UnresolvedAssetJobDefinition]:
    return (
        dg.define_asset_job(DOCUMENTS_JOB, selection=["documents"],
                            description="Extract every document of the corpus (stage 1 of 4)."),
        dg.define_asset_job(CHUNKS_JOB, selection=["chunks", *BM25_TABLES],
                            partitions_def=chunker_partitions,
                            description="Chunk and count BM25 statistics, one chunker per run "
                                        "(stage 2 of 4)."),
        dg.define_asset_job(EMBEDDINGS_JOB, selection=["embeddings"],
                            partitions_def=embedding_partitions,
                            description="Embed the chunks, one chunker x model per run "
                                        "(stage 3 of 4)."),
        dg.define_asset_job(EVAL_JOB, selection=list(EVAL_TABLES),
                            partitions_def=model_partitions,
                            description="Evaluate retrieval on the gold sets, one model per run "
                                        "(stage 4 of 4)."),
    )


nightly_index = dg.ScheduleDefinition(
    name=NIGHTLY_SCHEDULE, job_name=DOCUMENTS_JOB, cron_schedule="0 2 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="02:00 every night: re-read the corpus; the index sensor does the rest.")

SENSOR_INTERVAL_SECONDS = 10


index_automation = dg.AutomationConditionSensorDefinition(
    INDEX_SENSOR, target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
    description="Materialises each chunks / bm25 / embeddings / eval partition whose inputs' "
                "data versions changed, so the nightly documents run rebuilds what it must and "
                "nothing else.")
