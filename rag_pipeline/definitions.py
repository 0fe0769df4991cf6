"""Everything Dagster loads: assets, checks, jobs, schedule, sensor and resources."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import dagster as dg

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.embedding.compute import ComputeSettings
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.ingest.sources import mirrors_dir
from rag_pipeline.orchestration.assets.access import build_access_asset
from rag_pipeline.orchestration.assets.adapted_model import build_adapted_model_asset
from rag_pipeline.orchestration.assets.ann_index import build_ann_index_asset
from rag_pipeline.orchestration.assets.bm25_stats import build_bm25_stats_asset
from rag_pipeline.orchestration.assets.chunks import build_chunks_asset
from rag_pipeline.orchestration.assets.documents import documents
from rag_pipeline.orchestration.assets.embeddings import build_embeddings_asset
from rag_pipeline.orchestration.assets.index_generation import build_index_generation_asset
from rag_pipeline.orchestration.assets.retrieval_eval import build_retrieval_eval_asset
from rag_pipeline.orchestration.automation import (
    ACTIVE_STATUSES,
    COMPUTE_TAG,
    DOCUMENTS_JOB,
    JOB_OF_STAGE,
    STAGE_TAG,
    build_index_automation,
    build_index_jobs,
    nightly_index,
)
from rag_pipeline.orchestration.catalog import CORPUS_FRESHNESS, catalogued
from rag_pipeline.orchestration.corpus_watch import WATCH_INTERVAL_SECONDS, build_corpus_watch
from rag_pipeline.orchestration.resources import CorpusSource, EvalSets, IndexStorage, ReportSite, RunCompute
from rag_pipeline.project_paths import (
    DEFAULT_DATA_DIR,
    DEFAULT_EVAL_DIR,
    ENV_CONFIG,
    ENV_CORPUS,
    ENV_PROFILE,
    ENV_REPORT_URL,
    ENV_TORCH_THREADS,
    ENV_WATCH_INTERVAL,
    corpus_export_dir,
    resolve_context,
)

ADAPT_JOB = "adapt_job"
"""Trains the adapted model(s) (declared when the profile has one): a model-loading run."""


def definitions_of(build: BuildContext, *, torch_threads: int | None = None,
                   report_url: str = ReportSite().base_url,
                   corpus_freshness: timedelta = CORPUS_FRESHNESS,
                   watch_interval: int = WATCH_INTERVAL_SECONDS) -> dg.Definitions:
    """The project's definitions for one build: ``build``'s chunkers x models are the
    partitions, its warehouse, corpus and gold sets the resources.

    Args:
        build: What is built (see :func:`~rag_pipeline.project_paths.resolve_context`).
        torch_threads: The threads a run's model may use (default: the cores its process is
            given).
        report_url: Where ``rag-pipeline serve`` answers (the evaluation links its report).
        corpus_freshness: How old ``documents`` may get before it fails its freshness policy.
        watch_interval: Seconds between the corpus watch's looks at the source (a folder's
            listing, a bucket's ETags, a git ref's commit).
    """
    models = build.models
    jobs = build_index_jobs()
    adapted = build_adapted_model_asset(models)
    adapt_jobs = [] if adapted is None else [dg.define_asset_job(
        ADAPT_JOB, selection=["adapted_model"], tags={COMPUTE_TAG: "model", STAGE_TAG: "models"},
        description="Train the adapted model(s) on pairs made from the corpus.")]
    return dg.Definitions(
        assets=catalogued([documents, build_chunks_asset(build), build_bm25_stats_asset(build),
                           build_access_asset(build),
                           build_embeddings_asset(build), build_ann_index_asset(build),
                           build_index_generation_asset(build),
                           build_retrieval_eval_asset(build)]
                          + ([adapted] if adapted is not None else []),
                          corpus_freshness=corpus_freshness),
        jobs=[*jobs, *adapt_jobs],
        schedules=[nightly_index],
        sensors=[build_corpus_watch(DOCUMENTS_JOB, ACTIVE_STATUSES, watch_interval),
                 build_index_automation(list(build.chunker_keys), models,
                                        [job for job in jobs if job.name in JOB_OF_STAGE.values()],
                                        gold_path=build.gold_path, ood_path=build.ood_path,
                                        rules=build.rules_in_force,
                                        commands=build.commands_in)],
        # Every job is one chain of steps: a run is one process (no process per step to start,
        # and a run killed with its process leaves no orphaned step behind).
        executor=dg.in_process_executor,
        resources={
            "storage": IndexStorage.of(build.warehouse),
            "compute": RunCompute(torch_threads=torch_threads, engine=build.compute.engine.value,
                                  address=build.compute.address,
                                  shard_texts=build.compute.shard_texts),
            "corpus": CorpusSource(path=str(build.corpus), python_reference=build.python_reference,
                                   cache_dir=str(mirrors_dir(build.data_dir)),
                                   max_document_bytes=build.max_document_bytes,
                                   max_document_seconds=build.max_document_seconds),
            "eval_sets": EvalSets(gold_path=str(build.gold_path), ood_path=str(build.ood_path)),
            "report_site": ReportSite(base_url=report_url),
        },
    )


def build_definitions(*, data_dir: Path = DEFAULT_DATA_DIR, corpus_dir: Path | str | None = None,
                      models: Sequence[ModelSpec] | None = None,
                      eval_dir: Path = DEFAULT_EVAL_DIR, location: str | None = None,
                      torch_threads: int | None = None,
                      report_url: str = ReportSite().base_url,
                      corpus_freshness: timedelta = CORPUS_FRESHNESS,
                      environ: Mapping[str, str] = os.environ,
                      watch_interval: int = WATCH_INTERVAL_SECONDS,
                      compute: ComputeSettings | None = None) -> dg.Definitions:
    """The definitions for these folders (tests and benchmarks): the chunkers and models of the
    profile the configuration ``environ`` names would build (``RAG_PIPELINE_CONFIG`` /
    ``RAG_PIPELINE_PROFILE``, read when called), or exactly ``models`` when given (``models[0]``
    is the default model and the chunk tokenizer); ``corpus_dir`` defaults to the bundled Python
    Language Reference, exported on first use into ``<data_dir>/corpus/python-reference``, and
    may be a source URI (``s3://bucket/prefix``, ``git+file:///repo@ref``);
    ``location`` is where the Parquet tables live (default ``<data_dir>/warehouse``);
    ``compute`` where embeddings runs compute (default: the configuration's ``[compute]``)."""
    build = resolve_context({k: v for k, v in environ.items()
                             if k in (ENV_CONFIG, ENV_PROFILE, ENV_CORPUS)},
                            data_dir=Path(data_dir), location=location, models=models or None)
    corpus = (corpus_dir if isinstance(corpus_dir, str) else Path(corpus_dir)) if corpus_dir \
        else corpus_export_dir(data_dir)
    build = replace(build, corpus=corpus, compute=compute or build.compute,
                    python_reference=corpus_dir is None, eval_dir=Path(eval_dir))
    return definitions_of(build, torch_threads=torch_threads, report_url=report_url,
                          corpus_freshness=corpus_freshness, watch_interval=watch_interval)


def definitions_from_environment(environ: Mapping[str, str],
                                 build: BuildContext | None = None) -> dg.Definitions:
    """The definitions a code server or a run worker loads: the build
    :func:`~rag_pipeline.project_paths.resolve_context` reads from ``RAG_PIPELINE_*`` variables
    (unset: the configuration file's ``[index] corpus`` / ``data_dir``, else the project
    defaults), torch threads and the serve URL, so the UI, the daemon, the nightly schedule and
    ``rag-pipeline index`` all build the same index. ``build``: that build, already resolved
    from ``environ`` (``rag-pipeline index``, which runs the runs itself with no daemon)."""
    threads = environ.get(ENV_TORCH_THREADS) or None
    if threads is not None and not threads.strip().isdigit():
        raise ValueError(f"{ENV_TORCH_THREADS} must be a whole number, not {threads!r}")
    interval = environ.get(ENV_WATCH_INTERVAL) or None
    if interval is not None and not interval.strip().isdigit():
        raise ValueError(f"{ENV_WATCH_INTERVAL} must be a whole number of seconds, not {interval!r}")
    return definitions_of(build or resolve_context(environ),
                          torch_threads=int(threads) if threads else None,
                          report_url=environ.get(ENV_REPORT_URL) or ReportSite().base_url,
                          watch_interval=int(interval) if interval else WATCH_INTERVAL_SECONDS)


defs = definitions_from_environment(os.environ)
