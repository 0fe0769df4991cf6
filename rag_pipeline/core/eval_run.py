"""Runs the evaluation against a built index: load gold sets, validate, evaluate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rag_pipeline.core.embedder import ModelSpec, load_embedder
from rag_pipeline.core.evaluation import (
    PRODUCTION_CHUNKER,
    EvalReport,
    candidate_runs,
    default_runs,
    evaluate,
)
from rag_pipeline.core.gold import load_gold, load_ood, validate_gold
from rag_pipeline.core.index_store import load_partition
from rag_pipeline.core.sentences import partition_sentences
from rag_pipeline.core.warehouse import Warehouse


def run_eval(data_dir: Path, model: ModelSpec, gold_path: Path, ood_path: Path,
             chunkers: Sequence[str] | None = None, candidates: bool = False,
             sentence_vectors: bool = False) -> EvalReport:
    """Evaluates every built chunker (or the given ones) of ``model``'s partitions.

    Args:
        candidates: Also run every candidate retrieval setting on the production chunker,
            each compared with the default by paired sign tests.
        sentence_vectors: Embed the production partition's sentences (cached under
            ``data/eval/sentences``), for the sentence candidates and the ``best_sentence``
            refusal signal; implied by ``candidates``.
    """
    warehouse = Warehouse(data_dir)
    documents = warehouse.read("documents", columns=["document_id", "canonical_text", "status"])
    canonical = {row["document_id"]: row["canonical_text"] for row in documents.to_pylist()
                 if row["status"] == "ok"}
    queries, errors = validate_gold(load_gold(gold_path), canonical)
    ood = load_ood(ood_path)
    built = sorted(p["chunker"] for p in warehouse.partitions("embeddings")
                   if p["model"] == model.key)
    selected = list(chunkers) if chunkers else built
    indexes = {c: load_partition(data_dir, c, model.key) for c in selected}
    embedder = load_embedder(model)
    runs = default_runs(sorted(indexes))
    sentences = {}
    if PRODUCTION_CHUNKER in indexes and (candidates or sentence_vectors):
        index = indexes[PRODUCTION_CHUNKER]
        sentences[PRODUCTION_CHUNKER] = partition_sentences(
            model.key, index.texts, index.contents, embedder.embed,
            Path(data_dir) / "eval" / "sentences")
        if candidates:
            runs += candidate_runs(PRODUCTION_CHUNKER)
    return evaluate(indexes, embedder, queries, ood, errors, runs, sentences)
