"""The retrieval evaluation: no generation, only where the needle-holding chunk ranks.

For every chunker x retriever: the rank of the first chunk whose ``content`` holds the whole
needle, Recall@1/4/8/20 with Wilson 95 % intervals, MRR, and the needles no chunk holds whole
("answers destroyed" by chunking). Paired comparisons count wins and losses on the same queries
and test the discordant pairs with an exact sign test. The refusal sweep runs the gate over a
range of cuts, in-domain and out-of-domain.

Every ranking is scored on the exact dense path (the figures, refusal signals included, are the
exact ones whatever the partition's size); when a partition has an ANN index, the same queries
are also ranked on the ANN path and its recall against the exact path is reported
(:class:`AnnCheck`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np

from rag_pipeline.core.answer.gate import MAX_SOURCES, apply_gate
from rag_pipeline.core.answer.refusal import (
    RefusalSignal,
    budget_cut,
    cases,
    cross_validate,
    cross_validate_combination,
    fold_of,
    refusal_signals,
)
from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.evaluation.gold import GoldError, GoldQuery, OodKind, OodLine, QueryStyle, collapse
from rag_pipeline.core.evaluation.metrics import (
    mean_reciprocal_rank,
    paired_wins_losses,
    sign_test_p,
    summarise_recall,
)
from rag_pipeline.core.index.ann import DensePath, recall_at_k
from rag_pipeline.core.index.store import PartitionIndex
from rag_pipeline.core.retrieval.fusion import Fusion
from rag_pipeline.core.retrieval.retriever import (
    DEFAULT_ANALYZER,
    DenseUnit,
    Hit,
    QueryVector,
    Ranking,
    RetrievalSettings,
    Retriever,
    retrieve,
)
from rag_pipeline.core.retrieval.sentences import SentenceIndex, best_sentence_distances
from rag_pipeline.core.text.analyzers import Analyzer

RECALL_KS = (1, 4, 8, 20)
PAIRED_KS = (4, 8, 20)
SWEEP_CUTS = tuple(round(0.45 + 0.025 * i, 3) for i in range(13))
PRODUCTION_CHUNKER = "header"
ALL_STYLES = "all"
"""The ``style`` of a row over every query; the other rows name a ``QueryStyle``."""
REPORT_STYLES = (ALL_STYLES, *(style.value for style in QueryStyle))

_H = Retriever.HYBRID
BEFORE = RetrievalSettings(_H, Analyzer.ENGLISH, fusion=Fusion.RRF, dense_weight=1.0)
"""The default before issue 11: English BM25 and plain RRF (k = 60) of dense and BM25."""
CANDIDATES: dict[str, RetrievalSettings] = {
    "before": BEFORE,
    "code": replace(BEFORE, analyzer=Analyzer.CODE),
    "rrf-dense2": replace(BEFORE, dense_weight=2.0),
    "rrf-dense3": replace(BEFORE, dense_weight=3.0),
    "minmax": replace(BEFORE, fusion=Fusion.MIN_MAX),
    "minmax-dense2": replace(BEFORE, fusion=Fusion.MIN_MAX, dense_weight=2.0),
    "rm3": replace(BEFORE, rm3_docs=10),
    "rocchio": replace(BEFORE, rocchio_docs=5),
    "rm3+rocchio": replace(BEFORE, rm3_docs=10, rocchio_docs=5),
    "sentence": replace(BEFORE, dense_unit=DenseUnit.SENTENCE),
    "chunk|sentence": replace(BEFORE, dense_unit=DenseUnit.CHUNK_OR_SENTENCE),
    "code+rrf-dense2": replace(BEFORE, analyzer=Analyzer.CODE, dense_weight=2.0),
    "code+minmax-dense2": replace(BEFORE, analyzer=Analyzer.CODE, fusion=Fusion.MIN_MAX,
                                  dense_weight=2.0),
    "code+minmax-dense2+chunk|sentence": replace(
        BEFORE, analyzer=Analyzer.CODE, fusion=Fusion.MIN_MAX, dense_weight=2.0,
        dense_unit=DenseUnit.CHUNK_OR_SENTENCE),
}
"""Switchable retrieval settings (``rag-pipeline eval --candidates``), each measured against
``before`` (the default before issue 11) by paired sign tests per query style. Each differs
from ``before`` in one idea, except the ``+`` combinations of ideas that won on their own."""


@dataclass(frozen=True)
class RunKey:
    """One way of retrieving: chunker, retriever, BM25 analyzer, duplicate collapse."""

    chunker: str
    retriever: Retriever
    analyzer: Analyzer = DEFAULT_ANALYZER
    collapse: bool = True
    candidate: str | None = None
    """A name in ``CANDIDATES``: that candidate's settings replace the fields above."""

    @property
    def retriever_label(self) -> str:
        if self.candidate is not None:
            return f"{self.retriever.value}[{self.candidate}]"
        label = self.retriever.value
        if self.retriever is not Retriever.DENSE and self.analyzer is not DEFAULT_ANALYZER:
            label += f"[{self.analyzer.value}]"
        if not self.collapse:
            label += "[no-collapse]"
        return label

    @property
    def label(self) -> str:
        return f"{self.chunker}/{self.retriever_label}"

    def settings(self) -> RetrievalSettings:
        """The run's settings, always on the exact dense path."""
        if self.candidate is not None:
            return replace(CANDIDATES[self.candidate], dense_path=DensePath.EXACT)
        return RetrievalSettings(retriever=self.retriever, analyzer=self.analyzer,
                                 collapse_duplicates=self.collapse, dense_path=DensePath.EXACT)


def beir_candidates() -> dict[str, RetrievalSettings]:
    """The default setting and every candidate a BEIR corpus can run (one document per unit,
    so no sentence vectors)."""
    return {"default": RetrievalSettings(),
            **{name: s for name, s in CANDIDATES.items() if s.dense_unit is DenseUnit.CHUNK}}


def candidate_run(chunker: str, name: str) -> RunKey:
    """The run of candidate ``name`` (a key of ``CANDIDATES``) on ``chunker``."""
    settings = CANDIDATES[name]
    return RunKey(chunker, settings.retriever, settings.analyzer, settings.collapse_duplicates,
                  candidate=name)


def candidate_runs(chunker: str = PRODUCTION_CHUNKER) -> list[RunKey]:
    return [candidate_run(chunker, name) for name in CANDIDATES]


def candidate_pairs(runs: Sequence[RunKey]) -> list[tuple[RunKey, RunKey]]:
    """The default hybrid run, then every other candidate, against ``before`` on its chunker."""
    present = set(runs)
    pairs = []
    for run in runs:
        before = candidate_run(run.chunker, "before")
        if before not in present or run == before:
            continue
        if run.candidate is not None or run == RunKey(run.chunker, Retriever.HYBRID):
            pairs.append((run, before))
    return pairs


def _other_analyzer() -> Analyzer:
    return next(a for a in Analyzer if a is not DEFAULT_ANALYZER)


def default_runs(chunkers: Sequence[str]) -> list[RunKey]:
    """Three retrievers for every chunker, plus, on the production chunker, the other BM25
    analyzer (alone and fused) and hybrid with duplicate collapse off."""
    runs = [RunKey(c, r) for c in chunkers for r in Retriever]
    if PRODUCTION_CHUNKER in chunkers:
        other = _other_analyzer()
        runs += [RunKey(PRODUCTION_CHUNKER, Retriever.BM25, other),
                 RunKey(PRODUCTION_CHUNKER, Retriever.HYBRID, other),
                 RunKey(PRODUCTION_CHUNKER, Retriever.HYBRID, collapse=False)]
    return runs


def default_pairs(runs: Sequence[RunKey]) -> list[tuple[RunKey, RunKey]]:
    """The comparisons that matter, where both sides were run."""
    h = Retriever.HYBRID
    other = _other_analyzer()
    header, blind = ChunkingStrategy.HEADER.value, ChunkingStrategy.BLIND.value
    wanted = [
        (RunKey(header, h), RunKey(blind, h)),
        (RunKey(header, h), RunKey(ChunkingStrategy.BOUNDARIES.value, h)),
        (RunKey(ChunkingStrategy.BLIND_OVERLAP.value, h), RunKey(blind, h)),
        (RunKey(ChunkingStrategy.HEADER_OVERLAP.value, h), RunKey(header, h)),
        (RunKey(header, h), RunKey(header, Retriever.DENSE)),
        (RunKey(header, h), RunKey(header, Retriever.BM25)),
        (RunKey(header, h), RunKey(header, h, collapse=False)),
        (RunKey(header, Retriever.BM25, other), RunKey(header, Retriever.BM25)),
        (RunKey(header, h, other), RunKey(header, h)),
    ]
    present = set(runs)
    return [(a, b) for a, b in wanted if a in present and b in present]


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


@dataclass(frozen=True)
class SweepRow:
    cut: float
    in_correct: int
    in_wrong: int
    in_refused: int
    ood_bluffs: int
    ood_bluffs_near: int
    ood_bluffs_off: int
    ood_total: int

    @property
    def right_outcomes(self) -> int:
        """In-domain answered with a correct chunk plus out-of-domain refused."""
        return self.in_correct + (self.ood_total - self.ood_bluffs)


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
    gate_cv: list[GateCvRow] = field(default_factory=list)
    budget_cut: float | None = None
    """The refusal-budget rule's cut on the top distance, chosen over every query: what the
    cross-validation says to trust, fitted on all the data for production."""
    ann: list[AnnCheck] = field(default_factory=list)
    """Per chunker with an ANN index: its path against the exact one on the same queries."""
    skipped: str = ""
    """Why nothing was scored (no gold set for the evaluated corpus); empty when scored."""


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


def ann_check(chunker: str, index: PartitionIndex, vectors: Sequence[QueryVector],
              texts: Sequence[str], settings: RetrievalSettings, k: int = ANN_CHECK_K) -> AnnCheck:
    """Ranks every query on both paths (``index`` must have an ANN index)."""
    recalls, same = [], 0
    dense = replace(settings, retriever=Retriever.DENSE, depth=k, collapse_duplicates=False)
    for vector, text in zip(vectors, texts, strict=True):
        exact = retrieve(index, vector, text, replace(dense, dense_path=DensePath.EXACT))
        approximate = retrieve(index, vector, text, replace(dense, dense_path=DensePath.ANN))
        recalls.append(recall_at_k(np.array([h.row for h in approximate.hits], np.int64),
                                   np.array([h.row for h in exact.hits], np.int64)))
        full_exact = retrieve(index, vector, text, replace(settings, dense_path=DensePath.EXACT))
        full_ann = retrieve(index, vector, text, replace(settings, dense_path=DensePath.ANN))
        same += ([h.row for h in full_exact.hits[:MAX_SOURCES]]
                 == [h.row for h in full_ann.hits[:MAX_SOURCES]])
    return AnnCheck(chunker, len(recalls), k, float(np.mean(recalls)) if recalls else 1.0,
                    min(recalls, default=1.0), same)


CUT_RULE = ("the cut with the most right outcomes (in-domain queries answered with a correct "
            "chunk + out-of-domain queries refused); ties go to the stricter (lower) cut")


def rows_holding(index: PartitionIndex, needles: Sequence[str]) -> dict[str, frozenset[int]]:
    """Per needle, the rows whose content holds it whole (white space collapsed once per row)."""
    contents = [collapse(content) for content in index.contents]
    return {needle: frozenset(row for row, content in enumerate(contents) if needle in content)
            for needle in needles}


def first_hit_rank(hits: Sequence[Hit], rows: frozenset[int]) -> int | None:
    for rank, hit in enumerate(hits, start=1):
        if hit.row in rows:
            return rank
    return None


class GateOutcome(StrEnum):
    """What the gate did with an in-domain query."""

    CORRECT = "correct"
    """Answered, and a kept chunk holds the needle."""
    WRONG = "wrong"
    """Answered from chunks none of which holds the needle."""
    REFUSED = "refused"


def gate_outcome(hits: Sequence[Hit], rows: frozenset[int], cut: float,
                 max_sources: int = MAX_SOURCES) -> GateOutcome:
    """Refused, correct (a kept chunk holds the needle) or wrong."""
    decision = apply_gate([h.cosine_distance for h in hits], cut, max_sources)
    if not decision.answered:
        return GateOutcome.REFUSED
    if any(hits[i].row in rows for i in decision.kept):
        return GateOutcome.CORRECT
    return GateOutcome.WRONG


def refusal_sweep(in_domain: Sequence[tuple[Sequence[Hit], frozenset[int]]],
                  ood: Sequence[tuple[Sequence[Hit], OodLine]],
                  cuts: Sequence[float] = SWEEP_CUTS) -> list[SweepRow]:
    rows = []
    for cut in cuts:
        outcomes = [gate_outcome(hits, needle, cut) for hits, needle in in_domain]
        bluffs = [line for hits, line in ood
                  if apply_gate([h.cosine_distance for h in hits], cut).answered]
        rows.append(SweepRow(cut, outcomes.count(GateOutcome.CORRECT),
                             outcomes.count(GateOutcome.WRONG), outcomes.count(GateOutcome.REFUSED),
                             len(bluffs), sum(1 for b in bluffs if b.kind is OodKind.NEAR),
                             sum(1 for b in bluffs if b.kind is OodKind.OFF), len(ood)))
    return rows


def recommend_cut(sweep: Sequence[SweepRow]) -> float | None:
    if not sweep:
        return None
    best = max(row.right_outcomes for row in sweep)
    return min(row.cut for row in sweep if row.right_outcomes == best)


@dataclass(frozen=True)
class GateCvRow:
    """A gate cross-validated on two folds: held-out refusals, correct answers and bluffs."""

    signal: str
    rule: str
    cut_fold0: float
    """The cut chosen on fold 1 and applied to fold 0."""
    cut_fold1: float
    in_total: int
    in_refused: int
    in_correct: int
    ood_total: int
    ood_bluffs: int


RULE_RIGHT_OUTCOMES = "right-outcomes"
RULE_BUDGET = "refusal-budget"


def _sweep_cut(in_domain: Sequence[tuple[Sequence[Hit], frozenset[int]]],
               ood: Sequence[tuple[Sequence[Hit], OodLine]]) -> float:
    cut = recommend_cut(refusal_sweep(in_domain, ood))
    if cut is None:
        raise ValueError("no sweep to choose a cut on")
    return cut


def gate_cross_validation(in_domain: Sequence[tuple[Sequence[Hit], frozenset[int]]],
                          ood: Sequence[tuple[Sequence[Hit], OodLine]],
                          queries: Sequence[GoldQuery],
                          signals: Sequence[Mapping[RefusalSignal, float]],
                          ood_signals: Sequence[Mapping[RefusalSignal, float]]) -> list[GateCvRow]:
    """Today's gate with today's rule (the sweep's most right outcomes, its own keep-under-cut
    semantics), then every signal with the refusal-budget rule (answer iff signal < cut, keep
    the first ``MAX_SOURCES`` hits), each by 2-fold cross-validation."""
    in_fold = fold_of([q.line_id for q in queries])
    ood_fold = fold_of([line.id for _, line in ood])
    folds = [in_fold[q.line_id] for q in queries]
    folds_ood = [ood_fold[line.id] for _, line in ood]
    rows = []
    cuts, refused, correct, bluffs = [], 0, 0, 0
    for held_out in (0, 1):
        train_in = [case for case, f in zip(in_domain, folds, strict=True) if f != held_out]
        train_ood = [case for case, f in zip(ood, folds_ood, strict=True) if f != held_out]
        cut = _sweep_cut(train_in, train_ood)
        cuts.append(cut)
        test_in = [case for case, f in zip(in_domain, folds, strict=True) if f == held_out]
        test_ood = [case for case, f in zip(ood, folds_ood, strict=True) if f == held_out]
        (row,) = refusal_sweep(test_in, test_ood, (cut,))
        refused, correct, bluffs = (refused + row.in_refused, correct + row.in_correct,
                                    bluffs + row.ood_bluffs)
    rows.append(GateCvRow(RefusalSignal.TOP_DISTANCE.value, RULE_RIGHT_OUTCOMES, cuts[0], cuts[1],
                          len(in_domain), refused, correct, len(ood), bluffs))
    ranks = [first_hit_rank(hits, needle) for hits, needle in in_domain]
    answerable = [rank is not None and rank <= MAX_SOURCES for rank in ranks]
    for signal in RefusalSignal:
        if not signals or signal not in signals[0]:
            continue
        cv = cross_validate(cases(signals, folds, signal, answerable),
                            cases(ood_signals, folds_ood, signal))
        rows.append(GateCvRow(signal.value, RULE_BUDGET, cv.cuts[0], cv.cuts[1], cv.in_total,
                              cv.in_refused, cv.in_correct, cv.ood_total, cv.ood_bluffs))
    for second in RefusalSignal:
        if second is RefusalSignal.TOP_DISTANCE or not signals or second not in signals[0]:
            continue
        cv, (w0, w1) = cross_validate_combination(signals, folds, answerable, ood_signals,
                                                  folds_ood, RefusalSignal.TOP_DISTANCE, second)
        rows.append(GateCvRow(f"top_distance+w*{second.value} (w {w0:g} / {w1:g})", RULE_BUDGET,
                              cv.cuts[0], cv.cuts[1], cv.in_total, cv.in_refused, cv.in_correct,
                              cv.ood_total, cv.ood_bluffs))
    return rows


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
             sentences: Mapping[str, SentenceIndex] | None = None) -> EvalReport:
    """Runs every retrieval configuration over the gold queries, reported over all queries and
    per style, and the sweep and the gate's cross-validation over the production configuration
    (header, hybrid) when it was built. ``sentences`` (per chunker) is needed by candidates that
    score chunks by sentence, and adds the ``best_sentence`` refusal signal."""
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
    rows_by_chunker = {c: rows_holding(index, needles) for c, index in indexes.items()}
    destroyed = {c: sorted({q.line_id for q in queries if not rows_by_chunker[c][q.needle]})
                 for c in indexes}
    rank_rows: list[RankRow] = []
    ranks_by_run: dict[RunKey, list[int | None]] = {}
    production = RunKey(PRODUCTION_CHUNKER, Retriever.HYBRID)
    production_rankings: list[Ranking] = []
    for run in runs:
        index = indexes[run.chunker]
        ranks = []
        for query, vector in zip(queries, query_vectors, strict=True):
            ranking = retrieve(index, vector, query.text, run.settings(), sentences.get(run.chunker))
            rank = first_hit_rank(ranking.hits, rows_by_chunker[run.chunker][query.needle])
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
        ood_rankings = [retrieve(index, v, o.query, production.settings())
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
            return refusal_signals(ranking.distances, text, scorer, best)

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
    ann = [ann_check(chunker, index, [*query_vectors, *ood_vectors], texts, production.settings())
           for chunker, index in sorted(indexes.items()) if index.ann is not None]
    if ann:
        timings["ann_check"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started
    return EvalReport(len(queries), len(ood), list(gold_errors), destroyed, rank_rows, summary,
                      paired, sweep, recommend_cut(sweep), CUT_RULE, timings,
                      gate_cv=gate_cv, budget_cut=production_cut, ann=ann)
