"""Everything Dagster loads: assets, checks, jobs, schedule, sensor and resources."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path

import dagster as dg

from rag_pipeline.assets.bm25_stats import bm25_stats
from rag_pipeline.assets.chunks import build_chunks_asset
from rag_pipeline.assets.documents import documents
from rag_pipeline.assets.embeddings import build_embeddings_asset
from rag_pipeline.assets.index_generation import build_index_generation_asset
from rag_pipeline.assets.retrieval_eval import build_retrieval_eval_asset
from rag_pipeline.automation import build_index_automation, build_index_jobs, nightly_index
from rag_pipeline.catalog import CORPUS_FRESHNESS, catalogued
from rag_pipeline.core.models import ModelSpec
from rag_pipeline.core.project_config import declared_models, load_config
from rag_pipeline.partitions import chunker_partitions
from rag_pipeline.project_paths import (
    DEFAULT_CORPUS_DIR,
    DEFAULT_DATA_DIR,
    DEFAULT_EVAL_DIR,
    ENV_CORPUS,
    ENV_DATA_DIR,
    ENV_EVAL_DIR,
    ENV_REPORT_URL,
    ENV_TORCH_THREADS,
    ENV_WAREHOUSE,
    config_path,
)
from rag_pipeline.resources import CorpusSource, EvalSets, IndexStorage, ReportSite, RunCompute


def build_definitions(*, data_dir: Path = DEFAULT_DATA_DIR, corpus_dir: Path | None = None,
                      models: Sequence[ModelSpec] | None = None,
                      eval_dir: Path = DEFAULT_EVAL_DIR, location: str | None = None,
                      torch_threads: int | None = None,
                      report_url: str = ReportSite().base_url,
                      corpus_freshness: timedelta = CORPUS_FRESHNESS) -> dg.Definitions:
    """The project's definitions, models and chunkers as declared in ``rag_pipeline.toml``
    unless ``models`` is given. ``models[0]`` is the default model (and the chunk tokenizer);
    ``corpus_dir`` defaults to the bundled Python Language Reference, exported on first use;
    ``location`` is where the Parquet tables live (default ``<data_dir>/warehouse``, or an
    ``s3://`` URI); ``torch_threads`` defaults to the cores each run's process is given;
    ``report_url`` is where ``rag-pipeline serve`` answers (the evaluation links its report);
    ``corpus_freshness`` is how old ``documents`` may get before it fails its freshness policy."""
    models = tuple(models) if models else declared_models(load_config(config_path()))
    jobs = build_index_jobs()
    return dg.Definitions(
        assets=catalogued([documents, build_chunks_asset(models[0]), bm25_stats,
                           build_embeddings_asset(models), build_index_generation_asset(models),
                           build_retrieval_eval_asset(models)], corpus_freshness=corpus_freshness),
        jobs=jobs,
        schedules=[nightly_index],
        sensors=[build_index_automation(chunker_partitions.get_partition_keys(), models, jobs)],
        # Every job is one chain of steps: a run is one process (no process per step to start,
        # and a run killed with its process leaves no orphaned step behind).
        executor=dg.in_process_executor,
        resources={
            "storage": IndexStorage(data_dir=str(data_dir), location=location),
            "compute": RunCompute(torch_threads=torch_threads),
            "corpus": CorpusSource(path=str(corpus_dir or DEFAULT_CORPUS_DIR),
                                   python_reference=corpus_dir is None),
            "eval_sets": EvalSets(gold_path=str(eval_dir / "gold.jsonl"),
                                  ood_path=str(eval_dir / "ood.jsonl")),
            "report_site": ReportSite(base_url=report_url),
        },
    )


def definitions_from_environment(environ: Mapping[str, str]) -> dg.Definitions:
    """The definitions a code server or a run worker loads: data folder, warehouse location,
    corpus, gold sets, torch threads and the serve URL from ``RAG_PIPELINE_*`` variables (unset: the project
    defaults), so the UI, the daemon, the nightly schedule and ``rag-pipeline index`` all build
    the same index."""
    threads = environ.get(ENV_TORCH_THREADS) or None
    if threads is not None and not threads.strip().isdigit():
        raise ValueError(f"{ENV_TORCH_THREADS} must be a whole number, not {threads!r}")
    corpus = environ.get(ENV_CORPUS)
    return build_definitions(data_dir=Path(environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR).absolute(),
                             corpus_dir=Path(corpus).absolute() if corpus else None,
                             eval_dir=Path(environ.get(ENV_EVAL_DIR) or DEFAULT_EVAL_DIR),
                             location=environ.get(ENV_WAREHOUSE) or None,
                             torch_threads=int(threads) if threads else None,
                             report_url=environ.get(ENV_REPORT_URL) or ReportSite().base_url)


defs = definitions_from_environment(os.environ)
