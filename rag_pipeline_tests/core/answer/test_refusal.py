"""Tests for ``rag_pipeline.core.answer.refusal``: signals on hand-made distances, folds, the budget
cut and the cross-validation's held-out counts, all by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rag_pipeline.core.answer.refusal import (
    CrossValidated,
    GateCase,
    RefusalSignal,
    budget_cut,
    cross_validate,
    cross_validate_combination,
    fold_of,
    refusal_signals,
    term_coverage,
)
from rag_pipeline.core.index.bm25 import Bm25Scorer, build_bm25_tables
from rag_pipeline.core.text.analyzers import Analyzer

TEXTS = ["alpha beta", "beta gamma", "gamma delta", "delta epsilon", "epsilon zeta",
         "zeta eta", "eta theta", "theta iota", "iota kappa", "kappa lambda", "lambda mu"]


@pytest.fixture(scope="module")
def scorer() -> Bm25Scorer:
    ids = [f"c{i}" for i in range(len(TEXTS))]
    return Bm25Scorer.from_tables(build_bm25_tables(ids, TEXTS, Analyzer.ENGLISH), Analyzer.ENGLISH)


def test_signals_by_hand(scorer: Bm25Scorer):
    distances = np.array([0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2], np.float32)
    signals = refusal_signals(distances, "alpha beta unknownword", scorer,
                              sentence_distances=np.array([0.15] + [0.5] * 10, np.float32))
    mean, std = float(distances.mean()), float(distances.std())
    assert signals[RefusalSignal.TOP_DISTANCE] == pytest.approx(0.2, abs=1e-6)
    assert signals[RefusalSignal.GAP] == pytest.approx(-(1.1 - 0.2), abs=1e-6)  # 10th closest
    assert signals[RefusalSignal.STANDOUT] == pytest.approx((0.2 - mean) / std, abs=1e-6)
    # BM25 matches rows 0 and 1 only; both are in the dense top 10: 2 of 10 agree.
    assert signals[RefusalSignal.AGREEMENT] == -0.2
    # "unknownword" is not in the vocabulary: 2 of 3 terms known.
    assert signals[RefusalSignal.VOCABULARY] == pytest.approx(-2 / 3)
    assert signals[RefusalSignal.BEST_SENTENCE] == pytest.approx(0.15, abs=1e-6)
    assert RefusalSignal.BEST_SENTENCE not in refusal_signals(distances, "alpha", scorer)
    # The dense top 4 (rows 0-3) hold alpha (df 1, idf ln 8) and beta (df 2, idf ln 4.8);
    # "unknownword" weighs the largest idf, ln 8.
    assert signals[RefusalSignal.COVERAGE] == pytest.approx(
        -(np.log(8) + np.log(4.8)) / (2 * np.log(8) + np.log(4.8)), abs=1e-9)


def test_term_coverage_by_hand(scorer: Bm25Scorer):
    # "kappa" (df 2, idf ln 4.8) is in rows 8 and 9, "zeta" (df 2) in rows 4 and 5.
    assert term_coverage("kappa zeta", scorer, [8]) == pytest.approx(0.5)
    assert term_coverage("kappa zeta", scorer, [8, 4]) == 1.0
    assert term_coverage("kappa zeta", scorer, [0, 1, 2]) == 0.0
    assert term_coverage("kappa kappa alpha", scorer, [9]) == pytest.approx(
        np.log(4.8) / (np.log(4.8) + np.log(8)))
    assert term_coverage("the of", scorer, [0]) == 1.0  # only stop words: nothing to miss


def test_folds_alternate_in_sorted_order():
    assert fold_of(["q3", "q1", "q2", "q1"]) == {"q1": 0, "q2": 1, "q3": 0}


def test_budget_cut_by_hand():
    # 10 in-domain signals, budget 0.2 -> 2 may be refused: the cut lies above the 8th smallest
    # (0.8), half-way to the next value seen (an OOD 0.85).
    in_domain = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert budget_cut(in_domain, [0.85, 2.0], refusal_budget=0.2) == pytest.approx(0.825)
    # Budget 0: every in-domain query answered; nothing above 1.0 -> just above it.
    assert budget_cut(in_domain, [0.5], refusal_budget=0.0) == pytest.approx(1.0 + 1e-6)
    with pytest.raises(ValueError, match="no in-domain signal"):
        budget_cut([], [0.5])
    with pytest.raises(ValueError, match="refusal_budget"):
        budget_cut([0.1], [], refusal_budget=1.0)


def test_cross_validation_counts_only_held_out_queries():
    in_domain = [GateCase(0, 0.1, True), GateCase(0, 0.3, False), GateCase(1, 0.2, True),
                 GateCase(1, 0.5, True)]
    ood = [GateCase(0, 0.25), GateCase(1, 0.4), GateCase(1, 0.9)]
    # Budget 0: fold 0 is judged by the cut of fold 1 (above 0.5, half-way to 0.9 = 0.7),
    # fold 1 by the cut of fold 0 (above 0.3, no larger value there: 0.3 + 1e-6).
    result = cross_validate(in_domain, ood,
                            lambda i, o: budget_cut([c.signal for c in i], [c.signal for c in o],
                                                    refusal_budget=0.0))
    assert result.cuts == pytest.approx((0.7, 0.3 + 1e-6))
    # Fold 0 at 0.7: both answered (1 correct), the OOD 0.25 bluffs. Fold 1 at 0.3: 0.2
    # answered (correct), 0.5 refused; OOD 0.4 and 0.9 refused.
    assert result == CrossValidated(result.cuts, 4, 1, 2, 3, 1)


def test_combination_weight_and_cut_come_from_the_training_fold():
    top, vocab = RefusalSignal.TOP_DISTANCE, RefusalSignal.VOCABULARY
    # On each fold the OOD question is as close as the in-domain ones, but shares fewer words:
    # w = 0 cannot refuse it under a zero budget; w = 1 can, so w = 1 is chosen on both folds.
    in_signals = [{top: 0.5, vocab: -1.0}, {top: 0.5, vocab: -1.0}]
    ood_signals = [{top: 0.4, vocab: 0.0}, {top: 0.4, vocab: 0.0}]
    result, weights = cross_validate_combination(
        in_signals, [0, 1], [True, True], ood_signals, [0, 1], top, vocab, weights=(0.0, 1.0),
        refusal_budget=0.0)
    assert weights == (1.0, 1.0)
    # Signals: in-domain 0.5 - 1 = -0.5, OOD 0.4: the cut lies half-way, at -0.05.
    assert result == CrossValidated((pytest.approx(-0.05), pytest.approx(-0.05)), 2, 0, 2, 2, 0)
    with pytest.raises(ValueError, match="no weight"):
        cross_validate_combination(in_signals, [0, 1], [True, True], ood_signals, [0, 1], top,
                                   vocab, weights=())
