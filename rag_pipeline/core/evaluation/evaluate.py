"""The retrieval evaluation: no generation, only where the needle-holding chunk ranks.

For every chunker x retriever: the rank of the first chunk whose ``content`` holds the whole
needle, Recall@1/4/8/20 with Wilson 95 % intervals, MRR, and the needles no chunk holds whole
("answers destroyed" by chunking). Paired comparisons count wins and losses on the same queries
and test the discordant pairs with an exact sign test. The refusal sweep runs the gate over a
range of cuts, in-domain and out-of-domain (:mod:`rag_pipeline.core.evaluation.gate_sweep`),
over the runs of :mod:`rag_pipeline.core.evaluation.catalogue`. This module holds the report's
rows and the driver, :func:`evaluate`.

Every ranking is scored on the exact dense path (the figures, refusal signals included, are the
exact ones whatever the partition's size); when a partition has an ANN index, the same queries
are also ranked on the ANN path and its recall against the exact path is reported
(:class:`AnnCheck`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rag_pipeline.core.answer.gate import MAX_SOURCES
from rag_pipeline.core.answer.refusal import (
    RefusalSignal,
    budget_cut,
    refusal_signals,
)
from rag_pipeline.core.config.gold_file import OodLine
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.evaluation.catalogue import (
    PRODUCTION_CHUNKER,
    RunKey,
    candidate_pairs,
    default_pairs,
    default_runs,
)
from rag_pipeline.core.evaluation.gate_sweep import (
    CUT_RULE,
    GateCvRow,
    SweepRow,
    gate_cross_validation,
    recommend_cut,
    refusal_sweep,
)
from rag_pipeline.core.evaluation.gold import GoldError, GoldQuery, QueryStyle, collapse
from rag_pipeline.core.evaluation.metrics import (
    first_hit_rank,
    mean_reciprocal_rank,
    paired_wins_losses,
    sign_test_p,
    summarise_recall,
)
from rag_pipeline.core.index.access import Readable, readable_rows
from rag_pipeline.core.index.ann import DensePath, recall_at_k
from rag_pipeline.core.index.bm25 import Bm25List
from rag_pipeline.core.index.store import PartitionIndex
from rag_pipeline.core.retrieval.retriever import (
    QueryVector,
    Ranking,
    RetrievalSettings,
    Retriever,
    bm25_top,
    retrieve,
)
from rag_pipeline.core.retrieval.sentences import SentenceIndex, best_sentence_distances

RECALL_KS = (1, 4, 8, 20)
PAIRED_KS = (4, 8, 20)
ALL_STYLES = "all"
"""The ``style`` of a row over every query; the other rows name a ``QueryStyle``."""
REPORT_STYLES = (ALL_STYLES, *(style.value for style in QueryStyle))

@dataclass(frozen=True)
class RankRow:
    chunker: str
    retriever: str
    query_id: str
    line_id: str
    style: str
    rank: int | None


@dataclass(frozen=True)
class SummaryRow:
    chunker: str
    retriever: str
    style: str
    """``all`` or a ``QueryStyle`` value."""
    queries: int
    recall: dict[int, float]
    ci95: dict[int, tuple[float, float]]
    mrr: float
    destroyed: int


def recall_with_interval(row: SummaryRow, k: int) -> str:
    """Recall@k with its Wilson 95 % interval, three decimals: ``0.750 [0.592, 0.858]``."""
    low, high = row.ci95[k]
    return f"{row.recall[k]:.3f} [{low:.3f}, {high:.3f}]"


@dataclass(frozen=True)
class PairedRow:
    a: str
    b: str
    style: str
    """``all`` or a ``QueryStyle`` value: the queries the pair was compared on."""
    k: int
    wins: int
    losses: int
    p: float


@dataclass
class EvalReport:
    queries: int
    ood_queries: int
    gold_errors: list[GoldError]
    destroyed: dict[str, list[str]]
    ranks: list[RankRow]
    summary: list[SummaryRow]
    paired: list[PairedRow]
    sweep: list[SweepRow]
    recommended_cut: float | None
    cut_rule: str
    timings: dict[str, float] = field(default_factory=dict)
    generations: dict[str, str] = field(default_factory=dict)
    """The published generation evaluated, per chunker."""
    sets: dict[str, str] = field(default_factory=dict)
    """The gold and out-of-domain files scored (:func:`~rag_pipeline.core.config.gold_file.
    eval_set_inputs`)."""
    gate_cv: list[GateCvRow] = field(default_factory=list)
    budget_cut: float | None = None
    """The refusal-budget rule's cut on the top distance, chosen over every query: what the
    cross-validation says to trust, fitted on all the data for production."""
    ann: list[AnnCheck] = field(default_factory=list)
    """Per chunker with an ANN index: its path against the exact one on the same queries."""
    skipped: str = ""
    """Why nothing was scored (no gold set for the evaluated corpus); empty when scored."""
    behind: tuple[str, ...] = ()
    """Chunkers left out: built from older documents than the ones scored
    (:func:`~rag_pipeline.core.evaluation.run.chunkers_behind`)."""


ANN_CHECK_K = 10


@dataclass(frozen=True)
class AnnCheck:
    """The ANN path against the exact path of one partition, on the same queries (gold and
    out-of-domain): the dense top ``k`` rows' recall, and how often the production ranking's
    kept sources (its first ``MAX_SOURCES`` hits) are the same rows in the same order."""

    chunker: str
    queries: int
    k: int
    dense_recall: float
    worst_recall: float
    same_sources: int


class BM25Lists:
    """Each question's BM25 list per chunker, analyzer and depth, made once: the evaluation's
    runs, the refusal sweep and the ANN check rank the same questions under settings that
    share them (:func:`~rag_pipeline.core.retrieval.retriever.bm25_top`, handed to
    :func:`~rag_pipeline.core.retrieval.retriever.retrieve` as ``bm25``)."""

    def __init__(self, indexes: Mapping[str, PartitionIndex],
                 readable: Mapping[str, Readable | None]) -> None:
        self.indexes = indexes
        self.readable = readable
        self._lists: dict[tuple[str, str, str, int], Bm25List] = {}

    def of(self, chunker: str, question: str, settings: RetrievalSettings) -> Bm25List | None:
        """The list ``retrieve`` would make for ``question`` under ``settings`` (None when the
        settings rank by dense vectors alone)."""
        if settings.retriever is Retriever.DENSE:
            return None
        key = (chunker, question, settings.analyzer.value, settings.depth)
        if key not in self._lists:
            self._lists[key] = bm25_top(self.indexes[chunker], question, settings,
                                        self.readable[chunker])
        return self._lists[key]


def ann_check(chunker: str, index: PartitionIndex, vectors: Sequence[QueryVector],
              texts: Sequence[str], settings: RetrievalSettings, k: int = ANN_CHECK_K,
              ranked: Sequence[Ranking | None] | None = None,
              bm25: BM25Lists | None = None) -> AnnCheck:
    """Ranks every query on both paths (``index`` must have an ANN index). ``ranked``: per
    query, its ranking under ``settings`` already made (None: not made); one made on the exact
    path is used as that path's instead of ranking the query again. ``bm25``: the BM25 lists
    already made for ``chunker``, which both paths share."""
    if bm25 is None or bm25.readable.get(chunker) is not None:
        # Both paths below rank over every row: lists made within an access mask do not fit.
        bm25 = BM25Lists({chunker: index}, {chunker: None})
    recalls, same = [], 0
    dense = replace(settings, retriever=Retriever.DENSE, depth=k, collapse_duplicates=False)
    for i, (vector, text) in enumerate(zip(vectors, texts, strict=True)):
        exact = retrieve(index, vector, text, replace(dense, dense_path=DensePath.EXACT))
        approximate = retrieve(index, vector, text, replace(dense, dense_path=DensePath.ANN))
        recalls.append(recall_at_k(np.array([h.row for h in approximate.hits], np.int64),
                                   np.array([h.row for h in exact.hits], np.int64),
                                   index.vectors, vector.vector))
        made = ranked[i] if ranked is not None else None
        listed = bm25.of(chunker, text, settings)
        full_exact = (made if made is not None and made.path is DensePath.EXACT else
                      retrieve(index, vector, text, replace(settings, dense_path=DensePath.EXACT),
                               bm25=listed))
        full_ann = retrieve(index, vector, text, replace(settings, dense_path=DensePath.ANN),
                            bm25=listed)
        same += ([h.row for h in full_exact.hits[:MAX_SOURCES]]
                 == [h.row for h in full_ann.hits[:MAX_SOURCES]])
    return AnnCheck(chunker, len(recalls), k, float(np.mean(recalls)) if recalls else 1.0,
                    min(recalls, default=1.0), same)



def rows_holding(index: PartitionIndex, needles: Sequence[str],
                 readable: Readable | None = None) -> dict[str, frozenset[int]]:
    """Per needle, the rows whose content holds it whole (white space collapsed once per row);
    with ``readable``, only rows among those."""
    contents = [collapse(content) for content in index.contents]
    return {needle: frozenset(row for row, content in enumerate(contents) if needle in content
                              and (readable is None or readable.mask[row]))
            for needle in needles}


def summarise(run: RunKey, ranks: Sequence[int | None], styles: Sequence[str],
              destroyed: int) -> list[SummaryRow]:
    """One row over every query, then one per style present."""
    rows = []
    for style in REPORT_STYLES:
        picked = [r for r, s in zip(ranks, styles, strict=True) if style in (ALL_STYLES, s)]
        if not picked:
            continue
        recall, ci = {}, {}
        for k in RECALL_KS:
            summary = summarise_recall(picked, k)
            recall[k], ci[k] = summary.recall, (summary.low, summary.high)
        rows.append(SummaryRow(run.chunker, run.retriever_label, style, len(picked), recall, ci,
                               mean_reciprocal_rank(picked), destroyed))
    return rows


def compare(a: RunKey, b: RunKey, ranks_a: Sequence[int | None], ranks_b: Sequence[int | None],
            styles: Sequence[str]) -> list[PairedRow]:
    """Sign tests of ``a`` against ``b`` over every query, then per style present."""
    rows = []
    for style in REPORT_STYLES:
        keep = [style in (ALL_STYLES, s) for s in styles]
        if not any(keep):
            continue
        pa_ = [r for r, k in zip(ranks_a, keep, strict=True) if k]
        pb_ = [r for r, k in zip(ranks_b, keep, strict=True) if k]
        for k in PAIRED_KS:
            wins, losses = paired_wins_losses(pa_, pb_, k)
            rows.append(PairedRow(a.label, b.label, style, k, wins, losses,
                                  sign_test_p(wins, losses)))
    return rows


def evaluate(indexes: Mapping[str, PartitionIndex], embedder: TextEmbedder,
             queries: Sequence[GoldQuery], ood: Sequence[OodLine], gold_errors: Sequence[GoldError],
             runs: Sequence[RunKey] | None = None,
             sentences: Mapping[str, SentenceIndex] | None = None,
             groups: frozenset[str] | None = None) -> EvalReport:
    """Runs every retrieval configuration over the gold queries, reported over all queries and
    per style, and the sweep and the gate's cross-validation over the production configuration
    (header, hybrid) when it was built. ``sentences`` (per chunker) is needed by candidates that
    score chunks by sentence, and adds the ``best_sentence`` refusal signal. ``groups``: score
    what a principal of those groups sees (every ranking within the rows they may read, on
    partitions labelled by ``[access]``)."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    sentences = sentences or {}
    runs = list(runs) if runs is not None else default_runs(sorted(indexes))
    texts = [q.text for q in queries] + [o.query for o in ood]
    vectors = embedder.embed(texts) if texts else []
    key = embedder.spec.key
    query_vectors = [QueryVector(key, v) for v in vectors[:len(queries)]]
    ood_vectors = [QueryVector(key, v) for v in vectors[len(queries):]]
    timings["embed_queries"] = time.perf_counter() - started

    t = time.perf_counter()
    styles = [q.style.value for q in queries]
    needles = sorted({q.needle for q in queries})
    readable = {c: readable_rows(index, groups) for c, index in indexes.items()}
    rows_by_chunker = {c: rows_holding(index, needles, readable[c]) for c, index in indexes.items()}
    destroyed = {c: sorted({q.line_id for q in queries if not rows_by_chunker[c][q.needle]})
                 for c in indexes}
    bm25 = BM25Lists(indexes, readable)
    rank_rows: list[RankRow] = []
    ranks_by_run: dict[RunKey, list[int | None]] = {}
    production = RunKey(PRODUCTION_CHUNKER, Retriever.HYBRID)
    production_rankings: list[Ranking] = []
    for run in runs:
        index = indexes[run.chunker]
        settings = run.settings()
        ranks = []
        for query, vector in zip(queries, query_vectors, strict=True):
            ranking = retrieve(index, vector, query.text, settings, sentences.get(run.chunker),
                               bm25=bm25.of(run.chunker, query.text, settings),
                               readable=readable[run.chunker])
            rank = first_hit_rank([h.row for h in ranking.hits],
                                  rows_by_chunker[run.chunker][query.needle].__contains__)
            ranks.append(rank)
            rank_rows.append(RankRow(run.chunker, run.retriever_label, query.query_id,
                                     query.line_id, query.style.value, rank))
            if run == production:
                production_rankings.append(ranking)
        ranks_by_run[run] = ranks
    timings["retrieve"] = time.perf_counter() - t

    summary = [row for run in runs if ranks_by_run[run]
               for row in summarise(run, ranks_by_run[run], styles, len(destroyed[run.chunker]))]
    paired = [row for a, b in [*default_pairs(runs), *candidate_pairs(runs)]
              for row in compare(a, b, ranks_by_run[a], ranks_by_run[b], styles)]

    sweep: list[SweepRow] = []
    gate_cv: list[GateCvRow] = []
    production_cut = None
    if production_rankings:
        t = time.perf_counter()
        index = indexes[PRODUCTION_CHUNKER]
        in_domain = [(ranking.hits, rows_by_chunker[PRODUCTION_CHUNKER][q.needle])
                     for ranking, q in zip(production_rankings, queries, strict=True)]
        settings = production.settings()
        ood_rankings = [retrieve(index, v, o.query, settings,
                                 bm25=bm25.of(PRODUCTION_CHUNKER, o.query, settings),
                                 readable=readable[PRODUCTION_CHUNKER])
                        for v, o in zip(ood_vectors, ood, strict=True)]
        ood_hits = [(r.hits, o) for r, o in zip(ood_rankings, ood, strict=True)]
        sweep = refusal_sweep(in_domain, ood_hits)
        timings["sweep"] = time.perf_counter() - t
        t = time.perf_counter()
        scorer = index.bm25[production.analyzer]
        sentence_index = sentences.get(PRODUCTION_CHUNKER)

        def signals_of(ranking: Ranking, vector: QueryVector, text: str):
            best = (best_sentence_distances(sentence_index, vector.vector)
                    if sentence_index is not None else None)
            return refusal_signals(ranking.distances, text, scorer, best,
                                   readable[PRODUCTION_CHUNKER])

        in_signals = [signals_of(r, v, q.text) for r, v, q in
                      zip(production_rankings, query_vectors, queries, strict=True)]
        ood_signals = [signals_of(r, v, o.query) for r, v, o in
                       zip(ood_rankings, ood_vectors, ood, strict=True)]
        if len({q.line_id for q in queries}) >= 2 and len(ood) >= 2:
            gate_cv = gate_cross_validation(in_domain, ood_hits, queries, in_signals, ood_signals)
        top = RefusalSignal.TOP_DISTANCE
        production_cut = budget_cut([s[top] for s in in_signals], [s[top] for s in ood_signals])
        timings["gate_cv"] = time.perf_counter() - t
    t = time.perf_counter()
    made = {PRODUCTION_CHUNKER: [*production_rankings, *ood_rankings]} if production_rankings else {}
    ann = [ann_check(chunker, index, [*query_vectors, *ood_vectors], texts, production.settings(),
                     ranked=made.get(chunker), bm25=bm25)
           for chunker, index in sorted(indexes.items()) if index.ann is not None and groups is None]
    if ann:
        timings["ann_check"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started
    return EvalReport(len(queries), len(ood), list(gold_errors), destroyed, rank_rows, summary,
                      paired, sweep, recommend_cut(sweep), CUT_RULE, timings,
                      gate_cv=gate_cv, budget_cut=production_cut, ann=ann)
