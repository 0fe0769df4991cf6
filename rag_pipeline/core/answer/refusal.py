"""Refusal signals and an honest (cross-validated) choice of the gate's cut.

A refusal signal is one number per question, lower meaning "more likely answerable"; a gate on
it answers when the signal is under a cut. Today's gate reads the closest chunk's cosine
distance. The alternatives measured here are the ones a retriever gives for free:

- ``gap``: minus the distance gap between the closest and the 10th closest chunk (a question
  with an answer has one chunk that stands out from its neighbours);
- ``standout``: the closest distance as a z-score over every chunk of the partition,
  ``(d_1 - mean(d)) / std(d)`` (distance to the corpus at large, not only to its best chunk);
- ``agreement``: minus the share of the dense top 10 that is also in the BM25 top 10;
- ``vocabulary``: minus the share of the question's analysed terms the index holds;
- ``best_sentence``: the closest single sentence's cosine distance (``core/retrieval/sentences.py``);
- ``coverage``: minus the idf-weighted share of the question's analysed terms that occur in the
  dense top 4 (the chunks the gate would keep); a term the index lacks weighs the largest idf
  (a near out-of-domain question names things the closest passages do not).

The cut is chosen by 2-fold cross-validation: queries are split into two folds by their gold
line id (both phrasings of a needle fall in the same fold; out-of-domain questions by their id,
alternating in sorted order), the cut is chosen on one fold and counted on the other, both ways,
so every reported refusal and bluff comes from a question the cut never saw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from rag_pipeline.core.index.access import Readable
from rag_pipeline.core.index.bm25 import Bm25Scorer
from rag_pipeline.core.retrieval.dense import top_k
from rag_pipeline.core.text.analyzers import analyze

__all__ = [
    "AGREEMENT_DEPTH",
    "COVERAGE_DEPTH",
    "GAP_RANK",
    "REFUSAL_BUDGET",
    "CrossValidated",
    "GateCase",
    "RefusalSignal",
    "COMBINATION_WEIGHTS",
    "budget_cut",
    "cases",
    "cross_validate",
    "cross_validate_combination",
    "fold_of",
    "refusal_signals",
    "term_coverage",
]

GAP_RANK = 10
AGREEMENT_DEPTH = 10
COVERAGE_DEPTH = 4
REFUSAL_BUDGET = 2 / 64
"""The in-domain refusal share the budget rule may spend (issue 11's target: 2 of 64)."""


class RefusalSignal(StrEnum):
    TOP_DISTANCE = "top_distance"
    GAP = "gap"
    STANDOUT = "standout"
    AGREEMENT = "agreement"
    VOCABULARY = "vocabulary"
    BEST_SENTENCE = "best_sentence"
    COVERAGE = "coverage"


def term_coverage(question: str, scorer: Bm25Scorer, rows: Sequence[int]) -> float:
    """The idf-weighted share of the question's distinct analysed terms that occur in any of
    ``rows``; a term the index does not hold weighs the index's largest idf. 1.0 for a question
    with no terms (nothing to miss)."""
    terms = set(analyze(question, scorer.analyzer))
    if not terms:
        return 1.0
    largest = float(scorer.idf.max()) if len(scorer.idf) else 1.0
    rows = np.asarray(rows, dtype=np.int64)
    total = covered = 0.0
    for term in sorted(terms):
        column = scorer.term_index.get(term)
        weight = largest if column is None else float(scorer.idf[column])
        total += weight
        if column is not None and scorer.occurs_in(column, rows):
            covered += weight
    return covered / total if total > 0 else 1.0


def refusal_signals(distances: np.ndarray, question: str, scorer: Bm25Scorer,
                    sentence_distances: np.ndarray | None = None,
                    readable: Readable | None = None) -> dict[RefusalSignal, float]:
    """Every signal for one question (``best_sentence`` only when sentence distances are given).

    Args:
        distances: The question's cosine distance to every chunk of the partition.
        question: The question text.
        scorer: The partition's BM25 scorer (its analyzer and vocabulary).
        sentence_distances: Per chunk, its closest sentence's distance, if measured.
        readable: The rows the asker may read: every signal is then computed over them alone.
    """
    rows = None
    if readable is not None:
        rows = readable.rows
        distances = distances[rows]
        if sentence_distances is not None:
            sentence_distances = sentence_distances[rows]
    if len(distances) == 0:
        raise ValueError("no chunks: a refusal signal over an empty partition is undefined")
    ordered = np.sort(distances)
    d1 = float(ordered[0])
    dk = float(ordered[min(GAP_RANK, len(ordered)) - 1])
    std = float(distances.std())
    dense_ranked = top_k(distances, max(AGREEMENT_DEPTH, COVERAGE_DEPTH))
    if rows is not None:
        dense_ranked = rows[dense_ranked]
    dense_top = set(dense_ranked[:AGREEMENT_DEPTH].tolist())
    bm25_top = set(scorer.top(question, AGREEMENT_DEPTH,
                              None if readable is None else readable.mask).rows.tolist())
    terms = analyze(question, scorer.analyzer)
    known = sum(1 for t in terms if t in scorer.term_index)
    signals = {
        RefusalSignal.TOP_DISTANCE: d1,
        RefusalSignal.GAP: -(dk - d1),
        RefusalSignal.STANDOUT: (d1 - float(distances.mean())) / std if std > 0 else 0.0,
        RefusalSignal.AGREEMENT: -len(dense_top & bm25_top) / AGREEMENT_DEPTH,
        RefusalSignal.VOCABULARY: -(known / len(terms)) if terms else 0.0,
        RefusalSignal.COVERAGE: -term_coverage(question, scorer, dense_ranked[:COVERAGE_DEPTH]),
    }
    if sentence_distances is not None:
        signals[RefusalSignal.BEST_SENTENCE] = float(sentence_distances.min())
    return signals


def fold_of(ids: Sequence[str]) -> dict[str, int]:
    """Fold 0 or 1 per distinct id, alternating in sorted order (deterministic, balanced)."""
    return {id_: i % 2 for i, id_ in enumerate(sorted(set(ids)))}


@dataclass(frozen=True)
class GateCase:
    """One query as the gate sees it: its fold, its signal and, in domain, whether answering
    it is right (a kept source holds the needle)."""

    fold: int
    signal: float
    correct: bool = False


def budget_cut(in_domain: Sequence[float], ood: Sequence[float],
               refusal_budget: float = REFUSAL_BUDGET) -> float:
    """The strictest cut that refuses at most ``floor(budget * n)`` in-domain queries.

    Answering means ``signal < cut``, so the cut must lie above the ``n - allowed`` smallest
    in-domain signals; it is put half-way to the next larger signal seen (in or out of domain),
    or just above the largest one.

    Raises:
        ValueError: With no in-domain signal or a budget outside [0, 1).
    """
    if not in_domain:
        raise ValueError("no in-domain signal to choose a cut on")
    if not 0.0 <= refusal_budget < 1.0:
        raise ValueError(f"refusal_budget must lie in [0, 1), got {refusal_budget}")
    ordered = sorted(in_domain)
    allowed = math.floor(refusal_budget * len(ordered) + 1e-9)
    must_answer = ordered[len(ordered) - allowed - 1]
    above = [v for v in (*ordered, *ood) if v > must_answer]
    if not above:
        return must_answer + max(abs(must_answer), 1.0) * 1e-6
    return (must_answer + min(above)) / 2


@dataclass(frozen=True)
class CrossValidated:
    """Held-out counts summed over both folds, and the cut chosen on each fold's complement."""

    cuts: tuple[float, float]
    in_total: int
    in_refused: int
    in_correct: int
    ood_total: int
    ood_bluffs: int


def cross_validate(in_domain: Sequence[GateCase], ood: Sequence[GateCase],
                   choose: Callable[[Sequence[GateCase], Sequence[GateCase]], float] | None = None,
                   ) -> CrossValidated:
    """Chooses a cut on fold 1 and counts fold 0 with it, then the reverse.

    Args:
        in_domain: In-domain cases.
        ood: Out-of-domain cases.
        choose: ``(train in-domain, train ood) -> cut``; default the refusal-budget rule.
    """
    choose = choose or (lambda i, o: budget_cut([c.signal for c in i], [c.signal for c in o]))
    cuts = []
    refused = correct = bluffs = 0
    for held_out in (0, 1):
        cut = choose([c for c in in_domain if c.fold != held_out],
                     [c for c in ood if c.fold != held_out])
        cuts.append(cut)
        for case in in_domain:
            if case.fold == held_out:
                if case.signal < cut:
                    correct += case.correct
                else:
                    refused += 1
        bluffs += sum(1 for c in ood if c.fold == held_out and c.signal < cut)
    return CrossValidated((cuts[0], cuts[1]), len(in_domain), refused, correct, len(ood), bluffs)


def cases(signals: Sequence[Mapping[RefusalSignal, float]], folds: Sequence[int],
          signal: RefusalSignal, correct: Sequence[bool] | None = None) -> list[GateCase]:
    """Gate cases for one signal from per-query signal maps and folds."""
    correct = correct if correct is not None else [False] * len(signals)
    return [GateCase(fold, values[signal], ok)
            for values, fold, ok in zip(signals, folds, correct, strict=True)]


COMBINATION_WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))
"""The weights ``w`` tried for a two-signal gate ``first + w * second`` (0 to 1, step 0.05)."""


def cross_validate_combination(
        in_signals: Sequence[Mapping[RefusalSignal, float]], in_folds: Sequence[int],
        in_correct: Sequence[bool], ood_signals: Sequence[Mapping[RefusalSignal, float]],
        ood_folds: Sequence[int], first: RefusalSignal, second: RefusalSignal,
        weights: Sequence[float] = COMBINATION_WEIGHTS, refusal_budget: float = REFUSAL_BUDGET,
) -> tuple[CrossValidated, tuple[float, float]]:
    """The gate on ``first + w * second``, with ``w`` and the cut both chosen on the training
    fold (the fewest training bluffs under the refusal budget; ties to the smaller ``w``), so
    the held-out counts stay honest.

    Returns:
        The held-out counts and the weight chosen for fold 0 and for fold 1.
    """
    if not weights:
        raise ValueError("no weight to try")

    def values(signals, w):
        return [s[first] + w * s[second] for s in signals]

    chosen: list[float] = []
    cuts: list[float] = []
    refused = correct = bluffs = 0
    for held_out in (0, 1):
        train_in = [s for s, f in zip(in_signals, in_folds, strict=True) if f != held_out]
        train_ood = [s for s, f in zip(ood_signals, ood_folds, strict=True) if f != held_out]
        tried = []
        for w in weights:
            cut = budget_cut(values(train_in, w), values(train_ood, w), refusal_budget)
            tried.append((sum(1 for v in values(train_ood, w) if v < cut), w, cut))
        _, w, cut = min(tried, key=lambda t: (t[0], t[1]))
        chosen.append(w)
        cuts.append(cut)
        for s, f, ok in zip(in_signals, in_folds, in_correct, strict=True):
            if f == held_out:
                if s[first] + w * s[second] < cut:
                    correct += ok
                else:
                    refused += 1
        bluffs += sum(1 for s, f in zip(ood_signals, ood_folds, strict=True)
                      if f == held_out and s[first] + w * s[second] < cut)
    return (CrossValidated((cuts[0], cuts[1]), len(in_signals), refused, correct, len(ood_signals),
                           bluffs), (chosen[0], chosen[1]))
