"""The retrieval evaluation: no generation, only where the needle-holding chunk ranks.

For every chunker x retriever: the rank of the first chunk whose ``content`` holds the whole
needle, Recall@1/4/8/20 with Wilson 95 % intervals, MRR, and the needles no chunk holds whole
("answers destroyed" by chunking). Paired comparisons count wins and losses on the same queries
and test the discordant pairs with an exact sign test. The refusal sweep runs the gate over a
range of cuts, in-domain and out-of-domain.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from rag_pipeline.core.analyzers import Analyzer
from rag_pipeline.core.chunking import DEFAULT_STRATEGY, ChunkingStrategy
from rag_pipeline.core.gate import MAX_SOURCES, apply_gate
from rag_pipeline.core.gold import GoldError, GoldQuery, OodKind, OodLine, collapse
from rag_pipeline.core.index_store import PartitionIndex
from rag_pipeline.core.metrics import (
    mean_reciprocal_rank,
    paired_wins_losses,
    sign_test_p,
    summarise_recall,
)
from rag_pipeline.core.models import TextEmbedder
from rag_pipeline.core.retrieval import (
    DEFAULT_ANALYZER,
    Hit,
    QueryVector,
    RetrievalSettings,
    Retriever,
    retrieve,
)

RECALL_KS = (1, 4, 8, 20)
PAIRED_KS = (4, 8, 20)
SWEEP_CUTS = tuple(round(0.45 + 0.025 * i, 3) for i in range(13))
PRODUCTION_CHUNKER = DEFAULT_STRATEGY.value


@dataclass(frozen=True)
class RunKey:
    """One way of retrieving: chunker, retriever, BM25 analyzer, duplicate collapse."""

    chunker: str
    retriever: Retriever
    analyzer: Analyzer = DEFAULT_ANALYZER
    collapse: bool = True

    @property
    def retriever_label(self) -> str:
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
        return RetrievalSettings(retriever=self.retriever, analyzer=self.analyzer,
                                 collapse_duplicates=self.collapse)


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
    queries: int
    recall: dict[int, float]
    ci95: dict[int, tuple[float, float]]
    mrr: float
    destroyed: int


@dataclass(frozen=True)
class PairedRow:
    a: str
    b: str
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


def summary_rows(runs: Sequence[RunKey], ranks_by_run: Mapping[RunKey, Sequence[int | None]],
                 destroyed: Mapping[str, Sequence[str]]) -> list[SummaryRow]:
    """Recall@k with Wilson intervals, MRR and destroyed answers, per run that ranked queries."""
    summary = []
    for run in runs:
        ranks = ranks_by_run[run]
        if not ranks:
            continue
        recall, ci = {}, {}
        for k in RECALL_KS:
            s = summarise_recall(ranks, k)
            recall[k], ci[k] = s.recall, (s.low, s.high)
        summary.append(SummaryRow(run.chunker, run.retriever_label, len(ranks), recall, ci,
                                  mean_reciprocal_rank(ranks), len(destroyed[run.chunker])))
    return summary


def paired_rows(runs: Sequence[RunKey],
                ranks_by_run: Mapping[RunKey, Sequence[int | None]]) -> list[PairedRow]:
    """Wins, losses and the exact sign test at each of ``PAIRED_KS`` for the default pairs."""
    paired = []
    for a, b in default_pairs(runs):
        for k in PAIRED_KS:
            wins, losses = paired_wins_losses(ranks_by_run[a], ranks_by_run[b], k)
            paired.append(PairedRow(a.label, b.label, k, wins, losses, sign_test_p(wins, losses)))
    return paired


def evaluate(indexes: Mapping[str, PartitionIndex], embedder: TextEmbedder,
             queries: Sequence[GoldQuery], ood: Sequence[OodLine], gold_errors: Sequence[GoldError],
             runs: Sequence[RunKey] | None = None) -> EvalReport:
    """Runs every retrieval configuration over the gold queries and the sweep over the
    production configuration (header, hybrid) when it was built."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    runs = list(runs) if runs is not None else default_runs(sorted(indexes))
    texts = [q.text for q in queries] + [o.query for o in ood]
    vectors = embedder.embed(texts) if texts else []
    key = embedder.spec.key
    query_vectors = [QueryVector(key, v) for v in vectors[:len(queries)]]
    ood_vectors = [QueryVector(key, v) for v in vectors[len(queries):]]
    timings["embed_queries"] = time.perf_counter() - started

    t = time.perf_counter()
    needles = sorted({q.needle for q in queries})
    rows_by_chunker = {c: rows_holding(index, needles) for c, index in indexes.items()}
    destroyed = {c: sorted({q.line_id for q in queries if not rows_by_chunker[c][q.needle]})
                 for c in indexes}
    rank_rows: list[RankRow] = []
    ranks_by_run: dict[RunKey, list[int | None]] = {}
    production_hits: list[Sequence[Hit]] = []
    for run in runs:
        index = indexes[run.chunker]
        ranks = []
        for query, vector in zip(queries, query_vectors, strict=True):
            hits = retrieve(index, vector, query.text, run.settings()).hits
            rank = first_hit_rank(hits, rows_by_chunker[run.chunker][query.needle])
            ranks.append(rank)
            rank_rows.append(RankRow(run.chunker, run.retriever_label, query.query_id,
                                     query.line_id, query.style.value, rank))
            if run == RunKey(PRODUCTION_CHUNKER, Retriever.HYBRID):
                production_hits.append(hits)
        ranks_by_run[run] = ranks
    timings["retrieve"] = time.perf_counter() - t

    summary = summary_rows(runs, ranks_by_run, destroyed)
    paired = paired_rows(runs, ranks_by_run)

    sweep: list[SweepRow] = []
    if production_hits:
        t = time.perf_counter()
        production = indexes[PRODUCTION_CHUNKER]
        in_domain = [(hits, rows_by_chunker[PRODUCTION_CHUNKER][q.needle])
                     for hits, q in zip(production_hits, queries, strict=True)]
        ood_hits = [(retrieve(production, v, o.query, RunKey(PRODUCTION_CHUNKER,
                                                                Retriever.HYBRID).settings()).hits, o)
                    for v, o in zip(ood_vectors, ood, strict=True)]
        sweep = refusal_sweep(in_domain, ood_hits)
        timings["sweep"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started
    return EvalReport(len(queries), len(ood), list(gold_errors), destroyed, rank_rows, summary,
                      paired, sweep, recommend_cut(sweep), CUT_RULE, timings)
