"""Tests for ``rag_pipeline.core.evaluation.gate_sweep``: rank, gate outcome, refusal sweep and
cut rule on hand-made hits."""

from __future__ import annotations

from rag_pipeline.core.config.gold_file import OodKind, OodLine
from rag_pipeline.core.evaluation.gate_sweep import (
    CUT_RULE,
    SWEEP_CUTS,
    SweepRow,
    gate_outcome,
    recommend_cut,
    refusal_sweep,
)
from rag_pipeline.core.evaluation.metrics import first_hit_rank
from rag_pipeline.core.retrieval.retriever import Hit


def hits(*pairs: tuple[int, float]) -> list[Hit]:
    """Hits in retrieval order from ``(row, cosine distance)`` pairs."""
    return [Hit(row, 1.0 - distance, distance, (row,)) for row, distance in pairs]


THREE = hits((10, 0.50), (11, 0.60), (12, 0.70))


# --- ranks and outcomes on hand-made hits ---------------------------------------------------------


def test_first_hit_rank_over_a_rankings_rows():
    # The form the evaluation and the gate's cross-validation use: a ranking's rows, and the
    # rows holding the needle.
    def rank(hits, rows):
        return first_hit_rank([h.row for h in hits], frozenset(rows).__contains__)

    assert rank(THREE, {11, 99}) == 2
    assert rank(THREE, {12, 10}) == 1
    assert rank(THREE, {12}) == 3
    assert rank(THREE, {99}) is None
    assert rank(THREE, set()) is None
    assert rank([], {10}) is None


def test_gate_outcome_correct_wrong_refused():
    assert gate_outcome(THREE, frozenset({11}), cut=0.65) == "correct"  # rows 10, 11 kept
    assert gate_outcome(THREE, frozenset({12}), cut=0.65) == "wrong"  # 12 is at 0.70, not kept
    assert gate_outcome(THREE, frozenset(), cut=0.65) == "wrong"  # a destroyed needle
    assert gate_outcome(THREE, frozenset({10}), cut=0.50) == "refused"  # 0.50 is not under 0.50
    assert gate_outcome([], frozenset({10}), cut=0.9) == "refused"


def test_gate_outcome_honours_max_sources():
    assert gate_outcome(THREE, frozenset({11}), cut=0.65, max_sources=1) == "wrong"
    five = hits((1, 0.1), (2, 0.1), (3, 0.1), (4, 0.1), (5, 0.1))
    assert gate_outcome(five, frozenset({5}), cut=0.5) == "wrong"  # fifth is past the cap of 4
    assert gate_outcome(five, frozenset({4}), cut=0.5) == "correct"


def test_refusal_sweep_by_hand():
    in_domain = [
        (hits((1, 0.50), (2, 0.58)), frozenset({2})),  # 0.55: keeps 1 -> wrong; 0.60: correct
        (hits((3, 0.57)), frozenset({3})),  # 0.55: refused; 0.60: correct
        (hits((4, 0.40)), frozenset({5})),  # wrong at both
        (hits((6, 0.70)), frozenset({6})),  # refused at both
    ]
    ood = [
        (hits((7, 0.52)), OodLine("o1", "near one", OodKind.NEAR)),  # bluffs at both
        (hits((8, 0.90), (9, 0.59)), OodLine("o2", "off one", OodKind.OFF)),  # bluffs at 0.60
        (hits((9, 0.80)), OodLine("o3", "off two", OodKind.OFF)),  # never bluffs
    ]
    sweep = refusal_sweep(in_domain, ood, cuts=(0.55, 0.60))
    assert sweep == [
        SweepRow(cut=0.55, in_correct=0, in_wrong=2, in_refused=2, ood_bluffs=1, ood_bluffs_near=1,
                 ood_bluffs_off=0, ood_total=3),
        SweepRow(cut=0.60, in_correct=2, in_wrong=1, in_refused=1, ood_bluffs=2, ood_bluffs_near=1,
                 ood_bluffs_off=1, ood_total=3),
    ]
    # Right outcomes: correct answers + refused out-of-domain queries.
    assert [row.right_outcomes for row in sweep] == [0 + (3 - 1), 2 + (3 - 2)]
    assert recommend_cut(sweep) == 0.60


def sweep_row(cut: float, in_correct: int, ood_bluffs: int, ood_total: int = 10) -> SweepRow:
    return SweepRow(cut, in_correct, 0, 0, ood_bluffs, ood_bluffs, 0, ood_total)


def test_recommend_cut_takes_the_most_right_outcomes():
    sweep = [sweep_row(0.5, 3, 0), sweep_row(0.55, 6, 1), sweep_row(0.6, 8, 6)]
    # Right outcomes 13, 15, 12.
    assert [r.right_outcomes for r in sweep] == [13, 15, 12]
    assert recommend_cut(sweep) == 0.55


def test_recommend_cut_tie_goes_to_the_lower_cut():
    sweep = [sweep_row(0.5, 3, 0), sweep_row(0.55, 5, 1), sweep_row(0.6, 6, 2), sweep_row(0.65, 6, 5)]
    # Right outcomes 13, 14, 14, 11: 0.55 and 0.6 tie; the stricter cut wins, in any order.
    assert [r.right_outcomes for r in sweep] == [13, 14, 14, 11]
    assert recommend_cut(sweep) == 0.55
    assert recommend_cut(list(reversed(sweep))) == 0.55
    assert "ties go to the stricter (lower) cut" in CUT_RULE


def test_recommend_cut_of_no_sweep():
    assert recommend_cut([]) is None


def test_sweep_cuts():
    assert SWEEP_CUTS == (0.45, 0.475, 0.5, 0.525, 0.55, 0.575, 0.6, 0.625, 0.65, 0.675, 0.7, 0.725,
                          0.75)
