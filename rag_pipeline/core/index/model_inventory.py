"""Which models are declared, which have stored partitions, and which stored partitions belong
to a model that is no longer declared (``rag-pipeline models``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_pipeline.core.config.validation import InvalidArgumentError, check_model_key
from rag_pipeline.core.embedding.models import ModelMismatchError, ModelSpec, verify_model_files
from rag_pipeline.core.embedding.vector_cache import CACHE
from rag_pipeline.core.index.ann_index import CACHE_DIR as ANN_CACHE_DIR
from rag_pipeline.core.index.generations import current_generations, generation_dir
from rag_pipeline.core.index.mapped import MAP_CACHE_DIR, delete_copies
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.storage.warehouse import Warehouse

MODEL = "model"


@dataclass(frozen=True)
class ModelPartitions:
    """The stored partitions of one model key: embedding chunkers and other tables."""

    key: str
    declared: bool
    embedding_chunkers: tuple[str, ...]
    tables: tuple[str, ...]


def stored_by_model(warehouse: Warehouse) -> dict[str, dict[str, list[dict[str, str]]]]:
    """``model key -> table -> partitions`` for every table partitioned by model."""
    out: dict[str, dict[str, list[dict[str, str]]]] = {}
    for table in warehouse.tables():
        for partition in warehouse.partitions(table):
            if MODEL in partition:
                out.setdefault(partition[MODEL], {}).setdefault(table, []).append(partition)
    return out


def inventory(specs: Sequence[ModelSpec], warehouse: Warehouse) -> list[ModelPartitions]:
    """Declared models first (in declaration order), then undeclared keys found on disk."""
    stored = stored_by_model(warehouse)
    keys = [s.key for s in specs] + sorted(set(stored) - {s.key for s in specs})
    declared = {s.key for s in specs}
    return [ModelPartitions(
        key=key, declared=key in declared,
        embedding_chunkers=tuple(sorted(p["chunker"] for p in stored.get(key, {}).get(
            "embeddings", []))),
        tables=tuple(sorted(stored.get(key, {})))) for key in keys]


def file_status(spec: ModelSpec) -> str:
    """``ok`` when the model's files match its lock, otherwise the refusal's reason."""
    try:
        verify_model_files(spec)
    except (ModelMismatchError, FileNotFoundError) as exc:
        return str(exc)
    return "ok"


def drop_model_partitions(warehouse: Warehouse, key: str, specs: Sequence[ModelSpec]) -> int:
    """Deletes every stored partition of an undeclared model key, its vector cache, its
    generations and the data folder's local copies of their files; returns how many partitions.

    Raises:
        InvalidArgumentError: the key is not ``<name>@<8 hex digits>``, or no partition of it
            is stored.
        ModelMismatchError: the key is still declared (remove it from the configuration first).
    """
    check_model_key(key)
    if key in {s.key for s in specs}:
        raise ModelMismatchError(f"{key} is still declared: remove it from the configuration "
                                 "first, then drop its partitions")
    stored = stored_by_model(warehouse)
    cached = warehouse.list_files(f"{CACHE}/model={key}")
    generations = [g for g in current_generations(warehouse) if g.model == key]
    if key not in stored and not cached and not generations:
        raise InvalidArgumentError(f"no stored partition of model key {key!r}; stored keys: "
                                   f"{', '.join(sorted(stored)) or 'none'}")
    partitions = [warehouse.partition_dir(table, partition)
                  for table, partitions in stored.get(key, {}).items() for partition in partitions]
    folders = [*partitions, *(generation_dir(g.chunker, key) for g in generations),
               f"{CACHE}/model={key}"]
    files = [file for folder in folders for file in warehouse.delete_prefix(folder)]
    delete_copies(warehouse.data_dir, files, (MAP_CACHE_DIR, ANN_CACHE_DIR))
    if partitions:
        publish_query_db(warehouse)
    return len(partitions)
