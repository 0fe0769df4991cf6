"""Tests for ``rag_pipeline.core.fusion``: reciprocal rank fusion scores written out by hand."""

from __future__ import annotations

import pytest

from rag_pipeline.core.fusion import RRF_K, reciprocal_rank_fusion


def test_default_k_is_60():
    assert RRF_K == 60


def test_two_rankings_by_hand():
    # a: rank 1 in both; b: ranks 2 and 3; d: rank 2 in the second only; c: rank 3 in the first
    # only. Each score is summed in list order, as the fusion adds it.
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["a", "d", "b"]])
    assert fused == [
        ("a", 1 / (60 + 1) + 1 / (60 + 1)),
        ("b", 1 / (60 + 2) + 1 / (60 + 3)),
        ("d", 1 / (60 + 2)),
        ("c", 1 / (60 + 3)),
    ]


def test_item_in_one_list_at_rank_1_and_another_at_rank_3():
    fused = dict(reciprocal_rank_fusion([["x", "y"], ["z", "w", "x"]]))
    assert fused["x"] == 1 / (60 + 1) + 1 / (60 + 3)
    assert fused["y"] == 1 / (60 + 2)
    assert fused["z"] == 1 / (60 + 1)
    assert fused["w"] == 1 / (60 + 2)


def test_three_rankings_by_hand():
    fused = reciprocal_rank_fusion([[1, 2, 3], [3, 1], [2, 4, 1]])
    assert fused == [
        (1, 1 / 61 + 1 / 62 + 1 / 63),
        (2, 1 / 62 + 1 / 61),
        (3, 1 / 63 + 1 / 61),
        (4, 1 / 62),
    ]


def test_ties_keep_order_of_first_appearance():
    # a and b both score 1/61 + 1/62; a is seen first, so it ranks first.
    assert reciprocal_rank_fusion([["a", "b"], ["b", "a"]]) == [
        ("a", 1 / 61 + 1 / 62), ("b", 1 / 62 + 1 / 61)]
    assert [item for item, _ in reciprocal_rank_fusion([["b", "a"], ["a", "b"]])] == ["b", "a"]
    # c and d only tie with each other (1/62 each); c appears before d (first list first).
    assert [item for item, _ in reciprocal_rank_fusion([["x", "c"], ["y", "d"]])] == [
        "x", "y", "c", "d"]


def test_k_zero_is_plain_reciprocal_rank():
    assert reciprocal_rank_fusion([["a", "b", "c"]], k=0) == [("a", 1.0), ("b", 1 / 2), ("c", 1 / 3)]
    assert reciprocal_rank_fusion([["a", "b"], ["b", "a"]], k=0) == [("a", 1 + 1 / 2), ("b", 1 / 2 + 1)]


def test_custom_k():
    assert reciprocal_rank_fusion([["a"], ["b", "a"]], k=10) == [("a", 1 / 11 + 1 / 12), ("b", 1 / 11)]


def test_negative_k_is_an_error():
    with pytest.raises(ValueError, match=r"^k must be non-negative, got -1$"):
        reciprocal_rank_fusion([["a"]], k=-1)


def test_no_rankings_fuse_to_nothing():
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []
