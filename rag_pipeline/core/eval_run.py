"""Runs the evaluation against a built index: load gold sets, validate, evaluate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rag_pipeline.core.embedder import load_embedder
from rag_pipeline.core.evaluation import EvalReport, evaluate
from rag_pipeline.core.generations import current_generation, current_generations
from rag_pipeline.core.gold import load_gold, load_ood, validate_gold
from rag_pipeline.core.index_store import load_partition
from rag_pipeline.core.models import ModelSpec
from rag_pipeline.core.table_names import DOCUMENTS
from rag_pipeline.core.warehouse import IndexNotBuiltError, Warehouse


def run_eval(data_dir: Path, model: ModelSpec, gold_path: Path, ood_path: Path,
             chunkers: Sequence[str] | None = None, location: str | None = None) -> EvalReport:
    """Evaluates every built chunker (or the given ones) of ``model``'s partitions, reading the
    tables at ``location`` (default ``<data_dir>/warehouse``; see :class:`Warehouse`)."""
    warehouse = Warehouse(data_dir, location)
    published = sorted(g.chunker for g in current_generations(warehouse) if g.model == model.key)
    if not published:
        raise IndexNotBuiltError(f"no published index for model {model.key}: run "
                                 "`rag-pipeline index` first")
    selected = list(chunkers) if chunkers else published
    indexes = {c: load_partition(data_dir, c, model.key, location) for c in selected}
    # The gold needles are validated against the corpus state the evaluated index was built from.
    documents_file = current_generation(warehouse, selected[0], model.key).files[DOCUMENTS]
    documents = warehouse.read_file(documents_file,
                                    columns=["document_id", "canonical_text", "status"])
    canonical = {row["document_id"]: row["canonical_text"] for row in documents.to_pylist()
                 if row["status"] == "ok"}
    queries, errors = validate_gold(load_gold(gold_path), canonical)
    ood = load_ood(ood_path)
    report = evaluate(indexes, load_embedder(model), queries, ood, errors)
    return replace(report, generations={c: index.generation for c, index in indexes.items()})
