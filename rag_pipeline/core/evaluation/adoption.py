"""Whether an adapted model replaces its base: judged on the held-out half of the gold set only.

The gold lines whose needle lies in a held-out document (the documents no training pair came
from, :func:`rag_pipeline.core.embedding.adaptation.held_out_half`) are the only ones scored. Per query
style and ``k``, each model's recall with its Wilson interval (Wilson 1927) and the paired
exact sign test (wins: queries only the adapted model finds within ``k``; losses: only the
base). The rule (:func:`adoption`): the adapted model becomes the default only if ticket-style
R@4 and R@20 both improve with p < 0.05, no style at any ``k`` gets significantly worse, and
general retrieval does not break: on a public benchmark (BEIR SciFact) every measured nDCG@10 of
the adapted model is at most 0.01 below the base's (:class:`GeneralRetrieval`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.config.gold_file import GoldLine, GoldSet
from rag_pipeline.core.evaluation.beir import BeirReport
from rag_pipeline.core.evaluation.evaluate import EvalReport
from rag_pipeline.core.evaluation.gold import QueryStyle, collapse
from rag_pipeline.core.evaluation.metrics import paired_wins_losses, sign_test_p, wilson_interval

KS = (4, 20)
ALPHA = 0.05
GENERAL_TOLERANCE = 0.01
"""How far below the base an adapted model's nDCG@10 on the public benchmark may fall."""


@dataclass(frozen=True)
class StyleComparison:
    """Adapted (a) against base (b) on one chunker x retriever, one style, one ``k``."""

    chunker: str
    retriever: str
    style: str
    k: int
    queries: int
    found_a: int
    found_b: int
    interval_a: tuple[float, float]
    interval_b: tuple[float, float]
    wins: int
    losses: int
    p: float

    @property
    def recall_a(self) -> float:
        return self.found_a / self.queries

    @property
    def recall_b(self) -> float:
        return self.found_b / self.queries


@dataclass(frozen=True)
class GeneralRetrieval:
    """Both models on a public benchmark: ``retriever -> (adapted, base)`` nDCG@10 (for BEIR
    SciFact: the rows of :func:`rag_pipeline.core.evaluation.beir.run_beir`)."""

    dataset: str
    ndcg_at_10: Mapping[str, tuple[float, float]]


def general_retrieval(adapted: BeirReport, base: BeirReport) -> GeneralRetrieval:
    """Both models' nDCG@10 on one BEIR run each, per retriever that embeds (``dense``,
    ``hybrid[<analyzer> k1=<k1>]``; BM25 alone is the same for both and left out).

    Raises:
        ValueError: the runs are of different datasets or hold different rows.
    """
    def rows(report: BeirReport) -> dict[str, float]:
        return {r.retriever if r.analyzer is None else f"{r.retriever}[{r.analyzer} k1={r.k1}]":
                r.ndcg_at_10 for r in report.rows if r.retriever != "bm25"}

    a, b = rows(adapted), rows(base)
    if adapted.dataset != base.dataset or a.keys() != b.keys():
        raise ValueError(f"the two BEIR runs differ: {adapted.dataset} {sorted(a)} vs "
                         f"{base.dataset} {sorted(b)}")
    return GeneralRetrieval(adapted.dataset, {name: (a[name], b[name]) for name in sorted(a)})


@dataclass(frozen=True)
class AdoptionDecision:
    adopt: bool
    reason: str


def needle_documents(lines: Iterable[GoldLine], canonical: Mapping[str, str]) -> dict[str, str]:
    """``line id -> document id`` of the one document whose text holds the needle (white space
    collapsed); a needle found in no document or in several is left out (the evaluation reports
    it as a gold-set error)."""
    texts = {doc: collapse(text) for doc, text in canonical.items()}
    out = {}
    for line in lines:
        needle = collapse(line.needle)
        found = [doc for doc, text in texts.items() if needle in text]
        if len(found) == 1:
            out[line.id] = found[0]
    return out


def held_out_lines(gold: GoldSet, canonical: Mapping[str, str],
                   held_out: Sequence[str]) -> tuple[GoldLine, ...]:
    """The gold lines whose needle lies in a held-out document."""
    where = needle_documents(gold.lines, canonical)
    keep = set(held_out)
    return tuple(line for line in gold.lines if where.get(line.id) in keep)


def write_gold(path: Path, gold: GoldSet, lines: Sequence[GoldLine],
               documents: Sequence[str]) -> Path:
    """Writes a gold JSONL of ``lines`` whose corpus line names ``documents`` (same corpus)."""
    name = gold.corpus.name if gold.corpus is not None else "corpus"
    rows = [json.dumps({"corpus": name, "documents": sorted(documents)})]
    rows += [json.dumps({"id": g.id, "needle": g.needle, "question": g.question,
                         "ticket": g.ticket, **({"document": g.document} if g.document else {})})
             for g in lines]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def compare_by_style(adapted: EvalReport, base: EvalReport, ks: Sequence[int] = KS,
                     ) -> list[StyleComparison]:
    """One row per chunker x retriever both reports hold, per style, per ``k``."""
    ranks_a = {(r.chunker, r.retriever, r.query_id): r for r in adapted.ranks}
    ranks_b = {(r.chunker, r.retriever, r.query_id): r.rank for r in base.ranks}
    runs = sorted({(c, r) for c, r, _ in ranks_a} & {(c, r) for c, r, _ in ranks_b})
    rows = []
    for chunker, retriever in runs:
        for style in QueryStyle:
            queries = sorted(q for (c, r, q), row in ranks_a.items()
                             if (c, r) == (chunker, retriever) and row.style == style.value
                             and (c, r, q) in ranks_b)
            if not queries:
                continue
            first = [ranks_a[(chunker, retriever, q)].rank for q in queries]
            second = [ranks_b[(chunker, retriever, q)] for q in queries]
            for k in ks:
                found_a = sum(1 for rank in first if rank is not None and rank <= k)
                found_b = sum(1 for rank in second if rank is not None and rank <= k)
                wins, losses = paired_wins_losses(first, second, k)
                rows.append(StyleComparison(
                    chunker, retriever, style.value, k, len(queries), found_a, found_b,
                    wilson_interval(found_a, len(queries)), wilson_interval(found_b, len(queries)),
                    wins, losses, sign_test_p(wins, losses)))
    return rows


def adoption(rows: Sequence[StyleComparison], chunker: str, retriever: str,
             general: GeneralRetrieval | None = None, alpha: float = ALPHA,
             tolerance: float = GENERAL_TOLERANCE) -> AdoptionDecision:
    """The rule on the production chunker x default retriever: adopt only if ticket-style R@4
    and R@20 both improve (more wins than losses) with p < ``alpha``, no style at any ``k``
    is significantly worse (more losses than wins with p < ``alpha``), and on the public
    benchmark no nDCG@10 of the adapted model is more than ``tolerance`` below the base's.
    Without a ``general`` measurement nothing is adopted.

    Raises:
        ValueError: the rows hold no ticket-style R@4 or R@20 for that chunker x retriever, or
            ``general`` holds no row.
    """
    picked = [r for r in rows if (r.chunker, r.retriever) == (chunker, retriever)]
    ticket = {r.k: r for r in picked if r.style == QueryStyle.TICKET.value}
    missing = [k for k in (4, 20) if k not in ticket]
    if missing:
        raise ValueError(f"no ticket-style R@{missing[0]} for {chunker} x {retriever}")
    if general is not None and not general.ndcg_at_10:
        raise ValueError(f"no nDCG@10 row for {general.dataset}")
    worse = [r for r in picked if r.losses > r.wins and r.p < alpha]
    if worse:
        return AdoptionDecision(False, "significantly worse: " + ", ".join(
            f"{r.style} R@{r.k} ({r.wins} wins / {r.losses} losses, p = {r.p:.4f})" for r in worse))
    weak = [r for r in (ticket[4], ticket[20]) if not (r.wins > r.losses and r.p < alpha)]
    if weak:
        return AdoptionDecision(False, "no significant ticket-style gain: " + ", ".join(
            f"R@{r.k} {r.wins} wins / {r.losses} losses, p = {r.p:.4f}" for r in weak))
    if general is None:
        return AdoptionDecision(False, "general retrieval not measured (the public benchmark's "
                                       "nDCG@10 for both models)")
    broken = [f"{name} {a:.5f} vs {b:.5f}" for name, (a, b) in sorted(general.ndcg_at_10.items())
              if b - a > tolerance + 1e-12]   # 1e-12: 0.645 - 0.635 is 0.0100...09 in floats
    if broken:
        return AdoptionDecision(False, f"{general.dataset} nDCG@10 more than {tolerance} below the "
                                       f"base: {', '.join(broken)}")
    return AdoptionDecision(True, f"ticket-style R@4 ({ticket[4].wins}/{ticket[4].losses}, "
                                  f"p = {ticket[4].p:.4f}) and R@20 ({ticket[20].wins}/"
                                  f"{ticket[20].losses}, p = {ticket[20].p:.4f}) improve; "
                                  f"nothing significantly worse; {general.dataset} nDCG@10 "
                                  f"within {tolerance}")
