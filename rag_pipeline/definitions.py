"""Everything Dagster loads: assets, checks, jobs, schedule, sensor and resources."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import dagster as dg

from rag_pipeline.assets.bm25_stats import bm25_stats
from rag_pipeline.assets.chunks import build_chunks_asset
from rag_pipeline.assets.documents import documents
from rag_pipeline.assets.embeddings import build_embeddings_asset
from rag_pipeline.assets.retrieval_eval import build_retrieval_eval_asset
from rag_pipeline.automation import build_index_jobs, index_automation, nightly_index
from rag_pipeline.core.embedder import ModelSpec, declared_models
from rag_pipeline.partitions import embedding_partitions, model_partitions
from rag_pipeline.project_paths import (
    CORPUS_VARIABLE,
    DATA_DIR_VARIABLE,
    DEFAULT_CORPUS_DIR,
    DEFAULT_DATA_DIR,
    DEFAULT_EVAL_DIR,
    EVAL_DIR_VARIABLE,
)
from rag_pipeline.resources import CorpusSource, EvalSets, IndexStorage


def build_definitions(*, data_dir: Path = DEFAULT_DATA_DIR, corpus_dir: Path | None = None,
                      models: Sequence[ModelSpec] | None = None,
                      eval_dir: Path = DEFAULT_EVAL_DIR) -> dg.Definitions:
    """The project's definitions. ``models[0]`` is the default model (and the chunk tokenizer);
    ``corpus_dir`` defaults to the bundled Python Language Reference, exported on first use."""
    models = tuple(models) if models else declared_models()
    return dg.Definitions(
        assets=[documents, build_chunks_asset(models[0]), bm25_stats,
                build_embeddings_asset(models), build_retrieval_eval_asset(models)],
        jobs=build_index_jobs(embedding_partitions(models), model_partitions(models)),
        schedules=[nightly_index],
        sensors=[index_automation],
        resources={
            "storage": IndexStorage(data_dir=str(data_dir)),
            "corpus": CorpusSource(path=str(corpus_dir or DEFAULT_CORPUS_DIR),
                                   python_reference=corpus_dir is None),
            "eval_sets": EvalSets(gold_path=str(eval_dir / "gold.jsonl"),
                                  ood_path=str(eval_dir / "ood.jsonl")),
        },
    )


def settings_from_environment(environ: Mapping[str, str] = os.environ) -> dict[str, Path]:
    """The code location's process edge: ``RAG_PIPELINE_DATA_DIR``, ``RAG_PIPELINE_CORPUS`` (a
    folder of documents) and ``RAG_PIPELINE_EVAL_DIR`` (gold.jsonl, ood.jsonl) override the
    defaults, so the UI, the daemon, the nightly schedule and ``rag-pipeline index
    --data-dir/--corpus`` all build the same index."""
    settings = {}
    if environ.get(DATA_DIR_VARIABLE):
        settings["data_dir"] = Path(environ[DATA_DIR_VARIABLE]).absolute()
    if environ.get(CORPUS_VARIABLE):
        settings["corpus_dir"] = Path(environ[CORPUS_VARIABLE]).absolute()
    if environ.get(EVAL_DIR_VARIABLE):
        settings["eval_dir"] = Path(environ[EVAL_DIR_VARIABLE]).absolute()
    return settings


defs = build_definitions(**settings_from_environment())
