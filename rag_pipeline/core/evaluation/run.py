"""Runs the evaluation against a built index: load gold sets, validate, evaluate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from rag_pipeline.core.config.access import AccessPolicy
from rag_pipeline.core.config.gold_file import (
    GoldLine,
    check_apart,
    eval_set_inputs,
    load_gold_set,
    load_ood_if_any,
)
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.evaluation.catalogue import PRODUCTION_CHUNKER, candidate_runs, default_runs
from rag_pipeline.core.evaluation.evaluate import EvalReport, evaluate
from rag_pipeline.core.evaluation.gold import (
    NoGoldSetError,
    check_corpus,
    collapse,
    validate_gold,
)
from rag_pipeline.core.index.access import labelled
from rag_pipeline.core.index.generations import current_generation, current_generations
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.ingest import DocumentStatus
from rag_pipeline.core.ingest.extracted import Section
from rag_pipeline.core.ingest.formats import chunked_format
from rag_pipeline.core.retrieval.sentences import partition_sentences
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse


def gold_lines_for(lines: Sequence[GoldLine], canonical: Mapping[str, str],
                   policy: AccessPolicy | None, groups: frozenset[str] | None,
                   corpus_ids: Sequence[str] = ()) -> tuple[tuple[GoldLine, ...], dict[str, str]]:
    """The gold lines and documents a principal of ``groups`` is scored on: the documents they
    may read; a line whose ``groups`` shares one of theirs, or a line without ``groups`` whose
    needle is in one of those documents. Everything when ``groups`` or ``policy`` is None."""
    if groups is None or policy is None:
        return tuple(lines), dict(canonical)
    readers = policy.readers_by_document([*corpus_ids, *canonical])
    readable = {d: t for d, t in canonical.items() if not groups.isdisjoint(readers[d])}
    texts = [collapse(t) for t in readable.values()]
    kept = tuple(line for line in lines if (
        bool(set(line.groups) & groups) if line.groups
        else any(collapse(line.needle) in t for t in texts)))
    return kept, readable


ADAPTED_NOT_BUILT = ("it is a model adapted to the corpus: `rag-pipeline adapt` trains it, then "
                     "`rag-pipeline index` with a profile that lists it builds its partitions (the "
                     "bundled configuration's `--profile adapted`)")
"""What to do when an adapted model's partitions are asked for before they were built."""


def run_eval(warehouse: Warehouse, model: ModelSpec, gold_path: Path, ood_path: Path,
             chunkers: Sequence[str] | None = None, candidates: bool = False,
             sentence_vectors: bool = False, policy: AccessPolicy | None = None,
             groups: frozenset[str] | None = None) -> EvalReport:
    """Evaluates every published chunker (or the given ones) of ``model``'s partitions in
    ``warehouse``, as a principal of ``groups`` sees them under ``policy`` (None: everything).
    A gold set written for another corpus scores nothing: the report is empty, with the reason
    in ``skipped`` (and the model is not loaded).

    Args:
        candidates: Also run every candidate retrieval setting on the production chunker,
            each compared with the default by paired sign tests.
        sentence_vectors: Embed the production partition's sentences (cached under
            ``data/eval/sentences``), for the sentence candidates and the ``best_sentence``
            refusal signal; implied by ``candidates``.
        policy: The ``[access]`` rules the partitions are labelled by.
        groups: Score what these groups see: rankings within the rows they may read, and only
            the gold lines for them (a line's ``groups`` shares one, or a line without
            ``groups`` whose needle is in a document they read).
    """
    published = sorted(g.chunker for g in current_generations(warehouse) if g.model == model.key)
    if not published:
        hint = IndexNotBuiltError.HINT if model.adaptation is None else ADAPTED_NOT_BUILT
        raise IndexNotBuiltError(f"no published index for model {model.key} in the data folder "
                                 f"{warehouse.data_dir.absolute()}: {hint}")
    selected = list(chunkers) if chunkers else published
    behind = chunkers_behind(warehouse, model.key, selected)
    selected = [c for c in selected if c not in behind]
    indexes = {c: labelled(load_partition(warehouse, c, model.key), policy) for c in selected}
    # The gold needles are validated against the corpus state the evaluated index was built from.
    documents_file = current_generation(warehouse, selected[0], model.key).files[DOCUMENTS]
    documents = warehouse.read_file(
        documents_file, columns=["document_id", "canonical_text", "status", "format", "sections"])
    rows = [row for row in documents.to_pylist() if row["status"] == DocumentStatus.OK]
    generations = {c: index.generation for c, index in indexes.items()}
    sets = eval_set_inputs(gold_path, ood_path)
    gold = load_gold_set(gold_path)
    try:
        check_corpus(gold, [row["document_id"] for row in rows])
    except NoGoldSetError as exc:
        return EvalReport(0, 0, [], {}, [], [], [], [], None, "", {"total": 0.0}, generations,
                          skipped=str(exc), behind=tuple(behind))
    # A needle is checked against the texts chunks are cut from (not an archive's member list).
    searched = {row["document_id"]: row["canonical_text"] for row in rows
                if chunked_format(row["format"])}
    lines, canonical = gold_lines_for(gold.lines, searched, policy, groups,
                                      documents.column("document_id").to_pylist())
    sections = {row["document_id"]: [Section(**section) for section in row["sections"] or ()]
                for row in rows if row["document_id"] in canonical}
    queries, errors = validate_gold(lines, canonical, sections)
    ood = load_ood_if_any(ood_path)
    check_apart(gold, ood, ood_path)
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
    report = evaluate(indexes, embedder, queries, ood, errors, runs, sentences, groups)
    return replace(report, generations=generations, sets=sets, behind=tuple(behind))


def chunkers_behind(warehouse: Warehouse, model: str, chunkers: Sequence[str]) -> list[str]:
    """Those of ``chunkers`` whose served ``model`` generation was built from other documents
    than the latest documents table (another profile's chunkers, which the last ``index`` did
    not build): scored with them, a comparison would set two versions of the corpus side by
    side, and a gold line checked against one. When none of them is built from the latest
    documents, those built from the first one's are kept."""
    built_from = {}
    for chunker in chunkers:
        generation = current_generation(warehouse, chunker, model)
        if generation is not None:
            built_from[chunker] = generation.files.get(DOCUMENTS)
    latest = warehouse.version(DOCUMENTS)
    newest = latest.file if latest is not None and latest.file in built_from.values() \
        else next(iter(built_from.values()), None)
    return [c for c, documents in built_from.items() if documents != newest]


def evaluation_is_stale(warehouse: Warehouse, model: str) -> bool:
    """Whether ``model``'s evaluation tables scored another generation than a chunker serves
    now, or one built from older documents than the latest (a model another profile builds,
    which the last ``index`` neither built nor evaluated)."""
    from rag_pipeline.core.config.gold_file import EVAL_SET_INPUTS
    from rag_pipeline.core.index.plan import EVAL_SUMMARY

    scored = warehouse.version(EVAL_SUMMARY, {"model": model})
    if scored is None:
        return False
    latest = warehouse.version(DOCUMENTS)
    for chunker, generation_id in scored.inputs.items():
        if chunker in EVAL_SET_INPUTS:
            continue
        generation = current_generation(warehouse, chunker, model)
        if generation is None or generation.id != generation_id or (
                latest is not None and generation.files.get(DOCUMENTS) != latest.file):
            return True
    return False


def behind_note(behind: Sequence[str]) -> str:
    """The line that says which chunkers an evaluation left out (:func:`chunkers_behind`)."""
    return (f"not evaluated: {', '.join(behind)}: their served generations were built from "
            "older documents than the others' (an `index` whose profile builds them brings them "
            "up to date)")
