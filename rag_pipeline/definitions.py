"""Everything Dagster loads: assets, checks, jobs, schedule, sensor and resources."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path

import dagster as dg

from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.embedding.compute import ComputeSettings
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.orchestration.assets.adapted_model import build_adapted_model_asset
from rag_pipeline.orchestration.assets.ann_index import build_ann_index_asset
from rag_pipeline.orchestration.assets.bm25_stats import bm25_stats
from rag_pipeline.orchestration.assets.chunks import build_chunks_asset
from rag_pipeline.orchestration.assets.documents import documents
from rag_pipeline.orchestration.assets.embeddings import build_embeddings_asset
from rag_pipeline.orchestration.assets.index_generation import build_index_generation_asset
from rag_pipeline.orchestration.assets.retrieval_eval import build_retrieval_eval_asset
from rag_pipeline.orchestration.automation import (
    ACTIVE_STATUSES,
    COMPUTE_TAG,
    DOCUMENTS_JOB,
    STAGE_TAG,
    build_index_automation,
    build_index_jobs,
    nightly_index,
)
from rag_pipeline.orchestration.catalog import CORPUS_FRESHNESS, catalogued
from rag_pipeline.orchestration.corpus_watch import build_corpus_watch
from rag_pipeline.orchestration.partitions import chunker_partitions
from rag_pipeline.orchestration.resources import CorpusSource, EvalSets, IndexStorage, ReportSite, RunCompute
from rag_pipeline.project_paths import (
    DEFAULT_DATA_DIR,
    DEFAULT_EVAL_DIR,
    ENV_CORPUS,
    ENV_DATA_DIR,
    ENV_EVAL_DIR,
    ENV_REPORT_URL,
    ENV_TORCH_THREADS,
    ENV_WAREHOUSE,
    active_config,
    corpus_export_dir,
)

ADAPT_JOB = "adapt_job"
"""Trains the adapted model(s) (declared when the profile has one): a model-loading run."""


def build_definitions(*, data_dir: Path = DEFAULT_DATA_DIR, corpus_dir: Path | None = None,
                      models: Sequence[ModelSpec] | None = None,
                      eval_dir: Path = DEFAULT_EVAL_DIR, location: str | None = None,
                      torch_threads: int | None = None,
                      report_url: str = ReportSite().base_url,
                      corpus_freshness: timedelta = CORPUS_FRESHNESS,
                      compute: ComputeSettings | None = None) -> dg.Definitions:
    """The project's definitions, models and chunkers of the active profile of
    ``rag_pipeline.toml`` (:func:`~rag_pipeline.project_paths.active_config`) unless ``models``
    is given. ``models[0]`` is the default model (and the chunk tokenizer);
    ``corpus_dir`` defaults to the bundled Python Language Reference, exported on first use into
    ``<data_dir>/corpus/python-reference``;
    ``location`` is where the Parquet tables live (default ``<data_dir>/warehouse``, or an
    ``s3://`` URI); ``torch_threads`` defaults to the cores each run's process is given;
    ``report_url`` is where ``rag-pipeline serve`` answers (the evaluation links its report);
    ``corpus_freshness`` is how old ``documents`` may get before it fails its freshness policy;
    ``compute`` is where embeddings runs compute (default: the configuration's ``[compute]``)."""
    models = tuple(models) if models else declared_models(active_config())
    compute = compute or active_config().compute
    jobs = build_index_jobs()
    adapted = build_adapted_model_asset(models)
    adapt_jobs = [] if adapted is None else [dg.define_asset_job(
        ADAPT_JOB, selection=["adapted_model"], tags={COMPUTE_TAG: "model", STAGE_TAG: "models"},
        description="Train the adapted model(s) on pairs made from the corpus.")]
    return dg.Definitions(
        assets=catalogued([documents, build_chunks_asset(models[0]), bm25_stats,
                           build_embeddings_asset(models), build_ann_index_asset(models),
                           build_index_generation_asset(models),
                           build_retrieval_eval_asset(models)]
                          + ([adapted] if adapted is not None else []),
                          corpus_freshness=corpus_freshness),
        jobs=[*jobs, *adapt_jobs],
        schedules=[nightly_index],
        sensors=[build_corpus_watch(DOCUMENTS_JOB, ACTIVE_STATUSES),
                 build_index_automation(chunker_partitions.get_partition_keys(), models, jobs)],
        # Every job is one chain of steps: a run is one process (no process per step to start,
        # and a run killed with its process leaves no orphaned step behind).
        executor=dg.in_process_executor,
        resources={
            "storage": IndexStorage(data_dir=str(data_dir), location=location),
            "compute": RunCompute(torch_threads=torch_threads, engine=compute.engine.value,
                                  address=compute.address, shard_texts=compute.shard_texts),
            "corpus": CorpusSource(path=str(corpus_dir or corpus_export_dir(data_dir)),
                                   python_reference=corpus_dir is None),
            "eval_sets": EvalSets(gold_path=str(eval_dir / "gold.jsonl"),
                                  ood_path=str(eval_dir / "ood.jsonl")),
            "report_site": ReportSite(base_url=report_url),
        },
    )


def definitions_from_environment(environ: Mapping[str, str]) -> dg.Definitions:
    """The definitions a code server or a run worker loads: data folder, warehouse location,
    corpus, gold sets, profile, torch threads and the serve URL from ``RAG_PIPELINE_*`` variables
    (unset: the configuration file's ``[index] corpus`` / ``data_dir``, else the project
    defaults), so the UI, the daemon, the nightly schedule and ``rag-pipeline index`` all build
    the same index."""
    threads = environ.get(ENV_TORCH_THREADS) or None
    if threads is not None and not threads.strip().isdigit():
        raise ValueError(f"{ENV_TORCH_THREADS} must be a whole number, not {threads!r}")
    config = active_config(environ)
    corpus = environ.get(ENV_CORPUS) or config.corpus
    data_dir = environ.get(ENV_DATA_DIR) or config.data_dir or DEFAULT_DATA_DIR
    return build_definitions(data_dir=Path(data_dir).absolute(),
                             corpus_dir=Path(corpus).absolute() if corpus else None,
                             eval_dir=Path(environ.get(ENV_EVAL_DIR) or DEFAULT_EVAL_DIR),
                             location=environ.get(ENV_WAREHOUSE) or None,
                             torch_threads=int(threads) if threads else None,
                             report_url=environ.get(ENV_REPORT_URL) or ReportSite().base_url)


defs = definitions_from_environment(os.environ)
