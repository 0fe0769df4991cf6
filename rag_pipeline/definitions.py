"""Everything Dagster loads: assets, checks, jobs, schedule, sensor and resources."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from rag_pipeline.assets.bm25_stats import bm25_stats
from rag_pipeline.assets.chunks import build_chunks_asset
from rag_pipeline.assets.documents import documents
from rag_pipeline.assets.embeddings import build_embeddings_asset
from rag_pipeline.assets.retrieval_eval import build_retrieval_eval_asset
from rag_pipeline.automation import build_index_jobs, index_automation, nightly_index
from rag_pipeline.core.models import ModelSpec
from rag_pipeline.core.project_config import declared_models
from rag_pipeline.partitions import embedding_partitions, model_partitions
from rag_pipeline.project_paths import DEFAULT_CORPUS_DIR, DEFAULT_DATA_DIR, DEFAULT_EVAL_DIR
from rag_pipeline.resources import CorpusSource, EvalSets, IndexStorage


def build_definitions(*, data_dir: Path = DEFAULT_DATA_DIR, corpus_dir: Path | None = None,
                      models: Sequence[ModelSpec] | None = None,
                      eval_dir: Path = DEFAULT_EVAL_DIR) -> dg.Definitions:
    """The project's definitions, models and chunkers as declared in ``rag_pipeline.toml``
    unless ``models`` is given. ``models[0]`` is the default model (and the chunk tokenizer);
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


defs = build_definitions()
