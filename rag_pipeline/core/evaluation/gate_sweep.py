"""The refusal gate measured on gold and out-of-domain queries: a sweep of cuts, the cut rule,
and the gate's 2-fold cross-validation per refusal signal.

:func:`refusal_sweep` counts, per cut, the in-domain queries answered correctly, answered wrongly
and refused, and the out-of-domain queries answered (bluffs, near and off topic);
:func:`recommend_cut` picks the cut by :data:`CUT_RULE`. :func:`gate_cross_validation` holds out
each fold in turn, today's rule on the top distance first, then the refusal-budget rule on every
signal (:mod:`rag_pipeline.core.answer.refusal`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from rag_pipeline.core.answer.gate import MAX_SOURCES, gate_hits
from rag_pipeline.core.answer.refusal import (
    RefusalSignal,
    cases,
    cross_validate,
    cross_validate_combination,
    fold_of,
)
from rag_pipeline.core.config.gold_file import OodKind, OodLine
from rag_pipeline.core.evaluation.gold import GoldQuery
from rag_pipeline.core.evaluation.metrics import first_hit_rank
from rag_pipeline.core.retrieval.retriever import Hit

SWEEP_CUTS = tuple(round(0.45 + 0.025 * i, 3) for i in range(13))


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



CUT_RULE = ("the cut with the most right outcomes (in-domain queries answered with a correct "
            "chunk + out-of-domain queries refused); ties go to the stricter (lower) cut")


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
    decision = gate_hits(hits, cut, max_sources)
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
                  if gate_hits(hits, cut).answered]
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
    ranks = [first_hit_rank([h.row for h in hits], needle.__contains__) for hits, needle in in_domain]
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
