"""Tests for ``rag_pipeline.core.retrieval.fusion``: reciprocal rank fusion scores written out by hand."""

from __future__ import annotations

import pytest

from rag_pipeline.core.retrieval.fusion import RRF_K, Fusion, min_max_fusion, reciprocal_rank_fusion


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


def test_weighted_rrf_by_hand():
    # Dense list weighted 2, BM25 list 1: a list's every term is multiplied by its weight.
    fused = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], weights=[2.0, 1.0])
    assert fused == [
        ("b", 2 / (60 + 2) + 1 / (60 + 1)),
        ("a", 2 / (60 + 1)),
        ("c", 1 / (60 + 2)),
    ]


def test_unit_weights_are_plain_rrf():
    lists = [["a", "b", "c"], ["a", "d", "b"]]
    assert reciprocal_rank_fusion(lists, weights=[1.0, 1.0]) == reciprocal_rank_fusion(lists)


def test_weights_must_match_the_lists_and_be_non_negative():
    with pytest.raises(ValueError, match="2 weights for 1 lists"):
        reciprocal_rank_fusion([["a"]], weights=[1.0, 1.0])
    with pytest.raises(ValueError, match="non-negative"):
        min_max_fusion([[("a", 1.0)]], weights=[-1.0])


def test_min_max_fusion_by_hand():
    # Dense scores 0.75, 0.5, 0.25 -> 1, 0.5, 0 (exact in binary); BM25 scores 8, 2 -> 1, 0.
    dense = [("a", 0.75), ("b", 0.5), ("c", 0.25)]
    bm25 = [("c", 8.0), ("d", 2.0)]
    # a and c tie at 1.0; a appeared first.
    assert min_max_fusion([dense, bm25]) == [("a", 1.0), ("c", 0.0 + 1.0), ("b", 0.5), ("d", 0.0)]
    weighted = dict(min_max_fusion([dense, bm25], weights=[2.0, 1.0]))
    assert weighted == {"a": 2.0, "b": 1.0, "c": 1.0, "d": 0.0}


def test_min_max_fusion_of_a_flat_or_empty_list():
    # All scores equal: each item normalises to 1; an empty list adds nothing.
    assert min_max_fusion([[("x", 3.0), ("y", 3.0)], []]) == [("x", 1.0), ("y", 1.0)]


def test_fusion_names():
    assert [f.value for f in Fusion] == ["rrf", "minmax"]
