"""Runs the evaluation against a built index: load gold sets, validate, evaluate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rag_pipeline.core.config.gold_file import load_gold_set, load_ood
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.evaluation.catalogue import PRODUCTION_CHUNKER, candidate_runs, default_runs
from rag_pipeline.core.evaluation.evaluate import EvalReport, evaluate
from rag_pipeline.core.evaluation.gold import NoGoldSetError, check_corpus, validate_gold
from rag_pipeline.core.index.generations import current_generation, current_generations
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.ingest import DocumentStatus
from rag_pipeline.core.retrieval.sentences import partition_sentences
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse


def run_eval(warehouse: Warehouse, model: ModelSpec, gold_path: Path, ood_path: Path,
             chunkers: Sequence[str] | None = None, candidates: bool = False,
             sentence_vectors: bool = False) -> EvalReport:
    """Evaluates every published chunker (or the given ones) of ``model``'s partitions in
    ``warehouse``. A gold set written for another corpus scores nothing: the report is empty,
    with the reason in ``skipped`` (and the model is not loaded).

    Args:
        candidates: Also run every candidate retrieval setting on the production chunker,
            each compared with the default by paired sign tests.
        sentence_vectors: Embed the production partition's sentences (cached under
            ``data/eval/sentences``), for the sentence candidates and the ``best_sentence``
            refusal signal; implied by ``candidates``.
    """
    published = sorted(g.chunker for g in current_generations(warehouse) if g.model == model.key)
    if not published:
        raise IndexNotBuiltError(f"no published index for model {model.key}: run "
                                 "`rag-pipeline index` first")
    selected = list(chunkers) if chunkers else published
    indexes = {c: load_partition(warehouse, c, model.key) for c in selected}
    # The gold needles are validated against the corpus state the evaluated index was built from.
    documents_file = current_generation(warehouse, selected[0], model.key).files[DOCUMENTS]
    documents = warehouse.read_file(documents_file,
                                    columns=["document_id", "canonical_text", "status"])
    canonical = {row["document_id"]: row["canonical_text"] for row in documents.to_pylist()
                 if row["status"] == DocumentStatus.OK}
    generations = {c: index.generation for c, index in indexes.items()}
    gold = load_gold_set(gold_path)
    try:
        check_corpus(gold, canonical)
    except NoGoldSetError as exc:
        return EvalReport(0, 0, [], {}, [], [], [], [], None, "", {"total": 0.0}, generations,
                          skipped=str(exc))
    queries, errors = validate_gold(gold.lines, canonical)
    ood = load_ood(ood_path)
    embedder = load_embedder(model)
    runs = default_runs(sorted(indexes))
    sentences = {}
    if PRODUCTION_CHUNKER in indexes and (candidates or sentence_vectors):
        index = indexes[PRODUCTION_CHUNKER]
        sentences[PRODUCTION_CHUNKER] = partition_sentences(
            model.key, index.texts, index.contents, embedder.embed,
            warehouse.data_dir / "eval" / "sentences")
        if candidates:
            runs += candidate_runs(PRODUCTION_CHUNKER)
    report = evaluate(indexes, embedder, queries, ood, errors, runs, sentences)
    return replace(report, generations=generations)
