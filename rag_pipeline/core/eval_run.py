"""Runs the evaluation against a built index: load gold sets, validate, evaluate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rag_pipeline.core.documents import DocumentStatus
from rag_pipeline.core.embedder import ModelSpec, load_embedder
from rag_pipeline.core.evaluation import EvalReport, evaluate
from rag_pipeline.core.gold import load_gold, load_ood, validate_gold
from rag_pipeline.core.index_store import load_partition
from rag_pipeline.core.warehouse import Warehouse


def run_eval(data_dir: Path, model: ModelSpec, gold_path: Path, ood_path: Path,
             chunkers: Sequence[str] | None = None) -> EvalReport:
    """Evaluates every built chunker (or the given ones) of ``model``'s partitions."""
    warehouse = Warehouse(data_dir)
    documents = warehouse.read("documents", columns=["document_id", "canonical_text", "status"])
    canonical = {row["document_id"]: row["canonical_text"] for row in documents.to_pylist()
                 if row["status"] == DocumentStatus.OK}
    queries, errors = validate_gold(load_gold(gold_path), canonical)
    ood = load_ood(ood_path)
    built = sorted(p["chunker"] for p in warehouse.partitions("embeddings")
                   if p["model"] == model.key)
    selected = list(chunkers) if chunkers else built
    indexes = {c: load_partition(data_dir, c, model.key) for c in selected}
    return evaluate(indexes, load_embedder(model), queries, ood, errors)
