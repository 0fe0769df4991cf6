from __future__ import annotations

from math import comb, log2, sqrt

import pytest
from scipy.stats import norm

from rag_pipeline.core.evaluation.metrics import (
    RecallSummary,
    first_hit_rank,
    mean_reciprocal_rank,
    mrr_at_k_qrels,
    ndcg_at_k,
    paired_wins_losses,
    recall_at_k,
    recall_at_k_qrels,
    sign_test_p,
    summarise_recall,
    wilson_interval,
)

# Five planted queries: hit at rank 1, hit at rank 3, a miss, hit at rank 2, hit at rank 9.
RANKS = [1, 3, None, 2, 9]
# A second system on the same five queries, for the paired comparison.
RANKS_B = [2, None, 1, 5, None]


def wilson_closed_form(successes: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson (1927) written out, as an oracle for the scipy-backed implementation."""
    z = norm.ppf(1 - (1 - confidence) / 2)
    p = successes / n
    center = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return center - half, center + half


# first_hit_rank


def test_first_hit_rank_is_one_based() -> None:
    assert first_hit_rank(["a", "b", "c"], lambda doc_id: doc_id == "c") == 3
    assert first_hit_rank(["a", "b", "c"], lambda doc_id: doc_id == "a") == 1


def test_first_hit_rank_returns_the_first_of_several_hits() -> None:
    assert first_hit_rank(["a", "b", "c", "d"], lambda doc_id: doc_id in {"b", "d"}) == 2


def test_first_hit_rank_is_none_without_a_hit() -> None:
    assert first_hit_rank(["a", "b"], lambda doc_id: doc_id == "z") is None
    assert first_hit_rank([], lambda doc_id: True) is None


# recall_at_k


def test_recall_at_k_on_planted_ranks() -> None:
    assert recall_at_k(RANKS, 1) == 1 / 5
    assert recall_at_k(RANKS, 2) == 2 / 5
    assert recall_at_k(RANKS, 3) == 3 / 5
    assert recall_at_k(RANKS, 4) == 3 / 5
    assert recall_at_k(RANKS, 8) == 3 / 5
    assert recall_at_k(RANKS, 9) == 4 / 5
    assert recall_at_k(RANKS, 1000) == 4 / 5


def test_recall_at_k_rejects_empty_ranks() -> None:
    with pytest.raises(ValueError, match="empty"):
        recall_at_k([], 5)


def test_recall_at_k_rejects_bad_k_and_bad_ranks() -> None:
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k(RANKS, 0)
    with pytest.raises(ValueError, match="1-based"):
        recall_at_k([1, 0], 5)


# mean_reciprocal_rank


def test_mrr_on_planted_ranks() -> None:
    assert mean_reciprocal_rank(RANKS) == pytest.approx((1 + 1 / 3 + 0 + 1 / 2 + 1 / 9) / 5, rel=1e-12)


def test_mrr_with_cutoff_zeroes_hits_below_it() -> None:
    # Rank 9 falls below cutoff 3; rank 3 sits exactly on it and still counts.
    assert mean_reciprocal_rank(RANKS, cutoff=3) == pytest.approx((1 + 1 / 3 + 0 + 1 / 2 + 0) / 5, rel=1e-12)
    assert mean_reciprocal_rank(RANKS, cutoff=1) == 1 / 5


def test_mrr_of_all_misses_is_zero() -> None:
    assert mean_reciprocal_rank([None, None]) == 0.0


def test_mrr_rejects_empty_ranks_bad_cutoff_and_bad_ranks() -> None:
    with pytest.raises(ValueError, match="empty"):
        mean_reciprocal_rank([])
    with pytest.raises(ValueError, match="cutoff must be"):
        mean_reciprocal_rank(RANKS, cutoff=0)
    with pytest.raises(ValueError, match="1-based"):
        mean_reciprocal_rank([-1])


# wilson_interval


def test_wilson_three_of_five_matches_the_closed_formula() -> None:
    z = norm.ppf(0.975)
    p, n = 3 / 5, 5
    center = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    low, high = wilson_interval(3, 5)
    assert low == pytest.approx(center - half, rel=1e-12)
    assert high == pytest.approx(center + half, rel=1e-12)
    assert type(low) is float and type(high) is float


def test_wilson_confidence_parameter_changes_z() -> None:
    expected_low, expected_high = wilson_closed_form(3, 5, 0.90)
    low, high = wilson_interval(3, 5, confidence=0.90)
    assert low == pytest.approx(expected_low, rel=1e-12)
    assert high == pytest.approx(expected_high, rel=1e-12)
    # A 90% interval sits strictly inside the 95% one.
    low95, high95 = wilson_interval(3, 5)
    assert low95 < low and high < high95


def test_wilson_zero_successes_has_lower_bound_exactly_zero() -> None:
    z = norm.ppf(0.975)
    n = 10
    low, high = wilson_interval(0, n)
    assert low == 0.0
    # With p = 0: center = half = (z²/2n)/(1 + z²/n), so high = (z²/n)/(1 + z²/n).
    assert high == pytest.approx((z**2 / n) / (1 + z**2 / n), rel=1e-12)


def test_wilson_all_successes_has_upper_bound_exactly_one() -> None:
    low, high = wilson_interval(10, 10)
    assert high == 1.0
    assert low == pytest.approx(wilson_closed_form(10, 10, 0.95)[0], rel=1e-12)


def test_wilson_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="n must be"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="successes must"):
        wilson_interval(6, 5)
    with pytest.raises(ValueError, match="successes must"):
        wilson_interval(-1, 5)
    with pytest.raises(ValueError, match="confidence must"):
        wilson_interval(3, 5, confidence=1.0)
    with pytest.raises(ValueError, match="confidence must"):
        wilson_interval(3, 5, confidence=0.0)


# summarise_recall


def test_summarise_recall_combines_recall_and_wilson() -> None:
    expected_low, expected_high = wilson_closed_form(3, 5, 0.95)
    summary = summarise_recall(RANKS, 4)
    assert isinstance(summary, RecallSummary)
    assert summary.n == 5
    assert summary.hits == 3
    assert summary.recall == 3 / 5
    assert summary.low == pytest.approx(expected_low, rel=1e-12)
    assert summary.high == pytest.approx(expected_high, rel=1e-12)


def test_recall_summary_is_frozen() -> None:
    summary = summarise_recall(RANKS, 1)
    with pytest.raises(AttributeError):
        summary.hits = 5  # type: ignore[misc]


def test_summarise_recall_rejects_empty_ranks() -> None:
    with pytest.raises(ValueError, match="empty"):
        summarise_recall([], 1)


# paired_wins_losses


def test_paired_wins_losses_at_three() -> None:
    # q1 both hit (tie); q2 A hits, B misses (win); q3 B hits, A misses (loss);
    # q4 A at 2, B at 5 > 3 (win); q5 A at 9 > 3, B misses (tie).
    assert paired_wins_losses(RANKS, RANKS_B, 3) == (2, 1)


def test_paired_wins_losses_at_one() -> None:
    # q1 A at 1, B at 2 (win); q3 B at 1 (loss); every other query misses on both sides.
    assert paired_wins_losses(RANKS, RANKS_B, 1) == (1, 1)


def test_paired_wins_losses_is_antisymmetric() -> None:
    assert paired_wins_losses(RANKS_B, RANKS, 3) == (1, 2)


def test_paired_wins_losses_rejects_unequal_lengths_and_bad_k() -> None:
    with pytest.raises(ValueError, match="same queries"):
        paired_wins_losses([1, 2], [1], 3)
    with pytest.raises(ValueError, match="k must be"):
        paired_wins_losses([1], [1], 0)
    with pytest.raises(ValueError, match="1-based"):
        paired_wins_losses([1], [0], 3)


# sign_test_p


def test_sign_test_eight_wins_two_losses() -> None:
    expected = 2 * (comb(10, 0) + comb(10, 1) + comb(10, 2)) / 2**10
    assert expected == 2 * 56 / 1024 == 0.109375
    assert sign_test_p(8, 2) == 0.109375
    assert sign_test_p(2, 8) == 0.109375


def test_sign_test_six_wins_no_losses() -> None:
    assert sign_test_p(6, 0) == 2 / 64 == 0.03125


def test_sign_test_without_discordant_pairs_is_one() -> None:
    assert sign_test_p(0, 0) == 1.0


def test_sign_test_balanced_is_one() -> None:
    # Doubling the tail sum (1 + 10 + 45 + 120 + 210 + 252 = 638) / 1024 exceeds 1; capped at 1.
    assert sign_test_p(5, 5) == 1.0


def test_sign_test_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        sign_test_p(-1, 3)
    with pytest.raises(ValueError, match="non-negative"):
        sign_test_p(3, -1)


# ndcg_at_k


def test_ndcg_binary_gains() -> None:
    ranked = ["d3", "d1", "d2"]
    qrels = {"d1": 1, "d2": 1}
    expected = (1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3))
    assert ndcg_at_k(ranked, qrels) == pytest.approx(expected, rel=1e-12)


def test_ndcg_graded_gains_truncate_the_ideal_at_k() -> None:
    ranked = ["d1", "d2", "d3"]
    qrels = {"d1": 1, "d2": 3, "d3": 0, "d4": 2}
    # k = 2: DCG = 1/log2(2) + 3/log2(3); IDCG from gains (3, 2) = 3/log2(2) + 2/log2(3).
    assert ndcg_at_k(ranked, qrels, k=2) == pytest.approx((1 + 3 / log2(3)) / (3 + 2 / log2(3)), rel=1e-12)
    # k = 3: d3 adds nothing; IDCG from gains (3, 2, 1) = 3 + 2/log2(3) + 1/log2(4).
    assert ndcg_at_k(ranked, qrels, k=3) == pytest.approx(
        (1 + 3 / log2(3)) / (3 + 2 / log2(3) + 1 / log2(4)), rel=1e-12
    )


def test_ndcg_ideal_ranking_is_one() -> None:
    assert ndcg_at_k(["d2", "d4", "d1"], {"d1": 1, "d2": 3, "d4": 2}, k=3) == pytest.approx(1.0, rel=1e-12)


def test_ndcg_default_k_is_ten() -> None:
    ranked = [f"n{i}" for i in range(10)] + ["rel"]
    qrels = {"rel": 1}
    # The only relevant doc sits at rank 11, outside the default cutoff of 10.
    assert ndcg_at_k(ranked, qrels) == 0.0
    assert ndcg_at_k(ranked, qrels, k=11) == pytest.approx(1 / log2(12), rel=1e-12)


def test_ndcg_ignores_non_positive_gains_as_trec_eval_does() -> None:
    # d1 is judged -1: it contributes no gain and does not enter the ideal ranking.
    assert ndcg_at_k(["d1", "d2"], {"d1": -1, "d2": 1}) == pytest.approx(1 / log2(3), rel=1e-12)


def test_ndcg_without_relevant_docs_is_zero() -> None:
    assert ndcg_at_k(["d1", "d2"], {}) == 0.0
    assert ndcg_at_k(["d1", "d2"], {"d1": 0}) == 0.0


def test_ndcg_rejects_bad_k_and_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k(["d1"], {"d1": 1}, k=0)
    with pytest.raises(ValueError, match="duplicate"):
        ndcg_at_k(["d1", "d1"], {"d1": 1})


# recall_at_k_qrels


def test_recall_at_k_qrels_counts_relevant_in_top_k() -> None:
    ranked = ["d3", "d1", "d2", "d5"]
    qrels = {"d1": 1, "d2": 2, "d3": 0, "d4": 1}  # relevant: d1, d2, d4
    assert recall_at_k_qrels(ranked, qrels, 1) == 0.0
    assert recall_at_k_qrels(ranked, qrels, 2) == 1 / 3
    assert recall_at_k_qrels(ranked, qrels, 3) == 2 / 3
    assert recall_at_k_qrels(ranked, qrels, 100) == 2 / 3


def test_recall_at_k_qrels_without_relevant_docs_is_zero() -> None:
    assert recall_at_k_qrels(["d1"], {"d1": 0}, 5) == 0.0


def test_recall_at_k_qrels_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k_qrels(["d1"], {"d1": 1}, 0)
    with pytest.raises(ValueError, match="duplicate"):
        recall_at_k_qrels(["d1", "d1"], {"d1": 1}, 2)


# mrr_at_k_qrels


def test_mrr_at_k_qrels() -> None:
    ranked = ["d3", "d1", "d2"]
    qrels = {"d1": 1, "d2": 1, "d3": 0}
    assert mrr_at_k_qrels(ranked, qrels, 3) == 1 / 2
    assert mrr_at_k_qrels(ranked, qrels, 2) == 1 / 2
    assert mrr_at_k_qrels(ranked, qrels, 1) == 0.0


def test_mrr_at_k_qrels_without_relevant_docs_is_zero() -> None:
    assert mrr_at_k_qrels(["d1", "d2"], {"d1": 0}, 10) == 0.0


def test_mrr_at_k_qrels_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="k must be"):
        mrr_at_k_qrels(["d1"], {"d1": 1}, 0)
    with pytest.raises(ValueError, match="duplicate"):
        mrr_at_k_qrels(["d1", "d1"], {"d1": 1}, 2)



def test_wilson_and_the_sign_test_agree_with_scipy_binomtest() -> None:
    # The closed forms stand in for scipy.stats.binomtest (its import took 1.2 s of every
    # evaluation run); scipy stays the reference they are held to.
    from scipy.stats import binomtest

    for n in (1, 2, 5, 17, 64, 304, 1000):
        for successes in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for confidence in (0.9, 0.95, 0.99):
                expected = binomtest(successes, n).proportion_ci(confidence_level=confidence,
                                                                 method="wilson")
                low, high = wilson_interval(successes, n, confidence)
                assert low == pytest.approx(expected.low, abs=1e-15)
                assert high == pytest.approx(expected.high, abs=1e-15)
    for wins, losses in ((1, 0), (3, 3), (8, 2), (40, 61), (151, 153), (600, 500), (2000, 2100)):
        expected = binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue
        assert sign_test_p(wins, losses) == pytest.approx(expected, rel=1e-12)


def test_sign_test_is_exact_and_quick_for_thousands_of_pairs_and_takes_numpy_integers() -> None:
    import numpy as np

    assert sign_test_p(10_000, 10_000) == 1.0
    # 0 wins in 3 losses: 2 * (1/2)^3.
    assert sign_test_p(np.int64(0), np.int64(3)) == 0.25
    assert sign_test_p(np.int64(3), np.int64(70)) == sign_test_p(3, 70)
    # 20,000 discordant pairs: exact, as scipy's, and in milliseconds (summing math.comb took
    # 32 s here).
    from scipy.stats import binomtest

    expected = binomtest(9_000, 20_000, 0.5, alternative="two-sided").pvalue
    assert sign_test_p(9_000, 11_000) == pytest.approx(expected, rel=1e-9)
    assert 1e-45 < expected < 1e-44


def test_wilson_refuses_a_confidence_too_close_to_one_for_a_float_quantile() -> None:
    with pytest.raises(ValueError, match="too close to 1"):
        wilson_interval(3, 5, confidence=0.9999999999999999)
